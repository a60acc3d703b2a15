"""Measures the fast loop's tests one by one and writes tests/measured_slow.txt, the tests that
cost more than the per-test budget; tests/conftest.py marks them slow, so the fast loop
(`pytest -m "not slow and not spark and not browser"`) stays within a minute while CI runs
every test:

    python tools/measure_fast_loop.py            # measure (about 5 minutes) and rewrite the file
    python tools/measure_fast_loop.py --budget 0.2

It runs the fast loop in one process with the file's marks lifted (EVALSTORE_TESTS_UNMEASURED=1,
so the tests it lists are measured again) and counts each test's setup, call and teardown. The
figures are CPU-bound wall seconds on the machine it runs on: run it on an idle machine.
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTED = ROOT / "tests" / "measured_slow.txt"
BUDGET = 0.25  # seconds per test (setup + call + teardown)

HEADER = """\
# Tests of the fast loop measured above {budget} s each (setup + call + teardown, one process,
# an idle machine): tests/conftest.py marks them slow. Written by tools/measure_fast_loop.py;
# run it again when the fast loop grows past a minute. Seconds, then the test's node id.
"""


def durations(output: str) -> dict[str, float]:
    """Each test's seconds from pytest's ``--durations=0`` report (lines ``0.27s call  id``)."""
    spent: collections.Counter[str] = collections.Counter()
    for line in output.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[0].endswith("s") and parts[1] in {"setup", "call", "teardown"}:
            try:
                spent[parts[2]] += float(parts[0][:-1])
            except ValueError:
                continue
    return dict(spent)


def measure() -> dict[str, float]:
    env = {**os.environ, "EVALSTORE_TESTS_UNMEASURED": "1"}
    command = [
        sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
        "-m", "not slow and not spark and not browser", "--durations=0", "--durations-min=0",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the fast loop failed; fix it before measuring:\n{done.stdout[-3000:]}")
    return durations(done.stdout)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=BUDGET, help="seconds per test")
    args = parser.parse_args(argv)
    spent = measure()
    slow = sorted((nodeid, s) for nodeid, s in spent.items() if s > args.budget)
    lines = [f"{s:.2f} {nodeid}" for nodeid, s in slow]
    LISTED.write_text(HEADER.format(budget=args.budget) + "\n".join(lines) + "\n")
    kept = sum(s for s in spent.values() if s <= args.budget)
    print(
        f"{len(spent)} tests measured in {sum(spent.values()):.0f} s; {len(slow)} over "
        f"{args.budget} s listed in {LISTED.relative_to(ROOT)}; the rest take {kept:.0f} s"
    )


if __name__ == "__main__":
    main()

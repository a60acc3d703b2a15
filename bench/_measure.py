"""What one child process costs: CPU seconds, wall seconds and its own peak memory.

Shared by the benchmarks that time whole processes. Each measured command runs under
``/usr/bin/time -v`` (GNU time), whose "Maximum resident set size" is the peak of that child
alone; ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` would instead report the largest of every
child so far and of the parent's own peak, which a child inherits at fork. CPU seconds are
user + system of every thread, from ``os.wait4`` on the time process (which includes the
command it waited for).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

GNU_TIME = "/usr/bin/time"
GIB = 1024**3
MIB = 1024**2


@dataclass
class Measured:
    """One process: ``cpu`` (user + sys, all threads) and ``wall`` seconds, ``peak_bytes``
    (its maximum resident set size) and what it printed on stdout."""

    cpu: float
    wall: float
    peak_bytes: int
    stdout: str = field(repr=False, default="")

    def last_line(self) -> str:
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str | None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    capture: bool = True,
) -> Measured:
    """Run ``argv`` in a fresh process under GNU time; raise ``SystemExit`` if it fails.

    Args:
        argv: the command.
        env: variables set in the child's environment on top of this one's (a ``None`` value
            removes the variable).
        cwd: its working directory.
        capture: keep its stdout (else discarded).
    """
    full_env = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "time.txt"
        errors = Path(tmp) / "stderr.txt"
        out_path = Path(tmp) / "stdout.txt"
        with open(errors, "wb") as err, open(out_path, "wb") as out:
            start = time.perf_counter()
            child = subprocess.Popen(
                [GNU_TIME, "-v", "-o", str(report), *argv],
                stdout=out if capture else subprocess.DEVNULL,
                stderr=err,
                env=full_env,
                cwd=cwd,
            )
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
        child.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(
                f"{' '.join(map(str, argv))[:300]} failed ({code}):\n"
                f"{errors.read_text(errors='replace')[-4000:]}"
            )
        text = report.read_text()
        found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
        if found is None:
            raise SystemExit(f"no peak memory in GNU time's report:\n{text}")
        return Measured(
            cpu=usage.ru_utime + usage.ru_stime,
            wall=wall,
            peak_bytes=int(found.group(1)) * 1024,
            stdout=out_path.read_text() if capture else "",
        )


def python(
    code: str,
    *args: object,
    pythonpath: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
) -> Measured:
    """Run ``python -P -c code args...`` with this interpreter; ``pythonpath`` first on its
    path (the code of another checkout). ``-P`` keeps the working directory off the path,
    where a checkout's own ``evalstore/`` would shadow ``pythonpath``'s."""
    extra: dict[str, str | None] = dict(env or {})
    if pythonpath is not None:
        extra["PYTHONPATH"] = str(pythonpath)
    return run([sys.executable, "-P", "-c", code, *map(str, args)], env=extra)


INGEST_CHILD = r"""
import json, sys, time
kind, parquet, db, task = sys.argv[1:5]
if kind == "duckdb":
    import duckdb
    c0, w0 = time.process_time(), time.perf_counter()
    con = duckdb.connect(db)
    con.execute("set enable_progress_bar = false")
    # a table function takes no bound parameter; the path is our own temporary file
    con.execute("create table t as select * from read_parquet('" + parquet + "')")
    con.close()
else:
    from evalstore import Store
    c0, w0 = time.process_time(), time.perf_counter()
    with Store(db) as store:
        store.ingest(parquet, task=task, run="bench", git_commit=None)
print(json.dumps({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0}))
"""
"""``python -c INGEST_CHILD KIND PARQUET DB TASK``: the reference (KIND ``duckdb``:
``create table t as select * from read_parquet(...)``) or ``Store.ingest`` of the file into a
new database (any other KIND; the evalstore on the child's path). Prints the CPU and wall
seconds of that work alone, from the connect on (after the imports), as JSON."""


def inner(values: Sequence[Measured]) -> tuple[float, float]:
    """The least ``cpu`` and the least ``wall`` that several runs printed as JSON (the work
    they time themselves, without start-up)."""
    got = [json.loads(m.last_line()) for m in values]
    return min(g["cpu"] for g in got), min(g["wall"] for g in got)


def median(values: Sequence[Measured]) -> Measured:
    """The median CPU, wall and peak of several runs of one command (each taken alone)."""
    return Measured(
        cpu=statistics.median(m.cpu for m in values),
        wall=statistics.median(m.wall for m in values),
        peak_bytes=int(statistics.median(m.peak_bytes for m in values)),
        stdout=values[-1].stdout,
    )


def best(values: Sequence[Measured]) -> Measured:
    """The least CPU, wall and peak of several runs of one command (each taken alone)."""
    return Measured(
        cpu=min(m.cpu for m in values),
        wall=min(m.wall for m in values),
        peak_bytes=min(m.peak_bytes for m in values),
        stdout=values[-1].stdout,
    )


def load_note() -> str:
    """The machine's load averages and cores, for the report: a shared machine's figures
    mean less when the load is above its cores."""
    one, five, fifteen = os.getloadavg()
    cores = os.cpu_count() or 1
    busy = " (busy: other processes were running)" if one > cores + 1 else ""
    return f"load average {one:.1f} {five:.1f} {fifteen:.1f} on {cores} cores{busy}"


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"

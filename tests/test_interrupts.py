"""Ctrl-C and kill, many times over: `evalstore` run as a real process and stopped at a
seeded random moment, from its first milliseconds to its end, for every kind of input
(CSV, Parquet, NDJSON, npz, --format trec | voc | hpatches, keypoints, a new store), for
`import`, `export` and `eval` (of keypoints: the homographies made on first use).

After each trial: the exit code is 0 (it had finished: the run whole), 130 (one `Error:`
line; the store as it was or with the run whole, and the line says which), or 1 with one
`Error:` line and the store as it was; no traceback; no private file (`.stage`, `.new`,
`.tmp`) beside the store. With SIGINT inherited as ignored (a job that a script started in
the background), the signal stays ignored: the command runs to its end, the run whole.

A signal within the interpreter's own start, before evalstore's first line runs, ends as
CPython ends it (killed by the signal, or its KeyboardInterrupt traceback from its own
start-up, frames of the standard library and of the package's ``__init__`` import only);
nothing has been done then, and the trial checks that the store is as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pytest
from test_hpatches_format import make_dataset

from evalstore import Store
from evalstore.cli import interrupts

N_LISTS, N_ITEMS = 300, 500  # 150,000 ranked rows: a second or two per command
N_PAIRS, N_MATCHES = 150, 400  # 60,000 matches

pytestmark = pytest.mark.slow  # real processes, interrupted and killed


# -- inputs --------------------------------------------------------------------------------


def _ranked(n_lists: int, n_items: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_lists * n_items
    return pl.DataFrame(
        {
            "group_id": np.repeat(np.arange(n_lists, dtype=np.int32), n_items),
            "item_id": np.tile(np.arange(n_items, dtype=np.int32), n_lists),
            "score": rng.random(n),
            "label": np.where(rng.random(n) < 0.1, 1, -1).astype(np.int8),
        }
    )


def _matches(n_pairs: int, n_matches: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Keypoint matches of ``n_pairs`` image pairs (a shift, with outliers) and their pairs
    file (homographies and image sizes)."""
    rng = np.random.default_rng(seed)
    n = n_pairs * n_matches
    x0, y0 = rng.uniform(0, 600, n), rng.uniform(0, 400, n)
    outlier = rng.random(n) < 0.3
    matches = pl.DataFrame(
        {
            "pair_id": np.repeat([f"p{i}" for i in range(n_pairs)], n_matches),
            "x0": x0,
            "y0": y0,
            "x1": np.where(outlier, rng.uniform(0, 600, n), x0 + 5 + rng.normal(0, 1, n)),
            "y1": np.where(outlier, rng.uniform(0, 400, n), y0 - 3 + rng.normal(0, 1, n)),
            "score": rng.random(n),
        }
    )
    shift = {"h11": 1.0, "h12": 0.0, "h13": 5.0, "h21": 0.0, "h22": 1.0, "h23": -3.0}
    shift |= {"h31": 0.0, "h32": 0.0, "h33": 1.0}
    pairs = pl.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(n_pairs)],
            **{k: [v] * n_pairs for k, v in shift.items()},
            "width": [640] * n_pairs,
            "height": [480] * n_pairs,
        }
    )
    return matches, pairs


def _write_inputs(folder: Path) -> dict[str, Path]:
    """Every input file of the trials, once."""
    folder.mkdir(parents=True, exist_ok=True)
    frame = _ranked(N_LISTS, N_ITEMS, seed=1)
    paths = {k: folder / f"d.{k}" for k in ("csv", "parquet", "ndjson", "npz")}
    frame.write_csv(paths["csv"])
    frame.write_parquet(paths["parquet"])
    frame.write_ndjson(paths["ndjson"])
    np.savez(paths["npz"], **{c: frame[c].to_numpy() for c in frame.columns})
    # TREC: a run file and its qrels
    rng = np.random.default_rng(2)
    lines = [
        f"q{q} Q0 d{d} {d + 1} {s:.6f} run\n"
        for q in range(N_LISTS)
        for d, s in enumerate(np.sort(rng.random(N_ITEMS))[::-1])
    ]
    paths["trec"] = folder / "run.txt"
    paths["trec"].write_text("".join(lines))
    paths["qrels"] = folder / "qrels.txt"
    judged = [(q, d) for q in range(N_LISTS) for d in range(0, N_ITEMS, 3)]
    paths["qrels"].write_text(
        "".join(f"q{q} 0 d{d} {int(rng.random() < 0.2)}\n" for q, d in judged)
    )
    # PASCAL VOC: results of one class and their ground truth
    n_images = 60_000
    paths["voc"] = folder / "comp1_cls_test_dog.txt"
    paths["voc"].write_text(
        "".join(f"{i:06d} {s:.6f}\n" for i, s in enumerate(rng.normal(size=n_images)))
    )
    paths["gt"] = folder / "gt"
    paths["gt"].mkdir(exist_ok=True)
    truth = rng.choice([-1, 0, 1], n_images, p=[0.7, 0.05, 0.25])
    truth_lines = [f"{i:06d} {t:2d}\n" for i, t in enumerate(truth)]
    (paths["gt"] / "dog_test.txt").write_text("".join(truth_lines))
    # keypoints
    matches, pairs = _matches(N_PAIRS, N_MATCHES, seed=3)
    paths["matches"] = folder / "m.parquet"
    matches.write_parquet(paths["matches"])
    paths["pairs"] = folder / "p.csv"
    pairs.write_csv(paths["pairs"])
    # HPatches: descriptors and the benchmark's task files
    paths["hp_desc"], paths["hp_tasks"] = make_dataset(folder / "hpatches", dim=32)
    return paths


# -- the kinds of command ------------------------------------------------------------------

COMMON = ("--git-commit", "x", "--created-at", "2026-01-02T03:04:05")


@dataclass(frozen=True)
class Kind:
    """One command of the trials: its arguments (given the inputs, the store and the export
    folder), whether it starts from the template store (else from none), and what it writes
    (``store`` or ``export``)."""

    args: Callable[[dict[str, Path], Path, Path], list[str]]
    existing: bool = True
    writes: str = "store"


def _ingest(source: str, *extra: str) -> Callable[[dict[str, Path], Path, Path], list[str]]:
    def args(p: dict[str, Path], db: Path, out: Path) -> list[str]:
        more = [str(p[e[1:]]) if e.startswith("@") else e for e in extra]
        return ["ingest", str(p[source]), "-r", "t/x", "--db", str(db), *more, *COMMON]

    return args


KINDS: dict[str, Kind] = {
    "csv": Kind(_ingest("csv", "-t", "retrieval")),
    "csv-new-store": Kind(_ingest("csv", "-t", "retrieval"), existing=False),
    "parquet": Kind(_ingest("parquet", "-t", "retrieval")),
    "ndjson": Kind(_ingest("ndjson", "-t", "retrieval")),
    "npz": Kind(_ingest("npz", "-t", "retrieval")),
    "trec": Kind(_ingest("trec", "-t", "retrieval", "--format", "trec", "--qrels", "@qrels")),
    "voc": Kind(_ingest("voc", "-t", "classification", "--format", "voc", "--voc-gt", "@gt")),
    "hpatches": Kind(
        _ingest("hp_desc", "--format", "hpatches", "--hpatches-tasks", "@hp_tasks")
    ),
    "keypoints": Kind(_ingest("matches", "-t", "keypoints", "--pairs", "@pairs")),
    "eval-keypoints": Kind(
        lambda p, db, out: ["eval", "base/kp", "-m", "homography_accuracy", "--db", str(db)]
    ),
    "import": Kind(lambda p, db, out: ["import", str(p["export"]), "--db", str(db)]),
    "import-new-store": Kind(
        lambda p, db, out: ["import", str(p["export"]), "--db", str(db)], existing=False
    ),
    "export": Kind(
        lambda p, db, out: ["export", "--to", str(out), "--db", str(db)], writes="export"
    ),
}  # fmt: skip


# -- what a store and an export hold -------------------------------------------------------

FINGERPRINT = """
select
  (select count(*) from runs),
  (select list(experiment || '/' || name order by run_id) from runs),
  (select count(*) from groups),
  (select count(*) from scores),
  (select round(coalesce(sum(score), 0), 6) from scores),
  (select coalesce(sum(n_rows), 0) from list_stats),
  (select count(*) from pairs),
  (select count(e11) from pairs),
  (select count(*) from matches),
  (select count(*) from outcomes),
  (select count(*) from metric_values),
  (select round(coalesce(sum(value), 0), 9) from metric_values)
"""


def fingerprint(db: Path) -> tuple[Any, ...] | None:
    """Counts and sums of every table of a run (None: no store): equal for equal stores."""
    if not db.exists():
        return None
    con = duckdb.connect(str(db), read_only=True)
    try:
        (row,) = con.execute(FINGERPRINT).fetchall()
    finally:
        con.close()
    return tuple(row)


def listing(folder: Path) -> list[str] | None:
    """The published files of an export folder (hidden staging names left out)."""
    if not folder.exists():
        return None
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )


def leftovers(folder: Path) -> list[str]:
    """Private files of a store's writers beside it: staging stores, unpublished new stores,
    spill folders, temporary files."""
    return sorted(
        p.name for p in folder.iterdir() if p.name.startswith(".") or p.name.endswith(".tmp")
    )


# -- running ----------------------------------------------------------------------------------


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(args: list[str], cwd: Path, ignored: bool = False) -> subprocess.Popen[str]:
    """`evalstore ARGS` in a session of its own (a Ctrl-C of a terminal reaches its group);
    ``ignored``: SIGINT inherited as ignored."""
    env = {k: v for k, v in os.environ.items() if k not in ("EVALSTORE_DB", "EVALSTORE_METRICS")}
    return subprocess.Popen(
        [sys.executable, "-m", "evalstore", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=env,
        start_new_session=True,
        preexec_fn=_ignore_sigint if ignored else None,
    )


@dataclass
class Reference:
    """What an uninterrupted command of a kind leaves, and how long it takes."""

    before: Any
    whole: Any
    seconds: float


class Lab:
    """The inputs, the template store (a ranked run and a keypoints run without estimates)
    and an export to import, made once; each kind's reference made on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = _write_inputs(root / "inputs")
        self.template = root / "template.duckdb"
        with Store(self.template) as store:
            store.ingest(_ranked(20, 50, seed=9), task="retrieval", run="base/r", git_commit=None)
            matches, pairs = _matches(N_PAIRS, N_MATCHES, seed=4)
            store.ingest_keypoints(matches, pairs=pairs, run="base/kp", git_commit=None)
        exported = root / "exported.duckdb"
        with Store(exported) as store:
            store.ingest(_ranked(N_LISTS, N_ITEMS, seed=5), task="retrieval", run="imp/x",
                         git_commit=None)  # fmt: skip
        self.paths["export"] = root / "export"
        self.check_call(["export", "--to", str(self.paths["export"]), "--db", str(exported)])
        self.template_state = fingerprint(self.template)
        self.references: dict[str, Reference] = {}
        self.count = 0

    def check_call(self, args: list[str]) -> None:
        job = start(args, self.root)
        _, stderr = job.communicate(timeout=600)
        assert job.returncode == 0, stderr

    def folder(self, kind: str) -> tuple[Path, Path, Path]:
        """A fresh folder for one command: (folder, store, export folder)."""
        self.count += 1
        folder = self.root / f"{kind}-{self.count}"
        folder.mkdir()
        db = folder / "s.duckdb"
        if KINDS[kind].existing:
            shutil.copyfile(self.template, db)
        return folder, db, folder / "out"

    def state(self, kind: str, db: Path, out: Path) -> Any:
        return listing(out) if KINDS[kind].writes == "export" else fingerprint(db)

    def reference(self, kind: str) -> Reference:
        if kind not in self.references:
            _, db, out = self.folder(kind)
            before = self.state(kind, db, out)
            began = time.monotonic()
            self.check_call(KINDS[kind].args(self.paths, db, out))
            seconds = time.monotonic() - began
            whole = self.state(kind, db, out)
            assert whole != before
            self.references[kind] = Reference(before, whole, seconds)
        return self.references[kind]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Lab:
    return Lab(tmp_path_factory.mktemp("interrupts"))


_FRAME = re.compile(r'File "([^"]+)", line \d+')


#: what Python runs of ours before the command line's first line (``evalstore.__main__``):
#: the package and what it imports at its top
_PACKAGE_START = tuple(
    f"evalstore{os.sep}{name}" for name in ("__init__.py", "errors.py", "version.py")
)


def _interpreter_start(stderr: str) -> bool:
    """A traceback of CPython's own start: no frame of evalstore's code but the import of
    the package itself (``evalstore/__init__.py`` and its errors and version), which Python
    runs before any line of the command line's."""
    frames = _FRAME.findall(stderr)
    ours = [f for f in frames if f"{os.sep}evalstore{os.sep}" in f]
    return "Traceback" in stderr and all(f.endswith(_PACKAGE_START) for f in ours)


def trial(lab: Lab, kind: str, delay: float, ignored: bool) -> str:
    """Stop one command after ``delay`` seconds with a SIGINT to its process group and check
    what it left; returns the outcome (``finished``, ``interrupted``, ``start``)."""
    ref = lab.reference(kind)
    folder, db, out = lab.folder(kind)
    job = start(KINDS[kind].args(lab.paths, db, out), folder, ignored=ignored)
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):  # it had ended
        os.killpg(job.pid, signal.SIGINT)
    _, stderr = job.communicate(timeout=600)
    rc = job.returncode
    state = lab.state(kind, db, out)
    said = f"{kind} after {delay:.3f}s (ignored={ignored}): rc {rc}\n{stderr}"
    assert leftovers(folder) == [], said
    if KINDS[kind].writes == "export":
        assert fingerprint(db) == lab.template_state, said  # the store is only read
    if ignored:  # the signal stays ignored: the command runs to its end
        assert rc == 0 and state == ref.whole and "Error" not in stderr, said
        return "finished"
    if "Traceback" in stderr:  # CPython's own start; a KeyboardInterrupt it ignored: rc 0
        assert _interpreter_start(stderr) and rc in (0, 1, -signal.SIGINT), said
        assert state == (ref.whole if rc == 0 else ref.before), said
        return "start"
    lines = stderr.strip().splitlines()
    if rc == 0:
        assert state == ref.whole, said
        return "finished"
    assert rc in (130, -signal.SIGINT, 1), said
    # killed by the signal before Python's handler is in place: no line; else one
    assert len(lines) == (0 if rc == -signal.SIGINT and not lines else 1), said
    if lines:
        assert lines[0].startswith("Error: "), said
    if rc == 1:
        assert state == ref.before, said
    elif KINDS[kind].writes == "export":
        if state is not None and state != ref.whole:  # a stopped export: the next completes it
            lab.check_call(KINDS[kind].args(lab.paths, db, out))
            assert lab.state(kind, db, out) == ref.whole, said
    else:
        assert state in (ref.before, ref.whole), said
        if lines and rc == 130 and KINDS[kind].args(lab.paths, db, out)[0] == "ingest":
            assert ("complete in the store" in lines[0]) == (state == ref.whole), said
            # as it was: said so by the ingest, or stopped before it began
            before = ("as it was", "nothing was done")
            assert any(w in lines[0] for w in before) == (state == ref.before), said
    return "interrupted"


def run_trials(lab: Lab, n: int, seed: int, kinds: list[str]) -> dict[str, int]:
    """``n`` trials over ``kinds`` in turn, seeded: a fifth of them in the first 30 ms, the
    rest anywhere up to the command's uninterrupted time; every fourth with SIGINT ignored."""
    rng = random.Random(seed)
    seen: dict[str, int] = {}
    for i in range(n):
        kind = kinds[i % len(kinds)]
        seconds = lab.reference(kind).seconds
        delay = rng.uniform(0, 0.03) if i % 5 == 0 else rng.uniform(0, 1.1 * seconds)
        outcome = trial(lab, kind, delay, ignored=i % 4 == 3)
        seen[outcome] = seen.get(outcome, 0) + 1
    return seen


def test_interrupted_at_random_moments(lab: Lab) -> None:
    """5 trials (a CSV ingest into a new store, eval of keypoints, import, export)."""
    seen = run_trials(lab, 5, seed=1, kinds=["csv-new-store", "eval-keypoints", "import", "export"])
    assert sum(seen.values()) == 5


@pytest.mark.slow
def test_interrupted_at_random_moments_many_times(lab: Lab) -> None:
    """100 trials over every kind of command."""
    seen = run_trials(lab, 100, seed=29, kinds=list(KINDS))
    assert seen.get("interrupted", 0) >= 30, seen  # most trials stopped a command midway


def test_sigint_ignored_by_the_parent_stays_ignored(tmp_path: Path) -> None:
    """The issue's reproducer: a background job of a script (SIGINT inherited as ignored)
    sent SIGINT, here every 20 ms from start to end, while it reads 1.1 M rows (two of
    polars' batches): it completes with every row. Polars' own SIGINT handler used to stop
    its reader as if the input had ended: a run cut at 2^20 rows stored with exit 0, or
    `no rows`."""
    n_lists, n_items = 1100, 1000
    data = tmp_path / "big.csv"
    _ranked(n_lists, n_items, seed=6).write_csv(data)
    db = tmp_path / "s.duckdb"
    job = start(["ingest", str(data), "-t", "retrieval", "-r", "big/x", "--db", str(db), *COMMON],
                tmp_path, ignored=True)  # fmt: skip
    sent = 0
    while job.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGINT)
            sent += 1
        time.sleep(0.02)
    _, stderr = job.communicate()
    assert job.returncode == 0, stderr
    assert sent > 10
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.sql("select count(*) from scores").fetchall() == [(n_lists * n_items,)]
        assert con.sql("select count(*) from groups").fetchall() == [(n_lists,)]
    finally:
        con.close()
    assert leftovers(tmp_path) == []


# -- kill -9 ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv-new-store", "import-new-store", "csv"])
def test_killed_the_store_is_before_or_whole_and_leftovers_go(lab: Lab, kind: str) -> None:
    """SIGKILL midway: the store as it was (or none) or whole; the private files the killed
    process left (a staging store, an unpublished new store) are removed by the next ingest
    beside the store."""
    ref = lab.reference(kind)
    rng = random.Random(kind)
    for _ in range(2):
        folder, db, out = lab.folder(kind)
        job = start(KINDS[kind].args(lab.paths, db, out), folder)
        time.sleep(rng.uniform(0.4, 1.0) * ref.seconds)
        job.kill()
        job.communicate(timeout=600)
        assert lab.state(kind, db, out) in (ref.before, ref.whole)
        lab.check_call(["ingest", str(lab.paths["csv"]), "-t", "retrieval", "-r", "t/after",
                        "--db", str(db), *COMMON])  # fmt: skip
        assert leftovers(folder) == []


def test_a_dead_process_new_store_file_is_removed_by_the_next_ingest(lab: Lab) -> None:
    """A ``.new`` file (and its WAL) of a process that no longer runs goes; a running
    process's stays."""
    folder, db, _ = lab.folder("csv-new-store")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    stale = folder / f".s.duckdb.{dead}-0000aaaa.new"
    live = folder / f".s.duckdb.{os.getpid()}-0000bbbb.new"
    for path in (stale, stale.with_name(stale.name + ".wal"), live):
        path.write_bytes(b"x")
    lab.check_call(["ingest", str(lab.paths["csv"]), "-t", "retrieval", "-r", "t/x",
                    "--db", str(db), *COMMON])  # fmt: skip
    assert leftovers(folder) == [live.name]
    assert json.dumps(fingerprint(db)) == json.dumps(lab.reference("csv-new-store").whole)


@pytest.mark.slow
def test_a_ctrl_c_while_duckdb_loads_is_one_line(lab: Lab) -> None:
    """A SIGINT swept over a command's first 0.4 s, through the import of DuckDB's
    extension, which aborts the process (SIGABRT, "Critical nanobind error") when a
    KeyboardInterrupt is raised inside it: the command holds the signal until the module
    has loaded, then ends as any Ctrl-C does."""
    for step in range(80):
        job = start(["runs", "--db", str(lab.template)], lab.root)
        time.sleep(0.005 * step)
        with contextlib.suppress(ProcessLookupError):  # it had ended
            os.killpg(job.pid, signal.SIGINT)
        _, stderr = job.communicate(timeout=60)
        said = f"after {0.005 * step:.3f}s: rc {job.returncode}\n{stderr}"
        if "Traceback" in stderr:  # CPython's own start; a KeyboardInterrupt it ignored: rc 0
            assert _interpreter_start(stderr) and job.returncode in (0, 1, -signal.SIGINT), said
            continue
        assert job.returncode in (0, 130, -signal.SIGINT), said
        if job.returncode == 130:
            assert stderr.strip().startswith("Error: ") and len(stderr.strip().splitlines()) == 1


@contextlib.contextmanager
def _watched() -> Iterator[None]:
    """The command's handlers in place in this process (as ``command`` puts them), then
    Python's again."""
    before, hook = signal.getsignal(signal.SIGINT), sys.unraisablehook
    signal.signal(signal.SIGINT, signal.default_int_handler)
    interrupts.INTERRUPTS.update(signalled=False)
    try:
        interrupts.watch_interrupts()
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGINT, before)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        sys.unraisablehook = hook


class _Held:
    """An object whose weakref callback is where the Ctrl-C lands."""


def _dropped_in_a_weakref_callback() -> None:
    held = _Held()
    ref = weakref.ref(held, lambda r: (signal.raise_signal(signal.SIGINT), sum(range(99))))
    del held  # the callback runs: Python prints and drops what it raises
    assert ref() is None


def _dropped_in_a_generator_closed_by_the_collector() -> None:
    def rows() -> Iterator[int]:
        try:
            yield 1
        finally:
            signal.raise_signal(signal.SIGINT)
            sum(range(99))

    gen = rows()
    next(gen)
    del gen  # closed when freed: what its finally raises is dropped


@pytest.mark.parametrize(
    "drop", [_dropped_in_a_weakref_callback, _dropped_in_a_generator_closed_by_the_collector]
)
def test_a_ctrl_c_python_would_drop_is_raised_just_after(
    drop: Callable[[], None], capsys: pytest.CaptureFixture[str]
) -> None:
    """A KeyboardInterrupt raised where Python prints and drops exceptions (a weakref
    callback, such as a module lock's during an import; a generator closed by the garbage
    collector, such as a reader's batches) is raised again 10 ms later from the code that
    runs then, with no "Exception ignored" traceback: the command stops instead of running
    on (CI saw both)."""
    with _watched():
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            drop()
            time.sleep(5)
        assert time.monotonic() - started < 2
        assert interrupts.INTERRUPTS["signalled"]
    assert "Exception ignored" not in capsys.readouterr().err


def test_a_dropped_ctrl_c_is_held_in_a_held_block_and_forgotten_after_the_command() -> None:
    """Raised again inside held_interrupts (DuckDB's module loading), it waits for the end
    of the block; once the command is over (SIGINT ignored, stop_watching) nothing is left
    armed: an alarm left for Python's shutdown ended a process with SIGALRM (CI, rc -14)."""
    with _watched():
        with pytest.raises(KeyboardInterrupt), interrupts.held_interrupts():
            _dropped_in_a_weakref_callback()
            time.sleep(0.1)  # the alarm comes inside the block, which holds it
            reached = True
        assert reached
        _dropped_in_a_weakref_callback()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as evalstore.__main__ after a command
        interrupts.stop_watching()
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        time.sleep(0.05)  # nothing comes


def test_a_ctrl_c_that_python_wraps_while_starting_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C inside a class's ``__set_name__`` during the start's imports (``import
    platform``, which typer imports, builds such a class) reaches the start as the RuntimeError
    Python raises from it: one line and exit 130, not a traceback (seen once in a CI run of
    the sweep above, at 0.045 s). Any other RuntimeError is left alone."""
    import types

    from evalstore import __main__ as entry

    def wrapped(error: BaseException) -> types.ModuleType:
        fake = types.ModuleType("evalstore.cli")

        def attribute(name: str) -> object:
            raise error

        fake.__getattr__ = attribute  # type: ignore[method-assign]
        return fake

    interrupted = RuntimeError("Error calling __set_name__ on 'cached_property' instance")
    interrupted.__cause__ = KeyboardInterrupt()
    monkeypatch.setitem(sys.modules, "evalstore.cli", wrapped(interrupted))
    with pytest.raises(SystemExit) as stopped:
        entry.main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "Error: interrupted while starting; nothing was done\n"
    monkeypatch.setitem(sys.modules, "evalstore.cli", wrapped(RuntimeError("a bug of ours")))
    with pytest.raises(RuntimeError, match="a bug of ours"):
        entry.main()

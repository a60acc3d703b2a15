"""Every ``bench/`` script runs on today's code: each is run here as a subprocess at a tiny size
(seconds, not the figures of docs/benchmarks.md) and must exit 0 and print its figures, so a
benchmark cannot rot unnoticed again (``bench/counts.py`` failed for a while after
``store/list_runs`` gained two parameters).

What is asserted is the shape of the report: each figure the script prints (CPU and wall
seconds, ratios, the peak) is there as a number, and where a script checks that two tools
agree on a value, that it says they do. No time or ratio is compared with anything: these
sizes measure start-up, not the work, and the machine is shared.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"

NUM = r"[0-9][0-9,]*(?:\.[0-9]+)?"
"""A figure as the scripts print it: 0.430, 1,922, 12."""

X = NUM + "x"
"""A ratio: 1.36x."""

#: script -> (its arguments at a tiny size, patterns its stdout must match, marks).
#: The arguments are the flags each script has today: bench/ui.py's ``--quick-demo`` is the
#: only flag added for this test (the full demo takes a minute to build).
CASES: dict[str, tuple[list[str], list[str], list[pytest.MarkDecorator]]] = {
    "compare.py": (
        ["--lists", "20", "--items", "5", "--repeat", "1"],
        [
            rf"evalstore compare \(best of 1\): {NUM} s wall, {NUM} CPU-s "
            rf"\(evalstore --help alone: {NUM} s wall, {NUM} CPU-s\)",
            rf"paired_stats on 20 differences: {NUM} s wall, {NUM} CPU-s",
        ],
        [],
    ),
    "compare_classes.py": (
        ["--samples", "60", "--classes", "3", "--n-boot", "100"],
        [
            r"3 classes x 60 samples, 100 replicates",
            rf"  top1_accuracy: {NUM} CPU s, resampled samples, p {NUM}",
            rf"  ece: {NUM} CPU s, resampled samples, p {NUM}",
        ],
        [],
    ),
    "counts.py": (
        ["--queries", "20", "--items", "100", "--repeat", "1"],
        [
            r"2,000 rows ingested",
            rf"\| runs \(store/list_runs\) \| {NUM} \| {NUM} \|",
            rf"\| show \(store/get_run\) \| {NUM} \| {NUM} \|",
            rf"\| the same counts by a scan \| {NUM} \| {NUM} \|",
            r"target: runs and show under 0\.2 s: (met|NOT met)",
        ],
        [],
    ),
    "dashboard.py": (
        ["--runs", "40", "--repeat", "1"],
        [
            r"store: 40 runs \(2 hpatches, 8 voc, 4 keypoints, 2 seg, 24 search\)",
            rf"evalstore --help \(start-up\): {NUM} s wall, {NUM} CPU-s",
            rf"evalstore dashboard \(empty folder\): {NUM} s wall, {NUM} CPU-s",
            rf"evalstore dashboard \(again, files up to date\): {NUM} s wall, {NUM} CPU-s",
            rf"evalstore dashboard --no-eval \(again\): {NUM} s wall, {NUM} CPU-s",
            rf"overview\.html: {NUM} MB",
        ],
        [],
    ),
    "numpy_sort.py": (
        ["--rows", "20000", "--lists", "20", "--repeat", "1"],
        [
            r"this CPU is AMD Zen 4 with AVX-512: (yes|no)",
            rf"np\.sort of 2\^20 values, NumPy's own: uint64 {NUM} ms, float32 {NUM} ms",
            rf"np\.sort of 2\^20 values, AVX-512 disabled: uint64 {NUM} ms, float32 {NUM} ms",
            rf"\| as it runs \| {NUM} \| {NUM} \| {NUM} \|",
            rf"as it runs / NumPy's own: {X} CPU",
            r"the same rows stored: yes",
        ],
        [],
    ),
    "detection.py": (
        ["--images", "20", "--repeat", "1"],
        [
            rf"evalstore: ingest \+ eval, new store\s+{NUM}\s+{NUM}\s+{NUM}\s+equal",
            rf"evalstore: eval --recompute\s+{NUM}\s+{NUM}\s+{NUM}\s+equal",
            rf"evalstore: eval --protocol voc10-det\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"evalstore ingest \+ eval / faster-coco-eval: {X} CPU, {X} wall, {X} peak",
            rf"evalstore ingest \+ eval / pycocotools: {X} CPU, {X} wall, {X} peak",
            rf"faster-coco-eval\s+{NUM}\s+{NUM}\s+{NUM}\s+equal",
            rf"AP {NUM}, AP50 {NUM}",
        ],
        [],
    ),
    "eval_process.py": (
        ["--rows", "20000", "--repeat", "1"],
        [
            rf"evalstore eval global -m ap --recompute\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"pyarrow \+ scikit-learn average_precision\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"reference / evalstore = {X} CPU .*, {X} wall, {X} peak",
            rf"new file: evalstore ingest \+ eval -m ap\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"new file / reference = {X} CPU .*, {X} wall, {X} peak",
            r"agree to 1e-09: yes",
        ],
        [],
    ),
    "geometry.py": (
        ["--pairs", "10", "--matches", "50", "--repeat", "1"],
        [
            rf"SQL\s+{NUM} s",
            rf"NumPy\s+{NUM} s",
            rf"ratio SQL / NumPy: {X}\s+values agree: yes",
        ],
        [],
    ),
    "hpatches_scale.py": (
        ["--sizes", "10x200"],
        [
            rf"ingest \(default\)\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"eval map \(memory limit 2GB\)\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"NumPy dense reference\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"eval CPU / reference CPU = {X} .*; ingest \+ eval / reference = {X}",
            rf"eval peak {NUM} GiB",
        ],
        [],
    ),
    "ingest.py": (
        ["--rows", "20000", "--lists", "20", "--repeat", "1"],
        [
            rf"duckdb\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"evalstore\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"time ratio evalstore/duckdb, whole process: {X} wall, {X} CPU",
            rf"peak ratio evalstore/duckdb: {X}",
            rf"time ratio evalstore ingest/duckdb, whole process: {X} wall, {X} CPU",
            rf"peak ratio evalstore ingest/duckdb: {X}",
            rf"size ratio evalstore/duckdb: {X}",
        ],
        [],
    ),
    "keypoint_ingest.py": (
        ["--pairs", "10", "--matches", "50", "--repeat", "1"],
        [
            # pairs, matches | ingest CPU, wall, peak | CTAS CPU, wall, peak | ratios | eval...
            rf"10\s+500 \|\s+{NUM}\s+{NUM}\s+{NUM} \|\s+{NUM}\s+{NUM}\s+{NUM} \|"
            rf"\s+{X}\s+{X} \|\s+{NUM}\s+{NUM}\s+{NUM} \|\s+{X}",
        ],
        [],
    ),
    "pose.py": (
        ["--pairs", "10", "--matches", "50", "--repeat", "1"],
        [
            r"10 pairs x 50 matches",
            rf"ingest \(once, not counted\): {NUM} CPU s, {NUM} s wall whole process; "
            rf"{NUM} CPU s the ingest alone",
            rf"evalstore: evaluate -m pose_auc \(new estimates\)\s+{NUM}\s+{NUM}\s+{NUM}"
            rf"\s+{NUM}\s+{NUM}",
            rf"reference: SuperGlue's loop\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"evalstore / reference: {X} CPU, {X} wall, {X} peak \(whole processes\); "
            rf"the work alone {X} CPU, {X} wall",
            r"agree to 1e-09: yes",
            r"target evalstore CPU <= the reference's \(whole processes\): (met|NOT met)",
        ],
        [],
    ),
    "ranking.py": (
        ["--rows", "20000", "--lists", "20", "--items", "100", "--repeat", "1"],
        [
            rf"SQL / NumPy\s+=\s+{X} CPU",
            rf"sklearn / SQL\s+=\s+{X} CPU",
            rf"DuckDB CTAS\s+{NUM}\s+{NUM}\s+{X}\s+{X}\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"Store\.ingest after\s+{NUM}\s+{NUM}\s+{X}\s+{X}\s+{NUM}\s+{NUM}\s+{NUM}",
            r"values agree to 1e-09: yes",
        ],
        [],
    ),
    "run_log.py": (
        ["--steps", "50", "--reference", "8", "--repeat", "1"],
        [
            r"200 values \(50 steps x 4 scalars\), best of 1",
            rf"\| run\.log calls \(the loop\) \| 200 \| {NUM} \| {NUM} \| {NUM} \|",
            rf"\| the whole, through finish \| 200 \| {NUM} \| {NUM} \| {NUM} \|",
            rf"\| Store\.log_metric, one value a call \| 8 \| {NUM} \| {NUM} \| {NUM} \|",
            rf"the loop / list appends: {X} the time; the whole / log_metric: {X} the values/s",
            r"bar: >= 10,000 values/s into a local store, through finish: (met|NOT met)",
        ],
        [],
    ),
    "spark.py": (
        ["--lists", "20", "--items", "50", "--repeat", "1"],
        [
            rf"DuckDB metrics/ap\s+{NUM}",
            rf"Spark local\[\*\] \(best\)\s+{NUM}",
            rf"Spark / DuckDB = {X}",
            r"agree to 1e-09: yes",
        ],
        [pytest.mark.spark],
    ),
    "startup.py": (
        ["--runs", "5", "--repeat", "1"],
        [
            rf"evalstore --help\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"bare duckdb: select \* from v_runs \(5 rows\)\s+{NUM}\s+{NUM}\s+1\.00",
            rf"evalstore runs \(5 runs\)\s+{NUM}\s+{NUM}\s+{NUM}",
            rf"target evalstore runs <= 1\.5x the bare query: {X}",
        ],
        [],
    ),
    "steps.py": (
        ["--steps", "3", "--rows", "2000", "--per-list", "100"],
        [
            r"3 steps of 2,000 rows vs one ingest of 6,000 rows",
            rf"steps\s+{NUM} CPU s\s+{NUM} CPU ns per row",
            rf"one ingest\s+{NUM} CPU s\s+{NUM} CPU ns per row",
            rf"ratio \(steps / one ingest\): {NUM}",
            rf"DuckDB alone, 3 insert\+commit of a step's file / one of all: {NUM}",
            rf"DuckDB alone, the same inserts committed 10 at a time / one of all: {NUM}",
            rf"the first tenth of the steps {NUM} CPU s, the last {NUM} \({X}\)",
        ],
        [],
    ),
    "ui.py": (
        ["--runs", "40", "--repeat", "1", "--quick-demo"],
        [
            rf"start-up on the demo store, until / answered: {NUM} s wall",
            rf"compare two runs: {NUM} s, then {NUM} s",
            rf"compare two configurations: {NUM} s, then {NUM} s",
            rf"sql: {NUM} s, then {NUM} s",
            rf"slowest page: {NUM} s",
        ],
        [],
    ),
    "writers.py": (
        ["--rows", "20000", "--writers", "2", "--writer-rows", "5000", "--repeat", "1"],
        [
            rf"staging {NUM} s \(store free\), merge {NUM} s \(store locked\)",
            rf"direct \(the lock held all along\) {NUM} CPU s / {NUM} s wall; "
            rf"staged {NUM} / {NUM}: {X} CPU, {X} wall",
            r"2 ingests of 5,000 rows at once: 2 of 2 succeeded, 2 runs and 10,000 rows "
            r"stored \(of 10,000\)",
        ],
        [],
    ),
}


#: further cases: a script's other paths (CSV and text ids; float64 scores), same patterns
MORE: list[tuple[str, list[str]]] = [
    ("ingest.py", ["--format", "csv", "--ids", "text", "--scores", "float64"]),
    ("eval_process.py", ["--scores", "float64", "--decimals", "2"]),
]


#: other modes of a script, with patterns of their own: (script, arguments, patterns)
MODES: list[tuple[str, list[str], list[str]]] = [
    (
        "compare.py",
        ["--pairs", "400", "--reference-pairs", "200", "--repeat", "1"],
        [
            rf"\| 200 \| reweighted \(this version\) \| {NUM} \| {NUM} \| {NUM} \|",
            rf"ratio at 200 pairs, reweighted / before: {NUM} \(CPU\)",
            rf"400 pairs: {NUM} CPU-s \(<= 10: (met|NOT met)\), {NUM} GiB",
        ],
    ),
    (
        "compare.py",
        ["--ui-pairs", "300", "--repeat", "1"],
        [
            rf"UI Compare of two runs of one list of 300 pairs: first request {NUM} s wall, "
            rf"{NUM} CPU-s; then {NUM} s wall, {NUM} CPU-s \(median of 1\)",
            rf"slowest answer: {NUM} s; target <= 2\.0 s: (met|NOT met)",
        ],
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "args", "patterns"), MODES, ids=[f"{m[0]}:{m[1][0]}" for m in MODES]
)
def test_bench_mode_runs_at_a_tiny_size(script: str, args: list[str], patterns: list[str]) -> None:
    run_args(script, args, patterns)


def test_every_bench_script_has_a_tiny_case() -> None:
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(CASES), "bench/ scripts without a case here, or cases without a script"


#: the cases of a minute or more (a demo store, Spark, pycocotools): tests/test_bench_heavy.py
#: runs them, so that the two files share CI's workers (which take a file each)
HEAVY = frozenset({"ui.py", "spark.py", "detection.py", "dashboard.py"})


def params(*, heavy: bool) -> list[object]:
    """The cases of the scripts in :data:`HEAVY` (``heavy``) or of the others."""
    out = [
        pytest.param(name, [], marks=marks, id=name)
        for name, (_, _, marks) in CASES.items()
        if (name in HEAVY) == heavy
    ]
    for name, extra in MORE:
        if (name in HEAVY) == heavy:
            out.append(pytest.param(name, extra, id=f"{name}:{','.join(extra)}"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("script", "extra"), params(heavy=False))
def test_bench_script_runs_at_a_tiny_size(script: str, extra: list[str]) -> None:
    run_case(script, extra)


def run_case(script: str, extra: list[str]) -> None:
    """Run ``bench/<script>`` at its tiny size; it must exit 0 and print its figures."""
    tiny, patterns, _ = CASES[script]
    run_args(script, [*tiny, *extra], patterns)


def run_args(script: str, args: list[str], patterns: list[str]) -> None:
    """Run ``bench/<script> args``; it must exit 0 and print ``patterns``."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    missing = [p for p in patterns if re.search(p, done.stdout) is None]
    assert not missing, f"{script} did not print {missing}:\n{done.stdout[-3000:]}"

"""`evalstore eval` of cached values (evalstore/cli/cached_eval.py): read with DuckDB alone and
printed from Python rows. It prints what the full path prints, byte for byte, in every
format; it declines (and the full path computes) where a value is missing, stale or of other
parameters; and a fresh process serving it loads neither NumPy, polars nor pyarrow."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import ranked
from hypothesis import example, given
from hypothesis import strategies as st
from typer.testing import CliRunner

from evalstore import Store, evaluate
from evalstore.cli import app, cached_eval
from evalstore.cli.common import Fmt
from evalstore.core.points import TIES
from evalstore.db import queries
from evalstore.errors import EvalstoreError
from evalstore.metrics import catalogue
from evalstore.metrics.registry import METRICS

MATCHES = {
    "pair_id": ["p"] * 4 + ["q"] * 3,
    "x0": [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0],
    "y0": [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0],
    "x1": [1.0, 2.0, 3.0, 9.0, 1.5, 2.0, 30.0],
    "y1": [1.0, 2.0, 3.0, 9.0, 1.0, 2.5, 3.0],
    "gt_x1": [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0],
    "gt_y1": [1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0],
}

#: (arguments of `evalstore eval`, the evaluate() call that caches its values)
CALLS: list[tuple[list[str], dict[str, Any]]] = [
    (["exp/a"], {"runs": ["exp/a"]}),
    (["exp/a", "exp/b", "other/c"], {"runs": ["exp/a", "exp/b", "other/c"]}),
    (["--all"], {"runs": None, "all_runs": True}),
    (
        ["exp/a", "exp/b", "-m", "ap", "-m", "mAP", "-m", "ndcg"],
        {"runs": ["exp/a", "exp/b"], "metrics": ["ap", "ndcg"]},
    ),
    (
        ["exp/a", "-m", "precision_at_k", "--k", "3"],
        {"runs": ["exp/a"], "metrics": ["precision_at_k"], "k": 3},
    ),
    (
        ["exp/b", "-m", "ap", "--ties", "pessimistic"],
        {"runs": ["exp/b"], "metrics": ["ap"], "ties": "pessimistic"},
    ),
    (
        ["exp/a", "other/c", "--protocol", "trec"],
        {"runs": ["exp/a", "other/c"], "protocol": "trec"},
    ),
    (["kp/k"], {"runs": ["kp/k"]}),
    (
        ["kp/k", "-m", "mma", "--threshold", "2,1,5"],
        {"runs": ["kp/k"], "metrics": ["mma"], "sweeps": {"threshold": [1.0, 2.0, 5.0]}},
    ),
    (["exp/a", "kp/k", "out/o"], {"runs": ["exp/a", "kp/k", "out/o"]}),
]


@pytest.fixture(scope="module")
def cached_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Runs of three tasks (a NaN, a tiny value and a run name that needs quoting among
    their values), every value of CALLS computed."""
    path = tmp_path_factory.mktemp("cached") / "evalstore.duckdb"
    with Store(path) as store:
        for i, run in enumerate(["exp/a", "exp/b", "other/c"]):
            store.ingest(ranked(4, 6, seed=i), task="retrieval", run=run, git_commit=None)
        store.ingest(ranked(3, 5, seed=7), task="verification", run='x/"d, e"', git_commit=None)
        store.ingest_keypoints(MATCHES, run="kp/k", git_commit=None)
        store.ingest_outcomes(
            {"group_id": [1, 2, 3], "tp": [3, 0, 1], "fp": [1, 0, 0], "fn": [0, 2, 99999]},
            run="out/o",
            git_commit=None,
        )
        for _, call in CALLS:
            evaluate(store, **call)
        # values no small test run gives, as a stored value may be (test-only SQL)
        store.con.execute(
            "update metric_values set value = case metric when 'ndcg' then 'NaN'::double "
            "when 'fpr95' then 1.5e-7 when 'iou' then 2.5e-5 else value end"
        )
    return path


def _invoke(
    db: Path,
    args: list[str],
    light: bool,
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str] | None = None,
) -> Any:
    """`evalstore eval ARGS` with the light path (``light``) or the full path alone; and
    whether the light path served it."""
    taken: list[bool] = []
    real = cached_eval.light_rows

    def spy(**kw: Any) -> list[dict[str, Any]] | None:
        rows = real(**kw) if light else None
        taken.append(rows is not None)
        return rows

    with monkeypatch.context() as m:
        m.setattr(cached_eval, "light_rows", spy)
        result = CliRunner().invoke(app, ["eval", *args, "--db", str(db)], env=env)
    return result, taken


@pytest.mark.parametrize("fmt", [f.value for f in Fmt])
@pytest.mark.parametrize("args", [a for a, _ in CALLS], ids=lambda a: " ".join(a))
def test_cached_values_print_as_the_full_path_prints_them(
    cached_store: Path, args: list[str], fmt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, taken = _invoke(cached_store, [*args, "-f", fmt], True, monkeypatch)
    full, declined = _invoke(cached_store, [*args, "-f", fmt], False, monkeypatch)
    assert (fast.exit_code, full.exit_code) == (0, 0), fast.output + full.output
    assert taken == [True] and declined == [False]
    assert fast.stdout == full.stdout
    assert fast.stdout.strip()


@pytest.mark.parametrize("columns", ["50", "90", "220"])
@pytest.mark.parametrize("color", ["", "1"])
def test_tables_of_any_width_and_colour_print_the_same(
    cached_store: Path, columns: str, color: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Narrow tables (folded columns, blocks, cut text) and rich's own printing (FORCE_COLOR)
    of the light path are the full path's."""
    env = {"COLUMNS": columns, "FORCE_COLOR": color} if color else {"COLUMNS": columns}
    args = ["--all", "-m", "ap", "-m", "fpr95", "-m", "iou"]
    fast, taken = _invoke(cached_store, args, True, monkeypatch, env)
    full, _ = _invoke(cached_store, args, False, monkeypatch, env)
    assert taken == [True] and fast.exit_code == full.exit_code == 0
    assert fast.stdout == full.stdout and fast.stdout.strip()


def test_the_store_has_the_edge_values(cached_store: Path) -> None:
    """The comparisons above see a NaN, a value below 1e-4 and a run name CSV quotes."""
    with Store(cached_store, read_only=True) as store:
        values = [v for (v,) in store.con.execute("select value from metric_values").fetchall()]
        names = [n for (n,) in store.con.execute("select name from runs").fetchall()]
    assert any(v is not None and math.isnan(v) for v in values)
    assert any(v is not None and 0 < abs(v) < 1e-4 for v in values)
    assert '"d, e"' in names


@pytest.mark.parametrize(
    ("args", "light"),
    [
        (["exp/a", "-m", "ap", "--ties", "input"], True),  # other parameters: computed
        (["exp/a", "exp/b", "-m", "precision_at_k", "--k", "4", "-m", "ap"], True),
        (["fresh/f"], True),  # a run never evaluated
        (["exp/a", "fresh/f", "--protocol", "trec"], True),  # one cached, one computed
        (["exp/a", "fresh/f", "-m", "roc_auc", "-f", "csv"], True),
        (["out/o", "-m", "iou", "-f", "json"], True),
        (["exp/a", "exp/b", "--recompute", "-f", "csv"], True),  # cached, computed again
        (["exp/a", "kp/k", "--recompute"], False),
        (["kp/k", "-m", "mma", "--threshold", "11"], False),  # keypoints: the full path
        (["kp/k", "fresh/f", "-m", "homography_accuracy", "--eps", "2", "-m", "ap"], False),
        (["exp/a", "-m", "nosuch"], False),  # errors are the full path's
        (["nosuch/run"], False),
        (["exp/a", "--k", "0"], False),
        (["exp/a", "--sigma", "x"], False),
        (["exp/a", "--protocol", "trec", "--ties", "input"], False),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, list) else str(a),
)
def test_what_is_not_cached_is_computed_as_the_full_path_computes_it(
    cached_store: Path,
    tmp_path: Path,
    args: list[str],
    light: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db, fresh = tmp_path / "copy.duckdb", tmp_path / "fresh.duckdb"
    db.write_bytes(cached_store.read_bytes())
    with Store(db) as store:
        store.ingest(ranked(3, 5, seed=3), task="retrieval", run="fresh/f", git_commit=None)
    fresh.write_bytes(db.read_bytes())
    fast, taken = _invoke(db, args, True, monkeypatch)
    assert taken == [light]
    full, _ = _invoke(fresh, args, False, monkeypatch)
    assert (fast.exit_code, fast.stdout) == (full.exit_code, full.stdout)
    assert fast.stderr.replace(str(db), "DB") == full.stderr.replace(str(fresh), "DB")
    assert _values(db) == _values(fresh)  # the same values computed
    again, taken = _invoke(db, args, True, monkeypatch)  # now cached
    assert (again.exit_code, again.stdout) == (fast.exit_code, fast.stdout)
    assert _values(db) == _values(fresh)


def _values(db: Path) -> list[tuple[Any, ...]]:
    with Store(db, read_only=True) as store:  # test-only SQL
        return store.con.execute(
            "select run_id, task, metric, params, slice, value::varchar, n_lists, n_skipped, "
            "definition_sha from metric_values order by all"
        ).fetchall()


def test_a_stale_value_is_computed_again(
    cached_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(cached_store.read_bytes())
    before = _values(db)
    with Store(db) as store:  # test-only SQL
        store.con.execute("update metric_values set definition_sha = 'old' where metric = 'ap'")
    fast, taken = _invoke(db, ["exp/a", "-m", "ap", "-f", "json"], True, monkeypatch)
    assert taken == [True] and fast.exit_code == 0
    [row] = json.loads(fast.stdout)
    assert row["stale"] is False and row["definition_sha"] == METRICS["ap"].sha
    after = _values(db)
    grouped = (1, "retrieval", "ap", '{"ties":"grouped"}')
    assert [r for r in after if r[:4] == grouped] == [r for r in before if r[:4] == grouped]


def test_recompute_computes_the_values_again(
    cached_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(cached_store.read_bytes())
    query = "select computed_at from metric_values where run_id = 1 order by all"
    with Store(db, read_only=True) as store:  # test-only SQL
        before = store.con.execute(query).fetchall()
    result, taken = _invoke(db, ["exp/a", "-m", "ap", "--recompute"], True, monkeypatch)
    assert taken == [True] and result.exit_code == 0
    with Store(db, read_only=True) as store:
        after = store.con.execute(query).fetchall()
    assert len(after) == len(before) and after != before and max(after) > max(before)


CHILD = """
import json, sys
from evalstore.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps(sorted(m for m in ("numpy", "polars", "pyarrow", "pandas") if m in sys.modules)))
"""


@pytest.mark.slow  # a fresh process
@pytest.mark.parametrize("fmt", ["table", "json", "csv", "latex"])
def test_cached_values_load_no_heavy_library(cached_store: Path, fmt: str) -> None:
    argv = ["eval", "exp/a", "kp/k", "--db", str(cached_store), "-f", fmt]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow  # a fresh process
def test_a_new_runs_ap_is_computed_without_heavy_libraries(
    cached_store: Path, tmp_path: Path
) -> None:
    db = tmp_path / "copy.duckdb"
    db.write_bytes(cached_store.read_bytes())
    with Store(db) as store:
        store.ingest(ranked(3, 5, seed=3), task="retrieval", run="fresh/f", git_commit=None)
    argv = ["eval", "fresh/f", "-m", "ap", "--db", str(db), "-f", "json"]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, check=True
    )
    *printed, loaded = done.stdout.strip().splitlines()
    assert loaded == "[]"
    with Store(db) as store:
        [expected] = evaluate(store, ["fresh/f"], metrics=["ap"]).to_dicts()
    [row] = json.loads("\n".join(printed))
    assert row["value"] == expected["value"] and row["stale"] is False


def _polars_csv(values: list[float | None]) -> list[str]:
    buf = io.StringIO()
    pl.DataFrame({"v": values}, schema={"v": pl.Float64}).write_csv(buf)
    return buf.getvalue().split("\n")[1:-1]


@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=50))
@example([1e-5, -1e-5, 1.5e-7, 2.5e-9, 1e-10, 1e16, 1e15, 0.0, -0.0, 5e-324, 1e-4, 0.1])
def test_csv_floats_as_polars_writes_them(values: list[float]) -> None:
    assert [cached_eval.csv_float(v) for v in values] == _polars_csv(values)


def test_csv_floats_of_every_magnitude() -> None:
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**63, size=20_000, dtype=np.int64).tolist()
    values = [struct.unpack("d", struct.pack("q", b))[0] for b in bits]
    values += [float(m) * 10.0**e for e in range(-320, 300) for m in rng.uniform(1, 10, 5)]
    values += [-v for v in values[:5000]]
    values = [v for v in values if not math.isnan(v)] + [math.nan]
    assert [cached_eval.csv_float(v) for v in values] == _polars_csv(values)


def test_the_catalogue_is_the_registry_without_twins() -> None:
    assert catalogue.TIES == TIES
    built_in = [n for n in METRICS if n in catalogue.BUILT_IN]
    assert built_in == list(catalogue.CATALOGUE)
    for name, spec in catalogue.CATALOGUE.items():
        assert spec.reference is catalogue.unattached
        assert METRICS[name] == dataclasses.replace(spec, reference=METRICS[name].reference)
        assert METRICS[name].reference is not catalogue.unattached
        assert (spec.sha, spec.sql_files) == (METRICS[name].sha, METRICS[name].sql_files)
    with pytest.raises(NotImplementedError):
        catalogue.CATALOGUE["ap"].reference(None, None)  # type: ignore[arg-type]


def test_a_query_is_its_file_read_alone() -> None:
    """queries.load reads a file of one query alone (not its folder): the same text, path
    and SHA as the file read by load_file, and fragments of lib/ are still no query."""
    root = queries.sql_dir()
    files = sorted(p for p in root.glob("*/*.sql") if p.parent.name != "lib")
    single = [p for p in files if "-- name:" not in p.read_text()]
    assert {"ap", "ap_ranked", "ndcg"} <= {p.stem for p in single if p.parent.name == "metrics"}
    for path in single:
        name = path.relative_to(root).with_suffix("").as_posix()
        one, read = queries.load(name), queries.load_file(path, name)
        assert (one.name, one.text, one.path, one.sha) == (
            read.name,
            read.text,
            read.path,
            read.sha,
        )
    with pytest.raises(EvalstoreError, match="no SQL query named"):
        queries.load("lib/coco_det_ap")
    with pytest.raises(EvalstoreError, match="no SQL query named"):
        queries.load("eval/eval")  # a file of named queries

"""Tables fit a 100-column terminal: no line longer, no number split or cut, the columns
whose value is the same on every row said once in a caption, the column names whole."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from typer.testing import CliRunner

from evalstore import Store
from evalstore.cli import app
from evalstore.render import cell, rows_screen, rows_screen_text, screen_text
from evalstore.render.layout import ELLIPSIS, KEYS, plan, text_width

NUMBER = re.compile(r"(?<![\w.\u2026])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.\u2026])")
RULE = "\u2500"


def _lists(seed: int, n: int = 12) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    g = np.repeat([f"queries/validation/a-long-list-identifier-{i:04d}" for i in range(n)], 6)
    return {
        "group_id": g,
        "item_id": np.tile([f"document-{i}" for i in range(6)], n),
        "score": rng.standard_normal(g.size).round(4),
        "label": np.tile([1, -1, 1, -1, -1, 1], n),
    }


@pytest.fixture(scope="module")
def wide_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two configurations x three seeds in one long-named experiment, and a baseline run."""
    db = tmp_path_factory.mktemp("width") / "w.duckdb"
    with Store(db) as store:
        k = 0
        for config in ("transformer-large-with-a-long-name", "bm25-baseline-reference"):
            for seed in range(3):
                store.ingest(
                    _lists(k),
                    task="retrieval",
                    run=f"an-experiment-with-a-long-name/{config}-seed{seed}",
                    params={"model": config, "seed": seed, "learning_rate": 0.000125},
                    tags=["nightly", "validation-split"],
                    notes="a note long enough to need cutting on a terminal of a hundred "
                    "columns, which it gets with an ellipsis rather than wrapped lines",
                    created_at=f"2026-01-0{k + 1}T10:00",
                    git_commit="0123456789abcdef0123456789abcdef01234567",
                )
                k += 1
    return db


def _run(db: Path | None, args: list[str], columns: int) -> str:
    extra = ["--db", str(db)] if db is not None else []
    got = CliRunner().invoke(app, [*args, *extra], env={"COLUMNS": str(columns)})
    assert got.exit_code == 0, got.output
    return got.stdout


def _parse(text: str) -> tuple[list[str], dict[str, str], set[str]]:
    """The column names of every block, the caption's items and the numeric tokens."""
    lines = text.split("\n")
    headers: list[str] = []
    for i, line in enumerate(lines[1:], 1):
        if line.strip() and set(line.strip()) == {RULE}:
            headers += [h for h in re.split(r"\s{2,}", lines[i - 1].strip()) if h]
    end = max(i for i, line in enumerate(lines) if line and not line.strip())  # a table's foot
    caption = " ".join(line[1:] for line in lines[end + 1 :] if line)
    items = dict(item.split(": ", 1) for item in caption.split(" \u00b7 ") if item)
    return headers, items, set(NUMBER.findall(text))


COMMANDS = [
    ["runs"],
    ["show", "an-experiment-with-a-long-name/bm25-baseline-reference-seed0"],
    ["eval", "--all"],
    ["metrics", "--all"],
    ["metrics", "an-experiment-with-a-long-name/bm25-baseline-reference-seed1"],
    [
        "compare",
        "an-experiment-with-a-long-name/bm25-baseline-reference-seed0",
        "an-experiment-with-a-long-name/transformer-large-with-a-long-name-seed0",
        "--n-boot",
        "200",
    ],
    [
        "compare",
        "-g",
        "model=bm25-baseline-reference",
        "-g",
        "model=transformer-large-with-a-long-name",
        "--n-boot",
        "200",
    ],
    ["history", "-m", "map"],
    ["leaderboard"],
    ["leaderboard", "--runs"],
    ["groups"],
    ["diff", "bm25-baseline-reference-seed0", "transformer-large-with-a-long-name-seed2"],
    [
        "diff",
        "bm25-baseline-reference-seed0",
        "bm25-baseline-reference-seed1",
        "--items",
        "queries/validation/a-long-list-identifier-0003",
    ],
    ["sql", "select * from v_metrics order by run, metric"],
    ["sql", "select * from v_runs"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_table_commands_fit_100_columns(wide_db: Path, args: list[str]) -> None:
    _run(wide_db, ["eval", "--all"], 100)  # every value cached: the runs' outputs stay put
    narrow = _run(wide_db, args, 100)
    wide = _run(wide_db, args, 1000)
    assert max(text_width(line) for line in narrow.split("\n")) <= 100, narrow
    n_headers, n_caption, n_numbers = _parse(narrow)
    w_headers, w_caption, w_numbers = _parse(wide)
    # no column lost, none renamed: shown whole in a block, or said in the caption
    assert set(n_headers) | set(n_caption) == set(w_headers) | set(w_caption)
    assert n_caption == w_caption
    # no number split or cut: each is one the wide table shows, and the wide table's numbers
    # of numeric columns are all there
    assert n_numbers <= w_numbers
    shown = json.loads(_run(wide_db, [*args, "--format", "json"], 100))
    rows = shown if isinstance(shown, list) else []
    values = {
        cell(v)
        for r in rows
        for v in r.values()
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }
    assert (values & w_numbers) <= n_numbers
    assert ELLIPSIS not in wide


def test_constant_columns_fold_into_the_caption(wide_db: Path) -> None:
    text = _run(wide_db, ["diff", "bm25-baseline-reference-seed0", "bm25-baseline-reference-seed1"],
                100)  # fmt: skip
    headers, caption, _ = _parse(text)
    assert caption == {"task": "retrieval", "metric": "ap", "params": '{"ties":"grouped"}'}
    assert headers == ["group_id", "value_a", "value_b", "diff"]
    runs = _run(wide_db, ["runs"], 100)
    headers, caption, _ = _parse(runs)
    assert caption["experiment"] == "an-experiment-with-a-long-name"
    assert caption["tags"] == "nightly, validation-split"
    assert caption["git_commit"] == "0123456789"
    assert {"run_id", "name", "created_at"} <= set(headers)


def test_the_run_column_stays_and_one_row_folds_nothing(wide_db: Path) -> None:
    run = "an-experiment-with-a-long-name/bm25-baseline-reference-seed1"
    _run(wide_db, ["eval", run, "-m", "map", "-m", "ndcg"], 100)  # two stored values at least
    headers, caption, _ = _parse(_run(wide_db, ["metrics", run], 100))
    assert "run" in headers and "task" in caption  # the run is the same on every row
    one = _run(wide_db, ["metrics", run, "-m", "map"], 100)
    headers, caption, _ = _parse(one)
    assert caption == {} and {"run", "task", "metric", "value", "stale"} <= set(headers)


def test_machine_formats_are_never_folded(wide_db: Path) -> None:
    args = ["diff", "bm25-baseline-reference-seed0", "bm25-baseline-reference-seed1"]
    for fmt in ("json", "csv", "tsv", "nl"):
        text = _run(wide_db, [*args, "--format", fmt], 60)
        assert "retrieval" in text and "\u00b7" not in text and ELLIPSIS not in text
    csv = _run(wide_db, [*args, "--format", "csv"], 60).split("\n")
    assert csv[0] == "group_id,value_a,value_b,diff,task,metric,params"


def test_protocols_fit_100_columns() -> None:
    text = _run(None, ["protocols"], 100)
    assert max(text_width(line) for line in text.split("\n")) <= 100
    headers, _, _ = _parse(text)
    assert set(headers) == {"protocol", "reproduces", "reference", "metrics", "ties",
                            "unretrieved lists", "pose estimation",
                            "differs from the default"}  # fmt: skip


def test_plan_keeps_numbers_whole_and_repeats_the_keys() -> None:
    headers = ["run", "notes", *(f"metric_{i}" for i in range(8))]
    cells = [["a/b", "c/d"], ["x" * 80, "y"], *([["0.123456", "-0.5"]] * 8)]
    right = [False, False, *([True] * 8)]
    got = plan(headers, cells, right, 60, constant=[False] * 10)
    assert len(got.blocks) > 1
    for block in got.blocks:
        cols = dict(block)
        assert 0 in cols  # the key column in every block
        assert sum(cols.values()) + 3 * len(cols) + 1 <= 60
        assert all(cols[i] == 8 for i in cols if i >= 2)  # numbers: their full width
    assert sorted(i for b in got.blocks for i, _ in b if i) == list(range(1, 10))
    assert "run" in KEYS


@settings(max_examples=examples(80), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False)),
            st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
            st.sampled_from(["same", "same", "other"]),
        ),
        max_size=6,
    ),
    st.integers(30, 90),  # room for the key and the widest name: rich cuts names otherwise
    st.booleans(),
)
def test_screens_written_directly_are_what_rich_prints(
    rows: list[tuple], width: int, ansi: bool
) -> None:
    """Cut cells, blocks and the caption: the text written without rich is rich's print."""
    columns = ["run", "value", "a long text column", "flag"]
    rows = [(f"r{i}", *r) for i, r in enumerate(rows)]
    screen = rows_screen(columns, rows, width)
    console = Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        soft_wrap=True,
        force_terminal=ansi,
        color_system="standard" if ansi else None,
    )
    for table in screen.tables:
        console.print(table)
    for line in screen.caption:
        console.print(line, markup=False)
    printed = console.file.getvalue()  # type: ignore[attr-defined]
    assert screen_text(screen, ansi) == printed
    if not ansi:
        assert rows_screen_text(columns, rows, width) == printed


def test_result_columns_stay_when_every_row_has_the_same_value() -> None:
    columns = ["group_id", "task", "value", "diff", "ci_low", "ci_high", "p_value"]
    rows = [[f"class{i}", "detection", 1.0, 0.0, 0.5, 1.0, 1.0] for i in range(3)]
    text = rows_screen_text(columns, rows, 100) or ""
    headers, caption, _ = _parse(text)
    assert caption == {"task": "detection"}  # a constant column that is no result still folds
    assert headers == ["group_id", "value", "diff", "ci_low", "ci_high", "p_value"]
    got = plan(columns, [[str(r[i]) for r in rows] for i in range(7)], [False, False] + [True] * 5,
               100, constant=[False] + [True] * 6)  # fmt: skip
    assert got.folded == (1,)

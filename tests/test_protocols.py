"""--protocol: the registry of official protocols, the CLI and API options, values recording
their protocol, no comparison across protocols, trec's averaging."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from evalstore import Store
from evalstore.analysis.compare import compare, history
from evalstore.analysis.evaluate import evaluate
from evalstore.cli import app
from evalstore.metrics.protocols import PROTOCOLS
from evalstore.metrics.registry import METRICS


def _lists(seed: int, n_lists: int = 6, n_items: int = 12) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = n_lists * n_items
    return {
        "group_id": np.repeat(np.arange(n_lists), n_items),
        "item_id": np.array([f"d{i}" for i in np.tile(np.arange(n_items), n_lists)]),
        "score": rng.integers(0, 4, n).astype(float),  # heavy ties
        "label": rng.choice([-1, 1], n),
    }


def test_every_protocol_names_registered_metrics_of_its_tasks() -> None:
    for protocol in PROTOCOLS.values():
        assert protocol.source.commit and len(protocol.source.commit) == 40, protocol.name
        for task, names in protocol.metrics.items():
            for name in names:
                assert task in METRICS[name].tasks, (protocol.name, task, name)
    assert set(PROTOCOLS) >= {
        "hpatches", "hpatches-python", "voc07", "voc07-numpy", "voc10", "coco", "trec",
        "trec-c", "superpoint", "d2net",
    }  # fmt: skip


def test_values_record_their_protocol_and_are_cached_apart(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(_lists(0), task="retrieval", run="e/a")
        plain = evaluate(store, ["e/a"], metrics=["ap"]).row(0, named=True)
        under = evaluate(store, ["e/a"], protocol="hpatches").row(0, named=True)
        assert plain["protocol"] == "default" and under["protocol"] == "hpatches"
        assert json.loads(under["params"]) == {"protocol": "hpatches", "ties": "input"}
        input_ties = evaluate(store, ["e/a"], metrics=["ap"], ties="input").row(0, named=True)
        assert under["value"] == input_ties["value"]  # the same definition, recorded apart
        stored = store.con.sql("select count(*) from metric_values").fetchall()[0][0]
        assert stored == 3


def test_runs_of_different_protocols_are_never_compared(tmp_path: Path) -> None:
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(_lists(0), task="retrieval", run="e/a")
        store.ingest(_lists(1), task="retrieval", run="e/b")
        frame = compare(store, ["e/a", "e/b"], protocol="trec")
        assert set(frame["metric"]) == {
            "map",
            "precision_at_k",
            "recall_at_k",
            "ndcg",
            "ndcg_at_k",
            "mrr",
            "r_precision",
        }
        assert all(json.loads(p)["protocol"] == "trec" for p in frame["params"])
        default = compare(store, ["e/a", "e/b"])  # values under a protocol are left out
        assert all("protocol" not in json.loads(p) for p in default["params"])
        assert {json.loads(p).get("protocol") for p in history(store, "map")["params"]} == {None}


def test_trec_leaves_queries_without_results_out_and_trec_c_counts_them(tmp_path: Path) -> None:
    # q1: relevant d1 ranked first, AP 1; q2: its one relevant document was not retrieved
    data = {
        "group_id": ["q1", "q1", "q2", "q2"],
        "item_id": ["d1", "d2", "d3", "d4"],
        "score": [2.0, 1.0, -np.inf, -np.inf],
        "label": [1, -1, 1, -1],
    }
    with Store(tmp_path / "s.duckdb") as store:
        store.ingest(data, task="retrieval", run="e/t")
        trec = evaluate(store, ["e/t"], metrics=["ap"], protocol="trec").row(0, named=True)
        trec_c = evaluate(store, ["e/t"], metrics=["ap"], protocol="trec-c").row(0, named=True)
    assert (trec["value"], trec["n_lists"]) == (1.0, 1)
    assert (trec_c["value"], trec_c["n_lists"]) == (0.5, 2)


def test_docid_ties_follow_the_ids_not_the_input_order(tmp_path: Path) -> None:
    # equal scores: trec_eval ranks d9 before d10 before d1 (strcmp, the greater first)
    rows = {"group_id": [0, 0, 0], "score": [1.0, 1.0, 1.0], "label": [1, -1, -1]}
    with Store(tmp_path / "s.duckdb") as store:
        for name, ids in (("a", ["d1", "d10", "d9"]), ("b", ["d9", "d10", "d1"])):
            store.ingest({**rows, "item_id": ids}, task="retrieval", run=f"e/{name}")
        a = evaluate(store, ["e/a"], metrics=["ap"], ties="docid")["value"][0]
        b = evaluate(store, ["e/b"], metrics=["ap"], ties="docid")["value"][0]
    assert a == pytest.approx(1 / 3, rel=1e-15)  # the positive d1 ranks last
    assert b == 1.0  # the positive d9 ranks first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "nope"], "unknown --protocol 'nope'; known: hpatches"),
        (["--protocol", "hpatches", "--ties", "grouped"], "contradicts --protocol hpatches"),
        (["--protocol", "voc07"], "--protocol voc07 covers the tasks classification"),
        (["--protocol", "hpatches", "-m", "ap_coco"], "does not report ap_coco"),
    ],
)
def test_protocol_mistakes_are_one_line(
    cli: Any, tmp_path: Path, args: list[str], message: str
) -> None:
    path = tmp_path / "r.parquet"
    pl.DataFrame(_lists(0)).write_parquet(path)
    assert cli("ingest", str(path), "--task", "retrieval", "-r", "e/a").exit_code == 0
    result = cli("eval", "e/a", *args)
    assert result.exit_code == 1
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_the_cli_lists_protocols_and_takes_them_everywhere(cli: Any, tmp_path: Path) -> None:
    listed = json.loads(CliRunner().invoke(app, ["protocols", "--format", "json"]).stdout)
    assert {p["protocol"] for p in listed} == set(PROTOCOLS)
    voc = next(p for p in listed if p["protocol"] == "voc07")
    assert (voc["repository"], voc["path"]) == ("npinto/VOCdevkit", "VOCcode/VOCevalcls.m")
    assert len(voc["commit"]) == 40 and voc["differs from the default"]
    for name, seed in (("a", 0), ("b", 1)):
        path = tmp_path / f"{name}.parquet"
        pl.DataFrame(_lists(seed)).write_parquet(path)
        assert cli("ingest", str(path), "--task", "retrieval", "-r", f"e/{name}").exit_code == 0
    shown = cli("eval", "e/a", "--protocol", "coco")
    assert shown.exit_code == 0 and "coco" in shown.stdout, shown.output
    compared = json.loads(
        cli("compare", "e/a", "e/b", "--protocol", "hpatches", "-f", "json").stdout
    )
    assert {json.loads(r["params"])["protocol"] for r in compared} == {"hpatches"}
    checked = cli("check", "e/b", "--baseline", "e/a", "--protocol", "hpatches")
    assert checked.exit_code in (0, 3) and '"protocol":"hpatches"' in checked.stdout
    over_time = cli("history", "-m", "map", "--protocol", "hpatches", "-f", "json")
    assert over_time.exit_code == 0 and "hpatches" in over_time.stdout

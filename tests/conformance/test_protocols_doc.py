"""docs/protocols.md has one table row per protocol of evalstore/metrics/protocols.py, naming its
reference code as the registry does (repository, path, full commit), and its worked examples
hold."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from evalstore.analysis.evaluate import evaluate
from evalstore.metrics.protocols import PROTOCOLS
from tests.conformance.harness import Ranked, ingest, one, open_store, values

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocols.md"


def _rows() -> dict[str, str]:
    text = DOC.read_text().split("## The protocols", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            name = line.split("`")[1]
            rows[name] = line
    return rows


def test_every_protocol_has_one_row() -> None:
    assert sorted(_rows()) == sorted(PROTOCOLS)


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_the_row_names_the_reference_code(name: str) -> None:
    row = _rows()[name]
    source = PROTOCOLS[name].source
    for part in (source.repo, f"`{source.path}`", f"`{source.commit}`"):
        assert part in row, (name, part)
    for metric in {m for ms in PROTOCOLS[name].metrics.values() for m in ms}:
        assert f"`{metric}`" in row, (name, metric)


def test_the_worked_examples_hold(tmp_path: Path) -> None:
    """The numbers of the page's worked examples, computed by evalstore."""
    with open_store(tmp_path) as store:
        ingest(store, "two", "verification", [one([2, 1], [-1, 1])], one_list=True)
        assert values(store, "two", "hpatches").mean("ap") == 0.5
        python = values(store, "two", "hpatches-python")
        assert python.mean("auc_pr_trapz") == 0.25 and python.mean("roc_auc_trapz") == 0.0

        recall = one([3, 2, 1, -np.inf, -np.inf], [1, 1, 1, 1, 1])
        ingest(store, "voc", "classification", [recall])
        assert values(store, "voc", "voc07").mean("map_voc07") == pytest.approx(7 / 11)
        assert values(store, "voc", "voc07-numpy").mean("map_voc07_numpy") == pytest.approx(6 / 11)

        tied = Ranked("q", ["d1", "d10", "d9"], [1.0, 1.0, 1.0], [1, 1, -1])
        ingest(store, "ties", "retrieval", [tied])
        aps = {
            ties: evaluate(store, ["ties"], metrics=["ap"], ties=ties)["value"][0]
            for ties in ("grouped", "input", "docid")
        }
        assert aps == pytest.approx({"grouped": 2 / 3, "input": 1.0, "docid": 7 / 12})

        empty = [
            Ranked("q1", ["a", "b"], [2.0, 1.0], [1, -1]),
            Ranked("q2", ["c"], [-np.inf], [1]),
        ]
        ingest(store, "empty", "retrieval", empty)
        trec, trec_c = values(store, "empty", "trec"), values(store, "empty", "trec-c")
        assert trec.mean("map") == 1.0 and trec.mean("precision_at_k") == pytest.approx(0.1)
        assert trec_c.mean("map") == 0.5 and trec_c.mean("precision_at_k") == pytest.approx(0.05)


def test_the_multilabel_example_holds(tmp_path: Path) -> None:
    """The `mlgcn` example: one image, classes a b c d, logits 2.0, 0.3, 0.3, -1.0."""
    rows = {
        "group_id": ["a", "b", "c", "d"],
        "item_id": ["img"] * 4,
        "score": [2.0, 0.3, 0.3, -1.0],
        "label": [1, -1, 1, 1],
    }

    def of1(**kw: object) -> float:
        frame = evaluate(store, ["ml"], **kw)  # type: ignore[arg-type]
        return float(frame.filter(frame["slice"] == "")["value"][0])

    with open_store(tmp_path) as store:
        store.ingest(rows, task="classification", run="ml", labels="pm1", git_commit=None)
        assert of1(metrics=["of1"]) == pytest.approx(2 / 7, rel=1e-12)
        assert of1(metrics=["of1"], protocol="mlgcn") == pytest.approx(4 / 7, rel=1e-12)
        assert of1(metrics=["of1_at_k"], protocol="mlgcn", k=2) == pytest.approx(2 / 7, rel=1e-12)
        grouped = of1(metrics=["of1_at_k"], k=2, sweeps={"threshold": [0.0]})
        assert grouped == pytest.approx(1 / 2, rel=1e-12)

"""evalstore ui on detection runs (Starlette's test client): the compare page shows compare's
numbers for COCO's metrics, the history page offers them, the curves page draws COCO's
per-category precision-recall of the picked runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient
from test_ui import rows

from evalstore import Store, evaluate
from evalstore.analysis.compare import compare
from evalstore.runs.meta import RunMeta
from evalstore.ui import create_app
from tests.conformance.detsets import make_detset


@pytest.fixture(scope="module")
def detections(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[int]]:
    folder = tmp_path_factory.mktemp("uidet")
    gt, dets = make_detset(6, n_images=20, n_categories=12)
    (folder / "gt.json").write_text(json.dumps(gt))
    for k in range(2):  # the second run's scores reversed: a worse detector
        scored = [dict(d, score=d["score"] if k == 0 else 1 - d["score"]) for d in dets]
        (folder / f"dt{k}.json").write_text(json.dumps(scored))
    path = folder / "det.duckdb"
    with Store(path) as store:
        ids = [
            store.ingest_coco(
                folder / f"dt{k}.json",
                folder / "gt.json",
                meta=RunMeta(f"det/r{k}", git_commit=False),
            ).run_id
            for k in range(2)
        ]
        evaluate(store, None, all_runs=True)
    return path, ids


def test_detection_pages(detections: tuple[Path, list[int]]) -> None:
    path, (a, b) = detections
    client = TestClient(create_app(path, host="testserver"))
    page = client.get(f"/compare?unit={b}&unit={a}")
    assert page.status_code == 200
    with Store(path, read_only=True) as store:
        expected = compare(store, ["det/r0", "det/r1"])
    table = rows(page.text, "compare-table")
    assert len(table) == expected.height == 12  # COCO's 12 numbers over 11 categories
    for line, row in zip(table, expected.iter_rows(named=True), strict=True):
        cells = line.split("|")
        assert cells[0] == "det/r1" and cells[2] == row["metric"]
        assert float(cells[4]) == pytest.approx(row["diff"], abs=5e-5)
    history = client.get("/history?experiment=det")
    assert history.status_code == 200 and "detection · AP50" in history.text
    curves = client.get(f"/curves?unit={a}&unit={b}")
    assert curves.status_code == 200
    assert "COCO precision-recall per category" in curves.text and "(all)" in curves.text

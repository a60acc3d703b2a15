"""A detection run is stored raw: every image, category, box and detection as the reader gave
it, all or nothing, deleted with its run."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from evalstore import RunMeta, Store
from evalstore.errors import EvalstoreError, InvalidInput, RunExists
from evalstore.scale.export import export_runs, partition_path
from evalstore.scale.importer import import_runs
from evalstore.scale.layout import DETECTION_DERIVED
from evalstore.scale.verify import check_export
from evalstore.store.staging import ingest_staged
from tests.conftest import export_lists, snapshot

GT = pl.DataFrame({
    "image_id": ["a", "a", "b"], "category": ["cat", "dog", "cat"],
    "x1": [0.0, 10, 5], "y1": [0.0, 10, 5], "x2": [10.0, 30, 25], "y2": [10.0, 40, 15],
    "iscrowd": [0, 0, 1],
})  # fmt: skip
DETS = pl.DataFrame({
    "image_id": ["a", "b", "b"], "category": ["cat", "cat", "dog"],
    "x1": [1.0, 5, 0], "y1": [1.0, 5, 0], "x2": [11.0, 20, 4], "y2": [9.0, 15, 4],
    "score": [0.9, 0.5, 0.2],
})  # fmt: skip


def test_boxes_are_stored_as_read(store: Store, db: Path) -> None:
    result = store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert (result.task, result.rows, result.lists) == ("detection", 3, 2)
    rows = store.con.execute(
        "select det_id, image_id, category_id, x, y, w, h, score, area, x2 from det_boxes "
        "order by det_id"
    ).fetchall()  # test-only SQL
    assert rows[0] == (0, "a", "cat", 1.0, 1.0, 10.0, 8.0, 0.9, 80.0, 11.0)
    truth = store.con.execute(
        "select image_id, category_id, w, h, area, iscrowd from det_truth order by all"
    ).fetchall()
    assert truth == [("a", "cat", 10.0, 10.0, 100.0, False), ("a", "dog", 20.0, 30.0, 600.0, False),
                     ("b", "cat", 20.0, 10.0, 200.0, True)]  # fmt: skip
    info = store.run("det/r1")
    assert {t["task"] for t in info["tasks"]} == {"detection"}


def test_a_second_ingest_is_refused_and_rm_deletes_every_row(db: Path) -> None:
    with Store(db) as store:
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    before = snapshot(db)
    with Store(db) as store, pytest.raises(RunExists, match="det/r1"):
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert snapshot(db) == before
    with Store(db) as store:
        store.remove("det/r1")
    after = snapshot(db)
    assert before["det_boxes"] and not after["det_boxes"] and not after["det_truth"]
    assert not after["det_images"] and not after["det_categories"]


def test_bad_boxes_change_nothing(db: Path) -> None:
    before = snapshot(db)
    bad = DETS.with_columns(pl.Series("x2", [0.0, 20, 4]))  # x2 < x1 in the first row
    with Store(db) as store, pytest.raises(InvalidInput):
        store.ingest_detections(bad, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    assert snapshot(db) == before


def test_a_coco_pair_of_files(store: Store, tmp_path: Path) -> None:
    gt = {
        "images": [{"id": 1, "width": 64, "height": 48, "file_name": "1.jpg"}],
        "categories": [{"id": 3, "name": "car"}],
        "annotations": [{"id": 7, "image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4],
                         "area": 10.5, "iscrowd": 0}],
    }  # fmt: skip
    dets = [{"image_id": 1, "category_id": 3, "bbox": [1, 2, 3, 4], "score": 0.5}]
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    got = store.ingest_coco(tmp_path / "dt.json", tmp_path / "gt.json", meta=RunMeta("det/c"))
    assert (got.rows, got.lists) == (1, 1)
    area = store.con.execute("select area, width from det_truth, det_images").fetchall()
    assert area == [(10.5, 64)]


# -- every whole-store feature carries the rows: export, import, staging, replace, rename ---

DET_TABLES = ("det_images", "det_categories", "det_truth", "det_boxes")


def _det_rows(store: Store, ref: str) -> dict[str, list[tuple[object, ...]]]:
    """Every detection row of a run, without its run id, sorted."""
    run_id = store.resolve(ref)
    return {
        t: sorted(
            store.con.execute(
                f"select * exclude (run_id) from {t} where run_id = ?", [run_id]
            ).fetchall(),
            key=repr,
        )  # test-only SQL
        for t in DET_TABLES
    }


def _count(store: Store, table: str) -> int:
    return int(store.con.execute(f"select count(*) from {table}").fetchall()[0][0])  # test SQL


def _xywh(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(
        x=pl.col("x1"), y=pl.col("y1"), w=pl.col("x2") - pl.col("x1"), h=pl.col("y2") - pl.col("y1")
    ).drop("x1", "y1", "x2", "y2")


@dataclass(frozen=True)
class Source:
    """A store holding two detection runs (with corners and without, one with COCO's ignore
    and VOC's difficult) and a ranked run, its export, and the rows and tasks of its runs."""

    db: Path
    export: Path
    rows: dict[str, dict[str, list[tuple[object, ...]]]]
    tasks: dict[str, Any]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, _empty_store: Path) -> Source:
    folder = tmp_path_factory.mktemp("det_source")
    db = folder / "src.duckdb"
    shutil.copyfile(_empty_store, db)
    with Store(db) as store:
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
        gt = _xywh(GT).with_columns(ignore=pl.Series([0, 1, 0]), difficult=pl.Series([1, 0, 0]))
        store.ingest_detections(
            _xywh(DETS.reverse()), gt, meta=RunMeta("det/r2"), box_format="xywh"
        )
        store.ingest(export_lists(2, 3), task="retrieval", run="exp/ranked", git_commit=None)
        export_runs(store, folder / "export")
        refs = ("det/r1", "det/r2", "exp/ranked")
        rows = {ref: _det_rows(store, ref) for ref in refs}
        tasks = {ref: store.run(ref)["tasks"] for ref in refs}
    return Source(db, folder / "export", rows, tasks)


@pytest.fixture
def exported(source: Source, tmp_path: Path) -> Path:
    """A copy of the source's export, to tamper with."""
    return Path(shutil.copytree(source.export, tmp_path / "export"))


def test_export_import_round_trip_is_row_for_row(source: Source, store: Store) -> None:
    manifest = json.loads((source.export / "manifest.json").read_text())
    assert set(DET_TABLES) <= set(manifest["tables"]) and manifest["format_version"] == 2
    r1 = next(e for e in manifest["runs"] if e["name"] == "r1")
    assert {t: r1["rows"][t] for t in DET_TABLES} == {
        "det_images": 2, "det_categories": 2, "det_truth": 3, "det_boxes": 3,
    }  # fmt: skip
    # and the matches the export made for Spark, which an import does not take (it derives
    # them again on first use), and the ranked lists made from them (scores, groups: the
    # metrics of ranked lists read them, on Spark too), which it imports as lists
    assert set(r1["sha256"]) == {"runs", "scores", "groups", *DET_TABLES, *DETECTION_DERIVED}
    store.ingest_outcomes(  # the imported runs get ids other than the source's
        {"group_id": ["g"], "tp": [1], "fp": [0], "fn": [0]}, run="pad/0", git_commit=None
    )
    assert import_runs(store, source.export) == ["det/r1", "det/r2", "exp/ranked"]
    assert store.resolve("det/r1") == 2
    for ref in ("det/r1", "det/r2"):
        want = source.rows[ref]
        assert all(want[t] for t in DET_TABLES) and _det_rows(store, ref) == want, ref
        assert store.run(ref)["tasks"] == source.tasks[ref]
    assert not any(_det_rows(store, "exp/ranked").values())
    assert all(_count(store, t) == 0 for t in DETECTION_DERIVED)
    # the corners of the xyxy run travel, the xywh run has none; r2's flags too
    assert {r[-1] for r in _det_rows(store, "det/r2")["det_boxes"]} == {None}
    assert None not in {r[-1] for r in _det_rows(store, "det/r1")["det_boxes"]}
    assert {r[10] for r in _det_rows(store, "det/r2")["det_truth"]} == {True, False}


def _before_schema_17(out: Path) -> None:
    """The export as schema 16 wrote it: the ranked run alone, no detection tables."""
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["runs"] = [e for e in manifest["runs"] if e["experiment"] == "exp"]
    for table in (*DET_TABLES, *DETECTION_DERIVED):
        del manifest["tables"][table]
        shutil.rmtree(out / table)
        del manifest["runs"][0]["rows"][table]
    for table in ("runs", "scores", "groups"):
        for part in (out / table).iterdir():
            if part.name != f"run_id={manifest['runs'][0]['run_id']}":
                shutil.rmtree(part)
    (out / "manifest.json").write_text(json.dumps(manifest))


def test_an_export_before_schema_17_still_imports(exported: Path, store: Store) -> None:
    _before_schema_17(exported)
    assert import_runs(store, exported) == ["exp/ranked"]
    assert _count(store, "det_images") == 0


def test_exporting_into_an_export_before_schema_17_adds_the_tables(
    source: Source, exported: Path
) -> None:
    _before_schema_17(exported)
    with Store(source.db, read_only=True) as store:
        export_runs(store, exported, runs=["det/r1"])
    manifest = json.loads((exported / "manifest.json").read_text())
    assert set(DET_TABLES) <= set(manifest["tables"])
    assert [e["name"] for e in manifest["runs"]] == ["r1", "ranked"]
    check_export(exported)  # every file against its checksum and the manifest


def _edit(out: Path, table: str, run: str, change: Callable[[pl.DataFrame], pl.DataFrame]) -> None:
    """Rewrite one detection partition and record its new SHA-256 (only the rows' checks
    are left to find the change)."""
    manifest = json.loads((out / "manifest.json").read_text())
    entry = next(e for e in manifest["runs"] if f"{e['experiment']}/{e['name']}" == run)
    path = partition_path(out, table, entry["run_id"]) / "part-0.parquet"
    change(pl.read_parquet(path)).write_parquet(path)
    entry["sha256"][table] = hashlib.sha256(path.read_bytes()).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest))


def _set(column: str, value: object, row: int = 0) -> Callable[[pl.DataFrame], pl.DataFrame]:
    def change(frame: pl.DataFrame) -> pl.DataFrame:
        values = frame[column].to_list()
        values[row] = value
        return frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype))

    return change


TAMPERED = {
    "image twice": ("det_images", _set("image_id", "b"), r"image_id 'b' 2 times"),
    "category twice": ("det_categories", _set("category_id", "dog"), r"category_id 'dog' 2"),
    "image the run lacks": ("det_boxes", _set("image_id", "zz"), r"an image the run lacks.*'zz'"),
    "category the run lacks": ("det_truth", _set("category_id", "emu"), r"category .*'emu'"),
    "negative side": ("det_truth", _set("w", -1.0), r"a w or h that is NaN, infinite or neg"),
    "infinite x": ("det_boxes", _set("x", float("inf")), r"an x or y that is NaN or infinite"),
    "NaN score": ("det_boxes", _set("score", float("nan")), r"a NaN score"),
    "det_id twice": ("det_boxes", _set("det_id", 1), r"a det_id .* out of range or twice"),
    "det_id beyond n": ("det_boxes", _set("det_id", 3, row=2), r"a det_id .* out of range"),
    "corners not the box": ("det_boxes", _set("x2", 12.0), r"corners .* other than the box"),
    "corners in part": ("det_truth", _set("y1", None), r"corners x1, y1, x2, y2 given in part"),
}


@pytest.fixture(scope="module")
def empty(_empty_store: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of the empty store that ``db`` copies, read once."""
    return snapshot(_empty_store)


@pytest.mark.parametrize("case", TAMPERED, ids=list(TAMPERED))
def test_a_tampered_detection_file_is_refused_in_one_line(
    case: str, exported: Path, db: Path, empty: dict[str, list[tuple[Any, ...]]]
) -> None:
    table, change, message = TAMPERED[case]
    _edit(exported, table, "det/r1", change)
    with Store(db) as dst, pytest.raises(EvalstoreError) as caught:
        import_runs(dst, exported)
    text = str(caught.value)
    assert "\n" not in text and re.search(message, text), text
    assert f"{table}{os.sep}run_id=" in text and "det/r1" in text and "nothing was imported" in text
    assert snapshot(db) == empty


def test_a_staged_ingest_merges_every_row(source: Source, db: Path) -> None:
    """What `evalstore ingest` does: the run built in a private staging store, then merged
    into the store in one transaction."""
    meta = RunMeta("det/r1")
    result = ingest_staged(
        db, lambda s: s.ingest_detections(DETS, GT, meta=meta, box_format="xyxy"), meta=meta
    )
    with Store(db, read_only=True) as store:
        assert store.resolve("det/r1") == result.run_id
        assert _det_rows(store, "det/r1") == source.rows["det/r1"]


def test_a_staged_replace_swaps_the_rows(source: Source, db: Path) -> None:
    with Store(db) as store:
        store.ingest_detections(DETS, GT, meta=RunMeta("det/r1"), box_format="xyxy")
    meta = RunMeta("det/r1", replace=True)
    fewer = DETS.head(1)
    result = ingest_staged(
        db, lambda s: s.ingest_detections(fewer, GT, meta=meta, box_format="xyxy"), meta=meta
    )
    assert result.replaced
    with Store(db, read_only=True) as store:
        rows, want = _det_rows(store, "det/r1"), source.rows["det/r1"]
        assert rows["det_boxes"] == want["det_boxes"][:1] and rows["det_truth"] == want["det_truth"]
        assert _count(store, "det_boxes") == 1  # the replaced run's rows are gone


def test_replace_and_rename_keep_the_right_rows(store: Store) -> None:
    store.ingest_detections(DETS.head(2), GT, meta=RunMeta("det/r1"), box_format="xyxy")
    first = store.resolve("det/r1")
    store.ingest_detections(
        DETS, GT.head(1), meta=RunMeta("det/r1", replace=True), box_format="xyxy"
    )
    rows = _det_rows(store, "det/r1")
    assert (len(rows["det_boxes"]), len(rows["det_truth"])) == (3, 1)
    assert store.resolve("det/r1") == first and _count(store, "det_boxes") == 3  # id kept
    kept = store.resolve("det/r1")
    store.rename("det/r1", "moved/r9")  # keeps its id and every row
    assert store.resolve("moved/r9") == kept and _det_rows(store, "moved/r9") == rows


def test_an_import_replaces_a_detection_run_and_rm_deletes_it(source: Source, store: Store) -> None:
    store.ingest_detections(DETS.head(2), GT.head(1), meta=RunMeta("det/r1"), box_format="xyxy")
    with pytest.raises(RunExists, match="det/r1"):
        import_runs(store, source.export)
    import_runs(store, source.export, replace=True)  # the export's r1 replaces this one
    assert _det_rows(store, "det/r1") == source.rows["det/r1"]
    assert (_count(store, "det_truth"), _count(store, "det_boxes")) == (6, 6)  # r1 and r2 alone
    store.remove("det/r1")
    assert _det_rows(store, "det/r2") == source.rows["det/r2"]
    assert [_count(store, t) for t in DET_TABLES] == [2, 2, 3, 3]


def test_the_run_is_named_as_for_ingest(store: Store, tmp_path: Path) -> None:
    """``run=`` and the other run keywords of :meth:`Store.ingest`, for boxes and COCO
    files alike."""
    store.ingest_detections(
        DETS, GT, box_format="xyxy", run="det/kw", params={"lr": 0.1}, tags=["a"], git_commit=None
    )
    info = store.run("det/kw")
    assert (info["experiment"], info["name"], info["tags"]) == ("det", "kw", ["a"])
    with pytest.raises(TypeError, match="missing the run"):
        store.ingest_detections(DETS, GT, box_format="xyxy")

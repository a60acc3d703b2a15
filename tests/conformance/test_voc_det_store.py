"""PASCAL VOC detection AP of a stored run, through the whole product, against the references.

The devkit's files (annotation XMLs, the image set, ``comp4_det_<set>_<class>.txt``) of
test_voc_det.py's seeded sets are read (:func:`evalstore.ingest.formats.voc_det.read_voc_det`),
stored, and evaluated under ``--protocol voc07-det``, ``voc10-det``, ``voc07-det-devkit`` and
``voc10-det-devkit``; each class's AP must equal the transcriptions of py-faster-rcnn's
``voc_eval`` (``use_07_metric`` True and False, its precision as fixed in d66cc2bf: without
it a class whose best detection finds a difficult object has AP NaN) and of the devkit's
``VOCevaldet.m`` (its 2007 11-point loop, 2010+'s ``VOCap.m``) in
tests/conformance/reference_voc_det.py, to 1e-12.

Scores are made distinct here: ``voc_eval`` sorts with ``np.argsort(-confidence)``, whose
order of equal scores depends on NumPy and the CPU; evalstore keeps input order (the
devkit's stable sort), docs/protocols.md.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from evalstore import Store, evaluate
from evalstore.ingest.detections import ingest_detections
from evalstore.ingest.formats.voc_det import read_voc_det
from evalstore.runs.meta import RunMeta
from tests.conformance import reference_voc_det as ref
from tests.conformance.test_voc_det import VocSet, synthetic

PROTOCOLS = ("voc07-det", "voc10-det", "voc07-det-devkit", "voc10-det-devkit")


def _distinct(data: VocSet, seed: int) -> VocSet:
    """The same set with every score distinct (the order of ties is the references' own)."""
    rng = np.random.default_rng(seed)
    jitter = rng.permutation(len(data.dets)) * 1e-9
    dets = [(i, c, s + float(j), b) for (i, c, s, b), j in zip(data.dets, jitter, strict=True)]
    return VocSet(images=data.images, objects=data.objects, dets=dets)


def _write(data: VocSet, folder: Path) -> tuple[list[Path], Path, Path]:
    ann = folder / "Annotations"
    ann.mkdir()
    for image in data.images:
        objects = "".join(
            f"<object><name>{c}</name><difficult>{d}</difficult><bndbox>"
            f"<xmin>{b[0]}</xmin><ymin>{b[1]}</ymin><xmax>{b[2]}</xmax><ymax>{b[3]}</ymax>"
            "</bndbox></object>"
            for i, c, b, d in data.objects
            if i == image
        )
        (ann / f"{image}.xml").write_text(
            f"<annotation><filename>{image}.jpg</filename>{objects}</annotation>"
        )
    imageset = folder / "test.txt"
    imageset.write_text("".join(f"{i}\n" for i in data.images))
    classes = sorted({c for _, c, _, _ in data.dets})
    files = []
    for cls in classes:
        path = folder / f"comp4_det_test_{cls}.txt"
        path.write_text("".join(data.lines(cls)))
        files.append(path)
    return files, ann, imageset


def _want(data: VocSet) -> dict[str, dict[str, float | None]]:
    """Each protocol's AP per class from the transcriptions; None where npos = 0 (the
    references divide by it; evalstore leaves the class out)."""
    recs = data.recs()
    out: dict[str, dict[str, float | None]] = {p: {} for p in PROTOCOLS}
    for cls in sorted({c for _, c, _, _ in data.dets} | {c for _, c, _, _ in data.objects}):
        npos = sum(1 for _, c, _, d in data.objects if c == cls and not d)
        lines, dets = data.lines(cls), data.class_dets(cls)
        if npos == 0:
            for p in PROTOCOLS:
                out[p][cls] = None
            continue
        if not lines:  # voc_eval cannot index an empty BB; nothing found scores 0
            for p in PROTOCOLS:
                out[p][cls] = 0.0
            continue
        for p, use_07 in (("voc07-det", True), ("voc10-det", False)):
            r = ref.voc_eval(
                lines, recs, data.images, cls, use_07_metric=use_07, eps_precision=True
            )
            out[p][cls] = float(r["ap"])
        d = ref.vocevaldet(
            data.images,
            [recs[i] for i in data.images],
            cls,
            [i for i, _, _ in dets],
            [s for _, s, _ in dets],
            [b for _, _, b in dets],
        )
        # NaN where every detection finds a difficult object (0/0 precisions): no value
        out["voc07-det-devkit"][cls] = None if np.isnan(d["ap07"]) else float(d["ap07"])
        out["voc10-det-devkit"][cls] = float(d["ap"])
    return out


def _check(tmp_path: Path, seed: int, db: Path) -> int:
    data = _distinct(synthetic(seed, n_images=12), seed)
    files, ann, imageset = _write(data, tmp_path)
    want = _want(data)
    checked = 0
    with Store(db) as store:
        ingest_detections(
            store, read_voc_det(files, ann, imageset), meta=RunMeta("voc/a", git_commit=False)
        )
        for protocol in PROTOCOLS:
            got = evaluate(store, ["voc/a"], protocol=protocol, by=["category"])
            rows = got.filter(pl.col("slice") != "")
            have = {
                s.split("=", 1)[1]: v for s, v in zip(rows["slice"], rows["value"], strict=True)
            }
            assert set(have) == set(want[protocol]), protocol
            for cls, value in want[protocol].items():
                if value is None:
                    assert have[cls] is None, (protocol, cls)
                    continue
                assert have[cls] == pytest.approx(value, rel=1e-12, abs=1e-15), (protocol, cls)
                checked += 1
            mean = got.filter(pl.col("slice") == "")["value"].item()
            defined = [v for v in want[protocol].values() if v is not None]
            assert mean == pytest.approx(float(np.mean(defined)), rel=1e-12)
    return checked


@pytest.mark.parametrize("seed", range(2))
def test_stored_voc_run_equals_voc_eval_and_the_devkit(tmp_path: Path, db: Path, seed: int) -> None:
    assert _check(tmp_path, seed, db) >= 8


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2, 14))
def test_stored_voc_run_equals_the_references_many(tmp_path: Path, db: Path, seed: int) -> None:
    assert _check(tmp_path, seed, db) >= 4

"""Dashboard files: a second call rewrites nothing that is up to date (plotly.min.js is
4.8 MB), and a changed or damaged file is written again."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from evalstore import Store
from evalstore import dashboards as dash


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory):
    rng = np.random.default_rng(0)
    group = np.repeat([f"q{i}" for i in range(12)], 8)
    item = np.tile(np.arange(8), 12)
    label = np.where(item < 2, 1, -1)
    with Store(tmp_path_factory.mktemp("files") / "s.duckdb") as s:
        for name in ("a", "b"):
            s.ingest(
                {"group_id": group, "item_id": item, "score": rng.standard_normal(96),
                 "label": label},
                task="retrieval", run=f"exp/{name}", git_commit=None,
            )  # fmt: skip
        dash.evaluate_selected(s)
        yield s


def _stamps(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_a_second_call_rewrites_nothing(store: Store, tmp_path: Path) -> None:
    dash.write_dashboards(store, tmp_path)
    before = _stamps(tmp_path)
    assert "plotly.min.js" in before and not any(n.endswith(".tmp") for n in before)
    dash.write_dashboards(store, tmp_path)
    assert _stamps(tmp_path) == before  # same inodes (no replace), same mtimes (no write)


@pytest.mark.parametrize("damage", ["same size", "truncated", "removed"])
def test_a_changed_plotly_js_is_written_again(store: Store, tmp_path: Path, damage: str) -> None:
    dash.write_dashboards(store, tmp_path)
    js = tmp_path / "plotly.min.js"
    good = js.read_bytes()
    page = tmp_path / "overview.html"
    page_stamp = (page.stat().st_ino, page.stat().st_mtime_ns)
    if damage == "same size":
        js.write_bytes(good[:1000] + bytes([good[1000] ^ 1]) + good[1001:])
    elif damage == "truncated":
        js.write_bytes(good[: len(good) // 2])
    else:
        js.unlink()
    if js.exists():
        os.utime(js, ns=(0, 0))  # a rewrite then shows in the mtime, whatever the clock
    dash.write_dashboards(store, tmp_path)
    assert js.read_bytes() == good
    assert js.stat().st_mtime_ns != 0
    assert (page.stat().st_ino, page.stat().st_mtime_ns) == page_stamp  # the page was fine


def test_a_changed_page_is_written_again(store: Store, tmp_path: Path) -> None:
    dash.write_dashboards(store, tmp_path)
    page = tmp_path / "overview.html"
    good = page.read_bytes()
    page.write_bytes(good.replace(b"Overview", b"Overvieq", 1))
    dash.write_dashboards(store, tmp_path)
    assert page.read_bytes() == good

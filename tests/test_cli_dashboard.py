"""The dashboard command: renders every default spec offline, filters runs, refuses bad
specs with one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalstore import Store


def ingest_two(db: Path) -> None:
    rng = np.random.default_rng(0)
    group = np.repeat(np.arange(5), 20)
    labels = rng.choice([-1, 1], size=group.size)
    with Store(db) as store:
        for name, quality in (("exp/a", 0.5), ("exp/b", 1.5)):
            store.ingest(
                {
                    "group_id": group,
                    "item_id": np.arange(group.size),
                    "score": rng.standard_normal(group.size) + quality * (labels == 1),
                    "label": labels,
                },
                task="retrieval",
                run=name,
            )


@pytest.mark.slow  # about 1.5 s: writes every dashboard
def test_dashboard_command_writes_offline_pages(cli: Any, db: Path, tmp_path: Path) -> None:
    ingest_two(db)
    out = tmp_path / "out"
    result = cli("dashboard", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "index.html" in result.stdout
    pages = sorted(p.name for p in out.glob("*.html"))
    assert {"index.html", "overview.html", "comparison.html", "hpatches.html"} <= set(pages)
    assert (out / "plotly.min.js").exists()
    for page in out.glob("*.html"):
        text = page.read_text()
        assert "cdn." not in text and '<script src="http' not in text
    again = tmp_path / "again"
    assert cli("dashboard", "--out", str(again)).exit_code == 0
    for page in out.glob("*.html"):
        assert (again / page.name).read_bytes() == page.read_bytes()


def test_dashboard_filters_and_bad_spec(cli: Any, db: Path, tmp_path: Path) -> None:
    ingest_two(db)
    out = tmp_path / "one"
    assert cli("dashboard", "--out", str(out), "--runs", "exp/b", "--runs", "exp/a").exit_code == 0
    spec = tmp_path / "bad.toml"
    spec.write_text('title = "Bad"\n[[panels]]\ntitle = "x"\nkind = "pie"\nsql = "select 1 as a"\n')
    result = cli("dashboard", "--out", str(tmp_path / "bad"), "--spec", str(spec))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "pie" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.no_store
def test_dashboard_needs_a_database(cli: Any, tmp_path: Path) -> None:
    result = cli("dashboard", "--out", str(tmp_path / "x"))
    assert result.exit_code == 1 and "no evalstore database" in result.stderr


def test_dashboard_compares_with_the_chosen_or_tagged_baseline(
    cli: Any, db: Path, tmp_path: Path
) -> None:
    ingest_two(db)
    spec = ["--spec", str(Path(__file__).parents[1] / "dashboards" / "comparison.toml")]
    untagged = tmp_path / "untagged"
    assert cli("dashboard", "--out", str(untagged), *spec).exit_code == 0
    text = (untagged / "comparison.html").read_text()
    assert "exp/b vs exp/a" not in text  # not newest-vs-previous without a baseline
    assert "Experiment exp has no run tagged baseline" in text and "evalstore tag RUN" in text
    chosen = tmp_path / "chosen"
    result = cli("dashboard", "--out", str(chosen), "--baseline", "exp/a", *spec)
    assert result.exit_code == 0, result.output
    text = (chosen / "comparison.html").read_text()
    assert "exp\\u002fb vs exp\\u002fa" in text and "baseline: exp/a" in text
    assert cli("tag", "exp/a", "baseline").exit_code == 0
    tagged = tmp_path / "tagged"
    assert cli("dashboard", "--out", str(tagged), *spec).exit_code == 0
    text = (tagged / "comparison.html").read_text()
    assert "exp\\u002fb vs exp\\u002fa" in text and "no run tagged baseline" not in text
    result = cli("dashboard", "--baseline", "exp/nope", "--out", str(tmp_path / "x"))
    assert result.exit_code == 1 and "exp/nope" in result.stderr

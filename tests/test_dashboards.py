"""Dashboards: spec validation, the default dashboards on a store with every task,
deterministic self-contained output, escaping of user strings, filters and the numbers the
panels draw."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import InvalidInput, RunNotFound, Store
from evalstore import dashboards as dash
from evalstore.evaluate import evaluate

XSS_RUN = "<img src=x onerror=alert(1)>"
XSS_TAG = "<script>alert(2)</script>"
XSS_PARAM = "<b onmouseover=alert(3)>x</b>"
XSS_CLASS = "<i>boat</i>"
RAW_HTML = ("<img", "<script>alert", "<b onmouseover", "<i>boat")
H_COLS = [f"h{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
T0 = datetime(2026, 1, 5, 9, 0)


def _ranked(
    rng: np.random.Generator, groups: list[str], n_items: int, quality: float, n_pos: int = 3
) -> dict[str, np.ndarray]:
    group = np.repeat(np.asarray(groups), n_items)
    item = np.tile(np.arange(n_items), len(groups))
    label = np.where(item < n_pos, 1, -1)
    score = (rng.standard_normal(group.size) + quality * (label == 1)).round(3)
    return {"group_id": group, "item_id": item, "score": score, "label": label}


def build_sample(store: Store, seed: int = 0) -> None:
    """Runs of every task, with slices: HPatches-like descriptor runs (verification,
    matching, retrieval with noise and kind slices), VOC-like classification, keypoint runs
    and a `demo` experiment whose last run has HTML in its name, tag, params and notes."""
    rng = np.random.default_rng(seed)
    noise = ["easy", "hard", "tough"]
    pairs = [f"{k}_{s}_{n}" for k in ("i", "v") for s in range(2) for n in noise]
    pair_groups = pl.DataFrame(
        {
            "group_id": pairs,
            "noise": [p.split("_")[2] for p in pairs],
            "kind": ["illumination" if p[0] == "i" else "viewpoint" for p in pairs],
        }
    )
    queries = [f"q{j}" for j in range(9)]
    query_groups = pl.DataFrame({"group_id": queries, "noise": [noise[j % 3] for j in range(9)]})
    for day, (desc, q) in enumerate([("sift", 0.6), ("tfeat", 1.2), ("hardnet", 2.0)]):
        meta: dict[str, Any] = {
            "run": f"hpatches/{desc}",
            "created_at": T0 + timedelta(days=day),
            "git_commit": None,
        }
        store.ingest(
            _ranked(rng, noise, 30, q, 10),
            task="verification",
            tags=["hpatches"],
            params={"dim": 128},
            groups=pl.DataFrame({"group_id": noise, "noise": noise}),
            **meta,
        )
        store.ingest(
            _ranked(rng, pairs, 12, q), task="matching", append=True, groups=pair_groups, **meta
        )
        store.ingest(
            _ranked(rng, queries, 15, q),
            task="retrieval",
            append=True,
            groups=query_groups,
            **meta,
        )
    classes = ["aeroplane", "bicycle", "bird", XSS_CLASS]
    for v, q in enumerate([0.8, 1.4]):
        store.ingest(
            _ranked(rng, classes, 20, q, 5),
            task="classification",
            run=f"voc/resnet-v{v + 1}",
            created_at=T0 + timedelta(days=v),
            git_commit=None,
        )
    h = np.array([[1, 0, 4], [0, 1, -2], [0, 0, 1]], dtype=float).reshape(9)
    kp_pairs = pl.DataFrame(
        {
            "pair_id": ["i_a", "i_b", "v_a", "v_b"],
            **{c: [v] * 4 for c, v in zip(H_COLS, h, strict=True)},
            "width": [64] * 4,
            "height": [48] * 4,
            "kind": ["illumination", "illumination", "viewpoint", "viewpoint"],
        }
    )
    for v, err in enumerate([4.0, 2.0]):
        pid = np.repeat(kp_pairs["pair_id"].to_numpy(), 20)
        x0 = rng.uniform(5, 55, pid.size)
        y0 = rng.uniform(5, 40, pid.size)
        store.ingest_keypoints(
            {
                "pair_id": pid,
                "x0": x0,
                "y0": y0,
                "x1": x0 + 4 + rng.normal(0, err, pid.size),
                "y1": y0 - 2 + rng.normal(0, err, pid.size),
            },
            run=f"superpoint/v{v + 1}",
            pairs=kp_pairs,
            created_at=T0 + timedelta(days=v),
            git_commit=None,
        )
    for week, q in enumerate([0.5, 1.0, 0.8, 1.6]):
        store.ingest(
            _ranked(rng, queries, 15, q),
            task="retrieval",
            run=f"demo/v{week + 1}",
            created_at=T0 + timedelta(weeks=week),
            params={"margin": q},
            tags=["demo"],
            git_commit=None,
        )
    store.ingest(
        _ranked(rng, queries, 15, 1.1),
        task="retrieval",
        run=f"demo/{XSS_RUN}",
        created_at=T0 + timedelta(weeks=5),
        params={"note": XSS_PARAM},
        tags=[XSS_TAG],
        notes=XSS_PARAM,
        git_commit=None,
    )
    evaluate(store, None, all_runs=True)


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory):
    with Store(tmp_path_factory.mktemp("dash") / "sample.duckdb") as store:
        build_sample(store)
        yield store


@pytest.fixture(scope="module")
def pages(sample: Store, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("out")
    written = dash.write_dashboards(sample, out)
    return {p.stem: p.read_text() for p in written}


def write_spec(tmp_path: Path, text: str, name: str = "mine") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


PANEL = '[[panels]]\ntitle = "Bad"\n'


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (PANEL + 'kind = "pie"\nquery = "leaderboard"', "unknown kind 'pie'"),
        (PANEL + 'kind = "line"\nquery = "leaderboard"\nx = "run"', "a line panel needs `y`"),
        (PANEL + 'kind = "table"\nquery = "nope"', "unknown query 'nope'"),
        (PANEL + 'kind = "table"', "give either `query`"),
        (PANEL + 'kind = "table"\nquery = "runs"\nsql = "select 1"', "give either `query`"),
        (PANEL + 'kind = "table"\nquery = "runs"\ncolour = "run"', "unknown key(s) colour"),
        (
            PANEL + 'kind = "bar"\nquery = "runs"\nx = "run"\ny = "n"\nbest_so_far = true',
            "line panels only",
        ),
        (PANEL + 'kind = "table"\nquery = "runs"\nparams = {runs = [1]}', "`params` must be"),
        (PANEL + 'kind = "table"\nquery = "runs"\nlimit = 0', "`limit` must be"),
        ('[[panels]]\nkind = "table"\nquery = "runs"', "needs a non-empty `title`"),
    ],
)
def test_spec_errors_name_file_and_panel(tmp_path: Path, body: str, message: str) -> None:
    path = write_spec(tmp_path, 'title = "Mine"\n' + body)
    with pytest.raises(InvalidInput) as err:
        dash.load_spec(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)
    if "title" not in message:
        assert "panel 1 ('Bad')" in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('title = "x"\n[[panels]\n', "not a valid TOML"),
        ('title = "x"\n', "at least one [[panels]]"),
        ('description = "x"\n' + PANEL + 'kind = "table"\nquery = "runs"', "`title`"),
        ('title = "x"\nlayout = 1\n' + PANEL + 'kind = "table"\nquery = "runs"', "layout"),
    ],
)
def test_spec_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write_spec(tmp_path, text)
    with pytest.raises(InvalidInput, match=re.escape(message)) as err:
        dash.load_spec(path)
    assert str(path) in str(err.value)


def test_missing_spec_file_and_reserved_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="cannot read"):
        dash.load_spec(tmp_path / "absent.toml")
    index = write_spec(
        tmp_path, 'title = "x"\n' + PANEL + 'kind = "table"\nquery = "runs"', "index"
    )
    with pytest.raises(InvalidInput, match="cannot be called index"):
        dash.load_spec(index)


def test_default_specs_are_valid() -> None:
    names = [p.stem for p in dash.default_specs()]
    assert names == ["overview", "comparison", "curves", "heatmap", "hpatches"]
    for path in dash.default_specs():
        spec = dash.load_spec(path)
        assert spec.panels and all(p.query for p in spec.panels)


def test_query_errors_name_the_panel(sample: Store, tmp_path: Path) -> None:
    missing = write_spec(
        tmp_path,
        'title = "x"\n' + PANEL + 'kind = "line"\nquery = "mma_curves"\nx = "threshold"\n'
        'y = "precision"',
    )
    with pytest.raises(InvalidInput) as err:
        dash.write_dashboards(sample, tmp_path / "out", specs=[missing])
    assert "panel 1 ('Bad'): column 'precision' is not in the query result" in str(err.value)
    assert "columns: run, threshold, mma, n_lists" in str(err.value)
    runs_before = sample.con.sql("select count(*) from runs").fetchall()
    for sql, message in [
        ("delete from runs", "single read-only SELECT"),
        ("select 1; select 2", "single read-only SELECT"),
        ("selec 1", "cannot parse `sql`"),
        ("select * from no_such_table", "the query failed"),
        ("select $nope as a", "the query failed"),
    ]:
        spec = write_spec(tmp_path, f'title = "x"\n{PANEL}kind = "table"\nsql = "{sql}"')
        with pytest.raises(InvalidInput, match=re.escape(message)):
            dash.write_dashboards(sample, tmp_path / "out", specs=[spec])
    assert sample.con.sql("select count(*) from runs").fetchall() == runs_before


def test_duplicate_names_and_unknown_filters(sample: Store, tmp_path: Path) -> None:
    body = 'title = "x"\n' + PANEL + 'kind = "table"\nquery = "runs"'
    (tmp_path / "a").mkdir()
    one = write_spec(tmp_path, body)
    two = write_spec(tmp_path / "a", body)
    with pytest.raises(InvalidInput, match="two dashboard specs are called 'mine'"):
        dash.write_dashboards(sample, tmp_path / "out", specs=[one, two])
    with pytest.raises(InvalidInput, match=r"no runs in experiment.*'nope'"):
        dash.write_dashboards(sample, tmp_path / "out", experiments=["nope"])
    with pytest.raises(RunNotFound):
        dash.write_dashboards(sample, tmp_path / "out", runs=["demo/absent"])


@pytest.mark.slow  # about 1.5 s: writes every dashboard twice
def test_output_is_deterministic_and_self_contained(sample: Store, tmp_path: Path) -> None:
    calls: list[tuple[str, int, int | None]] = []
    first = dash.write_dashboards(sample, tmp_path / "a", progress=lambda *a: calls.append(a))
    second = dash.write_dashboards(sample, tmp_path / "b")
    assert [p.name for p in first] == [
        "index.html",
        "overview.html",
        "comparison.html",
        "curves.html",
        "heatmap.html",
        "hpatches.html",
    ]
    assert calls[-1] == ("hpatches", 5, 5)
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name
    # plotly.js once per folder, next to the pages; no CDN, no network
    for folder in (tmp_path / "a", tmp_path / "b"):
        assert sorted(p.name for p in folder.glob("*.js")) == ["plotly.min.js"]
        assert (folder / "plotly.min.js").stat().st_size > 1_000_000
    for page in first:
        text = page.read_text()
        sources = re.findall(r"<script[^>]*\bsrc=\"([^\"]*)\"", text)
        assert sources == ([] if page.name == "index.html" else ["plotly.min.js"])
        assert "cdn" not in text.lower() and "https://" not in text
        assert len(text) < 500_000  # plotly.js is not inlined
    for n, page in enumerate(first[1:]):
        ids = re.findall(r'<section class="panel" id="([^"]+)"', page.read_text())
        assert ids == [f"panel-{i + 1}" for i in range(len(ids))], n


def test_user_strings_are_escaped(pages: dict[str, str]) -> None:
    for name, text in pages.items():
        unescaped = text.replace("\\u003c", "<").replace("\\u003e", ">").replace("\\u002f", "/")
        for raw in RAW_HTML:
            assert raw not in unescaped, (name, raw)
    overview = pages["overview"]
    assert "demo/&lt;img src=x onerror=alert(1)&gt;" in overview  # the leaderboard cell
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in overview  # the tag
    assert overview.count("&lt;b onmouseover=alert(3)&gt;x&lt;/b&gt;") == 2  # params, notes
    # in figures the text is escaped for Plotly, which renders some tags in labels
    curves = pages["curves"].replace("\\u002f", "/")
    assert '"name":"demo/&lt;img src=x onerror=alert(1)&gt;"' in curves
    assert "&lt;i&gt;boat&lt;/i&gt;" in pages["heatmap"].replace("\\u002f", "/")


def figure_data(page: str) -> dict[str, dict[str, Any]]:
    blocks = re.findall(r'<script type="application/json" data-plot="([^"]+)">(.*?)</script>', page)
    return {plot: json.loads(body) for plot, body in blocks}


def test_every_default_panel_draws_on_the_sample(pages: dict[str, str]) -> None:
    assert "No data for this panel" not in "".join(pages.values())
    for name in ("comparison", "curves", "heatmap", "hpatches"):
        for plot, fig in figure_data(pages[name]).items():
            assert fig["data"], (name, plot)
    tables = re.findall(r"<tbody>\n(.*?)\n</tbody>", pages["overview"], re.S)
    assert len(tables) == 2 and all("<tr>" in t for t in tables)
    for stem in ("comparison", "curves", "heatmap", "hpatches", "overview"):
        assert f'href="{stem}.html"' in pages["index"]


def test_empty_store_shows_notes(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.duckdb") as store:
        written = dash.write_dashboards(store, tmp_path / "out")
    for page in written[1:]:
        text = page.read_text()
        assert "No data for this panel" in text
        assert '<script type="application/json" data-plot' not in text
    assert "it needs two runs of one experiment" in (tmp_path / "out/comparison.html").read_text()


def test_filters_apply_to_every_panel(sample: Store, tmp_path: Path) -> None:
    written = dash.write_dashboards(sample, tmp_path / "voc", experiments=["voc"])
    text = {p.stem: p.read_text() for p in written}
    assert "voc/resnet-v2" in text["overview"] and "hpatches/" not in text["overview"]
    assert "Runs shown: experiments: voc" in text["overview"]
    assert "No data for this panel" in text["hpatches"]
    # with --runs, every given run against the first one given
    written = dash.write_dashboards(
        sample, tmp_path / "runs", specs=[dash.dashboards_dir() / "comparison.toml"],
        runs=["demo/v3", "demo/v1", "demo/v4"],
    )  # fmt: skip
    titles = [
        a["text"]
        for fig in figure_data(written[1].read_text()).values()
        for a in fig["layout"]["annotations"]
        if " vs " in a["text"]
    ]
    assert [t.split("<br>")[0] for t in titles] == [
        "demo/v1 vs demo/v3",
        "demo/v4 vs demo/v3",
    ]


def test_comparison_matches_compare(sample: Store) -> None:
    from evalstore.compare import compare

    spec = dash.load_spec(dash.dashboards_dir() / "comparison.toml")
    panel = spec.panels[0]
    frame = dash.panel_data(sample, panel, {"experiments": ["demo"], "runs": None})
    assert set(frame["baseline"]) == {"demo/v4"} and frame["diff"].is_sorted()
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    title = fig.layout.annotations[0].text
    expected = compare(sample, ["demo/v4", f"demo/{XSS_RUN}"], metrics=["ap"])
    row = expected.filter(pl.col("task") == "retrieval").row(0, named=True)
    assert f"mean {row['diff']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]" in title
    assert f"p={row['p_value']:.3g}" in title
    assert f"better/worse {row['wins']}/{row['losses']}" in title


def test_pr_curve_area_is_map_coco(sample: Store) -> None:
    evaluate(sample, ["demo/v2", "hpatches/sift"], metrics=["ap_coco"])
    coco = sample.con.sql(
        "select run, task, value from v_metrics where base_metric = 'ap_coco' and slice = ''"
    ).pl()
    panel = dash.load_spec(dash.dashboards_dir() / "curves.toml").panels[0]
    ids = [sample.resolve("demo/v2"), sample.resolve("hpatches/sift")]
    points = dash.panel_data(sample, panel, {"experiments": None, "runs": ids})
    area = points.group_by("run", "task").agg(pl.col("precision").mean())
    joined = area.join(coco, on=["run", "task"])
    assert joined.height == 4  # demo/v2 retrieval; sift verification, matching, retrieval
    assert np.allclose(joined["precision"], joined["value"], rtol=0, atol=1e-12)


def test_best_so_far_follows_the_metric_direction() -> None:
    panel = dash.Panel(
        index=1, title="t", kind="line", query="dashboards/metric_history", x="t", y="v",
        color="e", facet="m", best_so_far=True, where="spec: panel 1",
    )  # fmt: skip
    frame = pl.DataFrame(
        {
            "t": [3, 1, 2, 1, 2, 3],
            "v": [0.7, 0.5, 0.4, 0.3, 0.2, 0.25],
            "e": ["a"] * 6,
            "m": ["map"] * 3 + ["fpr95"] * 3,
            "base_metric": ["ap"] * 3 + ["fpr95"] * 3,
        }
    )
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    best = [t for t in fig.data if t.name.endswith("best so far")]
    assert [list(t.y) for t in best] == [[0.5, 0.5, 0.7], [0.3, 0.2, 0.2]]
    mixed = frame.with_columns(m=pl.lit("all"))
    with pytest.raises(InvalidInput, match="opposite directions"):
        dash.panel_figure(panel, mixed)


def test_plotly_text_is_escaped_in_every_kind() -> None:
    frame = pl.DataFrame(
        {"x": ["<b>a</b>", "b&c"], "y": [1.0, 2.0], "c": ["<i>s</i>", "t"], "f": ["<u>f</u>"] * 2}
    )
    for kind in ("line", "scatter", "bar", "heatmap"):
        panel = dash.Panel(
            index=1, title="t", kind=kind, sql="select 1", x="x", y="c" if kind == "heatmap"
            else "y", z="y", color=None if kind == "heatmap" else "c", facet="f", hover=("x",),
        )  # fmt: skip
        fig = dash.panel_figure(panel, frame)
        assert fig is not None
        text = fig.to_json()
        for raw in ("<b>a", "<i>s", "<u>f", "b&c"):
            assert raw not in text.replace("\\u003c", "<").replace("\\u003e", ">"), (kind, raw)
        assert "&lt;b&gt;a&lt;" in text and "b&amp;c" in text


def test_evaluate_selected_fills_missing_values(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    with Store(tmp_path / "fresh.duckdb") as store:
        for name in ("a/one", "b/two"):
            store.ingest(
                _ranked(rng, ["q0", "q1"], 6, 1.0), task="retrieval", run=name, git_commit=None
            )
        dash.evaluate_selected(store, experiments=["a"])
        stored = store.con.sql("select distinct run from v_metrics").fetchall()
        assert stored == [("a/one",)]
        assert dash.selected_run_ids(store, runs=["b/two", "a/one"]) == [1, 2]

"""Dashboards: spec validation, the default dashboards on a store with every task,
deterministic self-contained output, escaping of user strings, filters and the numbers the
panels draw."""

from __future__ import annotations

import json
import re
import shutil
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from evalstore import InvalidInput, RunNotFound, Store
from evalstore import dashboards as dash
from evalstore.analysis.compare import compare
from evalstore.analysis.evaluate import evaluate
from evalstore.analysis.leaderboard import leaderboard
from evalstore.analysis.statistics import t_quantile
from evalstore.dashboards.board import board, board_html
from evalstore.runs.meta import RunMeta
from tests.conformance.detsets import make_detset

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
    matching, retrieval with noise and kind slices), VOC-like classification (images 5-12
    of one class each, the others of all or none: a confusion matrix), keypoint runs,
    a `demo` experiment whose last run has HTML in its name, tag, params and notes (demo/v2
    is tagged baseline; no other experiment has a baseline), a
    `seeds` experiment of two configurations of three seeds each (one named in HTML) and two
    seeds of an outcomes run."""
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
        images = _ranked(rng, classes, 20, q, 5)  # images 0-4 hold every class
        single = (images["item_id"] >= 5) & (images["item_id"] < 13)  # 5-12 one class each
        one = images["group_id"] == np.asarray(classes)[images["item_id"] % len(classes)]
        images["label"] = np.where(single, np.where(one, 1, -1), images["label"])
        images["score"] = images["score"] + q * (single & one)
        store.ingest(
            images,
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
            tags=["demo", "baseline"] if week == 1 else ["demo"],
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
    for c_index, (config, width, q) in enumerate([("narrow", 32, 0.7), (XSS_RUN, 64, 1.3)]):
        for s in range(3):
            store.ingest(
                _ranked(rng, queries, 15, q + 0.2 * s),
                task="retrieval",
                run=f"seeds/{config}-seed{s}",
                created_at=T0 + timedelta(weeks=6 + c_index, days=s),
                params={"width": width, "seed": s},
                git_commit=None,
            )
    for s in range(2):
        store.ingest_outcomes(
            {"group_id": classes, "tp": rng.integers(5, 20, 4), "fp": rng.integers(0, 5, 4),
             "fn": rng.integers(0, 5, 4)},
            run=f"seg/unet-seed{s}", params={"seed": s}, created_at=T0 + timedelta(days=s),
            git_commit=None,
        )  # fmt: skip
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
            "`best_so_far` applies to line and scatter panels only, not bar",
        ),
        (
            PANEL + 'kind = "bar"\nquery = "runs"\nx = "run"\ny = "n"\nline_group = "c"',
            "`line_group` applies to line and scatter panels only, not bar",
        ),
        (PANEL + 'kind = "table"\nquery = "runs"\nparams = {runs = [1]}', "`params` must be"),
        (PANEL + 'kind = "table"\nquery = "runs"\nlimit = 0', "`limit` must be"),
        (
            PANEL + 'kind = "heatmap"\nquery = "runs"\nx = "a"\ny = "b"\nz = "c"\nerror = "d"',
            "`error` applies to line, scatter, bar panels only",
        ),
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
    own = write_spec(tmp_path, f'title = "x"\n{PANEL}kind = "table"\nsql = "select 1 as a"', "own")
    with pytest.raises(InvalidInput, match=r"panel 1 \('Bad'\): a spec's own `sql` runs only"):
        dash.write_dashboards(sample, tmp_path / "out", specs=[own])  # a writable store
    sample.con.execute("checkpoint")
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(sample.path, copy)
    with Store(copy, read_only=True) as store:
        for sql, message in [
            ("delete from runs", "only a read-only query runs here"),
            ("select 1; select 2", "one statement at a time, found 2"),
            ("selec 1", "`sql`: SQL error: Parser Error"),
            ("select * from no_such_table", "the query failed"),
            ("select $nope as a", "the query failed"),
            ("select * from read_csv('/etc/passwd')", "may not read '/etc/passwd'"),
        ]:
            spec = write_spec(tmp_path, f'title = "x"\n{PANEL}kind = "table"\nsql = "{sql}"')
            with pytest.raises(InvalidInput, match=re.escape(message)):
                dash.write_dashboards(store, tmp_path / "out", specs=[spec])
        assert store.con.sql("select count(*) from runs").fetchall() == runs_before
        assert dash.write_dashboards(store, tmp_path / "out", specs=[own])[1].exists()
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
    # the sample has no detection run (test_detection_curves draws that panel) and no pose
    # estimates (tests/test_pose_curves.py draws the cumulative pose error)
    empty = re.findall(r"No data for this panel: ([^<]*)<", "".join(pages.values()))
    assert empty == [
        "no keypoints run of the selection has pose estimates at 1 px (ingest pairs with "
        "cameras, then evalstore eval -m pose_auc).",
        "no detection run of the selection (evalstore ingest --format coco, then evalstore eval).",
    ]
    for name in ("comparison", "curves", "heatmap", "hpatches"):
        for plot, fig in figure_data(pages[name]).items():
            assert fig["data"], (name, plot)
    tables = re.findall(r"<tbody>\n(.*?)\n</tbody>", pages["overview"], re.S)
    # the leaderboard's table per experiment, then the runs
    assert len(tables) == 7 and all("<tr>" in t for t in tables)
    assert re.findall(r'<h3 class="board">([^<]*)</h3>', pages["overview"]) == [
        "demo", "hpatches", "seeds", "seg", "superpoint", "voc",
    ]  # fmt: skip
    for stem in ("comparison", "curves", "heatmap", "hpatches", "overview"):
        assert f'href="{stem}.html"' in pages["index"]


def test_empty_store_shows_notes(tmp_path: Path) -> None:
    with Store(tmp_path / "empty.duckdb") as store:
        written = dash.write_dashboards(store, tmp_path / "out")
    for page in written[1:]:
        text = page.read_text()
        assert "No data for this panel" in text
        assert '<script type="application/json" data-plot' not in text
    assert "no run has a baseline to compare with" in (tmp_path / "out/comparison.html").read_text()


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
    """Every pair on the page shows the numbers of `evalstore compare BASELINE RUN --metric
    ap`, which resamples items within lists for these runs (9 lists, fewer than 10). The
    newest demo run is compared with demo/v2, the run tagged baseline (not with the run
    before it); seeds has no tagged baseline: not compared, and a note says how to choose."""
    spec = dash.load_spec(dash.dashboards_dir() / "comparison.toml")
    panel = spec.panels[0]
    frame = dash.panel_data(sample, panel, {"experiments": ["demo", "seeds"], "runs": None})
    assert frame.filter(pl.col("run").str.starts_with("demo/"))["diff"].is_sorted()
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    titles = [a["text"] for a in fig.layout["annotations"] if " vs " in a["text"]]
    pairs = [("demo/v2", f"demo/{XSS_RUN}")]
    assert len(titles) == len(pairs)
    for title, (baseline, run) in zip(titles, pairs, strict=True):
        expected = compare(sample, [baseline, run], metrics=["ap"])
        row = expected.filter(pl.col("task") == "retrieval").row(0, named=True)
        assert row["resampled"] == "items"
        assert title.startswith(f"{esc(run)} vs {esc(baseline)}<br>")
        assert f"mean {row['diff']:+.4f} [{row['ci_low']:+.4f}, {row['ci_high']:+.4f}]" in title
        assert f"p={row['p_value']:.3g}" in title
        assert f"better/worse {row['wins']}/{row['losses']}" in title
    lows = sorted(min(t["y"]) for t in fig.data if t["name"] == "95% interval of the mean")
    wanted = sorted(
        compare(sample, [b, r], metrics=["ap"])["ci_low"][0] for b, r in pairs
    )  # the band is the interval of compare
    assert np.allclose(lows, wanted, rtol=0, atol=1e-15)
    page = dash.render_page(spec, [frame])
    assert page.count('class="note baseline"') == 1
    assert (
        f"Experiment seeds has no run tagged baseline, so its newest run seeds/{esc(XSS_RUN)}"
        "-seed2 is not compared: tag the experiment&#x27;s baseline run (evalstore tag RUN "
        "baseline), or pass --baseline RUN"
    ) in page
    # --baseline: every selected run against it, whatever the tags
    filters = dash.pages.query_filters(sample, ["demo"], [], baseline="demo/v1")
    chosen = dash.panel_data(sample, panel, filters)
    assert chosen.select("run", "baseline").unique(maintain_order=True).rows() == [
        (f"demo/v{k}", "demo/v1") for k in (2, 3, 4)
    ] + [(f"demo/{XSS_RUN}", "demo/v1")]


def esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


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
    best = [t for t in fig.data if t["name"].endswith("best so far")]
    assert [list(t["y"]) for t in best] == [[0.5, 0.5, 0.7], [0.3, 0.2, 0.2]]
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


def overview_panel(title: str) -> dash.Panel:
    spec = dash.load_spec(dash.dashboards_dir() / "overview.toml")
    return next(p for p in spec.panels if p.title == title)


def test_leaderboard_is_the_pivot_of_evalstore_leaderboard(sample: Store) -> None:
    """One row per configuration (seeds/narrow: 3 runs), the headline columns, mean and sd
    equal to `evalstore leaderboard`; runs without a seed parameter stay rows of their own."""
    panel = overview_panel("Leaderboard")
    frame = dash.panel_data(sample, panel, {"experiments": None, "runs": None})
    b = board(panel, frame)
    assert b.rows["seeds"] == [f"seeds/{XSS_RUN}", "seeds/narrow"]  # best first
    assert b.n_runs[("seeds", "seeds/narrow")] == 3
    assert b.rows["hpatches"] == ["hpatches/hardnet", "hpatches/tfeat", "hpatches/sift"]
    assert b.columns["hpatches"] == ["verification map", "matching map", "retrieval map"]
    assert b.columns["superpoint"] == [
        "keypoints precision_at_sigma@3", "keypoints mma@3", "keypoints homography_accuracy@3",
    ]  # fmt: skip
    assert b.columns["voc"] == [
        "classification map", "classification map_voc07", "classification map_voc10",
    ]  # fmt: skip
    assert leaderboard(sample, experiment="voc").columns == b.columns["voc"]
    assert b.columns["seg"] == ["outcomes iou_macro"] and b.rows["seg"] == ["seg/unet"]
    # (voc and superpoint runs record no params: evalstore leaderboard makes each one
    # configuration of two runs, the page two runs)
    for experiment in ("seeds", "demo", "seg"):
        expected = leaderboard(sample, experiment=experiment)
        assert expected.columns == b.columns[experiment]
        for row in expected.long.iter_rows(named=True):
            mean, sd = b.cells[(experiment, row["group"], row["column"])]
            assert mean == pytest.approx(row["mean"], abs=1e-12)
            assert (sd is None) == (row["sd"] is None)
            assert sd is None or sd == pytest.approx(row["sd"], abs=1e-12)
        assert {c: s for c, s in expected.best().items()} == {
            c: {k for k in b.best[c] if k[0] == experiment} for c in expected.columns
        }
    # filters: the statistics are over the selected runs
    two = [sample.resolve(f"seeds/narrow-seed{s}") for s in (0, 1)]
    part = board(panel, dash.panel_data(sample, panel, {"experiments": None, "runs": two}))
    assert part.n_runs == {("seeds", "seeds/narrow"): 2}


def test_leaderboard_table_marks_the_best_and_escapes() -> None:
    panel = dash.Panel(index=1, title="t", kind="leaderboard", sql="select 1", limit=2)
    frame = pl.DataFrame(
        {
            "experiment": ["e"] * 6,
            "config": ["a", "a", "b", "b", "c", "c"],
            "runs": [["e/<b>x</b>-s0", "e/<b>x</b>-s1"]] * 2 + [["e/y"]] * 2 + [["e/z"]] * 2,
            "n_runs": [2, 2, 1, 1, 1, 1],
            "task": ["verification"] * 6,
            "metric": ["map", "fpr95"] * 3,
            "base_metric": ["ap", "fpr95"] * 3,
            "params": ['{"ties":"grouped"}'] * 6,
            "mean": [0.8, 0.2, 0.9, 0.3, 0.5, 0.1],
            "sd": [0.05, 0.01, None, None, None, None],
        }
    )
    text = board_html(panel, frame)
    assert "<b>" not in text and "e/&lt;b&gt;x&lt;/b&gt;" in text
    assert 'title="e/&lt;b&gt;x&lt;/b&gt;-s0, e/&lt;b&gt;x&lt;/b&gt;-s1"' in text
    rows = re.findall(r"<tr>(.*?)</tr>", text)[1:]
    assert [re.findall(r"<td[^>]*>([^<]*)</td>", r) for r in rows] == [
        ["1", "e/y", "1", "0.9000", "0.3000"],
        ["2", "e/&lt;b&gt;x&lt;/b&gt;", "2", "0.8000 ± 0.0500", "0.2000 ± 0.0100"],
    ]  # ranked by map, higher first (the rank column); 2 of 3 rows (limit)
    assert "Ranked by verification map, higher is better (best first)." in text
    assert '<th class="rank">rank</th>' in text and 'class="ranked">verification map' in text
    assert 'class="num best">0.9000<' in text  # map: higher is better
    assert "0.1000" not in text and "Showing the first 2 of 3 rows" in text
    assert "fpr95 &darr;" in text and "map &uarr;" in text
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    fpr = next(t for t in fig.data if t["name"] == "verification fpr95")
    assert list(fpr["x"]) == ["e/y", "e/&lt;b&gt;x&lt;/b&gt;"]
    assert list(fpr["error_y"]["array"]) == [None, 0.01]
    assert fpr["marker"]["color"][1] == "#1f77b4"  # e/z (0.1, the best fpr95) is past the limit


def test_history_points_never_join_two_configurations(sample: Store) -> None:
    """One point per configuration at its latest run (the mean, its 95% t interval across
    seeds as error bars), earlier points of a configuration at its earlier runs; a line joins
    one configuration only."""
    panel = overview_panel("Metric history")
    frame = dash.panel_data(sample, panel, {"experiments": ["seeds", "demo"], "runs": None})
    frame = frame.filter(pl.col("series") == "retrieval · map")
    seeds = frame.filter(pl.col("experiment") == "seeds")
    # seeds/narrow's runs landed a day apart: its mean after 1, 2 and 3 seeds
    assert seeds["n_runs"].to_list() == [1, 2, 3, 1, 2, 3]
    points = seeds.filter(pl.col("n_runs") == 3)
    values = sample.con.sql(
        "select value from v_metrics where experiment = 'seeds' and base_metric = 'ap' "
        "and slice = '' and params ->> 'ties' = 'grouped' and run like 'seeds/narrow%'"
    ).pl()["value"]
    assert points["value"][0] == pytest.approx(values.mean(), abs=1e-12)
    assert points["sd"][0] == pytest.approx(values.std(), abs=1e-12)
    last = sample.con.sql("select max(created_at) from runs where name like 'narrow%'")
    assert points["created_at"][0] == last.fetchall()[0][0]
    fig = dash.panel_figure(panel, frame)
    assert fig is not None
    marks = [t for t in fig.data if not t["name"].endswith("best so far")]
    configs = {esc(r): c for r, c in zip(frame["run"], frame["config"], strict=True)}
    for t in marks:  # every trace is one configuration's
        assert len({configs[c[0]] for c in t["customdata"]}) == 1
        assert ("lines" in t["mode"]) == (len(t["x"]) > 1)
    seeds_marks = [t for t in marks if t["name"] == "seeds"]
    assert [len(t["x"]) for t in seeds_marks] == [3, 3]
    # the interval of the mean of 3 seeds: t(0.975, 2) sd / sqrt(3), as v_groups gives it
    half = t_quantile(0.975, 2.0) * values.std() / np.sqrt(3)
    assert points["ci"][0] == pytest.approx(half, rel=1e-9)
    assert list(seeds_marks[0]["error_y"]["array"])[-1] == pytest.approx(half, rel=1e-9)
    groups = sample.con.sql(
        "select ci_high - mean from v_groups where experiment = 'seeds' and metric = 'map' "
        "and params ->> 'ties' = 'grouped' and config = 'width=32'"
    ).fetchall()
    assert groups and groups[0][0] == pytest.approx(half, rel=1e-9)
    demo = [t for t in marks if t["name"] == "demo"]
    assert len(demo) == 5 and all(t["mode"] in ("markers", "markers+text") for t in demo)
    assert sum(t["showlegend"] for t in demo) == 1
    # the experiment's best so far runs through all its configurations, in time order
    best = next(t for t in fig.data if t["name"] == "demo: best so far")
    demo_rows = frame.filter(pl.col("experiment") == "demo").sort("created_at")
    assert best["y"] == list(np.maximum.accumulate(demo_rows["value"].to_numpy()))
    # marks and bars get error bars; a non-numeric spread is refused, naming the panel
    sd = points["sd"].to_list()
    bars = dash.Panel(index=1, title="t", kind="bar", sql="select 1", x="experiment",
                      y="value", error="sd", where="spec: panel 1")  # fmt: skip
    drawn = dash.panel_figure(bars, points)
    assert drawn is not None and list(drawn.data[0]["error_y"]["array"]) == sd
    with pytest.raises(InvalidInput, match="spec: panel 1: `error` column 'sd' must be numeric"):
        dash.panel_figure(bars, points.with_columns(sd=pl.lit("x")))


def test_read_only_store_and_pairs_compare_refuses(tmp_path: Path) -> None:
    """`evalstore dashboard --no-eval` opens the store read-only: every page still draws; a
    pair compare refuses (different lists) is drawn without an interval, saying why."""
    rng = np.random.default_rng(3)
    path = tmp_path / "ro.duckdb"
    queries = [f"q{j}" for j in range(6)]
    with Store(path) as store:
        for seed in range(2):
            store.ingest(
                _ranked(rng, queries, 10, 1.0 + seed), task="retrieval",
                run=f"cfg/a-seed{seed}", params={"seed": seed}, git_commit=None,
                created_at=T0 + timedelta(days=seed), tags=["baseline"] if seed == 0 else [],
            )  # fmt: skip
        for day, lists in enumerate([queries, queries[:5]]):
            store.ingest(
                _ranked(rng, lists, 10, 1.0), task="retrieval", run=f"odd/r{day}",
                git_commit=None, created_at=T0 + timedelta(days=day),
                tags=["baseline"] if day == 0 else [],
            )  # fmt: skip
        dash.evaluate_selected(store)
    with Store(path, read_only=True) as store:
        pages = {p.stem: p.read_text() for p in dash.write_dashboards(store, tmp_path / "out")}
    assert "No data for this panel" not in pages["overview"] + pages["comparison"]
    titles = [  # the whole title: on hover where it is cut to fit its column
        a.get("hovertext", a["text"].replace("<br>", " "))
        for fig in figure_data(pages["comparison"]).values()
        for a in fig["layout"]["annotations"]
        if " vs " in a["text"]
    ]
    assert len(titles) == 2
    assert "mean " in titles[0] and "(items)" in titles[0]
    assert "no interval (runs odd/r0 and odd/r1 were scored on different" in titles[1]
    assert "cfg/a" in pages["overview"] and "± " in pages["overview"]


def test_hpatches_page_shows_hpatches_runs_only(sample: Store, tmp_path: Path) -> None:
    """Runs tagged hpatches (or recording a `descriptor` parameter) are descriptors; the
    demo's and the seeds' retrieval runs are not, though they have retrieval AP."""
    panel = dash.load_spec(dash.dashboards_dir() / "hpatches.toml").panels[0]
    frame = dash.panel_data(sample, panel, {"experiments": None, "runs": None})
    assert sorted(set(frame["run"])) == ["hpatches/hardnet", "hpatches/sift", "hpatches/tfeat"]
    rng = np.random.default_rng(5)
    with Store(tmp_path / "hp.duckdb") as store:
        for name, params in (("trec/bm25", {"k1": 0.9}), ("mine/desc", {"descriptor": "x"})):
            store.ingest(
                _ranked(rng, ["q0", "q1"], 6, 1.0), task="retrieval", run=name,
                params=params, git_commit=None,
            )  # fmt: skip
        evaluate(store, None, all_runs=True)
        frame = dash.panel_data(store, panel, {"experiments": None, "runs": None})
        assert set(frame["run"]) == {"mine/desc"}
        only_trec = {"experiments": ["trec"], "runs": None}
        assert dash.panel_data(store, panel, only_trec).height == 0
        page = dash.render_dashboard(store, dash.load_spec(panel.where.split(":")[0]), only_trec)
    assert "no HPatches run in the selection" in page and "tagged hpatches" in page


def test_leaderboard_ranks_in_the_direction_of_its_first_column() -> None:
    """Ranked by fpr95 (lower is better): the lowest first, rank 1; equal means share a
    rank; the runs table is titled as a list, after the leaderboard."""
    panel = dash.Panel(index=1, title="t", kind="leaderboard", sql="select 1")
    frame = pl.DataFrame(
        {
            "experiment": ["e"] * 4, "config": ["a", "b", "c", "d"],
            "runs": [["e/a"], ["e/b"], ["e/c"], ["e/d"]], "n_runs": [1] * 4,
            "task": ["verification"] * 4, "metric": ["fpr95"] * 4,
            "base_metric": ["fpr95"] * 4, "params": ['{"ties":"grouped"}'] * 4,
            "mean": [0.3, 0.1, 0.2, 0.1], "sd": [None] * 4,
        }
    )  # fmt: skip
    text = board_html(panel, frame)
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", r)[:2] for r in re.findall(r"<tr>(.*?)</tr>",
            text)[1:]]  # fmt: skip
    assert rows == [["1", "e/b"], ["1", "e/d"], ["3", "e/c"], ["4", "e/a"]]
    assert "Ranked by verification fpr95, lower is better (best first)." in text
    spec = dash.load_spec(dash.dashboards_dir() / "overview.toml")
    assert spec.panels[0].kind == "leaderboard"
    # the list of runs is the last panel every store shows (after it only "Over training
    # steps", which a store without steps does not show)
    assert [p.title for p in spec.panels if not p.skip_empty][-1] == "All runs (newest first)"


def test_detection_curves(tmp_path: Path) -> None:
    """The curves page draws COCO's per-category precision-recall of detection runs: one facet
    per category with ground truth and their mean, a curve per run, whose mean over the
    101 recall points is the run's AP50 (and a category's, that category's)."""
    gt, dets = make_detset(3, n_images=20, n_categories=3)
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dets))
    with Store(tmp_path / "det.duckdb") as store:
        for name in ("det/a", "det/b"):
            meta = RunMeta(name, git_commit=False)
            store.ingest_coco(tmp_path / "dt.json", tmp_path / "gt.json", meta=meta)
        store.con.execute("update det_boxes set score = 1 - score where run_id = 2")  # test-only
        ap50 = evaluate(store, ["det/a", "det/b"], metrics=["AP50"], by=["category"])
        written = dash.write_dashboards(store, tmp_path / "out")
    page = next(p for p in written if p.stem == "curves").read_text()
    (fig,) = [
        f for f in figure_data(page).values() if any(t.get("name") == "det/a" for t in f["data"])
    ]
    names = {a["text"] for a in fig["layout"]["annotations"]}
    annotated = {a["category_id"] for a in gt["annotations"]}
    with_truth = {str(c["name"]) for c in gt["categories"] if c["id"] in annotated}
    assert names == {"(all)", *with_truth}
    assert len(fig["data"]) == 2 * len(names) and all(len(t["y"]) == 101 for t in fig["data"])
    runs = ap50["run"].to_list()
    want = sorted(
        (r, round(v, 12))
        for r, v in zip(runs, ap50["value"].to_list(), strict=True)
        if v is not None
    )
    got = sorted((t["name"], round(sum(t["y"]) / 101, 12)) for t in fig["data"])
    assert got == want

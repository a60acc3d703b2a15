"""evalstore ui without a browser: every page through Starlette's test client on a store of
every task (the dashboards' sample, with HTML in run names), the URL as the whole state, the
numbers equal to the library's, the sandbox of the SQL page, the store free between
requests, and the command's errors."""

from __future__ import annotations

import html
import http.client
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import polars as pl
import pytest
from conftest import ranked, snapshot
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient
from test_dashboards import RAW_HTML, XSS_RUN, build_sample

from evalstore import Store
from evalstore.analysis.compare import compare
from evalstore.errors import EvalstoreError
from evalstore.ui import create_app, launch, pages
from evalstore.ui.view import View


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ui") / "sample.duckdb"
    with Store(path) as store:
        build_sample(store)  # demo/v2 is tagged baseline
    return path


@pytest.fixture(scope="module")
def client(sample: Path) -> TestClient:
    # Compare answers whole (its progress display: tests/test_ui_progress.py)
    return TestClient(create_app(sample, host="testserver", wait=600, latest=600, slow=600))


def ids_of(store_path: Path, *names: str) -> list[int]:
    with Store(store_path, read_only=True) as store:
        return [store.resolve(n) for n in names]


def rows(page: str, table: str = "runs") -> list[str]:
    """The text of each body row of a table (cells joined by |)."""
    body = re.search(rf'<table class="data" id="{table}">.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, f"no table {table}"
    out = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        out.append("|".join(html.unescape(re.sub("<[^>]+>", "", c)) for c in cells))
    return out


def run_names(page: str) -> list[str]:
    return [r.split("|")[1] for r in rows(page)]


def test_runs_page_lists_every_run_with_values_and_escapes_names(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200
    names = run_names(page.text)
    assert len(names) == 20 and f"demo/{XSS_RUN}" in names
    assert names[0] == "seeds/<img src=x onerror=alert(1)>-seed2"  # newest first
    for raw in RAW_HTML:
        assert raw not in page.text.split("<main>")[1]
    assert "retrieval map" in page.text and "keypoints precision_at_sigma@3" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("experiment=voc", {"voc/resnet-v1", "voc/resnet-v2"}),
        (
            "experiment=voc&experiment=superpoint",
            {"voc/resnet-v1", "voc/resnet-v2", "superpoint/v1", "superpoint/v2"},
        ),
        ("tag=hpatches", {"hpatches/sift", "hpatches/tfeat", "hpatches/hardnet"}),
        ("param=width%3D32", {f"seeds/narrow-seed{s}" for s in range(3)}),
        ("param=margin%3D1.0", {"demo/v2"}),
        ("where=param_margin+%3E+0.9", {"demo/v2", "demo/v4"}),
        ("experiment=demo&tag=baseline", {"demo/v2"}),
    ],
)
def test_filters_narrow_the_runs(client: TestClient, query: str, expected: set[str]) -> None:
    page = client.get(f"/?{query}")
    assert page.status_code == 200
    assert set(run_names(page.text)) == expected


def test_a_bad_filter_is_one_line_and_the_page_still_renders(client: TestClient) -> None:
    page = client.get("/?where=no_such_column+%3E+1")
    assert page.status_code == 400
    [error] = re.findall(r'<p class="error">(.*?)</p>', page.text, re.S)
    assert "no_such_column" in error and "\n" not in error
    assert "<nav>" in page.text and 'id="f-where"' in page.text
    assert client.get("/?param=novalue").status_code == 400
    assert client.get("/compare?unit=x1").status_code == 400
    missing = client.get("/compare?unit=1&unit=99999")
    assert missing.status_code == 400 and "99999" in missing.text


def test_sorting_and_chosen_columns(client: TestClient) -> None:
    page = client.get("/?experiment=demo&sort=retrieval+map&desc=0&col=run&col=retrieval+map")
    head = re.findall(r'<th data-col="([^"]+)"', page.text)
    assert head == ["run", "retrieval map"]
    values = [float(r.split("|")[2]) for r in rows(page.text)]
    assert values == sorted(values) and len(values) == 5
    down = client.get("/?experiment=demo&sort=retrieval+map&col=run&col=retrieval+map")
    assert [float(r.split("|")[2]) for r in rows(down.text)] == sorted(values, reverse=True)
    # the best value of the column (higher is better) is marked
    assert re.search(rf'<td class="num best">{max(values):.4f}</td>', page.text)


def test_configurations_show_mean_and_sd_of_their_seeds(client: TestClient, sample: Path) -> None:
    page = client.get("/?group=1&experiment=seeds&col=configuration&col=n_runs&col=retrieval+map")
    found = {r.split("|")[1]: r.split("|")[2:] for r in rows(page.text)}
    assert set(found) == {"seeds/narrow", f"seeds/{XSS_RUN}"}
    with Store(sample, read_only=True) as store:
        values = store.sql(
            "select run, value from v_metrics where metric = 'map' and slice = '' "
            "and experiment = 'seeds' and params ->> 'ties' = 'grouped' order by run_id"
        )
    narrow = values.filter(pl.col("run").str.contains("narrow"))["value"].to_numpy()
    n_runs, cell = found["seeds/narrow"]
    mean, sd = cell.split(" ± ")
    assert n_runs == "3"
    assert float(mean) == pytest.approx(narrow.mean(), abs=5e-5)
    assert float(sd) == pytest.approx(narrow.std(ddof=1), abs=5e-5)


def test_compare_shows_the_numbers_of_compare(client: TestClient, sample: Path) -> None:
    a, b = ids_of(sample, "demo/v1", "demo/v3")
    page = client.get(f"/compare?unit={b}&unit={a}")  # the older one is the baseline
    assert page.status_code == 200
    assert 'id="compare-table"' in page.text and 'data-plot="compare-bars"' in page.text
    assert 'data-plot="compare-scatter"' in page.text and 'id="changed"' in page.text
    with Store(sample, read_only=True) as store:
        expected = compare(store, ["demo/v1", "demo/v3"])
    table = rows(page.text, "compare-table")
    assert len(table) == expected.height
    for line, row in zip(table, expected.iter_rows(named=True), strict=True):
        cells = line.split("|")
        assert cells[0] == "demo/v3" and cells[2] == row["metric"]
        assert float(cells[4]) == pytest.approx(row["diff"], abs=5e-5)
        assert float(cells[8]) == pytest.approx(row["p_adj"], abs=5e-5)
    assert re.search(r'<option value="demo/v1" selected>demo/v1</option>', page.text)  # by name


def test_baseline_is_chosen_tagged_or_oldest(client: TestClient, sample: Path) -> None:
    v1, v2, v3, v4 = ids_of(sample, "demo/v1", "demo/v2", "demo/v3", "demo/v4")
    tagged = client.get(f"/compare?unit={v1}&unit={v3}&unit={v2}")
    assert "Against demo/v2" in tagged.text  # tagged baseline, though demo/v1 is older
    oldest = client.get(f"/compare?unit={v4}&unit={v3}&unit={v1}")
    assert rows(oldest.text, "compare-table")[0].startswith("demo/v4|")  # against v1
    assert "Against demo/v1" in oldest.text
    chosen = client.get(f"/compare?unit={v4}&unit={v3}&unit={v2}&baseline={v4}")
    assert "Against demo/v4" in chosen.text
    assert {r.split("|")[0] for r in rows(chosen.text, "compare-table")} == {"demo/v3", "demo/v2"}


def test_compare_configurations(client: TestClient, sample: Path) -> None:
    narrow, wide = ids_of(sample, "seeds/narrow-seed0", f"seeds/{XSS_RUN}-seed1")
    page = client.get(f"/compare?unit=g{wide}&unit=g{narrow}")
    assert page.status_code == 200
    table = rows(page.text, "compare-table")
    assert table and all(r.startswith(f"seeds/{XSS_RUN}|") for r in table)
    assert "Against seeds/narrow" in page.text
    assert rows(page.text, "changed-meta") == ["param width|32|64"]  # the seeds aside
    one = client.get(f"/compare?unit={narrow}")
    assert "Pick two or more runs" in one.text


@pytest.mark.parametrize(
    ("path", "plots"),
    [
        ("/curves", ["panel-1-plot", "panel-2-plot"]),
        ("/history", ["panel-2-plot"]),
        ("/lists", ["panel-1-plot", "panel-2-plot"]),
    ],
)
def test_panel_pages_draw_the_dashboards_figures(
    client: TestClient, path: str, plots: list[str]
) -> None:
    page = client.get(path)
    assert page.status_code == 200
    for plot in plots:
        assert f'data-plot="{plot}"' in page.text
    assert "<script>" not in page.text  # no inline script: figures are JSON blocks


def test_history_keeps_one_series_and_picked_runs_narrow_curves(
    client: TestClient, sample: Path
) -> None:
    def figure(url: str) -> str:
        page = client.get(url)
        assert page.status_code == 200
        found = re.search(r'data-plot="panel-2-plot">(.*?)</script>', page.text, re.S)
        assert found
        return found.group(1)

    chosen = figure("/history?series=retrieval+%C2%B7+map")
    assert "verification" not in chosen and "retrieval" in chosen
    first = figure("/history")  # one metric by default: the first series
    every = figure("/history?series=*")
    assert '"xaxis2"' in every and '"xaxis2"' not in first  # one chart, or one per metric
    assert "verification" in every and "retrieval" in every
    a, b = ids_of(sample, "voc/resnet-v1", "voc/resnet-v2")
    curves = client.get(f"/curves?unit={a}&unit={b}")
    assert "Showing the 2 picked run(s)" in curves.text
    figure = re.search(r'data-plot="panel-1-plot">(.*?)</script>', curves.text, re.S)
    assert figure and "resnet-v1" in figure.group(1) and "hpatches" not in figure.group(1)


def test_sql_page_runs_read_only_queries_and_downloads(client: TestClient, sample: Path) -> None:
    q = "select run, metric, value from v_metrics where slice = '' order by run_id, metric"
    page = client.get("/sql", params={"q": q})
    assert page.status_code == 200 and 'id="download"' in page.text
    csv = client.get("/sql.csv", params={"q": q})
    assert csv.headers["content-type"].startswith("text/csv")
    with Store(sample, read_only=True) as store:
        expected = store.sql(q)
    assert pl.read_csv(csv.content).shape == expected.shape
    assert len(rows(page.text, "sql-result")) == min(expected.height, 500)
    before = snapshot(sample)
    for bad in (
        "drop table runs",
        "copy runs to '/tmp/x.csv'",
        "select * from read_csv('/etc/passwd')",
        "attach '/tmp/other.duckdb'",
    ):
        refused = client.get("/sql", params={"q": bad})
        assert '<p class="error">' in refused.text, bad
        assert client.get("/sql.csv", params={"q": bad}).status_code == 400
    assert snapshot(sample) == before


def test_the_store_is_free_between_requests(tmp_path: Path) -> None:
    path = tmp_path / "live.duckdb"
    with Store(path) as store:
        store.ingest(ranked(seed=1), task="retrieval", run="live/first")
    client = TestClient(create_app(path, host="testserver"))
    assert run_names(client.get("/").text) == ["live/first"]
    with Store(path) as writer:  # an ingest while the app runs
        writer.ingest(ranked(seed=2), task="retrieval", run="live/second")
    assert run_names(client.get("/").text) == ["live/second", "live/first"]


def test_other_hosts_and_files_are_refused(client: TestClient) -> None:
    assert client.get("/", headers={"host": "evil.example"}).status_code == 400
    assert client.get("/static/plotly.min.js").content.startswith(b"/**")
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/other.js").status_code == 404
    assert client.post("/sql", data={"q": "select 1"}).status_code == 405


@given(
    st.builds(
        View,
        experiment=st.lists(st.text(min_size=1).filter(str.strip), max_size=2).map(
            lambda xs: tuple(dict.fromkeys(x.strip() for x in xs))
        ),
        where=st.text().map(str.strip),
        unit=st.lists(st.sampled_from(["1", "g2", "30"]), max_size=3, unique=True).map(tuple),
        group=st.booleans(),
        desc=st.booleans(),
        sort=st.text().map(str.strip),
    )
)
def test_a_view_survives_its_url(view: View) -> None:
    assert View.parse(list(_pairs(view.href("/")))) == view


def _pairs(href: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(href).query, keep_blank_values=True)


# -- the command -------------------------------------------------------------------------


@pytest.mark.no_store
def test_ui_refuses_a_missing_store(cli, tmp_path: Path) -> None:
    result = cli("ui", "--port", "0")
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1


def test_ui_says_when_the_port_is_taken(cli, store: Store) -> None:
    store.ingest(ranked(), task="retrieval", run="e/r")
    store.close()
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = cli("ui", "--port", str(port))
    assert result.exit_code == 1
    assert f"127.0.0.1:{port}" in result.output and "--port" in result.output


@pytest.mark.slow
def test_ui_serves_from_its_own_process(sample: Path, tmp_path: Path) -> None:
    app = launch(sample)
    try:
        with urllib.request.urlopen(app.url, timeout=30) as response:
            body = response.read().decode()
        assert response.status == 200 and "demo/v1" in body
    finally:
        assert app.stop() == 0  # Ctrl-C stops it cleanly
    with pytest.raises(EvalstoreError, match=r"did not start: .*missing\.duckdb"):
        launch(tmp_path / "missing.duckdb")


def test_significant_differences_are_coloured_by_direction(
    client: TestClient, sample: Path
) -> None:
    a, b = ids_of(sample, "demo/v1", "demo/v4")
    page = client.get(f"/compare?unit={a}&unit={b}")
    with Store(sample, read_only=True) as store:
        expected = compare(store, ["demo/v1", "demo/v4"])
    classes = re.findall(r'<tr(?: class="(\w+)")?><td', page.text.split('id="compare-table"')[1])
    wanted = [
        "" if p >= 0.05 or d == 0 else ("better" if (d > 0) == up else "worse")
        for p, d, up in expected.select("p_adj", "diff", "higher_is_better").rows()
    ]
    assert classes[: len(wanted)] == wanted and "better" in wanted


@pytest.mark.slow
def test_a_page_waits_for_a_writer_then_says_the_store_is_busy(tmp_path: Path) -> None:
    path = tmp_path / "busy.duckdb"
    with Store(path) as store:
        store.ingest(ranked(seed=1), task="retrieval", run="busy/first")
    client = TestClient(create_app(path, host="testserver", lock_timeout=0.5))
    holder = subprocess.Popen(  # a writer that holds the store until told to go
        [sys.executable, "-c", "import sys; from evalstore import Store; "
         "s = Store(sys.argv[1]); print('held', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        busy = client.get("/")
        assert busy.status_code == 503
        [error] = re.findall(r'<p class="error">(.*?)</p>', busy.text, re.S)
        assert "locked" in error and "reload" in error
    finally:
        holder.communicate(timeout=30)  # its stdin closed, it lets go; its stdout closed
    assert run_names(client.get("/").text) == ["busy/first"]  # free again: served


def test_the_filter_form_carries_every_tag_and_param_of_a_link(client: TestClient) -> None:
    page = client.get("/?tag=demo&tag=extra&param=a%3D1&param=b%3D2")
    form = re.search(r'<form class="filters".*?</form>', page.text, re.S)
    assert form
    pairs = re.findall(r'<input[^>]*name="(\w+)"[^>]*value="([^"]*)"', form.group(0))
    named = [(k, html.unescape(v)) for k, v in pairs]
    assert ("tag", "extra") in named and ("param", "b=2") in named
    assert ("tag", "demo") in named and ("param", "a=1") in named


# -- the hosts a request may name --------------------------------------------------------


def _get_over_loopback(url: str, host_header: str) -> tuple[int, str]:
    """GET / from the app at ``url``, connecting to 127.0.0.1 only, with this Host header."""
    port = int(urlsplit(url).port or 0)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/", headers={"Host": host_header})
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def _a_network_address() -> str:
    """A non-loopback address of this machine (its hostname's, else a documentation one:
    the Host header is all the app sees, nothing is sent there)."""
    try:
        found = socket.gethostbyname(socket.gethostname())
    except OSError:
        found = ""
    return found if found and not found.startswith("127.") else "192.0.2.10"


@pytest.mark.slow  # a process of its own
def test_an_app_bound_to_every_address_serves_requests_naming_the_machine(sample: Path) -> None:
    app = launch(sample, host="0.0.0.0")
    try:
        port = int(urlsplit(app.url).port or 0)
        for named in (f"{_a_network_address()}:{port}", f"{socket.gethostname()}:{port}"):
            status, body = _get_over_loopback(app.url, named)
            assert status == 200, (named, body[:200])
            assert "demo/v1" in body
    finally:
        assert app.stop() == 0


@pytest.mark.parametrize("wildcard", ["0.0.0.0", "::", "[::]"])
def test_every_host_is_served_when_bound_to_every_address(sample: Path, wildcard: str) -> None:
    client = TestClient(create_app(sample, host=wildcard))
    for named in ("192.0.2.10:8765", "[2001:db8::1]:8765", socket.gethostname(), "lab-box"):
        assert client.get("/", headers={"host": named}).status_code == 200, named


def test_a_bound_address_is_served_by_its_name_and_rebinding_refused(sample: Path) -> None:
    loopback = TestClient(create_app(sample, host="127.0.0.1"))
    for named, status in (("127.0.0.1:8765", 200), ("localhost", 200), ("[::1]:1", 200),
                          ("evil.example", 400), ("192.0.2.10", 400)):  # fmt: skip
        assert loopback.get("/", headers={"host": named}).status_code == status, named
    bound = TestClient(create_app(sample, host="192.0.2.10"))
    for named, status in (("192.0.2.10:8765", 200), (socket.gethostname(), 200),
                          ("localhost", 200), ("evil.example", 400)):  # fmt: skip
        assert bound.get("/", headers={"host": named}).status_code == status, named


def test_sql_page_and_download_stop_at_a_byte_budget(client: TestClient) -> None:
    big = "select i, repeat('x', 1000000) as s from range(500) t(i)"  # 500 rows of 1 MB
    page = client.get("/sql", params={"q": big})
    assert page.status_code == 200
    assert len(page.content) < 2 * pages.SQL_BYTES and "truncated at 10 MB" in page.text
    assert 1 <= len(rows(page.text, "sql-result")) <= 10
    csv = client.get("/sql.csv", params={"q": big})
    assert csv.status_code == 200 and len(csv.content) <= pages.SQL_CSV_BYTES + 2_000_000
    assert "truncated at 100 MB" in csv.headers["x-evalstore-note"]


def test_sql_download_of_nested_values_is_the_cli_csv(client: TestClient, sample: Path) -> None:
    from typer.testing import CliRunner

    from evalstore.cli import app

    q = "select 1 as a, [1, 2] as l, {'k': 'v', 'n': 3} as s, map {'x': 1} as m"
    csv = client.get("/sql.csv", params={"q": q})
    assert csv.status_code == 200, csv.text
    cli_csv = CliRunner().invoke(app, ["sql", q, "--format", "csv", "--db", str(sample)])
    assert cli_csv.exit_code == 0, cli_csv.output
    assert csv.text == cli_csv.stdout


def test_sql_timeout_says_what_the_page_offers(client: TestClient, monkeypatch) -> None:
    monkeypatch.setattr(pages, "SQL_TIMEOUT", 0.3)
    page = client.get("/sql", params={"q": "select count(*) from range(10000000000000)"})
    [error] = re.findall(r'<p class="error">(.*?)</p>', page.text, re.S)
    assert "stopped after 0.3 s" in error and "evalstore sql can run it longer" in error
    assert "--" not in html.unescape(error)  # the page names no command's option


@pytest.mark.slow  # a real process holds the lock
def test_sql_download_of_a_busy_store_is_503_like_the_pages(tmp_path: Path) -> None:
    path = tmp_path / "busy.duckdb"
    with Store(path) as store:
        store.ingest(ranked(seed=1), task="retrieval", run="busy/first")
    client = TestClient(create_app(path, host="testserver", lock_timeout=0.5))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from evalstore import Store; "
         "s = Store(sys.argv[1]); print('held', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        busy = client.get("/sql.csv", params={"q": "select 1"})
        assert busy.status_code == 503 and "locked" in busy.text, busy.text
        assert busy.text.count("\n") == 1
    finally:
        holder.communicate(timeout=30)  # its stdin closed, it lets go; its stdout closed
    assert client.get("/sql.csv", params={"q": "select 1 as x"}).text == "x\n1\n"

"""The UI's Compare page while it resamples items: the progress page, its polled state (the
replicates done of each metric, increasing, and the running estimate), and the final page,
equal to the page answered whole and to ``evalstore compare``'s numbers.

The computation is paced by the test (each block of replicates waits for the test's word), so
every count is seen whatever the machine's speed: no timer."""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

from evalstore import Store, evaluate
from evalstore.analysis import watching
from evalstore.analysis.compare import compare
from evalstore.analysis.watching import Watch
from evalstore.ui import create_app, progress
from evalstore.ui.progress import Abandoned, Answer, Job, Jobs

PAIRS = 20_000  # 52 replicates a block of BLOCK bytes: about 20 blocks a metric
PATIENT = 120.0  # seconds a test waits for the app's thread to reach a point before failing


@pytest.fixture(scope="module")
def pairs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, int]:
    """Two verification runs of one list of PAIRS pairs (the item bootstrap), evaluated."""
    path = tmp_path_factory.mktemp("ui-progress") / "pairs.duckdb"
    rng = np.random.default_rng(0)
    label = np.where(rng.random(PAIRS) < 0.5, 1, -1)
    base = rng.standard_normal(PAIRS) + (label == 1)
    with Store(path) as store:
        for name, noise in (("a", 0.0), ("b", 0.3)):
            scores = base + noise * rng.standard_normal(PAIRS)
            store.ingest(
                {"item_id": np.arange(PAIRS), "score": scores, "label": label},
                task="verification",
                run=f"pv/{name}",
                git_commit=None,
            )
        evaluate(store, ["pv/a", "pv/b"])
        return path, store.resolve("pv/a"), store.resolve("pv/b")


class Pace:
    """Each report of replicates waits for :meth:`step`; the test sees each one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Semaphore(0)
        self.go = threading.Semaphore(0)
        self.free = threading.Event()  # set: the computation goes on unpaced
        self.free.set()  # until :meth:`hold`
        self.jobs: list[Job] = []
        update, start = Watch.update, Jobs.start

        def paced(watch: Watch, **changes: Any) -> None:
            update(watch, **changes)
            if "values" in changes and not self.free.is_set():
                self.reached.release()
                self.go.acquire(timeout=PATIENT)

        def started(jobs: Jobs, key: Hashable, compute: Callable[[Job], Answer]) -> Job:
            job = start(jobs, key, compute)
            self.jobs.append(job)
            return job

        monkeypatch.setattr(Watch, "update", paced)
        monkeypatch.setattr(Jobs, "start", started)

    def hold(self) -> None:
        """From now on, each block of replicates waits for :meth:`release`."""
        self.free.clear()

    def step(self) -> bool:
        """Wait for the next block of replicates (False: the computation reports no more)."""
        return self.reached.acquire(timeout=PATIENT)

    def release(self) -> None:
        self.go.release()

    def finish(self) -> None:
        """Let the computation go on unpaced."""
        self.free.set()
        self.go.release()


@pytest.fixture
def pace(monkeypatch: pytest.MonkeyPatch) -> Iterator[Pace]:
    """A :class:`Pace`; at the end its computations go on unpaced and finish (a failed test
    leaves no thread holding the store)."""
    paced = Pace(monkeypatch)
    try:
        yield paced
    finally:
        paced.finish()
        for job in paced.jobs:
            job.finished.wait(PATIENT)


def main(page: str) -> str:
    return page.split("<main>")[1]


def test_progress_counts_increase_and_the_final_page_is_the_whole_one(
    pairs: tuple[Path, int, int], pace: Pace
) -> None:
    path, a, b = pairs
    with Store(path, read_only=True) as store:
        expected = compare(store, ["pv/a", "pv/b"])
    resampled = expected.filter(expected["resampled"] == "items")["metric"].to_list()
    assert resampled == ["ap", "fpr95"]
    whole = TestClient(create_app(path, host="testserver", wait=600, latest=600)).get(
        f"/compare?unit={a}&unit={b}"
    )
    assert 'id="compare-table"' in whole.text and "compare-progress" not in whole.text

    client = TestClient(create_app(path, host="testserver", wait=0))
    url = f"/compare?unit={a}&unit={b}"
    pace.hold()
    page = client.get(url)
    assert page.status_code == 200
    assert 'id="compare-progress"' in page.text and 'id="compare-table"' not in page.text
    assert '<script src="/static/progress.js" defer></script>' in page.text
    found = re.search(r'data-poll="(/compare/progress\?job=\d+)"', page.text)
    assert found
    poll = found.group(1)
    seen: dict[str, list[int]] = {}
    last: dict[str, dict[str, Any]] = {}
    while pace.step():
        state = client.get(poll).json()
        assert state["done"] is False
        now = state["steps"][-1]
        seen.setdefault(now["metric"], []).append(now["done"])
        last[now["metric"]] = now
        assert f"{now['done']:,} of 1,000 replicates" in state["html"]
        assert "Provisional" in state["html"] and 'id="progress-table"' in state["html"]
        pace.release()
        if len(seen) == len(resampled) and now["done"] == now["total"]:
            break
    assert list(seen) == resampled
    for counts in seen.values():
        assert len(counts) > 2 and counts[0] > 0 and counts[-1] == 1000
        assert all(x < y for x, y in itertools.pairwise(counts))  # increasing
    job = pace.jobs[-1]
    assert job.finished.wait(PATIENT)
    assert client.get(poll).json()["done"] is True
    final = client.get(url)
    assert final.status_code == 200 and "compare-progress" not in final.text
    assert main(final.text) == main(whole.text)  # the page answered whole, byte for byte
    # the running estimate at 1,000 of 1,000 replicates is compare's own interval and p-value
    for row in expected.filter(expected["resampled"] == "items").iter_rows(named=True):
        done = last[row["metric"]]
        assert (done["ci_low"], done["ci_high"]) == (row["ci_low"], row["ci_high"])
        assert done["p_value"] == row["p_value"]


def test_a_running_estimate_is_read_from_the_replicates_done(
    pairs: tuple[Path, int, int], pace: Pace
) -> None:
    path, a, b = pairs
    client = TestClient(create_app(path, host="testserver", wait=0))
    pace.hold()
    page = client.get(f"/compare?unit={a}&unit={b}")
    found = re.search(r'data-poll="([^"]+)"', page.text)
    assert found and pace.step()
    job = pace.jobs[-1]
    [step] = job.watch.steps()
    assert step.values is not None and 0 < step.done < step.total
    diffs = step.values[1] - step.values[0]
    estimate = step.estimate()
    assert estimate is not None
    alpha = (1 - 0.95) / 2
    assert estimate.ci_low == np.quantile(diffs, alpha)
    assert estimate.ci_high == np.quantile(diffs, 1 - alpha)
    far = min(np.sum(diffs <= 1e-12), np.sum(diffs >= -1e-12))
    assert estimate.p_value == min(1.0, 2 * (1 + far) / (diffs.size + 1))
    polled = client.get(found.group(1)).json()
    state = polled["steps"][0]
    assert (state["done"], state["ci_low"], state["p_value"]) == (
        step.done,
        estimate.ci_low,
        estimate.p_value,
    )
    # the provisional table says what the final one says of an interval from one list
    assert step.n_lists == 1 and "1 list(s): interval unreliable" in polled["html"]
    pace.finish()
    assert job.finished.wait(PATIENT)


def test_a_page_that_resamples_no_items_waits_for_its_answer(
    pairs: tuple[Path, int, int],
) -> None:
    path, a, _ = pairs
    client = TestClient(create_app(path, host="testserver", wait=0, latest=600))
    page = client.get(f"/compare?unit={a}")
    assert "Pick two or more runs" in page.text and "compare-progress" not in page.text
    assert client.get("/compare/progress?job=999").json() == {
        "done": True,
        "html": "",
        "steps": [],
    }


def test_nothing_is_watched_unless_asked() -> None:
    out = np.arange(6.0).reshape(2, 3)
    watching.replicates(out, [0, 1], 2)  # no watch: nothing kept, nothing raised
    watch = Watch()
    with watching.watching(watch):
        watching.replicates(out, [0, 1], 2)  # no step begun: nothing to update
    assert watch.steps() == [] and not watch.begun.is_set()


def test_past_latest_the_page_shows_that_it_computes(
    pairs: tuple[Path, int, int], pace: Pace
) -> None:
    path, a, b = pairs
    client = TestClient(create_app(path, host="testserver", wait=0, latest=0))
    pace.hold()  # the computation cannot finish before the test lets it
    page = client.get(f"/compare?unit={a}&unit={b}")
    assert 'id="compare-progress"' in page.text and 'id="progress-status"' in page.text
    assert "Reading the runs' values" in page.text or "replicates" in page.text
    pace.finish()
    assert pace.jobs[-1].finished.wait(PATIENT)
    final = client.get(f"/compare?unit={a}&unit={b}")
    assert 'id="compare-table"' in final.text and "compare-progress" not in final.text


def test_a_computation_nobody_waits_for_stops_and_the_next_request_computes_anew(
    pairs: tuple[Path, int, int], pace: Pace, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, a, b = pairs
    client = TestClient(create_app(path, host="testserver", wait=0))
    url = f"/compare?unit={a}&unit={b}"
    pace.hold()
    page = client.get(url)
    found = re.search(r'data-poll="([^"]+)"', page.text)
    assert found and pace.step()
    job = pace.jobs[-1]
    monkeypatch.setattr(progress, "ABANDON", -1.0)  # the page left: nobody polls any more
    pace.finish()
    assert job.finished.wait(PATIENT)
    assert isinstance(job.error, Abandoned)
    assert job.watch.steps()[-1].done < 1000  # stopped at its next block
    assert client.get(found.group(1)).json()["done"] is True  # a late poll: reload
    monkeypatch.setattr(progress, "ABANDON", PATIENT)
    again = TestClient(create_app(path, host="testserver", wait=600, latest=600))
    assert 'id="compare-table"' in again.get(url).text
    final = client.get(url)  # the same app: a new computation, not the stopped one's error
    assert pace.jobs[-1] is not job and final.status_code == 200
    assert pace.jobs[-1].finished.wait(PATIENT)

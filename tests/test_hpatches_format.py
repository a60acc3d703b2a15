"""``--format hpatches``: a descriptor folder and the benchmark's task files, computed into the
three HPatches tasks of one run.

The dataset is generated here in the real layout (hpatches/hpatches-benchmark @
e0c993c7756d26129fef47f752f79e4cfe6681aa: ``data/descriptors/<DESC>/<sequence>/{ref,e1..t5}.csv``,
``tasks/splits/splits.json``, ``tasks/verif_{pos,neg_inter,neg_intra}_split-<X>.csv`` with
``s1,t1,idx1,s2,t2,idx2``, ``tasks/retr_{queries,distractors}_split-<X>.csv`` with ``s,idx``,
as ``docs/tasks.md`` and ``python/utils/tasks.py`` ``gen_verif`` / ``gen_retrieval`` write
them): sequences ``i_a``, ``i_b``, ``v_c`` (and ``v_d``, outside split ``a``), each target
patch a noisy copy of its reference patch, noisier from e to t.

The expected lists come from :func:`benchmark_lists`, the benchmark's own procedure with full
distance matrices, transcribed from that commit:

- ``python/utils/tasks.py`` ``eval_matching``: ``D = dist_matrix(d_ref, d, distance)``,
  ``idx = np.argmin(D, axis=1)``, ``m_l = np.equal(idx, gt_l)``, ``m_d = D[gt_l, idx]``;
- ``get_verif_dists``: ``[t1, t2] = [id2t[p[1]], id2t[p[4]]]``,
  ``d1 = getattr(descr[p[0]], t1[t])[p[2]]``, ``dist = spatial.distance.euclidean(d1, d2)``;
  ``matlab/+bench/+verification/eval.m``:
  ``pos_dists = pos_dists(1:floor(numel(neg_dists)*opts.posneg_ratio))``, ``posneg_ratio``
  0.2, ``labels = [ones(1, numel(pos_dists)), -ones(1, numel(neg_dists))]``;
- ``matlab/+bench/+retrieval/eval.m``: query ``ref``, ``opts.pos_ims = [2,3,4,5,6]``,
  ``neg_sel = 1:min(size(neg_desc, 2), opts.num_neg)``, ``neg_labels(ignored) = 0`` where
  ``neg_si == query_si``, ``all_labels = [ones(size(pos_dists)); neg_labels]``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot
from scipy.spatial import distance as spd

from evalstore import InvalidInput, Store
from evalstore.analysis.evaluate import evaluate
from evalstore.ingest import ingest_hpatches, stream
from evalstore.ingest.formats import hpatches_lists
from tests.conformance import reference_hpatches as ref

SEQUENCES = {"i_a": 14, "i_b": 11, "v_c": 12, "v_d": 9}
TEST = ["i_a", "i_b", "v_c"]  # split a; v_d only in split full
NOISE_SCALE = {"e": 0.15, "h": 0.45, "t": 0.9}
IMAGES = ["ref"] + [f"{z}{k}" for z in "eht" for k in range(1, 6)]
ID2T = {t: {z: ("ref" if t == 0 else f"{z}{t}") for z in "eht"} for t in range(6)}


def make_dataset(
    root: Path, *, dim: int = 6, seed: int = 0, binary: bool = False, sep: str = ","
) -> tuple[Path, Path]:
    """(descriptor folder, tasks folder) of a small dataset in the benchmark's layout."""
    rng = np.random.default_rng(seed)
    desc = root / "data" / "descriptors" / "toy"
    tasks = root / "tasks"
    (tasks / "splits").mkdir(parents=True)
    for seq, n in SEQUENCES.items():
        (desc / seq).mkdir(parents=True)
        if binary:
            ref = rng.integers(0, 256, (n, dim))
        else:
            ref = rng.normal(size=(n, dim)).astype(np.float32)
        for image in IMAGES:
            if image == "ref":
                values = ref
            elif binary:  # flip a few bits, more for harder noise
                flips = rng.random((n, dim, 8)) < NOISE_SCALE[image[0]] / 4
                values = ref ^ np.packbits(flips, axis=2)[:, :, 0]
            else:
                scale = NOISE_SCALE[image[0]] * (0.6 + 0.1 * int(image[1]))
                values = (ref + rng.normal(scale=scale, size=ref.shape)).astype(np.float32)
            fmt = "%d" if binary else "%.9g"
            np.savetxt(desc / seq / f"{image}.csv", values, fmt=fmt, delimiter=sep)
    splits = {
        "a": {"name": "a", "test": TEST, "train": ["v_d"]},
        "full": {"name": "full", "test": list(SEQUENCES)},
    }
    (tasks / "splits" / "splits.json").write_text(json.dumps(splits))
    for split, test in (("a", TEST), ("full", list(SEQUENCES))):
        _task_files(tasks, split, test, rng)
    return desc, tasks


def _task_files(tasks: Path, split: str, test: list[str], rng: np.random.Generator) -> None:
    """As ``gen_verif`` / ``gen_retrieval`` make them (fewer rows)."""
    n_pairs = 40
    s = rng.choice(test, n_pairs)
    idx = np.array([rng.choice(SEQUENCES[q], 2, replace=False) for q in s])
    t = np.array([rng.choice(6, 2, replace=False) for _ in s])
    header = "s1,t1,idx1,s2,t2,idx2\n"

    def write(name: str, rows: list[tuple[Any, ...]]) -> None:
        (tasks / name).write_text(header + "".join(",".join(map(str, r)) + "\n" for r in rows))

    write(
        f"verif_pos_split-{split}.csv",
        [(s[i], t[i, 0], idx[i, 0], s[i], t[i, 1], idx[i, 0]) for i in range(n_pairs)],
    )
    write(
        f"verif_neg_intra_split-{split}.csv",
        [(s[i], t[i, 0], idx[i, 0], s[i], t[i, 1], idx[i, 1]) for i in range(n_pairs)],
    )
    other = [rng.choice([q for q in test if q != s[i]]) for i in range(n_pairs)]
    write(
        f"verif_neg_inter_split-{split}.csv",
        [
            (s[i], t[i, 0], idx[i, 0], other[i], t[i, 1], rng.integers(SEQUENCES[other[i]]))
            for i in range(n_pairs)
        ],
    )
    patches = [(q, i) for q in test for i in range(SEQUENCES[q])]
    order = rng.permutation(len(patches))
    queries = [patches[i] for i in order[:8]]
    distractors = [patches[i] for i in order[8:]]
    for name, rows in (("queries", queries), ("distractors", distractors)):
        (tasks / f"retr_{name}_split-{split}.csv").write_text(
            "s,idx\n" + "".join(f"{q},{i}\n" for q, i in rows)
        )


# ------------------------------------------------------------- the benchmark's procedure

METRIC = {"l2": "euclidean", "l1": "cityblock", "cosine": "cosine", "l2sq": "sqeuclidean"}


def load(desc: Path, binary: bool = False) -> dict[str, dict[str, np.ndarray]]:
    """``hpatch_descr``: every file, ``astype(np.float32)`` (``bin_packed``: unpacked)."""
    out = {}
    for seq in SEQUENCES:
        out[seq] = {}
        for image in IMAGES:
            values = np.loadtxt(desc / seq / f"{image}.csv", delimiter=",", ndmin=2)
            if binary:
                values = np.unpackbits(values.astype(np.uint8), axis=1)
            out[seq][image] = values.astype(np.float32)
    return out


def benchmark_lists(
    desc: Path, tasks: Path, split: str = "a", distance: str = "l2", num_neg: float = 2000
) -> dict[str, pl.DataFrame]:
    """Every task's rows (group_id, item_id, score, label, in list order), full matrices."""
    binary = distance == "hamming"
    metric = "cityblock" if binary else METRIC[distance]
    descr = load(desc, binary)
    test = json.loads((tasks / "splits" / "splits.json").read_text())[split]["test"]
    rows: dict[str, list[tuple[Any, ...]]] = {"verification": [], "matching": [], "retrieval": []}
    # matching: eval_matching
    for seq in test:
        d_ref = descr[seq]["ref"]
        gt_l = np.arange(d_ref.shape[0])
        for t in "eht":
            for i in range(1, 6):
                D = spd.cdist(d_ref, descr[seq][f"{t}{i}"], metric)
                idx = np.argmin(D, axis=1)
                m_l = np.equal(idx, gt_l)
                m_d = D[gt_l, idx]
                for k in gt_l:
                    rows["matching"].append((f"{seq}/{t}{i}", str(k), -m_d[k], 1 if m_l[k] else -1))
    # verification: get_verif_dists, then eval.m's lists

    def verif_dists(name: str, t: str) -> list[float]:
        pairs = pl.read_csv(tasks / f"{name}_split-{split}.csv").rows()
        out = []
        for p in pairs:
            t1, t2 = ID2T[p[1]], ID2T[p[4]]
            d1 = descr[p[0]][t1[t]][p[2]]
            d2 = descr[p[3]][t2[t]][p[5]]
            out.append(float(spd.cdist(d1[None], d2[None], metric)[0, 0]))
        return out

    for t in "eht":
        pos = verif_dists("verif_pos", t)
        for negs in ("inter", "intra"):
            neg = verif_dists(f"verif_neg_{negs}", t)
            for method, n_pos in (
                ("balanced", len(pos)),
                ("imbalanced", math.floor(len(neg) * 0.2)),
            ):
                gid = f"{t}/{negs}/{method}"
                rows["verification"] += [
                    (gid, f"pos/{i}", -d, 1) for i, d in enumerate(pos[:n_pos])
                ]
                rows["verification"] += [(gid, f"{negs}/{i}", -d, -1) for i, d in enumerate(neg)]
    # retrieval: matlab/+bench/+retrieval/eval.m
    queries = pl.read_csv(tasks / f"retr_queries_split-{split}.csv").rows()
    negs_all = pl.read_csv(tasks / f"retr_distractors_split-{split}.csv").rows()
    negs = negs_all[: int(min(len(negs_all), num_neg))]
    for t in "eht":
        for qs, qi in queries:
            query = descr[qs]["ref"][qi]
            for k in range(1, 6):
                d = spd.cdist(query[None], descr[qs][f"{t}{k}"][qi][None], metric)[0, 0]
                rows["retrieval"].append((f"{qs}/{qi}/{t}", f"{qs}/{t}{k}/{qi}", -d, 1))
            for ns, ni in negs:
                d = spd.cdist(query[None], descr[ns]["ref"][ni][None], metric)[0, 0]
                label = 0 if ns == qs else -1
                rows["retrieval"].append((f"{qs}/{qi}/{t}", f"{ns}/ref/{ni}", -d, label))
    schema = {"group_id": pl.String, "item_id": pl.String, "score": pl.Float64, "label": pl.Int64}
    return {task: pl.DataFrame(r, schema=schema, orient="row") for task, r in rows.items()}


def stored(store: Store, run: str, task: str) -> pl.DataFrame:
    """The run's rows of a task, lists in group order, items in input order."""
    return store.con.sql(
        "select group_id, item_id, score, cast(label as bigint) as label from scores "
        "where run_id = $r and task = $t order by group_id, seq",
        params={"r": store.resolve(run), "t": task},
    ).pl()


def slices(store: Store, run: str, task: str) -> pl.DataFrame:
    return store.con.sql(
        "select group_id, n_positives, slices from groups where run_id = $r and task = $t "
        "order by group_id",
        params={"r": store.resolve(run), "t": task},
    ).pl()


def assert_same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    want = want.with_row_index("_i").sort("group_id", "_i").drop("_i")
    assert got.height == want.height
    assert got["group_id"].to_list() == want["group_id"].to_list()
    assert got["item_id"].to_list() == want["item_id"].to_list()
    assert got["label"].to_list() == want["label"].to_list()
    np.testing.assert_allclose(
        got["score"].to_numpy(), want["score"].to_numpy(), rtol=1e-12, atol=1e-12
    )


def assert_run_is(store: Store, run: str, want: dict[str, pl.DataFrame]) -> None:
    for task, rows in want.items():
        assert_same(stored(store, run, task), rows)


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path]:
    return make_dataset(tmp_path / "hp")


def ingest(store: Store, desc: Path, tasks_dir: Path, run: str = "hp/toy", **kw: Any) -> list[Any]:
    return ingest_hpatches(store, desc, tasks_dir=tasks_dir, run=run, git_commit=None, **kw)


# ------------------------------------------------------------------------------ the lists


def test_python_ingest_matches_the_benchmark(store: Store, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    results = store.ingest_hpatches(desc, tasks_dir=tasks, run="hp/toy", git_commit=None)
    assert [r.task for r in results] == ["verification", "matching", "retrieval"]
    assert len({r.run_id for r in results}) == 1
    assert_run_is(store, "hp/toy", benchmark_lists(desc, tasks))
    assert store.run("hp/toy")["params"] == {
        "descriptor": "toy",
        "split": "a",
        "distance": "l2",
        "distractors": 2000,
    }
    assert results[2].files == [
        str(tasks / "retr_queries_split-a.csv"),
        str(tasks / "retr_distractors_split-a.csv"),
    ]


def test_the_slices_of_every_task(store: Store, dataset: tuple[Path, Path]) -> None:
    ingest(store, *dataset)
    verif = slices(store, "hp/toy", "verification")
    assert verif["group_id"].to_list() == sorted(
        f"{z}/{n}/{b}"
        for z in "eht"
        for n in ("inter", "intra")
        for b in ("balanced", "imbalanced")
    )
    first = dict(verif["slices"][0])
    assert first == {"noise": "e", "negatives": "inter", "balance": "balanced"}
    match = slices(store, "hp/toy", "matching")
    assert match.height == len(TEST) * 15  # v_d is not in split a
    row = match.filter(pl.col("group_id") == "v_c/h4").row(0, named=True)
    assert row["n_positives"] == SEQUENCES["v_c"]
    assert dict(row["slices"]) == {"sequence": "v_c", "kind": "view", "noise": "h", "image": "h4"}
    retr = slices(store, "hp/toy", "retrieval")
    assert retr.height == 8 * 3
    kinds = {dict(s)["kind"] for s in retr["slices"]}
    assert kinds <= {"illum", "view"} and {dict(s)["noise"] for s in retr["slices"]} == {*"eht"}


def test_the_protocol_gives_the_benchmarks_own_numbers(
    store: Store, dataset: tuple[Path, Path]
) -> None:
    """Per list, evalstore's ``hpatches`` protocol on the ingested run equals the MATLAB
    benchmark's AP (tests/conformance/reference_hpatches.py) on the benchmark's lists."""
    desc, tasks = dataset
    ingest(store, desc, tasks)
    want = benchmark_lists(desc, tasks)
    frame = evaluate(store, ["hp/toy"], protocol="hpatches", by=("list",))
    got = {
        (row["task"], row["slice"].partition("=")[2]): row["value"]
        for row in frame.iter_rows(named=True)
        if row["slice"]
    }
    for task, rows in want.items():
        for (gid,), lst in rows.group_by("group_id", maintain_order=True):
            score, label = lst["score"].to_numpy(), lst["label"].to_numpy()
            if task == "verification":
                expected = ref.verification_ap(-score[label > 0], -score[label < 0])
            elif task == "matching":
                expected = ref.matching_ap(label > 0, -score)
            else:
                expected = ref.retrieval_ap(-score[:5], -score[5:], label[5:])[0]
            assert got[(task, gid)] == pytest.approx(expected, rel=1e-12, abs=1e-12), (task, gid)


def test_cli_ingest_and_slices(cli: Any, db: Path, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    result = cli("ingest", str(desc), "--format", "hpatches", "--hpatches-tasks", str(tasks),
                 "-r", "hp/toy", "--git-commit", "abc")  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all("ingested run hp/toy (id 1)" in line for line in lines)
    assert "768 verification rows in 12 list(s)" in lines[0]
    assert "177 ignored" in lines[2]
    with Store(db) as store:
        assert_run_is(store, "hp/toy", benchmark_lists(desc, tasks))
    for key, values in (
        ("balance", {"balanced", "imbalanced"}),
        ("negatives", {"inter", "intra"}),
        ("noise", {"e", "h", "t"}),
        ("kind", {"illum", "view"}),
    ):
        result = cli("eval", "hp/toy", "--protocol", "hpatches", "--by", key, "-f", "json")
        assert result.exit_code == 0, result.output
        found = {r["slice"].partition("=")[2] for r in json.loads(result.stdout) if r["slice"]}
        assert found == values, key
    result = cli("ingest", str(desc), "--format", "hpatches", "--hpatches-tasks", str(tasks),
                 "-r", "hp/toy", "--replace", "--output-format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["task"] for r in rows] == ["verification", "matching", "retrieval"]
    assert all(r["replaced"] and r["run_id"] == rows[0]["run_id"] for r in rows)


@pytest.mark.slow  # about 3 s: four whole ingests
def test_blocks_and_parts_of_any_size_give_the_same_lists(
    store: Store, dataset: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Distances a few rows at a time (blocks that end inside a sequence and inside the
    queries), verification pairs gathered in small chunks, Parquet parts of a few rows."""
    desc, tasks = dataset
    ingest(store, desc, tasks, run="whole")
    monkeypatch.setattr(hpatches_lists, "_PAIR_CHUNK", 7)
    monkeypatch.setattr(hpatches_lists, "_PART_ROWS", 50)
    for block in (1, 3, 5):
        ingest(store, desc, tasks, run=f"block{block}", block_rows=block)
    for task in ("verification", "matching", "retrieval"):
        whole = stored(store, "whole", task)
        for block in (1, 3, 5):
            assert stored(store, f"block{block}", task).equals(whole), (task, block)


def test_a_block_never_holds_more_than_its_rows(
    dataset: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    desc, tasks = dataset
    seen: list[tuple[int, int]] = []
    real = spd.cdist  # blocks() imports it when it runs

    def spy(a: np.ndarray, b: np.ndarray, metric: str) -> np.ndarray:
        seen.append((len(a), len(b)))
        return real(a, b, metric)

    monkeypatch.setattr(spd, "cdist", spy)
    ingest(store, desc, tasks, block_rows=4)
    assert seen and max(rows for rows, _ in seen) == 4


@pytest.mark.parametrize("distance", ["l1", "cosine", "l2sq"])
def test_other_distances(store: Store, dataset: tuple[Path, Path], distance: str) -> None:
    desc, tasks = dataset
    ingest(store, desc, tasks, distance=distance)
    assert_run_is(store, "hp/toy", benchmark_lists(desc, tasks, distance=distance))
    assert store.run("hp/toy")["params"]["distance"] == distance


def test_hamming_on_packed_binary_descriptors(store: Store, tmp_path: Path) -> None:
    desc, tasks = make_dataset(tmp_path / "bin", dim=4, binary=True)
    ingest(store, desc, tasks, distance="hamming")
    want = benchmark_lists(desc, tasks, distance="hamming")
    assert_run_is(store, "hp/toy", want)
    assert (want["matching"]["score"] == want["matching"]["score"].round()).all()


def test_split_full_distractors_and_one_task(store: Store, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    ingest(store, desc, tasks, run="full", split="full", distractors=None)
    assert_run_is(store, "full", benchmark_lists(desc, tasks, split="full", num_neg=math.inf))
    assert "v_d/t5" in slices(store, "full", "matching")["group_id"].to_list()
    ingest(store, desc, tasks, run="few", distractors=5)
    assert_run_is(store, "few", {"retrieval": benchmark_lists(desc, tasks, num_neg=5)["retrieval"]})
    for path in tasks.glob("*_split-a.csv"):  # matching needs no task file
        path.unlink()
    (result,) = ingest(store, desc, tasks, run="matching", tasks=["matching"])
    assert result.task == "matching"
    assert store.run("matching")["params"] == {"descriptor": "toy", "split": "a", "distance": "l2"}


def test_semicolons_and_user_params(store: Store, tmp_path: Path) -> None:
    desc, tasks = make_dataset(tmp_path / "semi", sep=";")
    ingest(store, desc, tasks, params=["descriptor=sift-v2", "lr=0.1"])
    assert_run_is(store, "hp/toy", benchmark_lists(*make_dataset(tmp_path / "comma")))
    params = store.run("hp/toy")["params"]
    assert params["descriptor"] == "sift-v2" and params["lr"] == 0.1


# ------------------------------------------------------------------ all or nothing, errors


def test_a_broken_file_leaves_the_store_unchanged(
    cli: Any, db: Path, dataset: tuple[Path, Path]
) -> None:
    desc, tasks = dataset
    args = ["ingest", str(desc), "--format", "hpatches", "--hpatches-tasks", str(tasks)]
    assert cli(*args, "-r", "hp/toy").exit_code == 0
    before = snapshot(db)
    broken = desc / "v_c" / "t5.csv"
    broken.write_text(broken.read_text() + "1,2\n")
    for extra in (["-r", "hp/other"], ["-r", "hp/toy", "--replace"]):
        result = cli(*args, *extra)
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1 and str(broken) in result.stderr, result.stderr
        assert snapshot(db) == before


def test_a_failure_in_the_last_task_writes_nothing(
    store: Store, db: Path, dataset: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python API on the store itself (no staging): the three tasks are one transaction."""
    desc, tasks = dataset
    ingest(store, desc, tasks, run="kept")
    before = store.con.execute("select count(*) from scores").fetchall()
    real = stream.insert_stream
    calls = []

    def failing(con: Any, opened: Any, spec: Any, first: int, progress: Any) -> Any:
        calls.append(spec.task)
        if spec.task == "retrieval":
            raise InvalidInput("disk full")
        return real(con, opened, spec, first, progress)

    monkeypatch.setattr("evalstore.ingest.hpatches.insert_stream", failing)
    for run, replace in (("new", False), ("kept", True)):
        with pytest.raises(InvalidInput, match="disk full"):
            ingest(store, desc, tasks, run=run, replace=replace)
    assert calls == ["verification", "matching", "retrieval"] * 2
    assert store.con.execute("select count(*) from scores").fetchall() == before
    assert [r for r in store.runs()["name"]] == ["kept"]
    assert_run_is(store, "kept", benchmark_lists(desc, tasks))


def _edit(path: Path, line: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")


BAD_DESCRIPTORS = {
    "ragged": (lambda p: _edit(p, 3, "1,2,3"), "line 3: 3 values, but line 1 has 6"),
    "nan": (lambda p: _edit(p, 2, "1,2,nan,4,5,6"), "line 2: NaN is not a descriptor value"),
    "text": (lambda p: _edit(p, 4, "1,2,x,4,5,6"), "line 4 column 3: 'x' is not a number"),
    "empty value": (lambda p: _edit(p, 4, "1,2,,4,5,6"), "line 4 column 3: an empty value"),
    "infinite": (lambda p: _edit(p, 5, "1,2,inf,4,5,6"), "line 5: a value is infinite"),
    "rows": (
        lambda p: p.write_text("".join(p.read_text().splitlines(keepends=True)[:-1])),
        "rows, but",
    ),
    "empty": (lambda p: p.write_text(""), "empty file"),
    "missing": (lambda p: p.unlink(), "no such file"),
}


@pytest.mark.parametrize("kind", list(BAD_DESCRIPTORS))
@pytest.mark.no_store
def test_bad_descriptor_files(cli: Any, db: Path, dataset: tuple[Path, Path], kind: str) -> None:
    desc, tasks = dataset
    damage, message = BAD_DESCRIPTORS[kind]
    path = desc / "i_b" / "e1.csv"
    damage(path)
    result = cli("ingest", str(desc), "--format", "hpatches", "--hpatches-tasks", str(tasks),
                 "-r", "x")  # fmt: skip
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}") and result.stderr.count("\n") == 1
    assert message in result.stderr, result.stderr
    assert not db.exists()


def test_descriptors_of_different_widths(store: Store, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    path = desc / "v_c" / "ref.csv"
    rows = np.loadtxt(path, delimiter=",")
    np.savetxt(path, rows[:, :5], delimiter=",")
    with pytest.raises(InvalidInput, match=f"^{path}: descriptors of 5 values, but .* has 6$"):
        ingest(store, desc, tasks)


BAD_TASKS = {
    "missing task file": ("retr_queries_split-a.csv", None, "no such file"),
    "missing column": ("verif_pos_split-a.csv", (1, "s1,t1,idx,s2,t2,idx2"), "column 'idx1'"),
    "not an index": ("verif_neg_inter_split-a.csv", (3, "i_a,0,x,i_b,1,2"), "line 3: column"),
    "image 6": ("verif_neg_intra_split-a.csv", (2, "i_a,6,0,i_a,1,2"), "line 2: column 't1' is 6"),
    "patch out of range": ("retr_distractors_split-a.csv", (4, "i_b,11"), "'idx' is 11, but"),
    "unknown sequence": ("verif_pos_split-a.csv", (5, "i_q,0,1,i_q,2,1"), "line 5: sequence 'i_q'"),
    "query twice": ("retr_queries_split-a.csv", (3, "{q2}"), "line 3: patch"),
    "no splits": ("splits/splits.json", None, "no such file"),
}


@pytest.mark.parametrize("kind", list(BAD_TASKS))
def test_bad_task_files(store: Store, dataset: tuple[Path, Path], kind: str) -> None:
    desc, tasks = dataset
    name, edit, message = BAD_TASKS[kind]
    path = tasks / name
    if edit is None:
        path.unlink()
    else:
        line, text = edit
        text = text.replace("{q2}", path.read_text().splitlines()[1]) if "{q2}" in text else text
        _edit(path, line, text)
    with pytest.raises(InvalidInput) as info:
        ingest(store, desc, tasks)
    assert str(info.value).startswith(str(path)) and message in str(info.value)
    assert "\n" not in str(info.value)
    assert store.runs().height == 0


def test_a_split_sequence_without_its_folder(store: Store, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    for csv in (desc / "i_b").iterdir():
        csv.unlink()
    (desc / "i_b").rmdir()
    with pytest.raises(InvalidInput, match=f"^{desc / 'i_b'}: no such sequence folder$"):
        ingest(store, desc, tasks)


def test_cosine_refuses_a_zero_descriptor(store: Store, dataset: tuple[Path, Path]) -> None:
    desc, tasks = dataset
    _edit(desc / "i_a" / "h2.csv", 3, "0,0,0,0,0,0")
    with pytest.raises(InvalidInput, match=r"h2\.csv line 3: a zero descriptor has no cosine"):
        ingest(store, desc, tasks, distance="cosine")


def test_hamming_refuses_values_that_are_not_bytes(
    store: Store, dataset: tuple[Path, Path]
) -> None:
    desc, tasks = dataset
    with pytest.raises(InvalidInput, match=r"ref\.csv line 1 column 1: .* is not a byte"):
        ingest(store, desc, tasks, distance="hamming")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--distance", "l3"], "unknown --distance l3; use one of l2, l2sq, l1, cosine, hamming"),
        (["--hpatches-split", "d"], "unknown --hpatches-split d"),
        (["--hpatches-distractors", "0"], "--hpatches-distractors must be a count from 1 or 'all'"),
        (["--task", "classification"], "--task classification is none of them"),
        (["--append"], "--append does not apply to --format hpatches"),
        (["--groups", "g.csv"], "--groups does not apply to --format hpatches"),
        (["--column", "score=d"], "--column does not apply to --format hpatches"),
    ],
)
def test_bad_options(cli: Any, dataset: tuple[Path, Path], args: list[str], message: str) -> None:
    desc, tasks = dataset
    result = cli("ingest", str(desc), "--format", "hpatches", "--hpatches-tasks", str(tasks),
                 "-r", "x", *args)  # fmt: skip
    assert result.exit_code == 1 and message in result.stderr, result.stderr


def test_options_that_need_the_format(cli: Any, dataset: tuple[Path, Path], tmp_path: Path) -> None:
    desc, tasks = dataset
    result = cli("ingest", str(desc), "--format", "hpatches", "-r", "x")
    assert result.exit_code == 1 and "needs --hpatches-tasks DIR" in result.stderr
    result = cli("ingest", str(desc), str(tasks), "--format", "hpatches", "-r", "x",
                 "--hpatches-tasks", str(tasks))  # fmt: skip
    assert result.exit_code == 1 and "reads one descriptor folder (DESC), got 2" in result.stderr
    data = tmp_path / "r.csv"
    data.write_text("group_id,item_id,score,label\na,1,0.5,1\n")
    result = cli("ingest", str(data), "-t", "retrieval", "-r", "x", "--distance", "l1")
    assert (
        result.exit_code == 1 and "--distance applies only with --format hpatches" in result.stderr
    )
    result = cli("ingest", str(data), "-r", "x")
    assert result.exit_code == 2 and "required unless --format hpatches" in result.output
    with (
        Store(tmp_path / "s.duckdb") as store,
        pytest.raises(InvalidInput, match="ingest_hpatches"),
    ):
        store.ingest(str(desc), task="matching", run="x", fmt="hpatches")

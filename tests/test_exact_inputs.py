"""Ingest stores exactly what it reads, or refuses it in one line: scores a float64 does not
hold (integers beyond 2^53, decimals of more digits than it keeps), n_positives overrides that
nDCG honours and groups rows that describe no list, gains whose 2^gain overflows, outcome counts
whose sums overflow, npz files that declare more than they hold, and inputs that are not files.
"""

from __future__ import annotations

import math
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import snapshot
from definitions import ndcg as slow_ndcg
from definitions import ndcg_at_k as slow_ndcg_at_k

from evalstore import InvalidInput, Store
from evalstore.db import queries
from evalstore.ingest import exact
from evalstore.metrics.references import Params, RankedLists
from evalstore.metrics.registry import METRICS

EVALSTORE = str(Path(sys.executable).with_name("evalstore"))
GOOD = "group_id,item_id,score,label\nq,a,0.5,1\nq,b,0.25,-1\n"


def run_cli(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EVALSTORE, *args, "--db", str(db)], capture_output=True, text=True, timeout=120
    )


def refused(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line of a refused command (and that it was refused so)."""
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    return lines[0]


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    """A store with one run, to check that a refused ingest leaves it as it was."""
    db = tmp_path / "store.duckdb"
    (tmp_path / "good.csv").write_text(GOOD)
    done = run_cli("ingest", str(tmp_path / "good.csv"), "-t", "retrieval", "-r", "base", db=db)
    assert done.returncode == 0, done.stderr
    return db


# -- 5. scores a float64 does not hold ---------------------------------------------------------

BEYOND = 2**53 + 1  # reads as 2^53 as a float64: a tie with 2^53 that the input does not have


def _ranked(score: Any) -> dict[str, Any]:
    return {"group_id": [1, 1, 1], "item_id": [1, 2, 3], "score": score, "label": [1, -1, 1]}


@pytest.mark.slow  # real processes: the installed evalstore command
@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "ndjson", "npz"])
def test_an_integer_score_beyond_2_to_the_53_is_refused(
    fmt: str, seeded: Path, tmp_path: Path
) -> None:
    """The reproducer: scores 2^53 + 1 > 2^53 > 2^53 - 1 (AP 0.5 over the first two ranks)
    would be stored 2^53, 2^53, 2^53 - 1: a tie, and AP 0.333."""
    data = _ranked(np.array([BEYOND, 2**53, 2**53 - 1], dtype=np.int64))
    path = tmp_path / f"s.{fmt}"
    frame = pl.DataFrame(data)
    if fmt in ("csv", "tsv"):
        frame.write_csv(path, separator="," if fmt == "csv" else "\t")
    elif fmt == "parquet":
        frame.write_parquet(path)
    elif fmt == "ndjson":
        frame.write_ndjson(path)
    else:
        np.savez(path, **{k: np.asarray(v) for k, v in data.items()})
    before = snapshot(seeded)
    line = refused(run_cli("ingest", str(path), "-t", "retrieval", "-r", "big", db=seeded))
    assert f"{path}: column 'score' row 1: {BEYOND} is not exactly a float64" in line
    assert snapshot(seeded) == before


@pytest.mark.slow  # real processes: the installed evalstore command
@pytest.mark.parametrize(
    ("text", "row"),
    [
        ("12345678901234567890", 1),  # 20 digits: polars reads them as an Int128
        ("123456789012345678901234567890123456789012345", 1),  # past any integer type
        ("0.30000000000000000001", 2),  # 21 significant digits; reads as 0.3
        ("1e-400", 1),  # reads as 0
    ],
)
def test_csv_text_a_float64_does_not_hold_is_refused(
    text: str, row: int, seeded: Path, tmp_path: Path
) -> None:
    path = tmp_path / "s.csv"
    first, second = (text, "0.3") if row == 1 else ("0.3", text)
    path.write_text(f"group_id,item_id,score,label\nq,a,{first},1\nq,b,{second},-1\n")
    before = snapshot(seeded)
    line = refused(run_cli("ingest", str(path), "-t", "retrieval", "-r", "t", db=seeded))
    assert f"column 'score' row {row}: {text} is not exactly a float64" in line
    assert snapshot(seeded) == before


def test_ordinary_floats_are_stored_exactly(store: Store, tmp_path: Path) -> None:
    """What float printers write (shortest, %.17g, NumPy's savetxt %.18e), integers up to
    2^53, decimals, surrounding space: ingested, each score the float64 it reads as."""
    values = [0.1, 0.30000000000000004, 1 / 3, -2.5e-3, 1e300, 5e-324, 2.0**53, -(2.0**53), 0.0]
    texts = [
        *(repr(v) for v in values),
        *(f"{v:.17g}" for v in values),
        *(f"{v:.18e}" for v in values),
        "9007199254740992",
        " 7 ",
        "1.50000000000000000000",
        "1e22",
    ]
    lines = [f"{i},x{i},{t},1" for i, t in enumerate(texts)]
    path = tmp_path / "s.csv"
    path.write_text("group_id,item_id,score,label\n" + "\n".join(lines) + "\n")
    store.ingest(path, task="retrieval", run="r", git_commit=None)
    got = store.con.execute("select score from scores order by seq").fetchall()
    assert [s for (s,) in got] == [float(t) for t in texts]


def test_the_bulk_rule_is_decimal_arithmetic_on_long_texts() -> None:
    """The rows checked one by one (printed back by the float's own formatting) are judged
    as exact decimal arithmetic judges them: random 15-18 digit numbers of any exponent, and
    floats printed to 15-22 digits (``%.18e`` and friends), some refused, some not."""
    rng = np.random.default_rng(29)
    texts = [
        f"{rng.choice(['', '-'])}{d[0]}.{d[1:]}e{rng.integers(-30, 31)}"
        for d in (str(rng.integers(10 ** (k - 1), 10**k - 1)) for k in rng.integers(15, 19, 4000))
    ]
    values = rng.standard_normal(4000) * 10.0 ** rng.integers(-20, 20, 4000)
    texts += [
        format(v, f".{int(n)}e") for v, n in zip(values, rng.integers(14, 22, 4000), strict=True)
    ]
    texts += [
        "9007199254740993",
        "0.30000000000000000001",
        "0.29999999999999999",
        "1e-400",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "-1.5000000000000000000",
    ]
    series = pl.Series(texts)
    parsed = series.cast(pl.Float64)
    got = exact.inexact_text(series, parsed).to_list()
    want = [not exact.round_trips(t, v) for t, v in zip(texts, parsed.to_list(), strict=True)]
    assert got == want
    assert 100 < sum(want) < len(texts) - 100  # both outcomes are exercised


def test_a_decimal_column_is_checked_by_its_digits(store: Store) -> None:
    """A Decimal score column (Parquet, Arrow): 0.1 as decimal(38, 20) is stored as 0.1; one
    of more digits than a float64 keeps is refused."""
    data = _ranked(pl.Series([0.1, 0.25, 0.5]).cast(pl.Decimal(38, 20)))
    store.ingest(pl.DataFrame(data), task="retrieval", run="d", git_commit=None)
    assert store.con.execute("select score from scores order by seq").fetchall() == [
        (0.1,),
        (0.25,),
        (0.5,),
    ]
    bad = pl.Series(["0.30000000000000000001", "0.3", "0.5"]).cast(pl.Decimal(38, 20))
    with pytest.raises(InvalidInput, match=r"row 1: 0.30000000000000000001\d* is not exactly"):
        store.ingest(pl.DataFrame(_ranked(bad)), task="retrieval", run="e", git_commit=None)


@pytest.mark.slow  # real processes: the installed evalstore command
def test_trec_and_voc_scores_are_checked(seeded: Path, tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text(f"q1 Q0 d1 1 {BEYOND} r\nq1 Q0 d2 2 {2**53} r\n")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    args = ["-t", "retrieval", "--format", "trec", "--qrels", str(tmp_path / "qrels.txt")]
    line = refused(run_cli("ingest", str(tmp_path / "run.txt"), *args, "-r", "t", db=seeded))
    assert f"run.txt line 1: score '{BEYOND}' is not exactly a float64" in line
    gt = tmp_path / "gt"
    gt.mkdir()
    (gt / "dog_test.txt").write_text("000005 1\n000007 -1\n")
    results = tmp_path / "comp1_cls_test_dog.txt"
    results.write_text("000005 0.5\n000007 0.30000000000000000001\n")
    args = ["-t", "classification", "--format", "voc", "--voc-gt", str(gt)]
    line = refused(run_cli("ingest", str(results), *args, "-r", "v", db=seeded))
    assert "line 2: confidence '0.30000000000000000001' is not exactly a float64" in line


# -- 8. n_positives in nDCG, groups rows of no list --------------------------------------------

NDCG = ("ndcg", "ndcg_at_k", "ndcg_exp", "ndcg_exp_at_k")


def _lists(store: Store, run_id: int) -> RankedLists:
    def frame(text: str) -> pl.DataFrame:
        out = pl.from_arrow(store.con.sql(text, params={"r": run_id}).to_arrow_table())
        assert isinstance(out, pl.DataFrame)
        return out

    rows = frame(
        "select group_id, score, label, seq, item_id, gain from scores where run_id = $r "
        "order by seq"
    )
    over = frame(
        "select group_id, n_positives from groups where run_id = $r and n_positives is not null"
    )
    return RankedLists(
        group=np.array(rows["group_id"].to_list(), dtype=object),
        scores=rows["score"].fill_null(-np.inf).to_numpy().astype(np.float64),
        labels=rows["label"].to_numpy().astype(np.int64),
        order=rows["seq"].to_numpy().astype(np.int64),
        items=np.array(rows["item_id"].to_list(), dtype=object),
        gains=rows["gain"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        lists=np.array(over["group_id"].to_list(), dtype=object) if over.height else None,
        n_positives=over["n_positives"].to_numpy().astype(np.int64) if over.height else None,
    )


def _sql_values(store: Store, name: str, run_id: int, params: Params) -> dict[str, float]:
    metric = METRICS[name]
    frame = queries.fetch(store.con, metric.query, metric.sql_params([run_id], "retrieval", params))
    return {
        g: (math.nan if v is None else v)
        for g, v in zip(frame["group_id"].to_list(), frame["value"].to_list(), strict=True)
    }


@pytest.mark.parametrize("graded", [False, True])
def test_every_ndcg_counts_the_positives_of_an_n_positives_override(
    store: Store, tmp_path: Path, graded: bool
) -> None:
    """The reproducer: with n_positives = 1,000,000, AP is about 1.7e-6 and nDCG was 0.92.
    The positives the override adds beyond the +1 labels are not retrieved and of gain 1, in
    the ideal order: the SQL, the NumPy twin and the slow loop of the definition agree."""
    data = {
        "group_id": ["q"] * 4 + ["r"] * 3,
        "item_id": ["a", "b", "c", "d", "a", "b", "c"],
        "score": [4.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
        "label": [1, -1, 1, -1, -1, 1, 1],
        **({"gain": [3.0, 0.0, 0.5, 0.0, 0.0, 2.0, 1.0]} if graded else {}),
    }
    meta = tmp_path / "groups.csv"
    meta.write_text("group_id,n_positives\nq,1000000\nr,4\n")
    with_override = store.ingest(
        data, task="retrieval", run="over", groups=meta, labels="pm1", git_commit=None
    ).run_id
    plain = store.ingest(data, task="retrieval", run="plain", labels="pm1", git_commit=None).run_id
    inputs = _lists(store, with_override)
    ap = _sql_values(store, "ap", with_override, Params())
    assert ap["q"] == pytest.approx((1 + 2 / 3) / 1e6, rel=1e-12)
    for name in NDCG:
        params = Params(k=10_000) if name.endswith("_at_k") else Params()
        sql = _sql_values(store, name, with_override, params)
        without = _sql_values(store, name, plain, params)
        twin = METRICS[name].reference(inputs, params)
        assert dict(zip(twin.group.tolist(), twin.value.tolist(), strict=True)) == pytest.approx(
            sql, rel=1e-12
        )
        assert sql["q"] < 0.01 < 0.5 < without["q"]  # a million positives never retrieved
        assert sql["r"] < without["r"]  # one more positive, not retrieved
    if not graded:  # the slow loops of the definitions: gain 1 for each added positive
        for name, slow in (("ndcg", slow_ndcg), ("ndcg_at_k", slow_ndcg_at_k)):
            params = Params(k=10_000) if name.endswith("_at_k") else Params()
            sql = _sql_values(store, name, with_override, params)
            want = slow(inputs, params)
            got = dict(zip(want.group.tolist(), want.value.tolist(), strict=True))
            assert got == pytest.approx(sql, rel=1e-12)


@pytest.mark.slow  # real processes: the installed evalstore command
def test_overrides_that_add_more_positives_than_ndcg_can_rank_are_refused(
    seeded: Path, tmp_path: Path
) -> None:
    """nDCG's ideal ranking holds a row per positive an override adds (2e7 took 13 s and
    2.6 GB, 2^31 would not end): more than 2^24 in a run are refused at ingest."""
    (tmp_path / "s.csv").write_text(GOOD + "r,a,0.5,1\n")
    groups = tmp_path / "g.csv"
    groups.write_text(f"group_id,n_positives\nq,{2**23 + 2}\nr,{2**23 + 1}\n")  # each has 1
    args = ["ingest", str(tmp_path / "s.csv"), "-t", "retrieval", "--groups", str(groups)]
    before = snapshot(seeded)
    line = refused(run_cli(*args, "-r", "big", db=seeded))
    assert line == (
        f"Error: {groups}: column 'n_positives' adds 16,777,217 positives beyond the lists' +1 "
        "labels (list 'q' adds 8,388,609), more than 16,777,216 (2^24), which nDCG's ideal "
        "ranking can hold"
    )
    assert snapshot(seeded) == before
    groups.write_text(f"group_id,n_positives\nq,{2**23 + 1}\nr,{2**23 + 1}\n")  # 2^24: taken
    assert run_cli(*args, "-r", "big", db=seeded).returncode == 0


@pytest.mark.slow  # real processes: the installed evalstore command
def test_a_groups_row_of_no_list_is_refused(seeded: Path, tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text(GOOD)
    groups = tmp_path / "g.csv"
    groups.write_text("group_id,n_positives\nq,3\nQ,5\nq2,1\n")  # 'Q' and 'q2': typos
    before = snapshot(seeded)
    line = refused(
        run_cli(
            "ingest", str(tmp_path / "s.csv"), "-t", "retrieval", "-r", "g",
            "--groups", str(groups), db=seeded,
        )
    )  # fmt: skip
    assert line == (
        f"Error: {groups}: 2 rows match no list of the retrieval rows ingested: group_id 'Q', "
        "'q2'; each row describes a list ingested (a typo?)"
    )
    assert snapshot(seeded) == before


# -- 14. gains whose 2^gain overflows, counts whose sums overflow ------------------------------


def test_ndcg_exp_takes_gains_from_1024(store: Store) -> None:
    """2^1024 overflows a float64: the gains are divided by a power of two before, so a gain
    of 1024 (2000, 10^300) is a value, equal to the NumPy twin's."""
    data = {
        "group_id": ["q"] * 3 + ["r"] * 3 + ["s"] * 2,
        "item_id": ["a", "b", "c"] * 2 + ["a", "b"],
        "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0, 1.0],
        "gain": [1024.0, 0.0, 3.0, 1024.0, 1025.0, 0.0, 1e300, 1e300 / 2],
    }
    run_id = store.ingest(data, task="retrieval", run="g", git_commit=None).run_id
    inputs = _lists(store, run_id)
    for name in NDCG:
        params = Params(k=2) if name.endswith("_at_k") else Params()
        sql = _sql_values(store, name, run_id, params)
        twin = METRICS[name].reference(inputs, params)
        assert dict(zip(twin.group.tolist(), twin.value.tolist(), strict=True)) == pytest.approx(
            sql, rel=1e-12
        )
        assert all(0 < v <= 1 for v in sql.values())
    exp = _sql_values(store, "ndcg_exp", run_id, Params())
    assert exp["q"] == 1.0  # 2^1024 - 1 ranked first; 2^3 - 1 is 2^-1021 of it
    # 2^1024 then 2^1025: (1 + 2 / log2 3) / (2 + 1 / log2 3) of the ideal
    assert exp["r"] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)), rel=1e-12)
    assert exp["s"] == 1.0


@pytest.mark.slow  # real processes: the installed evalstore command
def test_a_gain_of_1024_evaluates_through_the_cli(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    path = tmp_path / "g.csv"
    path.write_text("group_id,item_id,score,gain\nq,a,2,1024\nq,b,1,3\n")
    assert run_cli("ingest", str(path), "-t", "retrieval", "-r", "g", db=db).returncode == 0
    done = run_cli("eval", "g", "-m", "ndcg_exp", "-f", "json", db=db)
    assert done.returncode == 0, done.stderr
    assert "ndcg_exp" in done.stdout


@pytest.mark.slow  # real processes: the installed evalstore command
def test_outcome_counts_whose_sums_could_overflow_are_refused(seeded: Path, tmp_path: Path) -> None:
    """The reproducer: counts near 2^62 made `eval -m iou` fail (OutOfRangeException in
    tp + fp + fn). Counts and a group's sum are bounded at 2^53."""
    path = tmp_path / "o.csv"
    for body, message in (
        (f"a,{2**62},{2**62},0\n", f"column 'tp' row 1 is {2**62}; counts must be whole numbers"),
        (
            f"a,1,0,0\nb,{2**52},{2**52},1\n",
            f"column 'tp' row 2: tp + fp + fn is {2**53 + 1:,}; a group's counts may add up to",
        ),
    ):
        path.write_text("group_id,tp,fp,fn\n" + body)
        before = snapshot(seeded)
        line = refused(run_cli("ingest", str(path), "-t", "outcomes", "-r", "o", db=seeded))
        assert message in line
        assert snapshot(seeded) == before
    path.write_text(f"group_id,tp,fp,fn\na,{2**53 - 2},1,1\nb,{2**52},{2**52},0\n")
    assert run_cli("ingest", str(path), "-t", "outcomes", "-r", "o", db=seeded).returncode == 0
    done = run_cli("eval", "o", "-m", "iou", "-m", "iou_micro", "-f", "json", db=seeded)
    assert done.returncode == 0, done.stderr


# -- 15. npz files that declare more than they hold --------------------------------------------

PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)  # KiB
print(done.returncode)
sys.stdout.write(done.stderr)
"""


def _peak(args: list[str]) -> tuple[int, int, str]:
    """An evalstore command's peak memory (MiB), exit code and stderr."""
    out = subprocess.run(
        [sys.executable, "-c", PEAK, EVALSTORE, *args], capture_output=True, text=True, timeout=300
    ).stdout
    kib, code, stderr = out.split("\n", 2)
    return int(kib) // 1024, int(code), stderr


def _npy_member(archive: zipfile.ZipFile, name: str, dtype: str, n: int, chunk: int) -> None:
    """A member ``name.npy`` of n zeros of ``dtype``, written a chunk at a time (deflated,
    about 1000:1: the bytes of a zip bomb, without the memory)."""
    header = np.lib.format.header_data_from_array_1_0(np.zeros(0, dtype))
    header["shape"] = (n,)
    with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
        np.lib.format.write_array_header_1_0(member, header)
        zeros = bytes(chunk * np.dtype(dtype).itemsize)
        for start in range(0, n, chunk):
            member.write(zeros[: (min(n, start + chunk) - start) * np.dtype(dtype).itemsize])


@pytest.mark.slow
@pytest.mark.parametrize("bomb", ["one long array", "every array long"])
def test_an_npz_bomb_is_refused_before_it_is_decompressed(
    seeded: Path, tmp_path: Path, bomb: str
) -> None:
    """The reproducer: 1.9 MB on disk, 2e8 float64 zeros (1.6 GB), read whole before the
    refusal. Now every member's header is read first: the lengths differ, or all of them
    declare far more than their compressed bytes, and nothing is decompressed."""
    path = tmp_path / "bomb.npz"
    n = 200_000_000
    long = (
        {"score": n}
        if bomb == "one long array"
        else {c: n for c in ["group_id", "item_id", "score", "label"]}
    )
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, dtype in (
            ("group_id", "<i4"),
            ("item_id", "<i4"),
            ("score", "<f8"),
            ("label", "i1"),
        ):
            _npy_member(archive, name, dtype, long.get(name, 8), 1 << 22)
    assert path.stat().st_size < 20 << 20
    before = snapshot(seeded)
    mib, code, stderr = _peak(
        ["ingest", str(path), "-t", "retrieval", "-r", "b", "--db", str(seeded)]
    )
    assert code == 1 and stderr.count("\n") == 1 and stderr.startswith("Error: "), stderr
    assert (
        "arrays have different lengths" if bomb == "one long array" else "(a zip bomb?)"
    ) in stderr
    assert mib < 600, f"{mib} MiB"  # the arrays alone would take 1,600 MiB or more
    assert snapshot(seeded) == before


def test_only_the_arrays_an_ingest_uses_are_read(store: Store, tmp_path: Path) -> None:
    """A member no column comes from is not decompressed: here one whose data is damaged
    (a bad CRC when read to its end) does not stop the ingest, and the mapped one is read."""
    path = tmp_path / "s.npz"
    arrays = {
        "group_id": np.array([1, 1]),
        "item_id": np.array([1, 2]),
        "distance": np.array([0.5, 0.25]),
        "label": np.array([1, -1], dtype=np.int8),
        "notes": np.zeros((2, 100_000)),  # 2-D, but no column of ours: not even refused
    }
    np.savez(path, **arrays)
    data = bytearray(path.read_bytes())
    at = data.rindex(b"\x93NUMPY")  # the last member, "notes": a byte of its last values
    data[at + 1_500_000] ^= 0xFF
    path.write_bytes(bytes(data))
    store.ingest(
        path, task="retrieval", run="r", columns=["score=distance"], negate_score=True,
        git_commit=None,
    )  # fmt: skip
    assert store.con.execute("select score from scores order by seq").fetchall() == [
        (-0.5,),
        (-0.25,),
    ]
    with pytest.raises(InvalidInput, match=r"s\.npz: array 'notes' has shape \(2, 100000\)"):
        store.ingest(path, task="retrieval", run="s", columns=["score=notes"], git_commit=None)


def test_an_npz_member_shorter_than_its_header_says_is_refused_unread(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "s.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for name, n in (("group_id", 3), ("item_id", 3), ("score", 3), ("label", 3)):
            header = np.lib.format.header_data_from_array_1_0(np.zeros(0))
            header["shape"] = (n if name != "score" else 1 << 40,)
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array_header_1_0(member, header)
                member.write(bytes(8 * 3))
    with pytest.raises(InvalidInput, match="arrays have different lengths"):
        store.ingest(path, task="retrieval", run="r", git_commit=None)
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("group_id", "item_id", "score", "label"):
            header = np.lib.format.header_data_from_array_1_0(np.zeros(0))
            header["shape"] = (1 << 40,)
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array_header_1_0(member, header)
                member.write(bytes(8 * 3))
    with pytest.raises(InvalidInput, match="declares 8,796,093,022,208 bytes of data in a member"):
        store.ingest(path, task="retrieval", run="r", git_commit=None)


# -- 16. inputs that are not files ----------------------------------------------------------------


def _special(tmp_path: Path, kind: str) -> tuple[Path, str]:
    path = tmp_path / f"{kind}.csv"
    if kind == "device":
        return Path(os.devnull), "a device, not a file"
    if kind == "fifo":
        os.mkfifo(path)
        return path, "a FIFO (named pipe), not a file"
    if kind == "loop":
        path.symlink_to(path.name)
        return path, "a symbolic link loop, not a file"
    if kind == "dangling":
        path.symlink_to("gone.csv")
        return path, "a symbolic link to a missing file ('gone.csv')"
    if kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(path))
        return path, "a socket, not a file"
    if kind == "under a file":
        (tmp_path / "plain").write_text(GOOD)
        return tmp_path / "plain" / "s.csv", "cannot open: Not a directory"
    path.mkdir()
    return path, "a folder, not a file"


@pytest.mark.slow  # real processes: the installed evalstore command
@pytest.mark.parametrize(
    "kind", ["device", "fifo", "loop", "dangling", "socket", "under a file", "folder"]
)
@pytest.mark.parametrize("role", ["input", "groups"])
def test_what_is_not_a_file_is_named(seeded: Path, tmp_path: Path, kind: str, role: str) -> None:
    """/dev/null, a FIFO (which a read would wait on for ever) or a symlink loop read
    "no such file"; now each is named for what it is, for an input and for a groups file."""
    special, what = _special(tmp_path, kind)
    (tmp_path / "s.csv").write_text(GOOD)
    args = (
        [str(special)] if role == "input" else [str(tmp_path / "s.csv"), "--groups", str(special)]
    )
    before = snapshot(seeded)
    line = refused(run_cli("ingest", *args, "-t", "retrieval", "-r", "x", db=seeded))
    assert line == f"Error: {special}: {what}"
    assert snapshot(seeded) == before

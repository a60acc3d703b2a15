"""``evalstore ingest`` on AMD Zen 4 imports NumPy with its AVX-512 targets disabled, for its
AVX2 sorts (:mod:`evalstore.cli.numpy_sort`): when it does, and that what it stores is the
same byte for byte either way.

On a machine that is not Zen 4 both ingests of each case below take NumPy's own path, and the
comparison holds trivially; ``test_this_machine`` says which it is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import snapshot
from pose_scenes import scene
from test_cli_detection import GT, RESULTS

from evalstore.cli import numpy_sort
from evalstore.cli.numpy_sort import VARIABLE, slow_avx512_sort

ZEN4 = (
    "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
    "flags\t\t: fpu avx2 avx512f avx512bw\n"
)


@pytest.mark.parametrize(
    ("text", "slow"),
    [
        (ZEN4, True),
        (ZEN4 + "\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n", True),  # the first CPU's
        (ZEN4.replace(" avx512f avx512bw", ""), False),  # Zen 3: family 25, no AVX-512
        (ZEN4.replace(": 25", ": 26"), False),  # Zen 5
        (ZEN4.replace("AuthenticAMD", "GenuineIntel").replace(": 25", ": 6"), False),
        ("", False),
    ],
)
def test_which_cpus(text: str, slow: bool) -> None:
    assert slow_avx512_sort(text) is slow


def _probe(argv: list[str], env: dict[str, str] | None = None, numpy_first: bool = False) -> dict:
    """In a new process: prefer_avx2_sort(argv)'s answer, the variable after it, and the
    target NumPy's float64 ``exp`` runs on (X86_V4 is AVX-512)."""
    code = (
        "import json, os, sys\n"
        + ("import numpy\n" if numpy_first else "")
        + "from evalstore.cli.numpy_sort import prefer_avx2_sort, VARIABLE\n"
        f"did = prefer_avx2_sort({argv!r})\n"
        "import numpy\n"
        "from numpy._core._multiarray_umath import __cpu_targets_info__ as info\n"
        "print(json.dumps({'did': did, 'variable': os.environ.get(VARIABLE),\n"
        "                  'exp': info['exp']['dd']['current']}))\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != VARIABLE} | (env or {})
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, check=True)  # fmt: skip
    return dict(json.loads(done.stdout))


def _zen4_here() -> bool:
    return slow_avx512_sort(Path("/proc/cpuinfo").read_text()) and numpy_sort._numpy_names_known()


def test_this_machine() -> None:
    """Only ``ingest`` on Zen 4 disables the targets; the environment is left as it was."""
    here = _zen4_here()
    got = _probe(["ingest", "x.parquet"])
    assert got["did"] is here and got["variable"] is None
    if here:
        assert got["exp"] == "X86_V3", got
    for argv, env, first in (
        (["compare", "a", "b"], None, False),  # another command
        (["ingest", "x.parquet"], {VARIABLE: ""}, False),  # the user's choice, even empty
        (["ingest", "x.parquet"], None, True),  # NumPy imported before
        ([], None, False),
    ):
        got = _probe(argv, env, first)
        assert got["did"] is False, (argv, env, first)
        assert got["variable"] == (env or {}).get(VARIABLE), got
        if here and env is None:
            assert got["exp"] == "X86_V4", got


def test_a_numpy_that_refuses_starts_the_command_again() -> None:
    """A NumPy whose baseline holds the targets refuses the variable at import (here: its
    baseline, X86_V2, stands for them): the process starts again as given, without them."""
    code = (
        "import os, sys\n"
        "import evalstore.cli.numpy_sort as m\n"
        "m.AVX512_TARGETS = 'X86_V2'\n"
        "m.slow_avx512_sort = lambda text: True\n"
        "m._numpy_names_known = lambda: True\n"
        "print('start', repr(os.environ.get(m.VARIABLE)), flush=True)\n"
        "did = m.prefer_avx2_sort(['ingest'])\n"
        "import numpy\n"
        "print('ran', did, numpy.add(1, 2), flush=True)\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=environ, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["start None", "start ''", "ran False 3"], done.stdout


def _ranked(path: Path, rows: int, lists: int, *, f64: bool = False, decimals: int | None = None,
            text: bool = False) -> Path:  # fmt: skip
    rng = np.random.default_rng(rows + lists)
    label = np.where(rng.random(rows) < 0.2, 1, np.where(rng.random(rows) < 0.05, 0, -1))
    score = rng.standard_normal(rows) + (label == 1)
    if decimals is not None:
        score = score.round(decimals)
    item = np.arange(rows) // lists
    pq.write_table(pa.table({
        "group_id": (np.arange(rows) % lists).astype(np.int32),
        "item_id": pa.array([f"doc{i}" for i in item]) if text else item.astype(np.int32),
        "score": score.astype(np.float64 if f64 else np.float32),
        "label": label.astype(np.int8),
    }), path)  # fmt: skip
    return path


def _keypoints(tmp: Path) -> list[str]:
    matches, cameras, _ = scene(n_pairs=4, n_matches=3000)
    matches.write_csv(tmp / "m.csv")
    cameras.write_csv(tmp / "pairs.csv")
    return [str(tmp / "m.csv"), "-t", "keypoints", "--pairs", str(tmp / "pairs.csv")]


def _homographies(tmp: Path) -> list[str]:
    rng = np.random.default_rng(3)
    n = 20_000
    h = np.array([[1.01, 0.02, 5.0], [-0.01, 0.99, -3.0], [1e-5, 2e-5, 1.0]])
    xy0 = rng.uniform(0, 600, (n, 2))
    p = np.c_[xy0, np.ones(n)] @ h.T
    xy1 = p[:, :2] / p[:, 2:] + rng.normal(0, 2, (n, 2))
    pl.DataFrame({"pair_id": np.repeat(["a", "b"], n // 2), "x0": xy0[:, 0], "y0": xy0[:, 1],
                  "x1": xy1[:, 0], "y1": xy1[:, 1]}).write_parquet(tmp / "m.parquet")  # fmt: skip
    cols = {f"h{i}{j}": [h[i - 1, j - 1]] * 2 for i in (1, 2, 3) for j in (1, 2, 3)}
    pl.DataFrame({"pair_id": ["a", "b"], **cols, "width": [640] * 2, "height": [480] * 2}
                 ).write_csv(tmp / "pairs.csv")  # fmt: skip
    return [str(tmp / "m.parquet"), "-t", "keypoints", "--pairs", str(tmp / "pairs.csv")]


def _detections(tmp: Path) -> list[str]:
    (tmp / "gt.json").write_text(json.dumps(GT))
    (tmp / "dt.json").write_text(json.dumps(RESULTS))
    return [str(tmp / "dt.json"), "--format", "coco", "--coco-gt", str(tmp / "gt.json")]


CASES = {
    "lists float32": lambda t: [str(_ranked(t / "a.parquet", 60_000, 30)), "-t", "retrieval"],
    "one list float64": lambda t: [str(_ranked(t / "b.parquet", 50_000, 1, f64=True)),
                                   "-t", "verification"],
    "densely tied": lambda t: [str(_ranked(t / "c.parquet", 60_000, 3, decimals=1)),
                               "-t", "retrieval"],
    "text ids, tied": lambda t: [str(_ranked(t / "d.parquet", 30_000, 10, decimals=2,
                                             text=True)), "-t", "retrieval"],
    "keypoints, cameras": _keypoints,
    "keypoints, homographies": _homographies,
    "detections": _detections,
}  # fmt: skip

#: what differs between any two stores: the store's id, when its schema was made
_MADE = ("store_info", "schema_version")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_same_rows_either_way(tmp_path: Path, case: str) -> None:
    args = CASES[case](tmp_path)
    stores = []
    for name, env in (("avx2", {}), ("own", {VARIABLE: ""})):
        db = tmp_path / f"{name}.duckdb"
        environ = {k: v for k, v in os.environ.items() if k != VARIABLE} | env
        done = subprocess.run(
            [sys.executable, "-m", "evalstore", "ingest", *args, "-r", "e/x", "--db", str(db),
             "--git-commit", "abc", "--created-at", "2026-01-02T03:04:05"],
            capture_output=True, text=True, env=environ,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        stores.append({k: v for k, v in snapshot(db).items() if k not in _MADE})
    assert stores[0] == stores[1]
    assert sum(len(rows) for rows in stores[0].values()) > 10

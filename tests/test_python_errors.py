"""Errors name options as the caller spells them: keyword arguments from Python, flags from
the command line (one converted message of each module)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ranked

from evalstore import Store
from evalstore.errors import InvalidInput
from evalstore.ingest.options import IngestOptions

NO_GIT = {"git_commit": None}


def _file(tmp_path: Path) -> Path:
    data = ranked(seed=1)
    path = tmp_path / "r.parquet"
    pq.write_table(pa.table({k: np.asarray(v) for k, v in data.items()}), path)
    return path


@pytest.mark.parametrize(
    ("python", "message"),
    [
        ({"fmt": "trec"}, 'fmt="trec" needs qrels= FILE'),  # ingest/ranked.py
        ({"fmt": "nope"}, 'unknown fmt="nope"; use one of'),  # ingest/paths.py
        ({"created_at": "yesterday"}, 'created_at="yesterday" is not an ISO 8601 time'),
    ],
)
def test_python_names_keywords(
    db: Path, tmp_path: Path, python: dict[str, Any], message: str
) -> None:
    with Store(db) as store, pytest.raises(InvalidInput) as caught:
        store.ingest(_file(tmp_path), task="retrieval", run="a", **python, **NO_GIT)
    assert str(caught.value).startswith(message) and "--" not in str(caught.value)


def test_ingest_options_name_keywords() -> None:  # ingest/options.py
    with pytest.raises(InvalidInput, match=r'^pairs= does not apply to task="retrieval"$'):
        IngestOptions(task="retrieval", pairs="p.csv")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--format", "trec"], "Error: --format trec needs --qrels FILE"),
        (["--format", "nope"], "Error: unknown --format nope; use one of"),
        (["--created-at", "yesterday"], "Error: --created-at yesterday is not an ISO 8601 time"),
        (["--pairs", "p.csv"], "Error: --pairs does not apply to --task retrieval"),
    ],
)
def test_the_cli_names_flags(
    cli: Any, db: Path, tmp_path: Path, flags: list[str], message: str
) -> None:
    got = cli("ingest", str(_file(tmp_path)), "-r", "a", "-t", "retrieval", *flags)
    assert got.exit_code == 1
    assert message in got.output and "=" not in got.output.split("Error:", 1)[1].split(";")[0]

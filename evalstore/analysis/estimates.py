"""The homographies estimated from each image pair's matches, made when first needed.

Keypoint ingest stores the matches and their ground truth; the two RANSAC estimates of every
pair (``r11..r33`` image 1 -> 0 with ``n_inliers``, ``e11..e33`` image 0 -> 1, see
:func:`evalstore.core.geometry.estimate_pairs`) are made by :func:`ensure_estimates` the first
time a metric that reads them is evaluated for the run, inside that evaluation's write
transaction, and stored: later evaluations read them. The matches are read back in the order
ingest gave them (``seq``), so the estimates are the floats an ingest with ``estimate=True``
stores. A pending pair is one with ``estimated = false`` and no ``e_direction``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa

from evalstore.core import geometry
from evalstore.db import queries
from evalstore.errors import InvalidInput

if TYPE_CHECKING:
    from evalstore.db.connection import Database

__all__ = ["NEEDS_ESTIMATES", "ensure_estimates", "pending_runs", "with_estimates"]

#: the metrics whose SQL reads the estimates (pairs.e*, r*, n_inliers, e_direction)
NEEDS_ESTIMATES = frozenset(
    {"reprojection_error", "homography_accuracy", "homography_accuracy_superpoint",
     "homography_auc"}
)  # fmt: skip

_E = tuple(f"e{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_R = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))
_COPY = "_pairs_estimated"  # the temporary table of with_estimates


def pending_runs(store: Database, run_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(run_id, ``EXPERIMENT/NAME``) of each of ``run_ids`` with pairs not estimated yet."""
    rows = queries.fetch_rows(store.con, "store/pending_runs", {"runs": list(run_ids)})
    return [(int(r[0]), f"{r[1]}/{r[2]}") for r in rows]


def ensure_estimates(store: Database, run_ids: Sequence[int], *, needed_by: str) -> int:
    """Make and store the estimates of the runs' pending pairs; call it inside a transaction
    of ``store``. Returns the number of runs that had pairs to estimate (0: none).

    Args:
        needed_by: what needs them (a metric's name), for the message of a read-only store.

    Raises:
        InvalidInput: a read-only store with pending pairs (it cannot store them).
    """
    pending = pending_runs(store, run_ids)
    if not pending:
        return 0
    if store.read_only:
        run_id, name = pending[0]
        raise InvalidInput(
            f"run {name}: {needed_by} needs the homographies estimated from its matches, "
            "which are made on first use and stored; evaluate it once on a writable store "
            "(not read-only), or ingest it with --estimate"
        )
    for run_id, _ in pending:
        _estimate_run(store, run_id, "pairs")
    return len(pending)


def with_estimates(store: Database, run_id: int) -> str | None:
    """A temporary table of the run's pairs with every estimate made, when some are pending
    (None otherwise): what an export of a read-only store writes. Call it inside a
    transaction, which drops the table when it ends. Returns its name."""
    if not pending_runs(store, [run_id]):
        return None
    queries.run(store.con, "store/copy_run_pairs", {"run_id": run_id})
    _estimate_run(store, run_id, _COPY)
    return _COPY


def _estimate_run(store: Database, run_id: int, table: str) -> None:
    """Estimate the run's pending pairs and write the estimates into ``table``."""
    con = store.con
    pairs = queries.fetch(con, "store/pending_pairs", {"run_id": run_id})
    matches = queries.fetch(con, "store/pending_matches", {"run_id": run_id})
    bounds = np.zeros(pairs.height + 1, dtype=np.int64)
    np.cumsum(pairs["n_matches"].to_numpy(), out=bounds[1:])
    x0, y0, x1, y1 = (matches[c].to_numpy() for c in ("x0", "y0", "x1", "y1"))
    r, e, inliers = geometry.estimate_pairs(
        x0, y0, x1, y1, bounds, pairs["ransac_threshold"].fill_null(3.0).to_numpy()
    )
    columns = {"pair_id": pairs["pair_id"].to_arrow()}
    for values, names in ((e, _E), (r, _R)):
        for k, name in enumerate(names):
            v = np.ascontiguousarray(values[:, k])
            columns[name] = pa.array(v, pa.float64(), mask=np.isnan(v))
    columns["n_inliers"] = pa.array(inliers, pa.int32(), mask=inliers < 0)
    update = queries.template(
        "store/store_estimates", table=queries.quote_ident(table, {"pairs", _COPY})
    )
    con.register("_estimates", pa.table(columns))
    try:
        con.execute(update, queries.bind(update, {"run_id": run_id}))
    finally:
        # in a transaction that an error or a Ctrl-C aborted this fails too, and would
        # stand in for what stopped it
        with contextlib.suppress(duckdb.Error):
            con.unregister("_estimates")

"""The groups file of an ingest: one row of metadata per ranked list (``group_id``, an
optional ``n_positives`` override, slice columns such as ``sequence`` or ``difficulty``)."""

from __future__ import annotations

import duckdb
import polars as pl

from evalstore.db import queries
from evalstore.errors import InvalidInput
from evalstore.ingest.sources import READ_ERRORS, Source, first_line, names_text, open_source
from evalstore.ingest.validate import INT32, first_row, ids_text

__all__ = ["MAX_UNLISTED", "NO_GROUPS", "check_matched", "check_unlisted", "read_groups"]

#: the most positives a run's n_positives overrides may add beyond its lists' +1 labels, all
#: lists together: nDCG's ideal ranking holds a row for each (16,777,216 take seconds)
MAX_UNLISTED = 1 << 24


def read_groups(source: Source, fmt: str | None, task: str) -> pl.DataFrame:
    label, frame = open_source(source, fmt, 0, ["group_id"])[:2]  # ids as written
    if isinstance(frame, pl.LazyFrame):
        try:
            frame = frame.collect()
        except READ_ERRORS as exc:
            raise InvalidInput(f"{label}: cannot read: {first_line(exc)}") from None
    if "group_id" not in frame.columns:
        raise InvalidInput(
            f"{label}: missing column 'group_id' (columns: {names_text(frame.columns)})"
        )
    if frame["group_id"].dtype.is_float():
        raise InvalidInput(
            f"{label}: column 'group_id' holds floats; ids must be integers or strings"
        )
    gid = ids_text(frame["group_id"], label, "group_id")
    if gid.null_count() and task != "verification":
        raise InvalidInput(
            f"{label}: column 'group_id' row {first_row(gid.is_null()) + 1} is empty"
        )
    dup = gid.is_duplicated()
    if dup.any():
        raise InvalidInput(
            f"{label}: column 'group_id' row {first_row(dup) + 1}: "
            f"{gid[first_row(dup)]!r} appears twice"
        )
    if "n_positives" in frame.columns:
        npos = frame["n_positives"]
        if not npos.dtype.is_integer() and not (
            npos.dtype.is_float() and (npos.drop_nulls() == npos.drop_nulls().round()).all()
        ):
            raise InvalidInput(
                f"{label}: column 'n_positives' must hold whole numbers, found {npos.dtype}"
            )
        # as floats, which hold any integer type's range (a CSV's 2^64 is an Int128)
        size = npos.cast(pl.Float64)
        bad = (size < 0).fill_null(False)
        if bad.any():
            raise InvalidInput(
                f"{label}: column 'n_positives' row {first_row(bad) + 1} is negative"
            )
        big = (size > INT32[1]).fill_null(False)
        if big.any():
            raise InvalidInput(
                f"{label}: column 'n_positives' row {first_row(big) + 1} is "
                f"{npos[first_row(big)]}, more than {INT32[1]:,}"
            )
    else:
        npos = pl.Series("n_positives", [None] * frame.height, dtype=pl.Int64)
    slice_cols = [c for c in frame.columns if c not in ("group_id", "n_positives")]
    keys = pl.Series("keys", [slice_cols] * frame.height, dtype=pl.List(pl.String))
    values = (
        frame.select(
            pl.concat_list([pl.col(c).cast(pl.String) for c in slice_cols]).alias("values")
        )["values"]
        if slice_cols
        else pl.Series("values", [[]] * frame.height, dtype=pl.List(pl.String))
    )
    return pl.DataFrame(
        {"group_id": gid, "n_positives": npos.cast(pl.Int32), "keys": keys, "values": values}
    )


NO_GROUPS = pl.DataFrame(
    schema={
        "group_id": pl.String,
        "n_positives": pl.Int32,
        "keys": pl.List(pl.String),
        "values": pl.List(pl.String),
    }
)


def check_matched(groups: pl.DataFrame, names: pl.DataFrame, label: str, task: str) -> None:
    """Refuse groups-file rows whose ``group_id`` is no list of the rows ingested (``names``:
    the group_id of each list): a typo, whose ``n_positives`` and slices would describe no
    list and be lost.

    Raises:
        InvalidInput: naming the file, how many rows and the first ids.
    """
    lost = groups.join(names, on="group_id", how="anti", nulls_equal=True)["group_id"]
    if lost.len():
        shown = ", ".join(repr(g) for g in lost.head(3).to_list())
        more = f" and {lost.len() - 3:,} more" if lost.len() > 3 else ""
        raise InvalidInput(
            f"{label}: {lost.len():,} "
            + ("row matches" if lost.len() == 1 else "rows match")
            + f" no list of the {task} rows ingested: group_id {shown}{more}; each row "
            "describes a list ingested (a typo?)"
        )


def check_unlisted(con: duckdb.DuckDBPyConnection, run_id: int, task: str, label: str) -> None:
    """Refuse n_positives overrides that add more than :data:`MAX_UNLISTED` positives beyond
    the +1 labels of their lists, all together (read once the run's lists are indexed).

    Raises:
        InvalidInput: naming the file, the total and the list that adds the most.
    """
    added, group_id, most = queries.fetch_rows(
        con, "store/n_positives_unlisted", {"run_id": run_id, "task": task}
    )[0]
    if added is not None and added > MAX_UNLISTED:
        raise InvalidInput(
            f"{label}: column 'n_positives' adds {int(added):,} positives beyond the lists' +1 "
            f"labels (list {group_id!r} adds {int(most):,}), more than {MAX_UNLISTED:,} "
            "(2^24), which nDCG's ideal ranking can hold"
        )

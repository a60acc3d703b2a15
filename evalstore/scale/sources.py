"""An export folder as Spark's source: its manifest read through Spark's file systems and its
raw tables registered as temporary views, typed from the manifest.

Each raw table becomes a view read from its Parquet folder (``run_id`` from the partition
path); a table without a folder is an empty view. ``score_items`` is the lean view of the
ranked items that the metric SQL reads, as in the store.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalstore.db import queries
from evalstore.errors import EvalstoreError
from evalstore.scale.layout import (
    DETECTION_DERIVED,
    MANIFEST,
    PARTITION_COLUMN,
    POSE_TABLES,
    SPARK_TABLES,
    check_manifest,
)
from evalstore.scale.transpile import to_spark_sql

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SCORE_ITEMS", "forget_source", "register_source", "spark_type"]

_SCALARS = {
    "VARCHAR": "STRING",
    "BOOLEAN": "BOOLEAN",
    "TINYINT": "TINYINT",
    "SMALLINT": "SMALLINT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "FLOAT": "FLOAT",
    "DOUBLE": "DOUBLE",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP_NTZ",
}


def spark_type(duckdb_type: str) -> str:
    """The Spark SQL type of an exported DuckDB column type (``VARCHAR[]`` ->
    ``ARRAY<STRING>``, ``MAP(VARCHAR, VARCHAR)`` -> ``MAP<STRING, STRING>``)."""
    t = duckdb_type.strip().upper()
    if t.endswith("[]"):
        return f"ARRAY<{spark_type(t[:-2])}>"
    m = re.fullmatch(r"MAP\((.+?),\s*(.+)\)", t)
    if m:
        return f"MAP<{spark_type(m.group(1))}, {spark_type(m.group(2))}>"
    if t in _SCALARS:
        return _SCALARS[t]
    raise EvalstoreError(f"no Spark type for the exported column type {duckdb_type!r}")


def _schema_ddl(columns: Sequence[Mapping[str, Any]]) -> str:
    fields = [f"`{c['name']}` {spark_type(c['type'])}" for c in columns]
    return ", ".join([*fields, f"`{PARTITION_COLUMN}` INT"])


def _is_url(source: str) -> bool:
    return "://" in source


def _read_manifest(spark: SparkSession, source: str) -> tuple[dict[str, Any], str]:
    where = f"{source.rstrip('/')}/{MANIFEST}"
    try:
        if _is_url(source):  # s3a://, hdfs://, abfss://...: read through Spark's file systems
            row = spark.read.text(where, wholetext=True).first()
            text = row[0] if row is not None else ""
        else:
            text = Path(where).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvalstoreError(f"{source}: not an evalstore export (no {MANIFEST})") from None
    except Exception as exc:  # a Spark or OS error reading a remote file
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise EvalstoreError(f"{where}: cannot read the manifest: {first}") from None
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise EvalstoreError(f"{where}: cannot read the manifest: {exc}") from None
    return check_manifest(manifest, where), text


def _has_partitions(source: str, table: str, manifest: Mapping[str, Any]) -> bool:
    if _is_url(source):
        return any(int(r["rows"].get(table, 0)) > 0 for r in manifest["runs"])
    folder = Path(source) / table
    return folder.is_dir() and any(folder.glob(f"{PARTITION_COLUMN}=*"))


#: The derived tables of a store that an export leaves out and Spark computes from the rows.
INDEX_VIEWS = ("list_stats", "positive_ranks", "tied_ranks")

#: The columns of the ``score_items`` view (sql/schema/007_lean_rows.sql).
SCORE_ITEMS = ("run_id", "task", "list_id", "score", "label", "seq")

# What each session has registered: id(session) -> (source, manifest text).
_REGISTERED: dict[int, tuple[str, str]] = {}
_REGISTER_LOCK = threading.Lock()  # metrics may be computed from several threads at once


def register_source(spark: SparkSession, source_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Register the raw tables of an export folder as temporary views of ``spark`` (``runs``,
    ``scores``, ``groups``, ``matches``, ``pairs``, ``outcomes``), typed from the manifest, with
    ``run_id`` from the partition path; a table without a folder is an empty view. Returns
    the manifest. Registering the same unchanged export again is a no-op."""
    source = str(source_dir)
    if not _is_url(source):
        source = str(Path(source).resolve())
    manifest, text = _read_manifest(spark, source)
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    with _REGISTER_LOCK:
        if _REGISTERED.get(id(spark)) != (source, text):
            try:
                _register(spark, source, manifest)
            except (PySparkException, Py4JError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise EvalstoreError(f"{source}: Spark cannot read the export: {first}") from None
            _REGISTERED[id(spark)] = (source, text)
    return manifest


def forget_source(spark: SparkSession) -> None:
    """Forget what ``spark`` has registered (before the session stops): the next
    :func:`register_source` with it registers the views again."""
    with _REGISTER_LOCK:
        _REGISTERED.pop(id(spark), None)


def _register(spark: SparkSession, source: str, manifest: Mapping[str, Any]) -> None:
    for table in SPARK_TABLES:
        spec = manifest["tables"].get(table)
        if spec is None and (
            table in DETECTION_DERIVED or table in POSE_TABLES or table == "det_categories"
        ):
            continue  # an export before detection runs or cameras: their metrics find no table
        if spec is None:
            raise EvalstoreError(f"{source}: the manifest has no table {table!r}")
        if table in ("scores", "groups") and "list_id" not in {c["name"] for c in spec["columns"]}:
            raise EvalstoreError(
                f"{source}: an export of schema version {manifest['schema_version']}, before "
                "lists had ids; export the runs again (or import it and export from there)"
            )
        ddl = _schema_ddl(spec["columns"])
        if _has_partitions(source, table, manifest):
            path = f"{source.rstrip('/')}/{table}"
            frame = spark.read.schema(ddl).parquet(path)
        else:
            frame = spark.createDataFrame([], schema=ddl)
        if table in ("groups", "scores"):  # list ids keyed by run, in both
            frame = frame.withColumn("list_id", _run_list_key())
        frame.createOrReplaceTempView(table)
    # the lean view of the ranked items that metric SQL reads, as in the store
    spark.table("scores").select(*SCORE_ITEMS).createOrReplaceTempView("score_items")
    # the list index that a store keeps (sql/lib/list_index.sql), from the rows: computed by
    # the first query that reads it and kept for the session's later ones (a few rows per
    # list, as ingest stores it)
    for view in INDEX_VIEWS:
        if spark.catalog.tableExists(view):
            spark.catalog.uncacheTable(view)
        text = to_spark_sql(queries.load(f"store/{view}_view").text)
        spark.sql(text).persist().createOrReplaceTempView(view)


def _run_list_key() -> Any:
    """list_id made unique per run (as a BIGINT): within one store list ids never repeat, but
    one export folder may hold runs from copies of a store (a backup restored and written
    again), whose list ids can."""
    from pyspark.sql import functions as F

    return F.col("run_id").cast("bigint") * F.lit(1 << 32) + F.col("list_id").cast("bigint")

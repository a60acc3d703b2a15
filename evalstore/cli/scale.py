"""evalstore export and import: Parquet exports of the raw tables (for Spark)."""

from __future__ import annotations

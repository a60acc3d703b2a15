"""Scale-out: Parquet exports of the raw tables, their import, and the metric SQL on Spark."""

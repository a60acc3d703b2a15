"""Exporting into a folder that holds an export already: it must be an export of the same
store (run ids of two stores overlap, and Spark finds a run by its id), with the same columns
in the tables it has. A version-1 export (before checksums and logged_values) is taken over:
its runs get the SHA-256 of their files and its manifest the logged_values table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalstore.errors import EvalstoreError
from evalstore.scale.checksums import file_sha256
from evalstore.scale.layout import FORMAT_VERSION, PART, partition_path

__all__ = ["check_same_store", "merge_into"]


def merge_into(
    manifest: dict[str, Any],
    fresh: dict[str, Any],
    root: Path,
    names: Mapping[int, tuple[str, str]],
) -> dict[str, Any]:
    """The manifest of an existing export, ready to take runs of this store: it must be an
    export of this store, and the tables it has must have the same columns (a schema change
    elsewhere, e.g. in metric_values, is fine; a table it lacks, as logged_values in format
    version 1, is added). The runs of a version-1 export get the SHA-256 of their files.
    ``names``: EXPERIMENT, NAME of the runs to export, by id."""
    check_same_store(manifest, fresh["store_id"], root, names)
    tables = manifest["tables"]
    if not isinstance(tables, dict) or any(fresh["tables"].get(t) != c for t, c in tables.items()):
        raise EvalstoreError(
            f"{root} holds an export of schema version {manifest['schema_version']} with other "
            f"raw tables or columns than this store's (schema {fresh['schema_version']}); "
            "export into a new folder"
        )
    version = max(int(manifest["schema_version"]), int(fresh["schema_version"]))
    runs = [
        entry if "sha256" in entry else _with_checksums(root, entry) for entry in manifest["runs"]
    ]
    return {
        **manifest,
        "format_version": FORMAT_VERSION,
        "schema_version": version,
        "store_id": fresh["store_id"],
        "tables": fresh["tables"],
        "runs": runs,
    }


def _with_checksums(root: Path, entry: Mapping[str, Any]) -> dict[str, Any]:
    """A run of a version-1 export with the SHA-256 of each of its files (a missing one is
    left out: the import then names it)."""
    files = {
        t: partition_path(root, t, entry["run_id"]) / PART for t, n in entry["rows"].items() if n
    }
    return {**entry, "sha256": {t: file_sha256(f) for t, f in files.items() if f.is_file()}}


def check_same_store(
    manifest: Mapping[str, Any],
    store_id: str,
    root: Path,
    names: Mapping[int, tuple[str, str]],
) -> None:
    """Refuse to export into a folder that holds runs of another store. An export written
    before stores had an identity is taken as this store's when every run it shares an id
    with has the same EXPERIMENT/NAME here."""
    theirs = manifest.get("store_id")
    if theirs is not None and theirs != store_id:
        raise EvalstoreError(
            f"{root} holds an export of another store (store id {theirs}; this store is "
            f"{store_id}); run ids of two stores overlap, so one folder holds one store's "
            "runs: export into a new folder (or import that export into this store first)"
        )
    if theirs is None:
        for entry in manifest["runs"]:
            here = names.get(int(entry["run_id"]))
            if here is not None and here != (entry["experiment"], entry["name"]):
                raise EvalstoreError(
                    f"{root} holds run id {entry['run_id']} as {entry['experiment']}/"
                    f"{entry['name']}, which is {here[0]}/{here[1]} in this store: it is an "
                    "export of another store; export into a new folder"
                )

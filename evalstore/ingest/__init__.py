"""Ingest: raw outputs into a run, validated, in one transaction.

The modules, each importing only those above it in this list (the ingest contract in
pyproject.toml); below them :mod:`evalstore.runs`, :mod:`evalstore.metrics`,
:mod:`evalstore.db` and :mod:`evalstore.core`:

- :mod:`~evalstore.ingest.handoff`, :mod:`~evalstore.ingest.exact`,
  :mod:`~evalstore.ingest.npz`: reader threads handing batches over; scores a float64 holds;
  ``.npz`` headers checked before arrays.

- :mod:`~evalstore.ingest.paths`, :mod:`~evalstore.ingest.spec`: without polars: input files
  checked, the column mapping; the ingest's spec, tasks, label conventions and label checks.
- :mod:`~evalstore.ingest.sources`: files and frames opened with polars.
- :mod:`~evalstore.ingest.validate`: ranked-list rows checked batch by batch; the row table.
- :mod:`~evalstore.ingest.lists`: the per-list metadata file.
- :mod:`~evalstore.ingest.written`, :mod:`~evalstore.ingest.write`: the transaction of a
  ranked-list ingest (the second adds a groups file's rows, read with polars).
- :mod:`~evalstore.ingest.direct_plan`: whether DuckDB may read a Parquet input itself: a
  table of (predicate, reason) rows, the first that holds being why the ingest streams.
- :mod:`~evalstore.ingest.stream` and :mod:`~evalstore.ingest.direct`: the two ways rows get
  into DuckDB (batches through Arrow; Parquet read by DuckDB itself).
- :mod:`~evalstore.ingest.ranked`: :func:`ingest`, the entry point for ranked lists;
  :mod:`~evalstore.ingest.parquet_direct`: the direct path alone, without polars (the light
  path of ``evalstore ingest``).
- :mod:`~evalstore.ingest.frames`, :mod:`~evalstore.ingest.cameras`,
  :mod:`~evalstore.ingest.truth`, :mod:`~evalstore.ingest.keypoints`,
  :mod:`~evalstore.ingest.outcomes`: keypoint matches with their ground truth (homographies,
  disparities, or cameras and poses), and counted outcomes.
- :mod:`~evalstore.ingest.formats`: readers of the field's file formats (PASCAL VOC, HPatches
  descriptors and task files).
- :mod:`~evalstore.ingest.hpatches`: :func:`ingest_hpatches`, an HPatches descriptor folder's
  three tasks into one run.
- :mod:`~evalstore.ingest.options`: :class:`IngestOptions`, the options of ``evalstore
  ingest`` and which apply to which task; the entry point they name.

The package imports each name on first use (a module imports only what it needs).
Every entry point takes the run's name and metadata as one
:class:`~evalstore.runs.meta.RunMeta` (``meta=``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalstore.lazy import attributes

if TYPE_CHECKING:
    from evalstore.ingest.hpatches import ingest_hpatches
    from evalstore.ingest.keypoints import ingest_keypoints
    from evalstore.ingest.options import IngestOptions
    from evalstore.ingest.outcomes import ingest_outcomes
    from evalstore.ingest.paths import FORMATS, parse_columns
    from evalstore.ingest.ranked import ingest
    from evalstore.ingest.sources import Source
    from evalstore.ingest.spec import LABEL_CONVENTIONS, TASKS
    from evalstore.ingest.written import IngestResult

__all__ = [
    "FORMATS",
    "LABEL_CONVENTIONS",
    "TASKS",
    "IngestOptions",
    "IngestResult",
    "Source",
    "ingest",
    "ingest_hpatches",
    "ingest_keypoints",
    "ingest_outcomes",
    "parse_columns",
]

#: public name -> the module that defines it, imported on first access: a module of the
#: package imports only what it needs (the direct path of ``evalstore ingest`` neither
#: polars nor the HPatches, keypoint and detection readers)
_LAZY = {
    "FORMATS": "evalstore.ingest.paths",
    "LABEL_CONVENTIONS": "evalstore.ingest.spec",
    "TASKS": "evalstore.ingest.spec",
    "IngestOptions": "evalstore.ingest.options",
    "IngestResult": "evalstore.ingest.written",
    "Source": "evalstore.ingest.sources",
    "ingest": "evalstore.ingest.ranked",
    "ingest_hpatches": "evalstore.ingest.hpatches",
    "ingest_keypoints": "evalstore.ingest.keypoints",
    "ingest_outcomes": "evalstore.ingest.outcomes",
    "parse_columns": "evalstore.ingest.paths",
}

if not TYPE_CHECKING:  # type checkers read the imports above; a misspelt name stays an error
    __getattr__ = attributes(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

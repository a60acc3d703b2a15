"""Errors raised by evalstore.

Every message names the run, file, column or row at fault, so that the CLI can print it as one
line. Any other exception escaping the library is a bug.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "FLAGS",
    "EvalstoreError",
    "Interrupted",
    "InvalidInput",
    "RunExists",
    "RunNotFound",
    "SchemaError",
    "StoreLocked",
    "cli_spelling",
    "option",
    "spelled",
]

#: The command line's spelling of an option a message names by its Python keyword: the
#: flag, and whether it takes a value (``keep_tags=False`` is ``--replace-tags``).
FLAGS: dict[str, tuple[str, bool]] = {
    "columns": ("--column", True),
    "labels": ("--labels", True),
    "replace": ("--replace", False),
    "append": ("--append", False),
    "keep_tags": ("--replace-tags", False),
    "task": ("--task", True),
    "fmt": ("--format", True),
    "experiment": ("--experiment", True),
    "created_at": ("--created-at", True),
    "negate_score": ("--negate-score", False),
    "groups": ("--groups", True),
    "voc_gt": ("--voc-gt", True),
    "qrels": ("--qrels", True),
    "pairs": ("--pairs", True),
    "homography_dir": ("--homography-dir", True),
    "disparity_dir": ("--disparity-dir", True),
    "disparity_scale": ("--disparity-scale", True),
    "estimate": ("--estimate", False),
    "hpatches_tasks": ("--hpatches-tasks", True),
    "distance": ("--distance", True),
    "hpatches_split": ("--hpatches-split", True),
    "hpatches_distractors": ("--hpatches-distractors", True),
    "coco_gt": ("--coco-gt", True),
    "voc_annotations": ("--voc-annotations", True),
    "voc_imageset": ("--voc-imageset", True),
    "boxes_gt": ("--boxes-gt", True),
    "box_format": ("--box-format", True),
    "step": ("--step", True),
    "resume": ("--resume", False),
    "limit": ("--limit", True),
    "by": ("--by", True),
    "where": ("--where", True),
    # Store.ingest_hpatches's keywords
    "split": ("--hpatches-split", True),
    "distractors": ("--hpatches-distractors", True),
    "tasks_dir": ("--hpatches-tasks", True),
}

# a flag of the process, not a context variable: a command's work may run in threads of its own
_CLI = {"on": False}


def option(keyword: str, value: object = None) -> str:
    """An option as a message names it: by its keyword argument from Python
    (``replace=True``, ``labels="01"``, ``columns=`` without a value), by its flag inside
    :func:`cli_spelling` (``--replace``, ``--labels 01``, ``--column``)."""
    if _CLI["on"]:
        flag, takes_value = FLAGS[keyword]
        return f"{flag} {value}" if takes_value and value is not None else flag
    if value is None:
        return f"{keyword}="
    if keyword == "columns" and isinstance(value, str) and "=" in value:  # OURS=THEIRS
        ours, _, theirs = value.partition("=")
        return f'columns={{"{ours}": "{theirs}"}}'
    return f'{keyword}="{value}"' if isinstance(value, str) else f"{keyword}={value!r}"


def spelled(python: str, cli: str) -> str:
    """What a message names as the caller spells it: ``python`` from Python (a method's
    name, ``data[0]``), ``cli`` inside :func:`cli_spelling` (a flag, ``input #1``)."""
    return cli if _CLI["on"] else python


@contextmanager
def cli_spelling() -> Iterator[None]:
    """Messages made inside name options by their command-line flags (:func:`option`)."""
    before, _CLI["on"] = _CLI["on"], True
    try:
        yield
    finally:
        _CLI["on"] = before


class EvalstoreError(Exception):
    """Base class of every error evalstore raises on purpose."""

    #: the CLI's exit status for it
    exit_code = 1


class Interrupted(EvalstoreError):
    """The user stopped a command (Ctrl-C); the message says what the store holds now."""

    exit_code = 130


class InvalidInput(EvalstoreError, ValueError):
    """Input data or arguments that break the data model (bad column, NaN score, bad label...)."""


class RunNotFound(EvalstoreError, LookupError):
    """No run matches the given reference, or the reference is ambiguous."""


class RunExists(EvalstoreError):
    """A run of that name already exists in the experiment."""


class StoreLocked(EvalstoreError):
    """Another process holds the database file."""


class SchemaError(EvalstoreError):
    """The database file has a schema this version cannot read (newer, or not evalstore's)."""

"""Errors raised by evalstore.

Every message names the run, file, column or row at fault, so that the CLI can print it as one
line. Any other exception escaping the library is a bug.
"""

from __future__ import annotations

__all__ = [
    "EvalstoreError",
    "Interrupted",
    "InvalidInput",
    "RunExists",
    "RunNotFound",
    "SchemaError",
    "StoreLocked",
]


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

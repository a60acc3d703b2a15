"""The run-metadata value :class:`RunMeta`: what a new run records besides its rows, checked
in one place.

Every ingest entry point (:meth:`evalstore.Store.ingest` and its siblings,
:mod:`evalstore.ingest`, the ``evalstore ingest`` command) takes one ``RunMeta`` and passes it
down unchanged; :func:`run_meta` builds it from the separate keywords (``run=``,
``experiment=``, ``params=``...) those entry points still accept for compatibility.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from evalstore.errors import InvalidInput, option

__all__ = [
    "DEFAULT_EXPERIMENT",
    "RunMeta",
    "current_commit",
    "parse_params",
    "parse_time",
    "run_meta",
    "split_ref",
]

DEFAULT_EXPERIMENT = "default"

Params = Iterable[str] | Mapping[str, Any] | None


@dataclass(frozen=True, init=False)
class RunMeta:
    """A new run's name and metadata, and how it meets a run of that name: checked when made.

    >>> meta = RunMeta("hardnet/lr-0.01", params=["lr=0.01"], tags=["baseline"],
    ...                created_at="2026-05-01T12:00", git_commit=None)
    >>> meta.experiment, meta.name, meta.params, meta.tags
    ('hardnet', 'lr-0.01', {'lr': 0.01}, ('baseline',))
    >>> RunMeta("a", replace=True, append=True)
    Traceback (most recent call last):
    ...
    evalstore.errors.InvalidInput: replace=True and append=True exclude each other

    Args:
        run: ``NAME`` or ``EXPERIMENT/NAME``, kept as given (:attr:`experiment` and
            :attr:`name` are the two parts it names).
        experiment: the experiment of a bare ``run`` name (default ``default``); once made,
            the run's experiment.
        params: ``{"lr": 0.1}`` or ``["lr=0.1"]`` (values read as JSON where they parse).
        tags: the run's tags (repeats dropped, order kept).
        notes: free text.
        created_at: an ISO 8601 time or a datetime (stored as naive UTC); default: now.
        git_commit: the commit to record; ``True`` (the default) reads the current
            directory's, ``None`` or ``False`` records none.
        replace: replace a run of that name, atomically. The run keeps its id; its rows,
            values and step runs go; params, notes, commit and time become these.
        keep_tags: with ``replace``, keep the replaced run's tags, ``tags`` added after them
            (the default); false: the run's tags become ``tags`` alone.
        append: add a task to a run of that name that does not have it yet.

    Raises:
        InvalidInput: one line naming the field: an empty run name or one whose experiment
            differs from ``experiment``, an empty tag, a param that is not ``key=value`` (or
            given twice, or a name no ``v_runs`` column can spell), a ``created_at`` that is
            not ISO 8601, ``replace`` with ``append``.
    """

    run: str
    experiment: str
    name: str = field(init=False)
    params: dict[str, Any]
    tags: tuple[str, ...]
    notes: str | None
    created_at: datetime
    git_commit: str | None
    replace: bool
    append: bool
    keep_tags: bool

    def __init__(
        self,
        run: str,
        *,
        experiment: str | None = None,
        params: Params = None,
        tags: Iterable[str] = (),
        notes: str | None = None,
        created_at: str | datetime | None = None,
        git_commit: str | bool | None = True,
        replace: bool = False,
        append: bool = False,
        keep_tags: bool = True,
    ) -> None:
        if replace and append:
            raise InvalidInput(
                f"{option('replace', True)} and {option('append', True)} exclude each other"
            )
        if not keep_tags and not replace:
            raise InvalidInput(f"{option('keep_tags', False)} goes with {option('replace', True)}")
        exp, name = split_ref(run, experiment)
        unique = tuple(dict.fromkeys(tags))
        if any(not t or not t.strip() for t in unique):
            raise InvalidInput("a tag cannot be empty")
        commit = current_commit() if git_commit is True else (git_commit or None)
        when = parse_time(created_at)
        values = {"run": run, "experiment": exp, "name": name, "params": parse_params(params),
                  "tags": unique, "notes": notes, "created_at": when, "git_commit": commit,
                  "replace": bool(replace), "append": bool(append),
                  "keep_tags": bool(keep_tags)}  # fmt: skip
        for key, value in values.items():
            object.__setattr__(self, key, value)

    @property
    def ref(self) -> str:
        """``EXPERIMENT/NAME``."""
        return f"{self.experiment}/{self.name}"


def run_meta(
    meta: RunMeta | None,
    *,
    run: str | None,
    experiment: str | None = None,
    params: Params = None,
    tags: Iterable[str] = (),
    notes: str | None = None,
    created_at: str | datetime | None = None,
    git_commit: str | bool | None = True,
    replace: bool = False,
    append: bool = False,
    keep_tags: bool = True,
) -> RunMeta:
    """The run metadata of an ingest entry point: ``meta``, or the :class:`RunMeta` of the
    separate keywords kept for compatibility (``run=``, ``experiment=``...).

    Raises:
        TypeError: ``meta`` together with any of the keywords (one not at its default), or
            neither ``meta`` nor ``run``.
        InvalidInput: as :class:`RunMeta`.
    """
    if meta is None:
        if run is None:
            raise TypeError("missing the run: pass meta=RunMeta(...) (or run=)")
        return RunMeta(run, experiment=experiment, params=params, tags=tags, notes=notes,
                       created_at=created_at, git_commit=git_commit, replace=replace,
                       append=append, keep_tags=keep_tags)  # fmt: skip
    keywords = {"run": run is not None, "experiment": experiment is not None,
                "params": params is not None, "tags": bool(tuple(tags)), "notes": notes is not None,
                "created_at": created_at is not None, "git_commit": git_commit is not True,
                "replace": replace, "append": append, "keep_tags": not keep_tags}  # fmt: skip
    given = [f"{key}=" for key, passed in keywords.items() if passed]
    if given:
        raise TypeError(
            f"the run metadata is given twice, as meta= and as {', '.join(given)}: pass it "
            "in meta=RunMeta(...) alone"
        )
    return meta


def split_ref(ref: str, experiment: str | None = None) -> tuple[str, str]:
    """Split ``EXPERIMENT/NAME`` (or ``NAME`` with ``experiment``) into its two parts."""
    if "/" in ref:
        exp, name = ref.split("/", 1)
        if experiment is not None and experiment != exp:
            raise InvalidInput(
                f"run {ref!r} names experiment {exp!r} but {option('experiment', experiment)}"
            )
    else:
        exp, name = experiment or DEFAULT_EXPERIMENT, ref
    if not exp or not name or not name.strip():
        raise InvalidInput(f"run name {ref!r} is empty")
    return exp, name


def parse_params(items: Params) -> dict[str, Any]:
    """Parse ``key=value`` strings; values are read as JSON when they parse (``0.1`` -> 0.1,
    ``true`` -> True, ``[1,2]`` -> list), else kept as strings.

    Raises:
        InvalidInput: an item without ``=`` or with an empty key, a repeated key, or a key
            no ``v_runs`` column can spell (not text, a NUL character, not valid Unicode).
    """
    if items is None:
        return {}
    if isinstance(items, Mapping):
        for key in items:
            _check_key(key)
        return dict(items)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInput(f"param {item!r} is not key=value")
        if key in out:
            raise InvalidInput(f"param {key!r} given twice")
        _check_key(key)
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, float) and value != value:  # NaN is not valid JSON in DuckDB
            value = raw
        out[key] = value
    return out


def _check_key(key: object) -> None:
    """Refuse a parameter name that no ``v_runs`` column can spell exactly.

    Raises:
        InvalidInput: a name that is not text, holds a NUL character, or is not valid
            Unicode (e.g. undecodable bytes of a command line).
    """
    if not isinstance(key, str):
        raise InvalidInput(f"param name {key!r} is not text")
    if "\x00" in key:
        raise InvalidInput(f"param name {key!r} holds a NUL character")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInput(f"param name {key!r} is not valid UTF-8 text") from None


def parse_time(value: str | datetime | None) -> datetime:
    """A naive UTC timestamp from an ISO 8601 string or datetime; now when ``None``."""
    if value is None:
        return datetime.now(timezone.utc).replace(tzinfo=None)
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidInput(
                f"{option('created_at', value)} is not an ISO 8601 time (e.g. 2026-05-01T12:00)"
            ) from None
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc).replace(tzinfo=None)
    return value


def current_commit(cwd: str | None = None) -> str | None:
    """The commit checked out in ``cwd`` (the current directory), or ``None`` outside git."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None

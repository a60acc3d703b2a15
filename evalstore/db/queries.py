"""Named SQL queries kept as files under ``sql/``, and the one place that runs them.

A file holds either one query (its stem is the name: ``sql/metrics/ap.sql`` -> ``metrics/ap``)
or several, each introduced by a ``-- name: NAME`` line (``sql/store/runs.sql`` with
``-- name: insert_run`` -> ``store/insert_run``). ``sql/README.md`` describes the whole
mechanism; in short, a query's text holds two kinds of holes:

- ``$name``: a value, always bound by DuckDB (:func:`bind`), never written into the text;
- ``{name}``: a piece of SQL text that cannot be bound, filled by :func:`fill` in one pass.
  Either a ``-- @include lib/x.sql key=value`` line fills them in the included fragment when
  the catalogue is read (constants such as a comparison operator or a grid step), or
  :func:`template` fills them at run time with identifiers quoted by :func:`quote_ident` /
  :func:`quote_name` (from an allow-list or the store's own catalogue) and literals made by
  :func:`literal`.

A hole that nothing fills, or a value for a hole the text does not have, is an
:class:`~evalstore.errors.EvalstoreError` naming the query and the hole. One macro is expanded
when a query is read: ``sum_exact(x)`` is the exact sum of doubles in fixed point
(:func:`expand_sum_exact`), so that a metric's file reads as its formula.

A query's definition id (:attr:`Query.sha`) hashes its text without comments and with
whitespace folded, so that editing a comment leaves cached metric values fresh.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from evalstore.db.sum_exact import expand_sum_exact
from evalstore.errors import EvalstoreError

if TYPE_CHECKING:
    import polars as pl  # DuckDB's .pl() imports it when a frame is asked for

__all__ = [
    "Query",
    "bind",
    "checked",
    "expand_sum_exact",
    "fetch",
    "fetch_columns",
    "fetch_rows",
    "fill",
    "holes",
    "literal",
    "load",
    "names_with_prefix",
    "normalized",
    "quote_ident",
    "quote_name",
    "run",
    "sql_dir",
    "template",
]

_NAME_LINE = re.compile(r"^--\s*name:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$", re.MULTILINE)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_INCLUDE = re.compile(r"^--\s*@include\s+(\S+)((?:\s+[a-z_]+=\S+)*)\s*$", re.MULTILINE)
_ANY_INCLUDE = re.compile(r"^[ \t]*--[ \t]*@include\b.*$", re.MULTILINE)
# a query's name: folders and a file stem (or a -- name:) of sql/, never `..` or a full path
_QUERY_NAME = re.compile(r"^[A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)*$")


def _expand(text: str, root: Path, depth: int = 0) -> str:
    """Replace each ``-- @include lib/x.sql key=value ...`` line by that file's text, with
    ``{key}`` set to ``value``: shared CTEs are written once and every query stays one
    self-contained statement (which is what runs, what is hashed and what transpiles).
    A key that names no ``{hole}`` of the fragment is refused (a misspelt key would leave
    the hole it meant unfilled)."""
    if depth > 5:
        raise EvalstoreError("SQL includes nest too deep")

    def include(match: re.Match[str]) -> str:
        path = (root / match.group(1)).resolve()
        at = f"an include cannot be read: {match.group(1)}"
        if not path.is_relative_to(root.resolve()) or path.suffix != ".sql":
            raise EvalstoreError(f"{at} is not a .sql file under {root} (includes come from there)")
        try:
            body = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise EvalstoreError(f"{at}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise EvalstoreError(f"{at}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        parts = dict(pair.split("=", 1) for pair in match.group(2).split())
        nested = " ".join(m.group(0) for m in _INCLUDE.finditer(body))  # a nested include's
        unknown = sorted(set(parts) - holes(normalized(body)) - holes(nested))
        if unknown:
            raise EvalstoreError(
                f"the include of {match.group(1)} sets {{{unknown[0]}}}, a hole it does not have"
            )
        return _expand(fill(body, parts).strip(), root, depth + 1)

    for line in _ANY_INCLUDE.findall(text):
        if not _INCLUDE.fullmatch(line):  # e.g. a key with a digit: else left as a comment
            raise EvalstoreError(f"a malformed include: {line.strip()!r} (keys are a-z and _)")
    return _INCLUDE.sub(include, text)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
# a string literal or quoted identifier (kept whole), or a run of comments and white space
_NOISE = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")|((?:\s+|--[^\n]*|/\*.*?\*/)+)", re.S)
_STRING = re.compile(r"'(?:[^']|'')*'")
_VALUE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def holes(text: str) -> set[str]:
    """The names of the ``{name}`` holes of ``text`` (string literals included: an include
    may set one there).

    >>> sorted(holes("select {col} from t where x {cmp} $at"))
    ['cmp', 'col']
    """
    return set(_PLACEHOLDER.findall(text))


def fill(text: str, parts: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` in ``parts`` replaced by its value, in one pass (a value
    is never read again as a placeholder); other placeholders stay as they are.

    >>> fill("select {col} from t where x {cmp} $at", {"col": '"score"', "cmp": "<="})
    'select "score" from t where x <= $at'
    """
    return _PLACEHOLDER.sub(lambda m: parts.get(m.group(1), m.group(0)), text)


def normalized(text: str, *, keep_lines: bool = False) -> str:
    r"""``text`` without comments and with white space folded to one space (or, with
    ``keep_lines``, without comments only); string literals and quoted names are kept.

    >>> normalized("select 1 -- one\n  ,   'a  -- b'  /* c */ from t\n")
    "select 1 , 'a  -- b' from t"
    """

    def keep(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(1)
        gap = m.group(2)
        if keep_lines:  # drop comments, keep the line breaks and indentation around them
            return re.sub(r"--[^\n]*|/\*.*?\*/", "", gap, flags=re.S)
        return " "

    return _NOISE.sub(keep, text).strip()


@dataclass(frozen=True)
class Query:
    """One named query: its text (includes expanded) and its definition id."""

    name: str
    text: str
    path: Path

    @functools.cached_property
    def sha(self) -> str:
        """SHA-256 of the text without comments and with white space folded: a comment or a
        re-indent does not change a definition, any other edit does (computed once: the
        cache of metric values asks it of every metric it checks)."""
        return hashlib.sha256(normalized(self.text).encode()).hexdigest()


@functools.cache
def sql_dir() -> Path:
    """The ``sql/`` folder: inside the installed package, or at the top of a source checkout
    (found once a process: each query's load asks it)."""
    package = Path(__file__).resolve().parent.parent  # evalstore/
    for candidate in (package / "sql", package.parent / "sql"):
        if (candidate / "schema").is_dir():
            return candidate
    raise EvalstoreError(f"cannot find evalstore's sql/ folder next to {package}")


@functools.cache
def _folder(root: Path, folder: str) -> dict[str, Query]:
    """The queries of one folder of ``sql/`` (a name's part before its last ``/``): a
    command reads the few files it needs, not all of them."""
    queries: dict[str, Query] = {}
    if folder == "lib":  # fragments, only included
        return queries
    for path in sorted((root / folder).glob("*.sql")):
        rel = path.relative_to(root).with_suffix("")
        try:
            text = expand_sum_exact(_expand(path.read_text(), root))
        except EvalstoreError as exc:
            raise EvalstoreError(f"SQL query {rel.as_posix()}: {exc}") from None
        marks = list(_NAME_LINE.finditer(text))
        if not marks:
            queries[rel.as_posix()] = Query(rel.as_posix(), text, path)
            continue
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            name = f"{rel.parent.as_posix()}/{mark.group(1)}"
            queries[name] = Query(name, text[mark.end() : end].strip(), path)
    return queries


@functools.cache
def _file(root: Path, name: str) -> Query | None:
    """The query of ``sql/<name>.sql`` read alone, where that file holds one query (no
    ``-- name:`` line): the text :func:`_folder` gives it, without reading the folder's
    other files (every metric's file: 50 ms, where a command checks one cached value)."""
    path = root / f"{name}.sql"
    if not path.is_file():
        return None
    try:
        text = expand_sum_exact(_expand(path.read_text(), root))
    except EvalstoreError as exc:
        raise EvalstoreError(f"SQL query {name}: {exc}") from None
    return None if _NAME_LINE.search(text) else Query(name, text, path)


def _catalogue(root: Path) -> dict[str, Query]:
    found: dict[str, Query] = {}
    for folder in sorted(p.name for p in root.iterdir() if p.is_dir()):
        found.update(_folder(root, folder))
    return found


def load(name: str) -> Query:
    """Return the query called ``name`` (``"store/insert_run"``, ``"metrics/ap"``): a name
    of the catalogue under ``sql/`` only (no ``..``, no full path).

    Raises:
        EvalstoreError: no query of that name.
    """
    if not _QUERY_NAME.match(name):
        raise EvalstoreError(f"no SQL query named {name!r}: a name is folder/name under sql/")
    folder = name.rsplit("/", 1)[0] if "/" in name else ""
    try:
        alone = _file(sql_dir(), name) if folder != "lib" else None
        return alone if alone is not None else _folder(sql_dir(), folder)[name]
    except (KeyError, OSError):
        raise EvalstoreError(f"no SQL query named {name!r} under {sql_dir()}") from None


def load_file(path: Path, name: str) -> Query:
    """A query kept outside ``sql/`` (a user's metric file), read now, its includes expanded
    from ``sql/`` (``-- @include lib/ranking_points.sql`` works there too).

    Raises:
        EvalstoreError: the file cannot be read, or an include is missing.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalstoreError(f"{path}: cannot read: {exc}") from None
    try:
        return Query(name, expand_sum_exact(_expand(text, sql_dir())), path)
    except EvalstoreError as exc:
        raise EvalstoreError(f"{path}: {exc}") from None


def names_with_prefix(prefix: str) -> list[str]:
    """Every query name starting with ``prefix``, sorted."""
    folder = prefix.rsplit("/", 1)[0] if "/" in prefix else None
    names = _folder(sql_dir(), folder) if folder else _catalogue(sql_dir())
    return sorted(n for n in names if n.startswith(prefix))


def quote_name(name: str) -> str:
    """Quote any text as an identifier (a data-defined name such as a parameter's), doubling
    embedded quotes; for names that come from the store itself, never from a query string."""
    if "\x00" in name:
        raise EvalstoreError(f"a name cannot hold a NUL character: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def quote_ident(name: str, allowed: set[str] | frozenset[str] | None = None) -> str:
    """Quote an identifier that cannot be bound as a parameter.

    Raises:
        EvalstoreError: when ``name`` is not a plain identifier or not in ``allowed``.
    """
    if not _IDENT.match(name) or (allowed is not None and name not in allowed):
        raise EvalstoreError(f"not an allowed column name: {name!r}")
    return f'"{name}"'


def literal(text: str) -> str:
    """A SQL string literal, for the few places DuckDB cannot bind a value (a table
    function's path, the folder of EXPORT DATABASE)."""
    return "'" + text.replace("'", "''") + "'"


def template(name: str, **parts: str) -> str:
    """The text of a named query with its ``{placeholder}``s set to ``parts``: identifiers or
    expressions the caller has quoted (quote_ident, quote_name, literal) or the text of
    another named query. Comments go first, so that a value never lands in one (a newline in
    it would end the comment), and all placeholders are set in one pass (:func:`fill`).

    Raises:
        EvalstoreError: no query of that name, a part for a hole the query does not have,
            or a hole of the query left without a part (each named with the query).
    """
    text = _without_comments(load(name).text)
    found = holes(text)
    unknown = sorted(set(parts) - found)
    if unknown:
        raise EvalstoreError(f"SQL query {name} has no hole {{{unknown[0]}}} to fill")
    unfilled = sorted(found - set(parts))
    if unfilled:
        raise EvalstoreError(f"SQL query {name}: its hole {{{unfilled[0]}}} is not filled")
    return fill(text, parts)


@functools.lru_cache(maxsize=512)
def _without_comments(text: str) -> str:
    """``normalized(text, keep_lines=True)``, once per text (a template is filled per call:
    an ingest fills a dozen)."""
    return normalized(text, keep_lines=True)


@functools.lru_cache(maxsize=512)
def _needs(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """The ``{holes}`` and the ``$values`` of a query's statement (not of its comments or
    string literals)."""
    bare = _STRING.sub("''", normalized(text))
    return frozenset(holes(bare)), frozenset(_VALUE.findall(bare))


def checked(name: str, text: str, params: Mapping[str, Any] | None) -> str:
    """``text``, once it is known to have no hole left and a value in ``params`` for each
    of its ``$name``s.

    Raises:
        EvalstoreError: naming the query ``name`` and the hole or ``$name``.
    """
    left, values = _needs(text)
    if left:
        hole = sorted(left)[0]
        raise EvalstoreError(
            f"SQL query {name}: its hole {{{hole}}} is not filled (queries.template fills it)"
        )
    missing = sorted(values - set(params or {}))
    if missing:
        raise EvalstoreError(f"SQL query {name}: no value given for ${missing[0]}")
    return text


def bind(query: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """The values of ``params`` that ``query`` names as ``$name`` outside its comments and
    string literals: DuckDB refuses a value the statement does not use."""
    if not params:
        return {}
    used = _needs(query)[1]
    return {k: v for k, v in params.items() if k in used}


def run(con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None) -> None:
    """Execute a named statement for its effect."""
    text = checked(name, load(name).text, params)
    con.execute(text, bind(text, params))


def fetch(
    con: duckdb.DuckDBPyConnection,
    name_or_query: str | Query,
    params: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Run a named query and return the fully fetched result as a polars frame."""
    query = name_or_query if isinstance(name_or_query, Query) else load(name_or_query)
    text = checked(query.name, query.text, params)
    return con.sql(text, params=bind(text, params)).pl()


def fetch_columns(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a named query and return its column names and rows, without a frame (for output
    that needs neither polars nor pyarrow)."""
    text = checked(name, load(name).text, params)
    result = con.execute(text, bind(text, params))
    return [d[0] for d in result.description], result.fetchall()


def fetch_rows(
    con: duckdb.DuckDBPyConnection, name: str, params: Mapping[str, Any] | None = None
) -> list[tuple[Any, ...]]:
    """Run a named query and return its rows as tuples (for small control queries)."""
    text = checked(name, load(name).text, params)
    return con.execute(text, bind(text, params)).fetchall()

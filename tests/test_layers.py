"""The house rules that keep the package in one-way layers, checked by tools, not by memory:
the import-linter contracts of pyproject.toml, no function-level import of an evalstore
module outside the command line, no private name imported from another module, modules of
a readable size. Each rule is one test over every module whose failure lists every offender,
and each rule is shown to find a planted offence.

The command line (evalstore/cli/) is the exception to the second rule: it is the top layer,
and its commands import the library inside their body so that ``evalstore --help`` stays
instant (tests/test_startup.py checks what a start imports). import-linter sees those
imports too, so the layers contract still holds for them."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "evalstore"
MODULES = sorted(PACKAGE.rglob("*.py"))
CLI = PACKAGE / "cli"
MAX_LINES = 400


def _ours(node: ast.ImportFrom) -> bool:
    return node.level > 0 or (node.module or "").split(".")[0] == "evalstore"


def test_the_layer_contracts_hold() -> None:
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--config", str(PACKAGE.parent / "pyproject.toml")],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


# the entry point (evalstore/__main__.py) imports the commands in main(), as the CLI does
LIBRARY = [p for p in MODULES if CLI not in p.parents and p.name != "__main__.py"]


def _name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def _package(path: Path) -> str:
    """The package a module of evalstore/ is in (``evalstore.db`` for db/queries.py)."""
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])


@functools.cache  # the rules below read each module's tree, parsed once
def _parse(source: str) -> ast.Module:
    return ast.parse(source)


# -- one function per rule: a module's source -> its offences ("line what") ---------------------


def _inner_imports(source: str, package: str) -> list[str]:
    return [
        f"{sub.lineno}"
        for node in ast.walk(_parse(source))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if (isinstance(sub, ast.ImportFrom) and _ours(sub))
        or (isinstance(sub, ast.Import) and any(a.name.startswith("evalstore") for a in sub.names))
    ]


def _private_imports(source: str, package: str) -> list[str]:
    return [
        f"{node.lineno} {alias.name}"
        for node in ast.walk(_parse(source))
        if isinstance(node, ast.ImportFrom) and _ours(node)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]


def _module_aliases(tree: ast.Module, package: str) -> set[str]:
    """The names a file binds to evalstore modules (``from evalstore import queries``)."""
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.name.startswith("evalstore") and a.asname}
        elif isinstance(node, ast.ImportFrom) and _ours(node):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            parent = importlib.import_module(base)
            for alias in node.names:
                if inspect.ismodule(getattr(parent, alias.name, None)):
                    aliases.add(alias.asname or alias.name)
    return aliases


def _private_uses(source: str, package: str) -> list[str]:
    tree = _parse(source)
    modules = _module_aliases(tree, package)
    return [
        f"{node.lineno} {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]


def _too_long(source: str, package: str) -> list[str]:
    n = len(source.splitlines())
    return [f"{n} lines: split it by job"] if n > MAX_LINES else []


Rule = Callable[[str, str], list[str]]


def _offenders(rule: Rule, paths: list[Path]) -> list[str]:
    return [
        f"{_name(path)}:{offence}"
        for path in paths
        for offence in rule(path.read_text(), _package(path))
    ]


def _message(found: list[str], rule: str) -> str:
    """One failure naming every offender of a rule, one a line."""
    return f"{len(found)} offence(s) of the rule: {rule}\n" + "\n".join(found)


def test_no_function_level_import_of_evalstore() -> None:
    """Imports of our own modules stand at the top, where a moved name fails at import;
    lazy imports of heavy optional libraries are fine. Not checked in evalstore/cli/, whose
    commands import the library in their body (see the module docstring)."""
    found = _offenders(_inner_imports, LIBRARY)
    assert found == [], _message(found, "no import of evalstore inside a function")


def test_no_private_name_imported_from_another_module() -> None:
    found = _offenders(_private_imports, MODULES)
    assert found == [], _message(found, "no _private name imported from another module")


def test_no_private_name_used_through_another_module() -> None:
    """``queries._catalogue`` from outside queries.py is as private as importing it."""
    found = _offenders(_private_uses, MODULES)
    assert found == [], _message(found, "no _private name used through another module")


def test_modules_stay_small() -> None:
    found = _offenders(_too_long, MODULES)
    assert found == [], _message(found, f"no module over {MAX_LINES} lines")


PLANTED = """\
from evalstore.db import queries
from evalstore.errors import _hidden


def f():
    from evalstore import Store
    return queries._catalogue, Store
"""


@pytest.mark.parametrize(
    ("rule", "source", "offences"),
    [
        (_inner_imports, PLANTED, ["6"]),
        (_private_imports, PLANTED, ["2 _hidden"]),
        (_private_uses, PLANTED, ["7 queries._catalogue"]),
        (_too_long, PLANTED, []),
        (_too_long, "x = 1\n" * (MAX_LINES + 1), [f"{MAX_LINES + 1} lines: split it by job"]),
    ],
)
def test_each_rule_finds_a_planted_offence(rule: Rule, source: str, offences: list[str]) -> None:
    """The rules above pass because nothing offends, not because they see nothing."""
    assert rule(source, "evalstore.runs") == offences


def test_the_checks_see_every_module() -> None:
    names = {_name(p) for p in MODULES}
    assert {"store/facade.py", "db/connection.py", "ingest/ranked.py", "scale/export.py"} <= names
    assert any(CLI in p.parents for p in MODULES) and len(LIBRARY) > 50, len(LIBRARY)

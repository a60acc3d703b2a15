"""The house rules that keep the package in one-way layers, checked by tools, not by memory:
the import-linter contracts of pyproject.toml, no function-level import of an evalstore
module outside the command line, no private name imported from another module, modules of
a readable size.

The command line (evalstore/cli/) is the exception to the second rule: it is the top layer,
and its commands import the library inside their body so that ``evalstore --help`` stays
instant (tests/test_startup.py checks what a start imports). import-linter sees those
imports too, so the layers contract still holds for them."""

from __future__ import annotations

import ast
import importlib
import inspect
import subprocess
import sys
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


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_function_level_import_of_evalstore(path: Path) -> None:
    """Imports of our own modules stand at the top, where a moved name fails at import;
    lazy imports of heavy optional libraries are fine. Not checked in evalstore/cli/, whose
    commands import the library in their body (see the module docstring)."""
    tree = ast.parse(path.read_text())
    inner = [
        f"{path.name}:{sub.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        for sub in ast.walk(node)
        if (isinstance(sub, ast.ImportFrom) and _ours(sub))
        or (isinstance(sub, ast.Import) and any(a.name.startswith("evalstore") for a in sub.names))
    ]
    assert inner == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_imported_from_another_module(path: Path) -> None:
    tree = ast.parse(path.read_text())
    private = [
        f"{path.name}:{node.lineno} {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and _ours(node)
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert private == []


def _module_aliases(tree: ast.Module, path: Path) -> set[str]:
    """The names a file binds to evalstore modules (``from evalstore import queries``)."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
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


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_used_through_another_module(path: Path) -> None:
    """``queries._catalogue`` from outside queries.py is as private as importing it."""
    tree = ast.parse(path.read_text())
    modules = _module_aliases(tree, path)
    private = [
        f"{path.name}:{node.lineno} {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    assert private == []


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path: Path) -> None:
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES, f"{path.name} has {n} lines: split it by job"


def test_the_checks_see_every_module() -> None:
    names = {p.relative_to(PACKAGE).as_posix() for p in MODULES}
    assert {"store/facade.py", "db/connection.py", "ingest/ranked.py", "scale/export.py"} <= names

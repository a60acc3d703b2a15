"""Names a package exports but imports on first use (PEP 562): :func:`attributes` makes the
``__getattr__`` of ``evalstore`` and ``evalstore.ingest``, so that importing either loads
none of the modules behind its names until one is read."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["attributes"]


def attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package``: a name of ``where`` is imported from the
    module given there and kept in the package; any other name raises AttributeError (which
    lets ``from package import submodule`` import the submodule)."""

    def __getattr__(name: str) -> Any:
        try:
            module = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__

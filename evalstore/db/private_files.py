"""The private files beside a store, ``.<name>.<pid>-<token><suffix>``: an ingest's staging
store (``.stage``, :mod:`evalstore.store.staging`) and a new store before it is published (``.new``,
:func:`evalstore.store.facade.write_store`). Each is named for the process that writes it, so that
what a killed process left is told from what a running one writes, and removed by the next
write beside the store (:func:`remove_stale`)."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
from pathlib import Path

__all__ = ["PRIVATE_SUFFIXES", "private_path", "remove_stale", "remove_store_files"]

#: the suffixes of the private files
PRIVATE_SUFFIXES = (".stage", ".new")


def private_path(store_path: Path, suffix: str) -> Path:
    """A new private file beside ``store_path``, named for this process (see
    :data:`PRIVATE_SUFFIXES`)."""
    token = secrets.token_hex(4)
    return store_path.parent / f".{store_path.name}.{os.getpid()}-{token}{suffix}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(store_path: Path) -> list[Path]:
    """Remove the private files beside ``store_path`` (staging stores, unpublished new
    stores, with their WAL and spill folder) whose process no longer runs, as a process
    killed with SIGKILL leaves them; returns them."""
    removed = []
    for suffix in PRIVATE_SUFFIXES:
        for leftover in store_path.parent.glob(f".{glob.escape(store_path.name)}.*-*{suffix}"):
            pid = leftover.name[len(store_path.name) + 2 :].split("-", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                remove_store_files(leftover)
                removed.append(leftover)
    return removed


def remove_store_files(path: Path) -> None:
    """Remove a private store file, its WAL and its spill folder (``<file>.tmp``)."""
    for leftover in (path, path.with_name(path.name + ".wal")):
        leftover.unlink(missing_ok=True)
    shutil.rmtree(path.with_name(path.name + ".tmp"), ignore_errors=True)

"""NumPy's sorts where its AVX-512 path is the slow one: ``evalstore ingest`` on AMD Zen 4.

NumPy sorts 16-, 32- and 64-bit values with x86-simd-sort, on its AVX-512 path where the CPU
has AVX-512. That path's partition step stores each vector with ``vpcompress`` to memory,
which AMD Zen 4 runs microcoded (over 100 cycles an instruction: numpy/x86-simd-sort#6; Zen 5
fixed it). On Zen 4, NumPy 2.4 sorted 2^20 random uint64 keys in 65 ms, and in 16 ms with its
AVX-512 targets disabled (its AVX2 path); float32 values in 40 against 7.5 ms (least of 5
sorts, ``python bench/numpy_sort.py``). The list index an ingest writes
(:mod:`evalstore.ingest.index`, :mod:`evalstore.ingest.rank_index`) is sorts of such keys.

So :func:`prefer_avx2_sort` makes an ``evalstore ingest`` process on Zen 4 import NumPy with
its AVX-512 targets disabled (``NPY_DISABLE_CPU_FEATURES``), then restores the environment.
The ingest's NumPy work is sorts, searches, counts, bit operations and IEEE arithmetic that is
correctly rounded on every path, so what it stores is the same byte for byte
(``tests/test_numpy_sort.py`` ingests ranked lists, keypoints and detections both ways).
Nothing is changed when ``NPY_DISABLE_CPU_FEATURES`` is set already (set it, even empty, to
keep NumPy's own choice), when NumPy was imported before (the Python API: a process imports
NumPy once), when NumPy is older than 2.4 (whose targets have other names), or on any other
command or CPU. A NumPy built with AVX-512 in its baseline refuses the variable at its import;
the command then starts again as given, with NumPy's own choice.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["AVX512_TARGETS", "VARIABLE", "prefer_avx2_sort", "slow_avx512_sort"]

VARIABLE = "NPY_DISABLE_CPU_FEATURES"

#: NumPy 2.4's dispatch targets that hold AVX-512 (its ``__cpu_dispatch__``)
AVX512_TARGETS = "X86_V4 AVX512_ICL AVX512_SPR"

#: The commands whose NumPy work is exact on every SIMD path, and sorts
COMMANDS = ("ingest",)


def slow_avx512_sort(cpuinfo: str) -> bool:
    """Whether the CPU that ``/proc/cpuinfo``'s text ``cpuinfo`` describes is AMD Zen 4 with
    AVX-512 (family 25; Zen 3, also 25, has no AVX-512; Zen 5 is 26).

    >>> slow_avx512_sort("vendor_id: AuthenticAMD\\ncpu family: 25\\nflags: fpu avx2 avx512f")
    True
    >>> slow_avx512_sort("vendor_id: GenuineIntel\\ncpu family: 6\\nflags: fpu avx2 avx512f")
    False
    """
    first = cpuinfo.split("\n\n", 1)[0]
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in first.splitlines())
    )
    return (
        fields.get("vendor_id") == "AuthenticAMD"
        and fields.get("cpu family") == "25"
        and "avx512f" in fields.get("flags", "").split()
    )


def _numpy_names_known() -> bool:
    """Whether the NumPy to be imported is 2.4 or later (its version file read, not imported)."""
    spec = importlib.util.find_spec("numpy")
    if spec is None or spec.origin is None:
        return False
    try:
        text = Path(spec.origin).with_name("version.py").read_text()
    except OSError:
        return False
    found = re.search(r'^version = "(\d+)\.(\d+)', text, re.MULTILINE)
    return found is not None and (int(found[1]), int(found[2])) >= (2, 4)


def prefer_avx2_sort(argv: Sequence[str]) -> bool:
    """Import NumPy with its AVX-512 targets disabled when ``evalstore ARGV`` is a command of
    :data:`COMMANDS` on Zen 4 (the module's rules); returns whether it did."""
    if not argv or argv[0] not in COMMANDS or VARIABLE in os.environ or "numpy" in sys.modules:
        return False
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:  # not Linux
        return False
    if not slow_avx512_sort(cpuinfo) or not _numpy_names_known():
        return False
    os.environ[VARIABLE] = AVX512_TARGETS
    try:
        import numpy  # noqa: F401  (read the variable once, at its import)
    except RuntimeError as exc:
        if VARIABLE not in str(exc):
            raise
        # a NumPy built with AVX-512 in its baseline refuses to disable it, and cannot be
        # imported again in this process: the command starts again with NumPy's own choice
        os.execve(sys.executable, sys.orig_argv, {**os.environ, VARIABLE: ""})
    finally:
        os.environ.pop(VARIABLE, None)
    return True

"""Fuzzed ingest inputs through the real CLI: whatever the file holds, `evalstore ingest` either
ingests it or stops with one ``Error: ...`` line on stderr, exit code 1 and the store as it
was; never a traceback.

Every input format starts from a small valid corpus (ranked lists in CSV, TSV, Parquet,
NDJSON and ``.npz``, a ``--groups`` file, PASCAL VOC results with their ground truth,
keypoint matches with pairs, homography and disparity files, counted outcomes, an HPatches
descriptor folder with the benchmark's task files). Each case
mutates one of its files, chosen by a seeded RNG: bytes (truncated, flipped, lines deleted,
duplicated or swapped, a BOM, CRLF, NUL, a stray quote, a field replaced by a huge integer,
text or a float, garbage) or the table before it is written (floats in ids, text in numbers,
NUL and newlines in ids, integers beyond 2^63, nulls, nested values, no rows, a column
dropped or renamed, columns of different lengths), or puts a directory, or nothing, where
the file should be.
"""

from __future__ import annotations

import csv
import ctypes
import hashlib
import io
import json
import os
import random
import shutil
import traceback
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import cv2
import duckdb
import numpy as np
import polars as pl
import pytest
import typer
from conftest import snapshot
from typer.testing import CliRunner

from evalstore.cli import app
from evalstore.ingest import FORMATS, TASKS
from evalstore.ingest.sources import first_line

Columns = dict[str, Any]  # column name -> list of values (or an array)


@dataclass(frozen=True)
class Table:
    """A table file of a corpus, written in ``fmt`` (csv, tsv, ndjson, parquet, npz); a CSV or
    TSV without its header line where ``header`` is false (an HPatches descriptor file)."""

    fmt: str
    columns: Columns
    header: bool = True


@dataclass(frozen=True)
class Corpus:
    """Valid inputs of one ingest: the CLI arguments (split at spaces; ``{d}`` stands for the
    folder of the files), the files (a table, or bytes) and those its cases damage (all of
    them when empty: a few where many files play one role, as an HPatches folder's 32)."""

    args: str
    files: dict[str, Table | bytes]
    targets: tuple[str, ...] = ()

    def damaged(self) -> list[str]:
        return sorted(self.targets or self.files)


# -- the valid corpora -------------------------------------------------------------------------

RANKED = {
    "group_id": ["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3"],
    "item_id": ["a", "b", "c", "a", "b", "d", "c", "e"],
    "score": [0.9, 0.5, -0.25, 1.5, 0.1, 0.0, 3.0, 2.5],
    "label": [1, -1, 0, -1, 1, -1, 1, -1],
}
RANKED_INT = {**RANKED, "group_id": [1, 1, 1, 2, 2, 2, 3, 3], "item_id": [7, 8, 9, 7, 8, 10, 9, 11]}
MATCHES = {
    "pair_id": ["a", "a", "a", "a", "b", "b", "b", "b"],
    "x0": [1.0, 2.0, 10.0, 20.0, 1.0, 4.0, 9.0, 16.0],
    "y0": [1.0, 3.0, 10.0, 5.0, 2.0, 4.0, 6.0, 8.0],
    "x1": [6.0, 7.0, 15.0, 25.0, 6.0, 9.0, 14.0, 21.0],
    "y1": [-2.0, 0.0, 7.0, 2.0, -1.0, 1.0, 3.0, 5.0],
    "score": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2],
}
SHIFT = [1.0, 0.0, 5.0, 0.0, 1.0, -3.0, 0.0, 0.0, 1.0]  # x1 = x0 + 5, y1 = y0 - 3
PAIRS = {
    "pair_id": ["a", "b"],
    **{f"h{i}{j}": [SHIFT[3 * i + j - 4]] * 2 for i in (1, 2, 3) for j in (1, 2, 3)},
    "width": [64, 64],
    "height": [48, 48],
    "kind": ["illumination", "viewpoint"],
}
TRUTH = {
    **MATCHES,
    "gt_x1": [x + 5 for x in MATCHES["x0"]],
    "gt_y1": [y - 3 for y in MATCHES["y0"]],
}
COUNTS = {"group_id": ["car", "dog", "cat"], "tp": [3, 0, 5], "fp": [1, 2, 0], "fn": [0, 1, 4]}
OUTCOMES = {
    "group_id": ["car", "car", "dog", "dog", "cat"],
    "outcome": ["tp", "fp", "tp", "fn", "TP"],
}


def _h_text() -> bytes:
    out = io.BytesIO()
    np.savetxt(out, np.array(SHIFT).reshape(3, 3))
    return out.getvalue()


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def _png(array: np.ndarray) -> bytes:
    ok, encoded = cv2.imencode(".png", array)
    assert ok
    return encoded.tobytes()


DISPARITY = np.full((48, 64), 5.0)
VERIFICATION = {"item_id": [1, 2, 3, 4], "score": [0.5, 0.2, 0.9, 0.1], "label": [1, 0, 1, 0]}
GROUPS = {"group_id": ["q1", "q2", "q3"], "n_positives": [2, 1, 1], "split": ["a"] * 3}
VOC_RESULTS = b"000005 0.9\n000007 -0.3\n000009 1.25\n000012 -inf\n"
VOC_TRUTH = b"000005  1\n000007 -1\n000009  0\n000012  1\n000017 -1\n"
TREC_RUN = b"q1 Q0 d1 1 2.5 run\nq1 Q0 d2 2 1.0 run\nq1 Q0 d9 3 1.0 run\nq2\tQ0 d3 1 0.5 run\n"
TREC_QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\nq2 0 d4 1\n"


def _hpatches() -> dict[str, Table | bytes]:
    """A tiny HPatches dataset in the benchmark's layout (see tests/test_hpatches_format.py):
    the descriptor folder ``DESC/<sequence>/{ref,e1..t5}.csv`` of two sequences (4 and 3
    patches of 4 values, no header; each image's patch a noisy copy of its ``ref`` patch) and
    the task files of split ``a`` (``tasks/splits/splits.json``, ``verif_*``, ``retr_*``)."""
    rng = np.random.default_rng(20240917)
    files: dict[str, Table | bytes] = {}
    for seq, n in (("i_a", 4), ("v_b", 3)):
        ref = rng.normal(size=(n, 4)).round(3)
        for image in ("ref", *(f"{z}{k}" for z in "eht" for k in range(1, 6))):
            noise = 0.0 if image == "ref" else 0.05 * ("eht".index(image[0]) + 1)
            values = (ref + rng.normal(scale=noise, size=ref.shape)).round(3)
            columns = {f"c{i}": values[:, i].tolist() for i in range(4)}
            files[f"DESC/{seq}/{image}.csv"] = Table("csv", columns, header=False)
    splits = {"a": {"name": "a", "test": ["i_a", "v_b"], "train": []}}
    files["tasks/splits/splits.json"] = json.dumps(splits).encode()
    pairs = {
        "pos": [("i_a", 0, 0, "i_a", 3, 0), ("v_b", 1, 2, "v_b", 5, 2), ("i_a", 2, 1, "i_a", 4, 1)],
        "neg_intra": [
            ("i_a", 0, 0, "i_a", 3, 1), ("v_b", 1, 2, "v_b", 5, 0), ("i_a", 2, 3, "i_a", 4, 1)
        ],
        "neg_inter": [
            ("i_a", 0, 0, "v_b", 3, 1), ("v_b", 1, 2, "i_a", 5, 3), ("i_a", 2, 1, "v_b", 4, 0)
        ],
    }  # fmt: skip
    for name, rows in pairs.items():
        names = ("s1", "t1", "idx1", "s2", "t2", "idx2")
        columns = {col: [row[i] for row in rows] for i, col in enumerate(names)}
        files[f"tasks/verif_{name}_split-a.csv"] = Table("csv", columns)
    patches = {"queries": ["i_a/1", "v_b/0"], "distractors": ["i_a/0", "i_a/2", "v_b/1", "v_b/2"]}
    for name, ids in patches.items():
        columns = {"s": [p[:3] for p in ids], "idx": [int(p[4:]) for p in ids]}
        files[f"tasks/retr_{name}_split-a.csv"] = Table("csv", columns)
    return files


HPATCHES = _hpatches()
HPATCHES_ARGS = "{d}/DESC --format hpatches --hpatches-tasks {d}/tasks"

CORPORA: dict[str, Corpus] = {
    "csv": Corpus("{d}/s.csv -t retrieval", {"s.csv": Table("csv", RANKED)}),
    "parquet": Corpus("{d}/s.parquet -t retrieval", {"s.parquet": Table("parquet", RANKED_INT)}),
    "parquet-text": Corpus("{d}/s.pq -t matching", {"s.pq": Table("parquet", RANKED)}),
    "ndjson": Corpus("{d}/s.ndjson -t retrieval", {"s.ndjson": Table("ndjson", RANKED)}),
    "npz": Corpus("{d}/s.npz -t retrieval", {"s.npz": Table("npz", RANKED_INT)}),
    "npz-verification": Corpus(
        "{d}/v.npz -t verification --labels 01", {"v.npz": Table("npz", VERIFICATION)}
    ),
    "groups": Corpus(
        "{d}/s.csv -t retrieval --groups {d}/g.csv",
        {"s.csv": Table("csv", RANKED), "g.csv": Table("csv", GROUPS)},
    ),
    "voc": Corpus(
        "{d}/comp1_cls_test_dog.txt -t classification --format voc --voc-gt {d}/gt",
        {"comp1_cls_test_dog.txt": VOC_RESULTS, "gt/dog_test.txt": VOC_TRUTH},
    ),
    "trec": Corpus(
        "{d}/run.txt -t retrieval --format trec --qrels {d}/qrels.txt",
        {"run.txt": TREC_RUN, "qrels.txt": TREC_QRELS},
    ),
    "keypoints-pairs": Corpus(
        "{d}/m.csv -t keypoints --pairs {d}/p.csv",
        {"m.csv": Table("csv", MATCHES), "p.csv": Table("csv", PAIRS)},
    ),
    "keypoints-truth": Corpus("{d}/m.parquet -t keypoints", {"m.parquet": Table("parquet", TRUTH)}),
    "keypoints-homography-dir": Corpus(
        "{d}/m.npz -t keypoints --homography-dir {d}/H",
        {
            "m.npz": Table("npz", MATCHES),
            "H/a": _h_text(),
            "H/b.npy": _npy(np.array(SHIFT).reshape(3, 3)),
        },
    ),
    "keypoints-disparity-dir": Corpus(
        "{d}/m.ndjson -t keypoints --disparity-dir {d}/D",
        {
            "m.ndjson": Table("ndjson", MATCHES),
            "D/a.npy": _npy(DISPARITY),
            "D/b.png": _png((DISPARITY * 256).astype(np.uint16)),
        },
    ),
    "outcomes": Corpus("{d}/o.txt --format tsv -t outcomes", {"o.txt": Table("tsv", COUNTS)}),
    "outcomes-npz": Corpus("{d}/o.npz -t outcomes", {"o.npz": Table("npz", COUNTS)}),
    "outcomes-items": Corpus(
        "{d}/o.parquet -t outcomes", {"o.parquet": Table("parquet", OUTCOMES)}
    ),
    # all three tasks (no --task): every file is read; the cases damage a descriptor file
    # (ref, or an image of each noise level) or one of the task files
    "hpatches": Corpus(
        HPATCHES_ARGS,
        HPATCHES,
        ("DESC/i_a/ref.csv", "DESC/i_a/e1.csv", "DESC/v_b/h3.csv", "DESC/v_b/t5.csv"),
    ),
    "hpatches-tasks": Corpus(
        HPATCHES_ARGS, HPATCHES, tuple(p for p in HPATCHES if p.startswith("tasks/"))
    ),
}


# -- writing a table ---------------------------------------------------------------------------


def _plain(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return repr(value) if isinstance(value, float) else str(value)


def write_table(table: Table) -> bytes:
    """The bytes of ``table`` in its format; columns of different lengths make ragged rows
    (text), missing keys (NDJSON), nulls (Parquet) or arrays of different lengths (npz)."""
    columns = {name: _plain(values) for name, values in table.columns.items()}
    n = max((len(v) for v in columns.values()), default=0)
    if table.fmt in ("csv", "tsv"):
        out = io.StringIO()
        writer = csv.writer(out, delimiter="," if table.fmt == "csv" else "\t", lineterminator="\n")
        if table.header:
            writer.writerow(columns)
        for r in range(n):
            writer.writerow([_cell(v[r]) for v in columns.values() if r < len(v)])
        return out.getvalue().encode()
    if table.fmt == "ndjson":
        rows = ({k: v[r] for k, v in columns.items() if r < len(v)} for r in range(n))
        return "".join(json.dumps(row) + "\n" for row in rows).encode()
    out_bytes = io.BytesIO()
    if table.fmt == "npz":
        arrays = {}
        for name, values in table.columns.items():
            try:
                arrays[name] = np.asarray(values)
            except ValueError:  # ragged nested values
                arrays[name] = np.array(values, dtype=object)
        np.savez(out_bytes, **arrays)  # object arrays are pickled: refused when read
        return out_bytes.getvalue()
    series = []
    for name, values in columns.items():
        padded = values + [None] * (n - len(values))
        try:
            series.append(pl.Series(name, padded, strict=False))
        except (TypeError, ValueError, OverflowError, pl.exceptions.PolarsError):  # no one type
            series.append(pl.Series(name, [None if v is None else _cell(v) for v in padded]))
    pl.DataFrame(series).write_parquet(out_bytes)
    return out_bytes.getvalue()


# -- mutations ---------------------------------------------------------------------------------

Rng = random.Random
HUGE = (2**63, 2**64 + 5, -(2**70), 10**30)
ODD_TEXT = ("abc", "1,5", "", "NaN", "-", "1e400", "0x10", " 7 ", "é", "\u202e1")
BREAKS = ("\n", "\r\n", "\r", "\u2028", "\x0b")
FIELDS = (
    b"18446744073709551621", b"-1180591620717411303424", b"9223372036854775808", b"abc",
    b"1.5", b"", b"nan", b"inf", b"-inf", b"1e400", b"0x1F", "\u00e9".encode(), b"\xff\xfe",
    b'"', b" 7 ", b"true", b"\x00",
)  # fmt: skip


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _pos(rng: Rng, data: bytes) -> int:
    return rng.randrange(len(data) + 1)


def _insert(rng: Rng, data: bytes, text: bytes) -> bytes:
    at = _pos(rng, data)
    return data[:at] + text + data[at:]


def _field(rng: Rng, data: bytes) -> bytes:
    """A random field of a random line past the first (split at commas, tabs or spaces)
    replaced by an odd value."""
    lines = _lines(data)
    k = rng.randrange(1, len(lines)) if len(lines) > 1 else 0
    sep = next((s for s in (b"\t", b",", b" ") if s in lines[k]), b",")
    fields = lines[k].split(sep)
    fields[rng.randrange(len(fields))] = rng.choice(FIELDS)
    lines[k] = sep.join(fields)
    return b"\n".join(lines)


def _flip(rng: Rng, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if out:
            out[rng.randrange(len(out))] ^= rng.randrange(1, 256)
    return bytes(out)


def _zeros(rng: Rng, data: bytes) -> bytes:
    at = rng.randrange(len(data)) if data else 0
    n = rng.randint(1, 64)
    return data[:at] + bytes(min(n, len(data) - at)) + data[at + n :]


def _swap(rng: Rng, data: bytes) -> bytes:
    lines = _lines(data)
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def _edit_line(rng: Rng, data: bytes, repeat: bool) -> bytes:
    lines = _lines(data)
    k = rng.randrange(len(lines))
    lines[k : k + 1] = [lines[k]] * 2 if repeat else []
    return b"\n".join(lines)


BYTE_MUTATIONS: dict[str, Callable[[Rng, bytes], bytes]] = {
    "truncate": lambda rng, data: data[: rng.randrange(len(data))] if data else data,
    "flip": _flip,
    "zeros": _zeros,
    "delete line": lambda rng, data: _edit_line(rng, data, repeat=False),
    "duplicate line": lambda rng, data: _edit_line(rng, data, repeat=True),
    "swap lines": _swap,
    "header only": lambda rng, data: _lines(data)[0] + b"\n",
    "no header": lambda rng, data: b"\n".join(_lines(data)[1:]),
    "bom": lambda rng, data: b"\xef\xbb\xbf" + data,
    "crlf": lambda rng, data: data.replace(b"\n", b"\r\n"),
    "cr": lambda rng, data: data.replace(b"\n", b"\r"),
    "utf-16": lambda rng, data: data.decode("utf-8", "replace").encode("utf-16"),
    "nul byte": lambda rng, data: _insert(rng, data, b"\x00"),
    "stray quote": lambda rng, data: _insert(rng, data, b'"'),
    "odd field": _field,
    "garbage": lambda rng, data: rng.randbytes(rng.randint(1, 300)),
    "garbage appended": lambda rng, data: data + rng.randbytes(rng.randint(1, 300)),
    "empty": lambda rng, data: b"",
}


def _ids(columns: Columns) -> list[str]:
    return [c for c in columns if c.endswith("_id")] or list(columns)


def _numbers(columns: Columns) -> list[str]:
    return [c for c in columns if not c.endswith("_id") and c not in ("kind", "split", "outcome")]


def _set_one(rng: Rng, columns: Columns, names: list[str], make: Callable[[Any], Any]) -> Columns:
    name = rng.choice(names or list(columns))
    values = list(columns[name])
    if values:
        k = rng.randrange(len(values))
        values[k] = make(values[k])
    return {**columns, name: values}


def _whole(
    rng: Rng, columns: Columns, names: list[str], make: Callable[[list[Any]], Any]
) -> Columns:
    """One column replaced by ``make(values)``, or dropped where that is None."""
    name = rng.choice(names or list(columns))
    new = make(list(columns[name]))
    out = {k: v for k, v in columns.items() if k != name}
    return out if new is None else {**columns, name: new}


def _rename(rng: Rng, columns: Columns) -> Columns:
    old = rng.choice(list(columns))
    new = rng.choice(("", " score", "Score", f"{old}\x00", f"{old}\n", "\u00e9", "group_id"))
    return {(new if k == old else k): v for k, v in columns.items()}


def _two_d(rng: Rng, columns: Columns) -> Columns:
    name = rng.choice(list(columns))
    values = np.asarray(columns[name])
    return {**columns, name: values.reshape(-1, 2) if values.size % 2 == 0 else values[None]}


def _ragged(rng: Rng, values: list[Any]) -> list[Any]:
    return values + values[:1] if rng.random() < 0.5 else values[:-1]


TABLE_MUTATIONS: dict[str, Callable[[Rng, Columns], Columns]] = {
    "float ids": lambda rng, c: _whole(
        rng, c, _ids(c), lambda v: [i + 0.5 for i, _ in enumerate(v)]
    ),
    "text in numbers": lambda rng, c: _set_one(rng, c, _numbers(c), lambda _: rng.choice(ODD_TEXT)),
    "nul in an id": lambda rng, c: _set_one(rng, c, _ids(c), lambda v: f"{v}\x00{v}"),
    "line break in an id": lambda rng, c: _set_one(
        rng, c, _ids(c), lambda v: f"{v}{rng.choice(BREAKS)}x"
    ),
    "huge integer id": lambda rng, c: _set_one(rng, c, _ids(c), lambda _: rng.choice(HUGE)),
    "huge integer": lambda rng, c: _set_one(rng, c, _numbers(c), lambda _: rng.choice(HUGE)),
    "huge ids": lambda rng, c: _whole(
        rng, c, _ids(c), lambda v: [2**63 + i for i, _ in enumerate(v)]
    ),
    "extreme float": lambda rng, c: _set_one(
        rng, c, _numbers(c), lambda _: rng.choice((1e308, -1e308, 5e-324, -0.0, float("inf")))
    ),
    "null": lambda rng, c: _set_one(rng, c, list(c), lambda _: None),
    "nested values": lambda rng, c: _whole(rng, c, list(c), lambda v: [[x, x] for x in v]),
    "booleans": lambda rng, c: _whole(
        rng, c, list(c), lambda v: [i % 2 == 0 for i, _ in enumerate(v)]
    ),
    "no rows": lambda rng, c: {k: [] for k in c},
    "duplicate rows": lambda rng, c: {k: list(v) * 2 for k, v in c.items()},
    "column dropped": lambda rng, c: _whole(rng, c, list(c), lambda _: None),
    "column renamed": _rename,
    "ragged": lambda rng, c: _whole(rng, c, list(c), lambda v: _ragged(rng, v)),
    "two-dimensional": _two_d,
}
#: what stands where a file should be: nothing, a folder, or (the values of Case.files) a
#: FIFO (a read would wait for ever), a link to a device, a symbolic link loop or a link to
#: nothing
SPECIAL = {"fifo": "fifo", "device": "device", "symlink loop": "loop", "dangling": "dangling"}
STRUCTURE = ("directory", "missing", *SPECIAL)
KINDS = (*BYTE_MUTATIONS, *TABLE_MUTATIONS, *STRUCTURE)


# -- cases -------------------------------------------------------------------------------------

SEED = 20240917


@dataclass(frozen=True)
class Case:
    corpus: str
    index: int
    kind: str
    target: str  # the file mutated
    # every file of the case (None: a directory; text: a value of SPECIAL)
    files: dict[str, bytes | str | None]

    def __str__(self) -> str:
        return f"{self.corpus} case {self.index} ({self.kind} of {self.target})"


def kinds(name: str) -> list[str]:
    """The order in which a corpus's cases take the kinds of mutation: a truncation and a
    byte flip first, then the others in a shuffled order."""
    rest = [k for k in KINDS if k not in ("truncate", "flip")]
    random.Random(f"{SEED}/{name}").shuffle(rest)
    return ["truncate", "flip", *rest]


def fast_kinds(name: str) -> list[str]:
    """The fast loop's kinds for a corpus: a truncation or a byte flip, and one other."""
    order, c = kinds(name), list(CORPORA).index(name)
    return [order[c % 2], order[2]]


def make_case(name: str, index: int, kind: str) -> Case:
    rng = random.Random(f"{SEED}/{name}/{index}")
    corpus = CORPORA[name]
    target = rng.choice(corpus.damaged())
    files: dict[str, bytes | str | None] = {
        path: item if isinstance(item, bytes) else write_table(item)
        for path, item in corpus.files.items()
        if path != target
    }
    item = corpus.files[target]
    if kind in TABLE_MUTATIONS and isinstance(item, Table):
        changed = TABLE_MUTATIONS[kind](rng, dict(item.columns))
        files[target] = write_table(Table(item.fmt, changed, item.header))
    elif kind == "directory":
        files[target] = None
    elif kind in SPECIAL:
        files[target] = SPECIAL[kind]
    elif kind == "none":  # the valid file
        files[target] = item if isinstance(item, bytes) else write_table(item)
    elif kind != "missing":
        if kind in TABLE_MUTATIONS:  # a file that is no table: its bytes instead
            kind = rng.choice(list(BYTE_MUTATIONS))
        data = item if isinstance(item, bytes) else write_table(item)
        files[target] = BYTE_MUTATIONS[kind](rng, data)
    return Case(name, index, kind, target, files)


def materialize(folder: Path, files: dict[str, bytes | str | None], args: str) -> list[str]:
    for name, data in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if data is None:
            path.mkdir()
        elif data == "fifo":
            os.mkfifo(path)
        elif data == "device":
            path.symlink_to(os.devnull)
        elif data == "loop":
            path.symlink_to(path.name)
        elif data == "dangling":
            path.symlink_to(path.name + ".gone")
        elif isinstance(data, bytes):
            path.write_bytes(data)
    return [a.replace("{d}", str(folder)) for a in args.split()]


# -- running them through the CLI --------------------------------------------------------------

RUNNER = CliRunner()
LIBC = ctypes.CDLL(None)
# `evalstore ingest` alone, as a Typer of its one command: CliRunner builds the click command
# of its Typer on every call, which for the whole app takes longer than a refused ingest
INGEST = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None)
INGEST.registered_commands = [c for c in app.registered_commands if c.name == "ingest"]
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def invoke(args: list[str], run: str, db: Path, whole_app: bool = False) -> Any:
    """``evalstore ingest ARGS --run RUN`` on ``db`` (through the whole app, or the ingest
    command alone)."""
    options = [*args, "--run", run, "--git-commit", "", "--db", str(db)]
    return RUNNER.invoke(app, ["ingest", *options]) if whole_app else RUNNER.invoke(INGEST, options)


def digest(db: Path) -> str:
    """The hash of every row of every table and view: equal digests, an unchanged store."""
    return hashlib.sha256(repr(snapshot(db)).encode()).hexdigest()


def file_hash(db: Path) -> str | None:
    """The hash of the store's bytes, or None while it has a write-ahead log."""
    wal = db.with_name(db.name + ".wal")
    return None if wal.exists() else hashlib.sha256(db.read_bytes()).hexdigest()


def run_rows(db: Path) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("select experiment, name from runs order by all").fetchall()
    finally:
        con.close()


@dataclass(frozen=True)
class Template:
    """A store with one committed run of each kind (ranked lists, keypoints, outcomes)."""

    path: Path
    digest: str
    bytes_hash: str | None
    runs: list[tuple[Any, ...]]

    def unchanged(self, db: Path) -> bool:
        """Whether ``db`` holds what the template holds: the same bytes, or failing that
        (DuckDB may write a file again as it was), the same rows."""
        return file_hash(db) == self.bytes_hash or digest(db) == self.digest

    def restore(self, db: Path) -> None:
        db.with_name(db.name + ".wal").unlink(missing_ok=True)
        shutil.copyfile(self.path, db)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    folder = tmp_path_factory.mktemp("template")
    db = folder / "store.duckdb"
    for run, name in (("base", "csv"), ("kp", "keypoints-pairs"), ("out", "outcomes-items")):
        files = make_case(name, 0, "none").files
        result = invoke(materialize(folder / run, files, CORPORA[name].args), run, db, True)
        assert result.exit_code == 0, result.output
    assert file_hash(db) is not None
    return Template(db, digest(db), file_hash(db), run_rows(db))


class Outcome(NamedTuple):
    verdict: str  # "ingested", "refused" or "wrong"
    text: str  # the error line of a refusal, what is wrong with a wrong outcome


def attempt(
    case: Case,
    template: Template,
    work: Path,
    capfd: pytest.CaptureFixture[str],
    whole_app: bool = False,
) -> Outcome:
    """Run one case through the CLI on a store equal to the template (and leave it so)."""
    db = work / "store" / "store.duckdb"  # alone in its folder: what an ingest leaves there
    if not db.exists():
        db.parent.mkdir(parents=True, exist_ok=True)
        template.restore(db)
    capfd.readouterr()
    folder = work / "inputs" / f"{case.corpus}-{case.index}"
    run = f"fuzz-{case.index}"
    args = materialize(folder, case.files, CORPORA[case.corpus].args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = invoke(args, run, db, whole_app)
    # the warnings Python shows by default (not DeprecationWarning, ResourceWarning...)
    shown = [str(w.message) for w in caught if not issubclass(w.category, _HIDDEN)]
    # and what C libraries (libpng, OpenCV) write to the process's stderr, beside Python's,
    # once their buffers are flushed
    LIBC.fflush(None)
    shown += filter(None, [capfd.readouterr().err])
    left = sorted(p.name for p in db.parent.iterdir() if p != db)
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        template.restore(db)
        where = traceback.extract_tb(result.exc_info[2])[-1]
        return Outcome(
            "wrong",
            f"{type(exc).__name__}: {first_line(exc)} "
            f"at {Path(where.filename).name}:{where.lineno} in {where.name}",
        )
    if left:
        shutil.rmtree(db.parent)
        return Outcome("wrong", f"exit {result.exit_code}, and beside the store: {left}")
    if result.exit_code == 0:
        runs = run_rows(db)
        template.restore(db)
        if runs != sorted([*template.runs, ("default", run)]):
            return Outcome("wrong", f"exit 0 but the runs are {runs}")
        return Outcome("ingested", "")
    lines = result.stderr.splitlines()
    if result.exit_code != 1 or len(lines) != 1 or not lines[0].startswith("Error: "):
        template.restore(db)
        return Outcome("wrong", f"exit {result.exit_code}, stderr {result.stderr!r}")
    if not template.unchanged(db):
        template.restore(db)
        return Outcome("wrong", f"{lines[0]!r} but the store changed")
    if shown:
        return Outcome("wrong", f"{lines[0]!r}, and also on stderr: {shown!r}")
    return Outcome("refused", lines[0])


def run_cases(
    name: str, plan: list[str], template: Template, work: Path, capfd: pytest.CaptureFixture[str]
) -> tuple[list[str], int]:
    """What went wrong over the cases of ``plan`` (one line each), and how many were
    refused."""
    failures, refused = [], 0
    for index, kind in enumerate(plan):
        case = make_case(name, index, kind)
        outcome = attempt(case, template, work, capfd)
        refused += outcome.verdict == "refused"
        if outcome.verdict == "wrong":
            failures.append(f"{case}: {outcome.text}")
    return failures, refused


# -- damage the fuzzing found, as named cases ---------------------------------------------------


def _npz(**arrays: Any) -> bytes:
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _encrypted(data: bytes) -> bytes:
    """A zip whose members carry the encryption flag (bit 0 of the flags, in the local and
    the central headers)."""
    out = bytearray(data)
    for signature, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        i = out.find(signature)
        while i >= 0:
            out[i + at] |= 1
            i = out.find(signature, i + 1)
    return bytes(out)


def _table(fmt: str, columns: Columns, **changes: Any) -> bytes:
    return write_table(Table(fmt, {**columns, **changes}))


def _npz_declaring(columns: Columns, name: str, n: int) -> bytes:
    """An npz of ``columns`` whose array ``name`` declares ``n`` values in its header (and
    holds the few it had): read whole, it would ask for n values of memory."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, values in columns.items():
            array = np.asarray(values)
            header = np.lib.format.header_data_from_array_1_0(array)
            if key == name:
                header["shape"] = (n,)
            with archive.open(f"{key}.npy", "w") as member:
                np.lib.format.write_array_header_1_0(member, header)
                member.write(array.tobytes())
    return out.getvalue()


def _hpatches_file(path: str) -> bytes:
    table = HPATCHES[path]
    assert isinstance(table, Table)
    return write_table(table)


def _descriptors(path: str, **first: float) -> bytes:
    """An HPatches descriptor file of the corpus with values of its first row changed."""
    table = HPATCHES[path]
    assert isinstance(table, Table)
    columns = {k: [first.get(k, v[0]), *v[1:]] for k, v in table.columns.items()}
    return write_table(Table(table.fmt, columns, table.header))


def _flip_at(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


NPZ = write_table(Table("npz", RANKED_INT))
PNG = _png((DISPARITY * 256).astype(np.uint16))
HEADER = b"group_id,item_id,score\n,label\n"  # a quoted name with a line break
NAMED: dict[str, tuple[str, str, bytes, str | None]] = {
    # name: (corpus, file, its bytes, a part of the error line, or None: ingested)
    "npz cut short": ("npz", "s.npz", NPZ[:100], "s.npz: cannot read as npz: File is not a zip"),
    "npz member damaged": (
        "npz",
        "s.npz",
        _flip_at(NPZ, NPZ.rindex(b"\x93NUMPY") + 130),  # in the last array's values
        "Bad CRC",
    ),
    "npz flagged encrypted": ("npz", "s.npz", _encrypted(NPZ), "is encrypted"),
    "npy named npz": ("npz", "s.npz", _npy(np.arange(3)), "a .npy array, not a zip of arrays"),
    "npz of complex scores": (
        "npz",
        "s.npz",
        _npz(**{**RANKED_INT, "score": np.array(RANKED_INT["score"]) * 1j}),
        "array 'score' of dtype complex128 is not a column",
    ),
    "a line break in a column name": (
        "csv",
        "s.csv",
        HEADER.replace(b"score\n", b'"score\n"') + b"q1,a,0.5,1\n",
        "columns: group_id, item_id, 'score\\n', label",
    ),
    "n_positives beyond 2^64": (
        "groups",
        "g.csv",
        _table("csv", GROUPS, n_positives=[2**64 + 5, 1, 1]),
        "column 'n_positives' row 1 is 18446744073709551621, more than 2,147,483,647",
    ),
    "VOC truth not UTF-8": (
        "voc",
        "gt/dog_test.txt",
        VOC_TRUTH.replace(b"000007", b"0\xff0007"),
        "dog_test.txt line 2: not UTF-8 text",
    ),
    "VOC line with a unit separator": (
        "voc",
        "comp1_cls_test_dog.txt",
        VOC_RESULTS.replace(b"000005 0.9", b"000005\x1f0.9"),
        "comp1_cls_test_dog.txt line 1: expected '<image_id> <confidence>'",
    ),
    "Parquet ids beyond 2^63": (
        "parquet",
        "s.parquet",
        _table("parquet", RANKED_INT, group_id=[10**30, 10**30, 10**30, 1, 1, 1, 2, 2]),
        None,
    ),
    "text in keypoint scores": (
        "keypoints-pairs",
        "m.csv",
        _table("csv", MATCHES, score=["high", *MATCHES["score"][1:]]),
        "m.csv: column 'score' must be numeric, found String",
    ),
    "matches without pair_id": (
        "keypoints-pairs",
        "m.csv",
        write_table(Table("csv", {k: v for k, v in MATCHES.items() if k != "pair_id"})),
        "m.csv: missing column 'pair_id'",
    ),
    "text in a homography": (
        "keypoints-pairs",
        "p.csv",
        _table("csv", PAIRS, h11=["one", 1.0]),
        "p.csv: column 'h11' must be numeric, found String",
    ),
    "an image 2^40 pixels wide": (
        "keypoints-pairs",
        "p.csv",
        _table("csv", PAIRS, width=[2**40, 64]),
        "column 'width' row 1 must be a whole number of pixels from 1 to 2,147,483,647",
    ),
    "a pair id with a line break": (
        "keypoints-homography-dir",
        "m.npz",
        _table("npz", MATCHES, pair_id=["a\nb", *MATCHES["pair_id"][1:]]),
        "no homography file for pair 'a\\nb' ('a\\nb', 'a\\nb.npy' or 'a\\nb.txt')",
    ),
    "pair ids beyond 2^63": (
        "keypoints-disparity-dir",
        "m.ndjson",
        _table("ndjson", MATCHES, pair_id=[2**63 + (p == "b") for p in MATCHES["pair_id"]]),
        "no disparity map for pair '9223372036854775808'",
    ),
    "an empty homography file": (
        "keypoints-homography-dir",
        "H/a",
        b"\n",
        "H/a: expected a 3x3 homography, found shape (0,)",
    ),
    "a .npy header of zeros": (
        "keypoints-homography-dir",
        "H/b.npy",
        (lambda h: h[:10] + bytes(40) + h[50:])(_npy(np.array(SHIFT).reshape(3, 3))),
        "H/b.npy: cannot read a 3x3 homography",
    ),
    "an .npz under a .npy name": (
        "keypoints-disparity-dir",
        "D/a.npy",
        _npz(d=DISPARITY),
        "D/a.npy: cannot read a disparity map: an .npz archive, not one array",
    ),
    "a PNG cut short": ("keypoints-disparity-dir", "D/b.png", PNG[:-20], "not a valid PNG file"),
    "a PNG with damaged image data": (
        "keypoints-disparity-dir",
        "D/b.png",
        _flip_at(PNG, PNG.index(b"IDAT") + 14),  # libpng would say "invalid code lengths"
        "fails its CRC",
    ),
    "counts beyond 2^63": (
        "outcomes",
        "o.txt",
        _table("tsv", COUNTS, tp=[2**64 + 5, 0, 5]),
        "column 'tp' row 1 is 18446744073709551621; counts must be whole numbers from 0 to",
    ),
    "a count of 1e20 written as a float": (
        "outcomes",
        "o.txt",
        _table("tsv", COUNTS, tp=[1e20, 0.0, 5.0]),
        "column 'tp' row 1 is 1e+20; counts must be whole numbers from 0 to 9,007,199,254,740,992",
    ),
    "counts near 2^62": (
        "outcomes",
        "o.txt",
        _table("tsv", COUNTS, tp=[2**62, 0, 5]),
        "column 'tp' row 1 is 4611686018427387904; counts must be whole numbers from 0 to "
        "9,007,199,254,740,992",
    ),
    "a score beyond 2^53 in CSV": (
        "csv",
        "s.csv",
        _table("csv", RANKED, score=[2**53 + 1, *RANKED["score"][1:]]),
        "s.csv: column 'score' row 1: 9007199254740993 is not exactly a float64",
    ),
    "a score of 21 digits in CSV": (
        "csv",
        "s.csv",
        write_table(Table("csv", RANKED)).replace(b"0.5", b"0.50000000000000000001"),
        "s.csv: column 'score' row 2: 0.50000000000000000001 is not exactly a float64",
    ),
    "integer scores beyond 2^53 in Parquet": (
        "parquet",
        "s.parquet",
        _table("parquet", RANKED_INT, score=[2**53 + 1] + [2**53 - i for i in range(7)]),
        "s.parquet: column 'score' row 1: 9007199254740993 is not exactly a float64",
    ),
    "a score beyond 2^53 in NDJSON": (
        "ndjson",
        "s.ndjson",
        _table("ndjson", RANKED, score=[2**53 + 1] + [2**53 - i for i in range(7)]),
        "s.ndjson: column 'score' row 1: 9007199254740993 is not exactly a float64",
    ),
    "a TREC score beyond 2^53": (
        "trec",
        "run.txt",
        TREC_RUN.replace(b" 2.5 ", b" 9007199254740993 "),
        "run.txt line 1: score '9007199254740993' is not exactly a float64",
    ),
    "an npz array declaring 2^40 values": (
        "npz",
        "s.npz",
        _npz_declaring(RANKED_INT, "score", 1 << 40),
        "s.npz: arrays have different lengths",
    ),
    "a groups row of no list": (
        "groups",
        "g.csv",
        _table("csv", GROUPS, group_id=["q1", "q2", "q9"]),
        "g.csv: 1 row matches no list of the retrieval rows ingested: group_id 'q9'",
    ),
    "outcomes as lists": (
        "outcomes-items",
        "o.parquet",
        _table("parquet", OUTCOMES, outcome=[[o] for o in OUTCOMES["outcome"]]),
        "column 'outcome' holds List(String), not words",
    ),
    "a descriptor value beyond float32": (
        "hpatches",
        "DESC/v_b/e3.csv",
        _descriptors("DESC/v_b/e3.csv", c1=1e308),
        "DESC/v_b/e3.csv line 1: a value is infinite (or beyond float32",
    ),
    "descriptor lines ended by a lone CR": (
        "hpatches",
        "DESC/i_a/e1.csv",
        _descriptors("DESC/i_a/e1.csv").replace(b"\n", b"\r"),
        "DESC/i_a/e1.csv line 1 column 4: '",  # one line: polars splits at LF alone
    ),
    "a descriptor value with a space after it": (
        "hpatches",
        "DESC/v_b/t5.csv",
        _descriptors("DESC/v_b/t5.csv").replace(b",", b" ,", 1),
        "DESC/v_b/t5.csv line 1 column 1: '",
    ),
    "a verification pair of 7 fields": (
        "hpatches-tasks",
        "tasks/verif_pos_split-a.csv",
        _hpatches_file("tasks/verif_pos_split-a.csv").replace(b"v_b,5,2", b"v_b,5,2,9"),
        "verif_pos_split-a.csv line 3: 7 fields, but the header has 6",
    ),
    "a task file not UTF-8": (
        "hpatches-tasks",
        "tasks/retr_queries_split-a.csv",
        _hpatches_file("tasks/retr_queries_split-a.csv").replace(b"v_b", b"v_\xff"),
        "retr_queries_split-a.csv line 3: not UTF-8 text",
    ),
    "a stray quote in a task file": (
        "hpatches-tasks",
        "tasks/verif_neg_intra_split-a.csv",
        _hpatches_file("tasks/verif_neg_intra_split-a.csv").replace(b"v_b,1", b'v_b",1'),
        "verif_neg_intra_split-a.csv line 3: a stray quote in 'v_b\"'",
    ),
}


@pytest.mark.slow_after(6)  # a family of 38 cases: the fast loop runs the first 6
@pytest.mark.parametrize("name", list(NAMED))
def test_named_damage(
    name: str, template: Template, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    corpus, target, data, message = NAMED[name]
    files = {**make_case(corpus, 0, "none").files, target: data}
    outcome = attempt(Case(corpus, 0, name, target, files), template, tmp_path, capfd)
    if message is None:
        assert outcome == ("ingested", "")
    else:
        assert outcome.verdict == "refused", outcome.text
        assert message in outcome.text


# -- the tests ---------------------------------------------------------------------------------


@pytest.mark.slow_after(3)  # a family of 18 cases: the fast loop runs the first 3
@pytest.mark.parametrize("name", list(CORPORA))
def test_every_corpus_is_valid_input(
    name: str, template: Template, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Each valid corpus ingests through the whole app (the other tests call its ingest
    command alone), and is refused with a folder in place of one of its files."""
    valid = attempt(make_case(name, 0, "none"), template, tmp_path, capfd, True)
    assert valid == ("ingested", "")
    assert attempt(make_case(name, 1, "directory"), template, tmp_path, capfd, True).verdict == (
        "refused"
    )


@pytest.mark.slow_after(3)  # a family of 18 cases: the fast loop runs the first 3
@pytest.mark.parametrize("name", list(CORPORA))
def test_a_damaged_input_is_ingested_or_refused_in_one_line(
    name: str, template: Template, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The fast loop's share: a truncation or a byte flip, and one other kind, per format."""
    failures, _ = run_cases(name, fast_kinds(name), template, tmp_path, capfd)
    assert not failures, "\n".join(failures)


@pytest.mark.slow  # every file of every corpus: about 5 s a kind
@pytest.mark.parametrize("kind", list(SPECIAL))
def test_what_is_not_a_file_is_refused_in_every_role(
    kind: str, template: Template, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A FIFO (which a read would wait on for ever), a link to a device, a symbolic link
    loop or a link to nothing in place of each file of every corpus (each its cases damage):
    refused in one line
    (or, where the file is one of several a folder may hold, ingested without it)."""
    failures = []
    for name, corpus in CORPORA.items():
        for i, target in enumerate(corpus.damaged()):  # a folder of files each
            files = {**make_case(name, 0, "none").files, target: SPECIAL[kind]}
            outcome = attempt(Case(name, i, kind, target, files), template, tmp_path, capfd)
            if outcome.verdict == "wrong":
                failures.append(f"{name}, {target}: {outcome.text}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CORPORA))
def test_every_kind_of_damage_to_every_format(
    name: str, template: Template, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    failures, refused = run_cases(name, kinds(name), template, tmp_path, capfd)
    assert not failures, "\n".join(failures)
    # most kinds of damage make the input invalid: the refusals are what is under test here
    assert refused >= len(KINDS) // 2


def test_the_slow_suite_tries_every_kind_on_every_format_in_500_files() -> None:
    plans = {name: kinds(name) for name in CORPORA}
    assert all(sorted(plan) == sorted(KINDS) for plan in plans.values())
    assert sum(map(len, plans.values())) >= 500


def test_every_input_format_and_task_has_a_corpus() -> None:
    """A format added to the readers (sources.FORMATS) or a task needs a corpus here."""
    args = [corpus.args.split() for corpus in CORPORA.values()]
    formats = {a[a.index("--format") + 1] for a in args if "--format" in a}
    formats |= {t.fmt for c in CORPORA.values() for t in c.files.values() if isinstance(t, Table)}
    assert set(FORMATS) <= formats
    assert {*TASKS, "keypoints", "outcomes"} <= {a[a.index("-t") + 1] for a in args if "-t" in a}
    assert "hpatches" in formats

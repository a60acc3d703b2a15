"""The HPatches benchmark's task files: the split's sequences, the verification pairs and the
retrieval queries and distractors, read and checked against the descriptor folder.

Formats, as hpatches/hpatches-benchmark writes and reads them (``python/utils/tasks.py``
``gen_verif`` / ``gen_retrieval`` / ``eval_*``, ``docs/tasks.md``, ``tasks/splits/splits.json``
@ e0c993c7756d26129fef47f752f79e4cfe6681aa):

- ``splits/splits.json`` (older checkouts: ``splits.json`` beside the task files):
  ``{"a": {"name": "a", "test": [sequences], "train": [...]}, ...}``, splits ``a``, ``b``,
  ``c``, ``full``, ``illum``, ``view``;
- ``verif_pos_split-X.csv``, ``verif_neg_inter_split-X.csv``, ``verif_neg_intra_split-X.csv``:
  header ``s1,t1,idx1,s2,t2,idx2``, one pair per line: sequence, image (0 = ``ref``, 1..5 = the
  noise level's images, read as ``id2t`` / MATLAB's ``t1 + 1`` into ``obj.sets``) and patch
  index (0-based) of each side;
- ``retr_queries_split-X.csv``, ``retr_distractors_split-X.csv``: header ``s,idx``, one
  ``ref`` patch per line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evalstore.errors import InvalidInput, option
from evalstore.ingest.formats.hpatches import Descriptors
from evalstore.ingest.sources import READ_ERRORS, check_file, first_line, names_text

__all__ = [
    "SPLITS",
    "TaskFiles",
    "check_patches",
    "read_split",
    "read_task_files",
]

SPLITS = ("a", "b", "c", "full", "illum", "view")
PAIR_COLUMNS = ("s1", "t1", "idx1", "s2", "t2", "idx2")
PATCH_COLUMNS = ("s", "idx")
TARGETS = 5  # images per noise level besides ref: t is 0..5


@dataclass
class TaskFiles:
    """The task files one ingest reads: each a frame with its columns and ``line`` (the
    line of the file it came from, the header being line 1), or None when not needed."""

    pos: pl.DataFrame | None = None
    neg_inter: pl.DataFrame | None = None
    neg_intra: pl.DataFrame | None = None
    queries: pl.DataFrame | None = None
    distractors: pl.DataFrame | None = None
    paths: dict[str, Path] | None = None  # which file each frame came from

    def sequences(self) -> list[str]:
        """Every sequence the files name, in first-seen order."""
        seen: dict[str, None] = {}
        for frame in (self.pos, self.neg_inter, self.neg_intra, self.queries, self.distractors):
            if frame is not None:
                for col in ("s1", "s2", "s"):
                    if col in frame.columns:
                        seen.update(dict.fromkeys(frame[col].unique(maintain_order=True)))
        return list(seen)


def read_split(tasks_dir: str | os.PathLike[str], split: str) -> list[str]:
    """The test sequences of ``split`` from the tasks folder's ``splits.json``."""
    if split not in SPLITS:
        raise InvalidInput(f"unknown {option('split', split)}; use one of {', '.join(SPLITS)}")
    folder = _folder(tasks_dir)
    candidates = [folder / "splits" / "splits.json", folder / "splits.json"]
    path = next((p for p in candidates if p.is_file()), candidates[0])
    check_file(path)
    try:
        splits = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot read as JSON: {first_line(exc)}") from None
    entry = splits.get(split) if isinstance(splits, dict) else None
    test = entry.get("test") if isinstance(entry, dict) else None
    if not isinstance(test, list) or not all(isinstance(s, str) and s for s in test):
        raise InvalidInput(f"{path}: no split {split!r} with a list of test sequences")
    if not test:
        raise InvalidInput(f"{path}: split {split!r} has no test sequences")
    return list(dict.fromkeys(test))


def _folder(tasks_dir: str | os.PathLike[str]) -> Path:
    folder = Path(tasks_dir)
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise InvalidInput(
            f"{folder}: {what} ({option('tasks_dir')} the benchmark's tasks/ folder)"
        )
    return folder


def read_task_files(
    tasks_dir: str | os.PathLike[str], split: str, tasks: tuple[str, ...]
) -> TaskFiles:
    """The task files of ``split`` that ``tasks`` need (matching needs none)."""
    folder = _folder(tasks_dir)
    names: dict[str, str] = {}
    if "verification" in tasks:
        names |= {
            "pos": f"verif_pos_split-{split}.csv",
            "neg_inter": f"verif_neg_inter_split-{split}.csv",
            "neg_intra": f"verif_neg_intra_split-{split}.csv",
        }
    if "retrieval" in tasks:
        names |= {
            "queries": f"retr_queries_split-{split}.csv",
            "distractors": f"retr_distractors_split-{split}.csv",
        }
    paths = {key: folder / name for key, name in names.items()}
    frames = {
        key: _read_table(path, PATCH_COLUMNS if key in ("queries", "distractors") else PAIR_COLUMNS)
        for key, path in paths.items()
    }
    return TaskFiles(**frames, paths=paths)


def _read_table(path: Path, columns: tuple[str, ...]) -> pl.DataFrame:
    """A task file: ``columns`` (sequences as text, the others integers >= 0) and ``line``."""
    check_file(path)
    try:
        raw = pl.read_csv(path, infer_schema=False)
    except READ_ERRORS as exc:
        raise _diagnose(path, first_line(exc)) from None
    missing = [c for c in columns if c not in raw.columns]
    if missing:
        raise InvalidInput(
            f"{path}: missing column {missing[0]!r} (columns: {names_text(raw.columns)}; "
            f"expected {','.join(columns)})"
        )
    if raw.height == 0:
        raise InvalidInput(f"{path}: no rows")
    out = {"line": pl.int_range(2, raw.height + 2, eager=True)}
    for col in columns:
        text = raw[col].str.strip_chars()
        if col.startswith("s"):
            empty = text.is_null() | (text == "")
            if empty.any():
                raise InvalidInput(f"{path} line {_line(empty)}: column {col!r} is empty")
            out[col] = text
            continue
        value = text.cast(pl.Int64, strict=False)
        bad = value.is_null() | (value < 0).fill_null(True)
        if bad.any():
            i = int(bad.arg_true()[0])
            raise InvalidInput(
                f"{path} line {i + 2}: column {col!r} is {raw[col][i]!r}, not an index (an "
                "integer from 0)"
            )
        out[col] = value
    return pl.DataFrame(out)


def _diagnose(path: Path, reason: str) -> InvalidInput:
    """The first line of a task file that polars refused: not UTF-8 text, a stray quote (a
    value is a sequence name or an index: a quote may only wrap one whole), or another number
    of fields than the header. Lines end at a ``\n``, as polars splits them."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return InvalidInput(f"{path}: cannot read: {exc.strerror or exc}")
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if len(lines) > 1 and not lines[-1]:  # the ending of the last line
        lines.pop()
    width = 0
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8").removesuffix("\r")
        except UnicodeDecodeError:
            return InvalidInput(f"{path} line {number}: not UTF-8 text")
        fields = line.split(",")
        for value in fields:
            if '"' in value.removeprefix('"').removesuffix('"') or value.count('"') == 1:
                return InvalidInput(f"{path} line {number}: a stray quote in {value!r}")
        if number == 1:
            width = len(fields)
        elif line.strip() and len(fields) != width:
            return InvalidInput(
                f"{path} line {number}: {len(fields)} fields, but the header has {width}"
            )
    return InvalidInput(f"{path}: cannot read as CSV: {reason}")


def _line(mask: pl.Series) -> int:
    return int(mask.arg_true()[0]) + 2


def check_patches(files: TaskFiles, descriptors: Descriptors) -> None:
    """Every patch the task files name exists: its sequence was read, its image index is
    0..5 and its patch index below the sequence's number of patches."""
    sizes = pl.DataFrame(
        {"_s": list(descriptors.sizes), "_n": list(descriptors.sizes.values())},
        schema={"_s": pl.String, "_n": pl.Int64},
    )
    for key, path in (files.paths or {}).items():
        frame = getattr(files, key)
        sides = (
            [("s1", "t1", "idx1"), ("s2", "t2", "idx2")]
            if "s1" in frame.columns
            else [("s", None, "idx")]
        )
        for s, t, idx in sides:
            if t is not None:
                bad_t = frame[t] > TARGETS
                if bad_t.any():
                    i = int(bad_t.arg_true()[0])
                    raise InvalidInput(
                        f"{path} line {frame['line'][i]}: column {t!r} is {frame[t][i]}; images "
                        "are 0 (ref) to 5"
                    )
            joined = frame.select("line", s, idx).join(
                sizes, left_on=s, right_on="_s", how="left", maintain_order="left"
            )
            bad = joined["_n"].is_null() | (joined[idx] >= joined["_n"]).fill_null(True)
            if bad.any():
                row = joined.row(int(bad.arg_true()[0]), named=True)
                if row["_n"] is None:
                    raise InvalidInput(
                        f"{path} line {row['line']}: sequence {row[s]!r} is not in "
                        f"{descriptors.folder}"
                    )
                raise InvalidInput(
                    f"{path} line {row['line']}: column {idx!r} is {row[idx]}, but "
                    f"{descriptors.path(row[s])} has {row['_n']:,} patches (0-based indices)"
                )

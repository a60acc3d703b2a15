"""The three HPatches tasks' ranked lists from a descriptor folder and the task files, as
the benchmark defines them, written to Parquet parts of a work folder in bounded memory.

Followed: hpatches/hpatches-benchmark @ e0c993c7756d26129fef47f752f79e4cfe6681aa, the MATLAB
code (``matlab/+bench/verification.m``, ``+verification/compute.m``, ``+verification/eval.m``,
``matching.m``, ``+matching/eval.m``, ``retrieval.m``, ``+retrieval/eval.m``), which the
``hpatches`` protocol reproduces, and the Python code (``python/utils/tasks.py``). Scores are
``-distance``, labels +1 / -1 / 0; every list keeps the benchmark's order of its items (for
``--ties input``).

- **verification**: 12 lists, ``<noise>/<negatives>/<balance>`` (e.g. ``e/inter/balanced``):
  for each noise level ``e``/``h``/``t`` the pairs of ``verif_pos`` (+1, items ``pos/<i>``,
  the i-th pair, 0-based) then those of ``verif_neg_inter`` or ``verif_neg_intra`` (-1, items
  ``inter/<i>`` or ``intra/<i>``), images read through the noise level's set (``compute.m``:
  ``descs.getdesc(descs, pairs.s1, geom_noise, pairs.t1 + 1, pairs.idx1 + 1)``).
  ``balanced``: every pair; ``imbalanced``: the first ``floor(0.2 * negatives)`` positives
  and every negative (``eval.m``: ``pos_dists(1:floor(numel(neg_dists)*opts.posneg_ratio))``
  with ``posneg_ratio`` 0.2; the Python code keeps ``int(0.2 * positives)``, the same number
  when, as in the benchmark's files, there are as many positives as negatives).
- **matching**: one list per sequence of the split and image ``e1`` .. ``t5``,
  ``<sequence>/<image>``: for each patch of ``ref`` (item = its index) its nearest neighbour
  among the image's patches, +1 when it is the same index (``isValid = idx(1,:) == 1:n``),
  ``n_positives`` = the number of patches (``'numPositives', numel(isValid)``); the Python
  ``eval_matching``: ``idx = np.argmin(D, axis=1)``, ``m_d = D[gt_l, idx]``.
- **retrieval**: one list per query and noise level, ``<sequence>/<idx>/<noise>``: the query
  is the ``ref`` patch; its 5 positives, the same index in the noise level's 5 images (+1,
  items ``<sequence>/<image>/<idx>``, first, as ``all_labels = [ones(size(pos_dists)); ...]``),
  then the first ``distractors`` ``ref`` patches of the distractor file (``opts.num_neg``,
  2000 by default, ``inf`` for the article's numbers; items ``<sequence>/ref/<idx>``), -1, or
  0 (ignored) when of the query's own sequence (``neg_labels(ignored) = 0``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evalstore.errors import InvalidInput
from evalstore.ingest.formats.hpatches import (
    NOISES,
    Descriptors,
    blocks,
    gather,
    nearest,
    paired,
    sequence_kind,
)
from evalstore.ingest.formats.hpatches_tasks import TaskFiles

__all__ = ["IMBALANCE", "Parts", "matching_lists", "retrieval_lists", "verification_lists"]

#: positives per negative of the imbalanced verification variant (``'posneg_ratio', 0.2``)
IMBALANCE = 0.2
_PAIR_CHUNK = 1 << 15  # verification pairs whose descriptors are gathered at once
_PART_ROWS = 1 << 20  # rows per Parquet part

Progress = Callable[[str, int, int | None], None] | None


@dataclass
class Parts:
    """A task's rows, written as Parquet parts of about ``_PART_ROWS`` rows."""

    folder: Path
    task: str
    paths: list[Path] = field(default_factory=list)
    buffer: list[pl.DataFrame] = field(default_factory=list)
    rows: int = 0

    buffered: int = 0

    def add(self, frame: pl.DataFrame) -> None:
        self.buffer.append(frame)
        self.rows += frame.height
        self.buffered += frame.height
        if self.buffered >= _PART_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            path = self.folder / f"{self.task}-{len(self.paths):05d}.parquet"
            pl.concat(self.buffer).write_parquet(path, statistics=False)
            self.paths.append(path)
            self.buffer, self.buffered = [], 0


def _rows(
    group_id: str | pl.Series, items: pl.Series, dist: np.ndarray, label: np.ndarray
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "group_id": group_id if isinstance(group_id, pl.Series) else [group_id] * len(dist),
            "item_id": items,
            "score": -np.asarray(dist, np.float64),
            "label": np.asarray(label, np.int8),
        },
        schema_overrides={"group_id": pl.String},
    )


def _pair_distances(desc: Descriptors, pairs: pl.DataFrame, noise: str) -> np.ndarray:
    """The distance of each pair, its images taken from the noise level's set."""
    out = np.empty(pairs.height, np.float64)
    for start in range(0, pairs.height, _PAIR_CHUNK):
        part = pairs.slice(start, _PAIR_CHUNK)
        sides = []
        for s, t, i in (("s1", "t1", "idx1"), ("s2", "t2", "idx2")):
            images = part.select(
                pl.when(pl.col(t) == 0)
                .then(pl.lit("ref"))
                .otherwise(pl.lit(noise) + pl.col(t).cast(pl.String))
            ).to_series()
            sides.append(gather(desc, part[s].to_numpy(), images, part[i].to_numpy()))
        out[start : start + part.height] = paired(sides[0], sides[1], desc.distance)
    return out


def verification_lists(
    desc: Descriptors, files: TaskFiles, parts: Parts, progress: Progress = None
) -> pl.DataFrame:
    """The 12 verification lists into ``parts``; returns their groups frame."""
    pos, inter, intra = files.pos, files.neg_inter, files.neg_intra
    if pos is None or inter is None or intra is None:
        raise InvalidInput("verification needs the verif_pos / verif_neg_* task files")
    frames = {"inter": inter, "intra": intra}
    pos_items = pl.Series([f"pos/{i}" for i in range(pos.height)], dtype=pl.String)
    meta: dict[str, list[str]] = {"group_id": [], "noise": [], "negatives": [], "balance": []}
    for step, noise in enumerate(NOISES):
        d_pos = _pair_distances(desc, pos, noise)
        for negs, frame in frames.items():
            d_neg = _pair_distances(desc, frame, noise)
            neg_items = pl.Series([f"{negs}/{i}" for i in range(frame.height)], dtype=pl.String)
            for balance in ("balanced", "imbalanced"):
                n_pos = pos.height
                if balance == "imbalanced":
                    n_pos = min(n_pos, math.floor(frame.height * IMBALANCE))
                gid = f"{noise}/{negs}/{balance}"
                parts.add(_rows(gid, pos_items[:n_pos], d_pos[:n_pos], np.ones(n_pos)))
                parts.add(_rows(gid, neg_items, d_neg, -np.ones(frame.height)))
                for key, value in zip(meta, (gid, noise, negs, balance), strict=True):
                    meta[key].append(value)
        if progress is not None:
            progress("hpatches verification", step + 1, len(NOISES))
    parts.flush()
    return pl.DataFrame(meta)


def matching_lists(
    desc: Descriptors,
    sequences: list[str],
    parts: Parts,
    block_rows: int | None = None,
    progress: Progress = None,
) -> pl.DataFrame:
    """One list per (sequence, image e1..t5) into ``parts``; returns the groups frame."""
    meta: dict[str, list[object]] = {
        k: [] for k in ("group_id", "n_positives", "sequence", "kind", "noise", "image")
    }
    for step, seq in enumerate(sequences):
        ref = desc.image(seq, "ref")
        n = ref.shape[0]
        items = pl.Series(np.arange(n, dtype=np.int32))
        for noise in NOISES:
            for k in range(1, 6):
                image = f"{noise}{k}"
                idx, dist = nearest(ref, desc.image(seq, image), desc.distance, block_rows)
                label = np.where(idx == np.arange(n), 1, -1)
                gid = f"{seq}/{image}"
                parts.add(_rows(gid, items, dist, label))
                row = (gid, n, seq, sequence_kind(seq), noise, image)
                for key, value in zip(meta, row, strict=True):
                    meta[key].append(value)
        if progress is not None:
            progress("hpatches matching", step + 1, len(sequences))
    parts.flush()
    return pl.DataFrame(meta, schema_overrides={"n_positives": pl.Int64})


def retrieval_lists(
    desc: Descriptors,
    files: TaskFiles,
    parts: Parts,
    distractors: int | None,
    block_rows: int | None = None,
    progress: Progress = None,
) -> pl.DataFrame:
    """One list per (query, noise level) into ``parts``; returns the groups frame."""
    queries, pool = files.queries, files.distractors
    paths = files.paths or {}
    if queries is None or pool is None:
        raise InvalidInput("retrieval needs the retr_queries / retr_distractors task files")
    if distractors is not None:
        pool = pool.head(distractors)
    for frame, key in ((queries, "queries"), (pool, "distractors")):
        dup = frame.select("s", "idx").is_duplicated()
        if dup.any():
            first, second = (int(i) for i in dup.arg_true()[:2])
            raise InvalidInput(
                f"{paths.get(key)} line {frame['line'][second]}: patch "
                f"({frame['s'][second]}, {frame['idx'][second]}) appears twice (first at line "
                f"{frame['line'][first]})"
            )
    q_seq, q_idx = queries["s"].to_numpy(), queries["idx"].to_numpy()
    d_seq = pool["s"].to_numpy()
    q_desc = gather(desc, q_seq, ["ref"] * len(q_seq), q_idx)
    d_desc = gather(desc, d_seq, ["ref"] * len(d_seq), pool["idx"].to_numpy())
    d_items = pool.select(pl.format("{}/ref/{}", "s", "idx")).to_series()
    n_d = len(d_seq)
    meta: dict[str, list[str]] = {k: [] for k in ("group_id", "sequence", "kind", "noise")}
    # queries per block: a part's rows per noise level, unless block_rows says otherwise
    step = block_rows or max(1, _PART_ROWS // (5 + n_d))
    for start, dist in blocks(q_desc, d_desc, desc.distance, step):
        b = dist.shape[0]
        seqs, idxs = q_seq[start : start + b], q_idx[start : start + b]
        which = np.tile(np.arange(n_d), b)
        owner = np.repeat(np.arange(b), n_d)
        neg_label = np.where(d_seq[which] == seqs[owner], 0, -1)
        for noise in NOISES:
            images = [f"{noise}{k}" for k in range(1, 6)]
            pos_desc = gather(desc, np.repeat(seqs, 5), images * b, np.repeat(idxs, 5))
            d_pos = paired(np.repeat(q_desc[start : start + b], 5, axis=0), pos_desc, desc.distance)
            gids = pl.Series([f"{s}/{i}/{noise}" for s, i in zip(seqs, idxs, strict=True)])
            pos_items = pl.Series(
                [f"{s}/{im}/{i}" for s, i in zip(seqs, idxs, strict=True) for im in images]
            )
            positives = _rows(
                gids.gather(np.repeat(np.arange(b), 5)), pos_items, d_pos, np.ones(5 * b)
            ).with_columns(
                _q=pl.Series(np.repeat(np.arange(b), 5)), _o=pl.Series(np.tile(np.arange(5), b))
            )
            negatives = _rows(
                gids.gather(owner), d_items.gather(which), dist.ravel(), neg_label
            ).with_columns(_q=pl.Series(owner), _o=pl.Series(5 + which))
            parts.add(pl.concat([positives, negatives]).sort("_q", "_o").drop("_q", "_o"))
            meta["group_id"] += gids.to_list()
            meta["sequence"] += [str(s) for s in seqs]
            meta["kind"] += [sequence_kind(str(s)) for s in seqs]
            meta["noise"] += [noise] * b
        if progress is not None:
            progress("hpatches retrieval queries", start + b, len(q_seq))
    parts.flush()
    return pl.DataFrame(meta)

"""Real keypoint matches of the HPatches-style sequences, for the geometric matching metrics.

:func:`keypoint_matches` detects and describes keypoints in the reference and in each target of
a sequence independently, with each descriptor's own OpenCV detector, and matches them (mutual
nearest neighbours), with the true homographies as ground truth (``task="keypoints"``). See
:mod:`evalstore.demo.tasks` for the whole demo data. Deterministic; no function here touches a
database or prints; OpenCV is imported only when a function needs it.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceType
from typing import Any

import numpy as np
import numpy.typing as npt

from evalstore.demo.descriptors import check_descriptor, is_binary, make_extractor, weaken
from evalstore.demo.patches import sorted_keypoints
from evalstore.demo.sequences import Sequence, check_sequences
from evalstore.errors import InvalidInput

__all__ = ["keypoint_matches"]

Arrays = dict[str, np.ndarray]


def _detector(descriptor: str, max_keypoints: int) -> Any:
    """The OpenCV object that detects and describes keypoints for ``descriptor``."""
    import cv2

    if descriptor in ("sift", "sift_weak"):
        return cv2.SIFT_create(nfeatures=max_keypoints)
    if descriptor == "orb":
        return cv2.ORB_create(nfeatures=max_keypoints)
    return make_extractor(descriptor)


def _detect_and_describe(
    image: npt.NDArray[np.uint8], descriptor: str, max_keypoints: int, extractor: Any
) -> tuple[list[Any], np.ndarray | None]:
    """Each descriptor's own detector and descriptor, the ``max_keypoints`` strongest.

    The keypoints are sorted (strongest first, then by position) before they are described,
    so that the result does not depend on the order threads found them in.
    """
    kps = sorted_keypoints(extractor.detect(image, None))[:max_keypoints]
    if not kps:
        return [], None
    kps, desc = extractor.compute(image, kps)
    if desc is None or len(kps) == 0:
        return [], None
    if descriptor == "sift_weak":
        desc = weaken(desc)
    return list(kps), desc


def keypoint_matches(
    sequences: SequenceType[Sequence], descriptor: str, max_keypoints: int = 500
) -> tuple[Arrays, Arrays]:
    """Real keypoint matching of each reference with each of its targets.

    Keypoints are detected and described independently in the reference and in each target
    with the descriptor's own OpenCV detector (SIFT for ``sift_weak``), the strongest
    ``max_keypoints`` kept, then matched by brute force with mutual nearest neighbours
    (``cv2.BFMatcher(norm, crossCheck=True)``, L2 or Hamming).

    Returns:
        ``(matches, pairs)``: ``matches`` has ``pair_id`` (``<seq>/<k>``, k = 1..5), ``x0``,
        ``y0`` (reference), ``x1``, ``y1`` (target) and ``score`` = ``-distance``; ``pairs``
        has ``pair_id``, ``h11``..``h33`` (the true homography, reference -> target),
        ``width``, ``height`` (of the reference), ``sequence``, ``kind`` and ``target``.
        Ready for ``Store.ingest(matches, task="keypoints", pairs=pairs, ...)``.

    Raises:
        InvalidInput: unknown or unavailable descriptor, ``max_keypoints`` < 1.
    """
    import cv2

    check_descriptor(descriptor)
    check_sequences(sequences)
    if max_keypoints < 1:
        raise InvalidInput(f"max_keypoints must be at least 1, got {max_keypoints}")
    norm = cv2.NORM_HAMMING if is_binary(descriptor) else cv2.NORM_L2
    matcher = cv2.BFMatcher(norm, crossCheck=True)
    extractor = _detector(descriptor, max_keypoints)
    cols: dict[str, list[np.ndarray]] = {
        k: [] for k in ("pair_id", "x0", "y0", "x1", "y1", "score")
    }
    pairs: dict[str, list[Any]] = {"pair_id": []}
    pairs.update({f"h{i}{j}": [] for i in (1, 2, 3) for j in (1, 2, 3)})
    pairs.update({k: [] for k in ("width", "height", "sequence", "kind", "target")})
    for seq in sequences:
        kp0, d0 = _detect_and_describe(seq.ref, descriptor, max_keypoints, extractor)
        p0 = np.array([k.pt for k in kp0], dtype=np.float64).reshape(-1, 2)
        for k, (image, h) in enumerate(zip(seq.targets, seq.homographies, strict=True)):
            pair_id = f"{seq.name}/{k + 1}"
            kp1, d1 = _detect_and_describe(image, descriptor, max_keypoints, extractor)
            p1 = np.array([kp.pt for kp in kp1], dtype=np.float64).reshape(-1, 2)
            found = [] if d0 is None or d1 is None else matcher.match(d0, d1)
            q = np.array([m.queryIdx for m in found], dtype=np.int64)
            t = np.array([m.trainIdx for m in found], dtype=np.int64)
            order = np.lexsort((p1[t, 1], p1[t, 0], p0[q, 1], p0[q, 0]))
            found = [found[j] for j in order]
            q, t = q[order], t[order]
            cols["pair_id"].append(np.full(q.size, pair_id))
            cols["x0"].append(p0[q, 0])
            cols["y0"].append(p0[q, 1])
            cols["x1"].append(p1[t, 0])
            cols["y1"].append(p1[t, 1])
            cols["score"].append(-np.array([m.distance for m in found], dtype=np.float64))
            hn = np.asarray(h, dtype=np.float64) / h[2, 2]
            pairs["pair_id"].append(pair_id)
            for i in range(3):
                for j in range(3):
                    pairs[f"h{i + 1}{j + 1}"].append(float(hn[i, j]))
            pairs["width"].append(seq.ref.shape[1])
            pairs["height"].append(seq.ref.shape[0])
            pairs["sequence"].append(seq.name)
            pairs["kind"].append(seq.kind)
            pairs["target"].append(str(k + 1))
    matches = {k: np.concatenate(v) for k, v in cols.items()}
    matches["pair_id"] = matches["pair_id"].astype(str)
    out_pairs = {k: np.array(v) for k, v in pairs.items()}
    for size in ("width", "height"):
        out_pairs[size] = out_pairs[size].astype(np.int64)
    return matches, out_pairs

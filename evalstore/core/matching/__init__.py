"""Geometric matching metrics: the NumPy reference definitions (``docs/metrics.md``, "Geometric
matching metrics").

Every per-pair metric here is also written in SQL (``sql/metrics/<name>.sql``) and checked against
these functions to 1e-12 relative, so each value is computed with the float formula its docstring
gives, in that operation order (float64, left to right):

- point transfer by a homography: :func:`evalstore.core.geometry.transfer` (its module gives the
  formula);
- match distance (a square root of products, not ``hypot`` nor ``**2``)::

      d = sqrt((x1 - gx)*(x1 - gx) + (y1 - gy)*(y1 - gy))

Conventions shared by every function:

- One row per match: ``pair`` is the pair id of each match (integer codes or any sortable array),
  ``x1, y1`` the matched point in image 1, ``gx, gy`` its ground truth in image 1. Non-finite
  coordinates are refused (:class:`~evalstore.errors.InvalidInput` naming the index): filter
  invalid ground truth (e.g. a zero disparity) out before, as ``docs/metrics.md`` says.
- ``pairs``: optionally every pair id of the evaluation, including pairs without any (valid)
  match. Results are ``(pair_ids, values)`` like :func:`evalstore.core.ranking.per_list`, with
  ``pair_ids`` the sorted distinct ids (of ``pairs`` if given, else of ``pair``); every match's
  pair must then be one of ``pairs``.
- A homography is a (3, 3) float64 array; a missing one (failed estimation) is all NaN (or None
  in a mapping). A matrix partly NaN is refused.
- Pixel coordinates: (0, 0) is the centre of the top-left pixel, so an image of width ``w`` spans
  columns 0 .. w-1 (the corners of :func:`corner_error`).

All per-pair functions are vectorised over pairs; the only Python loops run over thresholds or
over the entries of a mapping the caller passes.

The package, one module per family: :mod:`~evalstore.core.matching.pairs` (pair ids, thresholds
and the match distance, shared by the others), :mod:`~evalstore.core.matching.accuracy`
(precision@sigma, MMA), :mod:`~evalstore.core.matching.overlap` (IoU) and
:mod:`~evalstore.core.matching.homographies` (reprojection and corner errors, homography
accuracy); this module re-exports their metrics.
"""

from evalstore.core.matching.accuracy import mma, precision_at_sigma
from evalstore.core.matching.homographies import (
    corner_error,
    homography_accuracy,
    reprojection_error,
)
from evalstore.core.matching.overlap import iou, iou_macro, iou_micro
from evalstore.core.matching.pairs import match_distance

__all__ = [
    "corner_error",
    "homography_accuracy",
    "iou",
    "iou_macro",
    "iou_micro",
    "match_distance",
    "mma",
    "precision_at_sigma",
    "reprojection_error",
]

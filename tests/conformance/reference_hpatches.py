"""The HPatches benchmarks' own metric code, transcribed line by line into Python.

MATLAB benchmark (protocol ``hpatches``): VLFeat's ``vl_tpfp`` / ``vl_pr`` and the three task
files of hpatches/hpatches-benchmark that call or inline them. MATLAB is 1-based: ``x(1:k)``
is ``x[:k]`` here, ``x(2:end)`` is ``x[1:]``, and ``find(...) + 1`` (an index into a vector
that starts with the leading point) is ``np.flatnonzero(...) + 1`` in 0-based indices of that
same vector. MATLAB's ``sort`` is stable ("equal elements keep their order"): every sort
below is ``kind="stable"``.

Python benchmark (protocol ``hpatches-python``): ``python/utils/metrics.py``, whose labels are
0/1 (0 = negative; it has no "ignored" label) and whose ``np.trapz`` NumPy 2 renamed
``np.trapezoid`` (the same function: ``sum(diff(x) * (y[1:] + y[:-1]) / 2)``).

Sources (read with the search tool's snapshots):

- vlfeat/vlfeat ``toolbox/plotop/vl_tpfp.m`` and ``toolbox/plotop/vl_pr.m`` @
  1b9075fc42fe54b42f0e937f8b9a230d8e2c7701 (identical to 0073cd1b / 2d840699 for these lines);
- hpatches/hpatches-benchmark ``matlab/+bench/+matching/eval.m``,
  ``matlab/+bench/+retrieval/eval.m`` and ``matlab/+bench/+verification/eval.m`` @
  f04f3b1501b27601ce0a6590a640a93396ee485b;
- hpatches/hpatches-benchmark ``python/utils/metrics.py`` @
  cf5f43e23da8486afc8c93bdb2e883d04c99cfbf.
"""

from __future__ import annotations

from typing import Any

import numpy as np

SMALL = 1e-10


def vl_tpfp(
    labels: Any, scores: Any, num_positives: int | None = None
) -> tuple[np.ndarray, np.ndarray, float, float, np.ndarray]:
    """VLFeat ``vl_tpfp.m`` (vlfeat/vlfeat toolbox/plotop/vl_tpfp.m @ 1b9075fc)::

        labels = labels(:)' ;
        scores = scores(:)' ;
        p = sum(labels > 0) ;
        n = sum(labels < 0) ;
        if ~isempty(opts.numPositives)
          ...
          p = opts.numPositives ;
        end
        [scores, perm] = sort(scores, 'descend') ;
        % assume that data with -INF score is never retrieved
        stop = max(find(scores > -inf)) ;
        perm = perm(1:stop) ;
        labels = labels(perm) ;
        tp = [0 cumsum(labels > 0)] ;
        fp = [0 cumsum(labels < 0)] ;

    ``max(find([]))`` is empty and ``perm(1:[])`` the empty vector: nothing retrieved gives
    ``tp = fp = [0]``.
    """
    labels = np.asarray(labels, dtype=np.float64).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    p = float(np.sum(labels > 0))
    n = float(np.sum(labels < 0))
    if num_positives is not None:
        assert num_positives >= p, "NUMPOSITIVES is smaller than the number of positives"
        p = float(num_positives)
    # sort(scores, 'descend'): stable, so equal scores keep their input order
    perm = np.argsort(-scores, kind="stable")
    scores = scores[perm]
    retrieved = np.flatnonzero(scores > -np.inf)
    stop = int(retrieved.max()) + 1 if retrieved.size else 0  # 1-based max(find(...))
    perm = perm[:stop]
    labels = labels[perm]
    tp = np.concatenate([[0.0], np.cumsum(labels > 0)])
    fp = np.concatenate([[0.0], np.cumsum(labels < 0)])
    return tp, fp, p, n, perm


def vl_pr(
    labels: Any, scores: Any, num_positives: int | None = None
) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """VLFeat ``vl_pr.m`` (toolbox/plotop/vl_pr.m @ 1b9075fc), default options::

        [tp, fp, p, n, perm, varargin] = vl_tpfp(labels, scores, varargin{:}) ;
        small = 1e-10 ;
        recall = tp / max(p, small) ;
        precision = max(tp, small) ./ max(tp + fp, small) ;
        info.auc = 0.5 * sum((precision(1:end-1) + precision(2:end)) .* diff(recall)) ;
        sel = find(diff(recall)) + 1 ;
        info.ap = sum(precision(sel)) / p ;

    ``info.ap`` is ``0 / 0 = NaN`` for a list without positives (``p = 0``).
    """
    tp, fp, p, _n, _perm = vl_tpfp(labels, scores, num_positives)
    recall = tp / max(p, SMALL)
    precision = np.maximum(tp, SMALL) / np.maximum(tp + fp, SMALL)
    info = {"auc": float(0.5 * np.sum((precision[:-1] + precision[1:]) * np.diff(recall)))}
    sel = np.flatnonzero(np.diff(recall)) + 1
    with np.errstate(invalid="ignore", divide="ignore"):
        info["ap"] = float(np.float64(np.sum(precision[sel])) / np.float64(p))
    return recall, precision, info


def matching_ap(is_valid: Any, dist: Any) -> float:
    """The image-matching AP of ``matlab/+bench/+matching/eval.m`` @ f04f3b15 for one image
    pair, given ``isValid`` (the nearest neighbour is the right patch) and ``dist(1,:)``::

        dist(isnan(dist)) = inf;
        [rec1nn, pr1nn, i1nn] = vl_pr(isValid*2 - 1, -dist(1,:), 'numPositives', numel(isValid));
        if isnan(i1nn.ap), i1nn.ap = 0; end

    In evalstore: labels ``isValid*2 - 1``, scores ``-dist`` (an infinite distance is a
    score of -inf: not retrieved), ``n_positives`` = the number of query patches.
    """
    is_valid = np.asarray(is_valid, dtype=np.float64)
    dist = np.asarray(dist, dtype=np.float64).copy()
    dist[np.isnan(dist)] = np.inf
    _rec, _pr, info = vl_pr(is_valid * 2 - 1, -dist, num_positives=is_valid.size)
    return 0.0 if np.isnan(info["ap"]) else info["ap"]


def retrieval_ap(pos_dists: Any, neg_dists: Any, neg_labels: Any) -> tuple[float, float]:
    """One query (one column) of ``matlab/+bench/+retrieval/eval.m`` @ f04f3b15, which
    inlines vl_pr (and asserts, with ``testap``, that it equals ``vl_pr``'s ``info.ap``)::

        neg_labels = -ones(size(neg_dists));
        ignored = bsxfun(@eq, neg_si, query_si);
        neg_labels(ignored) = 0;
        all_labels = [ones(size(pos_dists)); neg_labels];
        all_scores = [-pos_dists; -neg_dists];
        [all_scores, idxs] = sort(all_scores, 1, 'descend');
        ... all_labels = all_labels(idxs);
        tp = [zeros(1, queries_num); cumsum(all_labels > 0, 1)] ;
        fp = [zeros(1, queries_num); cumsum(all_labels < 0, 1)] ;
        small = 1e-10 ; p = numel(opts.pos_ims);
        recall = tp ./ max(p, small) ;
        precision = max(tp, small) ./ max(tp + fp, small) ;
        auc = 0.5 * sum((precision(1:end-1,:) + precision(2:end,:)) .* diff(recall), 1) ;
        sel = diff(recall) ~= 0 ; sel = [false(1, queries_num); sel];
        ap = precision; ap(~sel) = 0;
        ap = sum(ap, 1) ./ p ;

    ``p`` is the number of positive images (``numel(opts.pos_ims)``, 5), every one of which
    is in the list. Returns ``(ap, auc)``.
    """
    pos_dists = np.asarray(pos_dists, dtype=np.float64)
    neg_dists = np.asarray(neg_dists, dtype=np.float64)
    all_labels = np.concatenate([np.ones(pos_dists.size), np.asarray(neg_labels, np.float64)])
    all_scores = np.concatenate([-pos_dists, -neg_dists])
    idxs = np.argsort(-all_scores, kind="stable")  # sort(..., 'descend'), stable
    all_labels = all_labels[idxs]
    tp = np.concatenate([[0.0], np.cumsum(all_labels > 0)])
    fp = np.concatenate([[0.0], np.cumsum(all_labels < 0)])
    p = float(pos_dists.size)
    recall = tp / max(p, SMALL)
    precision = np.maximum(tp, SMALL) / np.maximum(tp + fp, SMALL)
    auc = 0.5 * np.sum((precision[:-1] + precision[1:]) * np.diff(recall))
    sel = np.concatenate([[False], np.diff(recall) != 0])
    ap = precision.copy()
    ap[~sel] = 0
    return float(np.sum(ap) / p), float(auc)


def verification_ap(pos_dists: Any, neg_dists: Any) -> float:
    """``pr_ap`` of ``matlab/+bench/+verification/eval.m`` @ f04f3b15::

    labels = [ones(1, numel(pos_dists)), -ones(1, numel(neg_dists))];
    dists = [pos_dists, neg_dists];
    [recall, precision, info_pr] = vl_pr(labels, -dists);
    ... 'pr_ap', info_pr.ap, ...
    """
    pos_dists = np.asarray(pos_dists, dtype=np.float64).ravel()
    neg_dists = np.asarray(neg_dists, dtype=np.float64).ravel()
    labels = np.concatenate([np.ones(pos_dists.size), -np.ones(neg_dists.size)])
    dists = np.concatenate([pos_dists, neg_dists])
    _recall, _precision, info = vl_pr(labels, -dists)
    return info["ap"]


# ------------------------------------------------------------------ the Python benchmark


def tpfp(
    scores: Any, labels: Any, numpos: int | None = None
) -> tuple[np.ndarray, np.ndarray, int, int, np.ndarray]:
    """``tpfp`` of hpatches/hpatches-benchmark ``python/utils/metrics.py`` @ cf5f43e2, as
    written (labels 0/1)::

        p = int(np.sum(labels))
        n = len(labels) - p
        if numpos is not None:
            assert(numpos >= p), 'numpos smaller that number of positives in labels'
            extra_pos = numpos - p
            p = numpos
            scores = np.hstack((scores, np.repeat(-np.inf, extra_pos)))
            labels = np.hstack((labels, np.repeat(1, extra_pos)))
        perm = np.argsort(-scores, kind='mergesort', axis=0)
        scores = scores[perm]
        # assume that data with -INF score is never retrieved
        stop = np.max(np.where(scores > -np.inf))
        perm = perm[0:stop + 1]
        labels = labels[perm]
        tp = np.hstack((0, np.cumsum(labels == 1)))
        fp = np.hstack((0, np.cumsum(labels == 0)))
        return tp, fp, p, n, perm

    (``np.max`` of an empty ``np.where``, i.e. nothing retrieved, raises ValueError.)
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    p = int(np.sum(labels))
    n = len(labels) - p
    if numpos is not None:
        assert numpos >= p, "numpos smaller that number of positives in labels"
        extra_pos = numpos - p
        p = numpos
        scores = np.hstack((scores, np.repeat(-np.inf, extra_pos)))
        labels = np.hstack((labels, np.repeat(1, extra_pos)))
    perm = np.argsort(-scores, kind="mergesort", axis=0)
    scores = scores[perm]
    stop = np.max(np.where(scores > -np.inf))
    perm = perm[0 : stop + 1]
    labels = labels[perm]
    tp = np.hstack((0, np.cumsum(labels == 1)))
    fp = np.hstack((0, np.cumsum(labels == 0)))
    return tp, fp, p, n, perm


def pr(scores: Any, labels: Any, numpos: int | None = None) -> tuple[np.ndarray, np.ndarray, float]:
    """``pr`` of ``python/utils/metrics.py`` @ cf5f43e2 (its "ap")::

    [tp, fp, p, n, perm] = tpfp(scores, labels, numpos)
    small = 1e-10
    recall = tp / float(np.maximum(p, small))
    precision = np.maximum(tp, small) / np.maximum(tp + fp, small)
    return precision, recall, np.trapz(precision, recall)
    """
    tp, fp, p, _n, _perm = tpfp(scores, labels, numpos)
    small = SMALL
    recall = tp / float(np.maximum(p, small))
    precision = np.maximum(tp, small) / np.maximum(tp + fp, small)
    return precision, recall, float(np.trapezoid(precision, recall))


def roc(
    scores: Any, labels: Any, numpos: int | None = None
) -> tuple[np.ndarray, np.ndarray, float]:
    """``roc`` of ``python/utils/metrics.py`` @ cf5f43e2 (its verification "auc")::

        [tp, fp, p, n, perm] = tpfp(scores, labels, numpos)
        small = 1e-10
        tpr = tp / float(np.maximum(p, small))
        fpr = fp / float(np.maximum(n, small))
        return fpr, tpr, np.trapz(tpr, fpr)

    The curve stops at the last retrieved item: it is not closed to (1, 1).
    """
    tp, fp, p, n, _perm = tpfp(scores, labels, numpos)
    small = SMALL
    tpr = tp / float(np.maximum(p, small))
    fpr = fp / float(np.maximum(n, small))
    return fpr, tpr, float(np.trapezoid(tpr, fpr))


def pr_without_small(scores: Any, labels: Any, numpos: int | None = None) -> float:
    """:func:`pr` with the one substitution evalstore documents (docs/metrics.md,
    ``auc_pr_trapz``): ``TP / (TP + FP)``, i.e. 0 where :func:`pr`'s
    ``max(tp, 1e-10) / max(tp + fp, 1e-10)`` gives ``1e-10 / FP`` before the first positive;
    the leading point keeps its precision 1. Everything else is :func:`pr`'s arrays and
    ``np.trapz``."""
    tp, fp, p, _n, _perm = tpfp(scores, labels, numpos)
    recall = tp / float(np.maximum(p, SMALL))
    precision = np.maximum(tp, SMALL) / np.maximum(tp + fp, SMALL)
    precision = np.where((tp == 0) & (fp > 0), 0.0, precision)
    return float(np.trapezoid(precision, recall))

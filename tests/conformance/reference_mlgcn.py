"""ML-GCN's multi-label precision, recall and F1 (CP, CR, CF1, OP, OR, OF1), transcribed.

megvii-research/ML-GCN ``util.py`` @ 311f521031b91c59a8bd65a1afe3e6cf9a97916a, class
``AveragePrecisionMeter``: ``overall``, ``overall_topk`` and ``evaluation``, verbatim but for
what reads the meter's state: ``self.scores`` / ``self.targets`` (torch tensors, N images x
C classes) are the arguments ``scores`` / ``targets`` (NumPy arrays), and
``self.scores.topk(k, 1, True, True)[1]`` is :func:`topk_indices` and ``torch.sort(output,
dim=0, descending=True)`` in ``average_precision`` a stable sort: NumPy's stable sort of the
negated scores (of equal scores the lower column, or image, first; torch documents no order
for them, and the tests give this one's ties to evalstore as ``ties="input"``).

The original lines, for reference::

    @staticmethod
    def average_precision(output, target, difficult_examples=True):

        # sort examples
        sorted, indices = torch.sort(output, dim=0, descending=True)

        # Computes prec@i
        pos_count = 0.
        total_count = 0.
        precision_at_i = 0.
        for i in indices:
            label = target[i]
            if difficult_examples and label == 0:
                continue
            if label == 1:
                pos_count += 1
            total_count += 1
            if label == 1:
                precision_at_i += pos_count / total_count
        precision_at_i /= pos_count
        return precision_at_i

    def overall(self):
        if self.scores.numel() == 0:
            return 0
        scores = self.scores.cpu().numpy()
        targets = self.targets.cpu().numpy()
        targets[targets == -1] = 0
        return self.evaluation(scores, targets)

    def overall_topk(self, k):
        targets = self.targets.cpu().numpy()
        targets[targets == -1] = 0
        n, c = self.scores.size()
        scores = np.zeros((n, c)) - 1
        index = self.scores.topk(k, 1, True, True)[1].cpu().numpy()
        tmp = self.scores.cpu().numpy()
        for i in range(n):
            for ind in index[i]:
                scores[i, ind] = 1 if tmp[i, ind] >= 0 else -1
        return self.evaluation(scores, targets)

    def evaluation(self, scores_, targets_):
        n, n_class = scores_.shape  # noqa: RUF059 (verbatim)
        Nc, Np, Ng = np.zeros(n_class), np.zeros(n_class), np.zeros(n_class)
        for k in range(n_class):
            scores = scores_[:, k]
            targets = targets_[:, k]
            targets[targets == -1] = 0
            Ng[k] = np.sum(targets == 1)
            Np[k] = np.sum(scores >= 0)
            Nc[k] = np.sum(targets * (scores >= 0))
        Np[Np == 0] = 1
        OP = np.sum(Nc) / np.sum(Np)
        OR = np.sum(Nc) / np.sum(Ng)
        OF1 = (2 * OP * OR) / (OP + OR)

        CP = np.sum(Nc / Np) / n_class
        CR = np.sum(Nc / Ng) / n_class
        CF1 = (2 * CP * CR) / (CP + CR)
        return OP, OR, OF1, CP, CR, CF1

What the code does with targets: -1 becomes 0, so a target of 0 (VOC's "difficult") is a
negative: counted in ``Np`` when predicted, never in ``Nc`` or ``Ng``. ``targets * (scores
>= 0)`` is 1 only for a target of 1. evalstore's label 0 is "ignored": the tests give such an
entry (and an (image, class) pair without a row) to this code as target 0 with score -inf,
which is then neither predicted, nor positive, nor in the top k ahead of a scored label.

``threshold``: ML-GCN's is 0; evalstore's threshold t is given to this code as the scores
shifted by -t (``s - t >= 0`` exactly when ``s >= t`` in floating point: a difference of two
distinct doubles is never 0).
"""

from __future__ import annotations

import numpy as np

__all__ = ["average_precision", "evaluation", "overall", "overall_topk", "topk_indices"]


def topk_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """``scores.topk(k, 1, True, True)[1]``: each row's k largest, in decreasing order, ties
    by the lower column first."""
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def average_precision(
    output: np.ndarray, target: np.ndarray, difficult_examples: bool = True
) -> float:
    # sort examples
    indices = np.argsort(-output, kind="stable")  # torch.sort(output, 0, descending=True)[1]

    # Computes prec@i
    pos_count = 0.0
    total_count = 0.0
    precision_at_i = 0.0
    for i in indices:
        label = target[i]
        if difficult_examples and label == 0:
            continue
        if label == 1:
            pos_count += 1
        total_count += 1
        if label == 1:
            precision_at_i += pos_count / total_count
    precision_at_i /= pos_count
    return precision_at_i


def overall(scores: np.ndarray, targets: np.ndarray) -> tuple[float, ...]:
    if scores.size == 0:
        return 0  # type: ignore[return-value]  # verbatim
    scores = scores.copy()
    targets = targets.copy()
    targets[targets == -1] = 0
    return evaluation(scores, targets)


def overall_topk(scores_in: np.ndarray, targets_in: np.ndarray, k: int) -> tuple[float, ...]:
    targets = targets_in.copy()
    targets[targets == -1] = 0
    n, c = scores_in.shape
    scores = np.zeros((n, c)) - 1
    index = topk_indices(scores_in, k)
    tmp = scores_in.copy()
    for i in range(n):
        for ind in index[i]:
            scores[i, ind] = 1 if tmp[i, ind] >= 0 else -1
    return evaluation(scores, targets)


def evaluation(scores_: np.ndarray, targets_: np.ndarray) -> tuple[float, ...]:
    n, n_class = scores_.shape  # noqa: RUF059 (verbatim)
    Nc, Np, Ng = np.zeros(n_class), np.zeros(n_class), np.zeros(n_class)
    for k in range(n_class):
        scores = scores_[:, k]
        targets = targets_[:, k]
        targets[targets == -1] = 0
        Ng[k] = np.sum(targets == 1)
        Np[k] = np.sum(scores >= 0)
        Nc[k] = np.sum(targets * (scores >= 0))
    Np[Np == 0] = 1
    with np.errstate(divide="ignore", invalid="ignore"):  # added: NumPy's 0 / 0 is NaN, quietly
        OP = np.sum(Nc) / np.sum(Np)
        OR = np.sum(Nc) / np.sum(Ng)
        OF1 = (2 * OP * OR) / (OP + OR)

        CP = np.sum(Nc / Np) / n_class
        CR = np.sum(Nc / Ng) / n_class
        CF1 = (2 * CP * CR) / (CP + CR)
    return OP, OR, OF1, CP, CR, CF1

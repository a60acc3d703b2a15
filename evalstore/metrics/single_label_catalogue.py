"""The single-label classification metrics: their names, means, checks and parameters, which
:mod:`evalstore.metrics.catalogue` declares (no NumPy; the twins are in
:mod:`evalstore.metrics.single_label_references`).

A single-label run is a classification run with one list per class (``group_id``), one item
per sample and the label +1 in the list of the sample's true class, -1 in the others
(``sql/lib/single_label.sql`` has the rules: label 0, NULL scores, ties).

>>> SINGLE_LABEL["top1_accuracy"].overall, SINGLE_LABEL["f1_macro"].overall
('run row', 'mean')
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BINS", "PROBABILITY_CHECK", "SAMPLE_CHECK", "SINGLE_LABEL", "TOPK_DEFAULT", "Line"]

#: The query that finds a sample without exactly one +1 label or missing from a class's list.
SAMPLE_CHECK = "eval/single_label_samples"
#: The query that finds a score that is no probability (ece reads scores as probabilities).
PROBABILITY_CHECK = "eval/single_label_probabilities"
#: ece's default number of bins (torchmetrics' n_bins).
BINS = (15.0,)
#: topk_accuracy's default cut-off when ``--k`` is not given (ImageNet's top-5).
TOPK_DEFAULT = 5


@dataclass(frozen=True)
class Line:
    """One single-label metric's catalogue line.

    Attributes:
        higher_is_better: the direction of improvement (ece: lower).
        overall: ``run row``: the run's value is the SQL's row of group NULL, the classes'
            rows its per-class values (accuracy is not the mean of the classes' recalls);
            ``mean``: the mean over the SQL's rows (balanced accuracy, macro F1; a single
            run row for micro F1 and ece, as ``iou_micro``).
        doc: what it is, in one line.
    """

    higher_is_better: bool
    overall: str
    doc: str


SINGLE_LABEL: dict[str, Line] = {
    "top1_accuracy": Line(True, "run row", "share of samples whose top-1 class is the true one"),
    "topk_accuracy": Line(True, "run row", "share of samples with the true class in the top k"),
    "balanced_accuracy": Line(True, "mean", "mean over classes of the top-1 recall"),
    "f1_macro": Line(True, "mean", "mean over classes of the F1 of the top-1 classes"),
    "f1_micro": Line(True, "mean", "F1 of the top-1 classes pooled over classes"),
    "ece": Line(False, "mean", "expected calibration error of the top-1 score, L1, equal bins"),
}

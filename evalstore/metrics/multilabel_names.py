"""The names of the multi-label metrics (ML-GCN's CP, CR, CF1, OP, OR, OF1, over every label
whose score passes a threshold, and over each image's top k) and their default threshold.

A table of names only, as :data:`~evalstore.metrics.catalogue.COCO_METRICS`: the catalogue
declares the metrics from it, :mod:`evalstore.core.multilabel` defines them.

>>> MULTILABEL_METRICS["of1_at_k"]
"overall F1 of OP and OR (ML-GCN OF1), of each image's top k labels"
"""

from __future__ import annotations

__all__ = ["MULTILABEL_METRICS", "MULTILABEL_THRESHOLDS", "NAMES"]

#: A label is predicted when its score is >= the threshold: 0.5 by default, scikit-learn's and
#: torchmetrics' rule on probabilities (ML-GCN's 0 on logits: ``--threshold 0``, or
#: ``--protocol mlgcn``).
MULTILABEL_THRESHOLDS = (0.5,)

#: The six numbers, in ML-GCN's order of its tables (lower case).
NAMES = ("cp", "cr", "cf1", "op", "or", "of1")

_WHAT = {
    "cp": "per-class precision averaged over classes (ML-GCN CP)",
    "cr": "per-class recall averaged over classes (ML-GCN CR)",
    "cf1": "F1 of CP and CR (ML-GCN CF1)",
    "op": "overall precision, pooled over classes (ML-GCN OP)",
    "or": "overall recall, pooled over classes (ML-GCN OR)",
    "of1": "overall F1 of OP and OR (ML-GCN OF1)",
}

#: registry name -> what it is: the threshold form, then the top-k form (``--k``, default 3)
MULTILABEL_METRICS: dict[str, str] = {
    **{name: f"{what}, of the labels passing the threshold" for name, what in _WHAT.items()},
    **{f"{name}_at_k": f"{what}, of each image's top k labels" for name, what in _WHAT.items()},
}

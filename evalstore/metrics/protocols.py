"""Official protocols: named bundles of metric definitions, tie policy, grid and averaging that
reproduce one benchmark's own code exactly (``evalstore eval --protocol NAME``).

Benchmarks publish numbers made by their own code, and those codes disagree with each other:
the HPatches MATLAB benchmark's "AP" is VLFeat's ``info.ap`` over queries in input order, its
Python benchmark's "AP" is ``np.trapz`` of the PR curve (``info.auc``); the VOC2007 devkit's
11-point grid is MATLAB's ``0:0.1:1``, py-faster-rcnn's is ``np.arange(0, 1.1, 0.1)``, which
differs at 0.6 and 0.7; trec_eval breaks ties by document id. A protocol names one of them.

Every value computed under a protocol records it (``"protocol"`` in ``params``), so values of
two protocols are cached apart and never compared with each other: ``compare``, ``check`` and
``history`` pair values of the same parameters only. ``docs/protocols.md`` has the table and a
worked example of each difference; ``tests/conformance/`` checks each protocol against a
transcription of its reference code (or the reference itself: trec_eval).

>>> get("voc07").metrics["classification"]
('ap_voc07',)
>>> get("trec").ties, get("trec").unretrieved
('docid', 'left out')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalstore.errors import InvalidInput
from evalstore.metrics import multilabel_names
from evalstore.metrics.catalogue import COCO_METRICS, TIDE_METRICS
from evalstore.metrics.pose_catalogue import GLUEFACTORY_RANSAC_SWEEP, PoseRules, rules_of

__all__ = ["PROTOCOLS", "Protocol", "Source", "get", "pose_rules"]


@dataclass(frozen=True)
class Source:
    """Where a protocol's definition lives: a repository, a file in it and the commit read."""

    repo: str
    path: str
    commit: str

    def __str__(self) -> str:
        return f"{self.repo} {self.path} @ {self.commit[:12]}"


@dataclass(frozen=True)
class Protocol:
    """One official protocol.

    Attributes:
        name: what ``--protocol`` takes (``hpatches``, ``voc07``, ``trec``...).
        title: the benchmark code it reproduces, in a few words.
        source: the reference code (repository, path, commit).
        metrics: task -> the metrics it reports for that task (the first is its headline).
        ties: the tie policy of its ranking (``input`` = a stable sort of the input order,
            ``docid`` = trec_eval's document-id order).
        differs: what it does differently from evalstore's defaults.
        unretrieved: ``counted`` (a list where nothing was retrieved scores 0 in the mean) or
            ``left out`` (trec_eval without ``-c``: such queries are not averaged).
        no_positives: ``left out`` (a list without positives has no value, as VLFeat's NaN
            and pycocotools' skipped category) or ``zero`` (trec_eval: a judged query without
            relevant documents scores 0 and is averaged).
        k: the cut-off of its metrics at k (``precision_at_k``, ``ndcg_at_k``...) when none is
            given.
        sweeps: metric -> its sweep's values when none are given (mlgcn: a threshold of 0).
        table: whether ``evalstore leaderboard --protocol NAME`` shows every metric it reports
            (the benchmark's table: mlgcn's mAP, CP ... OF1 and their top-3 forms) rather than
            the headline metrics among them.
        pose: the relative poses' estimation setting and whose AUC code (superglue, loftr,
            gluefactory), recorded in the params of the pose metrics' values.
    """

    name: str
    title: str
    source: Source
    metrics: Mapping[str, tuple[str, ...]]
    ties: str
    differs: str
    unretrieved: str = "counted"
    k: int | None = None
    no_positives: str = "left out"
    notes: tuple[str, ...] = field(default=(), compare=False)
    sweeps: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    table: bool = False
    pose: PoseRules | None = None

    @property
    def tasks(self) -> tuple[str, ...]:
        return tuple(self.metrics)


_RANKED = ("verification", "matching", "retrieval")
_HPATCHES_MATLAB = Source(
    "hpatches/hpatches-benchmark",
    "matlab/+bench/+matching/eval.m",
    "f04f3b1501b27601ce0a6590a640a93396ee485b",
)
_HPATCHES_PYTHON = Source(
    "hpatches/hpatches-benchmark",
    "python/utils/metrics.py",
    "cf5f43e23da8486afc8c93bdb2e883d04c99cfbf",
)
_VOC07 = Source(
    "npinto/VOCdevkit", "VOCcode/VOCevalcls.m", "b0890ec6a94d4f692b3cc8ae1f4c0fa3b1ac1fc8"
)
_VOC07_DET = Source(
    "npinto/VOCdevkit", "VOCcode/VOCevaldet.m", "2b8c01c3ec2c78bb854fa528d2142450a476de3b"
)
_VOC10_DET = Source(
    "npinto/VOCdevkit", "VOCcode/VOCevaldet.m", "0ac38d1ae3f8c5cc46d811a5283d17ba902c462c"
)
_TIDE = Source("dbolya/tide", "tidecv/quantify.py", "49a5d2a4aeb56795e93a3ed7cc7e6d25757bb4c1")
_FASTER_RCNN = Source(
    "rbgirshick/py-faster-rcnn",
    "lib/datasets/voc_eval.py",
    "45e0da9a246fab5fd86e8c96dc351be7f145499f",
)
_COCO = Source(
    "cocodataset/cocoapi",
    "PythonAPI/pycocotools/cocoeval.py",
    "e81c312b4e5e400c740c66c42eff5ecce6736f65",
)
_TREC = Source("usnistgov/trec_eval", "form_res_rels.c", "0e041ae2351fac4ab44c7cab9ff9a8fbcff1ac7b")
_SUPERPOINT = Source(
    "rpautrat/SuperPoint",
    "superpoint/evaluations/descriptor_evaluation.py",
    "16be6749e317e8ee508d8ed331063c52873c74ec",
)
_MLGCN = Source("megvii-research/ML-GCN", "util.py", "311f521031b91c59a8bd65a1afe3e6cf9a97916a")
_MULTILABEL = tuple(f"{m}{at_k}" for at_k in ("", "_at_k") for m in multilabel_names.NAMES)
_D2NET = Source(
    "mihaidusmanu/d2-net",
    "hpatches_sequences/HPatches-Sequences-Matching-Benchmark.ipynb",
    "e35be018390ffbafd4b19fd1c7f39fefdaa2bf95",
)
_SUPERGLUE = Source(
    "magicleap/SuperGluePretrainedNetwork",
    "match_pairs.py",
    "ddcf11f42e7e0732a0c4607648f9448ea8d73590",
)
_LOFTR = Source("zju3dv/LoFTR", "src/utils/metrics.py", "df7ca80f917334b94cfbe32cc2901e09a80e70a8")
_GLUEFACTORY = Source(
    "cvg/glue-factory", "gluefactory/eval/utils.py", "2d17e3b3bd7d30f0c828d4c4d3eac4ecefbf283d"
)

_TREC_METRICS = {
    t: ("ap", "precision_at_k", "recall_at_k", "ndcg", "ndcg_at_k", "recip_rank", "r_precision")
    for t in (*_RANKED, "classification")
}

PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in [
        Protocol(
            "hpatches",
            "HPatches MATLAB benchmark: VLFeat vl_pr info.ap",
            _HPATCHES_MATLAB,
            dict.fromkeys(_RANKED, ("ap",)),
            "input",
            "ties in input order (MATLAB's stable sort in vl_pr), not grouped",
        ),
        Protocol(
            "hpatches-python",
            "HPatches Python benchmark: np.trapz of the PR curve (vl_pr info.auc), ROC AUC",
            _HPATCHES_PYTHON,
            {
                "verification": ("auc_pr_trapz", "roc_auc_trapz"),
                "matching": ("auc_pr_trapz",),
                "retrieval": ("auc_pr_trapz",),
            },
            "input",
            "its 'ap' is the trapezoidal area under the PR curve from a leading (0, 1) "
            "(auc_pr_trapz), not AP, and its ROC curve ends at the last retrieved item "
            "(roc_auc_trapz); ties in input order (np.argsort kind='mergesort')",
        ),
        Protocol(
            "voc07",
            "PASCAL VOC2007 devkit VOCevalcls.m: 11-point AP over MATLAB's 0:0.1:1",
            _VOC07,
            {"classification": ("ap_voc07",)},
            "input",
            "ties in ground-truth order (ingest --format voc keeps it; MATLAB's stable sort); "
            "the grid holds exactly 0.6 and 0.7",
        ),
        Protocol(
            "voc07-numpy",
            "py-faster-rcnn voc_ap(use_07_metric=True): 11-point AP over np.arange(0, 1.1, 0.1)",
            _FASTER_RCNN,
            {"classification": ("ap_voc07_numpy",)},
            "input",
            "the grid's 0.6000000000000001 and 0.7000000000000001 are not reached by a recall "
            "of exactly 0.6 or 0.7, where the devkit's 0.6 and 0.7 are",
        ),
        Protocol(
            "voc10",
            "PASCAL VOC2010+ devkit VOCap.m (as py-faster-rcnn voc_ap transcribes it): "
            "area under the precision envelope",
            _FASTER_RCNN,
            {"classification": ("ap_voc10",)},
            "input",
            "ties in ground-truth order, as the devkit's stable sort",
        ),
        Protocol(
            "coco",
            "pycocotools COCOeval.accumulate: 101-point interpolated AP",
            _COCO,
            {
                **dict.fromkeys((*_RANKED, "classification"), ("ap_coco",)),
                "detection": tuple(COCO_METRICS),
            },
            "input",
            "ties in input order (np.argsort kind='mergesort', stable); detection runs: "
            "COCOeval(iouType='bbox')'s matching and its 12 numbers (AP .. ARl), per category",
        ),
        Protocol(
            "voc07-det",
            "py-faster-rcnn voc_eval + voc_ap(use_07_metric=True): VOC2007 detection mAP",
            _FASTER_RCNN,
            {"detection": ("ap_voc07_det",)},
            "input",
            "IoU > 0.5 with +1-pixel boxes, difficult objects ignored, a second detection of "
            "a matched object a false positive, precision over max(tp + fp, eps) (d66cc2bf); "
            "equal scores in input order (voc_eval's np.argsort is not stable: its order of "
            "ties depends on NumPy and the CPU); a class without objects is left out",
        ),
        Protocol(
            "voc10-det",
            "py-faster-rcnn voc_eval + voc_ap(use_07_metric=False): area under the envelope",
            _FASTER_RCNN,
            {"detection": ("ap_voc10_det",)},
            "input",
            "as voc07-det, with VOC2010+'s all-point AP",
        ),
        Protocol(
            "voc07-det-devkit",
            "VOC2007 devkit VOCevaldet.m: 11-point AP over MATLAB's 0:0.1:1",
            _VOC07_DET,
            {"detection": ("ap_voc07_devkit_det",)},
            "input",
            "IoU >= 0.5 (voc_eval: > 0.5); MATLAB's stable sort of equal scores",
        ),
        Protocol(
            "voc10-det-devkit",
            "VOC2010+ devkit VOCevaldet.m + VOCap.m: area under the envelope",
            _VOC10_DET,
            {"detection": ("ap_voc10_devkit_det",)},
            "input",
            "IoU >= 0.5 (voc_eval: > 0.5); MATLAB's stable sort of equal scores",
        ),
        Protocol(
            "tide",
            "TIDE (tidecv 1.0.1): mAP at IoU 0.5 and the dAP of fixing each error type",
            _TIDE,
            {"detection": tuple(TIDE_METRICS)},
            "input",
            "tidecv's matching (IoU >= 0.5, every class's boxes of an image by score, 100 per "
            "image), its 101-point AP in percent; images in id order (tidecv: the annotation "
            "file's), which only equal scores can tell apart",
        ),
        Protocol(
            "trec",
            "trec_eval: map, P_k, recall_k, ndcg, ndcg_cut_k, recip_rank, Rprec; queries that "
            "retrieved nothing are not averaged",
            _TREC,
            _TREC_METRICS,
            "docid",
            "equal scores ranked by document id, the greater (strcmp) first; a list with "
            "nothing retrieved is left out of the mean (trec_eval without -c); a list without "
            "positives scores 0",
            unretrieved="left out",
            k=10,
            no_positives="zero",
        ),
        Protocol(
            "trec-c",
            "trec_eval -c: as trec, every query of the judgements averaged",
            _TREC,
            _TREC_METRICS,
            "docid",
            "as trec, but a list with nothing retrieved counts 0 in the mean",
            k=10,
            no_positives="zero",
        ),
        Protocol(
            "superpoint",
            "SuperPoint compute_homography: corner error of cv2.findHomography(kp0, kp1, RANSAC)",
            _SUPERPOINT,
            {"keypoints": ("homography_accuracy_superpoint",)},
            "grouped",
            "the corners are SuperPoint's (x over 0..h-1, y over 0..w-1, as its code indexes "
            "shape = (h, w)), not the image's; the same estimate (image 0 -> 1, RANSAC 3 px)",
        ),
        Protocol(
            "mlgcn",
            "ML-GCN AveragePrecisionMeter: mAP, CP, CR, CF1, OP, OR, OF1 (scores >= 0) and "
            "their top-3 forms (overall, overall_topk(3))",
            _MLGCN,
            {"classification": ("ap", *_MULTILABEL)},
            "input",
            "a label is predicted when its logit is >= 0 (evalstore: 0.5); top 3 labels per "
            "image; equal scores by class in input order (the columns' order; torch.topk and "
            "torch.sort leave the order of equal values undocumented); its mAP is "
            "average_precision(difficult_examples=True): labels 0 skipped, as evalstore's ap",
            k=3,
            sweeps=dict.fromkeys(_MULTILABEL, (0.0,)),
            table=True,
        ),
        Protocol(
            "d2net",
            "D2-Net HPatches sequences benchmark: MMA at 1..10 px",
            _D2NET,
            {"keypoints": ("mma",)},
            "grouped",
            "none: evalstore's mma is D2-Net's (a pair without matches scores 0, d <= t)",
        ),
        Protocol(
            "superglue",
            "SuperGlue match_pairs.py: pose AUC at 5/10/20 deg, precision, matching score",
            _SUPERGLUE,
            {"keypoints": ("pose_auc", "epipolar_precision", "matching_score")},
            "grouped",
            "the pose from estimate_pose at 1 px over the mean focal length, confidence "
            "0.99999 (evalstore's default); pose_auc is its pose_auc; a match is correct "
            "with a symmetric epipolar distance < 5e-4",
            pose=PoseRules("opencv", (1.0,), 0.99999, "superglue"),
        ),
        Protocol(
            "loftr",
            "LoFTR metrics.py: error_auc at 5/10/20 deg (RANSAC 0.5 px), epidist_prec",
            _LOFTR,
            {"keypoints": ("pose_auc", "epipolar_precision")},
            "grouped",
            "RANSAC at 0.5 px (TRAINER.RANSAC_PIXEL_THR), not 1; its error_auc's recall is "
            "np.linspace(0, 1, n + 1) (the last bit of SuperGlue's (i + 1) / n); precision "
            "at 5e-4 (ScanNet) and 1e-4 (MegaDepth)",
            sweeps={"epipolar_precision": (1e-4, 5e-4)},
            pose=PoseRules("opencv", (0.5,), 0.99999, "loftr"),
        ),
        Protocol(
            "gluefactory",
            "glue-factory eval_poses: AUC rounded to 4 decimals at the best RANSAC threshold "
            "of 0.5..3 px, mAA; homography AUC at 1/3/5 px",
            _GLUEFACTORY,
            {
                "keypoints": (
                    "pose_auc",
                    "pose_maa",
                    "pose_error",
                    "pose_ransac_threshold",
                    "homography_auc",
                )
            },
            "grouped",
            "poses estimated by its opencv estimator (the threshold over the mean of the four "
            "focal lengths) at 0.5, 1, ..., 3 px (its ransac_th = -1), the one of the largest "
            "mAA kept (pose_ransac_threshold); every AUC rounded to 4 decimals, the median "
            "error to 3; homography_auc's corners are the image's (0, 0)..(w, h)",
            pose=PoseRules("opencv_gluefactory", GLUEFACTORY_RANSAC_SWEEP, 0.99999, "gluefactory"),
        ),
    ]
}


def get(name: str) -> Protocol:
    """The protocol called ``name``.

    Raises:
        InvalidInput: no such protocol.
    """
    if name not in PROTOCOLS:
        raise InvalidInput(f"unknown --protocol {name!r}; known: {', '.join(PROTOCOLS)}")
    return PROTOCOLS[name]


def pose_rules(protocol: Protocol | None) -> PoseRules:
    """The pose estimation setting and AUC code of ``protocol``: its own, else SuperGlue's
    (:data:`~evalstore.metrics.pose_catalogue.DEFAULT_RULES`)."""
    return rules_of(None if protocol is None else protocol.pose)

"""Human labels beside the judge: agreement, human-anchored (PPI++) scores, and the anchored release's certificate.

Public functions (the math in ``_ppi`` and ``_agreement``, numpy/scipy/ppi-python only):

* :func:`read_labels`, :func:`normalise_labels`, :func:`labels_from_column` — the labels input;
* :func:`human_report` — per judge: agreement, flips of agreement per generator, per model the PPI++ estimate and
  interval beside the judge-only score and the labels-only interval, rank sets with simultaneous coverage;
* :func:`anchored_mean`, :func:`rank_sets`, :func:`labels_for_width`, :func:`linear_weights` — the estimators;
* :func:`anchored_judgments` — the judgment table whose model means are the anchored estimates (certified by
  ``certify(..., human_labels=...)`` into ``anchored/``).
"""

from __future__ import annotations

from biasbound.human._agreement import SIDE_RULE, agreement, comparison_rule, flip_to_disagree, krippendorff_alpha
from biasbound.human._ppi import (
    AnchoredMean,
    anchored_mean,
    labels_for_width,
    linear_weights,
    rank_sets,
)
from biasbound.human.anchored import anchored_judgments, human_report, labels_digest
from biasbound.human.labels import labels_from_column, normalise_labels, read_labels

__all__ = [
    "SIDE_RULE",
    "AnchoredMean",
    "agreement",
    "anchored_judgments",
    "anchored_mean",
    "comparison_rule",
    "flip_to_disagree",
    "human_report",
    "krippendorff_alpha",
    "labels_digest",
    "labels_for_width",
    "labels_from_column",
    "linear_weights",
    "normalise_labels",
    "rank_sets",
    "read_labels",
]

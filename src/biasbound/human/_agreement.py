"""Judge–human agreement of one judge: accuracy with its interval, Cohen's κ, Krippendorff's α, the confusion
table, and per neighbour generator how often a perturbation turns an agreeing verdict into a disagreeing one.

Inputs are plain arrays on the normalised scale (the caller joins judgments and labels).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

__all__ = ["SIDE_RULE", "agreement", "comparison_rule", "flip_to_disagree", "krippendorff_alpha", "proportion_interval"]

#: a scale with at most this many distinct values is categorical (accuracy, κ, confusion); else graded
MAX_CATEGORIES = 11


def proportion_interval(k: int, n: int, level: float) -> tuple[float | None, float | None]:
    """Wilson score interval of k successes in n (scipy's ``binomtest(...).proportion_ci``); None for n = 0."""
    if n == 0:
        return None, None
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def _codes(values: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(values, dtype=float), 9)


#: how a graded judge is read against labels at the two ends of the scale (``rule`` in :func:`agreement`)
SIDE_RULE = "side of the midpoint"


def comparison_rule(judge: np.ndarray, human: np.ndarray) -> str:
    """``"exact"``: a verdict agrees with a label when they are equal. ``SIDE_RULE``: the labels sit only at the two
    ends of the scale (0 and 1: which answer is better) while the judge grades in between (Arena-Hard's five levels):
    a verdict agrees when it lies on the label's side of 0.5; a verdict of exactly 0.5 (a tie) never agrees."""
    f, y = _codes(judge), _codes(human)
    ends = np.isin(y, (0.0, 1.0)).all() and y.size > 0
    return SIDE_RULE if ends and not np.isin(f, (0.0, 1.0)).all() else "exact"


def _read(values: np.ndarray, rule: str) -> np.ndarray:
    """The judge's verdicts as compared with the labels: unchanged, or by side (0, 0.5 for a tie, 1)."""
    f = _codes(values)
    return np.where(f > 0.5, 1.0, np.where(f < 0.5, 0.0, 0.5)) if rule == SIDE_RULE else f


def agreement(judge: np.ndarray, human: np.ndarray, *, level: float = 0.95) -> dict[str, Any]:
    """Agreement of the judge's verdicts with the human labels of the same (model, item) pairs.

    Categorical scales (at most :data:`MAX_CATEGORIES` distinct values): accuracy (share of equal verdicts) with its
    Wilson interval, Cohen's κ (unweighted for two or three categories, quadratic weights above: an ordinal grade),
    the confusion table (rows the human's label, columns the judge's). Graded scales: the mean absolute difference,
    and Pearson's and Spearman's correlations. Both: the judge's and the humans' means. ``rule`` says how verdicts
    and labels are compared (:func:`comparison_rule`): a graded judge against labels at the scale's two ends is read
    by side, its ties (0.5) counted in ``ties`` and never agreeing; κ and the confusion table then use the sides.
    """
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    y = _codes(human)
    rule = comparison_rule(judge, human)
    raw, f = _codes(judge), _read(judge, rule)
    n = int(f.size)
    out: dict[str, Any] = {"n": n, "level": level, "judge_mean": float(raw.mean()) if n else None,
                           "human_mean": float(y.mean()) if n else None, "rule": rule}
    if rule == SIDE_RULE:
        out["ties"] = int((f == 0.5).sum())
    cats = np.unique(np.concatenate([f, y]))
    if n == 0:
        return out | {"kind": "none"}
    if cats.size <= MAX_CATEGORIES:
        k = int((f == y).sum())
        lo, hi = proportion_interval(k, n, level)
        kappa = None
        # category indices (sklearn reads a float such as 0.25 as a continuous target, not a category)
        yi, fi, codes = np.searchsorted(cats, y), np.searchsorted(cats, f), np.arange(cats.size)
        if cats.size > 1:
            weights = None if cats.size <= 3 else "quadratic"
            value = float(cohen_kappa_score(yi, fi, labels=codes, weights=weights))
            kappa = value if np.isfinite(value) else None
        table = confusion_matrix(yi, fi, labels=codes)
        return out | {"kind": "categorical", "accuracy": k / n, "accuracy_lo": lo, "accuracy_hi": hi,
                      "cohen_kappa": kappa, "kappa_weights": None if cats.size <= 3 else "quadratic",
                      "categories": [float(c) for c in cats],
                      "confusion": {"rows": "human", "columns": "judge", "counts": table.astype(int).tolist()}}
    corr = stats.pearsonr(f, y).statistic if n > 2 and f.std() > 0 and y.std() > 0 else np.nan
    rho = stats.spearmanr(f, y).statistic if n > 2 and f.std() > 0 and y.std() > 0 else np.nan
    return out | {"kind": "graded", "mean_abs_difference": float(np.abs(f - y).mean()),
                  "pearson": float(corr) if np.isfinite(corr) else None,
                  "spearman": float(rho) if np.isfinite(rho) else None}


def flip_to_disagree(original: np.ndarray, neighbor: np.ndarray, human: np.ndarray, *,
                     level: float = 0.95, rule: str = "exact") -> dict[str, Any]:
    """How often a perturbation turns a verdict that agreed with the human into one that does not (and back).

    Over the observed neighbours of labelled items: ``agree_to_disagree`` = share of neighbours whose original verdict
    agreed with the label and whose neighbour verdict does not (Wilson interval), ``disagree_to_agree`` the reverse;
    ``rule`` is the judge's :func:`agreement` rule, so both read verdicts alike.
    """
    o, nb, y = _read(original, rule), _read(neighbor, rule), _codes(human)
    agreed = o == y
    k1, n1 = int((agreed & (nb != y)).sum()), int(agreed.sum())
    k2, n2 = int((~agreed & (nb == y)).sum()), int((~agreed).sum())
    lo1, hi1 = proportion_interval(k1, n1, level)
    lo2, hi2 = proportion_interval(k2, n2, level)
    return {"neighbours": int(o.size), "agreed": n1, "agree_to_disagree": k1 / n1 if n1 else None,
            "agree_to_disagree_lo": lo1, "agree_to_disagree_hi": hi1, "disagreed": n2,
            "disagree_to_agree": k2 / n2 if n2 else None, "disagree_to_agree_lo": lo2, "disagree_to_agree_hi": hi2}


def krippendorff_alpha(reliability: np.ndarray, *, categorical: bool) -> float | None:
    """Krippendorff's α of a raters × units matrix (NaN = not rated), nominal or interval; None when undefined."""
    import krippendorff

    data = np.asarray(reliability, dtype=float)
    if data.shape[0] < 2 or np.isfinite(data).sum(axis=0).max(initial=0) < 2:
        return None
    try:
        value = float(krippendorff.alpha(reliability_data=data,
                                         level_of_measurement="nominal" if categorical else "interval"))
    except (ValueError, ZeroDivisionError):
        return None
    return value if np.isfinite(value) else None

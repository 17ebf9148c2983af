"""Human-anchored means: PPI++ (power-tuned prediction-powered inference) of one model's human score.

Math only (numpy, scipy, ppi-python): no I/O, no pandas.

Setting. A judge scores every one of the N items of a batch (``f_i``, normalised to [0, 1]); a human
labels a subset L of n items (``y_i`` on the same scale). The target is the human mean over the batch,
``θ = mean_i y_i`` (or the mean of the population the batch is a uniform draw from). PPI++
(Angelopoulos, Duchi and Zrnic 2023, arXiv:2311.01453) estimates it by

    θ̂(λ) = λ · mean_{i ∉ L} f_i + mean_{i ∈ L} (y_i − λ f_i),

unbiased for every fixed λ when L is a uniform random subset, with the variance estimate
``λ² s²(f_U)/(N − n) + s²(y − λ f)_L / n`` and a normal interval. λ is power-tuned (ppi-python's
choice, clipped to [0, 1]); λ = 0 is the classical labels-only mean, λ = 1 plain PPI.

Given L and λ, θ̂ is a fixed linear map of the judge's scores, ``θ̂ = Σ_i c_i f_i + mean_L y`` with
``c_i = λ/(N − n)`` off L and ``c_i = −λ/n`` on L (:func:`linear_weights`), so a perturbation that moves the
judge's scores by Δf moves θ̂ by exactly ``Σ_i c_i Δf_i`` (docs/proofs/human_anchored.md).

References
----------
A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic. Prediction-powered inference. Science 2023.
A. N. Angelopoulos, J. C. Duchi, T. Zrnic. PPI++: Efficient prediction-powered inference. arXiv:2311.01453.
P. Boyeau, A. N. Angelopoulos, N. Yosef, J. Malik, M. I. Jordan. AutoEval done right. arXiv:2403.07008.
I. Chatzi, E. Straitouri, S. Thejaswi, M. Gomez-Rodriguez. Prediction-powered ranking. NeurIPS 2024.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from biasbound._exceptions import InputError

__all__ = [
    "AnchoredMean",
    "anchored_mean",
    "labels_for_width",
    "linear_weights",
    "power_tuned_lambda",
    "rank_sets",
]

#: the PPI interval must be narrower than the classical one by at least this share for the labels to "help"
HELP_MARGIN = 0.05


@dataclass(frozen=True)
class AnchoredMean:
    """One model's human-anchored mean and the intervals beside it (all on the normalised [0, 1] scale)."""

    estimate: float  # PPI++ point estimate θ̂(λ)
    lo: float
    hi: float
    lam: float  # the power-tuning parameter used (recorded: the release is linear in f given it)
    classical: float  # labels-only mean
    classical_lo: float
    classical_hi: float
    judge_only: float  # the judge's mean over all N items
    n: int  # labelled items
    n_total: int  # items the judge scored (N)
    level: float  # confidence level of both intervals

    @property
    def width(self) -> float:
        return self.hi - self.lo

    @property
    def classical_width(self) -> float:
        return self.classical_hi - self.classical_lo

    @property
    def helps(self) -> bool:
        """True when the judge narrows the labels-only interval by at least :data:`HELP_MARGIN`."""
        return self.width <= (1.0 - HELP_MARGIN) * self.classical_width


#: Below this many labels the anchored interval is the hull of the PPI++ and the labels-only interval (at n = 25 of
#: LLMBar's items the PPI++ interval alone, with Student's quantile, covered 0.916 of the draws of its worst
#: configuration at 95%; the labels-only one 0.938).
SMALL_SAMPLE = 50


def power_tuned_lambda(y: np.ndarray, f_labelled: np.ndarray, f_unlabelled: np.ndarray) -> float:
    """ppi-python's power-tuning for a mean (``ppi_py.ppi._calc_lam_glm`` with an identity Hessian, clipped).

    ``λ = cov_n(y, f_L) / ((1 + n/N_U) · var(f_L ∪ f_U))`` clipped to [0, 1] (0 when the judge's scores do not
    vary). The same number ``ppi_py.ppi_mean_ci(..., lam=None)`` uses; computed here so that the release
    can record it (the tests compare with ppi-python's own).
    """
    n, nu = y.size, f_unlabelled.size
    cov = float(np.mean((y - y.mean()) * (f_labelled - f_labelled.mean())))
    var = float(np.var(np.concatenate([f_labelled, f_unlabelled]), ddof=1))
    if not var > 0.0:
        return 0.0
    return float(min(1.0, max(0.0, cov / ((1.0 + n / nu) * var))))  # [proof:lambda-data-dependent]


def anchored_mean(y: np.ndarray, f: np.ndarray, labelled: np.ndarray, *, level: float = 0.95,
                  lam: float | None = None) -> AnchoredMean:
    """PPI++ estimate and interval of the human mean of one model's items.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Human labels of the labelled items (normalised scale), in the order of ``np.flatnonzero(labelled)``.
    f : ndarray of shape (N,)
        The judge's score of every item (normalised scale).
    labelled : bool ndarray of shape (N,)
        Which items carry a human label; needs 2 ≤ n ≤ N − 2.
    level : float
        Confidence level of the PPI and classical intervals (normal approximation, both).
    lam : float, optional
        A fixed power-tuning parameter in [0, 1]; power-tuned (:func:`power_tuned_lambda`) when None.

    Returns
    -------
    AnchoredMean
        Valid (asymptotically, as n grows) for the human mean when the labelled items are a uniform random
        subset, whatever the judge's errors.
    """
    import ppi_py  # imported here: it loads numba (about a second), needed only when labels are given

    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    labelled = np.asarray(labelled, dtype=bool)
    n, big_n = int(labelled.sum()), f.size
    if y.size != n:
        raise InputError(f"anchored_mean needs one label per labelled item: {y.size} labels for {n} labelled items.")
    if n < 2 or big_n - n < 2:
        raise InputError(f"anchored_mean needs at least 2 labelled and 2 unlabelled items; got {n} of {big_n} labelled.")
    if not (np.isfinite(y).all() and np.isfinite(f).all()):
        raise InputError("anchored_mean needs finite labels and judge scores (a missing score is no item here).")
    f_lab, f_unl = f[labelled], f[~labelled]
    if lam is None:
        lam = power_tuned_lambda(y, f_lab, f_unl)
    a = 1.0 - level
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f_lab, f_unl, lam=lam)))  # [proof:ppi-estimate]
    lo, hi = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(y, f_lab, f_unl, alpha=a, lam=lam))  # [proof:ppi-interval]
    clo, chi = (float(np.squeeze(v)) for v in ppi_py.classical_mean_ci(y, alpha=a))
    # ppi-python's intervals are est ± z·se; with few labels the Student quantile (n − 1 degrees of freedom) takes
    # the place of z, for both intervals alike: at n = 25 the normal one covered 0.900 of LLMBar draws at 95%
    widen = float(stats.t.ppf(1.0 - a / 2.0, n - 1) / stats.norm.ppf(1.0 - a / 2.0))  # [proof:ppi-small-sample]
    lo, hi = est - widen * (est - lo), est + widen * (hi - est)
    mean = float(y.mean())
    clo, chi = mean - widen * (mean - clo), mean + widen * (chi - mean)
    if n < SMALL_SAMPLE:  # [proof:ppi-few-labels] the power-tuned λ̂ varies most here: the interval also holds the
        lo, hi = min(lo, clo), max(hi, chi)  # labels-only one, so it covers at least whenever that one does
    return AnchoredMean(estimate=est, lo=lo, hi=hi, lam=float(lam), classical=float(y.mean()), classical_lo=clo,
                        classical_hi=chi, judge_only=float(f.mean()), n=n, n_total=big_n, level=level)


def linear_weights(labelled: np.ndarray, lam: float) -> np.ndarray:
    """The coefficients c of θ̂(λ) = Σ_i c_i f_i + mean_L y: λ/(N − n) off the labelled set, −λ/n on it.

    They sum to 0: a perturbation that shifts every item's score by the same amount leaves θ̂ unmoved.
    """
    labelled = np.asarray(labelled, dtype=bool)
    n, big_n = int(labelled.sum()), labelled.size
    return np.where(labelled, -lam / n, lam / (big_n - n))  # [proof:linear-map]


def rank_sets(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank sets from simultaneous intervals: model m ranks in [1 + #{k: lo_k > hi_m}, M − #{k: hi_k < lo_m}].

    Rank 1 is the highest score. When the M intervals hold simultaneously with probability ≥ 1 − a (each at
    level 1 − a/M, Bonferroni), every true rank lies in its set with probability ≥ 1 − a: a model whose
    interval lies wholly above m's has a higher true score, one wholly below a lower one.
    """
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    above = (lo[None, :] > hi[:, None]).sum(axis=1)  # [proof:rank-sets]
    below = (hi[None, :] < lo[:, None]).sum(axis=1)
    return 1 + above, lo.size - below


def labels_for_width(y: np.ndarray, f: np.ndarray, labelled: np.ndarray, *, half_width: float,
                     level: float = 0.95, n_total: int | None = None) -> tuple[int, int]:
    """Labels needed for a PPI++ (and a classical) interval of half-width ``half_width``, from a pilot.

    The pilot's labelled items give the human variance s²(y), the judge's variance and their covariance;
    the PPI++ variance at its optimal λ is ``min_λ λ² s²_f/(N − n) + s²(y − λf)/n`` and the smallest n whose
    ``z · sd ≤ half_width`` is found by bisection (a pilot estimate, not a guarantee: re-check with the labels).

    Returns
    -------
    (n_ppi, n_classical) : tuple of int
        Labels for PPI++ and for the labels-only interval; ``n_total`` (default N) when even labelling every
        item does not reach the width (then labels alone are the census and the interval has width 0).
    """
    y = np.asarray(y, dtype=float)
    f = np.asarray(f, dtype=float)
    labelled = np.asarray(labelled, dtype=bool)
    big_n = int(n_total if n_total is not None else f.size)
    if not (0.0 < half_width < 1.0):
        raise InputError(f"The half-width of a label budget must be in (0, 1). Got {half_width!r} instead.")
    if labelled.sum() < 2:
        raise InputError("a label budget needs a pilot with at least 2 labelled items.")
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    fl = f[labelled]
    var_y = float(np.var(y, ddof=1))
    var_f = float(np.var(f, ddof=1))
    cov = float(np.cov(y, fl, ddof=1)[0, 1]) if fl.size > 1 else 0.0

    def sd_ppi(n: int) -> float:
        rest = max(big_n - n, 1)
        lam = 0.0 if var_f <= 0 else min(1.0, max(0.0, (cov / n) / (var_f / rest + var_f / n)))
        return math.sqrt(lam * lam * var_f / rest + (var_y - 2 * lam * cov + lam * lam * var_f) / n)

    def smallest(sd: object) -> int:
        for n in range(2, big_n):
            if z * sd(n) <= half_width:  # type: ignore[operator]
                return n
        return big_n

    return smallest(sd_ppi), smallest(lambda n: math.sqrt(var_y / n))

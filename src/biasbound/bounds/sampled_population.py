"""Bound unit: a sample drawn without replacement from a finite population — a confidence band.

Setting: the population holds ``N`` neighbours (``T`` is uniform over it); ``m`` of them were drawn
uniformly without replacement by a recorded seed and judged, with squared norms ``x_(1) >= ... >= x_(m)``.

Band (level ``1 - beta``, finite-population exact, no i.i.d. assumption): order the population by
``||Delta||^2`` decreasingly; ``H_K`` = number of sampled items among the top ``K`` is hypergeometric
``(N, K, m)``.  For a boundary ``b(K)`` (the largest ``h`` with ``P(H_K < h) <= gamma``, made nondecreasing) the
event ``E = {H_K >= b(K) for all K}`` has probability ``>= 1 - beta``: for ``N m <= 2e6`` its exact probability is
computed by following the law of the sampling path ``K -> H_K`` and ``gamma`` is the largest found with
``P(E^c) <= beta``; otherwise ``gamma = beta / m`` and the union bound over the at most ``m`` places where ``b``
steps up.  On ``E``, for every threshold ``t``: ``#{population > t} <= Kup(#{sample > t})`` with
``Kup(k) = #{K : b(K) <= k}``.  The band depends only on ``(N, m, beta)``.

Worst distribution inside the band: ``Kup(0)`` neighbours at the almost-sure bound ``A`` (or where the
tail is 1 when ``A`` is unknown), ``Kup(j) - Kup(j-1)`` at ``x_(j)``.  For every nondecreasing ``p``
the population mean of ``p`` is at most its mean under this distribution; with ``p`` the exact
noncentral chi-square tail of the shrunk shift this bounds the violation probability for every
``(alpha, sigma)`` at once (the band does not depend on them, so they may be chosen after looking).
With ``m = N`` the band is the sample itself (``Kup(k) = k``) and the bound is exact.
Proof: ``docs/proofs/sampled_population.md``.  numpy/scipy only.
"""

from __future__ import annotations

import numpy as np

from biasbound.bounds._band import band as _band
from biasbound.bounds._knowledge import Sample
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum
from biasbound.parameters import AT_A_POINT, validate_params

#: the public band checks its arguments against the parameter table (the records call the unchecked one)
band = validate_params(_band)

__all__ = ["EXACT", "NAME", "applies", "band", "violation_bound", "worst_distribution"]

NAME = "sampled-population"
EXACT = False


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, Sample) else "needs neighbours sampled without replacement from a known population"


def worst_distribution(knowledge: Sample) -> tuple[np.ndarray, np.ndarray, int]:
    """``(values, weights, top)``: the worst population inside the band.

    ``top`` neighbours sit at the almost-sure bound (or at infinity); ``weights[j]`` at ``values[j]``
    (the sample sorted decreasingly).  ``top + sum(weights) == N``.
    """
    x = knowledge.sq_norms[::-1]  # decreasing
    kup = band(knowledge.population_size, knowledge.m, knowledge.beta)
    top = int(kup[0])  # [proof:top-mass]
    weights = np.diff(kup)  # [proof:worst-in-band]
    return x, weights, top


def _linear(alpha: float, knowledge: Sample) -> tuple[np.ndarray, np.ndarray, float]:
    """``(q, w, c)`` with bound ``= sum(w * tail(q)) + c``: the worst population in the band."""
    x, w, top = worst_distribution(knowledge)
    k2 = kappa_sq(alpha, knowledge.shift_ratio)
    n = knowledge.population_size
    if knowledge.A is None:
        return k2 * x, w / n, top / n
    return np.append(k2 * x, k2 * knowledge.A * knowledge.A), np.append(w, top) / n, 0.0


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Sample) -> float:
    q, w, c = _linear(alpha, knowledge)
    return weighted_sum(w, tail(q, tau=tau, sigma=sigma, dim=dim), c)


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Sample) -> float:
    """Upper ``(1 - beta)`` confidence bound on ``Pr[||M(D) - M(D')|| > tau]`` from a without-replacement sample.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance, shrinkage in [0, 1], noise ``>= 0``, dimension.
    knowledge : Sample

    Returns
    -------
    float
        The violation probability under the worst population inside the band (valid for all
        ``(alpha, sigma)`` simultaneously on the band's event).
    """
    where = "sampled_population.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (Sample,), where)
    return _bound(t, a, s, d, knowledge)

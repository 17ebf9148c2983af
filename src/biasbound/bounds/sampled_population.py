"""Bound unit: a sample drawn without replacement from a finite population — a confidence band.

Setting: the population holds ``N`` neighbours (``T`` is uniform over it); ``m`` of them were drawn
uniformly without replacement by a recorded seed and judged, with squared norms ``x_(1) >= ... >= x_(m)``.

Band (level ``1 - beta``, finite-population exact, no i.i.d. assumption): order the population by
``||Delta||^2`` decreasingly; ``H_K`` = number of sampled items among the top ``K`` is hypergeometric
``(N, K, m)``.  With ``gamma = beta / m`` and ``b(K)`` the largest ``h`` with ``P(Hyp(N, K, m) < h) <= gamma``,
the event ``E = {H_K >= b(K) for all K}`` has probability ``>= 1 - beta`` (a first crossing can only
happen where ``b`` steps up, at most ``m`` places; union bound).  On ``E``, for every threshold
``t``: ``#{population > t} <= Kup(#{sample > t})`` with ``Kup(k) = #{K : b(K) <= k}``.

Worst distribution inside the band: ``Kup(0)`` neighbours at the almost-sure bound ``A`` (or where the
tail is 1 when ``A`` is unknown), ``Kup(j) - Kup(j-1)`` at ``x_(j)``.  For every nondecreasing ``p``
the population mean of ``p`` is at most its mean under this distribution; with ``p`` the exact
noncentral chi-square tail of the shrunk shift this bounds the violation probability for every
``(alpha, sigma)`` at once (the band does not depend on them, so they may be chosen after looking).
With ``m = N`` the band is the sample itself (``Kup(k) = k``) and the bound is exact.
Proof: ``docs/proofs/sampled_population.md``.  numpy/scipy only.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

from biasbound.bounds._knowledge import Sample
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum

__all__ = ["EXACT", "NAME", "applies", "band", "violation_bound", "worst_distribution"]

NAME = "sampled-population"
EXACT = False
SIGMA_ZERO = True


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, Sample) else "needs neighbours sampled without replacement from a known population"


@functools.lru_cache(maxsize=256)
def _band(N: int, m: int, beta: float) -> tuple[int, ...]:
    gamma = beta / m  # [proof:union-over-steps]
    K = np.arange(1, N + 1)
    h0 = stats.hypergeom.ppf(gamma, N, K, m)  # smallest h with P(H <= h) >= gamma
    h0 = np.where(np.isnan(h0), 0.0, h0).astype(np.int64)
    # b(K) = h0 needs P(H <= h0 - 1) <= gamma; step down where float error says otherwise
    for _ in range(4):
        bad = (h0 > 0) & (stats.hypergeom.cdf(h0 - 1, N, K, m) > gamma * (1.0 - 1e-10))
        if not np.any(bad):
            break
        h0 = np.where(bad, h0 - 1, h0)
    # a nondecreasing boundary below b (reverse running minimum): lowering b only enlarges the event,
    # and a first crossing of a nondecreasing boundary happens where it steps up (at most m places)
    b = np.minimum.accumulate(np.clip(h0, 0, m)[::-1])[::-1]
    # Kup(k) = #{K in 1..N : b(K) <= k}
    counts = np.bincount(b, minlength=m + 1)
    kup = np.cumsum(counts)[: m + 1]
    kup[m] = N  # H_N = m surely
    return tuple(int(v) for v in kup)


def band(population_size: int, m: int, beta: float) -> np.ndarray:
    """``Kup(k)`` for ``k = 0..m``: on an event of probability ``>= 1 - beta``,
    ``#{population > t} <= Kup(#{sample > t})`` for every threshold ``t``."""
    return np.array(_band(int(population_size), int(m), float(beta)), dtype=np.int64)


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

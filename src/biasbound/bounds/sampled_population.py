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

import functools
import math

import numpy as np
from scipy import stats

from biasbound.bounds._knowledge import Sample
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "band", "violation_bound", "worst_distribution"]

NAME = "sampled-population"
EXACT = False


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, Sample) else "needs neighbours sampled without replacement from a known population"


def _boundary(N: int, m: int, gamma: float) -> np.ndarray:
    """``b(K)`` for ``K = 1..N``: the largest ``h`` with ``P(Hyp(N, K, m) < h) <= gamma``, made nondecreasing."""
    K = np.arange(1, N + 1)
    h0 = stats.hypergeom.ppf(gamma, N, K, m)  # smallest h with P(H <= h) >= gamma
    h0 = np.where(np.isnan(h0), 0.0, h0).astype(np.int64)
    # b(K) = h0 needs P(H <= h0 - 1) <= gamma; step down where float error says otherwise
    for _ in range(4):
        bad = (h0 > 0) & (stats.hypergeom.cdf(h0 - 1, N, K, m) > gamma * (1.0 - 1e-10))
        if not np.any(bad):
            break
        h0 = np.where(bad, h0 - 1, h0)
    # a nondecreasing boundary below b0 (reverse running minimum): lowering b only enlarges the event,
    # and a first crossing of a nondecreasing boundary happens where it steps up (at most m places)
    return np.minimum.accumulate(np.clip(h0, 0, m)[::-1])[::-1]


def _crossing(N: int, m: int, b: np.ndarray) -> float:
    """``P(H_K < b(K) for some K)`` exactly, by propagating the law of the sampling path ``K -> H_K``.

    Drawing ``m`` of ``N`` uniformly without replacement is drawing item ``K`` (in the fixed order) with
    probability ``(m - H_{K-1}) / (N - K + 1)``; the mass of paths that have crossed is removed at each step."""
    h = np.arange(m + 1)
    mass = np.zeros(m + 1)
    mass[0] = 1.0
    for K in range(1, N + 1):
        p = (m - h) / (N - K + 1)
        new = mass * (1.0 - p)
        new[1:] += mass[:-1] * p[:-1]
        new[: int(b[K - 1])] = 0.0
        mass = new
    return max(0.0, 1.0 - math.fsum(mass.tolist()))


_DP_LIMIT = 2e6  # N * m above which the band falls back to the union bound (the DP would be slow)


def _marginal_cdf(N: int, m: int) -> np.ndarray:
    """``P(H_K <= j)`` for ``K = 1..N`` (rows), ``j = 0..m-1`` (columns), by the same path recursion."""
    h = np.arange(m + 1)
    mass = np.zeros(m + 1)
    mass[0] = 1.0
    out = np.empty((N, m))
    for K in range(1, N + 1):
        p = (m - h) / (N - K + 1)
        new = mass * (1.0 - p)
        new[1:] += mass[:-1] * p[:-1]
        mass = new
        out[K - 1] = np.cumsum(mass)[:m]
    return out


def _boundary_from_cdf(cdf: np.ndarray, gamma: float, m: int) -> np.ndarray:
    """``b(K)`` = number of ``j < m`` with ``P(H_K <= j) <= gamma`` (the largest ``h`` with ``P(H_K < h) <= gamma``),
    made nondecreasing.  Only the exact crossing probability of the result is relied on."""
    b0 = np.count_nonzero(cdf <= gamma, axis=1).astype(np.int64)
    return np.minimum.accumulate(np.clip(b0, 0, m)[::-1])[::-1]


@functools.lru_cache(maxsize=256)
def _band(N: int, m: int, beta: float) -> tuple[int, ...]:
    b = None
    if N * m <= _DP_LIMIT and m < N:
        # the largest gamma (bisection on log gamma) whose boundary's exact crossing probability is <= beta
        cdf = _marginal_cdf(N, m)
        target = beta * (1.0 - 1e-6)  # margin for the DP's float error
        lo, hi = math.log(beta / m), math.log(beta)
        b_lo = _boundary_from_cdf(cdf, beta / m, m)
        if _crossing(N, m, b_lo) <= target:
            b = b_lo
            for _ in range(12):  # gamma to a fraction of its log range: the safe end is kept either way
                mid = 0.5 * (lo + hi)
                bm = _boundary_from_cdf(cdf, math.exp(mid), m)
                if _crossing(N, m, bm) <= target:  # [proof:exact-crossing]
                    lo, b = mid, bm
                else:
                    hi = mid
    if b is None:
        b = _boundary(N, m, beta / m)  # [proof:union-over-steps] valid by the union bound alone
    # Kup(k) = #{K in 1..N : b(K) <= k}
    counts = np.bincount(b, minlength=m + 1)
    kup = np.cumsum(counts)[: m + 1]
    kup[m] = N  # H_N = m surely
    return tuple(int(v) for v in kup)


@validate_params
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

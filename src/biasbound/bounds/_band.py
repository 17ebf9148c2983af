"""The finite-population band of a sample drawn without replacement (private; :mod:`sampled_population` is the unit).

``Kup(k)`` for ``k = 0..m``: on an event of probability ``>= 1 - beta``, ``#{population > t} <= Kup(#{sample > t})``
for every threshold ``t``. A leaf module (numpy/scipy only): the sample record's survival
(:mod:`biasbound.bounds._survival`) and the unit both read it. Proof: ``docs/proofs/sampled_population.md``.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats

__all__ = ["band"]


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


def band(population_size: int, m: int, beta: float) -> np.ndarray:
    """``Kup(k)`` for ``k = 0..m``: on an event of probability ``>= 1 - beta``,
    ``#{population > t} <= Kup(#{sample > t})`` for every threshold ``t``."""
    return np.array(_band(int(population_size), int(m), float(beta)), dtype=np.int64)

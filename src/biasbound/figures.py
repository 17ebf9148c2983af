"""Judge-informative figures, pure functions of the same knowledge the certificate was calibrated on.

* :func:`range_implied` — would the certificate hold for ANY judge on this score range (the almost-sure
  bound alone at the certified ``(alpha, sigma)``)?  Then the certificate says nothing about this judge.
* :func:`original_scale` — the guarantee restated for the unshrunk judge: with a centre ``c`` fixed within
  the batch, ``(M(D) - (1 - alpha) c) / alpha = f(D) + N(0, (sigma/alpha)^2 I)``, so releasing ``M(D)`` is
  releasing the unshrunk judge with noise ``sigma/alpha``, and the ``(tau, delta)`` statement is a
  ``(tau/alpha, delta)`` statement about it.
* :func:`bias_radius` — the smallest ``tau`` for which the unshrunk, noiseless judge (``alpha = 1``,
  ``sigma = 0``) is ``(tau, delta)``-bias-bounded: an upper quantile of ``||Delta||``; exact for a full
  population, a ``(1 - beta)`` upper confidence bound (order statistic of the finite-population band) for a
  sample, the worst case for almost-sure or moment knowledge.  :func:`bias_radius_curve` gives it over ``delta``.

Proof: ``docs/proofs/figures.md``.  numpy/scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from biasbound._validation import check_in_range, check_int
from biasbound.bounds import almost_sure
from biasbound.bounds._knowledge import (
    AlmostSure,
    FullPopulation,
    HighProbability,
    Knowledge,
    Moments,
    RandomJudge,
    Record,
    Sample,
)
from biasbound.bounds.sampled_population import band

__all__ = ["DEFAULT_DELTAS", "bias_radius", "bias_radius_curve", "original_scale", "range_implied", "survival"]

#: the delta grid of :func:`bias_radius_curve` when none is given
DEFAULT_DELTAS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


def range_implied(*, tau: float, delta: float, alpha: float, sigma: float, dim: int, A: float,
                  shift_ratio: float | None = None) -> bool:
    """True when ``(alpha, sigma)`` certifies ``(tau, delta)`` for every judge whose neighbours move the scores
    by at most ``A`` (the score range for the neighbour relation, e.g. ``R sqrt(k)``): the exact almost-sure
    worst case is ``<= delta`` (``docs/proofs/almost_sure.md``).

    Parameters
    ----------
    tau, delta, alpha, sigma, dim : float, float, float, float, int
        The certified point.
    A : float
        Almost-sure bound on ``||Delta||`` implied by the score range alone.
    shift_ratio : float or None
        Batch-mean centre (as in :class:`biasbound.bounds.AlmostSure`).
    """
    where = "range_implied"
    dl = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    a = check_in_range(A, "A", where, low=0.0)
    v = almost_sure.violation_bound(tau, alpha, sigma, dim, AlmostSure(a, shift_ratio=shift_ratio))
    return bool(v <= dl)  # [proof:range-implied]


def original_scale(*, tau: float, alpha: float, sigma: float) -> dict[str, float]:
    """``{"tau": tau/alpha, "sigma": sigma/alpha}``: the certificate as a statement about the unshrunk judge.

    Valid for a centre fixed within the batch (fixed, hold-out, EMA): ``(M(D) - (1 - alpha) c)/alpha =
    f(D) + Z/alpha`` with ``Z/alpha ~ N(0, (sigma/alpha)^2 I)``, and ``||M(D) - M(D')|| > tau`` iff the
    rescaled difference exceeds ``tau/alpha`` (``docs/proofs/figures.md``).
    """
    where = "original_scale"
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    a = check_in_range(alpha, "alpha", where, low=0.0, high=1.0, low_open=True)
    s = check_in_range(sigma, "sigma", where, low=0.0)
    return {"tau": t / a, "sigma": s / a}  # [proof:change-of-units]


# --------------------------------------------------------------------------- bias radius
def _record_survival(r: Record, t: float) -> float:
    """Worst-case ``Pr[||Delta|| > t]`` over the distributions consistent with one record."""
    t2 = t * t
    if isinstance(r, AlmostSure):
        return 1.0 if r.A > t else 0.0
    if isinstance(r, Moments):
        if r.A is not None and r.A <= t:
            return 0.0
        if t == 0:
            return 1.0 if r.U2 > 0 else 0.0
        return min(1.0, r.U2 / t2)  # [proof:radius-markov]
    if isinstance(r, FullPopulation):
        if r.weights is not None:  # T's probability of each value
            return min(1.0, math.fsum(r.weights[r.sq_norms > t2].tolist()))
        return float(np.count_nonzero(r.sq_norms > t2)) / r.m  # [proof:radius-exact]
    if isinstance(r, Sample):
        if r.A is not None and r.A <= t:
            return 0.0
        kup = band(r.population_size, r.m, r.beta)
        k = int(np.count_nonzero(r.sq_norms > t2))  # sample count above t
        return min(1.0, int(kup[k]) / r.population_size)  # [proof:radius-band]
    if isinstance(r, HighProbability):
        return float(r.eps) if t >= r.A else 1.0  # [proof:radius-high-probability]
    if isinstance(r, RandomJudge):
        j = int(np.searchsorted(r.levels, t2, side="right"))  # levels <= t²: Pr[x > t²] <= Pr[x > x_j]
        return 0.0 if j >= r.levels.size else float(r.upper[j])  # [proof:radius-random-judge]
    raise TypeError(f"Unknown knowledge record {type(r).__name__}.")  # pragma: no cover


def survival(knowledge: Any, t: float) -> float:
    """Worst-case ``Pr[||Delta|| > t]`` for the knowledge: per generator the min over its records, then the
    max over generators (``how="max"``) or their mean (``"mixture"``)."""
    from biasbound.calibration import unit_groups

    k = Knowledge.of(knowledge)
    per = [min(_record_survival(r, t) for r in recs) for _, recs in k.generators]
    if k.how == "max":
        return max(per)
    # a mixture within each unit ("UNIT | GEN" names), the max over units: as the calibration combines them
    return max(math.fsum(per[i] for i in idx) / len(idx) for idx in unit_groups([n for n, _ in k.generators]).values())


def _jumps(k: Knowledge) -> np.ndarray:
    pts = [0.0]
    for r in k.records:
        if isinstance(r, (FullPopulation, Sample)):
            pts.extend(np.sqrt(np.unique(r.sq_norms)).tolist())
        if isinstance(r, RandomJudge):
            pts.extend(np.sqrt(r.levels).tolist())
        if getattr(r, "A", None) is not None:
            pts.append(float(r.A))
    return np.unique(np.array(pts, dtype=float))


def bias_radius(delta: float, knowledge: Any) -> float:
    """Smallest ``tau`` with ``Pr[||Delta|| > tau] <= delta`` for the unshrunk, noiseless judge (worst case).

    Parameters
    ----------
    delta : float
        In (0, 1).
    knowledge : record, list, mapping or Knowledge

    Returns
    -------
    float
        The radius (``inf`` when the knowledge bounds no quantile, e.g. a sample without ``A`` whose band
        leaves more than ``delta`` of the population unbounded).  Exact for a full population; a
        ``(1 - beta)`` upper confidence bound for a sample.
    """
    dl = check_in_range(delta, "delta", "bias_radius", low=0.0, high=1.0, low_open=True, high_open=True)
    k = Knowledge.of(knowledge)
    cands = _jumps(k)
    ok = [survival(k, float(t)) <= dl for t in cands]  # nonincreasing survival: ok is False..False True..True
    if not any(ok):
        hi = None
        lo = float(cands[-1])
    else:
        i = ok.index(True)
        hi = float(cands[i])
        lo = float(cands[i - 1]) if i > 0 else 0.0
        if i == 0:
            return hi
    # between two jump points only moment records change (continuously): bisect, keeping the safe end
    if hi is None:
        hi = max(lo, 1.0) * 2.0
        while survival(k, hi) > dl:
            if hi > 1e12:
                return math.inf
            hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-12 * hi:
            break
        if survival(k, mid) <= dl:
            hi = mid
        else:
            lo = mid
    return hi


def bias_radius_curve(knowledge: Any, deltas: Sequence[float] | None = None) -> list[dict[str, float]]:
    """``[{"delta", "radius"}, ...]`` over ``deltas`` (default :data:`DEFAULT_DELTAS`)."""
    ds = DEFAULT_DELTAS if deltas is None else tuple(deltas)
    check_int(len(ds), "deltas", "bias_radius_curve", low=1)
    return [{"delta": float(d), "radius": bias_radius(d, knowledge)} for d in ds]

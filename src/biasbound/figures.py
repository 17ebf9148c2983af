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
from biasbound.bounds._knowledge import AlmostSure, Knowledge, Record
from biasbound.parameters import validate_params

__all__ = ["DEFAULT_DELTAS", "bias_radius", "bias_radius_curve", "original_scale", "range_implied", "survival"]

#: the delta grid of :func:`bias_radius_curve` when none is given
DEFAULT_DELTAS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)


@validate_params
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


@validate_params
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
    return float(r.survivals(np.array([float(t)]))[0])


def survival(knowledge: Any, t: float) -> float:
    """Worst-case ``Pr[||Delta|| > t]`` for the knowledge: per generator the min over its records, then the
    max over generators (``how="max"``) or their mean within each unit (``"mixture"``)."""
    k = Knowledge.of(knowledge)
    return _combine(k, [min(_record_survival(r, t) for r in recs) for _, recs in k.generators])


def _combine(k: Knowledge, per: Sequence[float]) -> float:
    """Generators' survivals combined: the max (``how="max"``), or a mixture within each unit ("UNIT | GEN"
    names) and the max over units — as the calibration combines them."""
    from biasbound.calibration import unit_groups

    if k.how == "max":
        return max(per)
    return max(math.fsum(per[i] for i in idx) / len(idx) for idx in unit_groups([n for n, _ in k.generators]).values())


def _survivals(k: Knowledge, t: np.ndarray) -> np.ndarray:
    """:func:`survival` at every threshold of ``t`` (per generator the min over records, then max or mean)."""
    per = np.array([np.min([r.survivals(t) for r in recs], axis=0) for _, recs in k.generators])
    if k.how == "max":
        return per.max(axis=0)
    return np.array([_combine(k, col) for col in per.T.tolist()])


def _jumps(k: Knowledge) -> np.ndarray:
    """Every threshold where some record's survival jumps (and 0)."""
    return np.unique(np.concatenate([np.zeros(1), *(p for r in k.records for p in r.jumps())]))


@validate_params
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
    return bias_radii((delta,), knowledge)[0]


def bias_radii(deltas: Sequence[float], knowledge: Any) -> list[float]:
    """:func:`bias_radius` at every ``delta`` of ``deltas``: the worst-case survival is evaluated once at every
    jump point of the knowledge (one sort per record), then each ``delta`` is a lookup in it."""
    ds = [check_in_range(d, "delta", "bias_radius", low=0.0, high=1.0, low_open=True, high_open=True) for d in deltas]
    k = Knowledge.of(knowledge)
    cands = _jumps(k)
    surv = _survivals(k, cands)  # nonincreasing in t
    ok = surv[None, :] <= np.asarray(ds, dtype=float)[:, None]  # per delta: False..False True..True
    first = np.where(ok.any(axis=1), ok.argmax(axis=1), -1).tolist()  # each delta's first feasible jump point
    between: dict[int, float] = {}
    if not any(r.CONTINUOUS_SURVIVAL for r in k.records):
        # step functions only: the survival inside the interval below each delta's first feasible jump point is one
        # constant, taken (as _survival_between takes it) at the interval's midpoint; every interval in one call
        idx = sorted(set(first) - {-1, 0})
        if idx:
            mids = np.array([0.5 * (float(cands[i - 1]) + float(cands[i])) for i in idx])
            between = dict(zip(idx, _survivals(k, mids).tolist()))
    return [_radius_from(k, cands, surv, dl, between, i) for dl, i in zip(ds, first)]


def _radius_from(k: Knowledge, cands: np.ndarray, surv: np.ndarray, dl: float,
                 between: dict[int, float] | None = None, first: int | None = None) -> float:
    """The radius at ``dl`` from the survival at the jump points; ``first``: the first jump point where it is
    ``<= dl`` (``-1``: none), when already known."""
    if first is None:
        ok = surv <= dl  # False..False True..True
        first = int(np.argmax(ok)) if ok.any() else -1
    i = first
    if i < 0:
        hi = None
        lo = float(cands[-1])
    else:
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
    inside = None
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-12 * hi:
            break
        if inside is None:  # every mid lies strictly between the same two jump points: the step records are fixed there
            if between and i in between:  # its value at this first mid, computed with the other deltas' (bias_radii)
                constant: float | None = between[i]
                inside = lambda t, c=constant: c  # noqa: E731
            else:
                inside, constant = _survival_between(k, mid)
            if constant is not None and constant > dl:  # every step would move lo up: the loop ends at this hi
                return hi
        if inside(mid) <= dl:
            hi = mid
        else:
            lo = mid
    return hi


def _survival_between(k: Knowledge, t_in: float) -> tuple[Any, float | None]:
    """:func:`survival` for thresholds with no jump point between them and ``t_in``: the records other than
    moments (step functions of ``t``) are evaluated once at ``t_in``, the moment records at each ``t``.
    Returns the function and, when no moment record is known, its constant value."""
    fixed = [[_record_survival(r, t_in) for r in recs if not r.CONTINUOUS_SURVIVAL] for _, recs in k.generators]
    moms = [[r for r in recs if r.CONTINUOUS_SURVIVAL] for _, recs in k.generators]

    def f(t: float) -> float:
        return _combine(k, [min(fx + [_record_survival(r, t) for r in ms]) for fx, ms in zip(fixed, moms)])

    if not any(moms):  # no moment record: the survival is one constant between the two jump points
        value = f(t_in)
        return (lambda t: value), value
    return f, None


def bias_radius_curve(knowledge: Any, deltas: Sequence[float] | None = None) -> list[dict[str, float]]:
    """``[{"delta", "radius"}, ...]`` over ``deltas`` (default :data:`DEFAULT_DELTAS`)."""
    ds = DEFAULT_DELTAS if deltas is None else tuple(deltas)
    check_int(len(ds), "deltas", "bias_radius_curve", low=1)
    return [{"delta": float(d), "radius": r} for d, r in zip(ds, bias_radii(ds, knowledge))]

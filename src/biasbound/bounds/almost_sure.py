"""Bound unit: almost-sure knowledge ``||Delta|| <= A`` — the exact worst case (noncentral chi-square).

Statement: if ``||Delta|| <= A`` almost surely, then

    Pr[||M(D) - M(D')|| > tau] <= ncx2.sf(tau^2 / (2 sigma^2); d, kappa^2 A^2 / (2 sigma^2)),

with ``kappa^2 = alpha^2`` (fixed centre) or ``alpha^2 + (1 - alpha^2) rho`` (batch centre), and the
bound is attained by a neighbour at distance ``A`` (exact worst case).  ``sigma = 0``: ``1[kappa A > tau]``.
Proof: ``docs/proofs/almost_sure.md``.  numpy/scipy only.
"""

from __future__ import annotations

import numpy as np

from biasbound.bounds._knowledge import AlmostSure, Moments, Sample
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "violation_bound"]

NAME = "almost-sure"
EXACT = True


def applies(knowledge: object) -> str | None:
    """None when the record carries an almost-sure bound, else the reason it does not apply."""
    if isinstance(knowledge, AlmostSure):
        return None
    if isinstance(knowledge, (Moments, Sample)) and knowledge.A is not None:
        return None
    return "needs an almost-sure bound A on ||Delta||"


def _linear(alpha: float, knowledge: AlmostSure | Moments | Sample) -> tuple[np.ndarray, np.ndarray, float]:
    """``(q, w, c)`` with bound ``= sum(w * tail(q)) + c``: one shift at the almost-sure bound."""
    A = float(knowledge.A)  # type: ignore[arg-type]
    q = kappa_sq(alpha, knowledge.shift_ratio) * A * A  # [proof:worst-shift]
    return np.array([q]), np.ones(1), 0.0


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: AlmostSure | Moments | Sample) -> float:
    q, _, _ = _linear(alpha, knowledge)
    return float(tail(q, tau=tau, sigma=sigma, dim=dim)[0])  # [proof:monotone-tail]


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: AlmostSure) -> float:
    """Exact worst-case ``Pr[||M(D) - M(D')|| > tau]`` given ``||Delta|| <= A`` a.s.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise scale ``>= 0`` (0 = deterministic), dimension.
    knowledge : AlmostSure (or Moments/Sample with ``A``)

    Returns
    -------
    float
        The supremum over all neighbour distributions with ``||Delta|| <= A`` (rounded up).
    """
    where = "almost_sure.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (AlmostSure, Moments, Sample), where)
    if applies(knowledge) is not None:
        raise TypeError(f"The 'knowledge' parameter of {where} must carry an almost-sure bound A. Got A=None instead.")
    return _bound(t, a, s, d, knowledge)

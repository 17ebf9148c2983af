"""Bound unit: a high-probability bound on the shift — ``||Delta|| <= A`` except with probability ``eps``.

Statement: if ``Pr[||Delta|| > A] <= eps`` over the neighbour (the draw ``T`` and the judge's answer), then with
``h`` the exact noncentral chi-square tail of the shrunk shift (nondecreasing, at most 1),

    Pr[||M(D) - M(D')|| > tau] <= h(kappa(alpha)^2 A^2) + eps,

because ``E h(q) <= E[h(q) 1{||Delta|| <= A}] + Pr[||Delta|| > A]`` and ``h(q) <= h(kappa^2 A^2)`` when
``||Delta|| <= A``.  Valid for every ``(alpha, sigma)`` at once; not exact.
Proof: ``docs/proofs/high_probability.md``.  numpy/scipy only.
"""

from __future__ import annotations

import numpy as np

from biasbound.bounds._knowledge import HighProbability
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "violation_bound"]

NAME = "high-probability"
EXACT = False


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, HighProbability) else "needs a high-probability bound on ||Delta||"


def _linear(alpha: float, knowledge: HighProbability) -> tuple[np.ndarray, np.ndarray, float]:
    """``(q, w, c)`` with bound ``= sum(w * tail(q)) + c``: one shift at ``A`` plus ``eps``."""
    q = kappa_sq(alpha, knowledge.shift_ratio) * knowledge.A * knowledge.A
    return np.array([q]), np.ones(1), float(knowledge.eps)  # [proof:hp-split]


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: HighProbability) -> float:
    q, w, c = _linear(alpha, knowledge)
    return weighted_sum(w, tail(q, tau=tau, sigma=sigma, dim=dim), c)


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: HighProbability) -> float:
    """``h(kappa^2 A^2) + eps``: an upper bound on ``Pr[||M(D) - M(D')|| > tau]`` on the record's event.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise ``>= 0``, dimension.
    knowledge : HighProbability

    Returns
    -------
    float
    """
    where = "high_probability.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (HighProbability,), where)
    return _bound(t, a, s, d, knowledge)

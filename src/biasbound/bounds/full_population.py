"""Bound unit: full population — every neighbour of the batch judged; the exact probability.

Statement: when ``T`` draws uniformly from a population of neighbours whose shifts are all observed,

    Pr[||M(D) - M(D')|| > tau] = (1/N) sum_i ncx2.sf(tau^2 / (2 sigma^2); d, q_i / (2 sigma^2)),

with ``q_i = alpha^2 x_i + (1 - alpha^2) y_i`` (batch centre with observed ``y_i = s_i^2``), ``kappa^2 x_i``
(batch centre with a shift ratio) or ``alpha^2 x_i`` (fixed centre), ``x_i = ||Delta_i||^2``.  Exact (an
equality) except where only the shift ratio is known.  No hold-out split and no ``beta``.
Proof: ``docs/proofs/full_population.md``.  numpy/scipy only.
"""

from __future__ import annotations


import numpy as np

from biasbound.bounds._knowledge import FullPopulation
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "violation_bound"]

NAME = "full-population"
EXACT = True


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, FullPopulation) else "needs every neighbour of the batch observed"


def shifted_sq(alpha: float, knowledge: FullPopulation) -> np.ndarray:
    """Squared norms ``q_i`` of the shrunk shifts, one per neighbour."""
    x = knowledge.sq_norms
    if knowledge.shift_sq is not None:
        a2 = alpha * alpha
        return a2 * x + (1.0 - a2) * knowledge.shift_sq  # [proof:exact-shift]
    return kappa_sq(alpha, knowledge.shift_ratio) * x


def _linear(alpha: float, knowledge: FullPopulation) -> tuple[np.ndarray, np.ndarray, float]:
    """``(q, w, c)`` with bound ``= sum(w * tail(q)) + c``: every neighbour with weight ``1/N`` (or its
    recorded probability)."""
    q = shifted_sq(alpha, knowledge)
    return q, knowledge.probs, 0.0  # [proof:mean-over-items]


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: FullPopulation) -> float:
    q, w, c = _linear(alpha, knowledge)
    return weighted_sum(w, tail(q, tau=tau, sigma=sigma, dim=dim), c)


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: FullPopulation) -> float:
    """Exact ``Pr[||M(D) - M(D')|| > tau]`` for ``T`` uniform over the observed population.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise ``>= 0`` (0 = deterministic), dimension.
    knowledge : FullPopulation

    Returns
    -------
    float
        The mean over neighbours of the exact per-neighbour probability (rounded up).
    """
    where = "full_population.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (FullPopulation,), where)
    return _bound(t, a, s, d, knowledge)

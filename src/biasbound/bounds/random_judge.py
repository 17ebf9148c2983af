"""Bound unit: a random judge — tail bounds at finite levels, valid for every (alpha, sigma) at once.

Setting: ``T`` draws one item uniformly (Hamming-1; in the leaderboard view a (model, item) pair) and the
judge answers its neighbour afresh, given the recorded original verdicts.  ``x = ||Delta||^2`` is then a
random variable over the item and the judge's answer.  The record :class:`RandomJudge` holds levels
``x_1 < ... < x_K`` (``x_K`` at least every item's almost-sure bound) and upper bounds ``q_k^+`` on
``q_k = Pr[x > x_{k-1}]`` (``x_0 = 0``), jointly valid at ``1 - beta``, nonincreasing in ``k``.

Statement: with ``h(x)`` the exact noncentral chi-square tail of the shrunk shift ``kappa(alpha)^2 x``
(nondecreasing in ``x``),

    Pr[||M(D) - M(D')|| > tau] = E h(x) <= h(0) + sum_k (h(x_k) - h(x_{k-1})) q_k^+,

i.e. the violation probability of the distribution with mass ``1 - q_1^+`` at 0, ``q_k^+ - q_{k+1}^+`` at
``x_k`` and ``q_K^+`` at ``x_K``.  The levels and the bounds do not depend on ``(alpha, sigma)``, so the
calibrator may choose them after looking.  Not exact (a confidence bound).  With ``k > 1`` (Hamming-k, model view)
the distribution is that of the k-item sum's Chernoff tails instead (``docs/proofs/concentration.md`` §1).
Proof: ``docs/proofs/random_judge.md``.  numpy/scipy only.
"""

from __future__ import annotations

import numpy as np

from biasbound.bounds._knowledge import RandomJudge
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail, weighted_sum
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "violation_bound", "worst_distribution"]

NAME = "random-judge"
EXACT = False


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, RandomJudge) else "needs a random judge's per-item answer shares"


def worst_distribution(knowledge: RandomJudge) -> tuple[np.ndarray, np.ndarray]:
    """``(values, weights)``: the distribution of ``x`` whose tail at every level is the upper bound.

    A function of the (frozen) record: computed once and kept on it, read-only (the searches read it at every point);
    the record's own :meth:`~biasbound.bounds.RandomJudge.worst_distribution` (``bounds/_layer_cake.py``)."""
    return knowledge.worst_distribution()


def _linear(alpha: float, knowledge: RandomJudge) -> tuple[np.ndarray, np.ndarray, float]:
    """``(q, w, c)`` with bound ``= sum(w * tail(q)) + c``."""
    x, w = worst_distribution(knowledge)
    return kappa_sq(alpha, knowledge.shift_ratio) * x, w, 0.0  # [proof:rj-shift]


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: RandomJudge) -> float:
    q, w, c = _linear(alpha, knowledge)
    return weighted_sum(w, tail(q, tau=tau, sigma=sigma, dim=dim), c)


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: RandomJudge) -> float:
    """Upper ``(1 - beta)`` confidence bound on ``Pr[||M(D) - M(D')|| > tau]`` for a random judge.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise ``>= 0`` (0 = deterministic mechanism), dimension.
    knowledge : RandomJudge

    Returns
    -------
    float
        The violation probability of the worst distribution inside the tail bounds (valid for all
        ``(alpha, sigma)`` at once on their event).
    """
    where = "random_judge.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (RandomJudge,), where)
    return _bound(t, a, s, d, knowledge)

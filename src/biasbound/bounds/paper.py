"""Bound unit: the paper's Theorem 3.1 / Corollary 3.2 (Markov + Laurent–Massart), verbatim.

Statement (Theorem 3.1 with the shrinkage of Prop. B.3): for any ``delta_B in (0, 1)`` and
``a = tau - sqrt(2) sigma r_LM(delta_B) > 0`` with ``r_LM = sqrt(d + 2 sqrt(d log(1/delta_B)) + 2 log(1/delta_B))``,

    Pr[||M(D) - M(D')|| > tau] <= delta_B + (alpha U + (1 - alpha) S)^2 / a^2,

``U = sqrt(U2)`` the RMS sensitivity (bound), ``S = sqrt(shift_U2)`` the centre term (0 for a fixed
centre).  Corollary 3.2 with the symmetric split is exactly ``violation_bound(..., delta_B=delta/2) <= delta``.
Without ``delta_B`` the bound is minimised over a fixed grid of ``delta_B`` (each value is valid).
Proof: ``docs/proofs/paper.md`` (and ``gaussian-mechanism.md``).  numpy/scipy only.
"""

from __future__ import annotations

import math

import numpy as np

from biasbound._bounds import _lm
from biasbound.bounds._knowledge import Moments
from biasbound.bounds._tail import check_point, check_record

__all__ = ["EXACT", "NAME", "applies", "violation_bound"]

NAME = "paper"
EXACT = False
SIGMA_ZERO = True  # the sigma -> 0 limit of Theorem 3.1 is Markov, a valid bound

_GRID = np.geomspace(1e-12, 0.5, 96)


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, Moments) else "needs an RMS sensitivity (bound)"


def _centre_rms(knowledge: Moments) -> float:
    """``S``: a bound on ``sqrt(E s^2)`` for a batch centre (``shift_U2``, else ``rho U2``), 0 for a fixed centre."""
    if knowledge.shift_U2 is not None:
        return math.sqrt(knowledge.shift_U2)
    if knowledge.shift_ratio is not None:
        return math.sqrt(knowledge.shift_ratio * knowledge.U2)  # s^2 <= rho ||Delta||^2 a.s.
    return 0.0


def _rms_term(alpha: float, knowledge: Moments) -> float:
    s = _centre_rms(knowledge)
    return alpha * math.sqrt(knowledge.U2) + (1.0 - alpha) * s  # [proof:minkowski]


def _at(tau: float, alpha: float, sigma: float, dim: int, knowledge: Moments, delta_B: float) -> float:
    a = tau - math.sqrt(2.0) * sigma * _lm(dim, delta_B)  # [proof:lm-radius]
    if a <= 0:
        return 1.0
    w = _rms_term(alpha, knowledge)
    return min(1.0, delta_B + (w * w) / (a * a))  # [proof:markov]


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Moments, delta_B: float | None = None) -> float:
    if sigma == 0.0:
        w = _rms_term(alpha, knowledge)
        return min(1.0, (w * w) / (tau * tau) * (1.0 + 1e-12))  # [proof:sigma0-limit]
    if delta_B is not None:
        return _at(tau, alpha, sigma, dim, knowledge, delta_B)
    # the same formula on a fixed grid of delta_B at once; the radius is moved up by 1e-12 relative
    db = _GRID
    x = -np.log(db)
    r = np.sqrt(dim + 2.0 * np.sqrt(dim * x) + 2.0 * x) * (1.0 + 1e-12)
    a = tau - math.sqrt(2.0) * sigma * r
    w = _rms_term(alpha, knowledge)
    with np.errstate(divide="ignore"):
        vals = np.where(a > 0, db + (w * w) / np.where(a > 0, a * a, 1.0), 1.0)
    return min(1.0, float(vals.min()) * (1.0 + 1e-12))  # float slack when used as a tight candidate


def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Moments,
                    *, delta_B: float | None = None) -> float:
    """Theorem 3.1's bound ``delta_B + (alpha U + (1 - alpha) S)^2 / (tau - sqrt(2) sigma r_LM)^2``.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance, shrinkage in [0, 1], noise ``>= 0``, dimension.
    knowledge : Moments
        ``U2`` (``U^2``) and, for a batch centre, ``shift_U2`` (``S_mu^2``).
    delta_B : float, optional
        The noise share; ``delta/2`` gives Corollary 3.2 (symmetric split).  Default: best on a grid.

    Returns
    -------
    float
    """
    where = "paper.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (Moments,), where)
    if delta_B is not None and not 0.0 < delta_B < 1.0:
        raise ValueError(f"The 'delta_B' parameter of {where} must be a float in (0, 1). Got {delta_B!r} instead.")
    return _bound(t, a, s, d, knowledge, delta_B)

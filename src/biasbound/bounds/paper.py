"""Bound unit: the paper's Theorem 3.1 / Corollary 3.2 (Markov + Laurent–Massart), verbatim.

Statement (Theorem 3.1 with the shrinkage of Prop. B.3): for any ``delta_B in (0, 1)`` and
``a = tau - sqrt(2) sigma r_LM(delta_B) > 0`` with ``r_LM = sqrt(d + 2 sqrt(d log(1/delta_B)) + 2 log(1/delta_B))``,

    Pr[||M(D) - M(D')|| > tau] <= delta_B + (alpha U + (1 - alpha) S)^2 / a^2,

``U = sqrt(U2)`` the RMS sensitivity (bound), ``S = sqrt(shift_U2)`` the centre term (0 for a fixed
centre).  Corollary 3.2 with the symmetric split is exactly ``violation_bound(..., delta_B=delta/2) <= delta``.
Without ``delta_B`` the bound is minimised over a fixed grid of ``delta_B`` (each value is valid).

The unit also owns Corollary 3.2's calibration (:func:`calibrate`, Algorithm 1 with the shrinkage of Prop. B.3):
the symmetric split, the Laurent–Massart radius (:func:`laurent_massart_radius`), ``sigma_max`` and
``alpha_max`` in closed form, every quantity rounded against us (radius and sensitivity term up, ``tau - a``,
``sigma_max`` and the chosen ``alpha`` down, ``sigma`` strictly below ``sigma_max``).
Proof: ``docs/proofs/paper.md`` (and ``gaussian-mechanism.md``).  numpy only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, NoReturn

import numpy as np

from biasbound._exceptions import InfeasibleCertificateError
from biasbound._rounding import below, down, floor_sig, pad, split, up
from biasbound._validation import check_in_range, check_int
from biasbound.bounds._knowledge import Moments
from biasbound.bounds._tail import check_point, check_record
from biasbound.parameters import AT_A_POINT, bounds, validate_params

__all__ = ["EXACT", "NAME", "PaperCalibration", "applies", "calibrate", "check", "laurent_massart_radius", "sigma_max",
           "violation_bound"]

NAME = "paper"
EXACT = False

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
        return min(1.0, pad((w * w) / (tau * tau)))  # [proof:sigma0-limit]
    if delta_B is not None:
        return _at(tau, alpha, sigma, dim, knowledge, delta_B)
    # the same formula on a fixed grid of delta_B at once; the radius is moved up by 1e-12 relative
    db = _GRID
    x = -np.log(db)
    r = pad(np.sqrt(dim + 2.0 * np.sqrt(dim * x) + 2.0 * x))
    a = tau - math.sqrt(2.0) * sigma * r
    w = _rms_term(alpha, knowledge)
    with np.errstate(divide="ignore"):
        vals = np.where(a > 0, db + (w * w) / np.where(a > 0, a * a, 1.0), 1.0)
    return min(1.0, pad(float(vals.min())))  # float slack when used as a tight candidate


@validate_params(exempt=AT_A_POINT)
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


@validate_params(exempt=AT_A_POINT)
def check(tau: float, delta: float, alpha: float, sigma: float, dim: int, knowledge: Moments) -> tuple[bool, float]:
    """``(holds, bound)`` for a claimed ``(alpha, sigma)`` under Corollary 3.2: Theorem 3.1 at the symmetric split
    ``delta_B = delta/2``, and ``0 < sigma <= sigma_max`` at that split (as :func:`calibrate` makes it). The inputs are
    already checked (:func:`biasbound.calibration.check`); ``sigma = 0`` never holds (Theorem 3.1 needs noise)."""
    if sigma == 0:
        return False, 1.0
    v = _bound(tau, alpha, sigma, dim, knowledge, delta_B=delta / 2)
    dB, dD = split(delta, delta / 2)  # Corollary 3.2's symmetric split, as calibrate makes it
    smax = sigma_max(tau=tau, delta_B=dB, delta_Delta=dD, dim=dim, U=math.sqrt(knowledge.U2),
                     S=math.sqrt(knowledge.shift_U2 or 0.0), alpha=alpha)
    return bool(0 < sigma <= smax), v


# --------------------------------------------------------------------------- Corollary 3.2's calibration
_SQRT2 = math.sqrt(2.0)


@validate_params
def laurent_massart_radius(dim: int, delta_B: float) -> float:
    """Laurent–Massart radius ``r`` with ``Pr[chi2_d > r^2] <= delta_B``, rounded up.

    ``sqrt(d + 2 sqrt(d log(1/delta_B)) + 2 log(1/delta_B))``: Laurent & Massart (2000), Lemma 1
    (``Pr[chi2_d - d >= 2 sqrt(d x) + 2x] <= exp(-x)`` with ``x = log(1/delta_B)``); with
    ``B ~ N(0, 2 sigma^2 I_d)`` it gives ``Pr[||B|| > sqrt(2) sigma r] <= delta_B`` (proof of Theorem 3.1).
    Valid for every ``d >= 1``; rounded up so it never undershoots.
    """
    d = check_int(dim, "dim", "laurent_massart_radius", **bounds("dim"))
    dB = check_in_range(delta_B, "delta_B", "laurent_massart_radius", low=0.0, high=1.0, low_open=True, high_open=True)
    return _lm(d, dB)


def _lm(d: int, dB: float) -> float:
    x = up(-math.log(dB))
    return up(math.sqrt(up(d + 2.0 * math.sqrt(d * x) + 2.0 * x)))


def _term(alpha: float, U: float, S: float, delta_Delta: float) -> float:
    """Markov's sensitivity term ``a = (alpha U + (1 - alpha) S) / sqrt(delta_Delta)``, rounded up."""
    base = alpha * U + (1.0 - alpha) * S
    return 0.0 if base == 0.0 else up(base / math.sqrt(delta_Delta))


def _sigma_from(tau: float, a: float, r: float) -> float:
    """``(tau - a) / (sqrt(2) r)`` rounded down; ``<= 0`` means infeasible."""
    if a >= tau:
        return 0.0
    gap = down(tau - a)
    if gap <= 0:
        return 0.0
    return max(down(gap / up(_SQRT2 * r)), 0.0)


def _alpha_max(tau: float, U: float, S: float, delta_Delta: float) -> float:
    """``sup{alpha in (0, 1] : a(alpha) < tau}`` (0.0 when empty), rounded down (Prop. B.3)."""
    if _term(1.0, U, S, delta_Delta) < tau:
        return 1.0
    if U <= S:  # a(alpha) is non-increasing in alpha: alpha = 1 is the best and it failed
        return 0.0
    num = down(down(tau * math.sqrt(delta_Delta)) - S)
    if num <= 0:
        return 0.0
    return min(1.0, max(down(num / up(U - S)), 0.0))


def _alpha_for_target(t: float, U: float, S: float, delta_Delta: float) -> float | None:
    """Largest alpha in (0, 1] with ``a(alpha) <= t``: the closed form, stepped down until it holds."""
    if _term(1.0, U, S, delta_Delta) <= t:
        return 1.0
    if U <= S:
        return None
    num = down(down(t * math.sqrt(delta_Delta)) - S)
    if num <= 0:
        return None
    alpha = min(1.0, down(num / up(U - S)))
    for _ in range(64):
        if alpha <= 0:
            return None
        if _term(alpha, U, S, delta_Delta) <= t:
            return alpha
        alpha = down(alpha * (1.0 - 1e-12))
    return None  # pragma: no cover


@validate_params
def sigma_max(*, tau: float, delta_B: float, delta_Delta: float, dim: int, U: float, S: float, alpha: float) -> float:
    """Corollary 3.2's ``sigma_max = (tau - a) / (sqrt(2) r_LM(delta_B))`` at ``alpha``, re-derived with the same
    rounding (0.0 when infeasible): the check of a recorded paper calibration."""
    if not delta_Delta > 0:
        return 0.0
    return _sigma_from(tau, _term(alpha, U, S, delta_Delta), _lm(dim, delta_B))


@dataclass(frozen=True)
class PaperCalibration:
    """Corollary 3.2 (Algorithm 1 with the shrinkage of Prop. B.3) at one point.

    Attributes
    ----------
    tau, delta : float
    delta_B, delta_Delta : float
        The symmetric split (``delta_B + delta_Delta <= delta`` in floats).
    dim : int
    alpha, alpha_max : float
        The shrinkage used and ``sup{alpha <= 1 : a(alpha) < tau}``.
    sigma, sigma_max : float
        The noise used (``0 < sigma <= sigma_max``) and its maximum at ``alpha``.
    sensitivity, center_sensitivity : float
        ``U`` (the RMS sensitivity or its upper confidence bound) and ``S`` (0 for a centre fixed within the batch).
    sensitivity_term : float
        ``a``: the radius the shrunk neighbour difference stays within except with probability ``delta_Delta``.
    noise_radius_unit : float
        ``r_LM(delta_B)``.
    radius : str
        ``"laurent-massart"``.
    """

    tau: float
    delta: float
    delta_B: float
    delta_Delta: float
    dim: int
    alpha: float
    alpha_max: float
    sigma: float
    sigma_max: float
    sensitivity: float
    center_sensitivity: float
    sensitivity_term: float
    noise_radius_unit: float
    radius: str = "laurent-massart"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _infeasible(tau: float, delta: float, alpha: float, a: float, amax: float) -> NoReturn:
    if amax > 0:
        fix = f"Choose alpha < {floor_sig(amax)} (alpha_max), raise tau or delta, or reduce the sensitivity."
    else:
        fix = "No alpha in (0, 1] works: raise tau or delta, reduce the sensitivity, or use a centre fixed within the batch."
    raise InfeasibleCertificateError(
        f"tau={tau:g} cannot be certified at alpha={alpha:g} (delta={delta:g}): the sensitivity term alone is {a:.3g}. {fix}",
        alpha_max=amax,
    )


@validate_params
def calibrate(*, tau: float, delta: float, dim: int, U: float, S: float = 0.0, alpha: float | None = None,
              tau_split: float = 0.5, sigma: float | None = None) -> PaperCalibration:
    """Corollary 3.2: shrinkage and noise for a ``(tau, delta)`` certificate from an RMS sensitivity bound ``U``.

    Parameters
    ----------
    tau, delta, dim : float, float, int
        Tolerance ``> 0``, failure probability in (0, 1), number of scores (checked by the caller).
    U, S : float
        The RMS sensitivity (bound) and the centre term (0 for a centre fixed within the batch).
    alpha : float, optional
        Shrinkage in (0, 1]; when omitted the sensitivity term gets ``tau_split * tau`` (Algorithm 1's split
        of tau), capped at ``alpha = 1``.
    sigma : float, optional
        Noise in (0, sigma_max]; default the next float below ``sigma_max``.

    Raises
    ------
    InfeasibleCertificateError
        When no noise works at this alpha (names ``alpha_max``).
    ValueError
        A ``sigma`` above ``sigma_max``.
    """
    dB, dD = split(delta, delta / 2)  # [proof:symmetric-split]
    r = _lm(dim, dB)
    amax = _alpha_max(tau, U, S, dD)
    if alpha is None:
        a1 = _term(1.0, U, S, dD)
        target = tau_split * tau
        if a1 <= target or (U <= S and a1 < tau):
            al, a_used = 1.0, a1  # no shrinkage needed (or shrinkage cannot help)
        elif U <= S:
            _infeasible(tau, delta, 1.0, a1, amax)
        else:
            a0 = _term(0.0, U, S, dD)  # irreducible batch-centre term
            if a0 >= tau:
                _infeasible(tau, delta, 1.0, a0, amax)
            if a0 >= target:  # the centre term eats the target: the sensitivity term gets a0 + tau_split of the rest
                target = a0 + tau_split * (tau - a0)
            found = _alpha_for_target(target, U, S, dD)
            if found is None:
                _infeasible(tau, delta, 1.0, math.inf, amax)
            al = found
            # a(al) <= target: calibrating sigma against the target (>= a) is valid
            a_used = a1 if al == 1.0 else target
    else:
        al = alpha
        a_used = _term(al, U, S, dD)
    smax = _sigma_from(tau, a_used, r)
    if smax <= 0:
        _infeasible(tau, delta, al, a_used, amax)
    if sigma is None:
        sigma = below(smax)
    elif sigma > smax:
        raise ValueError(f"The 'sigma' parameter of paper.calibrate must be a float in (0, {smax:.6g}] (sigma_max). "
                         f"Got {sigma!r} instead.")
    return PaperCalibration(tau=tau, delta=delta, delta_B=dB, delta_Delta=dD, dim=dim, alpha=al, alpha_max=amax,
                            sigma=float(sigma), sigma_max=smax, sensitivity=U, center_sensitivity=S,
                            sensitivity_term=a_used, noise_radius_unit=r)

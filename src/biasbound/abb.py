"""Average bias-boundedness (A-BB): calibration, Lipschitz shrinkage and the Gaussian mechanism.

The mechanism is ``M(D) = g(f(D)) + Z`` with ``g(x) = alpha * x + (1 - alpha) * mu`` and
``Z ~ N(0, sigma^2 I_d)``.  It is ``(tau, delta)``-A-BB for a fixed batch ``D`` and a
neighbour generator ``T`` when ``Pr[||M(D) - M(D')||_2 > tau] <= delta`` over ``D' ~ T(D)``
and the noise (Definition 3.5 of the paper).  Every calibration here rests on the same
event split (proof of Theorem 3.1): with ``B = Z - Z' ~ N(0, 2 sigma^2 I_d)``,

    Pr[||g-difference + B|| > tau] <= Pr[||g-difference|| > a] + Pr[||B|| > tau - a],

with a bound ``a`` on the shrunk neighbour distance that fails with probability at most
``delta_Delta`` (Markov, an almost-sure bound, or an order statistic) and a radius that
``||B||`` exceeds with probability at most ``delta_B`` (Laurent–Massart or the exact
chi-square quantile).  See ``docs/proofs/`` for the preconditions, proofs and the
rounding contract: every bound is rounded against us (radii and ``a`` up, ``tau - a`` and
``sigma_max`` down, ``sigma`` strictly below ``sigma_max``, chosen ``alpha`` down).

The radii, the rounding helpers and the order-statistic index live in
:mod:`biasbound._bounds` and are re-exported here.

numpy/scipy only: no I/O, no pandas.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from biasbound._bounds import (  # radii, rounding and the order-statistic index (re-exported here)
    _chi2r,
    _down,
    _lm,
    _os_index,
    _radius,
    _split,
    _up,
    chi2_radius,
    laurent_massart_radius,
    order_statistic_index,
)
from biasbound._exceptions import InfeasibleCertificateError, InputError
from biasbound._validation import check_finite_array, check_in_range, check_int, check_one_of, resolve_rng
from biasbound.parameters import validate

__all__ = [
    "Calibration",
    "MechanismResult",
    "alpha_max",
    "apply_mechanism",
    "calibrate",
    "chi2_radius",
    "guarantee_holds",
    "laurent_massart_radius",
    "order_statistic_index",
    "recompute_sigma_max",
    "shrink",
    "sigma_max_paper",
]

METHODS = ("tight", "paper")
BOUNDS = ("markov", "deterministic", "order-statistic")
RADII = ("laurent-massart", "chi2-exact")

_SQRT2 = math.sqrt(2.0)

# delta_Delta / delta fractions searched by the tight calibrator when alpha is given (Markov,
# deterministic-free): the symmetric point first, then a deterministic log-spaced grid on both sides.
_MARKOV_FRACTIONS: tuple[float, ...] = (0.5,) + tuple(
    float(f)
    for f in np.unique(np.concatenate([np.geomspace(1e-3, 0.5, 24)[:-1], 1.0 - np.geomspace(1e-3, 0.5, 24)[:-1]]))
)
# The order statistic pays for every split it looks at (Bonferroni over beta), so its grid is small.
_ORDER_FRACTIONS: tuple[float, ...] = (0.5, 0.1, 0.25, 0.75, 0.9)


# --------------------------------------------------------------------------- the bound algebra
def _term(alpha: float, s: float, c: float, bound: str, delta_Delta: float) -> float:
    """Sensitivity term ``a`` (rounded up): ``(alpha s + (1 - alpha) c) / sqrt(dDelta)`` for Markov, else without the root."""
    base = alpha * s + (1.0 - alpha) * c
    if bound == "markov":
        if base == 0.0:
            return 0.0
        return _up(base / math.sqrt(delta_Delta))
    return _up(base)


def _sigma_from(tau: float, a: float, r: float) -> float:
    """``(tau - a) / (sqrt(2) r)`` rounded down; ``<= 0`` means infeasible."""
    if a >= tau:
        return 0.0
    gap = _down(tau - a)
    if gap <= 0:
        return 0.0
    return max(_down(gap / _up(_SQRT2 * r)), 0.0)


def _scale(bound: str, delta_Delta: float) -> float:
    """``q`` with ``a = (alpha s + (1 - alpha) c) / q``: ``sqrt(delta_Delta)`` for Markov, 1 otherwise."""
    return math.sqrt(delta_Delta) if bound == "markov" else 1.0


def _alpha_max(tau: float, s: float, c: float, bound: str, delta_Delta: float) -> float:
    """``sup{alpha in (0, 1] : a(alpha) < tau}`` (0.0 when empty), rounded down."""
    if _term(1.0, s, c, bound, delta_Delta) < tau:
        return 1.0
    if s <= c:  # a(alpha) is non-increasing in alpha: alpha = 1 is the best and it failed
        return 0.0
    lim = _down(tau * _scale(bound, delta_Delta))  # tau * q, rounded down
    num = _down(lim - c)
    if num <= 0:
        return 0.0
    return min(1.0, max(_down(num / _up(s - c)), 0.0))


def _alpha_for_target(t: float, s: float, c: float, bound: str, delta_Delta: float) -> float | None:
    """Largest alpha in (0, 1] with ``a(alpha) <= t`` found by the closed form, stepped down until it holds."""
    if _term(1.0, s, c, bound, delta_Delta) <= t:
        return 1.0
    if s <= c:
        return None
    num = _down(_down(t * _scale(bound, delta_Delta)) - c)
    if num <= 0:
        return None
    alpha = min(1.0, _down(num / _up(s - c)))
    for _ in range(64):
        if alpha <= 0:
            return None
        if _term(alpha, s, c, bound, delta_Delta) <= t:
            return alpha
        alpha = _down(alpha * (1.0 - 1e-12))
    return None  # pragma: no cover


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Calibration:
    """A calibrated A-BB Gaussian mechanism: the inputs, the bound used and the noise scale.

    Attributes
    ----------
    method : str
        ``"paper"`` (Theorem 3.1 / Corollary 3.2 / Algorithm 1) or ``"tight"``.
    tau, delta : float
        The certified tolerance and failure probability.
    delta_B, delta_Delta : float
        The split used (``delta_B + delta_Delta <= delta``; ``delta_Delta = 0`` for the
        deterministic bound).
    dim : int
        Number of scores ``d``.
    alpha : float
        Lipschitz constant ``L`` of the shrinkage (1.0 = no shrinkage).
    alpha_max : float
        ``sup{alpha <= 1 : a(alpha) < tau}`` under the chosen bound and split (rounded down).
    sigma, sigma_max : float
        Noise standard deviation used (``0 < sigma <= sigma_max``) and its maximum.
    bound_used : str
        ``"markov"``, ``"deterministic"`` or ``"order-statistic"``.
    sensitivity : float
        What the bound used: ``Delta*`` (or its UCB) for Markov, the almost-sure maximum
        for deterministic, the order statistic ``X_(j)`` for order-statistic.
    sensitivity_term : float
        The radius ``a`` the shrunk neighbour difference stays within (except w.p. ``delta_Delta``).
    noise_radius_unit : float
        ``r`` with ``Pr[||B|| > sqrt(2) sigma r] <= delta_B``.
    radius : str
        ``"laurent-massart"`` or ``"chi2-exact"``.
    center_sensitivity : float
        The centre term the bound used: 0 for a centre fixed within the batch, ``S_mu``
        (RMS) for Markov with a batch-mean centre, ``center_max`` (a.s.) for deterministic.
    beta : float or None
        The guarantee holds with probability ``>= 1 - beta`` over the neighbour sample
        (None: no confidence statement needed — deterministic bound, or the paper's point estimate).
    candidates : tuple of dict
        Every bound tried: name, available, reason, alpha, alpha_max, sigma_max, split, selected.
    """

    method: str
    tau: float
    delta: float
    delta_B: float
    delta_Delta: float
    dim: int
    alpha: float
    alpha_max: float
    sigma: float
    sigma_max: float
    bound_used: str
    sensitivity: float
    sensitivity_term: float
    noise_radius_unit: float
    radius: str
    center_sensitivity: float
    beta: float | None
    candidates: tuple[dict[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (candidates as a list of dicts)."""
        out = dataclasses.asdict(self)
        out["candidates"] = [dict(c) for c in self.candidates]
        return out

    @property
    def selected(self) -> dict[str, Any]:
        """The candidate record of the bound used."""
        for c in self.candidates:
            if c.get("selected"):
                return c
        return {}


@dataclass(frozen=True)
class MechanismResult:
    """Output of :func:`apply_mechanism`.

    Attributes
    ----------
    certified : numpy.ndarray
        ``M(D) = g(f(D)) + Z``.
    shrunk : numpy.ndarray
        ``g(f(D)) = alpha f(D) + (1 - alpha) mu``.
    noise : numpy.ndarray
        ``Z ~ N(0, sigma^2 I_d)``.
    sigma, alpha : float
        Noise scale and shrinkage used.
    center : float or numpy.ndarray
        The shrinkage centre ``mu``.
    seed : int
        Seed that reproduces ``noise`` (``apply_mechanism(..., rng=seed)``).
    """

    certified: np.ndarray
    shrunk: np.ndarray
    noise: np.ndarray
    sigma: float
    alpha: float
    center: float | np.ndarray
    seed: int


# --------------------------------------------------------------------------- public math
def sigma_max_paper(
    *, tau: float, delta_B: float, delta_Delta: float, dim: int, sensitivity: float, lipschitz: float = 1.0
) -> float:
    """Largest admissible noise scale of Corollary 3.2 / Proposition B.3 (Laurent–Massart, Markov).

    Parameters
    ----------
    tau : float
        Tolerance ``> 0``.
    delta_B, delta_Delta : float
        The failure split, each in (0, 1) with ``delta_B + delta_Delta < 1``.
    dim : int
        Number of scores ``d >= 1``.
    sensitivity : float
        RMS sensitivity ``Delta* >= 0`` (or an upper confidence bound on it).
    lipschitz : float
        Lipschitz constant ``L`` of the shrinkage in (0, 1].

    Returns
    -------
    float
        ``(tau - L Delta* / sqrt(delta_Delta)) / sqrt(2 (d + 2 sqrt(d log(1/delta_B)) + 2 log(1/delta_B)))``,
        rounded down.

    Raises
    ------
    InfeasibleCertificateError
        If ``tau <= L Delta* / sqrt(delta_Delta)``; the message names ``alpha_max``.

    Notes
    -----
    Guarantee: any ``0 < sigma <= sigma_max`` makes ``M(D) = g(f(D)) + N(0, sigma^2 I_d)``
    ``(tau, delta_B + delta_Delta)``-A-BB for the fixed batch and generator, assuming
    ``Delta*`` is (an upper bound on) the generator's true RMS sensitivity and the centre
    of ``g`` is fixed within the batch.

    References
    ----------
    Paper: Theorem 3.1, Corollary 3.2, Proposition B.2 / B.3.
    """
    where = "sigma_max_paper"
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dB = check_in_range(delta_B, "delta_B", where, low=0.0, high=1.0, low_open=True, high_open=True)
    dD = check_in_range(delta_Delta, "delta_Delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    if dB + dD >= 1.0:
        raise InputError(f"The 'delta_B' and 'delta_Delta' parameters of {where} must sum to less than 1. Got {dB + dD!r} instead.")
    d = check_int(dim, "dim", where, low=1)
    s = check_in_range(sensitivity, "sensitivity", where, low=0.0)
    L = check_in_range(lipschitz, "lipschitz", where, low=0.0, high=1.0, low_open=True)
    a = _term(L, s, 0.0, "markov", dD)
    sm = _sigma_from(t, a, _lm(d, dB))
    if sm <= 0:
        _raise_infeasible(t, dD + dB, L, a, _alpha_max(t, s, 0.0, "markov", dD))
    return sm


def alpha_max(*, tau: float, delta_Delta: float, sensitivity: float, center_sensitivity: float = 0.0) -> float:
    """Largest shrinkage for which the Markov term stays below ``tau`` (as ``sigma -> 0``).

    Parameters
    ----------
    tau : float
        Tolerance ``> 0``.
    delta_Delta : float
        Markov failure budget in (0, 1).
    sensitivity : float
        ``Delta* >= 0``.
    center_sensitivity : float
        ``S_mu >= 0`` for a batch-mean centre (0 for a fixed centre).

    Returns
    -------
    float
        ``sup{alpha in (0, 1] : (alpha Delta* + (1 - alpha) S_mu) / sqrt(delta_Delta) < tau}``,
        rounded down; 0.0 when no alpha works, 1.0 when no shrinkage is needed.

    Notes
    -----
    For a fixed centre this is ``min(1, tau sqrt(delta_Delta) / Delta*)`` (Proposition B.3).
    It is a supremum: ``alpha_max`` itself is on the boundary, every smaller alpha is feasible.

    References
    ----------
    Paper: Proposition B.3 and "Choosing the shrinkage center" (Appendix B).
    """
    where = "alpha_max"
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dD = check_in_range(delta_Delta, "delta_Delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    s = check_in_range(sensitivity, "sensitivity", where, low=0.0)
    c = check_in_range(center_sensitivity, "center_sensitivity", where, low=0.0)
    return _alpha_max(t, s, c, "markov", dD)


def shrink(x: ArrayLike, *, alpha: float, center: float | ArrayLike) -> np.ndarray:
    """Affine shrinkage ``g(x) = alpha x + (1 - alpha) mu``, an ``alpha``-Lipschitz map.

    Parameters
    ----------
    x : array_like
        Scores, 1-D, finite.
    alpha : float
        Lipschitz constant in (0, 1].
    center : float or array_like
        The centre ``mu`` (scalar or one value per score).

    Returns
    -------
    numpy.ndarray
        The shrunk scores.

    Notes
    -----
    ``||g(x) - g(y)|| = alpha ||x - y||``, so the RMS sensitivity contracts by ``alpha``
    (Lemma B.1) when ``mu`` is fixed within the batch.

    References
    ----------
    Paper: Appendix B, Lemma B.1 / B.4, Proposition B.2 / B.3.
    """
    where = "shrink"
    arr = check_finite_array(x, "x", where, ndim=1)
    a = check_in_range(alpha, "alpha", where, low=0.0, high=1.0, low_open=True)
    mu = _check_center(center, arr.size, where)
    return a * arr + (1.0 - a) * mu


def _check_center(center: float | ArrayLike, n: int, where: str) -> float | np.ndarray:
    if np.ndim(center) == 0:
        return check_in_range(center, "center", where)
    mu = check_finite_array(center, "center", where, ndim=1)
    if mu.size != n:
        raise InputError(f"The 'center' parameter of {where} must be a scalar or hold {n} values, one per score. Got {mu.size} instead.")
    return mu


def apply_mechanism(
    scores: ArrayLike,
    calibration: Calibration,
    *,
    center: float | ArrayLike,
    rng: np.random.Generator | int | None = None,
) -> MechanismResult:
    """Apply the calibrated A-BB Gaussian mechanism ``M(D) = g(f(D)) + Z``.

    Parameters
    ----------
    scores : array_like
        ``f(D)``: one finite score per item, length ``calibration.dim`` (drop missing
        judgments before this step; NaN is an error, never imputed).
    calibration : Calibration
        Output of :func:`calibrate`.
    center : float or array_like
        Shrinkage centre ``mu``; it must be the kind of centre the calibration assumed
        (fixed within the batch unless ``center_sensitivity`` was given).
    rng : numpy.random.Generator, int or None
        Source of the noise; the seed used is recorded in the result.

    Returns
    -------
    MechanismResult

    Notes
    -----
    Guarantee: ``(calibration.tau, calibration.delta)``-A-BB for this batch and the
    neighbour generator the sensitivity was measured on, under the assumptions recorded in
    the calibration (see :func:`calibrate`).  Utility: ``E||M(D) - g(f(D))||^2 = d sigma^2``
    (Remark 3.4).

    References
    ----------
    Paper: Algorithm 1, Theorem 3.1, Proposition B.3.
    """
    where = "apply_mechanism"
    from biasbound.calibration import BoundCalibration  # imported here: calibration.py imports this module

    if not isinstance(calibration, (Calibration, BoundCalibration)):
        raise TypeError(f"The 'calibration' parameter of {where} must be a Calibration. Got {type(calibration).__name__} instead.")
    x = check_finite_array(scores, "scores", where, ndim=1)
    if x.size != calibration.dim:
        raise InputError(
            f"The 'scores' parameter of {where} must hold calibration.dim={calibration.dim} values (mismatched dimensions). "
            f"Got {x.size} instead."
        )
    mu = _check_center(center, x.size, where)
    deterministic_ok = isinstance(calibration, BoundCalibration) and calibration.method == "tight"
    if not (calibration.sigma > 0 or (deterministic_ok and calibration.sigma == 0)):
        raise InputError(f"The calibration's sigma must be > 0 (Theorem 3.1 needs sigma > 0). Got {calibration.sigma!r} instead.")
    gen, seed = resolve_rng(rng)
    shrunk = calibration.alpha * x + (1.0 - calibration.alpha) * mu
    noise = gen.normal(0.0, calibration.sigma, size=x.size)  # sigma = 0 (exact bounds only): zeros
    return MechanismResult(
        certified=shrunk + noise,
        shrunk=shrunk,
        noise=noise,
        sigma=calibration.sigma,
        alpha=calibration.alpha,
        center=mu if isinstance(mu, np.ndarray) else float(mu),
        seed=seed,
    )


# --------------------------------------------------------------------------- calibration
def _floor_sig(x: float, digits: int = 3) -> str:
    """Format ``x`` with ``digits`` significant digits, rounded toward 0 (so a printed alpha_max is safe)."""
    if x <= 0 or not math.isfinite(x):
        return f"{x:g}"
    e = math.floor(math.log10(x)) - digits + 1
    v = math.floor(x / 10.0**e) * 10.0**e
    while v > x:  # float representation of the floored value
        v = math.nextafter(v, 0.0)
    return f"{v:.{digits}g}"


def _raise_infeasible(tau: float, delta: float, alpha: float, a: float, amax: float) -> None:
    if amax > 0:
        fix = f"Choose alpha < {_floor_sig(amax)} (alpha_max), raise tau or delta, or reduce the sensitivity."
    else:
        fix = "No alpha in (0, 1] works: raise tau or delta, reduce the sensitivity, or use a centre fixed within the batch."
    raise InfeasibleCertificateError(
        f"tau={tau:g} cannot be certified at alpha={alpha:g} (delta={delta:g}): the sensitivity term alone is {a:.3g}. {fix}",
        alpha_max=amax,
    )


@dataclass
class _Source:
    """One bound: ``a(alpha) = (alpha s + (1 - alpha) c) [/ sqrt(delta_Delta)]``."""

    name: str
    available: bool
    reason: str = ""
    s: float = 0.0
    c: float = 0.0
    beta: float | None = None
    distances: np.ndarray | None = None  # sorted, for the order statistic


def _evaluate(
    src: _Source, *, tau: float, delta: float, dim: int, alpha: float | None, tau_split: float,
    fractions: tuple[float, ...], radius_kind: str, fixed_dB: float | None, free_dB: float | None,
) -> dict[str, Any]:
    """Best split for one source; returns its candidate record."""
    rec: dict[str, Any] = {"name": src.name, "available": src.available, "reason": src.reason, "alpha": None,
                           "alpha_max": None, "sigma_max": None, "selected": False}
    if not src.available:
        return rec
    if src.name == "deterministic":  # no Delta failure: the whole budget (or the given delta_B) goes to the noise
        splits = [(fixed_dB if fixed_dB is not None else delta, 0.0)]
    elif fixed_dB is not None:
        splits = [_split(delta, fixed_dB)]
    elif alpha is None:
        splits = [_split(delta, free_dB) if free_dB is not None else _split(delta, delta / 2)]
    else:
        splits = [_split(delta, delta - f * delta) for f in fractions]
    n_splits = len(splits)
    best: dict[str, Any] | None = None
    best_amax = 0.0
    a_min = math.inf
    no_index = 0
    for dB, dD in splits:
        s = src.s
        extra: dict[str, Any] = {}
        if src.name == "order-statistic":
            if src.distances is None or src.beta is None:  # pragma: no cover - set by calibrate
                raise RuntimeError("order-statistic source without distances or beta")
            b_each = src.beta / n_splits
            j = _os_index(src.distances.size, dD, b_each)
            if j is None:
                no_index += 1
                continue
            s = float(src.distances[j - 1])
            extra = {"order_index": j, "m": int(src.distances.size), "beta_per_split": b_each, "n_splits": n_splits}
        r = _radius(radius_kind, dim, dB)
        amax = _alpha_max(tau, s, src.c, src.name, dD)
        best_amax = max(best_amax, amax)
        if alpha is None:
            a1 = _term(1.0, s, src.c, src.name, dD)
            target = tau_split * tau
            if a1 <= target or (s <= src.c and a1 < tau):
                al, a_used = 1.0, a1  # no shrinkage needed (or shrinkage cannot help)
            elif s <= src.c:
                a_min = min(a_min, a1)
                continue
            else:
                a0 = _term(0.0, s, src.c, src.name, dD)  # irreducible batch-centre term
                if a0 >= tau:
                    a_min = min(a_min, a0)
                    continue
                if a0 >= target:  # the centre term eats the target: give the sensitivity term a0 + tau_split of the rest
                    target = a0 + tau_split * (tau - a0)
                found = _alpha_for_target(target, s, src.c, src.name, dD)
                if found is None:
                    continue
                al = found
                # a(al) <= target; calibrating sigma against target (>= a) is valid and compares splits exactly
                a_used = a1 if al == 1.0 else target
        else:
            al = alpha
            a_used = _term(al, s, src.c, src.name, dD)
            a_min = min(a_min, a_used)
        sm = _sigma_from(tau, a_used, r)
        if sm <= 0:
            continue
        cand = {"alpha": al, "alpha_max": amax, "sigma_max": sm, "sensitivity": s, "center_term": src.c,
                "sensitivity_term": a_used, "delta_B": dB, "delta_Delta": dD, "noise_radius_unit": r,
                "radius": radius_kind, **extra}
        if best is None:
            best = cand
        elif alpha is None and (cand["alpha"], cand["sigma_max"]) > (best["alpha"], best["sigma_max"]):
            best = cand
        elif alpha is not None and cand["sigma_max"] > best["sigma_max"]:
            best = cand
    rec["alpha_max"] = best_amax
    if best is None:
        rec["available"] = False
        rec["sensitivity_term"] = a_min if math.isfinite(a_min) else None
        if no_index == n_splits:
            rec["reason"] = "too few distances: no order statistic bounds the quantile at this delta_Delta and beta"
        else:
            at = f" at alpha={alpha:g}" if alpha is not None else ""
            rec["reason"] = f"infeasible{at} (alpha_max={best_amax:.3g})"
        return rec
    rec.update(best)
    if src.beta is not None:
        rec["beta"] = src.beta
    return rec


def _free_delta_B(dim: int, delta: float) -> float:
    """Smallest delta_B (largest delta_Delta) whose exact chi2 radius is <= the paper's LM radius at delta/2."""
    target = _lm(dim, delta / 2)
    hi = delta / 2  # condition holds here: chi2 radius <= LM radius at the same delta_B
    lo = delta * 1e-15
    if _chi2r(dim, lo) <= target:
        return lo
    for _ in range(80):  # bisection on log(delta_B); keep the end where the condition holds
        mid = math.sqrt(lo * hi)
        if mid <= lo or mid >= hi:
            break
        if _chi2r(dim, mid) <= target:
            hi = mid
        else:
            lo = mid
    return hi


def calibrate(
    *,
    tau: float,
    delta: float,
    dim: int,
    sensitivity: float | None = None,
    sensitivity_ucb: float | None = None,
    beta: float | None = None,
    distances: ArrayLike | None = None,
    max_distance: float | None = None,
    alpha: float | None = None,
    tau_split: float = 0.5,
    center_sensitivity: float = 0.0,
    center_max: float = 0.0,
    delta_B: float | None = None,
    sigma: float | None = None,
    method: str = "tight",
) -> Calibration:
    """Calibrate shrinkage ``alpha`` and noise ``sigma`` for a ``(tau, delta)`` A-BB certificate.

    Parameters
    ----------
    tau : float
        Tolerance ``> 0`` on ``||M(D) - M(D')||_2``.
    delta : float
        Failure probability in (0, 1).
    dim : int
        Number of scores ``d >= 1``.
    sensitivity : float, optional
        RMS sensitivity ``Delta*`` (Definition 3.4), a point estimate (the paper's Algorithm 1).
    sensitivity_ucb : float, optional
        An upper ``(1 - beta)`` confidence bound on ``Delta*``; used instead of
        ``sensitivity`` when ``beta`` is set (then the certificate holds with confidence
        ``1 - beta`` over the neighbour sample).
    beta : float, optional
        Confidence parameter in (0, 1) of ``sensitivity_ucb`` and of the order statistic.
    distances : array_like, optional
        Observed i.i.d. neighbour distances ``||f(D) - f(D'_i)||_2`` (tight only, with ``beta``).
    max_distance : float, optional
        An almost-sure bound on ``||f(D) - f(D')||_2`` (e.g. ``R sqrt(k)`` for Hamming-k
        neighbours on score range ``R``); tight only.
    alpha : float, optional
        Shrinkage in (0, 1]; chosen when omitted (the sensitivity term gets
        ``tau_split * tau``, the noise the rest; capped at 1).
    tau_split : float
        Share of ``tau`` given to the sensitivity term when ``alpha`` is chosen, in (0, 1).
    center_sensitivity : float
        ``S_mu = sqrt(d) RMS|mu(D) - mu(D')|`` for a batch-mean centre (0 = centre fixed within the batch).
    center_max : float
        Almost-sure bound on ``sqrt(d) |mu(D) - mu(D')|`` for a batch-mean centre (deterministic bound).
    delta_B : float, optional
        Noise share of ``delta`` in (0, delta); default ``delta / 2`` (paper) or searched (tight).
    sigma : float, optional
        Noise scale in (0, sigma_max]; default just below ``sigma_max``.
    method : {"tight", "paper"}
        ``"paper"``: Markov + Laurent–Massart, symmetric split (Algorithm 1 exactly).
        ``"tight"``: the best of Markov (exact chi2 radius, searched split), deterministic
        and order-statistic bounds; never looser than ``"paper"`` on the same inputs.

    Returns
    -------
    Calibration

    Raises
    ------
    InputError, TypeError
        For a parameter outside its range (one sentence naming it).
    InfeasibleCertificateError
        When no bound certifies ``tau`` at the given ``alpha``; names ``alpha_max``.

    Notes
    -----
    Guarantee: with ``sigma <= sigma_max``, ``Pr[||M(D) - M(D')||_2 > tau] <= delta`` over
    ``D' ~ T(D)`` and the noise, for this fixed batch (local, not a generalization claim).
    Assumptions: the judge ``f`` is deterministic given the batch (rerun jitter belongs to
    ``T``); Markov needs ``sensitivity`` to be (an upper bound on) the true RMS sensitivity —
    exact for the paper's point estimate only if the estimate is exact, with confidence
    ``1 - beta`` when ``sensitivity_ucb`` is used; the order statistic needs i.i.d.
    distances from ``T`` and holds with confidence ``1 - beta`` (split into Bonferroni
    shares over the splits it tries); the deterministic bound needs ``max_distance`` (and
    ``center_max``) to hold almost surely.  The selection among bounds is valid because
    each candidate's bound is valid on its own event: at most one confidence-based bound
    is ever in play (the order statistic is not used when ``sensitivity_ucb`` already
    spends ``beta``).

    References
    ----------
    Paper: Theorem 3.1, Corollary 3.2, Symmetric split, Algorithm 1, Proposition B.2/B.3,
    "Choosing the shrinkage center".  ``docs/proofs/gaussian-mechanism.md``,
    ``docs/proofs/shrinkage.md``, ``docs/proofs/tight-calibration.md``.
    """
    validate("calibrate", tau=tau, delta=delta, dim=dim, sensitivity=sensitivity, sensitivity_ucb=sensitivity_ucb,
             beta=beta, alpha=alpha, tau_split=tau_split, sigma=sigma, method=method)  # biasbound.parameters' ranges
    where = "calibrate"
    m = check_one_of(method, "method", where, METHODS)
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dl = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_int(dim, "dim", where, low=1)
    ts = check_in_range(tau_split, "tau_split", where, low=0.0, high=1.0, low_open=True, high_open=True)
    al = None if alpha is None else check_in_range(alpha, "alpha", where, low=0.0, high=1.0, low_open=True)
    b = None if beta is None else check_in_range(beta, "beta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    s = None if sensitivity is None else check_in_range(sensitivity, "sensitivity", where, low=0.0)
    su = None if sensitivity_ucb is None else check_in_range(sensitivity_ucb, "sensitivity_ucb", where, low=0.0)
    md = None if max_distance is None else check_in_range(max_distance, "max_distance", where, low=0.0)
    cs = check_in_range(center_sensitivity, "center_sensitivity", where, low=0.0)
    cm = check_in_range(center_max, "center_max", where, low=0.0)
    dB_given = None if delta_B is None else check_in_range(
        delta_B, "delta_B", where, low=0.0, high=dl, low_open=True, high_open=True)
    sg = None if sigma is None else check_in_range(sigma, "sigma", where, low=0.0, low_open=True)
    dist = None
    if distances is not None:
        dist = np.sort(check_finite_array(distances, "distances", where, ndim=1))
        if dist[0] < 0:
            raise InputError(f"The 'distances' parameter of {where} must hold non-negative norms. Got {dist[0]!r} instead.")
    if su is not None and b is None:
        raise InputError(f"The 'beta' parameter of {where} must be given in (0, 1) when 'sensitivity_ucb' is given. Got None instead.")
    if su is not None and s is not None and su < s:
        raise InputError(f"The 'sensitivity_ucb' parameter of {where} must be >= 'sensitivity' ({s:g}). Got {su!r} instead.")
    if cm > 0 and cs > cm:
        raise InputError(
            f"The 'center_max' parameter of {where} must be >= 'center_sensitivity' ({cs:g}) since it bounds the shift almost surely. "
            f"Got {cm!r} instead."
        )
    batch_center = cs > 0 or cm > 0
    c_rms = cs if cs > 0 else cm  # RMS <= a.s. bound: either is a valid Markov centre term

    # Markov source (the paper's bound)
    if b is not None:
        markov = _Source("markov", su is not None, "" if su is not None else "beta is set but sensitivity_ucb is missing",
                         s=su or 0.0, c=c_rms, beta=b)
    else:
        markov = _Source("markov", s is not None, "" if s is not None else "no sensitivity given", s=s or 0.0, c=c_rms)
    if m == "paper":
        if not markov.available:
            what = "sensitivity_ucb" if b is not None else "sensitivity"
            raise InputError(f"The {what!r} parameter of {where} must be given (a float >= 0) for method='paper'. Got None instead.")
        sources = [markov]
        off = "method='paper' uses the Markov bound only"
        others = [_Source("deterministic", False, off), _Source("order-statistic", False, off)]
        fixed_dB = dB_given if dB_given is not None else dl / 2
        radius_kind, fractions, free_dB = "laurent-massart", (0.5,), None
    else:
        if md is None:
            det = _Source("deterministic", False, "no max_distance given")
        elif batch_center and cm == 0:
            det = _Source("deterministic", False, "batch centre without center_max (an a.s. bound on sqrt(d)|mu(D)-mu(D')|)")
        else:
            det = _Source("deterministic", True, s=md, c=cm)
        if dist is None:
            osrc = _Source("order-statistic", False, "no distances given")
        elif b is None:
            osrc = _Source("order-statistic", False, "beta is needed for the order-statistic bound")
        elif su is not None:
            osrc = _Source("order-statistic", False, "beta is already spent on sensitivity_ucb")
        elif batch_center:
            osrc = _Source("order-statistic", False, "the centre is not fixed within the batch")
        else:
            osrc = _Source("order-statistic", True, s=0.0, c=0.0, beta=b, distances=dist)
        sources = [det, markov, osrc]
        others = []
        if not any(src.available for src in sources):
            reasons = "; ".join(f"{src.name}: {src.reason}" for src in sources)
            raise InputError(f"The calibrate inputs must allow at least one bound ({reasons}).")
        fixed_dB = dB_given
        radius_kind, fractions = "chi2-exact", _MARKOV_FRACTIONS
        free_dB = _free_delta_B(d, dl) if (al is None and dB_given is None) else None

    records = []
    for src in sources:
        fr = _ORDER_FRACTIONS if src.name == "order-statistic" else fractions
        records.append(_evaluate(src, tau=t, delta=dl, dim=d, alpha=al, tau_split=ts, fractions=fr,
                                 radius_kind=radius_kind, fixed_dB=fixed_dB, free_dB=free_dB))
    records += [{"name": o.name, "available": False, "reason": o.reason, "alpha": None, "alpha_max": None,
                 "sigma_max": None, "selected": False} for o in others]
    usable = [r for r in records if r["available"]]
    if not usable:
        amax = max((r["alpha_max"] or 0.0) for r in records)
        a_show = min((r["sensitivity_term"] for r in records if r.get("sensitivity_term") is not None), default=math.inf)
        _raise_infeasible(t, dl, al if al is not None else 1.0, a_show, amax)
    if al is None:
        chosen = max(usable, key=lambda r: (r["alpha"], r["sigma_max"]))
    else:
        chosen = max(usable, key=lambda r: r["sigma_max"])
    chosen["selected"] = True
    smax = chosen["sigma_max"]
    if sg is None:
        sg = math.nextafter(smax, 0.0)
    elif sg > smax:
        raise InputError(f"The 'sigma' parameter of {where} must be a float in (0, {smax:.6g}] (sigma_max). Got {sigma!r} instead.")
    uses_beta = chosen["name"] == "order-statistic" or (chosen["name"] == "markov" and b is not None)
    return Calibration(
        method=m, tau=t, delta=dl, delta_B=chosen["delta_B"], delta_Delta=chosen["delta_Delta"], dim=d,
        alpha=chosen["alpha"], alpha_max=chosen["alpha_max"], sigma=float(sg), sigma_max=smax,
        bound_used=chosen["name"], sensitivity=chosen["sensitivity"], sensitivity_term=chosen["sensitivity_term"],
        noise_radius_unit=chosen["noise_radius_unit"], radius=chosen["radius"], center_sensitivity=chosen["center_term"],
        beta=b if uses_beta else None, candidates=tuple(records),
    )


def recompute_sigma_max(
    *, tau: float, delta_B: float, delta_Delta: float, dim: int, bound: str, radius: str,
    sensitivity: float, center_term: float, alpha: float,
) -> float:
    """Re-derive ``sigma_max`` from recorded inputs with the same rounding (0.0 when infeasible).

    Used by :func:`guarantee_holds` and ``Certificate.verify``; the sensitivity term is
    recomputed from ``alpha`` (not trusted from the record).
    """
    where = "recompute_sigma_max"
    check_one_of(bound, "bound", where, BOUNDS)
    check_one_of(radius, "radius", where, RADII)
    if bound == "markov" and not delta_Delta > 0:
        return 0.0
    a = _term(alpha, sensitivity, center_term, bound, delta_Delta)
    return _sigma_from(tau, a, _radius(radius, dim, delta_B))


def guarantee_holds(calibration: Calibration) -> bool:
    """Check a calibration: re-derive the bound from its recorded inputs (OpenDP-style ``check``).

    Parameters
    ----------
    calibration : Calibration

    Returns
    -------
    bool
        True when ``0 < sigma <= sigma_max`` recomputed from ``(tau, delta_B, delta_Delta,
        dim, bound_used, radius, sensitivity, center_sensitivity, alpha)``, the split fits in
        ``delta`` and, for the order statistic, the recorded index satisfies the binomial
        condition.

    Notes
    -----
    It re-checks the arithmetic of Theorem 3.1 / Proposition B.3 (and the tight variants);
    it cannot check the assumptions (that ``sensitivity`` really bounds the generator).

    References
    ----------
    Paper: Theorem 3.1, Corollary 3.2, Proposition B.3.
    """
    c = calibration
    if not isinstance(c, Calibration):
        raise TypeError(f"The 'calibration' parameter of guarantee_holds must be a Calibration. Got {type(c).__name__} instead.")
    if not (c.tau > 0 and 0 < c.delta < 1 and c.delta_B > 0 and c.delta_Delta >= 0 and c.delta_B + c.delta_Delta <= c.delta):
        return False
    if not (0 < c.alpha <= 1 and c.sigma > 0) or c.bound_used not in BOUNDS or c.radius not in RADII:
        return False
    if c.bound_used == "order-statistic":
        sel = c.selected
        j, mm, be = sel.get("order_index"), sel.get("m"), sel.get("beta_per_split")
        if j is None or mm is None or be is None or not 1 <= j <= mm:
            return False
        if float(stats.binom.sf(j - 1, mm, 1.0 - c.delta_Delta)) > be:
            return False
    smax = recompute_sigma_max(tau=c.tau, delta_B=c.delta_B, delta_Delta=c.delta_Delta, dim=c.dim, bound=c.bound_used,
                               radius=c.radius, sensitivity=c.sensitivity, center_term=c.center_sensitivity, alpha=c.alpha)
    return bool(c.sigma <= smax)

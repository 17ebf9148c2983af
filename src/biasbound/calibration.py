"""Calibration from knowledge: map, check and search the bound units; the feasible frontier.

OpenDP-style: every bound unit *maps* ``(tau, alpha, sigma, d, knowledge)`` to an upper bound on the
violation probability; :func:`check` evaluates a claimed ``(alpha, sigma)`` against ``delta``;
:func:`calibrate` (``biasbound.calibrate``, the one calibrator) *searches* the frontier ``alpha*(sigma)`` (the largest
feasible shrinkage at each noise scale) and
picks one point on it by a stated rule.

``method="tight"``: per generator, the pointwise minimum over every applicable (unit, record) pair —
valid on the intersection of the records' events, so the ``beta`` of every record is spent
(summed); generators combine by max (each generator) or mean (uniform mixture). Generators named
``"UNIT | GEN"`` (a judge's models sharing one point) are grouped per unit: the mixture is taken within
each unit and units combine by max (each model's claim is its own mixture).
``method="paper"``: Corollary 3.2 exactly (:func:`biasbound.bounds.paper.calibrate`, symmetric split,
Laurent–Massart radius, Markov on the RMS sensitivity), from the Moments records.
The bounds and their combination live in :mod:`biasbound.bounds` (``bounds._combined``); this module maps, checks
and searches only.

Rounding against ourselves: searches are bisections that keep the feasible end and return a
point whose bound was evaluated and found ``<= delta`` (the bounds themselves are rounded up);
``sigma`` is never above the verified ``sigma_max``.  numpy/scipy only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from biasbound._exceptions import InfeasibleCertificateError, InputError
from biasbound._rounding import above, below, floor_sig
from biasbound._validation import check_in_range, check_int, check_one_of
from biasbound.bounds import paper
from biasbound.bounds._combined import (
    UNIT_SEPARATOR,
    UNITS,
    Candidate,
    Plan,
    candidate_bound,
    exact,
    paper_record,
    unit_groups,
)
from biasbound.bounds._knowledge import Knowledge
from biasbound.bounds._tail import noise_only_sigma
from biasbound.parameters import AT_A_POINT, bounds, validate, validate_params

__all__ = ["UNIT_SEPARATOR", "BoundCalibration", "beta_per_unit", "calibrate", "check", "frontier",
           "recheck", "unit_groups"]


def beta_per_unit(knowledge: Any) -> dict[str, float]:
    """Failure probability spent per unit (summed over its records, rounded up): each unit's claim holds
    with confidence ``1 - beta`` of its own records; all units at once with ``1 - sum`` (a union bound)."""
    k = Knowledge.of(knowledge)
    out = {}
    for unit, idx in unit_groups([n for n, _ in k.generators]).items():
        b = math.fsum(float(r.beta or 0.0) for i in idx for r in k.generators[i][1])
        out[unit] = above(b) if b > 0 else 0.0
    return out

METHODS = ("tight", "paper")
_BISECT = 60
_ALPHA_CEIL = 1e8  # alpha*(0) above this is reported as unbounded (any shrinkage works)




# --------------------------------------------------------------------------- searches


def _alpha_star(F: Callable[[float], float], delta: float, hi: float = 1.0, rtol: float = 1e-12,
                guided: bool = False, floor: float = 0.0, guess: float | None = None) -> float:
    """Largest alpha in [0, hi] with F(alpha) <= delta (F nondecreasing); 0.0 when only alpha=0 (or none) works.

    Bisection keeping the feasible end; the returned value was evaluated and is feasible (or 0.0).

    ``guided`` (F continuous, e.g. sigma > 0): Brent's method first finds the crossing ``r`` to far below the
    bisection's last step, and the bisection then decides a midpoint by ``mid <= r`` instead of evaluating F,
    except near ``r``; its two final ends are then evaluated. When they confirm (``F(lo) <= delta < F(hi)``), every
    decision was the one F gives (F nondecreasing: a midpoint that became ``lo`` lies at or below the final ``lo``,
    one that became ``hi`` at or above the final ``hi``), so the result is the plain bisection's, in about half the
    evaluations; otherwise the plain bisection runs. ``floor``: a point believed feasible where Brent's method starts
    (the guess only; the bisection and its result are the plain one's).

    ``guess``: a guess of the result itself (e.g. another model's, whose bound has the same steps at sigma = 0), used
    as Brent's crossing would be (no Brent): right, the bisection evaluates about two points; wrong, the confirmation
    fails and the plain bisection runs (two evaluations lost)."""
    if F(hi) <= delta:
        return hi
    lo = 0.0
    if F(lo) > delta:
        return 0.0
    if guess is None or not 0.0 <= guess <= hi:
        guess = _crossing(F, delta, min(max(floor, 0.0), hi), hi, rtol) if guided else None
    out = _bisect(F, delta, lo, hi, rtol, guess)
    return cast(float, _bisect(F, delta, lo, hi, rtol)) if out is None else out  # the guide was off: the plain bisection (no guess: a float)


def _bisect(F: Callable[[float], float], delta: float, lo: float, hi: float, rtol: float, guess: float | None = None,
            stop_below: float = -math.inf) -> float | None:
    """The bisection of ``[lo, hi]`` (``F(lo) <= delta < F(hi)``) that keeps the feasible end, stopping at relative
    width ``rtol`` (or once ``hi <= stop_below``); the returned ``lo`` was evaluated feasible (or is the given one).

    With a ``guess`` of the crossing (:func:`_crossing`), a midpoint away from it is decided by ``mid <= guess``
    without evaluating ``F``; the two final ends are then evaluated, and ``None`` is returned when they do not
    confirm the decisions (the caller then bisects plainly)."""
    margin = 2e-2 * rtol * hi
    lo_seen = hi_seen = True  # evaluated: F(lo) <= delta < F(hi)
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= rtol * hi or hi <= stop_below:
            break
        if guess is None or abs(mid - guess) <= margin:
            ok, seen = F(mid) <= delta, True  # [proof:safe-end] lo is always a point whose bound was evaluated <= delta
        else:
            ok, seen = mid <= guess, False
        if ok:
            lo, lo_seen = mid, seen
        else:
            hi, hi_seen = mid, seen
    if guess is not None and not ((lo_seen or F(lo) <= delta) and (hi_seen or F(hi) > delta)):
        return None
    return lo


def _crossing(F: Callable[[float], float], delta: float, lo: float, hi: float, rtol: float) -> float | None:
    """Where ``F`` crosses ``delta`` in [lo, hi] (``F(lo) <= delta < F(hi)``), by Brent's method to ``1e-2 rtol hi``;
    None when it fails (the caller then bisects plainly)."""
    from scipy.optimize import brentq

    try:
        return float(brentq(lambda a: F(a) - delta, lo, hi, xtol=1e-2 * rtol * hi, rtol=4 * np.finfo(float).eps,
                            maxiter=100))
    except (RuntimeError, ValueError):
        return None


def _alpha_zero(F0: Callable[[float], float], delta: float, rtol: float = 1e-12) -> float:
    """``alpha*(sigma = 0)`` without the cap at 1 (``inf`` when every alpha up to 1e8 is feasible)."""
    hi = 1.0
    while F0(hi) <= delta:
        if hi >= _ALPHA_CEIL:
            return math.inf
        hi *= 4.0
    return _alpha_star(F0, delta, hi, rtol=rtol)


def _sigma_star(G: Callable[[float], float], delta: float, hi: float, lo: float = 0.0,
                rtol: float = 1e-12, grid: int = 12, guided: bool = False) -> float | None:
    """Largest verified sigma in [lo, hi] with G(sigma) <= delta (None when none is found).

    The bounds need not be monotone in sigma (noise can lower a worst case whose mass sits just above
    tau), so a grid of ``grid`` points is scanned first; the bisection then runs between the largest
    feasible grid point and the next one, keeping the feasible end.  The result was evaluated.  ``guided``: that
    bisection guided by Brent's method as in :func:`_alpha_star` (when the bracket lies above sigma = 0)."""
    pts = [lo + (hi - lo) * i / grid for i in range(grid + 1)]
    ok = [i for i, s in enumerate(pts) if G(s) <= delta]  # [proof:sigma-scan]
    if not ok:
        return None
    i = ok[-1]
    if i == grid:
        return hi
    lo, hi = pts[i], pts[i + 1]
    floor = pts[-1] * 1e-9  # a noise scale this small is reported as the feasible end found (often 0)
    # between two grid points above 0 the bound is continuous in sigma: guided as _alpha_star's bisection (the same
    # decisions whenever G is monotone between them, confirmed at the two final ends; else the plain bisection)
    guess = _crossing(G, delta, lo, hi, rtol) if guided and lo > 0 else None
    out = _bisect(G, delta, lo, hi, rtol, guess, stop_below=floor)
    return _bisect(G, delta, lo, hi, rtol, stop_below=floor) if out is None else out


# --------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class BoundCalibration:
    """A calibrated mechanism from knowledge: the point chosen on the frontier and how.

    Attributes
    ----------
    method : {"tight", "paper"}
    tau, delta : float
        The certified tolerance and failure probability.
    dim : int
    alpha, sigma : float
        The shrinkage and noise scale used (``sigma = 0``: a deterministic mechanism, allowed for
        every unit but the paper's).
    sigma_max : float
        Largest verified noise scale at ``alpha`` (``sigma <= sigma_max``).
    alpha_max : float
        The largest shrinkage found feasible: ``min(1, alpha*(0))``, the frontier points and the chosen
        point (the bounds need not be monotone in sigma, so ``alpha*(sigma)`` can exceed ``alpha*(0)``).
    alpha_at_sigma : float
        ``alpha*(sigma)``: the largest feasible shrinkage at the chosen ``sigma``.
    bound_value : float
        The (combined) bound at ``(alpha, sigma)``; ``<= delta``.
    bound_used : str
        The unit attaining the bound at the chosen point (of the binding generator).
    exact : bool
        The value is the violation probability itself (a census of every neighbour, none filled in at the
        range bound, the centre's shift known exactly), not an upper bound. A moment or almost-sure bound is
        the worst case over every distribution consistent with the knowledge: an upper bound, never "exact".
    beta_spent : float
        Sum of the failure probabilities of every record the bound was taken over (every unit's; each unit's
        own claim spends only its records' share, :func:`beta_per_unit`).
    point_estimate : bool
        Some moment record is a point estimate taken as the truth (no confidence statement).
    tau_split : float
        The default rule's share (see ``default_rule``).
    default_rule : str
        Why this point of the frontier (given alpha, given sigma, or the default rule and its reason).
    candidates : tuple of dict
        Every (generator, record, unit): applicable or why not, exact, beta, its value at the point,
        its own ``alpha*(sigma)`` and ``sigma*(alpha)``, selected.
    frontier : tuple of dict
        ``{"sigma", "alpha"}`` points of the combined frontier (``alpha`` capped at 1).
    knowledge : Knowledge
    paper_split : biasbound.bounds.paper.PaperCalibration or None
        For ``method="paper"``: Corollary 3.2's calibration (the split, the radius, the sensitivity term).
    frontier_points : int
        The frontier's grid size (the chosen point is added to ``frontier`` besides).
    checked_point : bool
        Both ``alpha`` and ``sigma`` were given (the point was checked, not searched): every derived number
        is then a function of ``(knowledge, tau, delta, dim, alpha, sigma, method, tau_split, len(frontier))``,
        which is what ``Certificate.verify`` recomputes.
    """

    method: str
    tau: float
    delta: float
    dim: int
    alpha: float
    sigma: float
    sigma_max: float
    alpha_max: float
    alpha_at_sigma: float
    bound_value: float
    bound_used: str
    exact: bool
    beta_spent: float
    point_estimate: bool
    tau_split: float
    default_rule: str
    candidates: tuple[dict[str, Any], ...]
    frontier: tuple[dict[str, float], ...]
    knowledge: Knowledge
    paper_split: Any = None
    checked_point: bool = False
    frontier_points: int = 0

    @property
    def beta(self) -> float | None:
        """The confidence parameter of the statement (None when nothing is spent)."""
        return self.beta_spent if self.beta_spent > 0 else None

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["candidates"] = [dict(c) for c in self.candidates]
        out["frontier"] = [dict(p) for p in self.frontier]
        out["knowledge"] = self.knowledge.to_dict()
        out["paper_split"] = None if self.paper_split is None else self.paper_split.to_dict()
        return out


# --------------------------------------------------------------------------- public API
@validate_params(exempt=AT_A_POINT)
def check(*, tau: float, delta: float, dim: int, alpha: float, sigma: float, knowledge: Any,
          method: str = "tight") -> tuple[bool, float]:
    """OpenDP-style check: ``(bound <= delta, bound)`` for a claimed ``(alpha, sigma)``.

    For ``method="paper"`` the bound is Theorem 3.1 at the symmetric split ``delta_B = delta/2``
    (so the check is Corollary 3.2 exactly).
    """
    where = "check"
    checked = validate(where, method=method, tau=tau, delta=delta, dim=dim)  # the ranges of biasbound.parameters
    m, t, dl, d = checked["method"], checked["tau"], checked["delta"], checked["dim"]
    a = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)
    s = check_in_range(sigma, "sigma", where, **bounds("sigma"))
    k = Knowledge.of(knowledge)
    if m == "paper":  # the paper unit checks its own claim (Corollary 3.2)
        return paper.check(t, dl, a, s, d, paper_record(k))
    v, _ = Plan(k, m).evaluate(t, a, s, d)
    return bool(v <= dl), v


@validate_params
def frontier(*, tau: float, delta: float, dim: int, knowledge: Any, method: str = "tight",
             n: int = 13, unit: str | None = None) -> list[dict[str, float]]:
    """The feasible frontier ``alpha*(sigma)`` at ``n`` noise scales from 0 to the noise-only maximum.

    unit : str, optional
        One bound unit alone (``"almost-sure"``, ``"moments"``, ...): that unit's frontier for the records it applies
        to (an InputError when it applies to no record of some generator).

    Returns
    -------
    list of dict
        ``{"sigma", "alpha"}`` with ``alpha`` the largest feasible shrinkage (capped at 1; 0 = infeasible).
    """
    where = "frontier"
    v = validate(where, method=method, tau=tau, delta=delta, dim=dim)  # the ranges of biasbound.parameters
    m, t, dl, d = v["method"], v["tau"], v["delta"], v["dim"]
    nn = check_int(n, "n", where, low=2)
    k = Knowledge.of(knowledge)
    if unit is not None and m == "tight":
        from biasbound.bounds import unit as _unit

        _unit(unit)  # a known name (one error sentence otherwise)
        plan = Plan(k, m, only=unit)
        return _frontier(lambda a, s: plan.evaluate(t, a, s, d)[0], t, dl, d, nn, allow_zero=True)
    F = _bound_fn(k, m, t, d, dl)
    return _frontier(F, t, dl, d, nn, allow_zero=(m == "tight"))


def _bound_fn(k: Knowledge, method: str, tau: float, dim: int, delta: float) -> Callable[[float, float], float]:
    if method == "paper":
        rec = paper_record(k)
        return lambda a, s: paper._bound(tau, a, s, dim, rec, delta_B=delta / 2) if s > 0 else paper._bound(tau, a, 0.0, dim, rec)
    plan = Plan(k, method)
    return lambda a, s: plan.evaluate(tau, a, s, dim)[0]


def _frontier(F: Callable[[float, float], float], tau: float, delta: float, dim: int, n: int,
              allow_zero: bool, at: tuple[float, float] | None = None) -> list[dict[str, float]]:
    """``alpha*(sigma)`` on ``n`` noise scales from 0 to the noise-only maximum, denser towards it (where the frontier
    falls steeply), plus the chosen point ``at = (sigma, alpha*(sigma))`` when given."""
    s_hi = noise_only_sigma(tau, delta, dim)
    out: list[dict[str, float]] = []
    for i in range(n):
        u = i / (n - 1)
        s = s_hi * (1.0 - (1.0 - u) ** 2)
        if s == 0 and not allow_zero:
            s = s_hi * 1e-6
        # the next point guessed from the last two (the frontier is smooth): a right guess settles the bisection in
        # about two evaluations, a wrong one costs two and the plain bisection runs; the result is the plain one's
        guess = None
        if len(out) >= 2 and out[-1]["alpha"] > 0 and out[-1]["sigma"] > out[-2]["sigma"]:
            (s0, a0), (s1, a1) = (out[-2]["sigma"], out[-2]["alpha"]), (out[-1]["sigma"], out[-1]["alpha"])
            guess = min(1.0, max(0.0, a1 + (a1 - a0) * (s - s1) / (s1 - s0)))
        a = _alpha_star(lambda al, s=s: F(al, s), delta, rtol=1e-4, guess=guess)  # plotted data: coarse, the safe end
        out.append({"sigma": float(s), "alpha": float(a)})
    if at is not None and all(p["sigma"] != at[0] for p in out):
        out.append({"sigma": float(at[0]), "alpha": float(at[1])})
        out.sort(key=lambda p: p["sigma"])
    return out


def _default_point(F: Callable[[float, float], float], t: float, dl: float, s_hi: float, ts: float,
                   a0: float) -> tuple[float, float | None, str]:
    """The default rule's point (neither alpha nor sigma given): ``(alpha, sigma or None, rule)``, sigma None when
    it is left to the search at that alpha; ``a0`` is alpha*(0), the largest noiseless shrinkage."""
    if a0 <= 0:
        raise InfeasibleCertificateError(
            f"tau={t:g} cannot be certified (delta={dl:g}) for any alpha in (0, 1]: even without noise the bound "
            "exceeds delta; raise tau or delta, or add knowledge.", alpha_max=0.0)
    # [proof:default-point] the noise gets tau_split of its room (Algorithm 1's symmetric split), the shrinkage
    # is the largest the knowledge allows there: judges that move less get a larger alpha at the same noise
    s_ref = below(ts * s_hi)
    a_ref = _alpha_star(lambda a: F(a, s_ref), dl)
    if a_ref > 0:
        return a_ref, s_ref, (
            f"default rule: sigma = tau_split * sigma_noise with tau_split={ts:g} and sigma_noise = "
            f"tau/sqrt(2 chi2.isf(delta, d)) = {s_hi:.6g} (the most noise any certificate allows): the noise gets "
            "tau_split of its room, as Algorithm 1's symmetric split gives it half of tau; alpha = alpha*(sigma), "
            "the largest verified shrinkage at that noise — so judges that move the scores less get a larger alpha")
    al = min(1.0, ts * a0)
    return al, None, (
        f"default rule: no shrinkage works at tau_split={ts:g} of the largest noise, so alpha = "
        f"tau_split * alpha*(0) = {al:.6g} (alpha*(0) the largest noiseless shrinkage) and sigma = the largest "
        "verified noise at that alpha")


def _given_rule(al: float | None, sg: float | None) -> str:
    """The rule in words when alpha, sigma or both are given."""
    if al is not None and sg is None:
        return f"alpha={al:g} given; sigma = the largest verified noise at that alpha"
    if al is None:
        return f"sigma={sg:g} given; alpha = the largest verified shrinkage at that noise"
    return f"alpha={al:g} and sigma={sg:g} given; checked"


@validate_params
def calibrate(
    knowledge: Any,
    *,
    tau: float,
    delta: float,
    dim: int,
    alpha: float | None = None,
    sigma: float | None = None,
    method: str = "tight",
    tau_split: float = 0.5,
    frontier_points: int = 9,
    candidates: str = "selected",
    _rule: str | None = None,
    _guess: float | None = None,
) -> BoundCalibration:
    """Calibrate shrinkage ``alpha`` and noise ``sigma`` for a ``(tau, delta)`` certificate from knowledge.

    Parameters
    ----------
    knowledge : record, list of records, mapping generator -> record(s), or Knowledge
        What is known about ``Delta`` (see :mod:`biasbound.bounds`).
    tau, delta, dim : float, float, int
        Tolerance ``> 0``, failure probability in (0, 1), number of scores.
    alpha : float, optional
        Shrinkage in (0, 1]; then ``sigma = sigma*(alpha)`` (the largest feasible).
    sigma : float, optional
        Noise scale ``>= 0`` (0: deterministic; tight only); then ``alpha = alpha*(sigma)``.
        Both given: checked.
    method : {"tight", "paper"}
    tau_split : float
        Default rule (neither given): ``sigma = tau_split * tau / sqrt(2 chi2.isf(delta, d))`` (the noise's share of
        the most noise any certificate allows, as Algorithm 1's symmetric split) and ``alpha = alpha*(sigma)``;
        if no alpha works there, ``alpha = tau_split * alpha*(0)`` and ``sigma = sigma*(alpha)``.
    frontier_points : int
        Points of the reported frontier (0: none, e.g. per-model certificates under a judge's frontier).
    candidates : {"selected", "all"}
        ``"all"`` also solves every candidate's own ``alpha*(sigma)`` and ``sigma*(alpha)`` (slower);
        ``"selected"`` records every candidate's value at the chosen point only.

    Returns
    -------
    BoundCalibration

    Raises
    ------
    InfeasibleCertificateError
        When no point works at the given alpha/sigma (names ``alpha_max``).

    Notes
    -----
    Guarantee: ``Pr[||M(D) - M(D')|| > tau] <= bound_value <= delta`` over ``D' ~ T(D)`` and the noise,
    on the event (probability ``>= 1 - beta_spent`` over the neighbour sample) that every record holds.
    """
    where = "calibrate"
    v = validate(where, tau=tau, delta=delta, dim=dim, alpha=alpha, sigma=sigma, method=method, tau_split=tau_split,
                 frontier_points=frontier_points)  # the one declaration of the ranges: biasbound.parameters
    m, t, dl, d, ts, al, sg, nf = (v[n] for n in ("method", "tau", "delta", "dim", "tau_split", "alpha", "sigma",
                                                  "frontier_points"))
    if nf == 1:
        raise InputError(f"The 'frontier_points' parameter of {where} must be 0 (no frontier) or >= 2. Got 1 instead.")
    searches = check_one_of(candidates, "candidates", where, ("selected", "all")) == "all"
    k = Knowledge.of(knowledge)
    if m == "paper":
        out = _calibrate_paper(k, t, dl, d, al, sg, ts, nf, searches)
        return dataclasses.replace(out, default_rule=_rule or out.default_rule, checked_point=al is not None and sg is not None,
                                   frontier_points=nf)
    checked = al is not None and sg is not None
    sg_given = sg is not None
    plan = Plan(k, m)

    def F(a: float, s: float) -> float:
        return plan.evaluate(t, a, s, d)[0]

    s_hi = noise_only_sigma(t, dl, d)
    rt = 1e-6 if checked else 1e-12  # a checked point's searches only report figures: coarser, still the safe end
    if checked:
        v0, _ = plan.evaluate(t, al, sg, d, every=True)
        if v0 > dl:
            raise InfeasibleCertificateError(
                f"alpha={al:g} and sigma={sg:g} do not certify tau={t:g} at delta={dl:g}: the bound is {v0:.3g}.",
                alpha_max=None)
    if al is None and sg is None:  # the default rule reads alpha*(0) beyond 1
        a0 = _alpha_zero(lambda a: F(a, 0.0), dl, rtol=rt)
        amax = min(1.0, a0)
    else:  # only min(1, alpha*(0)) is reported: the same search without looking past alpha = 1 (``_guess``: a guess
        # of it, e.g. another model's, guiding the bisection; the result is the plain bisection's, see _alpha_star)
        amax = _alpha_star(lambda a: F(a, 0.0), dl, 1.0, rtol=rt, guess=_guess)
    if al is None and sg is None:
        al, sg, rule = _default_point(F, t, dl, s_hi, ts, a0)
    else:
        rule = _given_rule(al, sg)
    if sg is None:
        if al is None:  # the branches above set alpha whenever sigma is still free
            raise RuntimeError("calibrate reached the sigma search without an alpha")
        smax = _sigma_star(lambda s: F(al, s), dl, s_hi)
        if smax is None:
            _infeasible(t, dl, al, amax)
        sg = smax
    else:
        # F is continuous in alpha when sigma > 0; a given alpha was checked feasible at sg (Brent's start)
        a_s = _alpha_star(lambda a: F(a, sg), dl, rtol=rt, guided=sg > 0, floor=al or 0.0)
        if al is None:
            if a_s <= 0:
                raise InfeasibleCertificateError(
                    f"sigma={sg:g} is too large to certify tau={t:g} at delta={dl:g} for any alpha (the noise alone "
                    f"exceeds it above sigma={s_hi:.4g}).", alpha_max=amax)
            al = a_s
        # the given point's bound was checked (or is checked below); sigma_max is the largest verified noise found
        # above it (the bound need not be monotone in sigma)
        smax = _sigma_star(lambda s: F(al, s), dl, s_hi, lo=sg, rtol=rt, grid=8, guided=checked)
        if smax is None:
            _infeasible(t, dl, al, amax)
    value, per = plan.evaluate(t, al, sg, d, every=True)
    if value > dl:
        raise InfeasibleCertificateError(
            f"alpha={al:g} and sigma={sg:g} do not certify tau={t:g} at delta={dl:g}: the bound is {value:.3g}; "
            f"sigma <= {smax:.6g} works at this alpha.", alpha_max=amax)
    a_at = a_s if sg_given else _alpha_star(lambda a: F(a, sg), dl, rtol=1e-9)
    binding = max(per, key=lambda p: p[2])
    selected = {(p[1].generator, p[1].index, p[1].unit.NAME) for p in per}
    cands = _candidate_records(k, plan, m, t, dl, d, al, sg, selected, searches)
    pts = _frontier(F, t, dl, d, nf, allow_zero=True, at=(sg, a_at)) if nf else []
    amax = max([amax, a_at, al] + [p["alpha"] for p in pts])
    return BoundCalibration(
        method=m, tau=t, delta=dl, dim=d, alpha=float(al), sigma=float(sg), sigma_max=float(smax), alpha_max=float(amax),
        alpha_at_sigma=float(a_at), bound_value=float(value), bound_used=binding[1].unit.NAME,
        exact=exact(plan.how, per), beta_spent=k.beta_total,
        point_estimate=any(r.point_estimate for r in k.records),
        tau_split=ts, default_rule=_rule or rule, candidates=tuple(cands), frontier=tuple(pts), knowledge=k,
        checked_point=checked, frontier_points=nf,
    )


#: The same function under its earlier name (pipeline, card and tests call it so); one route, two names.


@validate_params
def recheck(calibration: BoundCalibration, *, knowledge: Any = None, dim: int | None = None,
            frontier_points: int | None = None, hint: BoundCalibration | None = None) -> BoundCalibration:
    """The same ``(alpha, sigma)`` re-certified for other knowledge and/or another dimension.

    Used for per-model certificates under one judge-level calibration: each model gets its own records and
    its own ``d``; the bound is recomputed at the judge's point and must stay ``<= delta``.

    ``hint``: a calibration of similar knowledge (the previous model's recheck; default ``calibration``) whose
    ``alpha_max`` guesses this one's ``alpha*(0)`` for its bisection. It changes no result: the guided bisection is
    confirmed by evaluation, else the plain one runs (the models of a judge share the bound's steps at sigma = 0,
    so the guess is usually the very value, found in about 4 evaluations instead of about 23).

    Raises
    ------
    InfeasibleCertificateError
        When the bound at ``(alpha, sigma)`` exceeds ``delta`` for this knowledge and dimension.
    """
    if not isinstance(calibration, BoundCalibration):
        raise TypeError(f"The 'calibration' parameter of recheck must be a BoundCalibration. Got {type(calibration).__name__} instead.")
    if hint is not None and not isinstance(hint, BoundCalibration):
        raise TypeError(f"The 'hint' parameter of recheck must be a BoundCalibration. Got {type(hint).__name__} instead.")
    c = calibration
    return calibrate(c.knowledge if knowledge is None else knowledge, tau=c.tau, delta=c.delta,
                               dim=c.dim if dim is None else dim, method=c.method, tau_split=c.tau_split,
                               frontier_points=c.frontier_points if frontier_points is None else frontier_points,
                               alpha=c.alpha, sigma=c.sigma, _rule=c.default_rule,
                               _guess=(c if hint is None else hint).alpha_max)


def _candidate_records(k: Knowledge, plan: Plan, method: str, tau: float, delta: float, dim: int, alpha: float,
                       sigma: float, selected: set[tuple[str, int, str]], searches: bool) -> list[dict[str, Any]]:
    out = []
    s_hi = noise_only_sigma(tau, delta, dim)
    vals = plan.values(tau, alpha, sigma, dim, every=True)
    at = {(c.generator, c.index, c.unit.NAME): vals[(gi, ci)]
          for gi, (_, cs) in enumerate(plan.gens) for ci, c in enumerate(cs)}
    for name, recs in k.generators:
        for i, r in enumerate(recs):
            kind = r.to_dict()["kind"]
            for u in UNITS:
                reason = u.applies(r)
                if method == "paper" and u is not paper:
                    reason = reason or "method='paper' uses Corollary 3.2 only"
                rec: dict[str, Any] = {"generator": name, "record": i, "knowledge": kind, "unit": u.NAME,
                                       "applicable": reason is None, "reason": reason or "", "exact": bool(u.EXACT),
                                       "beta": float(r.beta or 0.0), "value": None, "alpha_at_sigma": None,
                                       "sigma_at_alpha": None, "selected": False}
                if reason is None:
                    c = Candidate(name, i, u, r)
                    rec["value"] = at[(name, i, u.NAME)]
                    if searches:
                        rec["alpha_at_sigma"] = _alpha_star(lambda a, c=c: candidate_bound(c, tau, a, sigma, dim), delta,
                                                            rtol=1e-6)
                        rec["sigma_at_alpha"] = _sigma_star(lambda s, c=c: candidate_bound(c, tau, alpha, s, dim), delta,
                                                            s_hi, rtol=1e-6, grid=8)
                    rec["selected"] = (name, i, u.NAME) in selected
                    if not rec["selected"]:
                        rec["reason"] = "applies; another bound is smaller at the chosen point"
                    else:
                        rec["reason"] = "smallest bound for this generator at the chosen point"
                out.append(rec)
    return out


def _infeasible(tau: float, delta: float, alpha: float, amax: float) -> None:
    fix = (f"Choose alpha < {floor_sig(amax)} (alpha_max), raise tau or delta, or add knowledge." if amax > 0 else
           "No alpha in (0, 1] works: raise tau or delta, or add knowledge.")
    raise InfeasibleCertificateError(
        f"tau={tau:g} cannot be certified at alpha={alpha:g} (delta={delta:g}) even without noise. {fix}", alpha_max=amax)


def _calibrate_paper(k: Knowledge, tau: float, delta: float, dim: int, alpha: float | None, sigma: float | None,
                     tau_split: float, nf: int, searches: bool) -> BoundCalibration:
    if sigma is not None and sigma == 0:
        raise InputError("The 'sigma' parameter of calibrate must be > 0 for method='paper' (Theorem 3.1). Got 0 instead.")
    rec = paper_record(k)
    # a confidence bound (beta > 0), an exact moment (beta = 0) and a point estimate (None) all enter as U itself
    kw: dict[str, Any] = {"tau": tau, "delta": delta, "dim": dim, "U": math.sqrt(rec.U2),
                          "S": math.sqrt(rec.shift_U2 or 0.0), "alpha": alpha, "tau_split": tau_split}
    if sigma is not None and alpha is None:
        # Corollary 3.2 solved for alpha at a given sigma (symmetric split), rounded down and checked
        F = _bound_fn(k, "paper", tau, dim, delta)
        al = _alpha_star(lambda a: F(a, sigma), delta)
        if al <= 0:
            raise InfeasibleCertificateError(f"sigma={sigma:g} is too large to certify tau={tau:g} at delta={delta:g} "
                                             "under Corollary 3.2 for any alpha.", alpha_max=0.0)
        kw["alpha"] = al
    cor = paper.calibrate(**kw)
    if sigma is not None:
        if sigma > cor.sigma_max:
            raise InfeasibleCertificateError(f"sigma={sigma:g} exceeds sigma_max={cor.sigma_max:.6g} of Corollary 3.2 at "
                                             f"alpha={cor.alpha:g}.", alpha_max=cor.alpha_max)
        cor = paper.calibrate(**{**kw, "alpha": cor.alpha, "sigma": sigma})
    value = paper._bound(tau, cor.alpha, cor.sigma, dim, rec, delta_B=cor.delta_B)
    rule = ("Corollary 3.2 (symmetric split delta_B = delta_Delta = delta/2, Laurent–Massart radius, Markov); "
            + (f"alpha={alpha:g} given" if alpha is not None else
               f"sigma={sigma:g} given, alpha solved" if sigma is not None else
               f"alpha from tau_split={tau_split:g} (Algorithm 1's split of tau)") + "; sigma = sigma_max rounded down")
    F = _bound_fn(k, "paper", tau, dim, delta)
    cands = _candidate_records(k, Plan(k, "paper"), "paper", tau, delta, dim, cor.alpha, cor.sigma,
                               {(n, 0, "paper") for n, _ in k.generators}, searches)
    return BoundCalibration(
        method="paper", tau=tau, delta=delta, dim=dim, alpha=cor.alpha, sigma=cor.sigma, sigma_max=cor.sigma_max,
        alpha_max=cor.alpha_max, alpha_at_sigma=_alpha_star(lambda a: F(a, cor.sigma), delta), bound_value=float(value),
        bound_used="paper", exact=False, beta_spent=float(rec.beta or 0.0), point_estimate=rec.beta is None,
        tau_split=tau_split, default_rule=rule, candidates=tuple(cands),
        frontier=tuple(_frontier(F, tau, delta, dim, nf, allow_zero=False,
                                 at=(cor.sigma, _alpha_star(lambda a: F(a, cor.sigma), delta))) if nf else ()),
        knowledge=k, paper_split=cor,
    )

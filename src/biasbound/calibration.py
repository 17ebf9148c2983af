"""Calibration from knowledge: map, check and search the bound units; the feasible frontier.

OpenDP-style: every bound unit *maps* ``(tau, alpha, sigma, d, knowledge)`` to an upper bound on the
violation probability; :func:`check` evaluates a claimed ``(alpha, sigma)`` against ``delta``;
:func:`calibrate_knowledge` *searches* the frontier ``alpha*(sigma)`` (the largest feasible shrinkage
at each noise scale) and picks one point on it by a stated rule.

``method="tight"``: per generator, the pointwise minimum over every applicable (unit, record) pair —
valid on the intersection of the records' events, so the ``beta`` of every record is spent
(summed); generators combine by max (each generator) or mean (uniform mixture). Generators named
``"UNIT | GEN"`` (a judge's models sharing one point) are grouped per unit: the mixture is taken within
each unit and units combine by max (each model's claim is its own mixture).
``method="paper"``: Corollary 3.2 exactly (``biasbound.abb.calibrate(method="paper")``, symmetric split,
Laurent–Massart radius, Markov on the RMS sensitivity), from the Moments records.

Rounding against ourselves: searches are bisections that keep the feasible end and return a
point whose bound was evaluated and found ``<= delta`` (the bounds themselves are rounded up);
``sigma`` is never above the verified ``sigma_max``.  numpy/scipy only.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from biasbound._exceptions import InfeasibleCertificateError, InputError
from biasbound._validation import check_in_range, check_int, check_one_of
from biasbound.bounds import UNITS, paper
import numpy as np

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
from biasbound.bounds._tail import noise_only_sigma, tail, weighted_sum

__all__ = ["UNIT_SEPARATOR", "BoundCalibration", "beta_per_unit", "calibrate_knowledge", "check", "frontier", "recheck",
           "unit_groups"]

#: A generator named ``"UNIT | GEN"`` is generator GEN of unit UNIT (a model of a judge's model-view
#: certificate): several models share one (alpha, sigma), each with its own claim.
UNIT_SEPARATOR = " | "


def unit_groups(names: list[str] | tuple[str, ...]) -> dict[str, list[int]]:
    """Generator positions per unit: ``"UNIT | GEN"`` names group by UNIT; names without a unit form one
    group ``""`` (one unit, the usual case).

    The certificate claims the bound for each unit separately: generators combine (max or mixture)
    within a unit, and units by max (each model's own claim)."""
    out: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        unit = n.split(UNIT_SEPARATOR, 1)[0] if UNIT_SEPARATOR in n else ""
        out.setdefault(unit, []).append(i)
    return out


def beta_per_unit(knowledge: Any) -> dict[str, float]:
    """Failure probability spent per unit (summed over its records, rounded up): each unit's claim holds
    with confidence ``1 - beta`` of its own records; all units at once with ``1 - sum`` (a union bound)."""
    k = Knowledge.of(knowledge)
    out = {}
    for unit, idx in unit_groups([n for n, _ in k.generators]).items():
        b = math.fsum(float(r.beta or 0.0) for i in idx for r in k.generators[i][1])
        out[unit] = math.nextafter(b, math.inf) if b > 0 else 0.0
    return out

METHODS = ("tight", "paper")
_BISECT = 60
_ALPHA_CEIL = 1e8  # alpha*(0) above this is reported as unbounded (any shrinkage works)


@dataclass(frozen=True)
class _Cand:
    generator: str
    index: int  # position of the record within its generator
    unit: ModuleType
    record: Record


def _prepare(k: Knowledge, method: str, only: str | None = None) -> list[tuple[str, list[_Cand]]]:
    """Applicable (unit, record) pairs per generator (``only``: that unit alone)."""
    plan = []
    for name, recs in k.generators:
        cands = []
        for i, r in enumerate(recs):
            for u in UNITS:
                if (method == "paper" and u is not paper) or (only is not None and u.NAME != only):
                    continue
                if u.applies(r) is None:
                    cands.append(_Cand(name, i, u, r))
        if not cands:
            raise InputError(f"The knowledge of generator {name!r} allows no bound for method={method!r}.")
        plan.append((name, cands))
    return plan


def _cand_bound(c: _Cand, tau: float, alpha: float, sigma: float, dim: int) -> float:
    return float(c.unit._bound(tau, alpha, sigma, dim, c.record))


def _dominated(r: Record, s: Record) -> bool:
    """Every unit's bound for ``r`` is <= its bound for ``s`` (same kind; monotone in the record)."""
    if type(r) is not type(s) or r.shift_ratio != s.shift_ratio:  # [proof:dominated]
        return False
    if isinstance(r, AlmostSure):
        return r.A <= s.A
    if isinstance(r, Moments):
        if r.shift_U2 is not None or s.shift_U2 is not None:
            return False
        a_ok = s.A is None or (r.A is not None and r.A <= s.A)
        return r.U2 <= s.U2 and a_ok and (r.beta is None) == (s.beta is None)
    if isinstance(r, FullPopulation):
        if r.shift_sq is not None or s.shift_sq is not None or r.weights is not None or s.weights is not None:
            return False
        t = np.union1d(r.sq_norms, s.sq_norms)  # r <=st s: the share above every threshold is no larger
        fr = 1.0 - np.searchsorted(r.sq_norms, t, side="right") / r.m
        fs = 1.0 - np.searchsorted(s.sq_norms, t, side="right") / s.m
        return bool(np.all(fr <= fs))
    if isinstance(r, RandomJudge):  # same levels: r's worst distribution's tail is below s's at every level
        return bool(np.array_equal(r.levels, s.levels) and np.all(r.upper <= s.upper))
    return False


def _distinct(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct values, index of each element among them)``; one pass when ``q`` is sorted (a few values are
    returned as they are: the distinct values of all candidates together are taken next anyway)."""
    if q.size <= 64:
        return q, np.arange(q.size)
    if q.size > 1 and bool(np.all(q[1:] >= q[:-1])):
        first = np.empty(q.size, dtype=bool)
        first[0] = True
        np.not_equal(q[1:], q[:-1], out=first[1:])
        return q[first], np.cumsum(first) - 1
    return np.unique(q, return_inverse=True)


class _Plan:
    """The candidates of every generator and a fast evaluation of the combined bound.

    The units whose bound is a weighted sum of tails (almost-sure, full and sampled population) are
    evaluated together with one call of the tail; for ``how="max"`` a generator whose single record
    is dominated by another generator's (same kind, every bound monotone in it) cannot be the maximum
    and is skipped during searches (it is still evaluated at the chosen point)."""

    def __init__(self, k: Knowledge, method: str, only: str | None = None) -> None:
        self.how = k.how
        self.gens = _prepare(k, method, only)
        self.active = list(range(len(self.gens)))
        if self.how == "max":
            single = [i for i, (_, c) in enumerate(self.gens) if len({(x.index) for x in c}) == 1]
            rec = {i: self.gens[i][1][0].record for i in single}
            order = sorted(single, key=lambda i: -_size(rec[i]))
            kept: list[int] = []
            for i in order:
                if not any(_dominated(rec[i], rec[j]) for j in kept):
                    kept.append(i)
            drop = set(single) - set(kept)
            self.active = [i for i in range(len(self.gens)) if i not in drop]

    def values(self, tau: float, alpha: float, sigma: float, dim: int, every: bool = False) -> dict[tuple[int, int], float]:
        """The bound of every candidate (generator index, candidate index) of the evaluated generators.

        A pure function of its arguments, remembered per plan: a point the searches (or the final evaluation
        and the candidate records) revisit is computed once."""
        memo_key = (tau, alpha, sigma, dim, every)
        memo = self.__dict__.setdefault("_memo", {})
        if memo_key not in memo:
            memo[memo_key] = self._values(tau, alpha, sigma, dim, every)
        return dict(memo[memo_key])

    def _values(self, tau: float, alpha: float, sigma: float, dim: int, every: bool) -> dict[tuple[int, int], float]:
        idx = range(len(self.gens)) if every else self.active
        lin: list[tuple[int, int, np.ndarray, np.ndarray, float]] = []
        vals: dict[tuple[int, int], float] = {}
        for gi in idx:
            for ci, c in enumerate(self.gens[gi][1]):
                f = getattr(c.unit, "_linear", None)
                if f is None:
                    vals[(gi, ci)] = _cand_bound(c, tau, alpha, sigma, dim)
                else:
                    q, w, const = f(alpha, c.record)
                    lin.append((gi, ci, q, w, const))
        if len(lin) == 1 and lin[0][2].size <= 64:  # one small candidate (a model of few items): directly
            gi, ci, q, w, const = lin[0]
            vals[(gi, ci)] = weighted_sum(w, tail(q, tau=tau, sigma=sigma, dim=dim), const)
        elif lin:
            # the tail is a function of each shift alone: evaluated once on the distinct shifts of every candidate
            # (each found in one pass when sorted, as a population's are), then read back per candidate
            parts = [_distinct(np.asarray(x[2], dtype=float).ravel()) for x in lin]
            every_u, at = np.unique(np.concatenate([u for u, _ in parts]), return_inverse=True)
            p_u = tail(every_u, tau=tau, sigma=sigma, dim=dim)
            start = 0
            for (gi, ci, q, w, const), (u, inverse) in zip(lin, parts):
                p = p_u[at[start:start + u.size]][inverse]
                start += u.size
                vals[(gi, ci)] = weighted_sum(w, p, const, groups=inverse)
        return vals


    def evaluate(self, tau: float, alpha: float, sigma: float, dim: int,
                 every: bool = False) -> tuple[float, list[tuple[str, _Cand, float]]]:
        """The combined bound and, per evaluated generator, its smallest candidate and value."""
        idx = range(len(self.gens)) if every else self.active
        vals = self.values(tau, alpha, sigma, dim, every)
        per = []
        for gi in idx:
            name, cands = self.gens[gi]
            v, ci = min((vals[(gi, ci)], ci) for ci in range(len(cands)))  # [proof:min-over-bounds]
            per.append((name, cands[ci], v))
        values = [v for _, _, v in per]
        if self.how == "max":  # [proof:combine]
            total = max(values)
        else:  # the uniform mixture of each unit's generators; units (models) by max, each its own claim
            total = max(_mean_up([values[j] for j in idx]) for idx in unit_groups([p[0] for p in per]).values())  # [proof:units]
        return total, per


def _mean_up(values: list[float]) -> float:
    """Mean rounded up, at most 1."""
    total = math.fsum(values) / len(values)
    return min(1.0, math.nextafter(total, math.inf) if total > 0 else 0.0)


def _is_probability(c: _Cand) -> bool:
    """The candidate's value is the violation probability itself: a full-population census (no neighbour
    filled in at the range bound) with the centre's shift known exactly (fixed centre, or per-neighbour s²)."""
    r = c.record
    return (c.unit.NAME == "full-population" and isinstance(r, FullPopulation) and r.filled == 0
            and (r.shift_ratio is None or r.shift_sq is not None))


def _exact(how: str, per: list[tuple[str, _Cand, float]]) -> bool:
    """Whether the combined value is the violation probability itself (not an upper bound): the binding
    generator's (max) or every generator of the binding unit's (mixture) value is."""
    if how == "max":
        return _is_probability(max(per, key=lambda p: p[2])[1])
    groups = list(unit_groups([p[0] for p in per]).values())
    binding = max(groups, key=lambda idx: _mean_up([per[j][2] for j in idx]))
    return all(_is_probability(per[j][1]) for j in binding)


def _size(r: Record) -> float:
    if isinstance(r, AlmostSure):
        return r.A
    if isinstance(r, Moments):
        return r.U2
    if isinstance(r, FullPopulation):
        return float(np.sum(r.probs * r.sq_norms))
    if isinstance(r, Sample):
        return float(np.mean(r.sq_norms))
    if isinstance(r, RandomJudge):
        return float(r.levels[0] * r.upper[0])
    if isinstance(r, HighProbability):
        return float(r.A * r.A)
    return 0.0  # pragma: no cover


# --------------------------------------------------------------------------- searches
def _round_down(x: float) -> float:
    return math.nextafter(x, 0.0) if x > 0 else x



def _alpha_star(F: Callable[[float], float], delta: float, hi: float = 1.0, rtol: float = 1e-12) -> float:
    """Largest alpha in [0, hi] with F(alpha) <= delta (F nondecreasing); 0.0 when only alpha=0 (or none) works.

    Bisection keeping the feasible end; the returned value was evaluated and is feasible (or 0.0)."""
    if F(hi) <= delta:
        return hi
    lo = 0.0
    if F(lo) > delta:
        return 0.0
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= rtol * hi:
            break
        if F(mid) <= delta:  # [proof:safe-end] lo is always a point whose bound was evaluated <= delta
            lo = mid
        else:
            hi = mid
    return lo


def _alpha_zero(F0: Callable[[float], float], delta: float, rtol: float = 1e-12) -> float:
    """``alpha*(sigma = 0)`` without the cap at 1 (``inf`` when every alpha up to 1e8 is feasible)."""
    hi = 1.0
    while F0(hi) <= delta:
        if hi >= _ALPHA_CEIL:
            return math.inf
        hi *= 4.0
    return _alpha_star(F0, delta, hi, rtol=rtol)


def _sigma_star(G: Callable[[float], float], delta: float, hi: float, lo: float = 0.0,
                rtol: float = 1e-12, grid: int = 12) -> float | None:
    """Largest verified sigma in [lo, hi] with G(sigma) <= delta (None when none is found).

    The bounds need not be monotone in sigma (noise can lower a worst case whose mass sits just above
    tau), so a grid of ``grid`` points is scanned first; the bisection then runs between the largest
    feasible grid point and the next one, keeping the feasible end.  The result was evaluated."""
    pts = [lo + (hi - lo) * i / grid for i in range(grid + 1)]
    ok = [i for i, s in enumerate(pts) if G(s) <= delta]  # [proof:sigma-scan]
    if not ok:
        return None
    i = ok[-1]
    if i == grid:
        return hi
    lo, hi = pts[i], pts[i + 1]
    floor = pts[-1] * 1e-9  # a noise scale this small is reported as the feasible end found (often 0)
    for _ in range(_BISECT):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= rtol * hi or hi <= floor:
            break
        if G(mid) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


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
    legacy : biasbound.abb.Calibration or None
        For ``method="paper"``: the verbatim Cor. 3.2 calibration.
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
    legacy: Any = None
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
        out["legacy"] = None if self.legacy is None else self.legacy.to_dict()
        return out


# --------------------------------------------------------------------------- public API
def check(*, tau: float, delta: float, dim: int, alpha: float, sigma: float, knowledge: Any,
          method: str = "tight") -> tuple[bool, float]:
    """OpenDP-style check: ``(bound <= delta, bound)`` for a claimed ``(alpha, sigma)``.

    For ``method="paper"`` the bound is Theorem 3.1 at the symmetric split ``delta_B = delta/2``
    (so the check is Corollary 3.2 exactly).
    """
    where = "check"
    m = check_one_of(method, "method", where, METHODS)
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dl = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_int(dim, "dim", where, low=1)
    a = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)
    s = check_in_range(sigma, "sigma", where, low=0.0)
    k = Knowledge.of(knowledge)
    if m == "paper":
        rec = _paper_record(k)
        if s == 0:
            return False, 1.0
        from biasbound._bounds import _split
        from biasbound.abb import recompute_sigma_max

        v = paper._bound(t, a, s, d, rec, delta_B=dl / 2)
        dB, dD = _split(dl, dl / 2)  # Corollary 3.2's symmetric split, as abb.calibrate(method="paper") makes it
        smax = recompute_sigma_max(tau=t, delta_B=dB, delta_Delta=dD, dim=d, bound="markov", radius="laurent-massart",
                                   sensitivity=math.sqrt(rec.U2), center_term=math.sqrt(rec.shift_U2 or 0.0), alpha=a)
        return bool(0 < s <= smax), v
    v, _ = _Plan(k, m).evaluate(t, a, s, d)
    return bool(v <= dl), v


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
    m = check_one_of(method, "method", where, METHODS)
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dl = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_int(dim, "dim", where, low=1)
    nn = check_int(n, "n", where, low=2)
    k = Knowledge.of(knowledge)
    if unit is not None and m == "tight":
        from biasbound.bounds import unit as _unit

        _unit(unit)  # a known name (one error sentence otherwise)
        plan = _Plan(k, m, only=unit)
        return _frontier(lambda a, s: plan.evaluate(t, a, s, d)[0], t, dl, d, nn, allow_zero=True)
    F = _bound_fn(k, m, t, d, dl)
    return _frontier(F, t, dl, d, nn, allow_zero=(m == "tight"))


def _bound_fn(k: Knowledge, method: str, tau: float, dim: int, delta: float) -> Callable[[float, float], float]:
    if method == "paper":
        rec = _paper_record(k)
        return lambda a, s: paper._bound(tau, a, s, dim, rec, delta_B=delta / 2) if s > 0 else paper._bound(tau, a, 0.0, dim, rec)
    plan = _Plan(k, method)
    return lambda a, s: plan.evaluate(tau, a, s, dim)[0]


def _frontier(F: Callable[[float, float], float], tau: float, delta: float, dim: int, n: int,
              allow_zero: bool, at: tuple[float, float] | None = None) -> list[dict[str, float]]:
    """``alpha*(sigma)`` on ``n`` noise scales from 0 to the noise-only maximum, denser towards it (where the frontier
    falls steeply), plus the chosen point ``at = (sigma, alpha*(sigma))`` when given."""
    s_hi = noise_only_sigma(tau, delta, dim)
    out = []
    for i in range(n):
        u = i / (n - 1)
        s = s_hi * (1.0 - (1.0 - u) ** 2)
        if s == 0 and not allow_zero:
            s = s_hi * 1e-6
        a = _alpha_star(lambda al: F(al, s), delta, rtol=1e-4)  # plotted data: coarse, still the safe end
        out.append({"sigma": float(s), "alpha": float(a)})
    if at is not None and all(p["sigma"] != at[0] for p in out):
        out.append({"sigma": float(at[0]), "alpha": float(at[1])})
        out.sort(key=lambda p: p["sigma"])
    return out


def _paper_record(k: Knowledge) -> Moments:
    """One Moments record combining the generators the paper's way (max, or RMS for a mixture)."""
    us, ss, betas, point = [], [], [], False
    for name, recs in k.generators:
        mom = [r for r in recs if isinstance(r, Moments)]
        if not mom:
            raise InputError(f"The knowledge of generator {name!r} must hold a Moments record for method='paper'. Got none instead.")
        r = mom[0]
        us.append(r.U2)
        ss.append(paper._centre_rms(r) ** 2)
        if r.beta is None:
            point = True
        else:
            betas.append(r.beta)
    if k.how == "max":
        U2, S2 = max(us), max(ss)
    else:  # the mixture within each unit, the max over units
        groups = unit_groups([n for n, _ in k.generators]).values()
        U2 = max(math.fsum(us[i] for i in idx) / len(idx) for idx in groups)
        S2 = max(math.fsum(ss[i] for i in idx) / len(idx) for idx in groups)
    beta = None if point else math.fsum(betas)  # 0.0: every moment is known exactly
    return Moments(U2=U2, beta=beta, shift_U2=S2 if any(ss) else None)


def calibrate_knowledge(
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
    where = "calibrate_knowledge"
    m = check_one_of(method, "method", where, METHODS)
    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    dl = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    d = check_int(dim, "dim", where, low=1)
    ts = check_in_range(tau_split, "tau_split", where, low=0.0, high=1.0, low_open=True, high_open=True)
    al = None if alpha is None else check_in_range(alpha, "alpha", where, low=0.0, high=1.0, low_open=True)
    sg = None if sigma is None else check_in_range(sigma, "sigma", where, low=0.0)
    nf = check_int(frontier_points, "frontier_points", where, low=0, high=10_000)
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
    plan = _Plan(k, m)

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
    else:  # only min(1, alpha*(0)) is reported: the same search without looking past alpha = 1
        amax = _alpha_star(lambda a: F(a, 0.0), dl, 1.0, rtol=rt)
    if al is None and sg is None:
        if a0 <= 0:
            raise InfeasibleCertificateError(
                f"tau={t:g} cannot be certified (delta={dl:g}) for any alpha in (0, 1]: even without noise the bound "
                "exceeds delta; raise tau or delta, or add knowledge.", alpha_max=0.0)
        # [proof:default-point] the noise gets tau_split of its room (Algorithm 1's symmetric split), the shrinkage
        # is the largest the knowledge allows there: judges that move less get a larger alpha at the same noise
        s_ref = _round_down(ts * s_hi)
        a_ref = _alpha_star(lambda a: F(a, s_ref), dl)
        if a_ref > 0:
            al, sg = a_ref, s_ref
            rule = (f"default rule: sigma = tau_split * sigma_noise with tau_split={ts:g} and sigma_noise = "
                    f"tau/sqrt(2 chi2.isf(delta, d)) = {s_hi:.6g} (the most noise any certificate allows): the noise gets "
                    "tau_split of its room, as Algorithm 1's symmetric split gives it half of tau; alpha = alpha*(sigma), "
                    "the largest verified shrinkage at that noise — so judges that move the scores less get a larger alpha")
        else:
            al = min(1.0, ts * a0)
            rule = (f"default rule: no shrinkage works at tau_split={ts:g} of the largest noise, so alpha = "
                    f"tau_split * alpha*(0) = {al:.6g} (alpha*(0) the largest noiseless shrinkage) and sigma = the largest "
                    "verified noise at that alpha")
    elif al is not None and sg is None:
        rule = f"alpha={al:g} given; sigma = the largest verified noise at that alpha"
    elif al is None:
        rule = f"sigma={sg:g} given; alpha = the largest verified shrinkage at that noise"
    else:
        rule = f"alpha={al:g} and sigma={sg:g} given; checked"
    if sg is None:
        if al is None:  # the branches above set alpha whenever sigma is still free
            raise RuntimeError("calibrate_knowledge reached the sigma search without an alpha")
        smax = _sigma_star(lambda s: F(al, s), dl, s_hi)
        if smax is None:
            _infeasible(t, dl, al, amax)
        sg = smax
    else:
        a_s = _alpha_star(lambda a: F(a, sg), dl, rtol=rt)
        if al is None:
            if a_s <= 0:
                raise InfeasibleCertificateError(
                    f"sigma={sg:g} is too large to certify tau={t:g} at delta={dl:g} for any alpha (the noise alone "
                    f"exceeds it above sigma={s_hi:.4g}).", alpha_max=amax)
            al = a_s
        # the given point's bound was checked (or is checked below); sigma_max is the largest verified noise found
        # above it (the bound need not be monotone in sigma)
        smax = _sigma_star(lambda s: F(al, s), dl, s_hi, lo=sg, rtol=rt, grid=8)
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
        exact=_exact(plan.how, per), beta_spent=k.beta_total,
        point_estimate=any(isinstance(r, Moments) and r.beta is None for r in k.records),
        tau_split=ts, default_rule=_rule or rule, candidates=tuple(cands), frontier=tuple(pts), knowledge=k,
        checked_point=checked, frontier_points=nf,
    )


def recheck(calibration: BoundCalibration, *, knowledge: Any = None, dim: int | None = None,
            frontier_points: int | None = None) -> BoundCalibration:
    """The same ``(alpha, sigma)`` re-certified for other knowledge and/or another dimension.

    Used for per-model certificates under one judge-level calibration: each model gets its own records and
    its own ``d``; the bound is recomputed at the judge's point and must stay ``<= delta``.

    Raises
    ------
    InfeasibleCertificateError
        When the bound at ``(alpha, sigma)`` exceeds ``delta`` for this knowledge and dimension.
    """
    if not isinstance(calibration, BoundCalibration):
        raise TypeError(f"The 'calibration' parameter of recheck must be a BoundCalibration. Got {type(calibration).__name__} instead.")
    c = calibration
    return calibrate_knowledge(c.knowledge if knowledge is None else knowledge, tau=c.tau, delta=c.delta,
                               dim=c.dim if dim is None else dim, method=c.method, tau_split=c.tau_split,
                               frontier_points=c.frontier_points if frontier_points is None else frontier_points,
                               alpha=c.alpha, sigma=c.sigma, _rule=c.default_rule)


def _candidate_records(k: Knowledge, plan: _Plan, method: str, tau: float, delta: float, dim: int, alpha: float,
                       sigma: float, selected: set[tuple[str, int, str]], searches: bool) -> list[dict[str, Any]]:
    out = []
    s_hi = noise_only_sigma(tau, delta, dim)
    vals = plan.values(tau, alpha, sigma, dim, every=True)
    at = {(c.generator, c.index, c.unit.NAME): vals[(gi, ci)]
          for gi, (_, cs) in enumerate(plan.gens) for ci, c in enumerate(cs)}
    for name, recs in k.generators:
        for i, r in enumerate(recs):
            for u in UNITS:
                reason = u.applies(r)
                if method == "paper" and u is not paper:
                    reason = reason or "method='paper' uses Corollary 3.2 only"
                rec: dict[str, Any] = {"generator": name, "record": i, "knowledge": r.to_dict()["kind"], "unit": u.NAME,
                                       "applicable": reason is None, "reason": reason or "", "exact": bool(u.EXACT),
                                       "beta": float(r.beta or 0.0), "value": None, "alpha_at_sigma": None,
                                       "sigma_at_alpha": None, "selected": False}
                if reason is None:
                    c = _Cand(name, i, u, r)
                    rec["value"] = at[(name, i, u.NAME)]
                    if searches:
                        rec["alpha_at_sigma"] = _alpha_star(lambda a, c=c: _cand_bound(c, tau, a, sigma, dim), delta,
                                                            rtol=1e-6)
                        rec["sigma_at_alpha"] = _sigma_star(lambda s, c=c: _cand_bound(c, tau, alpha, s, dim), delta,
                                                            s_hi, rtol=1e-6, grid=8)
                    rec["selected"] = (name, i, u.NAME) in selected
                    if not rec["selected"]:
                        rec["reason"] = "applies; another bound is smaller at the chosen point"
                    else:
                        rec["reason"] = "smallest bound for this generator at the chosen point"
                out.append(rec)
    return out


def _infeasible(tau: float, delta: float, alpha: float, amax: float) -> None:
    from biasbound.abb import _floor_sig

    fix = (f"Choose alpha < {_floor_sig(amax)} (alpha_max), raise tau or delta, or add knowledge." if amax > 0 else
           "No alpha in (0, 1] works: raise tau or delta, or add knowledge.")
    raise InfeasibleCertificateError(
        f"tau={tau:g} cannot be certified at alpha={alpha:g} (delta={delta:g}) even without noise. {fix}", alpha_max=amax)


def _calibrate_paper(k: Knowledge, tau: float, delta: float, dim: int, alpha: float | None, sigma: float | None,
                     tau_split: float, nf: int, searches: bool) -> BoundCalibration:
    from biasbound.abb import calibrate as legacy_calibrate

    if sigma is not None and sigma == 0:
        raise InputError("The 'sigma' parameter of calibrate_knowledge must be > 0 for method='paper' (Theorem 3.1). Got 0 instead.")
    rec = _paper_record(k)
    kw: dict[str, Any] = dict(tau=tau, delta=delta, dim=dim, alpha=alpha, method="paper", tau_split=tau_split,
                              center_sensitivity=math.sqrt(rec.shift_U2 or 0.0))
    if rec.beta:  # a confidence bound (beta > 0); beta = 0 (exact) and None (point estimate) use the value itself
        kw.update(beta=rec.beta, sensitivity_ucb=math.sqrt(rec.U2), sensitivity=math.sqrt(rec.U2))
    else:
        kw.update(sensitivity=math.sqrt(rec.U2))
    if sigma is not None and alpha is None:
        # Corollary 3.2 solved for alpha at a given sigma (symmetric split), rounded down and checked
        F = _bound_fn(k, "paper", tau, dim, delta)
        al = _alpha_star(lambda a: F(a, sigma), delta)
        if al <= 0:
            raise InfeasibleCertificateError(f"sigma={sigma:g} is too large to certify tau={tau:g} at delta={delta:g} "
                                             "under Corollary 3.2 for any alpha.", alpha_max=0.0)
        kw["alpha"] = al
    leg = legacy_calibrate(**kw)
    if sigma is not None:
        if sigma > leg.sigma_max:
            raise InfeasibleCertificateError(f"sigma={sigma:g} exceeds sigma_max={leg.sigma_max:.6g} of Corollary 3.2 at "
                                             f"alpha={leg.alpha:g}.", alpha_max=leg.alpha_max)
        leg = legacy_calibrate(**{**kw, "alpha": leg.alpha, "sigma": sigma})
    value = paper._bound(tau, leg.alpha, leg.sigma, dim, rec, delta_B=leg.delta_B)
    rule = ("Corollary 3.2 (symmetric split delta_B = delta_Delta = delta/2, Laurent–Massart radius, Markov); "
            + (f"alpha={alpha:g} given" if alpha is not None else
               f"sigma={sigma:g} given, alpha solved" if sigma is not None else
               f"alpha from tau_split={tau_split:g} (Algorithm 1's split of tau)") + "; sigma = sigma_max rounded down")
    F = _bound_fn(k, "paper", tau, dim, delta)
    cands = _candidate_records(k, _Plan(k, "paper"), "paper", tau, delta, dim, leg.alpha, leg.sigma,
                               {(n, 0, "paper") for n, _ in k.generators}, searches)
    return BoundCalibration(
        method="paper", tau=tau, delta=delta, dim=dim, alpha=leg.alpha, sigma=leg.sigma, sigma_max=leg.sigma_max,
        alpha_max=leg.alpha_max, alpha_at_sigma=_alpha_star(lambda a: F(a, leg.sigma), delta), bound_value=float(value),
        bound_used="paper", exact=False, beta_spent=float(rec.beta or 0.0), point_estimate=rec.beta is None,
        tau_split=tau_split, default_rule=rule, candidates=tuple(cands),
        frontier=tuple(_frontier(F, tau, delta, dim, nf, allow_zero=False,
                                 at=(leg.sigma, _alpha_star(lambda a: F(a, leg.sigma), delta))) if nf else ()),
        knowledge=k, legacy=leg,
    )


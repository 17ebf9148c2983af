"""The combined bound: every applicable (unit, record) pair per generator, combined over generators (private).

Per generator the bound is the pointwise minimum over every applicable (unit, record) pair — valid on the
intersection of the records' events, so the ``beta`` of every record is spent (summed); generators combine by max
(each generator) or mean (uniform mixture). Generators named ``"UNIT | GEN"`` (a judge's models sharing one point)
are grouped per unit: the mixture is taken within each unit and units combine by max (each model's claim is its
own mixture). ``method="paper"`` takes the paper unit alone, on the one Moments record that combines the
generators the paper's way (:func:`paper_record`).

The calibrator (:mod:`biasbound.calibration`) searches over this bound; the bound never imports the calibrator.
numpy/scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from biasbound._exceptions import InputError
from biasbound._rounding import above
from biasbound.bounds import (
    almost_sure,
    full_population,
    high_probability,
    moments,
    paper,
    random_judge,
    sampled_population,
)
from biasbound.bounds._knowledge import (
    FullPopulation,
    Knowledge,
    Moments,
    Record,
)
from biasbound.bounds._tail import tail, weighted_sum

__all__ = ["UNITS", "UNIT_SEPARATOR", "Candidate", "Plan", "candidate_bound", "exact", "paper_record", "unit_groups"]

#: every bound unit, in the order the calibrator tries them
UNITS: tuple[ModuleType, ...] = (almost_sure, moments, full_population, sampled_population, random_judge, high_probability,
                                 paper)

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


@dataclass(frozen=True)
class Candidate:
    generator: str
    index: int  # position of the record within its generator
    unit: ModuleType
    record: Record


def _prepare(k: Knowledge, method: str, only: str | None = None) -> list[tuple[str, list[Candidate]]]:
    """Applicable (unit, record) pairs per generator (``only``: that unit alone)."""
    plan = []
    for name, recs in k.generators:
        cands = []
        for i, r in enumerate(recs):
            for u in UNITS:
                if (method == "paper" and u is not paper) or (only is not None and u.NAME != only):
                    continue
                if u.applies(r) is None:
                    cands.append(Candidate(name, i, u, r))
        if not cands:
            raise InputError(f"The knowledge of generator {name!r} allows no bound for method={method!r}.")
        plan.append((name, cands))
    return plan


def candidate_bound(c: Candidate, tau: float, alpha: float, sigma: float, dim: int) -> float:
    return float(c.unit._bound(tau, alpha, sigma, dim, c.record))


def _dominated(r: Record, s: Record) -> bool:
    """Every unit's bound for ``r`` is <= its bound for ``s`` (same kind and shift ratio; monotone in the record):
    each kind answers for itself (:meth:`~biasbound.bounds._knowledge.KnowledgeKind.dominated_by`)."""
    return r.dominated_by(s)  # [proof:dominated]


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


class Plan:
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
            # each generator's records in their order; one generator's bound (the minimum over its records) is <= another's
            # when they hold as many records and each of its records is dominated by the other's at the same place
            recs = {i: tuple({x.index: x.record for x in c}.values()) for i, (_, c) in enumerate(self.gens)}
            order = sorted(recs, key=lambda i: -_size(recs[i][0]))
            kept: list[int] = []
            for i in order:
                if not any(len(recs[i]) == len(recs[j]) and all(_dominated(a, b) for a, b in zip(recs[i], recs[j]))
                           for j in kept):
                    kept.append(i)
            drop = set(recs) - set(kept)
            self.active = [i for i in range(len(self.gens)) if i not in drop]
        # per candidate, its unit's weighted-sum form (None: the unit's own bound), looked up once
        self._linear = [[getattr(c.unit, "_linear", None) for c in cs] for _, cs in self.gens]
        self._memo: dict[tuple[float, float, float, int, bool], dict[tuple[int, int], float]] = {}

    def values(self, tau: float, alpha: float, sigma: float, dim: int, every: bool = False) -> dict[tuple[int, int], float]:
        """The bound of every candidate (generator index, candidate index) of the evaluated generators.

        A pure function of its arguments, remembered per plan: a point the searches (or the final evaluation
        and the candidate records) revisit is computed once."""
        return dict(self._remembered(tau, alpha, sigma, dim, every))  # a copy: the caller may change it

    def _remembered(self, tau: float, alpha: float, sigma: float, dim: int, every: bool) -> dict[tuple[int, int], float]:
        """:meth:`values`' remembered dict itself (read only: :meth:`evaluate` reads it, copying it at every point of
        a search cost as much as the evaluation for a judge's hundreds of models)."""
        memo_key = (tau, alpha, sigma, dim, every)
        out = self._memo.get(memo_key)
        if out is None:
            out = self._memo[memo_key] = self._values(tau, alpha, sigma, dim, every)
        return out

    def _values(self, tau: float, alpha: float, sigma: float, dim: int, every: bool) -> dict[tuple[int, int], float]:
        idx = range(len(self.gens)) if every else self.active
        lin: list[tuple[int, int, np.ndarray, np.ndarray, float]] = []
        vals: dict[tuple[int, int], float] = {}
        for gi in idx:
            for ci, (c, f) in enumerate(zip(self.gens[gi][1], self._linear[gi])):
                if f is None:
                    vals[(gi, ci)] = candidate_bound(c, tau, alpha, sigma, dim)
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
            for (gi, ci, _q, w, const), (u, inverse) in zip(lin, parts):
                p = p_u[at[start:start + u.size]][inverse]
                start += u.size
                vals[(gi, ci)] = weighted_sum(w, p, const, groups=inverse)
        return vals


    def evaluate(self, tau: float, alpha: float, sigma: float, dim: int,
                 every: bool = False) -> tuple[float, list[tuple[str, Candidate, float]]]:
        """The combined bound and, per evaluated generator, its smallest candidate and value."""
        idx = range(len(self.gens)) if every else self.active
        vals = self._remembered(tau, alpha, sigma, dim, every)
        per = []
        for gi in idx:
            name, cands = self.gens[gi]
            if len(cands) == 1:  # one candidate: the minimum below
                v, ci = vals[(gi, 0)], 0
            else:
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
    return min(1.0, above(total) if total > 0 else 0.0)


def _is_probability(c: Candidate) -> bool:
    """The candidate's value is the violation probability itself: a full-population census (no neighbour
    filled in at the range bound) with the centre's shift known exactly (fixed centre, or per-neighbour s²)."""
    r = c.record
    return (c.unit.NAME == "full-population" and isinstance(r, FullPopulation) and r.filled == 0
            and (r.shift_ratio is None or r.shift_sq is not None))


def exact(how: str, per: list[tuple[str, Candidate, float]]) -> bool:
    """Whether the combined value is the violation probability itself (not an upper bound): the binding
    generator's (max) or every generator of the binding unit's (mixture) value is."""
    if how == "max":
        return _is_probability(max(per, key=lambda p: p[2])[1])
    groups = list(unit_groups([p[0] for p in per]).values())
    binding = max(groups, key=lambda idx: _mean_up([per[j][2] for j in idx]))
    return all(_is_probability(per[j][1]) for j in binding)


def _size(r: Record) -> float:
    return r.order_size()


def paper_record(k: Knowledge) -> Moments:
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

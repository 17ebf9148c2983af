"""What is known about ``Delta = f(D) - f(D')``: small typed records, built once from the data.

Each record states one fact about the neighbour distribution of one generator and the failure
probability ``beta`` it spends (0 for facts that hold surely):

* :class:`AlmostSure` — ``||Delta|| <= A`` almost surely (the score range, Hamming-k).
* :class:`Moments` — ``E||Delta||^2 <= U2`` at confidence ``1 - beta`` (the paper's route; ``beta=None``
  is the paper's point estimate taken as the true value), optionally with ``||Delta|| <= A``.
* :class:`FullPopulation` — every neighbour of the batch was judged: the distribution of ``||Delta||^2``
  under ``T`` (uniform over the population) is known exactly; no ``beta``.
* :class:`Sample` — ``m`` neighbours drawn uniformly without replacement, by a recorded seed, from a
  finite population of ``N``; ``beta`` is the failure probability of the confidence band.
* :class:`RandomJudge` — a random judge: every recorded neighbour verdict is one draw of the judge;
  per item the share of its draws above each level of ``||Delta||^2``, summed over ``n`` independent
  items, gives joint upper bounds on the tail of the (item, answer) distribution at ``1 - beta``.

A batch-mean shrinkage centre enters as the shift ratio ``rho`` (``s^2 <= rho ||Delta||^2`` a.s.,
``s = sqrt(d) |mean(Delta)|``; ``rho = k/d`` for Hamming-k, 1 always) or, for a full population, as
the exact per-neighbour ``s^2`` (``shift_sq``).  ``shift_ratio=None`` means the centre is fixed within
the batch.  See ``docs/proofs/knowledge.md``.

:class:`Knowledge` groups records per generator and says how generators combine (``"max"``: the
bound holds for each generator separately; ``"mixture"``: for a generator picked uniformly at random).

numpy only; records serialise to plain dicts (``to_dict``/``knowledge_from_dict``) with the
statistics the bounds use (distinct values and counts for populations and samples), so a
certificate can recompute every bound from them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol, Union, cast

import numpy as np

from biasbound._exceptions import InputError
from biasbound.bounds import _layer_cake, _survival
from biasbound._rounding import above
from biasbound._validation import check_finite_array, check_in_range, check_int, check_one_of

__all__ = ["KINDS", "AlmostSure", "AuditRole", "FullPopulation", "HighProbability", "Knowledge", "KnowledgeKind", "Moments",
           "RandomJudge", "Record", "Sample", "Wording", "facts", "knowledge_from_dict"]

COMBINE = ("max", "mixture")


class AuditRole(NamedTuple):
    """What given neighbour distances are to a certificate's calibration record (:meth:`KnowledgeKind.audit_role`).

    ``kind`` is "recheck" (the record's own data: recomputed, not new evidence) or "held-out" (the record's sample
    set aside, ``keep`` the positions of the other distances, audited); ``filled`` of the record's values entered at
    the range bound."""

    kind: str
    reason: str
    filled: int = 0
    keep: np.ndarray | None = None


class Wording(NamedTuple):
    """How a kind writes numbers in the guarantee sentence: the formatter and the user's units."""

    fmt: Callable[[float], str]
    scale: float = 1.0
    unit: str = "score units"


class KnowledgeKind(Protocol):
    """What every kind of knowledge answers for itself; consumers loop over records and never test their type.

    A new kind implements all of it (and ``to_dict``/``record_from_dict``, a bound unit in :data:`UNITS` whose
    ``applies`` accepts it, and a proof note); docs/DESIGN.md "Knowledge kinds answer for themselves" lists it."""

    KIND: ClassVar[str]  # the ``kind`` of its dict form
    RANDOM_JUDGE: ClassVar[bool]  # its confidence is over a random judge's recorded answers (not a neighbour sample)
    CALIBRATION_DATA: ClassVar[bool]  # it holds the neighbour data it was calibrated on (an audit recognises them)
    EXACT_LAW: ClassVar[bool]  # it is the exact law of ||Delta||^2 over the whole population
    CONTINUOUS_SURVIVAL: ClassVar[bool]  # its survival changes between jump points (the radius bisects there)
    RECHECK_UNIT: ClassVar[str | None]  # the unit whose bound a recheck of its own data recomputes (None: the exact
    #                                     probability over the given neighbours)
    shift_ratio: float | None

    @property
    def beta(self) -> float | None: ...  # failure probability spent (None: a point estimate)

    @property
    def point_estimate(self) -> bool: ...  # a measured value taken as the true one (no confidence statement)

    @property
    def assumes_deterministic_judge(self) -> bool: ...  # each recorded verdict taken as the judge's only answer

    def to_dict(self) -> dict[str, Any]: ...

    def survivals(self, t: np.ndarray) -> np.ndarray: ...  # worst-case Pr[||Delta|| > t] at every threshold

    def jumps(self) -> list[np.ndarray]: ...  # the thresholds where that survival jumps

    def order_size(self) -> float: ...  # a size to order generators by (largest first) for domination

    def dominated_by(self, other: Record) -> bool: ...  # every unit's bound for it <= for ``other``

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None: ...  # given squared distances vs its data


    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]: ...  # facts


def _same_kind(r: Any, s: Any) -> bool:
    """Same kind and the same shift ratio: the condition of every domination (monotone in the record)."""
    return type(r) is type(s) and r.shift_ratio == s.shift_ratio


def _keys(x: np.ndarray) -> list[float]:
    """Values rounded to 12 significant digits: recorded and re-read squared distances compare equal."""
    return [float(f"{v:.12g}") for v in np.asarray(x, dtype=float).tolist()]


def split_recorded(sq: np.ndarray, recorded: np.ndarray) -> np.ndarray | None:
    """Indices of ``sq`` left after removing one copy of each recorded value, or None when ``recorded``
    is not contained in ``sq`` (as multisets)."""
    need = Counter(_keys(recorded))
    keep = []
    for i, k in enumerate(_keys(sq)):
        if need.get(k, 0) > 0:
            need[k] -= 1
        else:
            keep.append(i)
    if any(v > 0 for v in need.values()):
        return None
    return np.asarray(keep, dtype=np.int64)


def level_sums(sq: np.ndarray, rec: RandomJudge) -> np.ndarray:
    """``S_k`` of a random-judge record recomputed from one draw per item: the number of squared distances
    above ``x_{k-1}`` (``x_0 = 0``), a distance within 1e-9 (relative) of a level taken as that level — the
    pipeline's rounding (``pipeline/_knowledge.py``, ``_SNAP``)."""
    lower = np.concatenate([[0.0], rec.levels[:-1]])
    tol = 1e-9 * float(rec.levels[-1])
    return np.array([float(np.count_nonzero(sq > x + tol)) for x in lower])


def _ratio(rho: float | None, where: str) -> float | None:
    if rho is None:
        return None
    return check_in_range(rho, "shift_ratio", where, low=0.0, high=1.0)


def _sq_array(values: Any, name: str, where: str) -> np.ndarray:
    arr = check_finite_array(values, name, where, ndim=1)
    if np.any(arr < 0):
        raise InputError(f"The {name!r} parameter of {where} must hold squared norms >= 0. Got minimum {arr.min()!r} instead.")
    arr = np.sort(arr)
    arr.setflags(write=False)
    return arr


def _hist(arr: np.ndarray) -> dict[str, Any]:
    v, c = np.unique(arr, return_counts=True)
    return {"values": v.tolist(), "counts": c.astype(int).tolist()}


def _unhist(d: Mapping[str, Any], where: str) -> np.ndarray:
    v = np.asarray(d["values"], dtype=float)
    c = np.asarray(d["counts"], dtype=np.int64)
    if v.shape != c.shape or np.any(c < 1):
        raise InputError(f"The knowledge record of {where} must hold matching 'values' and positive 'counts'.")
    return np.repeat(v, c)


@dataclass(frozen=True)
class AlmostSure:
    """``||Delta||_2 <= A`` almost surely (no failure probability).

    Parameters
    ----------
    A : float
        The bound, ``>= 0`` (e.g. ``R sqrt(k)`` for Hamming-k neighbours on score range ``R``).
    shift_ratio : float or None
        Batch-mean centre: ``s^2 <= rho ||Delta||^2`` a.s.; None for a centre fixed within the batch.
    note : str
        Where the bound comes from (e.g. ``"score range 1, Hamming-1"``).
    """

    A: float
    shift_ratio: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "A", check_in_range(self.A, "A", "AlmostSure", low=0.0))
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, "AlmostSure"))

    @property
    def beta(self) -> float:
        """Failure probability spent: 0 (the bound holds surely)."""
        return 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "almost-sure", "A": self.A, "shift_ratio": self.shift_ratio, "beta": 0.0, "note": self.note}

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "almost-sure"
    RECHECK_UNIT: ClassVar[str | None] = None
    RANDOM_JUDGE: ClassVar[bool] = False
    CALIBRATION_DATA: ClassVar[bool] = False
    EXACT_LAW: ClassVar[bool] = False
    CONTINUOUS_SURVIVAL: ClassVar[bool] = False
    point_estimate: ClassVar[bool] = False
    assumes_deterministic_judge: ClassVar[bool] = False

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.almost_sure(self, t)

    def jumps(self) -> list[np.ndarray]:
        return [np.array([float(self.A)])]

    def order_size(self) -> float:
        return self.A

    def dominated_by(self, other: Record) -> bool:
        return _same_kind(self, other) and self.A <= cast(AlmostSure, other).A

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        return None

    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        return ["every neighbour moving the scores by at most the recorded bound (almost surely)"] if mine else []



@dataclass(frozen=True)
class Moments:
    """``E||Delta||^2 <= U2`` at confidence ``1 - beta``, optionally with ``||Delta|| <= A`` a.s.

    Parameters
    ----------
    U2 : float
        Upper bound on the mean squared distance (the square of an RMS sensitivity bound).
    beta : float or None
        Failure probability of ``U2`` over the neighbour sample; None: ``U2`` is a point estimate
        taken as the true value (the paper's Algorithm 1 — no confidence statement).
    A : float or None
        Almost-sure bound on ``||Delta||`` when known.
    shift_ratio : float or None
        Batch-mean centre: ``s^2 <= rho ||Delta||^2`` a.s. (None: fixed centre).
    shift_U2 : float or None
        Batch-mean centre: ``E s^2 <= shift_U2`` (covered by the same ``beta``); the paper's ``S_mu^2``.
    note : str
        Provenance.
    """

    U2: float
    beta: float | None = None
    A: float | None = None
    shift_ratio: float | None = None
    shift_U2: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        w = "Moments"
        object.__setattr__(self, "U2", check_in_range(self.U2, "U2", w, low=0.0))
        if self.beta is not None:
            object.__setattr__(self, "beta", check_in_range(self.beta, "beta", w, low=0.0, high=1.0, high_open=True))
        if self.A is not None:
            object.__setattr__(self, "A", check_in_range(self.A, "A", w, low=0.0))
            if self.U2 > self.A * self.A * (1 + 1e-12):
                raise InputError(f"The 'U2' parameter of {w} must be <= A^2 = {self.A * self.A:g}. Got {self.U2!r} instead.")
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, w))
        if self.shift_U2 is not None:
            object.__setattr__(self, "shift_U2", check_in_range(self.shift_U2, "shift_U2", w, low=0.0))
            if self.shift_ratio is None:
                object.__setattr__(self, "shift_ratio", 1.0)  # a batch centre; Cauchy-Schwarz always holds

    @property
    def centre(self) -> str:
        return "fixed" if self.shift_ratio is None else "batch"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "moments", "U2": self.U2, "beta": self.beta, "A": self.A, "shift_ratio": self.shift_ratio,
                "shift_U2": self.shift_U2, "note": self.note}

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "moments"
    RECHECK_UNIT: ClassVar[str | None] = None
    RANDOM_JUDGE: ClassVar[bool] = False
    CALIBRATION_DATA: ClassVar[bool] = False
    EXACT_LAW: ClassVar[bool] = False
    CONTINUOUS_SURVIVAL: ClassVar[bool] = True

    @property
    def point_estimate(self) -> bool:
        """``U2`` is a point estimate taken as the true value (no confidence statement)."""
        return self.beta is None

    @property
    def assumes_deterministic_judge(self) -> bool:
        """``beta = 0``: the moment computed over every neighbour, each verdict the judge's only answer."""
        return self.beta == 0.0

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.moments(self, t)

    def jumps(self) -> list[np.ndarray]:
        return [] if self.A is None else [np.array([float(self.A)])]

    def order_size(self) -> float:
        return self.U2

    def dominated_by(self, other: Record) -> bool:
        if not _same_kind(self, other) or self.shift_U2 is not None or other.shift_U2 is not None:  # type: ignore[union-attr]
            return False
        s = cast(Moments, other)
        a_ok = s.A is None or (self.A is not None and self.A <= s.A)
        return self.U2 <= s.U2 and a_ok and (self.beta is None) == (s.beta is None)

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        return None

    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        """The moments' facts, preceded by the deterministic-judge assumption of every kind that makes it (stated
        once, here: the moments are the last statistical facts of the sentence)."""
        moms = cast("list[Moments]", list(mine))
        facts = []
        if any(r.assumes_deterministic_judge for r in every):
            facts.append("the judge declared deterministic (an assumption: each recorded neighbour verdict is taken as the "
                         "judge's only answer to that neighbour)")
        if any(r.beta is None for r in moms):
            facts.append("the measured mean squared shift E‖Δ‖² taken as the true value (a point estimate, no confidence "
                         "level: this is not a guarantee, it holds only if the measured value is the true one)")
        elif any(r.beta for r in moms):
            facts.append("an upper confidence bound on the mean squared shift E‖Δ‖²")
        elif moms:
            facts.append("the mean squared shift E‖Δ‖² computed over every neighbour")
        return facts



@dataclass(frozen=True, eq=False)
class FullPopulation:
    """Every neighbour of the batch was judged: ``T`` is uniform over these ``||Delta||^2`` values.

    Parameters
    ----------
    sq_norms : array_like
        ``||Delta_i||^2`` for every neighbour in the population (one per item for Hamming-1 swaps).
    shift_sq : array_like or None
        Batch-mean centre: the exact ``s_i^2 = d mean(Delta_i)^2`` per neighbour (same order), each
        ``<= ||Delta_i||^2``.  Then the shrunk shift is known exactly.
    shift_ratio : float or None
        Batch-mean centre without per-neighbour shifts: ``s^2 <= rho ||Delta||^2``.
    note : str
        Provenance.
    filled : int
        How many of the values are not observed but entered at the almost-sure bound (items without an
        observed neighbour): the probability is then the worst case over their unknown values, not the
        probability of a fully judged population.
    weights : array_like or None
        ``T``'s probability of each value (same order, each > 0, summing to 1): the exact law of ``||Delta||^2``
        when the neighbours are not equally likely values (Hamming-k over a census: the distinct sums over
        k-subsets).  None = every value one equally likely neighbour.
    """

    sq_norms: Any
    shift_sq: Any = None
    shift_ratio: float | None = None
    note: str = ""
    filled: int = 0
    weights: Any = None

    def __post_init__(self) -> None:
        w = "FullPopulation"
        x = check_finite_array(self.sq_norms, "sq_norms", w, ndim=1)
        if np.any(x < 0):
            raise InputError(f"The 'sq_norms' parameter of {w} must hold squared norms >= 0. Got minimum {x.min()!r} instead.")
        p = None
        if self.weights is not None:
            p = check_finite_array(self.weights, "weights", w, ndim=1)
            if p.shape != x.shape or np.any(p <= 0) or not math.isclose(float(np.sum(p)), 1.0, rel_tol=1e-9):
                raise InputError(f"The 'weights' parameter of {w} must hold one probability > 0 per value ({x.size}), "
                                 f"summing to 1. Got {p.size} summing to {float(np.sum(p))!r} instead.")
            p = p / math.fsum(p.tolist())
        if self.shift_sq is not None:
            y = check_finite_array(self.shift_sq, "shift_sq", w, ndim=1)
            if y.shape != x.shape:
                raise InputError(f"The 'shift_sq' parameter of {w} must hold one value per neighbour ({x.size}). Got {y.size} instead.")
            if np.any(y < 0) or np.any(y > x * (1 + 1e-12) + 1e-300):
                raise InputError(f"The 'shift_sq' parameter of {w} must lie in [0, sq_norms] (Cauchy–Schwarz). Got a value outside instead.")
            y = np.minimum(y, x)
            order = np.lexsort((y, x))
            x, y = x[order], y[order]
            y.setflags(write=False)
            object.__setattr__(self, "shift_sq", y)
        else:
            order = np.argsort(x, kind="stable")
            x = x[order]
        if p is not None:
            p = np.array(p[order], dtype=float)
            p.setflags(write=False)
        object.__setattr__(self, "weights", p)
        x = np.array(x, dtype=float)
        x.setflags(write=False)
        object.__setattr__(self, "sq_norms", x)
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, w))
        object.__setattr__(self, "filled", check_int(self.filled, "filled", w, low=0, high=x.size))

    @property
    def beta(self) -> float:
        return 0.0

    @property
    def m(self) -> int:
        return int(self.sq_norms.size)

    @property
    def probs(self) -> np.ndarray:
        """``T``'s probability of each value: the weights, or ``1/m`` each."""
        return np.full(self.m, 1.0 / self.m) if self.weights is None else self.weights

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": "full-population", "m": self.m, "sum_sq": float(np.sum(self.sq_norms)),
                               "max_sq": float(self.sq_norms.max()), "beta": 0.0, "shift_ratio": self.shift_ratio,
                               "note": self.note}
        if self.filled:
            out["filled"] = int(self.filled)
        if self.weights is not None:  # one entry per value, in the record's order
            out.update({"values": self.sq_norms.tolist(), "weights": self.weights.tolist()})
            if self.shift_sq is not None:
                out["shift_values"] = self.shift_sq.tolist()
        elif self.shift_sq is None:
            out.update(_hist(self.sq_norms))
        else:
            pairs, counts = np.unique(np.stack([self.sq_norms, self.shift_sq], axis=1), axis=0, return_counts=True)
            out.update({"values": pairs[:, 0].tolist(), "shift_values": pairs[:, 1].tolist(),
                        "counts": counts.astype(int).tolist()})
        return out

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "full-population"
    RECHECK_UNIT: ClassVar[str | None] = None
    RANDOM_JUDGE: ClassVar[bool] = False
    CALIBRATION_DATA: ClassVar[bool] = True
    EXACT_LAW: ClassVar[bool] = True
    CONTINUOUS_SURVIVAL: ClassVar[bool] = False
    point_estimate: ClassVar[bool] = False
    assumes_deterministic_judge: ClassVar[bool] = True

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.full_population(self, t)

    def jumps(self) -> list[np.ndarray]:
        return [np.sqrt(np.asarray(self.sq_norms, dtype=float))]

    def order_size(self) -> float:
        return float(np.sum(self.probs * self.sq_norms))

    def dominated_by(self, other: Record) -> bool:
        if not _same_kind(self, other):
            return False
        s = cast(FullPopulation, other)
        if self.shift_sq is not None or s.shift_sq is not None or self.weights is not None or s.weights is not None:
            return False
        t = np.union1d(self.sq_norms, s.sq_norms)  # r <=st s: the share above every threshold is no larger
        fr = 1.0 - np.searchsorted(self.sq_norms, t, side="right") / self.m
        fs = 1.0 - np.searchsorted(s.sq_norms, t, side="right") / s.m
        return bool(np.all(fr <= fs))

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        """The certificate's own census (its observed values, the filled ones left out): a recheck."""
        if self.weights is not None or not sq.size or not mine:
            return None
        observed = self.sq_norms[: self.m - self.filled] if self.filled else self.sq_norms  # filled values are the largest
        left = split_recorded(sq, observed)
        if left is None or left.size:
            return None
        return AuditRole("recheck", f"these are the {self.m - self.filled} neighbours the certificate was calibrated on "
                         "(its census" + (f"; {self.filled} unjudged counted at the range bound, as it counted them"
                                          if self.filled else "")
                         + "): the probability is recomputed exactly — a recheck, not new evidence", int(self.filled))

    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        pops = cast("list[FullPopulation]", list(mine))
        facts = []
        if any(r.filled == 0 for r in pops):
            facts.append("every neighbour of the batch judged, so the probability is computed exactly for a neighbour "
                         "drawn uniformly from them (no sampling, no confidence level)")
        for r in (r for r in pops if r.filled and r.weights is not None):  # Hamming-k: values of k-item subsets
            facts.append(f"the subsets of items holding an item whose neighbour was not judged ({r.filled} of the {r.m} "
                         "values of ||Δ||²) counted with that item moving its score by the most the score range allows (a "
                         "worst case over the unjudged ones, not a measured probability)")
        for r in (r for r in pops if r.filled and r.weights is None):
            facts.append(f"{r.filled} of the {r.m} neighbours not judged and counted as moving the scores by the most the "
                         "score range allows, the judged ones as observed (a worst case over the unjudged ones, not a "
                         "measured probability)")
        return facts



@dataclass(frozen=True, eq=False)
class Sample:
    """``m`` neighbours drawn uniformly without replacement (recorded seed) from a population of ``N``.

    Parameters
    ----------
    sq_norms : array_like
        ``||Delta_i||^2`` of the ``m`` sampled neighbours.
    population_size : int
        ``N >= m``: the number of neighbours the draw was made from.
    beta : float
        Failure probability in (0, 1) of the confidence band on the population's distribution.
    A : float or None
        Almost-sure bound on ``||Delta||`` (the band's top mass sits there; without it, at infinity).
    shift_ratio : float or None
        Batch-mean centre: ``s^2 <= rho ||Delta||^2`` a.s.
    seed : int or None
        The seed of the draw (recorded; the guarantee needs the draw to be uniform and made before
        looking at the values).
    note : str
        Provenance.
    """

    sq_norms: Any
    population_size: int
    beta: float
    A: float | None = None
    shift_ratio: float | None = None
    seed: int | None = None
    note: str = ""

    def __post_init__(self) -> None:
        w = "Sample"
        x = _sq_array(self.sq_norms, "sq_norms", w)
        object.__setattr__(self, "sq_norms", x)
        n = check_int(self.population_size, "population_size", w, low=x.size)
        object.__setattr__(self, "population_size", n)
        object.__setattr__(self, "beta", check_in_range(self.beta, "beta", w, low=0.0, high=1.0, low_open=True, high_open=True))
        if self.A is not None:
            a = check_in_range(self.A, "A", w, low=0.0)
            if x.max() > a * a * (1 + 1e-12):
                raise InputError(f"The 'sq_norms' parameter of {w} must lie in [0, A^2 = {a * a:g}]. Got {x.max()!r} instead.")
            object.__setattr__(self, "A", a)
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, w))

    @property
    def m(self) -> int:
        return int(self.sq_norms.size)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "sample", "m": self.m, "N": self.population_size, "sum_sq": float(np.sum(self.sq_norms)),
                "max_sq": float(self.sq_norms.max()), "beta": self.beta, "A": self.A, "shift_ratio": self.shift_ratio,
                "seed": self.seed, "note": self.note, **_hist(self.sq_norms)}

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "sample"
    RECHECK_UNIT: ClassVar[str | None] = None
    RANDOM_JUDGE: ClassVar[bool] = False
    CALIBRATION_DATA: ClassVar[bool] = True
    EXACT_LAW: ClassVar[bool] = False
    CONTINUOUS_SURVIVAL: ClassVar[bool] = False
    point_estimate: ClassVar[bool] = False
    assumes_deterministic_judge: ClassVar[bool] = True

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.sample(self, t)

    def jumps(self) -> list[np.ndarray]:
        pts = [np.sqrt(np.asarray(self.sq_norms, dtype=float))]
        return pts if self.A is None else [*pts, np.array([float(self.A)])]

    def order_size(self) -> float:
        return float(np.mean(self.sq_norms))

    def dominated_by(self, other: Record) -> bool:
        return False

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        """The calibration sample is set aside (never evidence about itself); the rest is audited."""
        left = split_recorded(sq, self.sq_norms) if sq.size else None
        if left is None:
            return None
        return AuditRole("held-out", f"the certificate's calibration sample ({self.m} neighbours) is among these and was "
                         f"set aside; the other {left.size} are audited", 0, left)

    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        samples = cast("list[Sample]", list(mine))
        if len(samples) == 1:
            s0 = samples[0]
            seed = f", seed {s0.seed}" if s0.seed is not None else ""
            return [f"{s0.m} of {s0.population_size} neighbours drawn uniformly without replacement{seed}, the bound "
                    "holding for the worst population consistent with them"]
        if samples:
            ms, ns = [r.m for r in samples], [r.population_size for r in samples]
            return [f"{len(samples)} samples (one per model and generator), each of {min(ms)}–{max(ms)} of "
                    f"{min(ns)}–{max(ns)} neighbours drawn uniformly without replacement with its own recorded seed, the "
                    "bound holding for the worst population consistent with each"]
        return []



@dataclass(frozen=True, eq=False)
class RandomJudge:
    """A random judge's neighbour answers: tail bounds on ``||Delta||^2`` at a finite set of levels.

    ``T`` draws an item uniformly and the judge answers its neighbour afresh (its own randomness), given
    the recorded original verdicts.  With levels ``x_1 < ... < x_K`` (``x_K`` at least every item's
    almost-sure bound) and ``Y_ik`` the share of item ``i``'s recorded draws with ``||Delta||^2 > x_{k-1}``
    (``x_0 = 0``; an item without a verdict counts 1 at every level), the ``n`` items' ``Y_ik`` are
    independent ``[0, 1]`` variables whose mean is the tail ``q_k = Pr[||Delta||^2 > x_{k-1}]`` of the
    neighbour distribution rounded up to the levels.  ``upper`` holds the Chernoff–KL upper bounds at
    ``beta / K`` each (union bound over the levels), made nonincreasing: jointly valid at ``1 - beta``.
    See ``docs/proofs/random_judge.md``.

    Parameters
    ----------
    levels : array_like
        ``x_1 < ... < x_K``, squared norms ``> 0``.
    sums : array_like
        ``S_k = sum_i Y_ik`` per level (nonincreasing, in ``[0, n]``).
    n : int
        Items the shares come from (a census: every item of the batch; a sample: the drawn items).
    beta : float
        Failure probability in (0, 1) of the joint bounds.
    shift_ratio : float or None
        Batch-mean centre: ``s^2 <= rho ||Delta||^2`` a.s.
    population_size : int or None
        ``N``: items of the batch (``n < N`` for a recorded sample, drawn uniformly without replacement).
    draws : int
        Recorded neighbour verdicts (reporting only; several per item are draws within the item).
    note : str
        Provenance.
    filled : int
        Of the ``n`` items, those without any verdict, entered at the range bound (1 at every level).
    k : int
        Items perturbed at once (model view, Hamming-k): ``||Delta_S||^2`` is the sum of ``k`` items' ``x``, the ``k``
        items drawn uniformly without replacement; the unit bounds its tail by Chernoff with the worst per-item
        distribution's moment generating function (``docs/proofs/random_judge_k.md``). 1: one item.
    """

    levels: Any
    sums: Any
    n: int
    beta: float
    shift_ratio: float | None = None
    population_size: int | None = None
    draws: int = 0
    note: str = ""
    filled: int = 0
    k: int = 1

    def __post_init__(self) -> None:
        from biasbound.sensitivity import kl_upper_bound

        w = "RandomJudge"
        x = check_finite_array(self.levels, "levels", w, ndim=1)
        if x.size < 1 or np.any(x <= 0) or np.any(np.diff(x) <= 0):
            raise InputError(f"The 'levels' parameter of {w} must be increasing squared norms > 0. Got {x.tolist()[:5]!r} instead.")
        n = check_int(self.n, "n", w, low=1)
        sm = check_finite_array(self.sums, "sums", w, ndim=1)
        if sm.shape != x.shape or np.any(sm < 0) or np.any(sm > n * (1 + 1e-12)) or np.any(np.diff(sm) > 1e-9 * n):
            raise InputError(f"The 'sums' parameter of {w} must hold one nonincreasing value in [0, n = {n}] per level.")
        beta = check_in_range(self.beta, "beta", w, low=0.0, high=1.0, low_open=True, high_open=True)
        if self.population_size is not None:
            object.__setattr__(self, "population_size", check_int(self.population_size, "population_size", w, low=n))
        object.__setattr__(self, "draws", check_int(self.draws, "draws", w, low=0))
        object.__setattr__(self, "filled", check_int(self.filled, "filled", w, low=0, high=n))
        object.__setattr__(self, "k", check_int(self.k, "k", w, low=1))
        if np.any(sm < self.filled * (1 - 1e-12)):
            raise InputError(f"The 'sums' parameter of {w} must be at least 'filled' ({self.filled}) at every level.")
        x = np.array(x, dtype=float)
        x.setflags(write=False)
        sm = np.minimum(np.array(sm, dtype=float), float(n))
        sm.setflags(write=False)
        object.__setattr__(self, "levels", x)
        object.__setattr__(self, "sums", sm)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, w))
        b_k = beta / x.size  # [proof:rj-union]
        up = np.array([kl_upper_bound(min(1.0, float(v) / n), n, b_k) for v in sm])  # [proof:rj-kl]
        up = np.minimum.accumulate(np.maximum(up, sm / n))  # [proof:rj-monotone]
        up.setflags(write=False)
        object.__setattr__(self, "_upper", up)

    @property
    def upper(self) -> np.ndarray:
        """``q_k^+``: upper bounds on ``Pr[||Delta||^2 > x_{k-1}]``, nonincreasing in ``k``."""
        return self._upper  # type: ignore[attr-defined]

    @property
    def A(self) -> float:
        """The top level's norm (times ``sqrt(k)``: ``k`` items' squares add): every ``||Delta||`` is at most it."""
        return float(math.sqrt(self.k * self.levels[-1]))

    @property
    def m(self) -> int:
        return int(self.n)

    def to_dict(self) -> dict[str, Any]:
        out = {"kind": "random-judge", "levels": self.levels.tolist(), "sums": self.sums.tolist(), "n": self.n,
               "N": self.population_size, "beta": self.beta, "shift_ratio": self.shift_ratio, "draws": self.draws,
               "upper": self.upper.tolist(), "filled": self.filled, "note": self.note}
        if self.k != 1:  # Hamming-k (a Hamming-1 record's dict, and so its certificate's digest, is as before)
            out["k"] = self.k
        return out

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "random-judge"
    RECHECK_UNIT: ClassVar[str | None] = "random-judge"  # a recheck of its own draws is its (1 - beta) bound
    RANDOM_JUDGE: ClassVar[bool] = True
    CALIBRATION_DATA: ClassVar[bool] = True
    EXACT_LAW: ClassVar[bool] = False
    CONTINUOUS_SURVIVAL: ClassVar[bool] = False
    point_estimate: ClassVar[bool] = False
    assumes_deterministic_judge: ClassVar[bool] = False

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.random_judge(self, t)

    def worst_distribution(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, weights)``: the distribution of ``x`` whose tail at every level is the upper bound (the k-item
        sum's for ``k > 1``); computed once and kept on the (frozen) record, read-only."""
        cached = self.__dict__.get("_worst")
        if cached is not None:
            return cast("tuple[np.ndarray, np.ndarray]", cached)
        x, w = _layer_cake.worst_law(self.levels, self.upper, self.k)
        x.setflags(write=False)
        w.setflags(write=False)
        object.__setattr__(self, "_worst", (x, w))
        return x, w

    def jumps(self) -> list[np.ndarray]:
        pts = np.sqrt(self.worst_distribution()[0]) if self.k > 1 else np.sqrt(np.asarray(self.levels, dtype=float))
        return [pts, np.array([self.A])]

    def order_size(self) -> float:
        return float(self.levels[0] * self.upper[0])

    def dominated_by(self, other: Record) -> bool:
        """Same levels: this record's worst distribution's tail is below ``other``'s at every level."""
        if not _same_kind(self, other):
            return False
        s = cast(RandomJudge, other)
        return bool(self.k == s.k and np.array_equal(self.levels, s.levels) and np.all(self.upper <= s.upper))

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        """The certificate's own draws (one per item, the same level sums): its confidence bound is recomputed from
        them — a recheck, not new evidence about the judge's randomness."""
        if not (sq.size and mine and self.draws == sq.size == self.n - self.filled):
            return None
        if not np.allclose(level_sums(sq, self) + self.filled, self.sums, rtol=0.0, atol=1e-9):
            return None
        return AuditRole("recheck", f"these are the {sq.size} neighbour verdicts the certificate was calibrated on (one "
                         "draw of a random judge per item" + (f"; {self.filled} unjudged at the range bound, as it counted "
                                                              "them" if self.filled else "")
                         + "): its confidence bound is recomputed from them — a recheck, not new evidence", 0)


    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        rjs = cast("list[RandomJudge]", list(mine))
        if not rjs:
            return []
        r0 = rjs[0]
        drawn = (f"{r0.n} of {r0.population_size} items drawn uniformly without replacement"
                 if r0.population_size is not None and r0.n < r0.population_size else f"{r0.n} items")
        facts = [f"every recorded neighbour verdict taken as one independent draw of a random judge ({drawn}, "
                 f"{r0.draws} verdicts, several of one item counted as draws within that item), the probability "
                 "covering the judge's own randomness on the neighbour given the recorded original verdicts"]
        for r in (r for r in rjs if r.filled):
            facts.append(f"{r.filled} of those {r.n} items without a verdict and counted as moving the scores by the "
                         "most the score range allows (a worst case over the unjudged ones, not a measured probability)")
        return facts



@dataclass(frozen=True)
class HighProbability:
    """``||Delta|| <= A`` except with probability at most ``eps`` over the neighbour (T and the judge's answer),
    on an event of probability ``>= 1 - beta`` over the recorded data (a random judge, every item perturbed).

    Parameters
    ----------
    A : float
        The bound, ``>= 0``.
    eps : float
        In [0, 1): the probability, over the neighbour, that ``||Delta|| > A``.
    beta : float
        In (0, 1): the failure probability of ``A`` over the recorded answers it was computed from.
    shift_ratio : float or None
        Batch-mean centre: ``s^2 <= rho ||Delta||^2`` a.s.
    note : str
        Provenance.
    """

    A: float
    eps: float
    beta: float
    shift_ratio: float | None = None
    note: str = ""

    def __post_init__(self) -> None:
        w = "HighProbability"
        object.__setattr__(self, "A", check_in_range(self.A, "A", w, low=0.0))
        object.__setattr__(self, "eps", check_in_range(self.eps, "eps", w, low=0.0, high=1.0, high_open=True))
        object.__setattr__(self, "beta", check_in_range(self.beta, "beta", w, low=0.0, high=1.0, low_open=True, high_open=True))
        object.__setattr__(self, "shift_ratio", _ratio(self.shift_ratio, w))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "high-probability", "A": self.A, "eps": self.eps, "beta": self.beta,
                "shift_ratio": self.shift_ratio, "note": self.note}

    # ------------------------------------------------------------------ what the kind answers (KnowledgeKind)
    KIND: ClassVar[str] = "high-probability"
    RECHECK_UNIT: ClassVar[str | None] = None
    RANDOM_JUDGE: ClassVar[bool] = True
    CALIBRATION_DATA: ClassVar[bool] = False
    EXACT_LAW: ClassVar[bool] = False
    CONTINUOUS_SURVIVAL: ClassVar[bool] = False
    point_estimate: ClassVar[bool] = False
    assumes_deterministic_judge: ClassVar[bool] = False

    def survivals(self, t: np.ndarray) -> np.ndarray:
        return _survival.high_probability(self, t)

    def jumps(self) -> list[np.ndarray]:
        return [np.array([float(self.A)])]

    def order_size(self) -> float:
        return float(self.A * self.A)

    def dominated_by(self, other: Record) -> bool:
        return False

    def audit_role(self, sq: np.ndarray, mine: bool) -> AuditRole | None:
        return None

    @classmethod
    def describe(cls, mine: Sequence[Record], every: Sequence[Record], say: Wording) -> list[str]:
        hps = cast("list[HighProbability]", list(mine))
        if not hps:
            return []
        hp = min(hps, key=lambda r: r.A)  # the tightest of the high-probability routes
        how = ("norm concentration around the recorded vector of model means" if "norm concentration" in hp.note
               else "Bernstein's inequality per model")
        return [f"the shift ‖Δ‖ at most {say.fmt(hp.A * say.scale)} {say.unit} except with probability "
                f"{say.fmt(hp.eps)} over the neighbour (a random judge, {how})"]



Record = Union[AlmostSure, Moments, FullPopulation, Sample, RandomJudge, HighProbability]  # noqa: UP007 (a runtime alias: py3.10 evaluates it)
_RECORD_TYPES = (AlmostSure, Moments, FullPopulation, Sample, RandomJudge, HighProbability)
#: every kind, in the order its facts appear in the guarantee sentence (:func:`facts`)
KINDS: tuple[type[Record], ...] = (FullPopulation, Sample, RandomJudge, HighProbability, Moments, AlmostSure)


def facts(records: Sequence[Record], say: Wording) -> list[str]:
    """What the records rest on, in words: each kind describes its own records, in the order of :data:`KINDS`."""
    out: list[str] = []
    for kind in KINDS:
        out += kind.describe([r for r in records if r.KIND == kind.KIND], records, say)
    return out


def record_from_dict(d: Mapping[str, Any]) -> Record:
    """Rebuild a record from its ``to_dict`` form (the statistics a certificate stores)."""
    if not isinstance(d, Mapping):
        raise TypeError(f"A knowledge record must be a dict. Got {type(d).__name__} instead.")
    kind = d.get("kind")
    if kind in ("almost-sure", "full-population") and float(d.get("beta", 0.0)) != 0.0:
        raise InputError(f"A {kind} record spends no beta. Got beta={d.get('beta')!r} instead.")
    if kind == "almost-sure":
        return AlmostSure(A=d["A"], shift_ratio=d.get("shift_ratio"), note=d.get("note", ""))
    if kind == "moments":
        return Moments(U2=d["U2"], beta=d.get("beta"), A=d.get("A"), shift_ratio=d.get("shift_ratio"),
                       shift_U2=d.get("shift_U2"), note=d.get("note", ""))
    if kind == "full-population":
        if d.get("weights") is not None:  # weighted values, one entry each
            x, p = d["values"], d["weights"]
            y = d.get("shift_values")
        else:
            x, p = _unhist(d, "full-population"), None
            y = None
            if d.get("shift_values") is not None:
                y = np.repeat(np.asarray(d["shift_values"], dtype=float), np.asarray(d["counts"], dtype=np.int64))
        pop = FullPopulation(sq_norms=x, shift_sq=y, shift_ratio=d.get("shift_ratio"), note=d.get("note", ""),
                             filled=d.get("filled", 0), weights=p)
        _check_summary(pop.to_dict(), d, "full-population")
        return pop
    if kind == "sample":
        sam = Sample(sq_norms=_unhist(d, "sample"), population_size=d["N"], beta=d["beta"], A=d.get("A"),
                     shift_ratio=d.get("shift_ratio"), seed=d.get("seed"), note=d.get("note", ""))
        _check_summary(sam.to_dict(), d, "sample")
        return sam
    if kind == "high-probability":
        return HighProbability(A=d["A"], eps=d["eps"], beta=d["beta"], shift_ratio=d.get("shift_ratio"),
                               note=d.get("note", ""))
    if kind == "random-judge":
        rec = RandomJudge(levels=d["levels"], sums=d["sums"], n=d["n"], beta=d["beta"], shift_ratio=d.get("shift_ratio"),
                          population_size=d.get("N"), draws=d.get("draws", 0), note=d.get("note", ""),
                          filled=d.get("filled", 0), k=d.get("k", 1))
        if "upper" in d and not np.allclose(np.asarray(d["upper"], dtype=float), rec.upper, rtol=1e-12, atol=0.0):
            raise InputError("The random-judge record's 'upper' does not match its sums, n and beta.")
        return rec
    raise InputError(f"A knowledge record's 'kind' must be one of 'almost-sure', 'moments', 'full-population', 'sample', "
                     f"'random-judge', 'high-probability'. Got {kind!r} instead.")


def _check_summary(recomputed: Mapping[str, Any], given: Mapping[str, Any], where: str) -> None:
    """The recorded m, sums and max must equal those recomputed from the recorded values."""
    for key in ("m", "sum_sq", "max_sq"):
        if key in given and not math.isclose(float(given[key]), float(recomputed[key]), rel_tol=1e-12, abs_tol=1e-300):
            raise InputError(f"The {where} record's {key!r} ({given[key]!r}) does not match its values ({recomputed[key]!r}).")


@dataclass(frozen=True, eq=False)
class Knowledge:
    """Knowledge records per neighbour generator, and how the generators combine.

    Parameters
    ----------
    generators : tuple of (name, tuple of records)
        Build with :meth:`of`.
    how : {"max", "mixture"} ("rms" is accepted for "mixture")
        ``"max"``: the certificate holds for each generator separately (bound = max over generators);
        ``"mixture"``: for one generator picked uniformly at random (bound = mean over generators).
    """

    generators: tuple[tuple[str, tuple[Record, ...]], ...]
    how: str = "max"

    def __post_init__(self) -> None:
        if self.how == "rms":  # the pipeline's name for the uniform mixture
            object.__setattr__(self, "how", "mixture")
        check_one_of(self.how, "how", "Knowledge", COMBINE)
        if not self.generators:
            raise InputError("The 'generators' parameter of Knowledge must name at least one generator. Got none instead.")
        for name, recs in self.generators:
            if not recs:
                raise InputError(f"The knowledge of generator {name!r} must hold at least one record. Got none instead.")
            for r in recs:
                if not isinstance(r, _RECORD_TYPES):
                    raise TypeError("A knowledge record must be AlmostSure, Moments, FullPopulation, Sample, RandomJudge or "
                                    f"HighProbability. Got {type(r).__name__} instead.")

    @classmethod
    def of(cls, obj: Any, *, how: str = "max") -> Knowledge:
        """Normalise a record, a sequence of records (one generator) or a mapping name -> record(s)."""
        if isinstance(obj, Knowledge):
            return obj
        if isinstance(obj, _RECORD_TYPES):
            return cls(generators=(("T", (obj,)),), how=how)
        if isinstance(obj, Mapping):
            gens = []
            for name, recs in obj.items():
                recs_t = (recs,) if isinstance(recs, _RECORD_TYPES) else tuple(recs)
                gens.append((str(name), recs_t))
            return cls(generators=tuple(gens), how=how)
        if isinstance(obj, Iterable) and not isinstance(obj, (str, bytes)):
            return cls(generators=(("T", tuple(obj)),), how=how)
        raise TypeError(f"The 'knowledge' parameter must be a record, a list of records or a mapping. Got {type(obj).__name__} instead.")

    @property
    def records(self) -> list[Record]:
        return [r for _, recs in self.generators for r in recs]

    @property
    def beta_total(self) -> float:
        """Sum of the failure probabilities of every record (rounded up): what a comparison across them spends."""
        s = math.fsum(float(r.beta or 0.0) for r in self.records)  # [proof:beta-sum]
        return above(s) if s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"how": self.how,
                "generators": {name: [r.to_dict() for r in recs] for name, recs in self.generators}}


def knowledge_from_dict(d: Mapping[str, Any]) -> Knowledge:
    """Rebuild :class:`Knowledge` from :meth:`Knowledge.to_dict` output."""
    gens = d.get("generators")
    if not isinstance(gens, Mapping):
        raise InputError("The knowledge must hold a 'generators' mapping.")
    return Knowledge(generators=tuple((str(k), tuple(record_from_dict(r) for r in v)) for k, v in gens.items()),
                     how=d.get("how", "max"))


"""One battery over every bound unit of ``biasbound.bounds``, found through the package's registry (``UNITS``).

Every unit answers ``violation_bound(tau, alpha, sigma, dim, record)``: an upper bound on
``Pr[||M(D) - M(D')|| > tau]`` for ``M(D) = alpha f(D) + (1 - alpha) mu + N(0, sigma^2 I_d)``.  Here each unit
gets cases where the truth is known exactly: a finite law of ``(||Delta||^2, s^2)`` (``s^2`` the batch-mean
centre's shift, ``None`` for a fixed centre) and a record that is true for it.  The violation probability of
such a law is computed independently of biasbound (scipy's noncentral chi-square tail for
``||alpha Delta + shift + B||``, ``B ~ N(0, 2 sigma^2 I_d)``, averaged over the law; the indicator at ``sigma = 0``).

Properties checked for every unit (one place per check; unit-specific formulas stay in test_bounds.py):

* the bound is >= the exact probability of every law consistent with the record (sure records), and
  a case marked ``tight`` (the unit is exact there) is attained by its laws to the stated tolerance;
* records that are confidence statements (a sample, a random judge's draws): seeded draws from a known law,
  the bound falls below the exact probability in at most a binomial share of them (rate stated below);
* it lies in [0, 1]; it equals the range bound (the exact tail at the range ``A``) for a record that says
  nothing beyond the range, and 1 for a record that says nothing at all;
* nondecreasing in alpha (the shrunk shift ``kappa(alpha)^2 ||Delta||^2`` grows with alpha, the tail grows
  with the shift); nondecreasing in sigma where every shift stays within tau: the set
  ``{z : ||v + z|| <= tau}`` is convex and contains 0 then, so ``Pr[sigma G`` leaves it ``]`` grows with sigma.
  Beyond tau the theory says nothing (noise can pull a shift above tau back inside), and nowhere does more noise
  give a smaller bound in general: with nothing moving the bound is the noise's own tail, increasing in sigma;
* deterministic: the same value for the same input, also after other evaluations (the units cache grids
  and bands) and for a freshly built equal record;
* bad records are refused with an InputError of one sentence naming the parameter;
* the calibrated (alpha, sigma) for the unit's record passes ``check`` and has an exact probability <= delta;
  the unit's own frontier points are within delta by the unit's own bound.

A unit added to the registry without cases here fails ``test_every_unit_is_registered_and_covered``.
"""

from __future__ import annotations

import importlib
import itertools
import math
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np
import pytest
from scipy import stats

import biasbound.bounds as bounds_pkg
from biasbound import InfeasibleCertificateError, InputError
from biasbound.bounds import (
    UNITS,
    AlmostSure,
    FullPopulation,
    HighProbability,
    Moments,
    RandomJudge,
    Sample,
)
from biasbound.calibration import calibrate, check, frontier

TAU, DIM, DELTA = 0.5, 50, 0.05
#: (alpha, sigma) points: sigma = 0 (deterministic mechanism), alpha A = tau exactly (0.5: not > tau), alpha = 0
GRID = [(0.2, 0.01), (0.5, 0.02), (1.0, 0.05), (0.7, 0.0), (0.5, 0.0), (0.3, 0.003), (0.0, 0.02), (0.0, 0.0),
        (0.9, 0.012)]
#: a known population of squared distances (A = 1)
POP = np.array([0.0] * 60 + [0.01] * 25 + [0.09] * 10 + [0.36] * 4 + [1.0] * 1)


# --------------------------------------------------------------------------- the independent reference
@dataclass(frozen=True)
class Law:
    """A finite law of ``x = ||Delta||^2`` (and the batch centre's ``y = s^2``; None: a fixed centre)."""

    x: np.ndarray
    p: np.ndarray
    y: np.ndarray | None = None

    @classmethod
    def uniform(cls, x, y=None) -> Law:
        x = np.asarray(x, dtype=float)
        return cls(x, np.full(x.size, 1.0 / x.size), None if y is None else np.asarray(y, dtype=float))

    @classmethod
    def two_point(cls, mean: float, c: float, ratio: float | None = None) -> Law:
        """Mass ``mean / c`` at ``c``, the rest at 0 (the laws that attain the moment bound); ``y = ratio * x``."""
        x = np.array([0.0, c])
        return cls(x, np.array([1.0 - mean / c, mean / c]), None if ratio is None else ratio * x)


def exact_probability(law: Law, *, alpha: float, sigma: float, tau: float = TAU, dim: int = DIM) -> float:
    """``Pr[||M(D) - M(D')|| > tau]`` under ``law``, from scipy alone (no code from biasbound.bounds)."""
    q = alpha * alpha * law.x if law.y is None else alpha * alpha * law.x + (1 - alpha * alpha) * law.y
    if sigma == 0:
        per = (q > tau * tau).astype(float)
    else:
        s2 = 2 * sigma * sigma
        lam = q / s2
        per = np.where(lam > 0, stats.ncx2.sf(tau * tau / s2, dim, np.maximum(lam, 1e-300)), stats.chi2.sf(tau * tau / s2, dim))
    return math.fsum((law.p * per).tolist())


# --------------------------------------------------------------------------- the cases, per unit name
@dataclass
class Case:
    """A record that is true for every law in ``laws`` (surely).

    tight: relative tolerance within which the largest exact probability over ``laws`` attains the bound (the unit
    is exact on this record: a supremum attained by these laws, or in their limit); None: no such claim.
    range: an almost-sure bound on ``||Delta||`` the record implies (for the sigma-monotonicity check)."""

    name: str
    record: object
    laws: list[Law]
    tight: float | None = None
    range: float | None = None


@dataclass
class Draws:
    """A confidence record drawn from a known law: the bound is below the exact probability with probability
    <= beta over ``make(rng)``."""

    name: str
    make: Callable[[np.random.Generator], object]
    law: Law
    beta: float
    reps: int = 200


@dataclass
class UnitCases:
    cases: list[Case]
    draws: list[Draws] = field(default_factory=list)
    #: records that say nothing beyond the range A = 1 (bound == exact tail at A) ...
    range_only: list[object] = field(default_factory=list)
    #: ... or nothing at all (bound == 1 wherever the shrunk scores may move by more than tau)
    nothing: list[object] = field(default_factory=list)
    #: the calibrator's method for this unit's records: "paper" (Cor. 3.2 alone) or "tight" (the minimum over units)
    method: str = "tight"


def _two_point_family(mean: float, top: float, ratio: float | None = None) -> list[Law]:
    """Two-point laws ``{0, c}`` with the given mean, ``c`` up to ``top``: the moment bound is their supremum.  At
    ``sigma`` near 0 it is approached just above the threshold ``c = tau^2 / kappa^2``: points there are added."""
    k2 = [a * a if ratio is None else a * a + (1 - a * a) * ratio for a, _ in GRID if a > 0]
    at = np.outer([TAU * TAU / k for k in k2], 1 + np.geomspace(1e-9, 0.5, 40)).ravel()
    cs = np.unique(np.concatenate([np.linspace(mean, top, 150), np.geomspace(mean, top, 150), at]))
    return [Law.two_point(mean, float(c), ratio) for c in cs if mean < c <= top] if mean > 0 else []


_ZERO = Law.uniform([0.0])
_U2 = float(POP.mean())
# a heterogeneous judge: 40 items, item i flips with probability P_I[i] to the squared distance X_I[i]
_RJ_RNG = np.random.default_rng(5)
X_I = _RJ_RNG.choice([0.0625, 0.25, 1.0], size=40)
P_I = _RJ_RNG.choice([0.0, 0.1, 0.25, 0.5], size=40)
RJ_LAW = Law(np.concatenate([np.zeros(40), X_I]), np.concatenate([1 - P_I, P_I]) / 40)
RJ_LEVELS = np.array([0.0625, 0.25, 1.0])


def _rj_sums(flips: list[np.ndarray]) -> np.ndarray:
    """``S_k``: per item the share of its recorded answers above each level's predecessor, summed over items."""
    lower = np.concatenate([[0.0], RJ_LEVELS[:-1]])
    return np.array([sum(float(np.mean(np.where(f, X_I[i], 0.0) > lo)) for i, f in enumerate(flips)) for lo in lower])


def _rj_census() -> RandomJudge:
    # every item's answer law recorded exactly (20 answers each, the flipped share exactly P_I): the shares are the
    # true tails, so the upper bounds hold surely
    flips = [np.arange(20) < round(20 * p) for p in P_I]
    return RandomJudge(levels=RJ_LEVELS, sums=_rj_sums(flips), n=40, beta=0.01)


def _rj_draw(rng: np.random.Generator) -> RandomJudge:
    flips = [rng.random(int(rng.integers(1, 4))) < p for p in P_I]  # 1-3 independent answers per item
    return RandomJudge(levels=RJ_LEVELS, sums=_rj_sums(flips), n=40, beta=0.05)


def _rj_subset_law(k: int) -> Law:
    """The law of ``||Delta_S||^2`` for a uniform ``k``-subset ``S`` of the 40 items (model view: the items' squared
    moves add), each item answering afresh: enumerated over subsets and answer patterns."""
    xs, ps = [], []
    subsets = list(itertools.combinations(range(40), k))
    for sub in subsets:
        for pattern in itertools.product((False, True), repeat=k):
            pr = math.prod(P_I[i] if f else 1 - P_I[i] for i, f in zip(sub, pattern))
            if pr > 0:
                xs.append(sum(X_I[i] for i, f in zip(sub, pattern) if f))
                ps.append(pr / len(subsets))
    return Law(np.array(xs), np.array(ps))


RJ_LAW_2 = _rj_subset_law(2)


def _rj_draw_2(rng: np.random.Generator) -> RandomJudge:
    flips = [rng.random(int(rng.integers(1, 4))) < p for p in P_I]
    return RandomJudge(levels=RJ_LEVELS, sums=_rj_sums(flips), n=40, beta=0.05, k=2)


_BATCH_X = np.array([0.0, 0.04, 0.16, 1.0])
_BATCH_Y = np.array([0.0, 0.01, 0.0, 0.25])  # s^2 <= rho ||Delta||^2 with rho = 0.25 (Hamming-k, k/d = 1/4)

CASES: dict[str, UnitCases] = {
    "almost-sure": UnitCases(
        cases=[
            Case("range", AlmostSure(1.0), [Law.uniform([1.0]), Law.uniform(POP)], tight=1e-6, range=1.0),
            Case("nothing moves", AlmostSure(0.0), [_ZERO], tight=1e-6, range=0.0),
            Case("batch centre", AlmostSure(1.0, shift_ratio=0.25),
                 [Law.uniform([1.0], [0.25]), Law.uniform(_BATCH_X, _BATCH_Y)], tight=1e-6, range=1.0),
            Case("moments with a range", Moments(_U2, A=1.0), [Law.uniform(POP), Law.two_point(_U2, 1.0)], range=1.0),
        ],
        range_only=[AlmostSure(1.0)]),
    "moments": UnitCases(
        # the supremum over two-point laws, computed from above on a grid: attained within 1% (measured <= 0.6%)
        cases=[
            Case("mean and range", Moments(_U2, A=1.0), [Law.uniform(POP), *_two_point_family(_U2, 1.0)], tight=0.01,
                 range=1.0),
            Case("mean alone", Moments(_U2), [Law.uniform(POP), *_two_point_family(_U2, 100.0)], tight=0.01),
            # 1e-4: the majorant is computed from above on a grid (at u = 0: the tail at the grid's first point)
            Case("nothing moves", Moments(0.0, A=1.0), [_ZERO], tight=1e-4, range=0.0),
            Case("batch centre", Moments(float(_BATCH_X.mean()), A=1.0, shift_ratio=0.25),
                 [Law.uniform(_BATCH_X, _BATCH_Y), *_two_point_family(float(_BATCH_X.mean()), 1.0, 0.25)], tight=0.01,
                 range=1.0),
        ],
        range_only=[Moments(1.0, A=1.0)], nothing=[Moments(1e6)]),
    "full-population": UnitCases(
        cases=[
            Case("census", FullPopulation(POP), [Law.uniform(POP)], tight=1e-6, range=1.0),
            Case("nothing moves", FullPopulation(np.zeros(30)), [_ZERO], tight=1e-6, range=0.0),
            Case("batch centre, shifts observed", FullPopulation(_BATCH_X, shift_sq=_BATCH_Y),
                 [Law.uniform(_BATCH_X, _BATCH_Y)], tight=1e-6, range=1.0),
            Case("weighted values", FullPopulation([0.0, 0.09, 1.0], weights=[0.7, 0.25, 0.05]),
                 [Law(np.array([0.0, 0.09, 1.0]), np.array([0.7, 0.25, 0.05]))], tight=1e-6, range=1.0),
        ],
        range_only=[FullPopulation(np.ones(10), filled=10)]),
    "sampled-population": UnitCases(
        cases=[
            Case("the whole population drawn", Sample(POP, population_size=100, beta=0.01, A=1.0), [Law.uniform(POP)],
                 tight=1e-6, range=1.0),
            Case("nothing moves", Sample(np.zeros(5), population_size=5, beta=0.01, A=1.0), [_ZERO], tight=1e-6,
                 range=0.0),
        ],
        draws=[Draws("30 of 100 without replacement",
                     lambda rng: Sample(rng.choice(POP, size=30, replace=False), population_size=100, beta=0.05, A=1.0),
                     Law.uniform(POP), beta=0.05)],
        range_only=[Sample(np.ones(10), population_size=100, beta=0.05, A=1.0)]),
    "random-judge": UnitCases(
        cases=[Case("every answer law recorded exactly", _rj_census(), [RJ_LAW], range=1.0),
               Case("nothing moves", RandomJudge(levels=[1.0], sums=[0.0], n=100, beta=0.01), [_ZERO], range=1.0),
               # Hamming-2 (Chernoff on the 2-item sum, docs/proofs/concentration.md): the law over 2-subsets
               Case("Hamming-2, every answer law recorded exactly",
                    RandomJudge(levels=RJ_LEVELS, sums=_rj_census().sums, n=40, beta=0.01, k=2), [RJ_LAW_2],
                    range=math.sqrt(2.0))],
        draws=[Draws("1-3 answers per item", _rj_draw, RJ_LAW, beta=0.05),
               Draws("Hamming-2, 1-3 answers per item", _rj_draw_2, RJ_LAW_2, beta=0.05)],
        range_only=[RandomJudge(levels=[0.25, 1.0], sums=[40.0, 40.0], n=40, beta=0.05)]),
    "high-probability": UnitCases(
        cases=[
            # Pr[x > 0.36] = 0.01 exactly in POP: ||Delta|| <= 0.6 except with probability 0.01
            Case("a quantile", HighProbability(0.6, 0.01, 0.01), [Law.uniform(POP)], range=None),
            Case("eps = 0 is almost sure", HighProbability(1.0, 0.0, 0.01), [Law.uniform([1.0]), Law.uniform(POP)],
                 tight=1e-6, range=1.0),
        ],
        range_only=[HighProbability(1.0, 0.0, 0.05)]),
    "paper": UnitCases(
        cases=[
            Case("mean square", Moments(_U2), [Law.uniform(POP), *_two_point_family(_U2, 1.0)]),
            # a smaller batch law: the paper's centre term (1 - alpha) S does not shrink, S^2 / tau^2 < delta / 2 needed
            Case("batch centre through the shift ratio", Moments(float(_BATCH_X.mean()) / 20, shift_ratio=0.25),
                 [Law.uniform(_BATCH_X / 20, _BATCH_Y / 20)]),
            Case("batch centre with its own moment",
                 Moments(float(_BATCH_X.mean()) / 20, shift_U2=float(_BATCH_Y.mean()) / 20),
                 [Law.uniform(_BATCH_X / 20, _BATCH_Y / 20)]),
        ],
        nothing=[Moments(1e6)], method="paper"),
}

#: bad records, per record type: (constructor, the parameter the one-sentence error must name)
BAD: dict[type, list[tuple[Callable[[], object], str]]] = {
    AlmostSure: [(lambda: AlmostSure(-1.0), "A"), (lambda: AlmostSure(math.inf), "A"),
                 (lambda: AlmostSure(1.0, shift_ratio=1.5), "shift_ratio")],
    Moments: [(lambda: Moments(-0.1), "U2"), (lambda: Moments(0.5, A=0.1), "U2"), (lambda: Moments(0.1, beta=1.0), "beta"),
              (lambda: Moments(0.1, shift_U2=-1.0), "shift_U2")],
    FullPopulation: [(lambda: FullPopulation(np.array([0.1, -0.2])), "sq_norms"),
                     (lambda: FullPopulation(np.array([0.1, np.nan])), "sq_norms"),
                     (lambda: FullPopulation([0.1, 0.2], shift_sq=[0.1, 0.3]), "shift_sq"),
                     (lambda: FullPopulation([0.1, 0.2], weights=[0.5, 0.6]), "weights"),
                     (lambda: FullPopulation([0.1, 0.2], filled=3), "filled")],
    Sample: [(lambda: Sample(np.array([0.1, 0.2]), population_size=1, beta=0.1), "population_size"),
             (lambda: Sample(np.array([0.1]), population_size=5, beta=1.5), "beta"),
             (lambda: Sample(np.array([0.1]), population_size=5, beta=0.0), "beta"),
             (lambda: Sample(np.array([0.5]), population_size=5, beta=0.1, A=0.1), "sq_norms")],
    RandomJudge: [(lambda: RandomJudge(levels=[0.5, 0.25], sums=[1.0, 0.0], n=4, beta=0.1), "levels"),
                  (lambda: RandomJudge(levels=[0.25, 1.0], sums=[1.0, 2.0], n=4, beta=0.1), "sums"),
                  (lambda: RandomJudge(levels=[0.25, 1.0], sums=[5.0, 5.0], n=4, beta=0.1), "sums"),
                  (lambda: RandomJudge(levels=[1.0], sums=[1.0], n=4, beta=1.0), "beta"),
                  (lambda: RandomJudge(levels=[1.0], sums=[1.0], n=4, beta=0.1, filled=2), "sums"),
                  (lambda: RandomJudge(levels=[1.0], sums=[1.0], n=4, beta=0.1, k=0), "k")],
    HighProbability: [(lambda: HighProbability(-0.1, 0.1, 0.1), "A"), (lambda: HighProbability(1.0, 1.0, 0.1), "eps"),
                      (lambda: HighProbability(1.0, 0.1, 0.0), "beta")],
}


def _cases(u: ModuleType) -> UnitCases:
    if u.NAME not in CASES:
        pytest.fail(f"The bound unit {u.NAME!r} has no known-truth cases in tests/bounds/test_battery.py (CASES).")
    return CASES[u.NAME]


def _bound(u: ModuleType, record: object, alpha: float, sigma: float) -> float:
    return float(u.violation_bound(TAU, alpha, sigma, DIM, record))


def _kappa(alpha: float, record: object) -> float:
    """``||shrunk shift|| <= kappa ||Delta||`` (observed shifts s^2 <= ||Delta||^2: kappa <= 1 at most)."""
    if getattr(record, "shift_sq", None) is not None:
        return 1.0
    rho = getattr(record, "shift_ratio", None)
    return math.sqrt(alpha * alpha if rho is None else alpha * alpha + (1 - alpha * alpha) * rho)


UNIT_IDS = [u.NAME for u in UNITS]
parametrize_units = pytest.mark.parametrize("u", UNITS, ids=UNIT_IDS)


# --------------------------------------------------------------------------- the registry
def test_every_unit_is_registered_and_covered() -> None:
    """Every public module of biasbound.bounds that looks like a unit is in UNITS, and every unit has cases here."""
    found = {}
    for info in pkgutil.iter_modules(bounds_pkg.__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"biasbound.bounds.{info.name}")
        if all(hasattr(mod, a) for a in ("NAME", "applies", "violation_bound")):
            found[mod.NAME] = mod
    registered = {u.NAME: u for u in UNITS}
    assert set(found) <= set(registered), f"unit modules missing from bounds.UNITS: {sorted(set(found) - set(registered))}"
    assert set(registered) == set(CASES), (f"units without cases: {sorted(set(registered) - set(CASES))}; "
                                           f"cases for no unit: {sorted(set(CASES) - set(registered))}")
    for u in UNITS:
        assert isinstance(u.NAME, str) and isinstance(u.EXACT, bool) and callable(u.applies)
        assert bounds_pkg.unit(u.NAME) is u


@parametrize_units
def test_cases_are_about_the_unit(u: ModuleType) -> None:
    """Each case's record is one the unit applies to; an exact unit has at least one case where it is attained;
    every record type the unit uses has bad-input cases."""
    uc = _cases(u)
    records = [c.record for c in uc.cases] + uc.range_only + uc.nothing + [d.make(np.random.default_rng(0)) for d in uc.draws]
    for r in records:
        assert u.applies(r) is None, (u.NAME, r)
        assert type(r) in BAD, type(r).__name__
    if u.EXACT:
        assert any(c.tight is not None for c in uc.cases)


# --------------------------------------------------------------------------- validity against the exact truth
@parametrize_units
def test_bound_is_at_least_the_exact_probability_and_in_unit_interval(u: ModuleType) -> None:
    for case in _cases(u).cases:
        for alpha, sigma in GRID:
            v = _bound(u, case.record, alpha, sigma)
            assert 0.0 <= v <= 1.0, (case.name, alpha, sigma, v)
            truths = [exact_probability(law, alpha=alpha, sigma=sigma) for law in case.laws]
            assert v >= max(truths), (case.name, alpha, sigma, v, max(truths))
            if case.tight is not None:  # attained (in the limit) by the case's laws
                assert v <= max(truths) * (1 + case.tight) + 1e-12, (case.name, alpha, sigma, v, max(truths))


DRAWS = [(u, d) for u in UNITS for d in CASES.get(u.NAME, UnitCases([])).draws]


@pytest.mark.parametrize(("u", "d"), DRAWS, ids=[f"{u.NAME}: {d.name}" for u, d in DRAWS])
def test_confidence_records_hold_at_their_level(u: ModuleType, d: Draws) -> None:
    """Seeded draws of the record from a known law; each draw's bound may fall below the exact probability (at any
    grid point: the record's event covers every (alpha, sigma) at once) with probability <= beta, so the failures
    are at most Binomial(reps, beta); the test fails when they exceed its 1 - 1e-3 quantile: false-failure rate
    <= 1e-3 per record kind (the draws are seeded: a run is reproducible)."""
    cells = [(0.5, 0.0), (0.9, 0.012), (1.0, 0.05)]
    truths = [exact_probability(d.law, alpha=a, sigma=s) for a, s in cells]
    rng = np.random.default_rng(2024)
    fails = sum(any(_bound(u, rec, a, s) < t for (a, s), t in zip(cells, truths))
                for rec in (d.make(rng) for _ in range(d.reps)))
    assert fails <= int(stats.binom.isf(1e-3, d.reps, d.beta)), (d.name, fails)


@parametrize_units
def test_no_information_gives_the_range_bound_or_one(u: ModuleType) -> None:
    uc = _cases(u)
    assert uc.range_only or uc.nothing
    for rec in uc.range_only:
        for alpha, sigma in GRID:
            ref = exact_probability(Law.uniform([1.0], None if rec.shift_ratio is None else [rec.shift_ratio]),
                                    alpha=alpha, sigma=sigma)
            v = _bound(u, rec, alpha, sigma)
            assert ref <= v <= ref * (1 + 1e-6) + 1e-12, (rec, alpha, sigma, v, ref)
    for rec in uc.nothing:
        for alpha, sigma in GRID:
            if alpha >= 0.2:  # alpha^2 U2 / tau^2 >> 1: no noise level makes the bound informative
                assert _bound(u, rec, alpha, sigma) == 1.0, (rec, alpha, sigma)


# --------------------------------------------------------------------------- shape
@parametrize_units
def test_bound_is_nondecreasing_in_alpha(u: ModuleType) -> None:
    alphas = np.linspace(0.0, 1.0, 21)
    for case in _cases(u).cases:
        for sigma in (0.0, 0.004, 0.02, 0.06):
            vals = [_bound(u, case.record, float(a), sigma) for a in alphas]
            # 1e-4: the moment bound's concave majorant is refined to that relative tolerance (always from above)
            assert all(b >= a * (1 - 1e-4) for a, b in itertools.pairwise(vals)), (case.name, sigma, vals)


@parametrize_units
def test_bound_is_nondecreasing_in_sigma_where_every_shift_is_within_tau(u: ModuleType) -> None:
    sigmas = [0.0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08]
    checked = 0
    for case in _cases(u).cases:
        for alpha in (0.1, 0.3, 0.5, 1.0):
            paper_form = u.NAME == "paper"  # delta_B + w^2 / (tau - sqrt(2) sigma r)^2: increasing in sigma always
            if not paper_form and (case.range is None or _kappa(alpha, case.record) * case.range > TAU):
                continue
            vals = [_bound(u, case.record, alpha, s) for s in sigmas]
            assert all(b >= a * (1 - 1e-4) for a, b in itertools.pairwise(vals)), (case.name, alpha, vals)
            checked += 1
    assert checked  # every unit has a case where the theory applies


@parametrize_units
def test_bound_is_deterministic(u: ModuleType) -> None:
    uc = _cases(u)
    first = {(i, a, s): _bound(u, c.record, a, s) for i, c in enumerate(uc.cases) for a, s in GRID}
    for other in CASES.values():  # other evaluations in between (grids and bands are cached)
        for c in other.cases:
            for unit in UNITS:
                if unit.applies(c.record) is None:
                    unit.violation_bound(0.3, 0.4, 0.015, 20, c.record)
    again = {(i, a, s): _bound(u, c.record, a, s) for i, c in enumerate(uc.cases) for a, s in GRID}
    assert again == first
    for d in uc.draws:  # a record rebuilt from the same seed gives the same value
        r1, r2 = d.make(np.random.default_rng(9)), d.make(np.random.default_rng(9))
        assert [_bound(u, r1, a, s) for a, s in GRID] == [_bound(u, r2, a, s) for a, s in GRID]


# --------------------------------------------------------------------------- bad input
@parametrize_units
def test_bad_records_are_refused_in_one_sentence(u: ModuleType) -> None:
    uc = _cases(u)
    kinds = {type(c.record) for c in uc.cases}
    for kind in kinds:
        for make, name in BAD[kind]:
            with pytest.raises(InputError, match=f"'{name}'") as exc:
                make()
            msg = str(exc.value)
            assert msg.count(". ") <= 2 and "\n" not in msg and "Traceback" not in msg, msg
    rec = uc.cases[0].record
    for args, name in [((0.0, 0.5, 0.01, DIM), "tau"), ((TAU, 1.5, 0.01, DIM), "alpha"), ((TAU, 0.5, -0.01, DIM), "sigma"),
                       ((TAU, 0.5, math.nan, DIM), "sigma"), ((TAU, 0.5, 0.01, 0), "dim")]:
        with pytest.raises(InputError, match=f"'{name}'"):
            u.violation_bound(*args, rec)
    wrong = next(c.record for other in CASES.values() for c in other.cases if u.applies(c.record) is not None)
    with pytest.raises(TypeError, match="'knowledge'"):
        u.violation_bound(TAU, 0.5, 0.01, DIM, wrong)


# --------------------------------------------------------------------------- calibration from the unit's records
@parametrize_units
def test_calibrated_point_passes_check_and_holds_exactly(u: ModuleType) -> None:
    uc = _cases(u)
    for case in uc.cases:
        try:
            cal = calibrate(case.record, tau=TAU, delta=DELTA, dim=DIM, method=uc.method, frontier_points=0)
        except InfeasibleCertificateError:
            pytest.fail(f"{u.NAME}: {case.name} cannot be calibrated at its default point")
        holds, value = check(tau=TAU, delta=DELTA, dim=DIM, alpha=cal.alpha, sigma=cal.sigma, knowledge=case.record,
                             method=uc.method)
        assert holds and value <= DELTA, (case.name, cal.alpha, cal.sigma, value)
        for law in case.laws:
            assert exact_probability(law, alpha=cal.alpha, sigma=cal.sigma) <= DELTA, (case.name, cal.alpha, cal.sigma)


@parametrize_units
def test_the_units_own_frontier_is_within_delta_by_its_own_bound(u: ModuleType) -> None:
    for case in _cases(u).cases:
        pts = frontier(tau=TAU, delta=DELTA, dim=DIM, knowledge=case.record, n=4, unit=u.NAME)
        assert len(pts) == 4
        for p in pts:
            if p["alpha"] > 0:
                assert _bound(u, case.record, p["alpha"], p["sigma"]) <= DELTA, (case.name, p)
                for law in case.laws:
                    assert exact_probability(law, alpha=p["alpha"], sigma=p["sigma"]) <= DELTA, (case.name, p)


@parametrize_units
def test_the_combined_bound_is_at_most_each_unit(u: ModuleType) -> None:
    """``bounds.violation_bound`` (the minimum over the applicable units) never exceeds one of them."""
    for case in _cases(u).cases:
        for alpha, sigma in GRID:
            assert bounds_pkg.violation_bound(TAU, alpha, sigma, DIM, case.record) <= _bound(u, case.record, alpha, sigma)


def test_the_reference_is_the_audits_exact_probability() -> None:
    """The battery's truth equals ``biasbound.audit``'s exact probability (what a skeptic computes on held-out
    neighbours) on every equally weighted law of the cases, at every grid point."""
    from biasbound.audit import audit

    laws = [law for uc in CASES.values() for c in uc.cases for law in c.laws if np.all(law.p == law.p[0])]
    assert len(laws) >= 10
    for law in laws:
        shifts = None if law.y is None else np.sqrt(law.y)
        for alpha, sigma in GRID:
            r = audit(tau=TAU, delta=0.5, sigma=sigma, alpha=alpha, distances=np.sqrt(law.x), dim=DIM, mean_shifts=shifts,
                      n_mc=1, rng=0)
            ref = exact_probability(law, alpha=alpha, sigma=sigma)
            assert r.exact_probability == pytest.approx(ref, rel=1e-9, abs=1e-300), (law, alpha, sigma)

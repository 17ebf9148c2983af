"""Bound units: unit-specific formulas (Cor. 3.2, the paper's batch-centre term, the sample band's crossing
probability), the acceptance figures of the embedded setting, how generators combine, and the calibrator's edges.

The properties every unit shares (at least the exact probability of known laws, tightness of the exact units,
confidence levels, range values, monotonicity, determinism, bad records) are checked once, for every unit of
the registry, in tests/bounds/test_battery.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from biasbound import InputError
from biasbound.bounds import AlmostSure, FullPopulation, Knowledge, Moments, Sample, almost_sure, full_population
from biasbound.bounds import moments, paper, violation_bound
from biasbound.calibration import calibrate, check


def exact_probability(sq: np.ndarray, *, tau: float, alpha: float, sigma: float, dim: int) -> float:
    """Independent reference: mean over a population of Pr[||alpha Delta_i + B|| > tau], B ~ N(0, 2 sigma^2 I)."""
    if sigma == 0:
        return float(np.mean(alpha * alpha * sq > tau * tau))
    x = tau * tau / (2 * sigma * sigma)
    lam = alpha * alpha * sq / (2 * sigma * sigma)
    return float(np.mean([stats.chi2.sf(x, dim) if v == 0 else stats.ncx2.sf(x, dim, v) for v in lam]))


POP = np.array([0.0] * 60 + [0.01] * 25 + [0.09] * 10 + [0.36] * 4 + [1.0] * 1)  # a known population, A = 1


# --------------------------------------------------------------------------- exact values
def test_paper_unit_is_corollary_3_2_exactly() -> None:
    # Corollary 3.2 typed out: symmetric split, Laurent–Massart radius, alpha from tau_split = 1/2 (Algorithm 1)
    U, tau, delta, d = 0.306, 0.5, 0.01, 500
    x = math.log(2 / delta)
    r = math.sqrt(d + 2 * math.sqrt(d * x) + 2 * x)
    rec = Moments(U**2)
    kc = calibrate(rec, tau=tau, delta=delta, dim=d, method="paper")
    assert kc.alpha == pytest.approx(0.5 * tau * math.sqrt(delta / 2) / U, rel=1e-12)
    assert kc.sigma_max == pytest.approx(0.5 * tau / (math.sqrt(2) * r), rel=1e-12) and kc.sigma < kc.sigma_max
    at = paper.violation_bound(tau, kc.alpha, kc.sigma, d, rec, delta_B=delta / 2)
    assert at <= delta * (1 + 1e-12)
    above = paper.violation_bound(tau, kc.alpha, kc.sigma * 1.001, d, rec, delta_B=delta / 2)
    assert above > delta
    assert check(tau=tau, delta=delta, dim=d, alpha=kc.alpha, sigma=kc.sigma, knowledge=rec, method="paper")[0]
    assert not check(tau=tau, delta=delta, dim=d, alpha=kc.alpha, sigma=kc.sigma_max * 1.0001, knowledge=rec,
                     method="paper")[0]


# --------------------------------------------------------------------------- acceptance (embedded setting)
def test_embedded_setting_almost_sure_and_moments_figures() -> None:
    a = calibrate(AlmostSure(1.0), tau=0.5, delta=0.01, dim=500, sigma=0.00736, frontier_points=2)
    assert a.alpha >= 0.41 and a.alpha == pytest.approx(0.4167, abs=5e-4)
    b = calibrate(AlmostSure(1.0), tau=0.5, delta=0.01, dim=500, alpha=0.25, frontier_points=2)
    assert b.sigma == pytest.approx(0.0125, abs=1e-4)
    m = calibrate(Moments(0.442**2), tau=0.5, delta=0.01, dim=500, sigma=0.00714, frontier_points=2)
    p = calibrate(Moments(0.442**2), tau=0.5, delta=0.01, dim=500, method="paper", frontier_points=2)
    assert p.alpha == pytest.approx(0.040, abs=5e-4)
    assert m.alpha == pytest.approx(0.106, abs=2e-3)
    # the calibrated points are on the boundary: a hair more shrinkage breaks the bound
    assert not check(tau=0.5, delta=0.01, dim=500, alpha=a.alpha * 1.001, sigma=0.00736, knowledge=AlmostSure(1.0))[0]


def test_sampled_band_dominates_ucb_plus_markov_on_a_typical_swap_sample() -> None:
    # 500 items, 150 sampled swaps: 2% flip fully, 10% move by 0.25, the rest do not move
    from biasbound.sensitivity import sensitivity_ucb

    rng = np.random.default_rng(3)
    pop = np.concatenate([np.ones(10), np.full(50, 0.0625), np.zeros(440)])
    x = rng.choice(pop, size=150, replace=False)
    beta = 0.01
    ucb = sensitivity_ucb(np.sqrt(x), beta=beta, max_distance=1.0)
    band = calibrate(Sample(x, population_size=500, beta=beta, A=1.0), tau=0.5, delta=0.05, dim=500,
                               sigma=0.005, frontier_points=2)
    mom = calibrate(Moments(ucb**2, beta=beta, A=1.0), tau=0.5, delta=0.05, dim=500, sigma=0.005,
                              frontier_points=2)
    paper_ = calibrate(Moments(ucb**2, beta=beta), tau=0.5, delta=0.05, dim=500, sigma=0.005,
                                 method="paper", frontier_points=2)
    assert band.alpha > mom.alpha > paper_.alpha


def test_knowledge_combines_generators_by_max_and_mixture() -> None:
    g = {"swap": FullPopulation(POP), "rerun": AlmostSure(0.1)}
    a, s = 0.6, 0.01
    v1 = violation_bound(0.5, a, s, 50, g["swap"])
    v2 = violation_bound(0.5, a, s, 50, g["rerun"])
    assert violation_bound(0.5, a, s, 50, Knowledge.of(g)) == max(v1, v2)
    mix = violation_bound(0.5, a, s, 50, Knowledge.of(g, how="mixture"))
    assert mix == pytest.approx((v1 + v2) / 2, rel=1e-12)


# --------------------------------------------------------------------------- batch centre, simulated from score vectors
def _shrunk_difference(f: np.ndarray, fp: np.ndarray, alpha: float) -> np.ndarray:
    """g_D(f(D)) - g_D'(f(D')) with the batch-mean centre, computed from the score vectors themselves."""
    return (alpha * f + (1 - alpha) * f.mean()) - (alpha * fp + (1 - alpha) * fp.mean())


@pytest.mark.parametrize("kind", ["hamming-1", "hamming-3", "all-items"])
def test_batch_centre_bounds_hold_against_simulated_releases(kind: str) -> None:
    # A known population of 40 neighbours of a d=12 batch; violation probabilities are estimated by simulating the
    # two releases with independent Gaussian noise (no noncentral chi-square involved).  Each cell fails spuriously
    # only if the Clopper-Pearson lower bound at level 1 - 1e-4 exceeds the true probability: <= 1e-4 per cell,
    # 3 kinds x 3 points x 3 units = 27 cells; the exact full-population value must also lie below the upper bound
    # (another 9 cells at 1e-4): false-failure rate <= 3.6e-3.
    rng = np.random.default_rng(17)
    d, n_nb, n_mc = 12, 40, 4000
    f = rng.uniform(0, 1, d)
    k = {"hamming-1": 1, "hamming-3": 3, "all-items": d}[kind]
    neigh = []
    for _ in range(n_nb):
        fp = f.copy()
        idx = rng.choice(d, k, replace=False)
        fp[idx] = np.clip(fp[idx] + rng.choice([-1, 1], k) * rng.uniform(0, 0.6, k), 0, 1)
        neigh.append(fp)
    delta_vecs = np.array([f - fp for fp in neigh])
    x = (delta_vecs**2).sum(axis=1)
    y = d * delta_vecs.mean(axis=1) ** 2
    rho = k / d
    A = float(np.sqrt(x.max()))
    records = {"full-population": FullPopulation(x, shift_sq=y), "almost-sure": AlmostSure(A, shift_ratio=rho),
               "moments": Moments(float(x.mean()), A=A, shift_ratio=rho)}
    for alpha, sigma in [(0.3, 0.05), (0.6, 0.1), (1.0, 0.03)]:
        z = rng.normal(0, sigma, (n_mc, d)) - rng.normal(0, sigma, (n_mc, d))
        pick = rng.integers(0, n_nb, n_mc)
        diffs = np.array([_shrunk_difference(f, neigh[i], alpha) for i in range(n_nb)])[pick] + z
        hits = int(np.count_nonzero(np.linalg.norm(diffs, axis=1) > 0.5))
        ci = stats.binomtest(hits, n_mc).proportion_ci(confidence_level=1 - 2e-4, method="exact")
        lcb = ci.low
        assert full_population.violation_bound(0.5, alpha, sigma, d, records["full-population"]) <= ci.high
        for name, rec in records.items():
            unit = {"full-population": full_population, "almost-sure": almost_sure, "moments": moments}[name]
            assert unit.violation_bound(0.5, alpha, sigma, d, rec) >= lcb, (kind, name, alpha, sigma)


def test_band_crossing_probability_equals_enumeration_over_all_samples() -> None:
    # N = 8, m = 4: all 70 subsets are equally likely; H_K = #sampled among the first K items
    from itertools import combinations

    from biasbound.bounds._band import _crossing

    N, m = 8, 4
    for b in (np.array([0, 0, 1, 1, 2, 2, 3, 4]), np.array([0, 1, 1, 2, 2, 3, 3, 4]), np.zeros(8, dtype=int)):
        crossed = 0
        subsets = list(combinations(range(N), m))
        for sub in subsets:
            h = np.cumsum(np.isin(np.arange(N), sub))
            crossed += bool(np.any(h < b))
        assert _crossing(N, m, b) == pytest.approx(crossed / len(subsets), abs=1e-12)
    # and the band it calibrates keeps the crossing probability within beta
    from biasbound.bounds._band import _band

    kup = np.array(_band(100, 30, 0.05))
    assert kup[-1] == 100 and np.all(np.diff(kup) >= 0)


# --------------------------------------------------------------------------- edges and bad input
def test_edges_zero_population_zero_moment_and_deterministic_mechanism() -> None:
    # nothing moves: the default noise is half the noise-only limit, every shrinkage works there (alpha = 1), and
    # at alpha = 1 the noise could go up to that limit
    c = calibrate(FullPopulation(np.zeros(50)), tau=0.5, delta=0.01, dim=50, frontier_points=0)
    s_noise = 0.5 / math.sqrt(2 * stats.chi2.isf(0.01, 50))
    assert c.alpha == 1.0 and c.sigma == pytest.approx(s_noise / 2, rel=1e-12) and c.sigma < s_noise / 2
    assert c.sigma_max <= s_noise and c.sigma_max == pytest.approx(s_noise, rel=1e-6)
    # sigma = 0: a deterministic mechanism, certified exactly by the indicator form
    d0 = calibrate(FullPopulation(POP), tau=0.5, delta=0.02, dim=50, sigma=0.0, frontier_points=0)
    assert d0.sigma == 0.0 and d0.bound_value <= 0.02
    assert exact_probability(POP, tau=0.5, alpha=d0.alpha, sigma=0.0, dim=50) <= 0.02
    assert exact_probability(POP, tau=0.5, alpha=min(1.0, d0.alpha * 1.001), sigma=0.0, dim=50) > 0.02 or d0.alpha == 1.0
    with pytest.raises(InputError, match="sigma"):
        calibrate(Moments(0.01), tau=0.5, delta=0.01, dim=50, sigma=0.0, method="paper")


def test_knowledge_refuses_an_unknown_combination_in_one_sentence() -> None:
    with pytest.raises(InputError, match="'how'") as exc:
        Knowledge.of(AlmostSure(1.0), how="sum")
    assert str(exc.value).count(". ") <= 2


def test_candidates_all_records_each_bounds_own_frontier_point() -> None:
    c = calibrate([AlmostSure(1.0), Moments(0.02, A=1.0)], tau=0.5, delta=0.01, dim=200, frontier_points=0,
                            candidates="all")
    used = [x for x in c.candidates if x["applicable"]]
    assert {x["unit"] for x in used} >= {"almost-sure", "moments", "paper"}
    assert all(x["alpha_at_sigma"] is not None for x in used)
    # a bound that cannot certify the chosen alpha at any noise says so (None), and its value there exceeds delta
    assert all(x["sigma_at_alpha"] is not None or x["value"] > 0.01 for x in used)
    assert any(x["sigma_at_alpha"] is not None for x in used)
    assert sum(x["selected"] for x in c.candidates) == 1 and c.beta is None and c.point_estimate
    best = max(x["alpha_at_sigma"] for x in used)
    assert c.alpha_at_sigma >= best * (1 - 1e-6)  # the combined minimum is at least as good as each bound alone


def test_frontier_per_unit_and_the_combined_frontier_dominates_each() -> None:
    from biasbound.calibration import frontier

    k = [AlmostSure(1.0), Moments(0.442**2, A=1.0)]
    both = frontier(tau=0.5, delta=0.01, dim=500, knowledge=k, n=4)
    for u in ("almost-sure", "moments", "paper"):
        one = frontier(tau=0.5, delta=0.01, dim=500, knowledge=k, n=4, unit=u)
        assert [p["sigma"] for p in one] == [p["sigma"] for p in both]
        assert all(b["alpha"] >= o["alpha"] * (1 - 1e-4) for b, o in zip(both, one))  # 1e-4: the frontier's bisection tolerance
    with pytest.raises(InputError, match="allows no bound"):
        frontier(tau=0.5, delta=0.01, dim=500, knowledge=k, n=4, unit="full-population")


def test_paper_unit_counts_the_batch_centre_from_the_shift_ratio() -> None:
    # batch centre known through rho only: S^2 = rho U2 enters the Minkowski term (alpha U + (1 - alpha) S)
    fixed = paper.violation_bound(0.5, 0.3, 0.0, 10, Moments(0.04))
    batch = paper.violation_bound(0.5, 0.3, 0.0, 10, Moments(0.04, shift_ratio=0.25))
    S = math.sqrt(0.25 * 0.04)
    assert batch == pytest.approx((0.3 * 0.2 + 0.7 * S) ** 2 / 0.25, rel=1e-9) and batch > fixed

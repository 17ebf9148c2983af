"""Tests for biasbound.audit: the shrinkage identity, exact probabilities, Monte Carlo, verdicts."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import binom, binomtest, ncx2

from biasbound import InputError
from biasbound.audit import AuditResult, audit, audit_certificate, effective_sq_distances, exceedance_probabilities


def two_sided_cp(k: int, n: int, confidence: float) -> tuple[float, float]:
    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")
    return ci.low, ci.high


def shrink_batch(x: np.ndarray, alpha: float) -> np.ndarray:
    """g_D(x) = αx + (1-α)·mean(x)·1, the batch-mean centre written out."""
    return alpha * x + (1 - alpha) * x.mean()


# ----------------------------------------------------------------------------- identity


def test_batch_centre_identity_with_explicit_vectors() -> None:
    f_d = np.array([0.9, 0.2, 0.5, 0.7])
    f_dp = np.array([0.6, 0.3, 0.1, 0.7])
    alpha = 0.6
    direct = float(np.sum((shrink_batch(f_d, alpha) - shrink_batch(f_dp, alpha)) ** 2))
    delta = f_d - f_dp  # (0.3, -0.1, 0.4, 0); mean 0.15; ||Δ||² = 0.26
    s = math.sqrt(4) * abs(delta.mean())  # 0.3
    by_hand = alpha**2 * 0.26 + (1 - alpha**2) * 0.3**2
    assert direct == pytest.approx(by_hand, rel=1e-12)
    got = effective_sq_distances(np.array([np.linalg.norm(delta)]), alpha, np.array([s]))
    assert got[0] == pytest.approx(direct, rel=1e-12)
    # fixed centre: the centre cancels
    mu = np.array([0.5, 0.5, 0.5, 0.5])
    fixed = float(np.sum(((alpha * f_d + (1 - alpha) * mu) - (alpha * f_dp + (1 - alpha) * mu)) ** 2))
    assert effective_sq_distances(np.array([np.linalg.norm(delta)]), alpha, None)[0] == pytest.approx(fixed, rel=1e-12)


def test_audit_batch_centre_matches_direct_vector_computation() -> None:
    gen = np.random.default_rng(5)
    dim, alpha, sigma, tau = 6, 0.7, 0.08, 0.4
    f_d = gen.uniform(size=dim)
    neighbors = np.clip(f_d + gen.normal(0, 0.15, size=(40, dim)), 0, 1)
    diffs = np.array([shrink_batch(f_d, alpha) - shrink_batch(n, alpha) for n in neighbors])
    lam = np.sum(diffs**2, axis=1) / (2 * sigma**2)
    expected = float(np.mean(ncx2.sf(tau**2 / (2 * sigma**2), dim, lam)))
    raw = np.linalg.norm(f_d - neighbors, axis=1)
    shifts = math.sqrt(dim) * np.abs((f_d - neighbors).mean(axis=1))
    res = audit(tau=tau, delta=0.05, sigma=sigma, alpha=alpha, distances=raw, mean_shifts=shifts, dim=dim, n_mc=100, rng=1)
    assert res.exact_probability == pytest.approx(expected, rel=1e-9)
    assert res.center == "batch"


# ----------------------------------------------------------------------------- exact probabilities


@pytest.mark.parametrize("norm", [0.0, 0.2, 0.45, 0.9])
def test_exact_probability_matches_brute_force_simulation(norm: float) -> None:
    """ncx2 p_i equals a d = 5 simulation with explicit noise vectors B ~ N(0, 2σ²I).

    200,000 seeded draws; the test fails if the exact value lies outside the two-sided 99.9%
    Clopper–Pearson interval of the simulated frequency: false-failure rate <= 0.001 per case.
    """
    dim, sigma, tau = 5, 0.15, 0.5
    gen = np.random.default_rng(77)
    direction = gen.normal(size=dim)
    delta_eff = norm * direction / np.linalg.norm(direction)
    n = 200_000
    b = gen.normal(0.0, math.sqrt(2) * sigma, size=(n, dim))
    k = int(np.count_nonzero(np.linalg.norm(delta_eff + b, axis=1) > tau))
    exact = exceedance_probabilities(np.array([norm**2]), tau=tau, sigma=sigma, dim=dim)[0]
    lo, hi = two_sided_cp(k, n, 0.999)
    assert lo <= exact <= hi, (k / n, exact)


def test_sigma_zero_is_an_indicator() -> None:
    """σ = 0: each draw exceeds τ exactly when its neighbour does, so the 400 Monte Carlo hits are
    Bin(400, 1/2); the check fails only if the count leaves the two-sided 99.9% binomial interval
    (false-failure rate <= 0.001)."""
    res = audit(tau=0.5, delta=0.3, sigma=0.0, alpha=0.5, distances=[0.2, 0.99, 1.01, 2.0], dim=3, n_mc=400, rng=0)
    # α·d = 0.1, 0.495, 0.505, 1.0  ->  two exceed τ = 0.5
    assert res.exact_probability == 0.5
    k = round(res.mc_probability * res.n_mc)
    lo, hi = binom.ppf(0.0005, 400, 0.5), binom.isf(0.0005, 400, 0.5)
    assert lo <= k <= hi


def test_exact_and_monte_carlo_agree() -> None:
    """The Monte Carlo frequency agrees with the exact mean p_i.

    20,000 draws; fails if the exact value is outside the two-sided 99.9% Clopper–Pearson
    interval of the Monte Carlo count: false-failure rate <= 0.001.
    """
    gen = np.random.default_rng(3)
    d = gen.uniform(0.0, 1.2, size=300)
    res = audit(tau=0.6, delta=0.1, sigma=0.07, alpha=0.8, distances=d, dim=12, n_mc=20_000, rng=9)
    k = round(res.mc_probability * res.n_mc)
    lo, hi = two_sided_cp(k, res.n_mc, 0.999)
    assert lo <= res.exact_probability <= hi
    assert 0.05 < res.exact_probability < 0.95  # a non-trivial case
    assert res.mc_ucb >= res.mc_probability


def test_monte_carlo_is_reproducible_and_seed_recorded() -> None:
    kw = dict(tau=0.6, delta=0.1, sigma=0.1, alpha=0.8, distances=[0.3, 0.7, 0.9], dim=4, n_mc=5000)
    a = audit(**kw, rng=123)
    b = audit(**kw, rng=123)
    assert a.seed == 123 and a.mc_probability == b.mc_probability
    c = audit(**kw, rng=np.random.default_rng(0))
    assert isinstance(c.seed, int)
    assert audit(**kw, rng=c.seed).to_dict() == c.to_dict()  # the recorded seed reproduces the audit
    assert a.to_dict()["seed"] == 123


# ----------------------------------------------------------------------------- verdicts


def laurent_massart_sigma_max(tau: float, delta: float, dim: int, delta_star: float, alpha: float) -> float:
    """Paper Prop. B.3 with δB = δΔ = δ/2, written out independently of biasbound.bounds.paper."""
    half = delta / 2
    a = alpha * delta_star / math.sqrt(half)
    x = math.log(1 / half)
    return (tau - a) / math.sqrt(2 * (dim + 2 * math.sqrt(dim * x) + 2 * x))


def test_certificate_from_paper_formula_holds() -> None:
    """A certificate calibrated with the paper's formula passes the audit.

    Distances ~ 2·Beta(2, 5), so Δ*² = 4·E[Beta²] = 4·(10/392 + 4/49). α puts the Markov term
    at τ/2 and σ = σ_max. The true failure probability is far below δ (Markov and
    Laurent–Massart are loose), so "holds" fails only if the 99% KL bound fails (<= 0.01).
    """
    tau, delta, dim = 0.5, 0.05, 50
    delta_star = 2 * math.sqrt(10 / 392 + 4 / 49)
    alpha = (tau / 2) * math.sqrt(delta / 2) / delta_star
    sigma = laurent_massart_sigma_max(tau, delta, dim, delta_star, alpha)
    gen = np.random.default_rng(42)
    held_out = 2 * gen.beta(2.0, 5.0, size=2000)
    cert = {"tau": tau, "delta": delta, "sigma": sigma, "alpha": alpha, "dim": dim, "center": {"kind": "fixed", "value": 0.5}}
    res = audit_certificate(cert, held_out, rng=0)
    assert isinstance(res, AuditResult)
    assert res.verdict == "holds"
    assert res.exact_ucb <= delta
    assert res.sigma == sigma and res.alpha == alpha and res.dim == dim


def test_under_noised_certificate_is_violated() -> None:
    """α = 1 and half of the neighbours move more than τ: the failure probability is about 1/2.

    "violated" needs the 99% KL lower bound above δ = 0.05; with 400 neighbours and mean ≈ 0.5
    it fails only if the KL bound fails (<= 0.01).
    """
    d = np.r_[np.full(200, 0.1), np.full(200, 1.0)]
    cert = SimpleNamespace(tau=0.5, delta=0.05, sigma=0.01, alpha=1.0, dim=10, center={"kind": "holdout", "value": 0.5})
    res = audit_certificate(cert, d, rng=0, n_mc=2000)
    assert res.verdict == "violated"
    assert res.exact_lcb > 0.05
    assert res.exact_probability == pytest.approx(0.5, abs=0.01)


def test_few_neighbors_are_inconclusive() -> None:
    # three neighbours with p_i = 0: the 99% KL upper bound is 1 - 0.01^(1/3) ≈ 0.78 > δ
    res = audit(tau=0.5, delta=0.05, sigma=0.0, alpha=0.5, distances=[0.1, 0.2, 0.3], dim=5, n_mc=100, rng=0)
    assert res.exact_probability == 0.0
    assert res.exact_ucb == pytest.approx(1 - 0.01 ** (1 / 3), rel=1e-9)
    assert res.verdict == "inconclusive"


# ----------------------------------------------------------------------------- certificate plumbing / validation


def test_audit_certificate_batch_centre_needs_mean_shifts() -> None:
    cert = {"tau": 0.5, "delta": 0.05, "sigma": 0.05, "alpha": 0.5, "dim": 4, "center": {"kind": "batch", "value": 0.4}}
    with pytest.raises(InputError, match="batch-mean centre"):
        audit_certificate(cert, [0.1, 0.2])
    res = audit_certificate(cert, [0.1, 0.2], mean_shifts=[0.05, 0.0], n_mc=100, rng=0)
    assert res.center == "batch"
    fixed = dict(cert, center={"kind": "fixed", "value": 0.4})
    with pytest.raises(InputError, match="only applies to a batch-mean centre"):
        audit_certificate(fixed, [0.1, 0.2], mean_shifts=[0.05, 0.0])
    with pytest.raises(InputError, match="'sigma'"):
        audit_certificate({k: v for k, v in cert.items() if k != "sigma"}, [0.1])
    with pytest.raises(TypeError, match="unexpected keyword"):
        audit_certificate(fixed, [0.1], tau=0.3)


def test_audit_validates_input() -> None:
    base = dict(tau=0.5, delta=0.05, sigma=0.1, alpha=0.5, dim=3, distances=[0.1, 0.2])
    with pytest.raises(InputError, match="'delta'"):
        audit(**{**base, "delta": 1.5})
    with pytest.raises(InputError, match="'alpha'"):
        audit(**{**base, "alpha": 1.2})
    with pytest.raises(InputError, match="'sigma'"):
        audit(**{**base, "sigma": -0.1})
    with pytest.raises(InputError, match="drop missing"):
        audit(**{**base, "distances": [0.1, np.nan]})
    with pytest.raises(InputError, match="non-negative"):
        audit(**{**base, "distances": [0.1, -0.2]})
    with pytest.raises(InputError, match="one value per neighbour"):
        audit(**base, mean_shifts=[0.1])
    with pytest.raises(InputError, match="'dim'"):
        audit(**{**base, "dim": 0})


def test_max_distance_scales_bounds_and_a_certificate_it_implies_is_not_contradictable():
    """With the certificate's almost-sure bound D, every p_i <= p(D) = p_max, so 150 neighbours suffice.

    Deterministic whatever the seeded draws: every p_i <= p_max ~ 1e-64, so the plain KL bound is
    ~log(100)/150 ~ 0.03 > delta (inconclusive) and the scaled one is ~p_max (holds); false-failure
    rate 0.
    """
    rng = np.random.default_rng(11)
    dist = rng.uniform(0.0, 1.0, size=150)
    kw = dict(tau=0.5, delta=0.01, sigma=0.0074, alpha=0.25, dim=500, distances=dist, rng=3, n_mc=2000)
    plain = audit(**kw)
    bounded = audit(**kw, max_distance=1.0)
    assert plain.verdict == "inconclusive"  # KL bound ~ log(100)/150 = 0.03 > delta
    assert bounded.verdict == "not contradictable"  # p_max <= delta: the a.s. bound alone implies the claim
    assert bounded.exact_ucb <= 0.01  # and the scaled KL bound would have said "holds"
    # p_max is the exceedance probability of the farthest admissible neighbour, computed independently.
    scale = 2 * 0.0074**2
    expected_pmax = ncx2.sf(0.25 / scale, 500, 0.25**2 / scale)
    assert bounded.p_max == pytest.approx(expected_pmax, rel=1e-9)
    p = ncx2.sf(0.25 / scale, 500, (0.25 * dist) ** 2 / scale)
    assert np.all(p <= bounded.p_max * (1 + 1e-12))
    assert bounded.exact_ucb <= bounded.p_max
    assert bounded.exact_ucb >= bounded.exact_probability


def test_distance_beyond_the_assumed_bound_is_a_violation():
    dist = np.array([0.1, 0.2, 1.5])
    res = audit(tau=0.5, delta=0.01, sigma=0.0074, alpha=0.25, dim=500, distances=dist, rng=0, n_mc=100, max_distance=1.0)
    assert res.bound_violations == 1
    assert res.verdict == "violated"


# ----------------------------------------------------------------------------- memoised evaluation


@pytest.mark.parametrize("n_distinct", [5, 500])
def test_exceedance_probabilities_equal_elementwise_scipy(n_distinct: int) -> None:
    """Distinct distances evaluated once (and memoised when few) give scipy's per-element values exactly."""
    from scipy.stats import chi2

    rng = np.random.default_rng(4)
    values = np.r_[0.0, rng.random(n_distinct - 1) * 0.01]
    sq = rng.choice(values, size=(40, 30))
    tau, sigma, dim = 0.5, 0.05, 37
    x = tau * tau / (2 * sigma * sigma)
    ref = np.array([[chi2.sf(x, dim) if v == 0 else ncx2.sf(x, dim, v / (2 * sigma * sigma)) for v in row] for row in sq])
    for _ in range(2):  # the second call is served from the memo when few distances
        np.testing.assert_array_equal(exceedance_probabilities(sq, tau=tau, sigma=sigma, dim=dim), ref)


def test_audit_monte_carlo_bound_is_clopper_pearson() -> None:
    """The (memoised) Monte Carlo bound equals scipy's one-sided exact interval for the observed count."""
    d = np.full(50, 0.2)
    for seed in (1, 2):
        res = audit(tau=0.5, delta=0.05, sigma=0.2, alpha=1.0, distances=d, dim=3, n_mc=400, rng=seed)
        k = round(res.mc_probability * res.n_mc)
        want = binomtest(k, 400, alternative="less").proportion_ci(confidence_level=0.99, method="exact").high
        assert res.mc_ucb == want

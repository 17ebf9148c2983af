"""Tests for biasbound.sensitivity: exact values, bound properties, and UCB coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from biasbound import InputError
from biasbound.sensitivity import (
    CombinedSensitivity,
    SensitivityEstimate,
    bonferroni,
    combine,
    context_adjusted_rms,
    distances,
    estimate,
    kl_lower_bound,
    kl_upper_bound,
    rms,
    sensitivity_lcb,
    sensitivity_ucb,
)


def naive_kl(p: float, q: float) -> float:
    """Bernoulli KL written out term by term (0 log 0 = 0)."""
    out = 0.0
    if p > 0:
        out += p * math.log(p / q)
    if p < 1:
        out += (1 - p) * math.log((1 - p) / (1 - q))
    return out


def bisect_kl_upper(mean: float, n: int, beta: float) -> float:
    """Reference: plain bisection for the largest q with n·kl(mean||q) <= log(1/beta)."""
    lo, hi = mean, 1.0 - 1e-15
    target = math.log(1 / beta)
    if n * naive_kl(mean, hi) <= target:
        return 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if n * naive_kl(mean, mid) <= target:
            lo = mid
        else:
            hi = mid
    return hi


# ----------------------------------------------------------------------------- distances / rms


def test_distances_by_hand() -> None:
    original = np.array([0.0, 0.0, 1.0])
    neighbors = np.array([[3.0, 4.0, 1.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(distances(original, neighbors), [5.0, 0.0, math.sqrt(2.0)])


def test_distances_nan_tells_user_to_drop_missing() -> None:
    with pytest.raises(InputError, match="drop missing judgments"):
        distances([0.1, np.nan], [[0.1, 0.2]])
    with pytest.raises(InputError, match="drop missing judgments"):
        distances([0.1, 0.2], [[0.1, np.nan]])


def test_distances_shape_mismatch() -> None:
    with pytest.raises(InputError, match=r"shape \(m, 2\)"):
        distances([0.1, 0.2], [[0.1, 0.2, 0.3]])
    with pytest.raises(InputError, match="2-D"):
        distances([0.1, 0.2], [0.1, 0.2])


def test_rms_known_values() -> None:
    assert rms([3.0, 4.0]) == pytest.approx(math.sqrt((9 + 16) / 2))
    assert rms([0.0, 0.0, 0.0]) == 0.0
    assert rms([2.0]) == 2.0
    with pytest.raises(InputError, match="non-negative"):
        rms([1.0, -0.5])
    with pytest.raises(InputError, match="at least 1"):
        rms([])


# ----------------------------------------------------------------------------- confidence bounds


@pytest.mark.parametrize("mean", [0.0, 0.01, 0.2, 0.5, 0.93, 0.999])
@pytest.mark.parametrize("n", [1, 7, 100, 5000])
def test_kl_upper_bound_solves_the_equation_on_the_safe_side(mean: float, n: int) -> None:
    beta = 0.05
    q = kl_upper_bound(mean, n, beta)
    target = math.log(1 / beta)
    assert mean <= q <= 1.0
    if q < 1.0:
        # on the safe side (at or beyond the root) and within tolerance of it
        assert n * naive_kl(mean, q) >= target - 1e-12
        assert n * naive_kl(mean, q) <= target + 1e-6
    assert q == pytest.approx(bisect_kl_upper(mean, n, beta), abs=1e-9)


def test_kl_upper_bound_zero_mean_closed_form() -> None:
    # kl(0 || q) = -log(1 - q)  =>  q = 1 - beta^(1/n)
    assert kl_upper_bound(0.0, 10, 0.05) == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12)
    assert kl_upper_bound(1.0, 10, 0.05) == 1.0


def test_kl_lower_bound_mirrors_upper() -> None:
    for mean in (0.0, 0.3, 0.8, 1.0):
        assert kl_lower_bound(mean, 50, 0.01) == pytest.approx(1 - kl_upper_bound(1 - mean, 50, 0.01), abs=1e-15)
        assert kl_lower_bound(mean, 50, 0.01) <= mean


def test_ucb_methods_match_hand_formulas() -> None:
    d = np.array([0.1, 0.5, 0.3, 0.0, 0.9, 0.2, 0.4, 0.6])
    big_m = 2.0
    beta = 0.1
    x = (d / big_m) ** 2
    m = d.size
    mean = x.mean()
    var = ((x - mean) ** 2).sum() / (m - 1)
    log_term = math.log(2 / beta)
    bern = mean + math.sqrt(2 * var * log_term / m) + 7 * log_term / (3 * (m - 1))
    assert sensitivity_ucb(d, beta=beta, max_distance=big_m, method="bernstein") == pytest.approx(
        big_m * math.sqrt(min(1.0, bern)), rel=1e-12
    )
    kl_q = bisect_kl_upper(mean, m, beta)
    assert sensitivity_ucb(d, beta=beta, max_distance=big_m, method="kl") == pytest.approx(big_m * math.sqrt(kl_q), rel=1e-9)
    best_expected = big_m * math.sqrt(
        min(
            1.0,
            bisect_kl_upper(mean, m, beta / 2),
            mean + math.sqrt(2 * var * math.log(4 / beta) / m) + 7 * math.log(4 / beta) / (3 * (m - 1)),
        )
    )
    assert sensitivity_ucb(d, beta=beta, max_distance=big_m) == pytest.approx(best_expected, rel=1e-9)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=60),
    st.sampled_from(["kl", "bernstein", "best"]),
    st.floats(1e-4, 0.5),
)
def test_ucb_between_point_estimate_and_max(values: list[float], method: str, beta: float) -> None:
    d = np.array(values) * 3.0
    u = sensitivity_ucb(d, beta=beta, max_distance=3.0, method=method)
    assert rms(d) <= u <= 3.0


def test_ucb_converges_to_delta_star_as_m_grows() -> None:
    """The UCB's excess over Δ* shrinks like 1/sqrt(m). Seeded (deterministic). Over seeds 0-199 it
    never failed: the excess at m = 10^5 was at most 1.75e-3 against the 5e-3 threshold, and each
    tenfold m cuts the excess ~4x (0.13, 0.031, 0.0065, 0.0017) far beyond its seed-to-seed spread;
    false-failure rate < 1/200 by that check, and far smaller by the margins."""
    gen = np.random.default_rng(11)
    gaps = []
    for m in (100, 1_000, 10_000, 100_000):
        d = gen.beta(2.0, 5.0, size=m)
        gaps.append(sensitivity_ucb(d, beta=0.05, max_distance=1.0) - rms(d))
    assert all(g > 0 for g in gaps)
    assert gaps == sorted(gaps, reverse=True)
    assert gaps[-1] < 0.005


def test_ucb_rejects_bad_input() -> None:
    with pytest.raises(InputError, match=r"\[0, max_distance=1\]"):
        sensitivity_ucb([0.5, 1.5], beta=0.05, max_distance=1.0)
    with pytest.raises(InputError, match="at least 2"):
        sensitivity_ucb([0.5], beta=0.05, max_distance=1.0)
    with pytest.raises(InputError, match="non-negative"):
        sensitivity_ucb([0.5, -0.1], beta=0.05, max_distance=1.0)
    with pytest.raises(InputError, match="'beta'"):
        sensitivity_ucb([0.5, 0.1], beta=1.0, max_distance=1.0)
    with pytest.raises(InputError, match="'method'"):
        sensitivity_ucb([0.5, 0.1], beta=0.1, max_distance=1.0, method="hoeffding")
    with pytest.raises(InputError, match="drop missing"):
        sensitivity_ucb([0.5, np.nan], beta=0.1, max_distance=1.0)


def _coverage_failures(sampler, delta_star: float, method: str, reps: int, m: int, beta: float, seed: int) -> int:
    gen = np.random.default_rng(seed)
    fails = 0
    for _ in range(reps):
        d = sampler(gen, m)
        if method == "plug-in":
            bound = rms(d)
        else:
            bound = sensitivity_ucb(d, beta=beta, max_distance=1.0, method=method)
        fails += bound < delta_star
    return fails


SAMPLERS = {
    # distances in {0, 1}: Δ* = sqrt(p)
    "bernoulli": (lambda g, m: g.binomial(1, 0.1, size=m).astype(float), math.sqrt(0.1)),
    # distances ~ Beta(2, 5): E d² = var + mean² = 10/(49·8) + 4/49
    "beta": (lambda g, m: g.beta(2.0, 5.0, size=m), math.sqrt(10 / (49 * 8) + 4 / 49)),
}


@pytest.mark.parametrize("dist", sorted(SAMPLERS))
@pytest.mark.parametrize("method", ["kl", "bernstein", "best"])
def test_ucb_coverage(dist: str, method: str) -> None:
    """Non-coverage of the (1 - β) UCB does not exceed β.

    600 seeded replications with m = 30, β = 0.1. The test fails if the one-sided 99.9%
    Clopper–Pearson lower bound on the non-coverage rate exceeds β; if the bound is valid
    this happens with probability <= 0.001 per case (<= 0.006 over the six cases).
    """
    sampler, delta_star = SAMPLERS[dist]
    reps, beta = 600, 0.1
    fails = _coverage_failures(sampler, delta_star, method, reps, 30, beta, seed=2024)
    lower = binomtest(fails, reps, alternative="greater").proportion_ci(confidence_level=0.999, method="exact").low
    assert lower <= beta, (fails, reps)


@pytest.mark.parametrize("dist", sorted(SAMPLERS))
def test_coverage_check_has_power(dist: str) -> None:
    """The coverage check rejects the plug-in RMS, which is no confidence bound.

    Same design as test_ucb_coverage. The plug-in undershoots Δ* in roughly half of the
    replications, so its CP lower bound exceeds 0.1 except with negligible probability
    (< 1e-6 by a binomial tail at p = 0.3).
    """
    sampler, delta_star = SAMPLERS[dist]
    fails = _coverage_failures(sampler, delta_star, "plug-in", 600, 30, 0.1, seed=2024)
    lower = binomtest(fails, 600, alternative="greater").proportion_ci(confidence_level=0.999, method="exact").low
    assert lower > 0.1


# ----------------------------------------------------------------------------- estimate


def test_estimate_fields() -> None:
    d = np.array([0.3, 0.4, 0.0, 0.5])
    e = estimate(d, name="swap")
    assert isinstance(e, SensitivityEstimate)
    assert e.delta_star == pytest.approx(math.sqrt((0.09 + 0.16 + 0.25) / 4))
    assert e.m == 4 and e.ucb is None and e.beta is None and e.center_shift is None
    e2 = estimate(d, name="swap", beta=0.05, max_distance=1.0, mean_shifts=[0.1, 0.2, 0.0, 0.2])
    assert e2.ucb == sensitivity_ucb(d, beta=0.05, max_distance=1.0)
    assert e2.ucb_method == "best" and e2.beta == 0.05 and e2.max_distance == 1.0
    assert e2.center_shift == pytest.approx(math.sqrt((0.01 + 0.04 + 0.04) / 4))
    assert e2.to_dict()["name"] == "swap"
    e3 = estimate(d, name="swap", max_distance=1.0)
    assert e3.ucb is None and e3.max_distance == 1.0


def test_estimate_rejects_bad_input() -> None:
    with pytest.raises(InputError, match="'max_distance'"):
        estimate([0.1, 0.2], name="x", beta=0.05)
    with pytest.raises(InputError, match="one value per neighbour"):
        estimate([0.1, 0.2], name="x", mean_shifts=[0.1])
    with pytest.raises(InputError, match="'name'"):
        estimate([0.1, 0.2], name="")
    with pytest.raises(InputError, match=r"\[0, max_distance=0.15\]"):
        estimate([0.1, 0.2], name="x", max_distance=0.15)


# ----------------------------------------------------------------------------- combine


def test_combine_max_and_rms_with_floor() -> None:
    a = SensitivityEstimate(name="fmt", delta_star=0.2, m=10, ucb=0.3)
    b = SensitivityEstimate(name="sch", delta_star=0.0, m=10, ucb=0.0001)
    c = SensitivityEstimate(name="psy", delta_star=0.1, m=10, ucb=0.25)
    mx = combine([a, b, c], how="max")
    assert isinstance(mx, CombinedSensitivity)
    assert mx.components == {"fmt": 0.2, "sch": 1e-3, "psy": 0.1}
    assert mx.delta_star == 0.2 and mx.ucb == 0.3
    r = combine([a, b, c], how="rms")
    assert r.delta_star == pytest.approx(math.sqrt((0.04 + 1e-6 + 0.01) / 3))
    assert r.ucb == pytest.approx(math.sqrt((0.09 + 1e-6 + 0.0625) / 3))
    assert r.ucb_components == {"fmt": 0.3, "sch": 1e-3, "psy": 0.25}
    assert r.generators == {
        "fmt": {"delta_star": 0.2, "m": 10, "ucb": 0.3},
        "sch": {"delta_star": 0.0, "m": 10, "ucb": 0.0001},
        "psy": {"delta_star": 0.1, "m": 10, "ucb": 0.25},
    }
    assert r.to_dict()["how"] == "rms"


def test_combine_mapping_and_missing_ucb() -> None:
    out = combine({"fmt": 0.0, "sch": 0.4}, how="max", floor=0.01)
    assert out.components == {"fmt": 0.01, "sch": 0.4} and out.ucb is None
    assert out.generators == {"fmt": {"delta_star": 0.0, "m": None, "ucb": None}, "sch": {"delta_star": 0.4, "m": None, "ucb": None}}
    a = SensitivityEstimate(name="fmt", delta_star=0.2, m=10, ucb=0.3)
    b = SensitivityEstimate(name="sch", delta_star=0.1, m=10)
    assert combine([a, b]).ucb is None


def test_combine_rejects_bad_input() -> None:
    a = SensitivityEstimate(name="fmt", delta_star=0.2, m=10)
    with pytest.raises(InputError, match="distinct names"):
        combine([a, a])
    with pytest.raises(InputError, match="at least one"):
        combine([])
    with pytest.raises(InputError, match="'how'"):
        combine([a], how="mean")
    with pytest.raises(TypeError, match="SensitivityEstimate"):
        combine([0.3])  # type: ignore[list-item]


def test_bonferroni() -> None:
    assert bonferroni(0.05, 5) == pytest.approx(0.01)
    with pytest.raises(InputError, match="'k'"):
        bonferroni(0.05, 0)


# ----------------------------------------------------------------------------- context_adjusted_rms


def test_context_adjusted_rms_edges() -> None:
    assert context_adjusted_rms(0.5, 0.3) == pytest.approx(0.4)
    assert context_adjusted_rms(0.0, 0.0) == 0.0
    assert context_adjusted_rms(0.7, 0.7) == 0.0
    assert context_adjusted_rms(0.2, 0.9) == 0.0
    assert context_adjusted_rms(0.6, 0.0) == 0.6
    with pytest.raises(InputError, match="'total'"):
        context_adjusted_rms(-0.1, 0.0)
    with pytest.raises(InputError, match="'intrinsic'"):
        context_adjusted_rms(0.1, math.nan)
    with pytest.raises(InputError, match="'total'"):
        context_adjusted_rms(math.inf, 0.0)


# ----------------------------------------------------------------------------- lower confidence bound (jitter)


def test_lcb_methods_match_hand_formulas() -> None:
    d = np.array([0.1, 0.5, 0.3, 0.0, 0.9, 0.2, 0.4, 0.6])
    big_m, beta = 2.0, 0.1
    x = (d / big_m) ** 2
    m, mean = d.size, x.mean()
    var = ((x - mean) ** 2).sum() / (m - 1)
    # KL lower bound = 1 - (KL upper bound of 1 - X), by plain bisection
    kl_lo = 1 - bisect_kl_upper(1 - mean, m, beta)
    assert sensitivity_lcb(d, beta=beta, max_distance=big_m, method="kl") == pytest.approx(big_m * math.sqrt(kl_lo), rel=1e-9)
    big = np.full(400, 0.5)  # zero variance: Bernstein lower bound = mean - 7 log(2/beta) / (3 (m - 1))
    bern = 0.25 - 7 * math.log(2 / beta) / (3 * 399)
    assert sensitivity_lcb(big, beta=beta, max_distance=1.0, method="bernstein") == pytest.approx(math.sqrt(bern), rel=1e-12)
    lo = max(1 - bisect_kl_upper(1 - mean, m, beta / 2),
             mean - math.sqrt(2 * var * math.log(4 / beta) / m) - 7 * math.log(4 / beta) / (3 * (m - 1)), 0.0)
    assert sensitivity_lcb(d, beta=beta, max_distance=big_m) == pytest.approx(big_m * math.sqrt(lo), rel=1e-9)


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=2, max_size=60), st.sampled_from(["kl", "bernstein", "best"]),
       st.floats(1e-4, 0.5))
def test_lcb_between_zero_and_point_estimate(values: list[float], method: str, beta: float) -> None:
    d = np.array(values)
    assert 0.0 <= sensitivity_lcb(d, beta=beta, max_distance=1.0, method=method) <= rms(d)


@pytest.mark.parametrize("dist", sorted(SAMPLERS))
def test_lcb_coverage(dist: str) -> None:
    """Pr[LCB > Δ*] does not exceed β: 600 seeded replications, m = 30, β = 0.1.

    Fails if the one-sided 99.9% Clopper–Pearson lower bound on the rate exceeds β
    (false-failure probability <= 0.001 per case when the bound is valid).
    """
    sampler, delta_star = SAMPLERS[dist]
    gen = np.random.default_rng(77)
    fails = sum(sensitivity_lcb(sampler(gen, 30), beta=0.1, max_distance=1.0) > delta_star for _ in range(600))
    lower = binomtest(fails, 600, alternative="greater").proportion_ci(confidence_level=0.999, method="exact").low
    assert lower <= 0.1, fails


def test_lcb_rejects_bad_input() -> None:
    with pytest.raises(InputError, match=r"\[0, max_distance=1\]"):
        sensitivity_lcb([0.5, 1.5], beta=0.05, max_distance=1.0)
    with pytest.raises(InputError, match="at least 2"):
        sensitivity_lcb([0.5], beta=0.05, max_distance=1.0)

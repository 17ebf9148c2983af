"""Exact-value, property and bad-input tests for biasbound.abb (calibration, shrinkage, mechanism)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from biasbound import InfeasibleCertificateError, InputError
from biasbound.abb import (
    Calibration,
    alpha_max,
    apply_mechanism,
    calibrate,
    chi2_radius,
    guarantee_holds,
    laurent_massart_radius,
    order_statistic_index,
    shrink,
    sigma_max_paper,
)

HYP = settings(max_examples=40, deadline=None, derandomize=True)


# --------------------------------------------------------------------------- exact values (paper)
def test_paper_sigma_max_by_hand() -> None:
    """d=500, tau=0.5, delta=0.01, Delta*=0.306, alpha=0.05 (Corollary 3.2 typed out by hand)."""
    d, tau, delta, s, alpha = 500, 0.5, 0.01, 0.306, 0.05
    a_hand = alpha * s * math.sqrt(2 / delta)  # symmetric split: 1/sqrt(delta/2)
    log_term = math.log(2 / delta)
    denom_hand = math.sqrt(2 * (d + 2 * math.sqrt(d * log_term) + 2 * log_term))
    sigma_hand = (tau - a_hand) / denom_hand
    assert a_hand == pytest.approx(0.2163747, abs=1e-7)
    assert sigma_hand == pytest.approx(0.0080967, abs=1e-7)

    cal = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, method="paper")
    assert cal.bound_used == "markov" and cal.radius == "laurent-massart"
    assert cal.delta_B == delta / 2 and cal.delta_Delta == delta / 2
    assert cal.sensitivity_term == pytest.approx(a_hand, rel=1e-12)
    assert cal.sensitivity_term >= a_hand  # a rounded up
    assert cal.sigma_max == pytest.approx(sigma_hand, rel=1e-12)
    assert cal.sigma_max <= sigma_hand  # sigma_max rounded down
    assert cal.sigma < cal.sigma_max  # sigma strictly below (nextafter toward 0)
    assert cal.alpha == alpha and cal.beta is None
    assert cal.alpha_max == pytest.approx(tau * math.sqrt(delta / 2) / s, rel=1e-12)
    assert cal.alpha_max <= tau * math.sqrt(delta / 2) / s
    assert sigma_max_paper(tau=tau, delta_B=delta / 2, delta_Delta=delta / 2, dim=d, sensitivity=s,
                           lipschitz=alpha) == cal.sigma_max
    assert guarantee_holds(cal)


def test_laurent_massart_radius_by_hand() -> None:
    d, dB = 500, 0.005
    x = math.log(1 / dB)
    hand = math.sqrt(d + 2 * math.sqrt(d * x) + 2 * x)
    r = laurent_massart_radius(d, dB)
    assert r >= hand and r == pytest.approx(hand, rel=1e-13)


def test_feasibility_boundary_alpha_max() -> None:
    tau, delta, d, s = 0.5, 0.01, 500, 0.306
    amax = tau * math.sqrt(delta / 2) / s  # 0.11554...
    below = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=amax * (1 - 1e-9), method="paper")
    assert 0 < below.sigma_max < 1e-9  # feasible, but almost no room for noise
    with pytest.raises(InfeasibleCertificateError) as info:
        calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=amax * (1 + 1e-9), method="paper")
    assert info.value.alpha_max == pytest.approx(amax, rel=1e-12)
    assert info.value.alpha_max <= amax


def test_infeasible_message_names_alpha_max() -> None:
    with pytest.raises(InfeasibleCertificateError) as info:
        calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.9, method="paper")
    msg = str(info.value)
    # the sensitivity term alone: 0.9 * 0.306 / sqrt(0.005) = 3.894...
    assert "tau=0.5" in msg and "alpha=0.9" in msg and "3.89" in msg
    assert "alpha < 0.115 (alpha_max)" in msg  # 0.11554 printed rounded toward 0


def test_alpha_max_helper_fixed_and_batch_center() -> None:
    assert alpha_max(tau=0.5, delta_Delta=0.005, sensitivity=0.306) == pytest.approx(0.5 * math.sqrt(0.005) / 0.306)
    assert alpha_max(tau=0.5, delta_Delta=0.005, sensitivity=0.0) == 1.0
    # batch centre: (alpha s + (1 - alpha) S) / sqrt(dD) < tau  <=>  alpha < (tau sqrt(dD) - S) / (s - S)
    s, S, dD, tau = 0.3, 0.01, 0.005, 0.5
    expect = (tau * math.sqrt(dD) - S) / (s - S)
    assert alpha_max(tau=tau, delta_Delta=dD, sensitivity=s, center_sensitivity=S) == pytest.approx(expect, rel=1e-12)
    # centre term alone too large: no alpha works
    assert alpha_max(tau=tau, delta_Delta=dD, sensitivity=s, center_sensitivity=0.05) == 0.0


def test_batch_center_effective_sensitivity() -> None:
    """Markov with a batch-mean centre uses alpha Delta* + (1 - alpha) S_mu (Appendix B, RMS form)."""
    tau, delta, d, s, S, alpha = 0.5, 0.01, 400, 0.3, 0.02, 0.05
    cal = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, center_sensitivity=S, method="paper")
    a_hand = (alpha * s + (1 - alpha) * S) / math.sqrt(delta / 2)
    assert cal.sensitivity_term == pytest.approx(a_hand, rel=1e-12)
    assert cal.center_sensitivity == S
    fixed = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, method="paper")
    assert cal.sigma_max < fixed.sigma_max
    with pytest.raises(InfeasibleCertificateError):
        calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, center_sensitivity=0.05, method="paper")


def test_default_alpha_uses_tau_split() -> None:
    tau, delta, d, s = 0.5, 0.01, 500, 0.306
    cal = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, method="paper")
    alpha_hand = 0.5 * tau * math.sqrt(delta / 2) / s
    assert cal.alpha == pytest.approx(alpha_hand, rel=1e-12) and cal.alpha <= alpha_hand
    lm = math.sqrt(d + 2 * math.sqrt(d * math.log(2 / delta)) + 2 * math.log(2 / delta))
    assert cal.sigma_max == pytest.approx((tau - 0.5 * tau) / (math.sqrt(2) * lm), rel=1e-12)
    cal2 = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, method="paper", tau_split=0.2)
    assert cal2.alpha == pytest.approx(0.2 * tau * math.sqrt(delta / 2) / s, rel=1e-12)
    assert cal2.sigma_max > cal.sigma_max
    # tiny sensitivity: no shrinkage needed, alpha capped at 1
    cal3 = calibrate(tau=tau, delta=delta, dim=d, sensitivity=1e-4, method="paper")
    assert cal3.alpha == 1.0 and cal3.alpha_max == 1.0


def test_zero_sensitivity() -> None:
    cal = calibrate(tau=0.5, delta=0.01, dim=10, sensitivity=0.0, method="paper")
    assert cal.alpha == 1.0 and cal.sensitivity_term == 0.0
    assert cal.sigma_max == pytest.approx(0.5 / (math.sqrt(2) * laurent_massart_radius(10, 0.005)), rel=1e-12)


def test_beta_uses_ucb() -> None:
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.3, sensitivity_ucb=0.34, beta=0.05, alpha=0.05,
                    method="paper")
    assert cal.sensitivity == 0.34 and cal.beta == 0.05
    assert cal.sensitivity_term == pytest.approx(0.05 * 0.34 / math.sqrt(0.005), rel=1e-12)
    with pytest.raises(InputError, match="sensitivity_ucb"):
        calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.3, beta=0.05, method="paper")
    with pytest.raises(InputError, match="beta"):
        calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.3, sensitivity_ucb=0.34, method="paper")


def test_explicit_delta_B_is_not_searched() -> None:
    for method in ("paper", "tight"):
        cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, delta_B=0.002, method=method)
        assert cal.delta_B == 0.002 and cal.delta_Delta == pytest.approx(0.008, rel=1e-12)
        assert cal.delta_B + cal.delta_Delta <= 0.01


def test_sigma_given_and_bounds() -> None:
    base = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, method="paper")
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, method="paper", sigma=0.005)
    assert cal.sigma == 0.005 and guarantee_holds(cal)
    with pytest.raises(InputError, match="'sigma'"):
        calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, method="paper", sigma=base.sigma_max * 1.001)
    with pytest.raises(InputError, match="'sigma'"):
        calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, method="paper", sigma=0.0)


def test_guarantee_holds_catches_tampering() -> None:
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05)
    assert guarantee_holds(cal)
    assert not guarantee_holds(dataclasses.replace(cal, sigma=cal.sigma_max * 1.01))
    assert not guarantee_holds(dataclasses.replace(cal, sensitivity=cal.sensitivity * 1.05))
    assert not guarantee_holds(dataclasses.replace(cal, delta_B=cal.delta_B * 2))


# --------------------------------------------------------------------------- tight calibration
def test_deterministic_bound_exact() -> None:
    """max_distance M: a = alpha M, no delta_Delta, delta_B = delta, exact chi2 radius."""
    tau, delta, d, M, alpha = 0.5, 0.01, 500, 1.0, 0.2
    cal = calibrate(tau=tau, delta=delta, dim=d, max_distance=M, alpha=alpha)
    assert cal.bound_used == "deterministic" and cal.delta_Delta == 0.0 and cal.delta_B == delta
    r = math.sqrt(stats.chi2.isf(delta, d))
    assert cal.sigma_max == pytest.approx((tau - alpha * M) / (math.sqrt(2) * r), rel=1e-9)
    assert stats.chi2.sf(cal.noise_radius_unit**2, d) <= delta
    assert cal.beta is None and guarantee_holds(cal)
    free = calibrate(tau=tau, delta=delta, dim=d, max_distance=M)
    assert free.alpha == pytest.approx(0.5 * tau / M, rel=1e-12) and free.alpha <= 0.5 * tau / M


def test_tight_records_candidates() -> None:
    rng = np.random.default_rng(3)
    dist = rng.exponential(0.05, size=3000)
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=float(np.sqrt(np.mean(dist**2))), max_distance=1.0,
                    alpha=0.3)
    names = [c["name"] for c in cal.candidates]
    assert sorted(names) == ["deterministic", "markov", "order-statistic"]
    sel = [c for c in cal.candidates if c["selected"]]
    assert len(sel) == 1 and sel[0]["name"] == cal.bound_used
    for c in cal.candidates:
        if c["available"]:
            assert c["sigma_max"] <= cal.sigma_max
        else:
            assert c["reason"]
    os_rec = next(c for c in cal.candidates if c["name"] == "order-statistic")
    assert os_rec["reason"] == "no distances given"


def test_order_statistic_condition_checked_with_scipy() -> None:
    rng = np.random.default_rng(11)
    dist = rng.gamma(0.5, 0.04, size=4000)
    beta, delta = 0.05, 0.01
    cal = calibrate(tau=0.5, delta=delta, dim=300, distances=dist, beta=beta, alpha=0.5)
    assert cal.bound_used == "order-statistic"
    sel = cal.selected
    j, m, b_each = sel["order_index"], sel["m"], sel["beta_per_split"]
    assert m == dist.size and b_each == pytest.approx(beta / sel["n_splits"])
    assert cal.sensitivity == np.sort(dist)[j - 1]
    assert stats.binom.sf(j - 1, m, 1 - cal.delta_Delta) <= b_each  # the bound holds
    assert stats.binom.sf(j - 2, m, 1 - cal.delta_Delta) > b_each * (1 - 1e-9)  # and j is the smallest
    assert cal.beta == beta and guarantee_holds(cal)
    assert order_statistic_index(m, cal.delta_Delta, b_each) == j
    # too few distances for the quantile: unavailable, not silently used
    assert order_statistic_index(100, 0.001, 0.05) is None


def test_order_statistic_not_used_with_ucb_or_batch_center() -> None:
    dist = np.full(5000, 0.01)
    cal = calibrate(tau=0.5, delta=0.01, dim=300, distances=dist, beta=0.05, sensitivity_ucb=0.02, alpha=0.5)
    os_rec = next(c for c in cal.candidates if c["name"] == "order-statistic")
    assert not os_rec["available"] and "sensitivity_ucb" in os_rec["reason"]
    cal2 = calibrate(tau=0.5, delta=0.01, dim=300, distances=dist, beta=0.05, max_distance=1.0, center_max=0.01,
                     center_sensitivity=0.001, alpha=0.3)
    os2 = next(c for c in cal2.candidates if c["name"] == "order-statistic")
    assert not os2["available"] and "centre" in os2["reason"]


def test_tight_never_looser_example() -> None:
    p = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, method="paper")
    t = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, method="tight")
    assert t.alpha > p.alpha and t.sigma >= p.sigma
    assert t.radius == "chi2-exact"
    # the free split's delta_B keeps the exact chi2 radius within the paper's LM radius
    assert chi2_radius(500, t.delta_B) <= laurent_massart_radius(500, 0.005)


# --------------------------------------------------------------------------- hypothesis properties
dims = st.integers(min_value=1, max_value=3000)
taus = st.floats(min_value=0.05, max_value=5.0)
deltas = st.floats(min_value=1e-4, max_value=0.3)
sens = st.floats(min_value=1e-4, max_value=2.0)


@HYP
@given(d=dims, tau=taus, delta=deltas, s=sens, k=st.floats(min_value=1.0, max_value=3.0))
def test_sigma_max_decreases_in_sensitivity(d: int, tau: float, delta: float, s: float, k: float) -> None:
    alpha = 0.5 * tau * math.sqrt(delta / 2) / (s * k)  # feasible for both
    alpha = min(alpha, 1.0)
    lo = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, method="paper")
    hi = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s * k, alpha=alpha, method="paper")
    assert hi.sigma_max <= lo.sigma_max
    lo_t = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha)
    hi_t = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s * k, alpha=alpha)
    assert hi_t.sigma_max <= lo_t.sigma_max


@HYP
@given(d=dims, extra=st.integers(min_value=0, max_value=2000), tau=taus, delta=deltas, s=sens)
def test_sigma_max_decreases_in_dim(d: int, extra: int, tau: float, delta: float, s: float) -> None:
    alpha = min(1.0, 0.5 * tau * math.sqrt(delta / 2) / s)
    for method in ("paper", "tight"):
        small = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=alpha, method=method)
        big = calibrate(tau=tau, delta=delta, dim=d + extra, sensitivity=s, alpha=alpha, method=method)
        assert big.sigma_max <= small.sigma_max


@HYP
@given(d=dims, tau=taus, delta=deltas, s=sens, frac=st.floats(min_value=0.01, max_value=0.99),
       S=st.sampled_from([0.0, 1e-3, 1e-2]))
def test_tight_never_looser_than_paper_at_same_alpha(d: int, tau: float, delta: float, s: float, frac: float,
                                                    S: float) -> None:
    a_paper = (frac * s + (1 - frac) * S) / math.sqrt(delta / 2)
    assume(a_paper < tau * (1 - 1e-9))  # paper feasible (checked independently of the code)
    paper = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=frac, center_sensitivity=S, method="paper")
    tight = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, alpha=frac, center_sensitivity=S)
    assert tight.sigma_max >= paper.sigma_max
    assert guarantee_holds(tight) and guarantee_holds(paper)


@HYP
@given(d=dims, tau=taus, delta=deltas, s=sens, ts=st.floats(min_value=0.05, max_value=0.95))
def test_tight_never_looser_than_paper_alpha_free(d: int, tau: float, delta: float, s: float, ts: float) -> None:
    paper = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, tau_split=ts, method="paper")
    tight = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, tau_split=ts)
    assert tight.alpha >= paper.alpha
    assert tight.sigma >= paper.sigma
    assert tight.sigma_max >= paper.sigma_max
    assert guarantee_holds(tight) and guarantee_holds(paper)


@HYP
@given(d=dims, dB=st.floats(min_value=1e-10, max_value=0.5))
def test_radii_bound_what_they_bound(d: int, dB: float) -> None:
    r = chi2_radius(d, dB)
    lm = laurent_massart_radius(d, dB)
    assert stats.chi2.sf(r * r, d) <= dB
    assert stats.chi2.sf(lm * lm, d) <= dB
    assert r <= lm
    assert lm >= math.sqrt(stats.chi2.isf(dB, d)) * (1 - 1e-12)  # LM is an upper bound on the exact quantile


@HYP
@given(m=st.integers(min_value=1, max_value=3000), dD=st.floats(min_value=1e-3, max_value=0.5),
       beta=st.floats(min_value=1e-4, max_value=0.5))
def test_order_statistic_index_binomial_condition(m: int, dD: float, beta: float) -> None:
    j = order_statistic_index(m, dD, beta)
    tails = stats.binom.sf(np.arange(m), m, 1 - dD)  # P(Bin >= j) for j = 1..m, computed independently
    ok = [jj for jj in range(1, m + 1) if tails[jj - 1] <= beta * (1 - 1e-10)]
    if j is None:
        assert ok == []
    else:
        assert j == ok[0]
        assert stats.binom.sf(j - 1, m, 1 - dD) <= beta


@HYP
@given(d=dims, tau=taus, delta=deltas, s=sens, M=st.floats(min_value=0.01, max_value=3.0))
def test_every_calibration_rechecks(d: int, tau: float, delta: float, s: float, M: float) -> None:
    cal = calibrate(tau=tau, delta=delta, dim=d, sensitivity=s, max_distance=M)
    assert guarantee_holds(cal)
    assert 0 < cal.sigma < cal.sigma_max
    assert 0 < cal.alpha <= 1 and cal.alpha <= cal.alpha_max
    assert cal.delta_B + cal.delta_Delta <= delta
    assert cal.sensitivity_term < tau


# --------------------------------------------------------------------------- shrinkage and mechanism
def test_shrink_formula_exact() -> None:
    x = np.array([0.0, 0.25, 1.0, 0.6])
    assert np.array_equal(shrink(x, alpha=0.5, center=0.5), 0.5 * x + 0.5 * 0.5)
    mu = np.array([0.1, 0.2, 0.3, 0.4])
    assert np.array_equal(shrink(x, alpha=0.25, center=mu), 0.25 * x + 0.75 * mu)
    assert np.array_equal(shrink(x, alpha=1.0, center=123.0), x)
    # alpha-Lipschitz: distances contract exactly by alpha
    y = x + np.array([0.1, -0.2, 0.0, 0.05])
    assert np.linalg.norm(shrink(x, alpha=0.3, center=0.5) - shrink(y, alpha=0.3, center=0.5)) == pytest.approx(
        0.3 * np.linalg.norm(x - y), rel=1e-12)


def _cal(d: int = 200) -> Calibration:
    return calibrate(tau=0.5, delta=0.01, dim=d, sensitivity=0.2, alpha=0.2)


def test_mechanism_seeded_reproducible() -> None:
    cal = _cal()
    x = np.linspace(0, 1, cal.dim)
    r1 = apply_mechanism(x, cal, center=0.5, rng=42)
    r2 = apply_mechanism(x, cal, center=0.5, rng=42)
    assert r1.seed == 42 and np.array_equal(r1.certified, r2.certified)
    assert np.array_equal(r1.shrunk, cal.alpha * x + (1 - cal.alpha) * 0.5)
    assert np.array_equal(r1.certified, r1.shrunk + r1.noise)
    # a Generator or None: the recorded seed reproduces the output
    r3 = apply_mechanism(x, cal, center=0.5, rng=np.random.default_rng(7))
    assert np.array_equal(apply_mechanism(x, cal, center=0.5, rng=r3.seed).certified, r3.certified)
    r4 = apply_mechanism(x, cal, center=0.5, rng=None)
    assert np.array_equal(apply_mechanism(x, cal, center=0.5, rng=r4.seed).certified, r4.certified)
    assert r4.sigma == cal.sigma and r4.alpha == cal.alpha


def test_mechanism_utility_d_sigma2() -> None:
    """E||M(D) - g(f(D))||^2 = d sigma^2 (Remark 3.4).

    ||Z||^2 / sigma^2 ~ chi2_d; over 400 seeded draws the mean of ||Z||^2 / (d sigma^2) has
    sd sqrt(2/d)/20 = 0.005 (d=200); the 5-sd tolerance gives false-failure rate < 1e-6.
    """
    cal = _cal(200)
    x = np.full(cal.dim, 0.3)
    gen = np.random.default_rng(2024)
    ratios = [float(np.sum(apply_mechanism(x, cal, center=0.5, rng=gen).noise ** 2)) / (cal.dim * cal.sigma**2)
              for _ in range(400)]
    assert abs(np.mean(ratios) - 1.0) < 5 * math.sqrt(2 / cal.dim) / math.sqrt(400)


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"tau": 0.0}, "tau"),
        ({"tau": -1.0}, "tau"),
        ({"tau": float("nan")}, "tau"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 1.5}, "delta"),
        ({"dim": 0}, "dim"),
        ({"sensitivity": -0.1}, "sensitivity"),
        ({"sensitivity": float("inf")}, "sensitivity"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"tau_split": 1.0}, "tau_split"),
        ({"beta": 1.0, "sensitivity_ucb": 0.4}, "beta"),
        ({"delta_B": 0.01}, "delta_B"),
        ({"delta_B": 0.0}, "delta_B"),
        ({"method": "exact"}, "method"),
        ({"sigma": -1.0}, "sigma"),
    ],
)
def test_calibrate_bad_input(kwargs: dict, name: str) -> None:
    base = {"tau": 0.5, "delta": 0.01, "dim": 100, "sensitivity": 0.3}
    base.update(kwargs)
    with pytest.raises(InputError, match=f"'{name}'"):
        calibrate(**base)


def test_calibrate_type_errors() -> None:
    with pytest.raises(TypeError, match="'dim'"):
        calibrate(tau=0.5, delta=0.01, dim=10.5, sensitivity=0.3)
    with pytest.raises(TypeError, match="'tau'"):
        calibrate(tau="0.5", delta=0.01, dim=10, sensitivity=0.3)


def test_calibrate_needs_a_bound() -> None:
    with pytest.raises(InputError, match="at least one bound"):
        calibrate(tau=0.5, delta=0.01, dim=10)
    with pytest.raises(InputError, match="'sensitivity'"):
        calibrate(tau=0.5, delta=0.01, dim=10, max_distance=1.0, method="paper")


def test_mechanism_bad_input() -> None:
    cal = _cal(5)
    with pytest.raises(InputError, match="'scores'.*finite"):
        apply_mechanism([0.1, np.nan, 0.3, 0.4, 0.5], cal, center=0.5, rng=1)
    with pytest.raises(InputError, match="'scores'.*mismatched dimensions"):
        apply_mechanism([0.1, 0.2, 0.3], cal, center=0.5, rng=1)
    with pytest.raises(InputError, match="'scores'"):
        apply_mechanism([], cal, center=0.5, rng=1)
    with pytest.raises(InputError, match="'center'"):
        apply_mechanism(np.zeros(5), cal, center=[0.5, 0.5], rng=1)
    with pytest.raises(TypeError, match="'calibration'"):
        apply_mechanism(np.zeros(5), {"sigma": 1.0}, center=0.5, rng=1)
    with pytest.raises(InputError, match="'alpha'"):
        shrink([0.1, 0.2], alpha=0.0, center=0.5)
    with pytest.raises(InputError, match="'x'"):
        shrink([0.1, np.nan], alpha=0.5, center=0.5)
    with pytest.raises(InputError, match="'delta_B'"):
        laurent_massart_radius(10, 1.0)
    with pytest.raises(InputError, match="'dim'"):
        chi2_radius(0, 0.1)


# --------------------------------------------------------------------------- knowledge-based tight vs paper
@settings(max_examples=12, deadline=None, derandomize=True)
@given(d=st.integers(min_value=1, max_value=3000), tau=st.floats(min_value=0.1, max_value=2.0),
       delta=st.floats(min_value=1e-3, max_value=0.2), s=st.floats(min_value=1e-3, max_value=1.0))
def test_knowledge_tight_never_looser_than_paper(d: int, tau: float, delta: float, s: float) -> None:
    from biasbound.bounds import Moments
    from biasbound.calibration import calibrate_knowledge

    rec = Moments(s * s)
    try:
        paper = calibrate_knowledge(rec, tau=tau, delta=delta, dim=d, method="paper", frontier_points=0)
    except InfeasibleCertificateError:
        return
    at_sigma = calibrate_knowledge(rec, tau=tau, delta=delta, dim=d, sigma=paper.sigma, frontier_points=0)
    at_alpha = calibrate_knowledge(rec, tau=tau, delta=delta, dim=d, alpha=paper.alpha, frontier_points=0)
    assert at_sigma.alpha >= paper.alpha and at_alpha.sigma >= paper.sigma

"""The one calibrator, ``biasbound.calibrate``: the paper route (Corollary 3.2, typed out by hand), the tight route
never looser than it, monotonicity, and bad input.

The paper route is ``calibrate(Moments(U^2), method="paper")``: symmetric split ``delta_B = delta_Delta = delta/2``,
the Laurent–Massart radius, Markov on the RMS sensitivity ``U``; the formulas live in ``biasbound.bounds.paper``.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import biasbound as bb
from biasbound import InfeasibleCertificateError, InputError
from biasbound.bounds import Moments, paper
from biasbound.calibration import check

HYP = settings(max_examples=40, deadline=None, derandomize=True)


def _lm_by_hand(d: int, dB: float) -> float:
    x = math.log(1 / dB)
    return math.sqrt(d + 2 * math.sqrt(d * x) + 2 * x)


def test_the_public_calibrate_is_the_knowledge_calibrator() -> None:
    from biasbound.calibration import calibrate

    assert bb.calibrate is calibrate and not hasattr(bb, "calibrate_knowledge")  # one route, one name
    # the example: the legacy calibrate(sensitivity=0.1, max_distance=1) said alpha 0.25 where the knowledge
    # calibrator said 0.50 for the same judge; the one calibrator gives one answer, the moment bound's own
    c = bb.calibrate(Moments(0.01, A=1.0), tau=0.5, delta=0.01, dim=500, frontier_points=0)
    again = calibrate(Moments(0.01, A=1.0), tau=0.5, delta=0.01, dim=500, frontier_points=0)
    assert (c.alpha, c.sigma) == (again.alpha, again.sigma)


# --------------------------------------------------------------------------- exact values (paper)
def test_paper_sigma_max_by_hand() -> None:
    """d=500, tau=0.5, delta=0.01, Delta*=0.306, alpha=0.05 (Corollary 3.2 typed out by hand)."""
    d, tau, delta, s, alpha = 500, 0.5, 0.01, 0.306, 0.05
    a_hand = alpha * s * math.sqrt(2 / delta)  # symmetric split: 1/sqrt(delta/2)
    sigma_hand = (tau - a_hand) / (math.sqrt(2) * _lm_by_hand(d, delta / 2))
    assert a_hand == pytest.approx(0.2163747, abs=1e-7)
    assert sigma_hand == pytest.approx(0.0080967, abs=1e-7)

    cal = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper")
    sp = cal.paper_split
    assert cal.bound_used == "paper" and sp.radius == "laurent-massart"
    assert sp.delta_B == delta / 2 and sp.delta_Delta == delta / 2
    assert sp.sensitivity_term == pytest.approx(a_hand, rel=1e-12)
    assert cal.sigma_max == pytest.approx(sigma_hand, rel=1e-12)
    assert cal.sigma_max <= sigma_hand * (1 + 1e-15)  # sigma_max rounded down (up to U = sqrt(s^2)'s last bit)
    assert cal.sigma < cal.sigma_max  # sigma strictly below (nextafter toward 0)
    assert cal.alpha == alpha and cal.beta is None and cal.point_estimate
    assert cal.alpha_max == pytest.approx(tau * math.sqrt(delta / 2) / s, rel=1e-12)
    assert paper.sigma_max(tau=tau, delta_B=sp.delta_B, delta_Delta=sp.delta_Delta, dim=d, U=sp.sensitivity, S=0.0,
                           alpha=alpha) == cal.sigma_max
    assert check(tau=tau, delta=delta, dim=d, alpha=alpha, sigma=cal.sigma, knowledge=Moments(s * s), method="paper")[0]
    assert not check(tau=tau, delta=delta, dim=d, alpha=alpha, sigma=cal.sigma_max * 1.01, knowledge=Moments(s * s),
                     method="paper")[0]
    # the bound of Theorem 3.1 at the point is within delta, and just above sigma_max it is not
    assert paper.violation_bound(tau, alpha, cal.sigma, d, Moments(s * s), delta_B=delta / 2) <= delta * (1 + 1e-12)
    assert paper.violation_bound(tau, alpha, cal.sigma_max * 1.001, d, Moments(s * s), delta_B=delta / 2) > delta


def test_laurent_massart_radius_by_hand_and_it_bounds_the_chi2_tail() -> None:
    for d, dB in ((500, 0.005), (1, 0.3), (3000, 1e-10)):
        r = paper.laurent_massart_radius(d, dB)
        assert r >= _lm_by_hand(d, dB) and r == pytest.approx(_lm_by_hand(d, dB), rel=1e-13)
        assert stats.chi2.sf(r * r, d) <= dB
    with pytest.raises(InputError, match="'delta_B'"):
        paper.laurent_massart_radius(10, 1.0)


def test_feasibility_boundary_alpha_max() -> None:
    tau, delta, d, s = 0.5, 0.01, 500, 0.306
    amax = tau * math.sqrt(delta / 2) / s  # 0.11554...
    below = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=amax * (1 - 1e-9), method="paper")
    assert 0 < below.sigma_max < 1e-9  # feasible, but almost no room for noise
    with pytest.raises(InfeasibleCertificateError) as info:
        bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=amax * (1 + 1e-9), method="paper")
    assert info.value.alpha_max == pytest.approx(amax, rel=1e-12)
    assert info.value.alpha_max <= amax


def test_infeasible_message_names_alpha_max() -> None:
    with pytest.raises(InfeasibleCertificateError) as info:
        bb.calibrate(Moments(0.306**2), tau=0.5, delta=0.01, dim=500, alpha=0.9, method="paper")
    msg = str(info.value)
    # the sensitivity term alone: 0.9 * 0.306 / sqrt(0.005) = 3.894...
    assert "tau=0.5" in msg and "alpha=0.9" in msg and "3.89" in msg
    assert "alpha < 0.115 (alpha_max)" in msg  # 0.11554 printed rounded toward 0


def test_batch_center_effective_sensitivity() -> None:
    """Markov with a batch-mean centre uses alpha U + (1 - alpha) S (Appendix B, RMS form)."""
    tau, delta, d, s, S, alpha = 0.5, 0.01, 400, 0.3, 0.02, 0.05
    cal = bb.calibrate(Moments(s * s, shift_U2=S * S), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper")
    a_hand = (alpha * s + (1 - alpha) * S) / math.sqrt(delta / 2)
    assert cal.paper_split.sensitivity_term == pytest.approx(a_hand, rel=1e-12)
    assert cal.paper_split.center_sensitivity == pytest.approx(S, rel=1e-15)
    fixed = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper")
    assert cal.sigma_max < fixed.sigma_max
    with pytest.raises(InfeasibleCertificateError):
        bb.calibrate(Moments(s * s, shift_U2=0.05**2), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper")


def test_default_alpha_uses_tau_split() -> None:
    tau, delta, d, s = 0.5, 0.01, 500, 0.306
    cal = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, method="paper")
    alpha_hand = 0.5 * tau * math.sqrt(delta / 2) / s
    assert cal.alpha == pytest.approx(alpha_hand, rel=1e-12)
    assert cal.sigma_max == pytest.approx((tau - 0.5 * tau) / (math.sqrt(2) * _lm_by_hand(d, delta / 2)), rel=1e-12)
    cal2 = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, method="paper", tau_split=0.2)
    assert cal2.alpha == pytest.approx(0.2 * tau * math.sqrt(delta / 2) / s, rel=1e-12)
    assert cal2.sigma_max > cal.sigma_max
    # tiny sensitivity: no shrinkage needed, alpha capped at 1
    cal3 = bb.calibrate(Moments(1e-8), tau=tau, delta=delta, dim=d, method="paper")
    assert cal3.alpha == 1.0 and cal3.alpha_max == 1.0


def test_zero_sensitivity() -> None:
    cal = bb.calibrate(Moments(0.0), tau=0.5, delta=0.01, dim=10, method="paper")
    assert cal.alpha == 1.0 and cal.paper_split.sensitivity_term == 0.0
    assert cal.sigma_max == pytest.approx(0.5 / (math.sqrt(2) * paper.laurent_massart_radius(10, 0.005)), rel=1e-12)


def test_confidence_bound_enters_as_the_sensitivity_and_spends_its_beta() -> None:
    cal = bb.calibrate(Moments(0.34**2, beta=0.05), tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper")
    assert cal.paper_split.sensitivity == pytest.approx(0.34, rel=1e-15) and cal.beta == 0.05
    assert not cal.point_estimate
    assert cal.paper_split.sensitivity_term == pytest.approx(0.05 * 0.34 / math.sqrt(0.005), rel=1e-12)


def test_sigma_given() -> None:
    rec = Moments(0.306**2)
    base = bb.calibrate(rec, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper")
    cal = bb.calibrate(rec, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper", sigma=0.005)
    assert cal.sigma == 0.005 and cal.sigma_max == base.sigma_max and cal.checked_point
    with pytest.raises(InfeasibleCertificateError, match="sigma"):
        bb.calibrate(rec, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper", sigma=base.sigma_max * 1.001)
    with pytest.raises(InputError, match="'sigma'"):
        bb.calibrate(rec, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper", sigma=0.0)
    # sigma alone: alpha solved from Corollary 3.2 at that noise (rounded down), and the point checks
    solved = bb.calibrate(rec, tau=0.5, delta=0.01, dim=500, method="paper", sigma=base.sigma)
    assert solved.alpha == pytest.approx(0.05, rel=1e-9) and solved.alpha <= 0.05 * (1 + 1e-12)


# --------------------------------------------------------------------------- properties
dims = st.integers(min_value=1, max_value=3000)
taus = st.floats(min_value=0.05, max_value=5.0)
deltas = st.floats(min_value=1e-4, max_value=0.3)
sens = st.floats(min_value=1e-4, max_value=2.0)


@HYP
@given(d=dims, tau=taus, delta=deltas, s=sens, k=st.floats(min_value=1.0, max_value=3.0))
def test_paper_sigma_max_decreases_in_sensitivity(d: int, tau: float, delta: float, s: float, k: float) -> None:
    alpha = min(1.0, 0.5 * tau * math.sqrt(delta / 2) / (s * k))  # feasible for both
    lo = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper", frontier_points=0)
    hi = bb.calibrate(Moments((s * k) ** 2), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper", frontier_points=0)
    assert hi.sigma_max <= lo.sigma_max


@pytest.mark.slow  # about 6 s: each tight calibration searches sigma
@settings(max_examples=8, deadline=None, derandomize=True)
@given(d=dims, tau=taus, delta=deltas, s=sens, k=st.floats(min_value=1.0, max_value=3.0))
def test_tight_sigma_max_decreases_in_sensitivity(d: int, tau: float, delta: float, s: float, k: float) -> None:
    alpha = min(1.0, 0.5 * tau * math.sqrt(delta / 2) / (s * k))
    lo = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=alpha, frontier_points=0)
    hi = bb.calibrate(Moments((s * k) ** 2), tau=tau, delta=delta, dim=d, alpha=alpha, frontier_points=0)
    assert hi.sigma_max <= lo.sigma_max * (1 + 1e-9)  # the search resolves sigma to a relative 1e-12


@HYP
@given(d=dims, extra=st.integers(min_value=0, max_value=2000), tau=taus, delta=deltas, s=sens)
def test_paper_sigma_max_decreases_in_dim(d: int, extra: int, tau: float, delta: float, s: float) -> None:
    alpha = min(1.0, 0.5 * tau * math.sqrt(delta / 2) / s)
    small = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d, alpha=alpha, method="paper", frontier_points=0)
    big = bb.calibrate(Moments(s * s), tau=tau, delta=delta, dim=d + extra, alpha=alpha, method="paper",
                       frontier_points=0)
    assert big.sigma_max <= small.sigma_max


@pytest.mark.slow  # about 6 s
@settings(max_examples=8, deadline=None, derandomize=True)
@given(d=st.integers(min_value=1, max_value=3000), tau=st.floats(min_value=0.1, max_value=2.0),
       delta=st.floats(min_value=1e-3, max_value=0.2), s=st.floats(min_value=1e-3, max_value=1.0))
def test_tight_never_looser_than_paper(d: int, tau: float, delta: float, s: float) -> None:
    rec = Moments(s * s)
    try:
        p = bb.calibrate(rec, tau=tau, delta=delta, dim=d, method="paper", frontier_points=0)
    except InfeasibleCertificateError:
        return
    at_sigma = bb.calibrate(rec, tau=tau, delta=delta, dim=d, sigma=p.sigma, frontier_points=0)
    at_alpha = bb.calibrate(rec, tau=tau, delta=delta, dim=d, alpha=p.alpha, frontier_points=0)
    assert at_sigma.alpha >= p.alpha and at_alpha.sigma >= p.sigma


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
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": 1.5}, "alpha"),
        ({"tau_split": 1.0}, "tau_split"),
        ({"method": "exact"}, "method"),
        ({"sigma": -1.0}, "sigma"),
    ],
)
def test_calibrate_bad_input(kwargs: dict, name: str) -> None:
    base = {"tau": 0.5, "delta": 0.01, "dim": 100, "method": "paper"}
    base.update(kwargs)
    with pytest.raises(InputError, match=f"'{name}'"):
        bb.calibrate(Moments(0.09), **base)


def test_calibrate_type_errors_and_a_missing_moment() -> None:
    with pytest.raises(TypeError, match="'dim'"):
        bb.calibrate(Moments(0.09), tau=0.5, delta=0.01, dim=10.5)
    with pytest.raises(TypeError, match="'tau'"):
        bb.calibrate(Moments(0.09), tau="0.5", delta=0.01, dim=10)
    with pytest.raises(InputError, match="Moments record for method='paper'"):
        bb.calibrate(bb.AlmostSure(1.0), tau=0.5, delta=0.01, dim=10, method="paper")

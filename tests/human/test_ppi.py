"""The human-anchored estimators: exact values against ppi-python and the definitions, and coverage on known truth."""

from __future__ import annotations

import numpy as np
import pytest

from biasbound._exceptions import InputError
from biasbound.human import anchored_mean, labels_for_width, linear_weights, rank_sets
from biasbound.human._ppi import power_tuned_lambda
from biasbound.testing.human import known_truth, label_draw


def _case(seed: int = 0, n_items: int = 400, n: int = 40, accuracy: float = 0.85):
    kt = known_truth(n_items, accuracy=accuracy, prevalence=0.6, rng=seed)
    lab = label_draw(n_items, n, np.random.default_rng(seed + 1))
    return kt, lab


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_ppi_python_power_tuned(seed: int) -> None:
    import ppi_py
    from ppi_py.ppi import _calc_lam_glm

    kt, lab = _case(seed, n=60)  # at least SMALL_SAMPLE labels: the PPI++ interval itself
    y, f_l, f_u = kt.y[lab], kt.f[lab], kt.f[~lab]
    est = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f_l, f_u, lam=1)))
    lam_ref = float(_calc_lam_glm((y - est)[:, None], (f_l - est)[:, None], (f_u - est)[:, None], np.eye(1), clip=True))
    assert power_tuned_lambda(y, f_l, f_u) == pytest.approx(lam_ref, rel=1e-12, abs=1e-15)
    a = anchored_mean(y, kt.f, lab, level=0.9)
    lo, hi = ppi_py.ppi_mean_ci(y, f_l, f_u, alpha=0.1)  # ppi-python's own power tuning (lam=None): est ± z·se
    # biasbound takes Student's quantile (n − 1 degrees of freedom) in the place of z, around the same centre
    from scipy import stats

    widen = stats.t.ppf(0.95, y.size - 1) / stats.norm.ppf(0.95)
    mid = (float(lo[0]) + float(hi[0])) / 2
    assert a.estimate == pytest.approx(mid, rel=1e-12)
    half = (float(hi[0]) - float(lo[0])) / 2 * widen
    assert (a.lo, a.hi) == pytest.approx((mid - half, mid + half), rel=1e-12)
    clo, chi = ppi_py.classical_mean_ci(y, alpha=0.1)
    chalf = (float(chi) - float(clo)) / 2 * widen
    assert (a.classical_lo, a.classical_hi) == pytest.approx((y.mean() - chalf, y.mean() + chalf), rel=1e-12)
    assert a.judge_only == pytest.approx(kt.f.mean()) and a.classical == pytest.approx(y.mean())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_few_labels_take_the_hull_with_the_labels_only_interval(seed: int) -> None:
    """Below SMALL_SAMPLE labels the interval holds both the PPI++ and the labels-only interval (each with Student's
    quantile); the estimate stays the PPI++ one. At SMALL_SAMPLE and above, the PPI++ interval alone."""
    from biasbound.human._ppi import SMALL_SAMPLE

    for n, hull in ((SMALL_SAMPLE - 1, True), (SMALL_SAMPLE, False)):
        kt, lab = _case(seed, n=n, accuracy=0.95)
        a = anchored_mean(kt.y[lab], kt.f, lab)
        assert a.lo <= a.estimate <= a.hi
        holds_classical = a.lo <= a.classical_lo and a.classical_hi <= a.hi
        assert holds_classical if hull else (a.hi - a.lo) <= (a.classical_hi - a.classical_lo) + 1e-12


def test_estimate_is_the_linear_map_of_the_judge_scores() -> None:
    kt, lab = _case(3)
    a = anchored_mean(kt.y[lab], kt.f, lab)
    c = linear_weights(lab, a.lam)
    assert c.sum() == pytest.approx(0.0, abs=1e-12)  # a shift of every score leaves the estimate unmoved
    assert a.estimate == pytest.approx(float(c @ kt.f) + kt.y[lab].mean(), abs=1e-12)
    moved = kt.f.copy()
    i_lab, i_unl = np.flatnonzero(lab)[0], np.flatnonzero(~lab)[0]
    moved[[i_lab, i_unl]] = 1.0 - moved[[i_lab, i_unl]]
    b = anchored_mean(kt.y[lab], moved, lab, lam=a.lam)
    assert b.estimate - a.estimate == pytest.approx(float(c @ (moved - kt.f)), abs=1e-12)
    assert abs(c[i_lab]) == pytest.approx(a.lam / lab.sum()) and c[i_unl] == pytest.approx(a.lam / (~lab).sum())


def test_lambda_zero_is_classical_and_constant_judge() -> None:
    kt, lab = _case(4)
    a = anchored_mean(kt.y[lab], kt.f, lab, lam=0.0)
    assert a.estimate == pytest.approx(kt.y[lab].mean()) and (a.lo, a.hi) == pytest.approx((a.classical_lo, a.classical_hi))
    flat = anchored_mean(kt.y[lab], np.full(kt.f.size, 0.5), lab)
    assert flat.lam == 0.0 and not flat.helps


def test_bad_inputs() -> None:
    kt, lab = _case(5)
    with pytest.raises(InputError, match="one label per labelled item"):
        anchored_mean(kt.y[lab][:-1], kt.f, lab)
    one = np.zeros(kt.f.size, dtype=bool)
    one[0] = True
    with pytest.raises(InputError, match="at least 2 labelled"):
        anchored_mean(kt.y[:1], kt.f, one)
    with pytest.raises(InputError, match="half-width"):
        labels_for_width(kt.y[lab], kt.f, lab, half_width=0.0)


def test_rank_sets_exact() -> None:
    lo = np.array([0.70, 0.60, 0.20, 0.25])
    hi = np.array([0.80, 0.75, 0.30, 0.40])
    r_lo, r_hi = rank_sets(lo, hi)
    assert r_lo.tolist() == [1, 1, 3, 3] and r_hi.tolist() == [2, 2, 4, 4]


def test_known_truth_coverage_and_width() -> None:
    """300 seeded label draws (n = 100 of 2,000 items, judge right 85% of the time), 90% intervals.

    The covered count is Binomial(300, p); the test fails when it is below 249. With the CLT's slack of one point
    (p ≥ 0.89) that happens with probability < 1e-3 (z = −3.3); a defect (an interval ignoring the rectifier, or
    the classical variance used with the judge's mean) covers far less. Each PPI++ interval is at most 2% wider than
    the classical one (measured: never wider over these draws; the plug-in λ is not the exact minimiser of the
    interval's variance, so equality is not guaranteed).
    """
    kt = known_truth(2000, accuracy=0.85, prevalence=0.6, rng=11)
    rng = np.random.default_rng(12)
    covered, ratios = 0, []
    for _ in range(300):
        lab = label_draw(2000, 100, rng)
        a = anchored_mean(kt.y[lab], kt.f, lab, level=0.9)
        covered += a.lo <= kt.truth <= a.hi
        ratios.append(a.width / a.classical_width)
    assert covered >= 249
    assert max(ratios) <= 1.02
    assert np.median(ratios) < 0.9  # an 85%-accurate judge helps: the median interval is narrower


def test_small_sample_sentence() -> None:
    from biasbound.human.anchored import small_sample_sentence

    assert small_sample_sentence(50) is None
    text = str(small_sample_sentence(25))
    assert "fewer than 50" in text and "holds the labels-only one" in text


def test_label_budget_from_a_pilot() -> None:
    kt, lab = _case(6, n_items=2000, n=60, accuracy=0.9)
    n_ppi, n_classical = labels_for_width(kt.y[lab], kt.f, lab, half_width=0.05, level=0.95)
    # the classical budget is z² s² / w²
    s2 = float(np.var(kt.y[lab], ddof=1))
    assert n_classical == int(np.ceil(1.959963984540054 ** 2 * s2 / 0.05 ** 2))
    assert 2 <= n_ppi < n_classical  # a 90%-accurate judge needs fewer labels
    # checked on fresh draws of that size: the realised half-width is about the target
    rng = np.random.default_rng(7)
    widths = [anchored_mean(kt.y[m], kt.f, m).width / 2 for m in (label_draw(2000, n_ppi, rng) for _ in range(40))]
    assert np.median(widths) == pytest.approx(0.05, rel=0.15)

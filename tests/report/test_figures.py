"""Judge-informative figures: exact values on populations whose quantiles are known, the sample radius's
coverage (statistical, stated false-failure rate), range_implied against the almost-sure bound, the
original-scale restatement against a direct simulation of the rescaled release."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biasbound.bounds import AlmostSure, FullPopulation, Knowledge, Moments, Sample
from biasbound.calibration import calibrate
from biasbound.figures import bias_radius, bias_radius_curve, original_scale, range_implied, survival


def test_bias_radius_full_population_is_the_exact_upper_quantile() -> None:
    pop = np.array([0.0] * 95 + [0.09] * 3 + [1.0] * 2)  # ||Delta|| in {0, 0.3, 1}
    k = FullPopulation(pop)
    assert bias_radius(0.01, k) == 1.0  # 2% exceed 0.3: only tau = 1 leaves <= 1% above
    assert bias_radius(0.02, k) == pytest.approx(0.3)  # exactly 2% above 0.3
    assert bias_radius(0.05, k) == 0.0  # 5% above 0
    assert survival(k, 0.3) == pytest.approx(0.02)


def test_bias_radius_worst_cases_for_almost_sure_and_moments() -> None:
    assert bias_radius(0.01, AlmostSure(0.7)) == 0.7
    assert bias_radius(0.05, Moments(0.02)) == pytest.approx(np.sqrt(0.02 / 0.05), rel=1e-9)  # Markov is tight
    assert bias_radius(0.05, Moments(0.02, A=0.5)) == 0.5
    # max over generators; the mixture is in between
    k = {"a": FullPopulation(np.array([0.0] * 99 + [1.0])), "b": AlmostSure(0.2)}
    assert bias_radius(0.005, Knowledge.of(k)) == 1.0
    assert bias_radius(0.005, Knowledge.of(k, how="mixture")) == pytest.approx(0.2)


def test_bias_radius_of_a_sample_covers_the_population_quantile() -> None:
    # 300 seeded draws of m=60 from N=400 items; the radius is a (1 - beta) upper bound on the population's
    # radius, beta = 0.05: failures are dominated by Bin(300, 0.05); k_star is the smallest count with
    # P(Bin >= k_star) <= 1e-3 (false-failure rate <= 1e-3).
    rng = np.random.default_rng(11)
    pop = np.concatenate([np.zeros(340), np.full(40, 0.04), np.full(16, 0.25), np.ones(4)])
    truth = {d: bias_radius(d, FullPopulation(pop)) for d in (0.02, 0.05, 0.15)}
    k_star = int(np.argmax(stats.binom.sf(np.arange(300) - 1, 300, 0.05) <= 1e-3))
    fails = 0
    for _ in range(300):
        s = Sample(rng.choice(pop, 60, replace=False), population_size=400, beta=0.05, A=1.0)
        fails += any(bias_radius(d, s) < truth[d] for d in truth)
    assert fails < k_star


def test_bias_radius_curve_is_nonincreasing_in_delta() -> None:
    k = FullPopulation(np.linspace(0, 1, 101) ** 2)
    curve = bias_radius_curve(k)
    r = [p["radius"] for p in curve]
    assert all(a >= b for a, b in zip(r, r[1:]))
    assert curve[0]["delta"] == 0.001


def test_range_implied_matches_the_almost_sure_calibration() -> None:
    c = calibrate(AlmostSure(1.0), tau=0.5, delta=0.01, dim=500, frontier_points=2)
    assert range_implied(tau=0.5, delta=0.01, alpha=c.alpha, sigma=c.sigma, dim=500, A=1.0)
    assert not range_implied(tau=0.5, delta=0.01, alpha=c.alpha * 1.01, sigma=c.sigma, dim=500, A=1.0)


def test_original_scale_release_is_the_unshrunk_judge_with_noise_sigma_over_alpha() -> None:
    assert original_scale(tau=0.5, alpha=0.25, sigma=0.01) == {"tau": 2.0, "sigma": 0.04}
    # direct check: (M(D) - (1 - a) c) / a has mean f(D) and standard deviation sigma / a
    rng = np.random.default_rng(5)
    f, a, s, c = np.array([0.2, 0.9]), 0.25, 0.01, 0.5
    m = a * f + (1 - a) * c + rng.normal(0, s, size=(200_000, 2))
    back = (m - (1 - a) * c) / a
    # false-failure rate: 5 standard errors on each mean (two-sided 5.7e-7 each) and 6 on each standard
    # deviation (its standard error is 0.04/sqrt(2n), 0.16%; two-sided 2e-9 each): < 2e-6 in all
    assert np.allclose(back.mean(axis=0), f, atol=5 * 0.04 / np.sqrt(200_000))
    assert np.allclose(back.std(axis=0), 0.04, rtol=0.01)


def test_plot_frontier_writes_a_png_and_rejects_nothing_to_draw(tmp_path) -> None:
    from biasbound import InputError
    from biasbound.calibration import frontier
    from biasbound.report.plots import plot_frontier

    pts = frontier(tau=0.5, delta=0.01, dim=500, knowledge=AlmostSure(1.0), n=4)
    assert pts[0]["sigma"] == 0.0 and pts[0]["alpha"] == pytest.approx(0.5, rel=1e-6)  # alpha*(0) = tau / A
    assert pts[-1]["alpha"] == 0.0  # the noise alone uses up delta
    out = plot_frontier({"almost-sure": pts}, tmp_path / "f.png", point=(0.005, 0.4))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="frontiers"):
        plot_frontier({}, tmp_path / "g.png")

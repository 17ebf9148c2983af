"""biasbound.mechanism: the shrinkage, the one seeded noise draw, and that the release, the pipeline's views and
Certificate.verify() all go through it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import biasbound as bb
from biasbound import InputError
from biasbound.bounds import AlmostSure, Moments
from biasbound.mechanism import apply_mechanism, noise, release, shrink


def _cal(d: int = 200):
    return bb.calibrate(Moments(0.04, A=1.0), tau=0.5, delta=0.01, dim=d, alpha=0.2, frontier_points=0)


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


def test_the_noise_is_numpy_default_rng_of_the_seed() -> None:
    want = np.random.default_rng(123).normal(0.0, 0.07, size=9)
    assert np.array_equal(noise(123, 0.07, 9), want)
    assert np.array_equal(noise(123, 0.0, 4), np.zeros(4))  # sigma = 0 (exact bounds only): no noise
    r = release(np.linspace(0, 1, 9), alpha=0.4, sigma=0.07, center=0.5, seed=123)
    assert np.array_equal(r.noise, want) and np.array_equal(r.certified, r.shrunk + want) and r.seed == 123


def test_mechanism_seeded_reproducible() -> None:
    cal = _cal()
    x = np.linspace(0, 1, cal.dim)
    r1 = apply_mechanism(x, cal, center=0.5, rng=42)
    r2 = bb.apply_mechanism(x, cal, center=0.5, rng=42)
    assert r1.seed == 42 and np.array_equal(r1.certified, r2.certified)
    assert np.array_equal(r1.shrunk, cal.alpha * x + (1 - cal.alpha) * 0.5)
    assert np.array_equal(r1.noise, noise(42, cal.sigma, cal.dim))
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


def test_a_deterministic_tight_point_releases_without_noise() -> None:
    cal = bb.calibrate(AlmostSure(0.1), tau=0.5, delta=0.01, dim=5, sigma=0.0, frontier_points=0)
    assert cal.sigma == 0.0
    r = apply_mechanism(np.linspace(0, 1, 5), cal, center=0.5, rng=3)
    assert np.array_equal(r.certified, r.shrunk)


def test_verify_redraws_the_released_noise_and_catches_another_draw() -> None:
    from biasbound.certificate import CertificateVerificationError, make_certificate, sha256_of_array

    cal = _cal(50)
    x = np.linspace(0.0, 1.0, 50)
    res = apply_mechanism(x, cal, center=0.5, rng=11)
    cert = make_certificate(cal, center_kind="fixed", center_value=0.5, seed=res.seed, data_sha256=sha256_of_array(x),
                            view="model", created="2026-01-01T00:00:00+00:00")
    assert "seed" in cert.verify(scores=x, certified=res.certified)["checked"]
    other = apply_mechanism(x, cal, center=0.5, rng=12).certified
    with pytest.raises(CertificateVerificationError, match="released scores"):
        cert.verify(scores=x, certified=other)


def test_the_pipeline_views_release_through_the_mechanism(monkeypatch) -> None:
    """The pipeline's views call mechanism.release (the one draw), not a copy of it."""
    import biasbound.mechanism as mech
    from biasbound.pipeline._view import _apply

    calls = []
    real = mech.release

    def spy(*a, **kw):
        calls.append(kw["seed"])
        return real(*a, **kw)

    monkeypatch.setattr(mech, "release", spy)
    cal = _cal(4)
    out = _apply(np.array([0.1, 0.2, 0.3, 0.4]), cal, center=0.5, rng=5)
    assert calls == [5] and np.array_equal(out.noise, noise(5, cal.sigma, 4))


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

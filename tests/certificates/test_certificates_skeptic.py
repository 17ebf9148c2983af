"""Inputs built to break a certificate, each with its exact violation probability computed here.

1. Missing neighbour verdicts inside a recorded random draw.  The judge gives no verdict on exactly
   the drawn neighbours that would have moved its score; a certificate that reads the remaining
   verdicts as the draw treats the failures as missing at random and is false.  Truth: every item
   of the batch has a known neighbour score, so Pr[||M(D) − M(D')|| > τ] is the mean over items of
   the noncentral chi-square tail (scipy, independently of biasbound's bounds).
2. Per-model draws in the leaderboard view.  ``biasbound run`` draws each model's items with its own
   seed (all items of a model with at most ``neighbors_per_generator`` items); over (model, item) pairs
   that is a stratified, not a uniform, draw, and the finite-population band's event fails far more
   often than β.  The probability is enumerated exactly over every possible draw.

False-failure rate: test 1 is deterministic given the seeds; a correct certificate rests on a band of
level 1 − β (β = 1e-3) over the item draw, so it fails by chance with probability at most 1e-3 (and the
seeded draw makes a run reproducible).  Test 2 is an exact enumeration (no chance).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.stats import chi2, ncx2

from biasbound.bounds.sampled_population import band
from biasbound.pipeline import certify

TAU, DELTA = 0.5, 0.05


def _exact(alpha: float, sigma: float, diff: np.ndarray) -> float:
    d = diff.size
    s2 = 2 * sigma * sigma
    q = alpha * alpha * diff**2
    return float(np.mean(np.where(q > 0, ncx2.sf(TAU**2 / s2, d, np.maximum(q, 1e-300) / s2), chi2.sf(TAU**2 / s2, d))))


def test_missing_verdicts_inside_a_recorded_draw_count_at_the_range_bound():
    N, m, n_bad = 400, 300, 200
    rng = np.random.default_rng(3)
    base = np.zeros(N)
    nb = base.copy()
    bad = rng.choice(N, n_bad, replace=False)
    nb[bad] = 1.0  # half the items: the variant moves the score across the whole range
    draw_seed = 11
    drawn = np.random.default_rng(draw_seed).choice(N, m, replace=False)
    rows = [("a", f"q{i}", "original", 0, 0, base[i]) for i in range(N)]
    bad_set = set(bad.tolist())
    # the judge fails (no verdict) on exactly the drawn neighbours that would have moved its score
    rows += [("a", f"q{i}", "x", 0, 0, np.nan if i in bad_set else nb[i]) for i in drawn]
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    res = certify(f, neighbors="variant:x", view="model", center="fixed:0.5", tau=TAU, delta=DELTA,
                  sampled={"variant:x": {"seed": draw_seed, "per_model": {"a": {
                      "seed": draw_seed, "m": m, "n": N, "items": [f"q{i}" for i in drawn]}}}},
                  beta=1e-3, seed=0, out=None, progress=False,
                  plots=False, bootstrap_rounds=20)
    jc = res.judges["j"]
    cal = jc.calibration
    sc = jc.scores[jc.scores["in_batch"]]
    items = np.array([int(str(i)[1:]) for i in sc["item_id"]])
    truth = _exact(cal.alpha, cal.sigma, base[items] - nb[items])
    # before the fix: alpha 0.444, sigma 0.00836, truth 0.303 against delta 0.05
    assert truth <= DELTA, (cal.alpha, cal.sigma, truth)


def _band_failure_per_model_draws(n_small: int, n_big: int, m_big: int, beta: float) -> float:
    """P(the band's event fails) when the small model is a census and the big one a uniform draw of
    m_big of its n_big items, the big model's items ranked first (enumerated over every draw)."""
    N, m = n_small + n_big, n_small + m_big
    kup = band(N, m, beta)
    b = np.array([np.searchsorted(kup, K) for K in range(1, N + 1)])  # b(K) = min{k : Kup(k) >= K}
    fails = total = 0
    for c in itertools.combinations(range(n_big), m_big):
        ind = np.zeros(N, dtype=bool)
        ind[list(c)] = True
        ind[n_big:] = True
        fails += bool(np.any(np.cumsum(ind) < b))
        total += 1
    return fails / total


def test_leaderboard_view_does_not_read_per_model_draws_as_one_uniform_draw():
    # the band's premise fails under the draws biasbound run makes: 0.286 against beta = 0.05
    assert _band_failure_per_model_draws(2, 8, 2, 0.05) > 0.05
    # so the leaderboard unit must not use sample knowledge: its unobserved pairs count at the range bound
    rng = np.random.default_rng(5)
    rows = []
    drawn = {"a": np.arange(2), "b": np.random.default_rng([7, 1]).choice(8, 2, replace=False)}
    for model, n in (("a", 2), ("b", 8)):
        for i in range(n):
            rows.append((model, f"q{i}", "original", 0, 0, float(rng.choice([0.0, 1.0]))))
        for i in drawn[model]:
            rows.append((model, f"q{i}", "x", 0, 0, 0.5))
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    res = certify(f, neighbors="variant:x", view="leaderboard", center="fixed:0.5", tau=2.0, delta=0.2,
                  sampled={"variant:x": {"seed": 7}}, beta=0.05, holdout=0.0, seed=0, out=None,
                  progress=False, plots=False, bootstrap_rounds=20)
    cert = res.judges["j"].certificate
    cov = cert.scope["knowledge_coverage"]["*"]["variant:x"]
    assert cov["kind"] == "partial", cov
    # and the sentence does not claim a census: 4 of 10 pairs judged, the rest at the range bound
    assert "every neighbour of the batch judged" not in cert.guarantee, cert.guarantee
    assert "worst case over the unjudged ones" in cert.guarantee, cert.guarantee
    cert.verify()


def test_bias_radius_never_exceeds_the_score_range():
    """The paper's knowledge (a point estimate of E||Delta||^2, no almost-sure bound) gives Markov's radius
    sqrt(U2/delta) = 4.42 on the embedded data's [0, 1] scale, where no swap moves the scores by more than 1."""
    from biasbound.bounds import Moments
    from biasbound.calibration import calibrate
    from biasbound.certificate import make_certificate

    c = calibrate(Moments(0.442**2), tau=0.5, delta=0.01, dim=500, method="paper")
    cert = make_certificate(c, center_kind="fixed", center_value=0.5, seed=1, data_sha256="0" * 64, view="model",
                            range_bound=1.0)
    assert cert.bias_radius["radius"] <= 1.0, cert.bias_radius
    assert all(p["radius"] <= 1.0 for p in cert.bias_radius["curve"])
    cert.verify()


def test_judge_certificate_of_the_model_view_verifies_the_released_scores():
    """The judge-level certificate of the model view records each model's own noise seed and centre; verify()
    re-draws the released scores from them (it used the judge's seed, so the check could never pass) and a
    changed score or released value fails it."""
    rng = np.random.default_rng(8)
    rows = []
    for model in ("a", "b"):
        for i in range(30):
            b = float(rng.choice([0.0, 0.5, 1.0]))
            rows.append((model, f"q{i}", "original", 0, 0, b))
            rows.append((model, f"q{i}", "x", 0, 0, b if rng.random() < 0.8 else 1.0 - b))
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    res = certify(f, neighbors="variant:x", view="model", center="holdout", tau=TAU, delta=DELTA, seed=0, out=None,
                  progress=False, plots=False, bootstrap_rounds=20)
    jc = res.judges["j"]
    sc = jc.scores[jc.scores["in_batch"]]
    order = list(jc.certificate.scope["models"])
    x = np.concatenate([sc.loc[sc["model"] == m, "original"].to_numpy() for m in order])
    y = np.concatenate([sc.loc[sc["model"] == m, "certified"].to_numpy() for m in order])
    assert "seed" in jc.certificate.verify(scores=x, certified=y)["checked"]
    import pytest

    from biasbound.certificate import CertificateVerificationError

    x2 = x.copy()
    x2[3] += 0.25 if x2[3] < 0.75 else -0.25
    with pytest.raises(CertificateVerificationError):
        jc.certificate.verify(scores=x2, certified=y)
    y2 = y.copy()
    y2[40] += 1e-6
    with pytest.raises(CertificateVerificationError):
        jc.certificate.verify(scores=x, certified=y2)

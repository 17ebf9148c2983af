"""Status and wording say what the math says (issue 13, items 6 and 8; part of 9):

- ``summary.json``'s ``status`` and ``exit_code`` follow ``certify``'s exit code;
- a judge certificate over several models states each model's confidence (1 − β) and a joint one
  only when Σβ < 1 — never "confidence −2.8";
- ``exact`` is true only when the value is the violation probability itself (a census);
- the leaderboard view's neighbour is one (model, item) pair;
- a statement that follows from the score range alone carries no confidence level;
- ``--combine rms`` with several models is calibrated as each model's mixture (max over models).

No statistical test here: every check is a deterministic computation on fixed tables (false-failure
rate 0); the mixture's truth is computed directly from the census (exact noncentral χ² probabilities).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.audit import exceedance_probabilities
from biasbound.bounds import AlmostSure, FullPopulation, Knowledge, Moments, Sample, knowledge_from_dict
from biasbound.calibration import beta_per_unit, calibrate
from biasbound.certificate import confidence_phrase
from biasbound.pipeline import certify

pytestmark = pytest.mark.slow  # end to end: certify's outputs and wording (~10 s on a loaded machine)

BIASBOUND = shutil.which("biasbound") or shutil.which("biasbound", path=str(Path(sys.executable).parent))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    assert BIASBOUND is not None, "the biasbound entry point is not on PATH"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([BIASBOUND, *args], capture_output=True, text=True, env=env, timeout=300)


def _frame(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    df["source"] = "t.csv"
    df["line"] = np.arange(len(df)) + 2
    return df


def _flips(n_models: int, n_items: int, rates: dict[str, float], seed: int, sampled: int | None = None) -> pd.DataFrame:
    """Models scored 0/1; each variant flips a fixed share of items (``rates``: variant -> share). With
    ``sampled``, each model's drawn items are in ``frame.attrs["drawn"]`` (model -> item ids)."""
    rng = np.random.default_rng(seed)
    rows = []
    draws: dict[str, list[str]] = {}
    for m in range(n_models):
        drawn = set(rng.choice(n_items, sampled, replace=False).tolist()) if sampled else None
        if drawn is not None:
            draws[f"m{m}"] = [f"q{i:03d}" for i in sorted(drawn)]
        for i in range(n_items):
            s = float(rng.integers(0, 2))
            rows.append(("j", f"m{m}", f"q{i:03d}", "original", 0, 0, s))
            for v, rate in rates.items():
                if drawn is None or i in drawn:
                    rows.append(("j", f"m{m}", f"q{i:03d}", v, 0, 0, 1 - s if rng.random() < rate else s))
    frame = _frame(rows)
    frame.attrs["drawn"] = draws
    return frame


# ------------------------------------------------------------------------------------------------ status
@pytest.mark.slow
def test_summary_status_follows_the_exit_code(tmp_path):
    rows = []
    for j in ("j1", "j2"):
        for i in range(50):
            rows.append((j, "m", f"q{i}", "original", 0, 0, 0.0))
            rows.append((j, "m", f"q{i}", "x", 0, 0, 1.0 if (j == "j2" and i < 25) else 0.0))
    path = tmp_path / "two.csv"
    _frame(rows).drop(columns=["source", "line"]).to_csv(path, index=False)
    # j2's variant moves half its items by the whole range: alpha = 1 cannot be certified for it
    r = _run("certify", str(path), "--generators", "variant:x", "--alpha", "1", "--out", str(tmp_path / "o"), "--no-plots",
             "--no-progress", "--bootstrap-rounds", "50", "--deterministic-judge")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["status"] == "not certified" and summary["exit_code"] == 2
    assert summary["certified"] == ["j1"] and list(summary["failures"]) == ["j2"]

    only = tmp_path / "j2.csv"
    _frame([r_ for r_ in rows if r_[0] == "j2"]).drop(columns=["source", "line"]).to_csv(only, index=False)
    r = _run("certify", str(only), "--generators", "variant:x", "--alpha", "1", "--out", str(tmp_path / "o2"), "--no-plots",
             "--no-progress", "--bootstrap-rounds", "50", "--deterministic-judge")
    assert r.returncode == 2
    summary = json.loads((tmp_path / "o2" / "summary.json").read_text())
    assert summary["status"] == "not certified" and summary["certified"] == [] and summary["exit_code"] == 2

    r = _run("certify", str(path), "--generators", "variant:x", "--out", str(tmp_path / "o3"), "--no-plots",
             "--no-progress", "--bootstrap-rounds", "50", "--deterministic-judge")
    assert r.returncode == 0, r.stdout + r.stderr
    summary = json.loads((tmp_path / "o3" / "summary.json").read_text())
    assert summary["status"] == "certified" and summary["exit_code"] == 0 and summary["certified"] == ["j1", "j2"]


# ------------------------------------------------------------------------------------------------ confidence
def _sample(beta: float = 0.05) -> Sample:
    return Sample(np.zeros(20), population_size=100, beta=beta, A=1.0, seed=1)


def test_confidence_per_model_never_negative():
    one = Knowledge.of({"g": _sample()})
    assert confidence_phrase(one) == "with confidence 0.95 over the neighbour sample"
    three = Knowledge.of({f"m{i} | g": _sample() for i in range(3)})
    assert beta_per_unit(three) == pytest.approx({"m0": 0.05, "m1": 0.05, "m2": 0.05})
    text = confidence_phrase(three)
    assert "0.95 for each model" in text and "for all 3 models at once with confidence 0.85" in text
    many = Knowledge.of({f"m{i} | g": _sample() for i in range(76)})
    assert many.beta_total == pytest.approx(3.8)  # what the old sentence turned into "confidence -2.8"
    text = confidence_phrase(many)
    assert "0.95 for each model" in text and "no confidence is stated for all 76 models at once" in text
    assert "-2.8" not in text and "−2.8" not in text
    census = Knowledge.of({"m0 | g": FullPopulation(np.zeros(10)), "m1 | g": _sample()})
    assert "at least 0.95 for each model" in confidence_phrase(census) and "1 of the 2 models rest on a sample" in \
        confidence_phrase(census)
    assert confidence_phrase(Knowledge.of({"m0 | g": FullPopulation(np.zeros(10))})) is None


def test_a_judge_certificate_over_many_sampled_models_states_per_model_confidence():
    df = _flips(30, 120, {"x": 0.1}, seed=0, sampled=40)
    per_model = {m: {"items": items, "m": len(items), "n": 120, "seed": 1} for m, items in df.attrs["drawn"].items()}
    # a judge declared deterministic: each model's recorded draw is a Sample (finite-population band, its own beta)
    r = certify(df, tau=0.5, delta=0.01, neighbors="variant:x", sampled={"variant:x": {"per_model": per_model}},
                out=None, plots=False, progress=False, bootstrap_rounds=50, deterministic_judge=True)
    j = r.judges["j"]
    # beta is split over the 30 models' records in advance (each 0.05/30), so all 30 claims hold jointly at 0.95
    # (before, each spent 0.05 and the sentence summed them to "confidence -0.5")
    assert j.calibration.beta_spent == pytest.approx(0.05)
    text = j.certificate.guarantee
    each = 1 - 0.05 / 30
    assert f"with confidence {each:.4f} for each model" in text and "for all 30 models at once with confidence 0.95" in text
    assert "confidence -" not in text and "confidence −" not in text
    assert "30 samples (one per model and generator)" in text
    one = next(iter(j.model_certificates.values()))
    assert f"It holds with confidence {each:.4f} over the neighbour sample." in one.guarantee
    j.certificate.verify()  # the sentence is a derived field: recomputed identically
    # the terminal and summary.json lead with the worst model's held-out audit, the pooled one is context
    from biasbound.pipeline._summary import certificate_record, certificate_rows

    order = ["violated", "inconclusive", "holds"]
    worst_verdict = min((a.verdict for a in j.audits.values()), key=order.index)
    rows = dict(certificate_rows(j))
    assert worst_verdict in rows["audit (worst model)"] and "audit (pooled over models, context)" in rows
    rec = certificate_record(j)["audit_worst_model"]
    assert rec["verdict"] == worst_verdict and j.audits[rec["model"]].verdict == worst_verdict


def test_a_range_implied_statement_carries_no_confidence(tmp_path):
    df = _flips(3, 150, {"x": 0.1}, seed=2)
    r = certify(df, tau=0.5, delta=0.01, neighbors="variant:x", method="paper", alpha=0.05, out=None, plots=False,
                progress=False, bootstrap_rounds=50)
    j = r.judges["j"]
    assert j.certificate.range_implied["holds"] and j.calibration.beta_spent == pytest.approx(0.05)
    text = j.certificate.guarantee
    assert "with confidence" not in text and "0.95" not in text and "score range alone" in text
    assert "which the statement does not need" in text
    from biasbound.pipeline._summary import certificate_rows

    row = dict(certificate_rows(j))["method / bound"]
    assert "surely" in row and "0.95" not in row


# ------------------------------------------------------------------------------------------------ exact
@pytest.mark.parametrize(("record", "exact"), [
    (FullPopulation(np.r_[np.zeros(90), np.ones(10)]), True),  # a census: the probability itself
    (FullPopulation(np.r_[np.zeros(90), np.ones(10)], filled=5), False),  # 5 unjudged at the range bound
    (Moments(U2=0.1), False),  # worst case over every distribution with that second moment
    (AlmostSure(0.6), False),  # worst case over every judge within the bound
])
def test_exact_only_when_the_value_is_the_probability(record, exact):
    cal = calibrate(record, tau=0.5, delta=0.01, dim=100)
    assert cal.exact is exact


def test_hamming_k_moments_are_not_called_exact():
    df = _flips(2, 100, {"x": 0.1}, seed=3)
    # a census is exact only for a judge declared deterministic (Hamming-3: the exact law over 3-item subsets);
    # a random judge's Hamming-3 rests on a confidence bound (here the Chernoff bound on the 3-item sum of the
    # random-judge record binds; docs/proofs/concentration.md), not exact
    for k, det, exact, unit in ((1, True, True, "full-population"), (3, True, True, "full-population"),
                                (3, False, False, "random-judge")):
        r = certify(df, tau=0.5, delta=0.01, neighbors="variant:x", hamming=k, out=None, plots=False, progress=False,
                    bootstrap_rounds=50, deterministic_judge=det)
        cal = r.judges["j"].calibration
        assert cal.bound_used == unit and cal.exact is exact
        assert r.judges["j"].certificate.exact is exact


# ------------------------------------------------------------------------------------------------ leaderboard
def test_leaderboard_view_neighbor_is_a_model_item_pair():
    df = _flips(4, 60, {"x": 0.1}, seed=4)
    r = certify(df, tau=0.5, delta=0.01, neighbors="variant:x", view="leaderboard", out=None, plots=False,
                progress=False, bootstrap_rounds=50)
    j = r.judges["j"]
    assert j.certificate.neighbor_relation.startswith("one (model, item) pair, drawn uniformly")
    assert "one item, drawn uniformly" not in j.certificate.guarantee
    from biasbound.pipeline._summary import certificate_rows

    assert "(model, item) pair" in dict(certificate_rows(j))["neighbours"]


# ------------------------------------------------------------------------------------------------ rms
def test_rms_with_several_models_is_calibrated_as_each_models_mixture():
    df = _flips(4, 150, {"x": 0.03, "y": 0.2}, seed=3)
    r = certify(df, tau=0.5, delta=0.01, neighbors="variant:x,variant:y", combine="rms", out=None, plots=False,
                progress=False, bootstrap_rounds=50, deterministic_judge=True)  # the census is the truth
    j = r.judges["j"]
    cal = j.calibration
    k = knowledge_from_dict(j.certificate.knowledge)
    assert k.how == "mixture" and len(k.generators) == 8  # 4 models x 2 generators
    # the truth from the census: each (model, generator)'s violation probability at the released point
    per: dict[str, dict[str, float]] = {}
    for name, recs in k.generators:
        model, gen = name.split(" | ")
        (rec,) = recs
        p = exceedance_probabilities(cal.alpha**2 * rec.sq_norms, tau=0.5, sigma=cal.sigma, dim=150)
        per.setdefault(model, {})[gen] = float(np.mean(p))
    mixture = {m: (v["variant:x"] + v["variant:y"]) / 2 for m, v in per.items()}
    worst = max(mixture.values())
    assert worst <= 0.01 * (1 + 1e-9)
    assert worst == pytest.approx(0.01, rel=1e-6)  # the worst model's mixture sits at delta: no alpha left unused
    assert max(max(v.values()) for v in per.values()) > 0.01  # a max over (model, generator) would refuse this alpha
    # the judge's alpha is the smallest of the models' own mixture alphas at that sigma (a checked point's
    # alpha_at_sigma is a bisection to relative 1e-6, its safe end)
    alphas = [c.alpha_at_sigma for c in j.model_certificates.values()]
    assert min(alphas) <= cal.alpha and cal.alpha == pytest.approx(min(alphas), rel=1e-5)
    # each model's certificate states its own mixture probability (its bound rounds the tail up, here by < 1e-6)
    for m, c in j.model_certificates.items():
        assert mixture[m] <= c.bound_value and math.isclose(c.bound_value, mixture[m], rel_tol=1e-6)
    j.certificate.verify()

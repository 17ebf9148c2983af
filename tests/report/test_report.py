"""Tests of biasbound.report: every plot writes a real, non-blank PNG; the HTML report is
self-contained, escapes user strings and states the guarantee and the audit verdict.

Real data: per-item game-1 scores of the ko-arena-hard ensemble judgments, computed here
with gzip + json (B>>A = 1, B>A = .75, A=B = .5, A>B = .25, A>>B = 0; the model is B in
game 1). None of these tests is statistical: all random inputs come from fixed seeds and
every assertion is deterministic, so the false-failure rate is 0.
"""

from __future__ import annotations

import base64
import gzip
import html
import io
import json
import math
import re
import warnings
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import biasbound.report as report
from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound import InputError
from biasbound.report import (
    format_number,
    plot_calibration_tradeoff,
    plot_judge_retention,
    plot_ranking,
    plot_score_kde,
    plot_sensitivity,
    write_report,
)

pytestmark = pytest.mark.slow  # end to end: plots and HTML reports drawn (~16 s on a loaded machine)

DATA = SHARED_DATA / "ko-arena-hard-v0.1" / "judgments_ensemble.jsonl.gz"
GAME1 = {"B>>A": 1.0, "B>A": 0.75, "A=B": 0.5, "A>B": 0.25, "A>>B": 0.0}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- helpers


def check_png(path: Path, *, min_pixels: int = 200_000) -> np.ndarray:
    """Assert ``path`` is a PNG that matplotlib reads back, of non-trivial size and not blank."""
    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC
    img = mpimg.imread(path)
    assert img.ndim == 3 and img.shape[2] in (3, 4)
    assert img.shape[0] * img.shape[1] >= min_pixels
    assert float(img[..., :3].std()) > 0.0
    return img


def real_game_scores(game: int) -> dict[str, np.ndarray]:
    """Per-item scores per model in the model's view for game 1 or 2 (NaN where the game or verdict is missing).

    Game 2 swaps the positions, so its score is 1 - GAME1[verdict].
    """
    per_model: dict[str, list[float]] = {}
    with gzip.open(DATA, "rt", encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            games = rec.get("games") or []
            g = games[game - 1] if len(games) >= game else None
            verdict = g.get("score") if isinstance(g, dict) else None
            s = GAME1.get(verdict, math.nan) if verdict else math.nan
            per_model.setdefault(rec["model"], []).append(s if game == 1 else 1.0 - s)
    return {m: np.asarray(v, dtype=float) for m, v in per_model.items()}


def real_game1_scores() -> dict[str, np.ndarray]:
    """Per-item game-1 scores per model (NaN where the game or verdict is missing)."""
    return real_game_scores(1)


def stand_in_certified(scores: np.ndarray, *, alpha: float, sigma: float, seed: int) -> np.ndarray:
    """A stand-in for the mechanism (shrink toward 0.5, add seeded Gaussian noise) — plotting input only."""
    rng = np.random.default_rng(seed)
    return alpha * scores + (1 - alpha) * 0.5 + rng.normal(0.0, sigma, scores.shape)


def percentile_ci(x: np.ndarray, seed: int) -> tuple[float, float]:
    res = stats.bootstrap((x,), np.mean, n_resamples=1000, method="percentile", confidence_level=0.95, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def build_leaderboard(scores: dict[str, np.ndarray], *, alpha: float = 0.4, sigma: float = 0.05) -> pd.DataFrame:
    rows = []
    for i, (model, s) in enumerate(sorted(scores.items())):
        obs = s[np.isfinite(s)]
        cert = stand_in_certified(obs, alpha=alpha, sigma=sigma, seed=100 + i)
        lo, hi = percentile_ci(obs, seed=i)
        clo, chi = percentile_ci(cert, seed=1000 + i)
        rows.append(
            {
                "judge": "ensemble",
                "model": model,
                "n_items": int(obs.size),
                "n_missing": int(s.size - obs.size),
                "original": float(obs.mean()),
                "original_lo": lo,
                "original_hi": hi,
                "certified": float(cert.mean()),
                "certified_lo": clo,
                "certified_hi": chi,
            }
        )
    lb = pd.DataFrame(rows)
    lb["rank_original"] = lb["original"].rank(ascending=False, method="min")
    lb["rank_certified"] = lb["certified"].rank(ascending=False, method="min")
    return lb


@pytest.fixture(scope="module")
def all_scores() -> dict[str, np.ndarray]:
    return real_game1_scores()


@pytest.fixture(scope="module")
def eight_scores(all_scores: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    names = sorted(all_scores)[:: len(all_scores) // 8][:8]
    return {m: all_scores[m] for m in names}


@pytest.fixture(scope="module")
def real_leaderboard(eight_scores: dict[str, np.ndarray]) -> pd.DataFrame:
    return build_leaderboard(eight_scores)


@pytest.fixture(scope="module")
def plot_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This module's plots go to one folder of pytest's per-run temporary tree (never a shared fixed path)."""
    return tmp_path_factory.mktemp("plots")


def test_real_data_loaded(all_scores: dict[str, np.ndarray]) -> None:
    """The data README promises 76 models x 500 questions."""
    assert len(all_scores) == 76
    assert all(v.size == 500 for v in all_scores.values())
    pooled = np.concatenate(list(all_scores.values()))
    assert set(np.unique(pooled[np.isfinite(pooled)])) <= set(GAME1.values())


# ----------------------------------------------------------------------------- KDE


def test_score_kde_synthetic(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    original = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=300)
    shrunk = 0.3 * original + 0.35
    certified = shrunk + rng.normal(0, 0.05, 300)
    out = plot_score_kde(original, certified, tmp_path / "kde.png", shrunk=shrunk, alpha=0.3, sigma=0.05, title="t")
    assert out == tmp_path / "kde.png"
    check_png(out)


def test_score_kde_real(eight_scores: dict[str, np.ndarray], plot_dir: Path) -> None:
    model = next(m for m, s in eight_scores.items() if np.isfinite(s).sum() > 100)
    original = eight_scores[model]
    finite = original[np.isfinite(original)]
    shrunk = 0.4 * finite + 0.3
    certified = stand_in_certified(finite, alpha=0.4, sigma=0.05, seed=5)
    out = plot_score_kde(original, certified, plot_dir / "score_kde.png", shrunk=shrunk, alpha=0.4, sigma=0.05, title=f"{model} (ensemble judge)")
    check_png(out)


def test_large_input_kde_matches_scipy() -> None:
    """Above 20,000 scores the density is a weighted kernel sum; scipy's gaussian_kde is the reference."""
    from biasbound.report.plots import _kde

    rng = np.random.default_rng(4)
    grid = np.linspace(-0.2, 1.2, 301)
    discrete = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=60_000)
    np.testing.assert_allclose(_kde(discrete, grid), stats.gaussian_kde(discrete)(grid), rtol=1e-9, atol=1e-12)
    continuous = rng.beta(2.0, 5.0, size=60_000)
    ref = stats.gaussian_kde(continuous)(grid)
    # binning moves each value by at most half a bin (1/8192 of the range): far below the bandwidth
    np.testing.assert_allclose(_kde(continuous, grid), ref, atol=1e-3 * ref.max())


def test_score_kde_zooms_on_strongly_shrunk_scores(eight_scores: dict[str, np.ndarray], plot_dir: Path) -> None:
    """With α = 0.04 the transformed scores span < 25% of the original range: a zoom panel is added (taller figure)."""
    s = next(iter(eight_scores.values()))
    finite = s[np.isfinite(s)]
    wide = check_png(plot_score_kde(s, stand_in_certified(finite, alpha=0.4, sigma=0.01, seed=1), plot_dir / "score_kde_wide.png"))
    narrow = check_png(
        plot_score_kde(s, stand_in_certified(finite, alpha=0.04, sigma=0.005, seed=1), plot_dir / "score_kde_zoom.png",
                       shrunk=0.04 * finite + 0.48, alpha=0.04, sigma=0.005)
    )
    assert narrow.shape[0] > 1.15 * wide.shape[0]  # 5.8 in against 4.8 in: a second panel, still one printed page


def test_score_kde_nan_counted_not_fatal(tmp_path: Path) -> None:
    original = np.array([0.0, 0.5, np.nan, 1.0, 0.25, np.nan])
    check_png(plot_score_kde(original, original[::-1], tmp_path / "nan.png"))


@pytest.mark.parametrize("values", [np.full(20, 0.5), np.array([0.75])])
def test_score_kde_degenerate(values: np.ndarray, plot_dir: Path) -> None:
    """All-equal scores (or a single score) have no KDE; a line is drawn instead of raising."""
    out = plot_score_kde(values, values, plot_dir / f"score_kde_degenerate_{values.size}.png", alpha=0.0, sigma=0.0)
    check_png(out)


def test_score_kde_mixed_degenerate(plot_dir: Path) -> None:
    """Constant original scores beside noisy certified ones: one line, one density, no error."""
    rng = np.random.default_rng(2)
    original = np.full(50, 0.5)
    check_png(plot_score_kde(original, 0.5 + rng.normal(0, 0.05, 50), plot_dir / "score_kde_mixed.png", shrunk=original))


def test_score_kde_rejects_bad_input(tmp_path: Path) -> None:
    ok = np.array([0.1, 0.2, 0.3])
    with pytest.raises(InputError, match="'original'"):
        plot_score_kde(np.array([np.nan, np.nan]), ok, tmp_path / "a.png")
    with pytest.raises(InputError, match="'certified'.*1-D"):
        plot_score_kde(ok, np.ones((2, 2)), tmp_path / "a.png")
    with pytest.raises(InputError, match="infinite"):
        plot_score_kde(np.array([0.1, np.inf]), ok, tmp_path / "a.png")
    with pytest.raises(InputError, match="'alpha'.*\\[0, 1\\]"):
        plot_score_kde(ok, ok, tmp_path / "a.png", alpha=1.5)
    with pytest.raises(InputError, match="'path'.*\\.png"):
        plot_score_kde(ok, ok, tmp_path / "a.svg")
    with pytest.raises(TypeError, match="'path'"):
        plot_score_kde(ok, ok, 3)
    assert not (tmp_path / "a.png").exists()


# ----------------------------------------------------------------------------- ranking


def test_ranking_real(real_leaderboard: pd.DataFrame, plot_dir: Path) -> None:
    check_png(plot_ranking(real_leaderboard, plot_dir / "ranking.png", title="ko-arena-hard, 8 models"))


def test_ranking_76_models_stays_legible(all_scores: dict[str, np.ndarray], real_leaderboard: pd.DataFrame, plot_dir: Path) -> None:
    """Each row gets 0.175 in (26 px at 150 dpi; an 8 pt label is 0.11 in tall); the figure grows with the model count.
    (The report draws 76 models on three pages of this height each: tests/report/test_report_pages.py.)"""
    full = build_leaderboard(all_scores)
    img76 = check_png(plot_ranking(full, plot_dir / "ranking_76.png"))
    img8 = check_png(plot_ranking(real_leaderboard, plot_dir / "ranking_8.png"))
    assert img76.shape[0] >= 76 * 26
    assert img76.shape[0] > img8.shape[0]
    assert img76.shape[0] > img76.shape[1]  # horizontal layout: models run down the page
    img_top = check_png(plot_ranking(full, plot_dir / "ranking_top10.png", top=10), min_pixels=100_000)
    assert img_top.shape[0] < img76.shape[0] / 3


def test_ranking_degenerate(real_leaderboard: pd.DataFrame, plot_dir: Path) -> None:
    single = real_leaderboard.head(1)
    check_png(plot_ranking(single, plot_dir / "ranking_single.png"), min_pixels=100_000)
    nan_ci = real_leaderboard.copy()
    nan_ci.loc[:, ["original_lo", "original_hi", "certified_lo"]] = np.nan
    nan_ci.loc[2, ["certified", "rank_certified"]] = np.nan
    check_png(plot_ranking(nan_ci, plot_dir / "ranking_nan.png"))
    const = real_leaderboard.copy()
    const[["original", "original_lo", "original_hi", "certified", "certified_lo", "certified_hi"]] = 0.5
    const[["rank_original", "rank_certified"]] = 1.0
    check_png(plot_ranking(const, plot_dir / "ranking_constant.png"))
    dollars = real_leaderboard.copy()
    dollars.loc[0, "model"] = "cost$1 model $x^2$ with a very long name that must be shortened for the axis"
    check_png(plot_ranking(dollars, plot_dir / "ranking_names.png"))


def test_ranking_rejects_bad_input(real_leaderboard: pd.DataFrame, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="certified_hi"):
        plot_ranking(real_leaderboard.drop(columns=["certified_hi"]), tmp_path / "r.png")
    two = real_leaderboard.copy()
    two.loc[0, "judge"] = "other"
    with pytest.raises(InputError, match="one judge"):
        plot_ranking(two, tmp_path / "r.png")
    with pytest.raises(InputError, match="at least one model"):
        plot_ranking(real_leaderboard.head(0), tmp_path / "r.png")
    with pytest.raises(InputError, match="'top'"):
        plot_ranking(real_leaderboard, tmp_path / "r.png", top=0)
    with pytest.raises(TypeError, match="DataFrame"):
        plot_ranking(real_leaderboard.to_dict(), tmp_path / "r.png")


# ----------------------------------------------------------------------------- sensitivity


@pytest.fixture(scope="module")
def game2_scores() -> dict[str, np.ndarray]:
    return real_game_scores(2)


def real_swap_generators(eight_scores: dict[str, np.ndarray], game2: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Δ* of the position swap per model from the real data: |game1 − game2| of one swapped item, RMS over items.

    Not the package's sensitivity code: a direct computation for plotting input. The "ucb" is a
    stand-in (1.2 x Δ*), not a confidence bound: the plot only draws it.
    """
    out: dict[str, dict[str, float]] = {}
    for model, s in list(eight_scores.items())[:3]:
        both = np.isfinite(s) & np.isfinite(game2[model])
        d = np.abs(s[both] - game2[model][both])
        out[model] = {"delta_star": float(np.sqrt(np.mean(d**2))), "ucb": float(np.sqrt(np.mean(d**2)) * 1.2), "m": int(d.size)}
    return out


def test_sensitivity(eight_scores: dict[str, np.ndarray], game2_scores: dict[str, np.ndarray], plot_dir: Path,
                     tmp_path: Path) -> None:
    gens = real_swap_generators(eight_scores, game2_scores)
    assert len(gens) == 3 and all(g["m"] >= 490 and 0 < g["delta_star"] <= 1 for g in gens.values())
    check_png(plot_sensitivity(gens, plot_dir / "sensitivity.png", used=0.45, max_distance=1.0))
    partial = {
        "swap": {"delta_star": 0.31, "ucb": 0.36, "m": 500},
        "rerun": {"delta_star": 0.12, "ucb": None, "m": 200},
        "format": {"delta_star": 0.2},
        "paraphrase": {"delta_star": float("nan"), "m": 0},
    }
    check_png(plot_sensitivity(partial, tmp_path / "s.png"), min_pixels=100_000)
    check_png(plot_sensitivity({"zero": {"delta_star": 0.0}}, tmp_path / "z.png"), min_pixels=100_000)


def test_sensitivity_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="at least one generator"):
        plot_sensitivity({}, tmp_path / "s.png")
    with pytest.raises(InputError, match="delta_star"):
        plot_sensitivity({"swap": {"delta_star": -0.1}}, tmp_path / "s.png")
    with pytest.raises(InputError, match="'max_distance'"):
        plot_sensitivity({"swap": {"delta_star": 0.1}}, tmp_path / "s.png", max_distance=0.0)
    with pytest.raises(TypeError, match="swap"):
        plot_sensitivity({"swap": 0.3}, tmp_path / "s.png")


# ----------------------------------------------------------------------------- judges


def test_judge_retention_real(all_scores: dict[str, np.ndarray], plot_dir: Path) -> None:
    """Correlations computed with scipy from the real model means and two stand-in settings."""
    models = sorted(all_scores)
    means = np.array([np.nanmean(all_scores[m]) for m in models])
    rows = []
    for judge_seed, judge in enumerate(["ensemble", "ensemble-reversed-noise"]):
        for setting, sigma in (("paper", 0.08), ("tight", 0.02)):
            cert = stand_in_certified(means, alpha=0.4, sigma=sigma, seed=10 * judge_seed + int(sigma * 100))
            rows.append(
                {
                    "judge": judge,
                    "setting": setting,
                    "spearman": stats.spearmanr(means, cert).statistic,
                    "kendall_tau_b": stats.kendalltau(means, cert, variant="b").statistic,
                    "pearson": stats.pearsonr(means, cert).statistic,
                }
            )
    table = pd.DataFrame(rows)
    check_png(plot_judge_retention(table, plot_dir / "judges.png"))
    check_png(plot_judge_retention(table, plot_dir / "judges_spearman.png", metrics=["spearman"]), min_pixels=100_000)


def test_judge_retention_degenerate(tmp_path: Path) -> None:
    table = pd.DataFrame(
        {"judge": ["a", "a", "b"], "setting": ["max", "rms", "max"], "spearman": [0.9, np.nan, -0.2], "pearson": [1.0, 0.5, 0.0]}
    )
    check_png(plot_judge_retention(table, tmp_path / "j.png"), min_pixels=100_000)
    one = pd.DataFrame({"judge": ["only"], "setting": ["paper"], "kendall_tau_b": [0.7]})
    check_png(plot_judge_retention(one, tmp_path / "j1.png"), min_pixels=100_000)


def test_judge_retention_rejects_bad_input(tmp_path: Path) -> None:
    good = pd.DataFrame({"judge": ["a"], "setting": ["paper"], "spearman": [0.5]})
    with pytest.raises(InputError, match="'setting'"):
        plot_judge_retention(good.drop(columns=["setting"]), tmp_path / "j.png")
    with pytest.raises(InputError, match="spearman"):
        plot_judge_retention(good.assign(spearman=[1.5]), tmp_path / "j.png")
    with pytest.raises(InputError, match="unique"):
        plot_judge_retention(pd.concat([good, good]), tmp_path / "j.png")
    with pytest.raises(InputError, match="'metrics'"):
        plot_judge_retention(good, tmp_path / "j.png", metrics=["r2"])
    with pytest.raises(InputError, match="at least one of the columns"):
        plot_judge_retention(good.drop(columns=["spearman"]), tmp_path / "j.png")


# ----------------------------------------------------------------------------- tradeoff


def test_calibration_tradeoff(plot_dir: Path, tmp_path: Path) -> None:
    taus = np.linspace(0.1, 1.0, 10)
    alphas = np.minimum(1.0, 0.8 * taus)
    sigmas = 0.05 * taus
    alphas[0] = sigmas[0] = np.nan  # infeasible at the smallest tau
    check_png(plot_calibration_tradeoff(taus, alphas, sigmas, plot_dir / "tradeoff.png", tau_marked=0.5))
    with pytest.raises(InputError, match="increasing"):
        plot_calibration_tradeoff(taus[::-1], alphas, sigmas, tmp_path / "t.png")
    with pytest.raises(InputError, match="'sigmas'.*shape"):
        plot_calibration_tradeoff(taus, alphas, sigmas[:3], tmp_path / "t.png")
    with pytest.raises(InputError, match="'alphas'"):
        plot_calibration_tradeoff(taus, alphas + 1.0, sigmas, tmp_path / "t.png")


# ----------------------------------------------------------------------------- formatting


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "—"),
        (True, "yes"),
        (np.int64(500), "500"),
        (123456789012345, "123456789012345"),
        (0.1 + 0.2, "0.3"),
        (0.123456789, "0.1235"),
        (500.0, "500"),
        (12.3456789, "12.35"),
        (0.0, "0"),
        (2.5e-5, "2.500e-05"),
        (3.0e7, "3.000e+07"),
        (float("nan"), "n/a"),
        (float("inf"), "∞"),
        (-float("inf"), "−∞"),
        ("markov", "markov"),
    ],
)
def test_format_number(value: object, expected: str) -> None:
    assert format_number(value) == expected


# ----------------------------------------------------------------------------- HTML


GUARANTEE = (
    "For this fixed batch of 8 judged models and neighbours drawn from {swap} (one item's presentation order swapped), "
    "Pr[||M(D) − M(D′)||₂ > 0.5] ≤ 0.01 over the neighbour draw & the mechanism's noise; it is local to this batch."
)
EVIL = '<script>alert("pwn")</script>'


def make_certificate(*, verdict: str = "holds", sigma: float = 0.051234567891234) -> dict[str, object]:
    return {
        "tau": 0.5,
        "delta": 0.01,
        "delta_B": 0.005,
        "delta_Delta": 0.005,
        "beta": 0.05,
        "dim": 500,
        "method": "tight",
        "bound_used": "markov",
        "radius": "chi2-exact",
        "sensitivity": 0.3123456789,
        "sensitivity_ucb": 0.36,
        "generators": {"swap": {"delta_star": 0.3123456789, "ucb": 0.36, "m": 500}},
        "combination": "max",
        "alpha": 0.3,
        "alpha_max": 0.41,
        "center": {"kind": "fixed", "value": 0.5},
        "sigma": sigma,
        "sigma_max": 0.0512345679,
        "seed": 20240601,
        "data_sha256": "0f" * 32,
        "biasbound_version": "0.1.0",
        "view": "per-item",
        "scope": {"judge": "ensemble", "model": EVIL},
        "guarantee": GUARANTEE,
        "audit": {
            "n_neighbors": 500,
            "exact_probability": 0.0012,
            "exact_ucb": 0.004 if verdict == "holds" else 0.2,
            "mc_probability": 0.0011,
            "mc_ucb": 0.0021,
            "n_mc": 20000,
            "confidence": 0.99,
            "verdict": verdict,
            "tau": 0.5,
            "delta": 0.01,
            "seed": 7,
        },
        "created": "2025-01-01T00:00:00+00:00",
    }


@pytest.fixture(scope="module")
def report_inputs(real_leaderboard: pd.DataFrame, eight_scores: dict[str, np.ndarray], game2_scores: dict[str, np.ndarray],
                  tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    d = tmp_path_factory.mktemp("plots")
    lb = real_leaderboard.copy()
    lb.loc[0, "model"] = EVIL
    lb.loc[1, "model"] = "Tom & Jerry <v2>"
    model = next(iter(eight_scores))
    s = eight_scores[model]
    plots = {
        "score_kde": plot_score_kde(s, stand_in_certified(s[np.isfinite(s)], alpha=0.4, sigma=0.05, seed=1), d / "score_kde.png"),
        "ranking": plot_ranking(lb, d / "ranking.png"),
        "sensitivity-ensemble": plot_sensitivity(real_swap_generators(eight_scores, game2_scores), d / "sensitivity.png", used=0.45),
    }
    means = lb["original"].to_numpy()
    cert = lb["certified"].to_numpy()
    retention = {
        "spearman": float(stats.spearmanr(means, cert).statistic),
        "kendall_tau_b": float(stats.kendalltau(means, cert).statistic),
        "pearson": float(stats.pearsonr(means, cert).statistic),
        "pairs_kept_probability": [0.91, 0.62, 0.99],
        "alpha": 0.3,
        "expected_distortion": 12.3456789,
    }
    load_report = {"rows": 38000, "missing_per_model": {EVIL: 3, "gpt-4o": 1}, "skipped": [{"line": 17, "reason": "unknown verdict 'A>>>B'"}]}
    return {"leaderboard": lb, "plots": plots, "retention": retention, "load_report": load_report}


def embedded_pngs(text: str) -> list[bytes]:
    return [base64.b64decode(m) for m in re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', text)]


def test_report_contents(report_inputs: dict[str, object], tmp_path: Path) -> None:
    lb = report_inputs["leaderboard"]
    out = write_report(
        tmp_path / "out",
        title="ko-arena-hard <certified>",
        summary={"judges": 1, "models": len(lb), "tau": 0.5, "delta": 0.01},
        leaderboard=lb,
        certificates=[make_certificate()],
        retention=report_inputs["retention"],
        plots=report_inputs["plots"],
        load_report=report_inputs["load_report"],
        audit={"pooled": make_certificate()["audit"], "per_model_verdicts": {"holds": 7, "inconclusive": 1}},
    )
    assert out == tmp_path / "out" / "report.html"
    text = out.read_text(encoding="utf-8")

    # Jinja escapes quotes as numeric references, so compare after unescaping; the raw
    # markup checks below make sure the escaping happened.
    plain = html.unescape(text)
    assert GUARANTEE in plain
    assert "&gt; 0.5] ≤ 0.01 over the neighbour draw &amp; the" in text
    assert 'class="verdict holds"' in text and ">holds</span>" in text
    for name in lb["model"]:
        assert f'<td class="name">{name}</td>' in plain
    assert "<script" not in text  # the evil model name is escaped everywhere, and the report has no scripts
    assert "&lt;script&gt;alert(" in text
    assert "Tom &amp; Jerry &lt;v2&gt;" in text
    assert "ko-arena-hard &lt;certified&gt;" in text
    # self-contained: no external resources
    assert not re.search(r'(src|href)="(https?:)?//', text)
    assert "<link" not in text
    # every plot embedded, each decodes as a PNG that matplotlib can read
    pngs = embedded_pngs(text)
    assert len(pngs) == len(report_inputs["plots"])
    for data in pngs:
        assert data[:8] == PNG_MAGIC
        assert mpimg.imread(io.BytesIO(data), format="png").std() > 0
    # numbers are formatted: no long float reprs anywhere outside the base64 data
    visible = re.sub(r"base64,[A-Za-z0-9+/=]+", "", text)
    assert not re.search(r"\d\.\d{6,}", visible)
    assert "0.05123" in visible  # sigma 0.051234567891234 at 4 significant digits
    # the cost section: retention numbers (computed with scipy above) and pair-keep summary
    assert f"{report_inputs['retention']['spearman']:.4g}" in visible
    assert "0.84 (min 0.62, 3 pairs)" in visible  # mean of 0.91, 0.62, 0.99 is 0.84
    # the missing counts: leaderboard total and the load report
    assert f"<strong>{int(lb['n_missing'].sum())}</strong> missing score(s)" in visible
    assert "unknown verdict &#39;A&gt;&gt;&gt;B&#39;" in visible or "unknown verdict 'A&gt;&gt;&gt;B'" in visible
    for section in ("The guarantee", "The mechanism", "What the scores mean", "Measured sensitivity per neighbour generator",
                    "Audit on held-out neighbours", "What it cost", "Leaderboard before and after",
                    "Missing and failed judgments", "Certificate record", "Plots"):
        assert f"<h2>{section}</h2>" in text
    # prose, not key=value dumps, and nothing collapsed or in a scroll box
    assert "per_model_verdicts" in visible and "holds 7, inconclusive 1" in visible
    assert "=7" not in visible and "<details" not in text and "overflow: auto" not in text
    # the mechanism as a formula with this certificate's numbers (α 0.3, centre 0.5, σ, d 500)
    assert "M(D) = 0.3 · f(D) + 0.7 · 0.5 + N(0, 0.05123² · I_500)" in plain
    assert "Judge: ensemble." in visible  # per-judge plot names get their caption and the judge


def test_report_violated_and_no_certificate(report_inputs: dict[str, object], tmp_path: Path) -> None:
    lb = report_inputs["leaderboard"]
    bad = write_report(
        tmp_path / "bad",
        title="t",
        summary={},
        leaderboard=lb,
        certificates=[make_certificate(verdict="violated")],
        retention=None,
        plots={},
        load_report=None,
        audit=None,
    ).read_text(encoding="utf-8")
    assert 'class="verdict violated"' in bad and ">violated</span>" in bad
    assert 'class="verdict holds"' not in bad
    assert "No retention figures were computed." in bad

    none = write_report(
        tmp_path / "none",
        title="t",
        summary={"status": "infeasible"},
        leaderboard=lb[["model", "original"]],
        certificates=[],
        retention={
            "paper": {"spearman": 0.5, "expected_distortion": {"per_model": {"a": 1.0, "b": 3.0}, "total": 4.0, "mean": 2.0}},
            "tight": {"spearman": float("nan")},
        },
        plots={},
        load_report=None,
        audit=None,
    ).read_text(encoding="utf-8")
    assert "No certificate was issued" in none
    assert "not audited" in none
    assert '<td class="name">paper</td><td>0.5000</td>' in none and '<td class="name">tight</td><td>n/a</td>' in none
    assert "<td>mean 2, total 4, 2 values</td>" in none  # per-model distortion summarised, not dumped


def test_report_rejects_bad_input(report_inputs: dict[str, object], tmp_path: Path) -> None:
    lb = report_inputs["leaderboard"]
    kw = dict(title="t", summary={}, certificates=[], retention=None, load_report=None, audit=None)
    not_png = tmp_path / "x.png"
    not_png.write_bytes(b"GIF89a not a png")
    with pytest.raises(InputError, match="not a PNG"):
        write_report(tmp_path, leaderboard=lb, plots={"ranking": not_png}, **kw)
    with pytest.raises(InputError, match="readable"):
        write_report(tmp_path, leaderboard=lb, plots={"ranking": tmp_path / "missing.png"}, **kw)
    with pytest.raises(InputError, match="'model' column"):
        write_report(tmp_path, leaderboard=lb.drop(columns=["model"]), plots={}, **kw)
    with pytest.raises(TypeError, match="'certificates'"):
        write_report(tmp_path, leaderboard=lb, plots={}, **{**kw, "certificates": make_certificate()})
    assert not (tmp_path / "report.html").exists()


def test_public_names_sorted() -> None:
    assert report.__all__ == sorted(report.__all__)
    assert all(hasattr(report, n) for n in report.__all__)


def test_correlations_show_four_decimals_so_near_one_is_not_one():
    from biasbound.report.html import format_correlation

    assert format_correlation(0.99997) == "1.0000"
    assert format_correlation(0.9942095) == "0.9942"
    assert format_correlation(float("nan")) == "n/a"
    assert format_correlation(None) == "—"


def test_report_renders_certificate_figures_per_model_rows_and_a_comparison(report_inputs: dict[str, object], tmp_path: Path) -> None:
    """A certificate figure found in the dict gets its own section; per-model certificates get one row each."""
    cert = make_certificate()
    # the shapes biasbound.certificate derives (schema 2)
    cert["bias_radius"] = {"delta": 0.01, "radius": 0.8123, "per_generator": {"swap": 0.8123},
                           "curve": [{"delta": 0.01, "radius": 0.8123}, {"delta": 0.5, "radius": 0.25}]}
    cert["original_scale"] = {"tau": 1.6667, "sigma": 0.1708}
    cert["range_implied"] = {"A": 1.0, "shift_ratio": None, "bound": 0.4321, "holds": False}
    cert["frontier"] = {"points": [{"sigma": 0.0, "alpha": 0.5}, {"sigma": 0.01, "alpha": 0.31}], "tau_split": None}
    per_model = []
    for name, verdict in (("model-a", "holds"), ("모델-b", "inconclusive")):
        c = make_certificate(verdict=verdict)
        c["scope"] = {"judge": "ensemble", "model": name, "n_missing": 2,
                      "model_sensitivity": {"delta_star": 0.25, "ucb": 0.31}}
        c["audit"] = {"model": c["audit"]}
        per_model.append(c)
    text = write_report(
        tmp_path, title="t", summary={}, leaderboard=report_inputs["leaderboard"], certificates=[cert],
        retention=None, plots={}, load_report=None, audit=None, model_certificates=per_model,
        comparison={"title": "Paper against tight", "columns": ["paper", "tight"], "rows": [("α", ["0.04", "0.25"])]},
    ).read_text(encoding="utf-8")
    assert "<h2>Bias radius of the judge</h2>" in text and "Here it is 0.8123, against the certified τ = 0.5." in text
    assert "<h2>Bias radius over δ</h2>" in text and '<td class="name">0.5</td><td>0.25</td>' in text
    assert "No: the score range alone would not give this guarantee" in text and "failure probability is 0.4321" in text
    assert "<h2>The frontier: the largest α for each σ</h2>" in text and '<td class="name">0.01</td><td>0.31</td>' in text
    assert "<h2>The guarantee on the original score scale</h2>" in text and "τ/α = 1.667 and σ/α = 0.1708" in text
    assert "<h2>Per-model certificates</h2>" in text
    assert '<td class="name">모델-b</td><td>500</td><td>2</td><td>0.25</td><td>0.31</td><td>500</td>' in text
    assert text.count("<td>inconclusive</td>") == 1 and text.count("<td>holds</td>") == 1
    assert "<h2>Paper against tight</h2>" in text and "<td>0.04</td><td>0.25</td>" in text


# ----------------------------------------------------------------------------- non-Latin names
KOREAN = "한국어-모델-v2"  # Korean model names occur in real Korean leaderboards (e.g. ko-arena-hard's community)


def _glyph_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in caught if "missing from font" in str(w.message)]


def test_korean_model_names_are_drawn_with_the_installed_fallback_font_or_escaped(real_leaderboard, plot_dir) -> None:
    """Whatever fonts this machine has, no glyph is missing when a Korean name is drawn (no empty boxes)."""
    from biasbound.report import plots

    lb = real_leaderboard.copy()
    lb.loc[0, "model"] = KOREAN
    chain, covered = plots._font_chain()
    has_cjk = all(ord(ch) in covered for ch in KOREAN)
    assert plots.drawable(KOREAN) == (KOREAN if has_cjk else KOREAN.encode("ascii", "backslashreplace").decode())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_png(plot_ranking(lb, plot_dir / "ranking_korean.png"))
    assert not _glyph_warnings(caught)


def test_without_a_cjk_font_names_are_escaped_not_drawn_as_boxes(real_leaderboard, tmp_path, monkeypatch) -> None:
    """A pip-only machine has DejaVu Sans alone: Hangul becomes \\uXXXX escapes, and matplotlib misses no glyph."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    from biasbound.report import plots

    dejavu = frozenset(FT2Font(font_manager.findfont("DejaVu Sans")).get_charmap())
    assert not any(ord(ch) in dejavu for ch in "한국어모델")  # the premise: DejaVu Sans has no Hangul
    monkeypatch.setattr(plots, "_font_chain", lambda: (("DejaVu Sans",), dejavu))
    assert plots.drawable(KOREAN) == "\\ud55c\\uad6d\\uc5b4-\\ubaa8\\ub378-v2"
    lb = real_leaderboard.copy()
    lb.loc[0, "model"] = KOREAN
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_png(plot_ranking(lb, tmp_path / "ranking.png"))
    assert not _glyph_warnings(caught)
    # and the control: drawing the raw name with DejaVu Sans alone does miss glyphs (what the escape prevents)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with plots._fonts(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig = Figure()
        FigureCanvasAgg(fig)
        fig.text(0.1, 0.5, KOREAN)
        fig.savefig(tmp_path / "raw.png")
    assert _glyph_warnings(caught)


def test_score_distribution_draws_bars_for_discrete_scores(eight_scores, plot_dir) -> None:
    """Five verdict levels give five bars (one per level, heights = shares of items), not a density."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401  (the module draws on Agg)

    from biasbound.report import plots

    s = np.concatenate(list(eight_scores.values()))
    finite = s[np.isfinite(s)]
    drawn = {}
    real_bars = plots._share_bars

    def spy(axis, values, *args, **kwargs):
        drawn.setdefault("levels", []).append(np.unique(values).size)
        return real_bars(axis, values, *args, **kwargs)

    import unittest.mock as mock

    with mock.patch.object(plots, "_share_bars", spy):
        cert = stand_in_certified(finite, alpha=0.25, sigma=0.01, seed=1)
        shrunk = 0.25 * finite + 0.75 * 0.5
        check_png(plots.plot_score_distribution(s, cert, plot_dir / "score_distribution.png", shrunk=shrunk,
                                                alpha=0.25, sigma=0.01))
    assert drawn["levels"] == [5, 5]  # the original and the shrunk scores: one bar per verdict level

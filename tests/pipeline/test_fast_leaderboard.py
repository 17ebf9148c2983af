"""The leaderboard stage's fast routes give the values of the plain computations they replaced.

Each fast route is compared with the plain reference (scipy's own function, or a verbatim copy of the code it
replaced) on seeded random inputs; the comparisons are exact (bit for bit), so a failure means a changed value,
never noise. No statistical test here (false-failure rate 0).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biasbound.leaderboard import kendall_tau_b, retention


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))))


def _scipy_rows(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy warns on a constant side (NaN), as the fast route returns
        return np.array([stats.kendalltau(x, y, variant="b").statistic for y in ys], dtype=float)


# ------------------------------------------------------------------ Kendall τ_b: vectorised over rows, scipy's bits
@pytest.mark.parametrize("seed", range(60))
def test_kendall_tau_b_rows_equal_scipy_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, k, levels = int(rng.integers(2, 90)), int(rng.integers(1, 25)), int(rng.integers(1, 9))
    # few levels: many ties in x, in the rows, and jointly; otherwise continuous values
    x = np.round(rng.uniform(0, 1, n) * levels) / levels if seed % 3 else rng.normal(size=n)
    ys = np.round(rng.normal(size=(k, n)) * levels) / levels if seed % 2 else rng.normal(size=(k, n)) + x
    ys[0, : min(2, n)] = [0.0, -0.0][: min(2, n)]  # signed zeros are one value (a tie), as in scipy
    if seed % 5 == 0:
        ys[-1] = ys[-1, 0]  # a row with every pair tied: NaN
    if seed % 7 == 0:
        ys[0, -1] = np.nan  # NaN propagates to that row only
    if seed % 11 == 0:
        x[:] = x[0]  # x constant: every row NaN
    if seed % 13 == 1:
        x[-1] = np.nan  # NaN in x: every row NaN
    if seed % 4 == 3:
        ys[:, 0], ys[-1, 1 % n] = np.inf, -np.inf  # infinite values are ranked (tied with each other)
    assert _same_bits(kendall_tau_b(x, ys), _scipy_rows(x, ys))


def test_kendall_tau_b_chunks_of_rows_and_larger_n_equal_scipy() -> None:
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=300), 1)  # n = 300: ~11 rows per chunk, so several chunks
    ys = np.round(x + rng.normal(size=(40, 300)), 1)
    assert _same_bits(kendall_tau_b(x, ys), _scipy_rows(x, ys))


def test_kendall_tau_b_above_the_pairwise_size_is_scipy_row_by_row() -> None:
    from biasbound.leaderboard import _PAIRWISE_MAX_N

    rng = np.random.default_rng(4)
    x = np.round(rng.normal(size=_PAIRWISE_MAX_N + 1), 1)
    ys = np.round(x + rng.normal(size=(3, _PAIRWISE_MAX_N + 1)), 1)
    assert _same_bits(kendall_tau_b(x, ys), _scipy_rows(x, ys))


def test_kendall_tau_b_known_values() -> None:
    # no ties: perfect order 1, reversed -1; one swap among 4 (C - D = 4, 6 pairs): 4/6
    x = np.array([1.0, 2.0, 3.0, 4.0])
    got = kendall_tau_b(x, np.array([[10.0, 20, 30, 40], [4.0, 3, 2, 1], [2.0, 1, 3, 4]]))
    assert got[:2].tolist() == [1.0, -1.0] and got[2] == pytest.approx(4 / 6, rel=1e-15)


def test_retention_kendall_equals_scipy() -> None:
    rng = np.random.default_rng(5)
    o = np.round(rng.uniform(size=50), 2)
    c = np.round(0.5 * o + rng.normal(scale=0.05, size=50), 2)
    got = retention(o, c, alpha=0.5, sigma_model=0.01)
    assert got["kendall_tau_b"] == float(stats.kendalltau(o, c, variant="b").statistic)


def test_retention_over_noise_kendall_band_equals_the_per_draw_loop() -> None:
    from biasbound.pipeline._cost import retention_over_noise

    rng = np.random.default_rng(17)
    original = np.round(rng.uniform(0, 1, 70), 2)  # ties among the original means
    shrunk = 0.4 * original + 0.3
    sigma = np.where(np.arange(70) % 9 == 0, 0.0, 0.02)
    got = retention_over_noise(original, shrunk, sigma, seed=23, draws=500)
    # the plain computation it replaced: one scipy kendalltau per draw, the first 400 draws
    z = shrunk[None, :] + np.random.default_rng(23).normal(size=(500, 70)) * sigma[None, :]
    kt = np.array([stats.kendalltau(original, row, variant="b").statistic for row in z[:400]])
    assert got["kendall_tau_b"] == {"mean": float(np.mean(kt)), "p05": float(np.quantile(kt, 0.05)),
                                    "p95": float(np.quantile(kt, 0.95))}
    assert got["kendall_draws"] == 400


# ------------------------------------------------------------------ the leaderboard's mean over both orders: grouped by codes
def _pairwise_frame(seed: int, models: int = 12, items: int = 40) -> pd.DataFrame:
    from biasbound.data import from_frame

    rng = np.random.default_rng(seed)
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    rows = [(f"m{m:02d}" if m % 3 else f"Model-{m}", f"q{i}", game, float(rng.choice(grid)))
            for m in range(models) for i in range(items) for game in (1, 2)]
    raw = pd.DataFrame(rows, columns=["model", "item_id", "game", "score"])
    raw.loc[rng.random(len(raw)) < 0.05, "score"] = np.nan  # missing verdicts: skipped by the means
    return from_frame(raw, judge="j", scale=(0, 1)).frame


@pytest.mark.parametrize("seed", [0, 1])
def test_original_both_orders_equals_the_text_groupby(seed: int, tmp_path) -> None:
    from biasbound.pipeline import certify

    frame = _pairwise_frame(seed)
    lb = certify(frame, out=tmp_path / "out", plots=False, progress=False, seed=seed).judges["j"].leaderboard
    # the plain computation it replaced: group the rows by the model's text
    both = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([1, 2])]
    want = lb["model"].map(both.groupby(both["model"].astype(str))["score"].mean())
    assert lb["original_both_orders"].notna().all()
    assert _same_bits(lb["original_both_orders"].to_numpy(), want.to_numpy())


# ------------------------------------------------------------------ bootstrap products in float32 where they are exact
def _counts(seed: int, rounds: int, n: int) -> np.ndarray:
    from biasbound.leaderboard import _draw_counts

    return np.vstack(_draw_counts(seed, rounds, n))


@pytest.mark.parametrize("seed", range(12))
def test_float32_products_of_quarter_matrices_equal_float64(seed: int) -> None:
    from biasbound.leaderboard import exact_float32

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    # quarters up to just under the exactness bound (max(mat) * n < 2^22), zeros
    top = (2.0**22 - 1) / n
    mat = np.trunc(rng.uniform(0, top, size=(int(rng.integers(1, 30)), n)) * 4) / 4
    mat[rng.random(mat.shape) < 0.2] = 0.0
    counts = _counts(seed, 300, n)
    m32 = exact_float32(mat, n)
    assert m32 is not None
    assert _same_bits((counts.astype(np.float32) @ m32).astype(float), counts @ mat.T)


def test_float32_products_are_refused_where_they_could_round() -> None:
    from biasbound.leaderboard import exact_float32

    assert exact_float32(np.array([[0.1, 0.5]]), 10) is None  # not a multiple of 1/4
    assert exact_float32(np.array([[-0.0, 0.5]]), 10) is None  # signed: a zero sum's sign could depend on order
    assert exact_float32(np.array([[-0.25, 0.5]]), 10) is None
    assert exact_float32(np.array([[2.0**20, 1.0]]), 4) is None  # 4 * 2^20 = 2^22: at the bound
    assert exact_float32(np.array([[2.0**20 - 1, 1.0]]), 4) is not None


def _plain_ratio_bootstrap(num: np.ndarray, den: np.ndarray, counts: np.ndarray, level: float):
    """The float64 dense products and NaN-aware percentiles (the plain computation)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        point = num.sum(axis=1) / den.sum(axis=1)
        reps = (counts @ num.T) / (counts @ den.T)
    q = 100 * (1 - level) / 2
    lo, hi = np.full(num.shape[0], np.nan), np.full(num.shape[0], np.nan)
    has = np.isfinite(reps).any(axis=0)
    lo[has], hi[has] = np.nanpercentile(reps[:, has], [q, 100 - q], axis=0)
    return point, lo, hi


@pytest.mark.parametrize("continuous", [False, True])
def test_winrate_bootstrap_equals_the_float64_products(continuous: bool) -> None:
    from biasbound.leaderboard import _battles, _ratio_bootstrap

    rng = np.random.default_rng(31 + continuous)
    frame = _pairwise_frame(3, models=15, items=60)
    if continuous:  # preferences in [0, 1]: not quarters, the float64 route
        frame["score"] = np.where(frame["score"].isna(), np.nan, rng.uniform(size=len(frame)))
    b = _battles(frame, 3.0, "test", continuous=continuous)[0]
    counts = _counts(5, 500, b.num.shape[1])
    got = _ratio_bootstrap(b.num, b.den, np.random.default_rng(0), 500, 0.95, counts=[counts])
    for g, w in zip(got, _plain_ratio_bootstrap(b.num, b.den, counts, 0.95)):
        assert _same_bits(g, w)


# ------------------------------------------------------------------ pairs reversed by one neighbour: one search per move
def _plain_pairs_reversed_by_moves(means: np.ndarray, model: np.ndarray, move: np.ndarray) -> np.ndarray:
    """The code it replaced (two searches per neighbour), verbatim."""
    srt = np.sort(np.asarray(means, dtype=float))
    old = np.asarray(means, dtype=float)[model]
    new = old + np.asarray(move, dtype=float)
    lo, hi = np.minimum(old, new), np.maximum(old, new)
    between = np.searchsorted(srt, hi, side="left") - np.searchsorted(srt, lo, side="right")
    return np.where(hi > lo, np.maximum(between, 0), 0).astype(float)


@pytest.mark.parametrize("seed", range(20))
def test_pairs_reversed_by_moves_equals_two_searches(seed: int) -> None:
    from biasbound.pipeline._cost import pairs_reversed_by_moves

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    means = np.round(rng.uniform(size=n), 1 + seed % 3)  # tied means
    model = rng.integers(0, n, 3000)
    move = rng.normal(scale=0.2, size=3000)
    move[::5] = 0.0  # no move: nothing reversed
    land = rng.integers(0, n, 3000)
    move[1::5] = (means[land] - means[model])[1::5]  # landing exactly on another mean (not strictly between)
    move[2::5] = 1e-300  # a move too small to change the mean
    got = pairs_reversed_by_moves(means, model, move)
    assert got.dtype == np.float64 and got.sum() > 0
    assert _same_bits(got, _plain_pairs_reversed_by_moves(means, model, move))


# ------------------------------------------------------------------ battles: weights by a level table, counts by bincount
@pytest.mark.parametrize("seed", range(4))
def test_battle_sums_equal_the_plain_formulas(seed: int) -> None:
    from table_helpers import reference_battle_sums
    from biasbound.leaderboard import _battles

    frame = _pairwise_frame(seed, models=9, items=30)
    frame.loc[frame.index[:7], "score"] = -0.0  # a signed zero is the loss level
    b = _battles(frame, 3.0, "test")[0]
    # the plain formulas it replaced (np.where chains and float-weighted counts), over the same rows
    keep = ((frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([1, 2])).to_numpy()
    ref = reference_battle_sums(frame, keep)
    ok, m_idx, m_codes = ref["ok"], ref["m_idx"], ref["m_codes"]
    assert not ok.all()  # missing games take part
    assert _same_bits(b.num, ref["num"]) and _same_bits(b.den, ref["den"])
    want_battles = np.bincount(m_idx, weights=ok.astype(float), minlength=len(m_codes)).astype(np.int64)
    want_missing = np.bincount(m_idx, weights=(~ok).astype(float), minlength=len(m_codes)).astype(np.int64)
    assert b.n_battles.dtype == np.int64 and np.array_equal(b.n_battles, want_battles)
    assert b.n_missing.dtype == np.int64 and np.array_equal(b.n_missing, want_missing)


# ------------------------------------------------------------------ battles dense at every size: the sparse route it replaced
def _plain_sparse_ratio_bootstrap(num: np.ndarray, den: np.ndarray, counts: np.ndarray, level: float):
    """The route above 4·10^6 cells that the dense float32 one replaced: scipy.sparse float64 products, verbatim."""
    from scipy import sparse

    num_s, den_s = sparse.csr_array(num), sparse.csr_array(den)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.asarray(num_s.sum(axis=1)).ravel() / np.asarray(den_s.sum(axis=1)).ravel()
        reps = np.asarray(counts @ num_s.T) / np.asarray(counts @ den_s.T)
    q = 100 * (1 - level) / 2
    lo, hi = np.full(num.shape[0], np.nan), np.full(num.shape[0], np.nan)
    has = np.isfinite(reps).any(axis=0)
    lo[has], hi[has] = np.nanpercentile(reps[:, has], [q, 100 - q], axis=0)
    return point, lo, hi


@pytest.mark.parametrize("seed", range(3))
def test_winrate_bootstrap_dense_float32_equals_the_sparse_route(seed: int) -> None:
    """Arena-Hard levels with a strong-verdict weight of 3 or 2.75: every sum a multiple of 1/4, so the dense
    float32 products equal the sparse float64 ones bit for bit (items never judged by a model: empty cells)."""
    from biasbound.leaderboard import _battles, _ratio_bootstrap

    frame = _pairwise_frame(10 + seed, models=11, items=70)
    rng = np.random.default_rng(seed)
    frame = frame[~((frame["model"] == frame["model"].iloc[0]) & (rng.random(len(frame)) < 0.5))]  # holes
    b = _battles(frame, 3.0 if seed else 2.75, "test")[0]
    assert isinstance(b.num, np.ndarray) and (b.den == 0).any()
    counts = _counts(seed, 400, b.num.shape[1])
    got = _ratio_bootstrap(b.num, b.den, np.random.default_rng(0), 400, 0.95, counts=[counts])
    for g, w in zip(got, _plain_sparse_ratio_bootstrap(b.num, b.den, counts, 0.95)):
        assert _same_bits(g, w)

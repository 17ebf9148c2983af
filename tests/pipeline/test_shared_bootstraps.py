"""The shared resampled sums of the leaderboard's and the judge card's bootstraps give the plain route's values.

Each fast route (counts drawn round by round, exact float32 operands stacked in one product on one BLAS thread,
denominators shared between bootstraps, group sums by bincount where they are exact, the battles without row copies)
is compared with a verbatim copy of the code it replaced, or with the float64 product, on seeded random inputs.
The comparisons are exact (bit for bit), so a failure is a changed value, never noise: no statistical test here
(false-failure rate 0). Each exactness claim also has a case where the shortcut would NOT be exact, to show the
test can fail and that the route refuses it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biasbound import leaderboard as lb


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool(np.all((a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))))


def _quarters(rng: np.random.Generator, shape: tuple[int, int], missing: float) -> np.ndarray:
    mat = rng.integers(0, 5, shape) / 4.0
    mat[rng.random(shape) < missing] = np.nan
    return mat


# ------------------------------------------------------------------ the draws: one bincount per round, same counts
def _old_count_chunks(rng: np.random.Generator, rounds: int, n_items: int, cells: int):
    """The code it replaced, verbatim (one bincount over the chunk's rounds × items cells)."""
    step = max(1, cells // max(n_items, 1))
    for start in range(0, rounds, step):
        r = min(step, rounds - start)
        idx = rng.integers(0, n_items, size=(r, n_items))
        idx += (np.arange(r) * n_items)[:, None]
        yield np.bincount(idx.ravel(), minlength=r * n_items).reshape(r, n_items).astype(float)


@pytest.mark.parametrize("n_items", [1, 7, 300, 1001])
def test_count_chunks_equal_one_bincount_per_chunk(n_items: int, monkeypatch) -> None:
    monkeypatch.setattr(lb, "_CHUNK_CELLS", 5000)  # several chunks, a short last one
    new = list(lb.count_chunks(np.random.default_rng(n_items), 53, n_items))
    old = list(_old_count_chunks(np.random.default_rng(n_items), 53, n_items, 5000))
    assert len(new) == len(old) and (len(new) > 1 or n_items * 53 <= 5000)
    assert all(a.dtype == np.int16 and _same_bits(a, b) for a, b in zip(new, old))


def test_count_dtype_holds_every_count_at_its_edge() -> None:
    """A count is at most the number of items: int16 up to 2^15 - 1 items, int32 from 2^15 (a count of 32,768 would
    wrap in int16), int64 from 2^31."""
    for n, want in [(1, np.int16), (2**15 - 1, np.int16), (2**15, np.int32), (2**31 - 1, np.int32), (2**31, np.int64)]:
        assert lb._count_dtype(n) is want and np.iinfo(want).max >= n
    # every draw on one item (1 item) and the widest chunk: the counts are the draws' own
    (one,) = lb.count_chunks(np.random.default_rng(0), 3, 1)
    assert one.dtype == np.int16 and one.tolist() == [[1], [1], [1]]
    (wide,) = lb.count_chunks(np.random.default_rng(0), 1, 2**15)
    assert wide.dtype == np.int32 and int(wide.sum()) == 2**15


# ------------------------------------------------------------------ resampled sums: one stacked float32 product where exact
@pytest.mark.parametrize("seed", range(4))
def test_resampled_sums_equal_the_float64_products(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 30)), int(rng.integers(5, 400))
    quarter = np.nan_to_num(_quarters(rng, (m, n), 0.0))
    presence = (rng.random((m, n)) > 0.02).astype(float)
    few_missing = lb.Present(presence, presence == 0)
    continuous = rng.uniform(0, 1, (m, n))  # not exact in float32: the float64 product, as called before
    ops = [quarter, presence, few_missing, continuous, quarter]  # `quarter` twice: multiplied once
    chunks = list(lb.count_chunks(np.random.default_rng(seed + 10), 300, n))
    got = list(lb.resampled_sums(chunks, ops))
    assert len(got) == len(chunks)
    for chunk, sums in zip(chunks, got):
        for op, s in zip(ops, sums):
            dense = op.dense if isinstance(op, lb.Present) else op
            assert s.dtype == np.float64 and _same_bits(s, chunk @ dense.T)
        assert sums[0] is sums[4]
    # the case the float64 route exists for: a float32 product of continuous scores rounds differently
    c32 = (chunks[0].astype(np.float32) @ continuous.T.astype(np.float32)).astype(float)
    assert not _same_bits(c32, chunks[0] @ continuous.T)


def test_resampled_sums_float64_operand_is_the_call_it_replaced() -> None:
    """A non-exact operand is ``chunk @ op.T`` itself: a Fortran-ordered operand (the pivot's layout) keeps it."""
    rng = np.random.default_rng(3)
    op = np.asfortranarray(rng.normal(size=(17, 250)))
    chunk = next(lb.count_chunks(np.random.default_rng(1), 40, 250))
    (s,) = next(lb.resampled_sums([chunk], [op]))
    assert _same_bits(s, np.asarray(chunk @ op.T))


# ------------------------------------------------------------------ several means over one resample, denominators shared
@pytest.mark.parametrize("seed", range(3))
def test_bootstrap_means_shared_equals_separate_calls(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(2, 25)), int(rng.integers(20, 300))
    orig = _quarters(rng, (m, n), 0.01)  # few missing: a Present denominator
    cert = np.where(np.isnan(orig), np.nan, orig + rng.normal(0, 0.1, (m, n)))  # same missing cells: shared
    other = _quarters(rng, (m, n), 0.4)  # many missing: a dense denominator of its own
    other[0] = np.nan  # a model without any score: NaN point and interval
    counts = lb._draw_counts(seed, 250, n)
    shared = lb.bootstrap_means_shared([orig, cert, other], rounds=250, level=0.9, seed=seed, counts=counts)
    for mat, got in zip([orig, cert, other], shared):
        want = lb.bootstrap_means(mat, rounds=250, level=0.9, rng=seed, counts=counts)
        assert (got.seed, got.rounds, got.level) == (want.seed, want.rounds, want.level)
        for g, w in zip(got, want):
            assert _same_bits(g, w)
    assert np.isnan(shared[2].mean[0]) and np.isnan(shared[2].lo[0])
    pairs: list = []
    for mat in (orig, cert, other):
        pairs.append(lb.mean_operands(mat, pairs))
    assert pairs[1][1] is pairs[0][1] and pairs[2][1] is not pairs[0][1]


def test_bootstrap_means_shared_refuses_mismatched_counts() -> None:
    from biasbound._exceptions import InputError

    counts = lb._draw_counts(0, 10, 5)
    with pytest.raises(InputError, match="10 rounds over 6 items"):
        lb.bootstrap_means_shared([np.zeros((2, 6))], rounds=10, level=0.95, seed=0, counts=counts)


# ------------------------------------------------------------------ group sums by bincount where they are exact
@pytest.mark.parametrize("seed", range(6))
def test_exact_group_sums_equal_pandas_group_sums(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, size = int(rng.integers(1, 5000)), int(rng.integers(1, 40))
    values = rng.integers(-40, 41, n) / 4.0  # signed quarters
    values[rng.random(n) < 0.1] = np.nan
    values[rng.random(n) < 0.05] = -0.0
    keys = rng.integers(0, size, n)
    got = lb.exact_group_sums(values, keys, size)
    want = pd.Series(values).groupby(keys).sum().reindex(range(size), fill_value=0.0).to_numpy()
    assert got is not None and _same_bits(got, want)


def test_exact_group_sums_refuse_sums_that_could_round() -> None:
    keys = np.zeros(10, dtype=np.intp)
    tenths = np.full(10, 0.1)
    # where it matters: bincount's plain sum and pandas' compensated one differ on these
    plain = np.bincount(keys, weights=tenths)[0]
    assert plain != pd.Series(tenths).groupby(keys).sum().iloc[0]
    assert lb.exact_group_sums(tenths, keys, 1) is None
    assert lb.exact_group_sums(np.array([2.0**49, 2.0**49]), np.zeros(2, dtype=np.intp), 1) is None  # Σ|v| = 2^50
    assert lb.exact_group_sums(np.array([np.inf]), np.zeros(1, dtype=np.intp), 1) is None


# ------------------------------------------------------------------ the pairwise rows without pandas' isin
@pytest.mark.parametrize("kind", ["int", "float", "object", "nullable"])
def test_pairwise_rows_equal_the_isin_mask(kind: str) -> None:
    rng = np.random.default_rng(5)
    n = 400
    game = rng.integers(0, 4, n)
    frame = pd.DataFrame({"variant": rng.choice(["original", "swap"], n, p=[0.8, 0.2]),
                          "rerun": rng.integers(0, 2, n), "game": game})
    if kind == "float":
        frame["game"] = np.where(rng.random(n) < 0.1, np.nan, game.astype(float))
    elif kind == "object":
        frame["game"] = pd.Series([str(g) if g == 1 else int(g) for g in game], dtype=object)
    elif kind == "nullable":
        frame["game"] = pd.array(np.where(rng.random(n) < 0.1, None, game), dtype="Int64")
    want = ((frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([1, 2])).to_numpy(dtype=bool)
    got = lb.pairwise_rows(frame)
    assert got.dtype == bool and np.array_equal(got, want) and want.any()


# ------------------------------------------------------------------ battles: several judges, rows not kept
@pytest.mark.parametrize("slice_rows", [1 << 22, 7])
def test_battles_of_several_judges_with_other_rows_equal_the_plain_formulas(slice_rows: int, monkeypatch) -> None:
    """Also with the per-row weights formed 7 rows at a time (the sums of every slice added): the same bits."""
    from table_helpers import reference_battle_sums

    monkeypatch.setattr(lb, "_BATTLE_SLICE", slice_rows)

    rng = np.random.default_rng(11)
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    rows = [(j, f"m{m}", f"q{i}", v, r, g, float(rng.choice(grid)))
            for j in ("b", "a") for m in range(6) for i in range(15) for g in (1, 2)
            for v, r in (("original", 0), ("original", 1), ("swap", 0)) if not (j == "a" and m == 5)]
    frame = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    frame.loc[rng.random(len(frame)) < 0.05, "score"] = np.nan
    frame = frame.sample(frac=1.0, random_state=2).reset_index(drop=True)  # judges interleaved
    got = lb._battles(frame, 3.0, "test")
    assert [b.judge for b in got] == ["a", "b"]
    for b in got:
        keep = ((frame["judge"] == b.judge) & (frame["variant"] == "original") & (frame["rerun"] == 0)
                & frame["game"].isin([1, 2])).to_numpy()
        ref = reference_battle_sums(frame, keep)
        assert b.models == [str(x) for x in ref["names"][ref["m_codes"]]]
        assert _same_bits(b.num, ref["num"]) and _same_bits(b.den, ref["den"])
        assert np.array_equal(b.n_missing, np.bincount(ref["m_idx"][~ref["ok"]], minlength=len(ref["m_codes"])))
    assert len(got[0].models) == 5 and len(got[1].models) == 6


def test_battles_of_continuous_preferences_are_one_slice(monkeypatch) -> None:
    """Preferences in [0, 1] are not multiples of 1/4: their sums keep bincount's row order, whatever the slice."""
    rng = np.random.default_rng(12)
    n = 400
    frame = pd.DataFrame({"model": [f"m{k}" for k in rng.integers(0, 4, n)], "item_id": [f"q{k}" for k in rng.integers(0, 9, n)],
                          "variant": "original", "rerun": 0, "game": rng.integers(1, 3, n), "score": rng.uniform(0, 1, n)})
    (whole,) = lb._battles(frame, 1.0, "test", continuous=True)
    monkeypatch.setattr(lb, "_BATTLE_SLICE", 7)
    (sliced,) = lb._battles(frame, 1.0, "test", continuous=True)
    assert _same_bits(sliced.num, whole.num) and _same_bits(sliced.den, whole.den)
    m, i = pd.factorize(frame["model"], sort=True)[0], pd.factorize(frame["item_id"], sort=True)[0]
    ref = np.bincount(m * 9 + i, weights=frame["score"].to_numpy(), minlength=36).reshape(4, 9)
    assert _same_bits(whole.num, ref)


# ------------------------------------------------------------------ the judge card's rank intervals and all-items means
def _old_rank_intervals(mat: np.ndarray, rounds: int, seed: int, level: float):
    """The code it replaced, verbatim (its own products per chunk)."""
    present = ~np.isnan(mat)
    x = np.where(present, mat, 0.0)
    den = present.T.astype(float)
    few_missing = mat.shape[1] > 0 and np.count_nonzero(~present) * 8 < mat.size
    sparse_den = lb.Present(present.astype(float), ~present) if few_missing else None
    x32 = lb.exact_float32(x, mat.shape[1])
    den32 = None if sparse_den is not None else lb.exact_float32(present.astype(float), mat.shape[1])
    ranks = []
    for chunk in lb.count_chunks(np.random.default_rng(seed), rounds, mat.shape[1]):
        chunk32 = chunk.astype(np.float32) if x32 is not None or den32 is not None else None
        num = (chunk32 @ x32).astype(float) if x32 is not None else np.asarray(chunk @ x.T)
        if sparse_den is not None:
            count = sparse_den.resampled(chunk)
        else:
            count = (chunk32 @ den32).astype(float) if den32 is not None else np.asarray(chunk @ den)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = num / count
        means = np.where(np.isnan(means), -np.inf, means)
        ranks.append(stats.rankdata(-means, axis=1, method="min"))
    rk = np.vstack(ranks)
    q = 100.0 * (1.0 - level) / 2.0
    return (np.floor(np.percentile(rk, q, axis=0)).astype(int), np.ceil(np.percentile(rk, 100 - q, axis=0)).astype(int))


@pytest.mark.parametrize("case", ["quarters few missing", "quarters many missing", "continuous"])
def test_rank_intervals_equal_the_route_they_replaced(case: str) -> None:
    from biasbound.card import _bootstrap_rank_intervals

    rng = np.random.default_rng(len(case))
    mat = _quarters(rng, (12, 90), 0.01 if "few" in case else 0.3)
    if case == "continuous":
        mat = mat + rng.normal(0, 0.05, mat.shape)
    for got, want in zip(_bootstrap_rank_intervals(mat, 300, 4, 0.9), _old_rank_intervals(mat, 300, 4, 0.9)):
        assert got.dtype == want.dtype and np.array_equal(got, want)


def _old_all_items_means(rows, generator: str, models: list[str], n_items: np.ndarray) -> list[np.ndarray]:
    """The code it replaced, verbatim (pandas' group sums)."""
    from biasbound.card import _model_positions

    at = _model_positions(rows, models)
    total = np.zeros(len(models))
    canon_sum = pd.Series(rows.score[rows.canon]).groupby(rows.m[rows.canon]).sum()
    pos = at[canon_sum.index.to_numpy()]
    total[pos[pos >= 0]] = canon_sum.to_numpy()[pos >= 0]
    nb = rows.pairs[generator]
    out = []
    if len(nb):
        reruns, r_code = np.unique(nb.rerun, return_inverse=True)
        n_codes = len(rows.model_names) + 1
        by = pd.DataFrame({"o": nb.original, "n": nb.neighbor}).groupby(
            r_code.astype(np.int64) * n_codes + (nb.m + 1)).sum()
        key = by.index.to_numpy()
        for r in range(len(reruns)):
            mine = key // n_codes == r
            pos = at[key[mine] % n_codes - 1]
            keep = pos >= 0
            sums = total.copy()
            sums[pos[keep]] = (total[pos[keep]] - by["o"].to_numpy()[mine][keep]) + by["n"].to_numpy()[mine][keep]
            out.append(sums / np.maximum(n_items, 1))
    return out


@pytest.mark.parametrize("continuous", [False, True])
def test_all_items_means_equal_the_pandas_group_sums(continuous: bool) -> None:
    from biasbound.card import _all_items_means, _judge_rows
    from biasbound.data import from_frame

    rng = np.random.default_rng(8)
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    raw = pd.DataFrame([(f"m{m}", f"q{i}", game, float(rng.choice(grid)))
                        for m in range(9) for i in range(40) for game in (1, 2)],
                       columns=["model", "item_id", "game", "score"])
    raw.loc[rng.random(len(raw)) < 0.05, "score"] = np.nan
    if continuous:  # tenths: sums that round, so pandas' compensated sums are kept
        raw["score"] = np.round(raw["score"] * 0.9 + rng.uniform(0, 0.1, len(raw)), 1)
    frame = from_frame(raw, judge="j", scale=(0, 1)).frame
    rows = _judge_rows(frame)
    models = sorted({str(m) for m in frame["model"]})[::-1] + ["absent"]
    n_items = rng.integers(30, 41, len(models)).astype(float)
    assert rows.pairs
    for g in rows.pairs:
        got, want = _all_items_means(rows, g, models, n_items), _old_all_items_means(rows, g, models, n_items)
        assert len(got) == len(want) > 0
        assert all(_same_bits(a, b) for a, b in zip(got, want))


@pytest.mark.parametrize("values", [[0] * 5, [3, 1, 3, 7, 1], [-2, 5, -2], list(range(100, 0, -3)), [2**40, 0], []])
def test_distinct_inverse_equals_numpy_unique(values: list[int]) -> None:
    from biasbound.card import _distinct_inverse

    arr = np.asarray(values, dtype=np.int64)
    got, want = _distinct_inverse(arr), np.unique(arr, return_inverse=True)
    assert all(np.array_equal(g, w) and g.dtype == w.dtype for g, w in zip(got, want))


@pytest.mark.parametrize("slice_rows", [1 << 22, 5])
def test_exact_group_means_equal_pandas_group_means(slice_rows: int, monkeypatch) -> None:
    """Sliced bincount means on quarter levels are pandas' group means bit for bit (a group of NaNs only: NaN; an
    absent key: no group); continuous values are refused (None, the caller keeps pandas)."""
    from biasbound.pipeline import _leaderboard as plb

    monkeypatch.setattr(plb, "_MEAN_SLICE", slice_rows)
    rng = np.random.default_rng(21)
    keys = rng.integers(0, 9, 500).astype(np.int8)
    keys[keys == 4] = 5  # key 4 absent
    values = _quarters(rng, (1, 500), 0.1)[0]
    values[keys == 7] = np.nan  # a group with no value
    got = plb._exact_group_means(values, keys, 9)
    want = pd.Series(values).groupby(keys).mean()
    assert got is not None and np.array_equal(got.index.to_numpy(), want.index.to_numpy())
    assert _same_bits(got.to_numpy(), want.to_numpy()) and np.isnan(got[7])
    assert plb._exact_group_means(rng.uniform(0, 1, 500), keys, 9) is None


@pytest.mark.parametrize("n", [0, 1, 2, 500])
def test_group_bounds_equal_numpy_unique(n: int) -> None:
    from biasbound.pipeline._neighbors import _group_bounds

    key = np.random.default_rng(n).integers(0, 7, n).astype(np.int64)
    order, keys, bounds = _group_bounds(key)
    want_keys, want_starts = np.unique(key[order], return_index=True)
    assert np.array_equal(order, np.argsort(key, kind="stable"))
    assert keys.dtype == want_keys.dtype and np.array_equal(keys, want_keys)
    assert np.array_equal(bounds, np.append(want_starts, n))

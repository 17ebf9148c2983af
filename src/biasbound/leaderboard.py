"""Leaderboard statistics: bootstrap means, Arena-Hard win rate, Bradley–Terry, retention.

Every bootstrap resamples ITEMS (questions), paired across models, with a recorded
seed; intervals are percentile intervals at the stated level (default 95%, 1000 rounds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import sparse, stats

from biasbound._exceptions import InputError
from biasbound._validation import check_finite_array, check_in_range, check_int, resolve_rng
from biasbound.parameters import AT_A_POINT, bounds, validate_params

__all__ = [
    "NATIVE_COLUMNS",
    "BootstrapInterval",
    "is_native",
    "arena_hard_winrate",
    "bootstrap_means",
    "bradley_terry",
    "expected_distortion",
    "native_columns",
    "pin_baseline",
    "rank",
    "retention",
]

_ELO_SCALE = 400.0
_ELO_BASE = 10.0
_ELO_ANCHOR = 1000.0
VERDICT_GRID = np.array([0.0, 0.25, 0.5, 0.75, 1.0])


@dataclass(frozen=True)
class BootstrapInterval:
    """Per-model point estimates and percentile bootstrap interval.

    Unpacks as ``mean, lo, hi = bootstrap_means(...)``; ``seed``, ``rounds`` and
    ``level`` record how the interval was drawn.
    """

    mean: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    seed: int
    rounds: int
    level: float

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.mean, self.lo, self.hi))


_CHUNK_CELLS = 4_000_000  # rounds x items multiplicities held in memory at once


class Present:
    """A 0/1 presence matrix with few zeros, for the bootstrap denominators.

    A resample's count of present items is ``n_items − Σ_missing counts``: one sparse
    product instead of a dense one. Counts are integers, so this equals the dense
    product exactly.
    """

    def __init__(self, dense: np.ndarray, missing: np.ndarray) -> None:
        self.dense = dense
        self.shape = dense.shape
        self._missing_t = sparse.csc_array(missing.T.astype(float))

    def sum(self, axis: int) -> np.ndarray:
        """Sum of the dense matrix along ``axis`` (the point estimate's denominators)."""
        return self.dense.sum(axis=axis)

    def resampled(self, chunk: np.ndarray) -> np.ndarray:
        """``chunk @ dense.T`` for a (rounds, n_items) count chunk."""
        return chunk.sum(axis=1)[:, None] - np.asarray(chunk @ self._missing_t)


def _count_dtype(n_items: int) -> type[np.signedinteger]:
    """The narrowest signed integer type holding every count of a resample of ``n_items`` (at most ``n_items``)."""
    return np.int16 if n_items < 2**15 else np.int32 if n_items < 2**31 else np.int64


def count_chunks(rng: np.random.Generator, rounds: int, n_items: int) -> Iterator[np.ndarray]:
    """Item multiplicities of ``rounds`` resamples, in chunks of rounds (integer matrices).

    Each round draws n_items item indices with replacement; chunks keep memory bounded.
    Every bootstrap of this module draws its resamples here, so two bootstraps seeded
    alike over the same number of items resample the same item positions. A count is at most
    ``n_items``: int16 below 2^15 items (1000 rounds × 25,000 items: 48 MB, not 191 MB as float64),
    int32 below 2^31; :func:`resampled_sums` converts them to the float of each product, where any
    integer type gives the same floats.
    """
    step = max(1, _CHUNK_CELLS // max(n_items, 1))
    dtype = _count_dtype(n_items)
    for start in range(0, rounds, step):
        r = min(step, rounds - start)
        idx = rng.integers(0, n_items, size=(r, n_items))
        out = np.empty((r, n_items), dtype=dtype)
        # round by round: each count's bins (n_items of them) stay in cache, where one bincount over the
        # chunk's r·n_items bins misses it (2.5x slower at 25,000 items); the same integers either way
        for k in range(r):
            out[k] = np.bincount(idx[k], minlength=n_items)
        yield out


def _draw_counts(rng: np.random.Generator | int, rounds: int, n_items: int) -> list[np.ndarray]:
    """All chunks of :func:`count_chunks` (for callers that run several bootstraps on one resample)."""
    gen = np.random.default_rng(rng) if isinstance(rng, int) else rng
    return list(count_chunks(gen, rounds, n_items))


def exact_float32(mat: np.ndarray, n_items: int) -> np.ndarray | None:
    """``mat.T`` in float32 when its products with resample counts are exact in float32, else None.

    A resample's counts are integers summing to ``n_items``. When every entry of ``mat`` is a
    non-negative multiple of 1/4 (Arena-Hard's levels, battle weights and half wins), every partial
    sum of ``counts · mat`` is a multiple of 1/4 in [0, n_items · max(mat)]; below 2^22 it is exact
    in float32's 24-bit significand. The float32 product, in whatever order it sums, then equals the
    float64 product (exact as well) bit for bit, at half the cost (non-negative: no signed zero
    whose sign could depend on the order). Other matrices (certified scores, continuous
    preferences) keep the float64 product.
    """
    if mat.size == 0:
        return None
    head = mat.flat[:4096] * 4.0  # a continuous matrix fails here, before the passes over all of it
    if not np.array_equal(head, np.round(head)) or np.signbit(mat).any():
        return None
    quarters = mat * 4.0
    if not (np.array_equal(quarters, np.round(quarters)) and float(mat.max()) * n_items < 2.0**22):
        return None
    return np.ascontiguousarray(mat.T, dtype=np.float32)


def exact_group_sums(values: np.ndarray, keys: np.ndarray, size: int) -> np.ndarray | None:
    """Per key in ``[0, size)`` the sum of its non-NaN values (0 for a key without any), by ``np.bincount``; None
    when a sum could round.

    These are the numbers ``pd.Series(values).groupby(keys).sum()`` gives at its keys: pandas adds a group's values
    with Kahan's compensated summation, bincount plainly, and both give the exact sum when every partial sum is
    representable, so then the compensation stays 0. That holds for values that are multiples of 1/4 with
    Σ|v| < 2^50: every partial sum, in any order, is a multiple of 1/4 below 2^50, within float64's 53-bit
    significand (scores on Arena-Hard's levels, 1-10 grades, 0/1 verdicts). Other values (continuous scores,
    certified ones) give None: the caller keeps pandas. A 2.6x faster sum at 10^7 rows.
    """
    v = np.where(np.isnan(values), 0.0, values)  # pandas skips a missing value; adding 0.0 changes no sum
    quarters = v * 4.0
    if not (np.array_equal(quarters, np.round(quarters)) and float(np.abs(v).sum()) < 2.0**50):
        return None
    return np.bincount(keys, weights=v, minlength=size)


def resampled_sums(chunks: Iterable[np.ndarray], operands: Sequence[np.ndarray | Present]) -> Iterator[list[np.ndarray]]:
    """Per chunk of resample counts (:func:`count_chunks`), ``chunk @ op.T`` of every (models × items) operand, float64.

    Every bootstrap of the leaderboard and the judge card forms its resampled sums here, so the shared work is done
    once: an operand given twice (the same object) is multiplied once; every operand whose products are exact in
    float32 (:func:`exact_float32`) is one column block of ONE float32 product per chunk, the chunk converted once;
    a :class:`Present` denominator subtracts its few missing cells. The float32 product runs on one BLAS thread:
    exact sums do not depend on how threads split the work, and a second thread spinning for a core that other
    processes hold cost 2-10x the CPU time of the product on a shared 2-core machine. Other operands (certified
    scores, continuous preferences) keep the float64 product ``chunk @ op.T`` exactly as it was called before,
    with BLAS's default threads, whose summation order sets their last bits.
    """
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    ops: list[np.ndarray | Present] = []
    where: list[int] = []  # operand -> index in ops
    for op in operands:
        k = next((n for n, o in enumerate(ops) if o is op), len(ops))
        if k == len(ops):
            ops.append(op)
        where.append(k)
    block: dict[int, tuple[int, int]] = {}  # ops index -> its columns in the stacked float32 operand
    parts: list[np.ndarray] = []
    for k, op in enumerate(ops):
        m32 = None if isinstance(op, Present) else exact_float32(op, op.shape[1])
        if m32 is not None:
            begin = sum(p.shape[1] for p in parts)
            block[k] = (begin, begin + m32.shape[1])
            parts.append(m32)
    stacked = (parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)) if parts else None
    del parts
    for chunk in chunks:
        out: list[np.ndarray | None] = [None] * len(ops)
        if stacked is not None:
            with threadpool_limits(limits=1, user_api="blas"):
                prod = chunk.astype(np.float32) @ stacked
            for k, (a, b) in block.items():
                out[k] = prod[:, a:b].astype(float)
            del prod
        c64 = chunk  # the chunk in float64 (integer counts from count_chunks), converted once when needed
        for k, op in enumerate(ops):
            if (isinstance(op, Present) or k not in block) and c64.dtype != np.float64:
                c64 = np.asarray(chunk, dtype=float)
            if isinstance(op, Present):
                out[k] = op.resampled(c64)
            elif k not in block:
                out[k] = np.asarray(c64 @ op.T)
        yield [cast(np.ndarray, out[k]) for k in where]


def _ratio_bootstraps(
    pairs: Sequence[tuple[np.ndarray, np.ndarray | Present]],
    rng: np.random.Generator,
    rounds: int,
    level: float,
    counts: list[np.ndarray] | None = None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`_ratio_bootstrap` of several (num, den) pairs over the SAME item resamples, in one pass over them.

    Each pair's figures equal its own :func:`_ratio_bootstrap` with these counts (the same products,
    :func:`resampled_sums`); a denominator object shared by several pairs is resampled once.
    """
    n_items = pairs[0][0].shape[1]
    points, reps = [], []
    for num, den in pairs:
        with np.errstate(invalid="ignore", divide="ignore"):
            points.append(np.asarray(num.sum(axis=1)).ravel() / np.asarray(den.sum(axis=1)).ravel())
        reps.append(np.empty((rounds, num.shape[0])))
    operands = [op for pair in pairs for op in pair]
    start = 0
    for sums in resampled_sums(count_chunks(rng, rounds, n_items) if counts is None else counts, operands):
        r = len(sums[0])
        for k in range(len(pairs)):
            with np.errstate(invalid="ignore", divide="ignore"):
                reps[k][start : start + r] = sums[2 * k] / sums[2 * k + 1]  # NaN: no data in resample
        start += r
    q = 100.0 * (1.0 - level) / 2.0
    out = []
    for point, rep in zip(points, reps):
        lo = np.full(rep.shape[1], np.nan)
        hi = np.full(rep.shape[1], np.nan)
        nan = np.isnan(rep).any(axis=0)
        has = np.isfinite(rep).any(axis=0)
        # np.percentile equals np.nanpercentile on NaN-free columns (same order statistics and
        # interpolation) and is ~5x faster; columns with a NaN resample keep nanpercentile
        for cols, fn in ((has & ~nan, np.percentile), (has & nan, np.nanpercentile)):
            if cols.any():
                lo[cols], hi[cols] = fn(rep[:, cols], [q, 100.0 - q], axis=0)
        out.append((point, lo, hi))
    return out


def _ratio_bootstrap(
    num: np.ndarray,
    den: np.ndarray | Present,
    rng: np.random.Generator,
    rounds: int,
    level: float,
    counts: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Point estimate Σnum/Σden per model (row) and percentile interval over item resamples.

    Each round draws n_items item indices with replacement (the same for every model);
    the multiplicity matrix of a chunk of rounds times ``num.T`` / ``den.T`` gives the
    resampled sums (:func:`resampled_sums`). ``counts``: the chunks already drawn (``rng`` is then not used),
    each round ``n_items`` draws as :func:`count_chunks` makes them.
    """
    return _ratio_bootstraps([(num, den)], rng, rounds, level, counts)[0]


def mean_operands(x: np.ndarray, earlier: list[tuple[np.ndarray, np.ndarray | Present]]
                   ) -> tuple[np.ndarray, np.ndarray | Present]:
    """(scores with missing cells as 0, denominator) of a mean's bootstrap; the denominator of an ``earlier``
    matrix with the same missing cells is reused (the same object: resampled once)."""
    present = ~np.isnan(x)
    for _, den in earlier:
        dense = den.dense if isinstance(den, Present) else den
        if dense.shape == present.shape and np.array_equal(dense, present):
            return np.where(present, x, 0.0), den
    weights = present.astype(float)
    if x.shape[1] > 0 and np.count_nonzero(~present) * 8 < x.size:
        return np.where(present, x, 0.0), Present(weights, ~present)
    return np.where(present, x, 0.0), weights


def bootstrap_means(
    matrix: Any, *, rounds: int = 1000, level: float = 0.95, rng: np.random.Generator | int | None = None,
    counts: list[np.ndarray] | None = None,
) -> BootstrapInterval:
    """NaN-aware per-model means with a percentile bootstrap over items.

    Parameters
    ----------
    matrix:
        (n_models, n_items) scores; NaN = missing judgment (excluded, never imputed).
    rounds:
        Bootstrap rounds (>= 1).
    level:
        Interval level in (0, 1).
    rng:
        Generator, int seed or None; the seed used is in the result.
    counts:
        Resample counts already drawn from ``rng`` (:func:`_draw_counts` with the same ``rng``, rounds and
        number of items), or None to draw them here.

    Returns
    -------
    BootstrapInterval
        ``mean`` (n_models,) = mean of the non-missing scores; ``lo``, ``hi`` the
        ``(1 − level)/2`` and ``(1 + level)/2`` percentiles of the resampled means.

    Notes
    -----
    Items (columns) are resampled with replacement, the same resample for every model
    (paired), so the intervals reflect the question sample. A resample in which a model
    has no non-missing item gives no value for that model (ignored in its percentiles).
    Vectorised as two matrix products of the (rounds, n_items) multiplicity matrix.
    """
    x = np.asarray(matrix, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise InputError(f"The 'matrix' parameter of bootstrap_means must be a non-empty 2-D array (models x items). Got shape {x.shape} instead.")
    if np.isinf(x).any():
        raise InputError("The 'matrix' parameter of bootstrap_means must hold finite scores or NaN. Got an infinite value instead.")
    rounds = check_int(rounds, "rounds", "bootstrap_means", low=1)
    level = check_in_range(level, "level", "bootstrap_means", low=0.0, high=1.0, low_open=True, high_open=True)
    gen, seed = resolve_rng(rng)
    if counts is not None and (sum(len(c) for c in counts) != rounds or counts[0].shape[1] != x.shape[1]):
        raise InputError(f"The resample counts given to bootstrap_means must be {rounds} rounds over {x.shape[1]} items.")
    return _bootstrap_means([x], rounds, level, gen, seed, counts)[0]


def _bootstrap_means(
    matrices: Sequence[np.ndarray], rounds: int, level: float, gen: np.random.Generator, seed: int,
    counts: list[np.ndarray] | None,
) -> list[BootstrapInterval]:
    """:func:`bootstrap_means` of several checked (models × items) float matrices over the same resamples, in one
    pass (matrices with the same missing cells share their denominator); each result equals its own call with
    these counts."""
    pairs: list[tuple[np.ndarray, np.ndarray | Present]] = []
    for x in matrices:
        pairs.append(mean_operands(x, pairs))
    return [BootstrapInterval(mean=mean, lo=lo, hi=hi, seed=seed, rounds=rounds, level=level)
            for mean, lo, hi in _ratio_bootstraps(pairs, gen, rounds, level, counts)]


def bootstrap_means_shared(
    matrices: Sequence[Any], *, rounds: int, level: float, seed: int, counts: list[np.ndarray],
) -> list[BootstrapInterval]:
    """:func:`bootstrap_means` of each matrix with one seed and its resample counts (:func:`_draw_counts`), in one
    pass over the resamples: result k equals ``bootstrap_means(matrices[k], rounds=rounds, level=level, rng=seed,
    counts=counts)``; missing cells common to several matrices are resampled once."""
    xs = [np.asarray(m, dtype=float) for m in matrices]
    for x in xs:
        if x.ndim != 2 or x.shape != xs[0].shape or x.shape[0] < 1 or x.shape[1] < 1 or np.isinf(x).any():
            raise InputError("The matrices of bootstrap_means_shared must be non-empty 2-D arrays (models x items) of "
                             f"one shape holding finite scores or NaN. Got shape {x.shape} instead.")
    rounds = check_int(rounds, "rounds", "bootstrap_means_shared", low=1)
    level = check_in_range(level, "level", "bootstrap_means_shared", low=0.0, high=1.0, low_open=True, high_open=True)
    if sum(len(c) for c in counts) != rounds or counts[0].shape[1] != xs[0].shape[1]:
        raise InputError(f"The resample counts given to bootstrap_means_shared must be {rounds} rounds over "
                         f"{xs[0].shape[1]} items.")
    gen, seed = resolve_rng(seed)
    return _bootstrap_means(xs, rounds, level, gen, seed, counts)


@dataclass(frozen=True)
class _Battles:
    """One judge's battles: per (model, item) weighted wins ``num`` and weights ``den``."""

    judge: Any
    num: np.ndarray
    den: np.ndarray
    models: list[str]
    n_battles: np.ndarray
    n_missing: np.ndarray


def pairwise_rows(frame: pd.DataFrame) -> np.ndarray:
    """The rows of the pairwise statistics (boolean mask): variant "original", rerun 0, games 1 and 2.

    On a numpy numeric ``game`` column, ``game == 1 | game == 2`` is the mask ``game.isin([1, 2])`` gives (a NaN
    game is in neither), without hashing every value (0.4 s of the 0.45 s this mask cost at 10^7 rows).
    """
    game = frame["game"]
    if isinstance(game.dtype, np.dtype) and game.dtype.kind in "iuf":
        g = game.to_numpy()
        in_games = pd.Series((g == 1) | (g == 2), index=frame.index)
    else:
        in_games = game.isin([1, 2])
    return ((frame["variant"] == "original") & (frame["rerun"] == 0) & in_games).to_numpy(dtype=bool)


_BATTLE_SLICE = 1 << 22  # rows of the battle table's per-row weights and keys formed at once


def _battle_weights(ok: np.ndarray, s: np.ndarray, weight: float, continuous: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per row (a slice of the battle table's rows) its weight and weighted win."""
    if continuous:
        w = ok.astype(float)
        return w, w * np.where(ok, s, 0.0)
    # weight and weighted win per Arena-Hard level (index 4·score, exact on the levels; 5 = missing):
    # a strong verdict weighs `weight`, a win counts 1, a tie 1/2, a loss 0, a missing game nothing
    level = np.where(ok, s * 4.0, 5.0).astype(np.int8)  # 0..5: one byte a row
    w_of = np.array([weight, 1.0, 1.0, 1.0, weight, 0.0])
    return w_of[level], (w_of * np.array([0.0, 0.0, 0.5, 1.0, 1.0, 0.0]))[level]


def _positions(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`biasbound.data.tables.compact_codes` of ``codes`` in ``[0, size)``: the distinct codes (sorted) and each
    entry's index among them; when every code occurs, these are ``arange(size)`` and the codes themselves (no gather)."""
    seen = np.bincount(codes, minlength=size) > 0
    if seen.all():
        return np.arange(size), codes
    return np.flatnonzero(seen), (np.cumsum(seen) - 1)[codes]


def _battles(
    frame: pd.DataFrame, weight: float, where: str, codes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    continuous: bool = False, rows: np.ndarray | None = None,
) -> list[_Battles]:
    """Per-judge battle matrices from the pairwise rows (variant "original", rerun 0, games 1, 2).

    Judges are taken in sorted order (one ``None`` judge when the frame has no judge column);
    models and items in sorted order of their text within each judge. Ids are factorised once
    for the whole frame, so a 10^6-row table costs a few hash passes instead of string sorts;
    ``codes`` = ``(model codes, model names, item codes)`` as
    :func:`biasbound.data.tables.sorted_codes` gives them, when the caller already has them.
    ``continuous=True`` reads any score in [0, 1] as a fractional win (a preference of 0.7 is
    0.7 win and 0.3 loss, weight 1) instead of requiring Arena-Hard's five levels. ``rows``: the frame's
    :func:`pairwise_rows` when the caller has it.
    """
    from biasbound.data.tables import sorted_codes

    need = {"model", "item_id", "variant", "rerun", "game", "score"}
    if not isinstance(frame, pd.DataFrame) or not need <= set(frame.columns):
        raise InputError(f"The 'frame' parameter of {where} must be a judgment table with columns {sorted(need)}.")
    keep_all = pairwise_rows(frame) if rows is None else rows
    score_all = frame["score"].to_numpy(dtype=float)
    if codes is None:
        m_all, model_names = sorted_codes(frame["model"])
        i_all, _ = sorted_codes(frame["item_id"])
    else:
        m_all, model_names, i_all = codes
    n_item_codes = int(i_all.max()) + 1 if i_all.size else 0
    selections: list[tuple[Any, np.ndarray | None]]  # None: every row of the frame
    if "judge" in frame.columns:
        judges = sorted(frame["judge"].unique().tolist())
    if "judge" in frame.columns and len(judges) == 1 and not frame["judge"].hasnans:
        selections = [(judges[0], None)]
    elif "judge" in frame.columns:
        j_codes, j_uniques = pd.factorize(frame["judge"], sort=False)
        order = np.argsort(j_codes, kind="stable")
        starts = np.searchsorted(j_codes[order], np.arange(len(j_uniques) + 1))
        groups = {j_uniques[k]: order[starts[k] : starts[k + 1]] for k in range(len(j_uniques))}
        selections = [(judge, groups.get(judge, np.empty(0, dtype=np.intp))) for judge in judges]
    else:
        selections = [(None, None)]
    out = []
    for judge, ix in selections:
        # the judge's pairwise rows in table order; None when that is every row (no copy of the columns)
        if ix is None:
            ix = None if keep_all.all() else np.flatnonzero(keep_all)
        else:
            ix = ix[keep_all[ix]]
        if (len(frame) if ix is None else ix.size) == 0:
            raise InputError(
                f"The 'frame' parameter of {where} must hold pairwise judgments (game 1 or 2, variant 'original', rerun 0). Got none instead."
            )
        s, m_sel, i_sel = (score_all, m_all, i_all) if ix is None else (score_all[ix], m_all[ix], i_all[ix])
        ok = ~np.isnan(s)
        if continuous:
            off = ok & ~((s >= 0.0) & (s <= 1.0))
            if off.any():
                raise InputError(f"The 'frame' parameter of {where} must hold preferences in [0, 1]. "
                                 f"Got {float(s[off][0])!r} instead.")
        else:
            off = ok & ~np.isin(s, VERDICT_GRID)
            if off.any():
                raise InputError(
                    f"The 'frame' parameter of {where} must hold Arena-Hard scores in {{0, 0.25, 0.5, 0.75, 1}}. "
                    f"Got {float(s[off][0])!r} instead."
                )
        del off
        # the codes as given (a coded frame's int8/int16 codes: no widened copy per row); widened in the key below
        m_codes, m_idx = _positions(np.asarray(m_sel), len(model_names))
        i_codes, i_idx = _positions(np.asarray(i_sel), n_item_codes)
        shape = (len(m_codes), len(i_codes))
        # dense at every size: the two games of an item are summed; every value is a multiple of 1/4 (weights
        # and half wins), so the sums and the bootstrap's float32 products (exact_float32) are exact in any
        # order and equal the sparse float64 product bit for bit, 13-16x faster at 200 x 25,000 cells. Exact
        # sums in any order also let the per-row weights and keys be formed a slice of rows at a time (each
        # slice's sums added: the same bits, 32 MiB per array instead of 76 at 10^7 rows); continuous
        # preferences are not multiples of 1/4: one slice, summed in row order as bincount always did.
        n_rows = len(s)
        step = n_rows if continuous or weight * n_rows >= 2.0**50 else _BATTLE_SLICE
        cells = shape[0] * shape[1]
        num: np.ndarray = np.zeros(cells)  # 0.0 + a sum is that sum: the one-slice sums unchanged
        den: np.ndarray = np.zeros(cells)
        for start in range(0, n_rows, step):
            part = slice(start, start + step)
            w, w_win = _battle_weights(ok[part], s[part], weight, continuous)
            flat = m_idx[part].astype(np.intp)  # widened once, then in place
            flat *= shape[1]
            flat += i_idx[part]
            num += np.bincount(flat, weights=w_win, minlength=cells)  # each slice's sums added as soon as formed
            del w_win
            den += np.bincount(flat, weights=w, minlength=cells)
            del w, flat
        num, den = num.reshape(shape), den.reshape(shape)
        n_missing = np.bincount(m_idx[~ok], minlength=shape[0]).astype(np.int64)
        n_battles = np.bincount(m_idx, minlength=shape[0]).astype(np.int64) - n_missing
        out.append(_Battles(judge, num, den, [str(m) for m in model_names[m_codes]], n_battles, n_missing))
    return out


def arena_hard_winrate(
    frame: pd.DataFrame,
    *,
    baseline: str | None = None,
    rounds: int = 1000,
    level: float = 0.95,
    weight: int = 3,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """Arena-Hard-Auto win rate against the baseline, with a bootstrap over questions.

    Parameters
    ----------
    frame:
        A pairwise judgment table (Arena-Hard scores {0, .25, .5, .75, 1}, model's view).
        Only variant ``"original"``, rerun 0, games 1 and 2 are used.
    baseline:
        The baseline model's name. When it also appears as a judged model (its
        self-judgments), its row is reported as exactly 50 with a zero-width interval —
        a model ties itself by definition (Arena-Hard-Auto's ``show_result`` does the
        same); its counts are still reported. None: every model is computed from data.
    rounds, level:
        Bootstrap rounds (>= 1) and interval level in (0, 1).
    weight:
        Weight of a strong verdict (``>>``); Arena-Hard uses 3.
    rng:
        Generator, int seed or None; the seed is in ``attrs["seed"]``.

    Returns
    -------
    pandas.DataFrame
        ``judge, model, winrate, lo, hi, n_battles, n_missing`` sorted by win rate
        (descending) within judge; win rates in percent. ``attrs``: ``seed``, ``rounds``,
        ``level``, ``weight``, ``baseline``.

    Notes
    -----
    Both games count. A win counts 1, a tie 1/2, a loss 0; strong wins and losses carry
    ``weight``: winrate = 100 · Σ w·win / Σ w over the model's non-missing games. This
    equals the win rate vs the baseline predicted by Arena-Hard's unpenalised
    Bradley–Terry fit, because with battles only against one baseline every model's
    rating is fitted from its own battles alone (a saturated logistic model). Missing
    games are excluded and counted (``n_missing``). The bootstrap resamples questions,
    paired across models, not individual battle rows.
    """
    table, _ = _winrate(frame, baseline=baseline, rounds=rounds, level=level, weight=weight, rng=rng,
                        where="arena_hard_winrate")
    return table


def _winrate(
    frame: pd.DataFrame,
    *,
    baseline: str | None,
    rounds: int,
    level: float,
    weight: int,
    rng: np.random.Generator | int | None,
    where: str,
    codes: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    counts: list[np.ndarray] | None = None,
    continuous: bool = False,
    rows: np.ndarray | None = None,
) -> tuple[pd.DataFrame, list[_Battles]]:
    """:func:`arena_hard_winrate` and the per-judge battles it was computed from.

    ``codes``, ``rows``: see :func:`_battles`. ``counts``: resample counts already drawn from ``rng``
    (:func:`_draw_counts`); used for a single judge whose number of items matches, which
    is exactly what drawing them here would give.
    """
    rounds = check_int(rounds, "rounds", where, low=1)
    level = check_in_range(level, "level", where, low=0.0, high=1.0, low_open=True, high_open=True)
    weight = check_int(weight, "weight", where, low=1)
    gen, seed = resolve_rng(rng)
    battles = _battles(frame, float(weight), where, codes, continuous, rows)
    parts = []
    reuse = (counts is not None and len(battles) == 1 and sum(len(c) for c in counts) == rounds
             and counts[0].shape[1] == battles[0].num.shape[1])
    for b in battles:
        point, lo, hi = _ratio_bootstrap(b.num, b.den, gen, rounds, level, counts if reuse else None)
        part = pd.DataFrame(
            {"judge": b.judge, "model": b.models, "winrate": 100 * point, "lo": 100 * lo, "hi": 100 * hi,
             "n_battles": b.n_battles, "n_missing": b.n_missing}
        )
        if baseline is not None:
            part.loc[part["model"] == baseline, ["winrate", "lo", "hi"]] = 50.0
        parts.append(part.sort_values("winrate", ascending=False, kind="stable"))
    out = pd.concat(parts, ignore_index=True)
    out.attrs.update({"seed": seed, "rounds": rounds, "level": level, "weight": weight, "baseline": baseline})
    return out, battles


def _logit10(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log10(p) - np.log10(1.0 - p)


def _fit_bt(wins: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """Unpenalised logistic regression of battles vs the baseline → log10-odds per model."""
    import sklearn  # imported here: scikit-learn takes ~0.4 s to import and only Bradley–Terry needs it
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits  # a scikit-learn dependency

    m = len(wins)
    x = np.zeros((2 * m, m))
    x[np.arange(m), np.arange(m)] = math.log(_ELO_BASE)
    x[m + np.arange(m), np.arange(m)] = math.log(_ELO_BASE)
    y = np.r_[np.ones(m), np.zeros(m)]
    no_penalty: dict[str, Any] = (
        {"C": np.inf} if tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 8) else {"penalty": None}
    )
    lr = LogisticRegression(fit_intercept=False, tol=1e-10, max_iter=10_000, **no_penalty)
    # One BLAS thread: the (2M × M) products are tiny, and waking a second thread at every
    # L-BFGS step made the fit ~6x slower on a shared 2-core machine. Each product element
    # is still one dot product in the same order, so the coefficients are the same bits.
    with threadpool_limits(limits=1, user_api="blas"):
        lr.fit(x, y, sample_weight=np.r_[wins, losses])
    return lr.coef_[0]


def bradley_terry(
    frame: pd.DataFrame,
    *,
    baseline: str | None = None,
    rounds: int = 1000,
    level: float = 0.95,
    weight: int = 3,
    rng: np.random.Generator | int | None = None,
) -> pd.DataFrame:
    """Bradley–Terry (Elo-scale) ratings from battles against the baseline, Arena-Hard style.

    Parameters
    ----------
    frame, baseline, rounds, level, weight, rng:
        As in :func:`arena_hard_winrate`.

    Returns
    -------
    pandas.DataFrame
        ``judge, model, bt, lo, hi`` sorted by ``bt`` within judge; ``attrs`` as in
        :func:`arena_hard_winrate`.

    Notes
    -----
    scikit-learn's ``LogisticRegression`` without penalty and without intercept is fitted
    on the weighted battles (feature ln 10 for the model, the baseline is the reference
    with rating 0; ties count as one half win, one half loss), and
    ``bt = 1000 + 400 · β`` so the baseline is 1000. With battles against a single
    baseline only, this is a monotone transform of the win rate p:
    ``bt = 1000 + 400 · log10(p / (1 − p))`` — it ranks exactly like
    :func:`arena_hard_winrate`. The bootstrap intervals use that closed form on the
    question-bootstrap win rates (the same rounds and seed as :func:`arena_hard_winrate`
    gives for the same ``rng``); percentile intervals commute with monotone maps.
    A model that wins (loses) every weighted battle has ``bt = +inf`` (``-inf``): the
    maximum-likelihood rating does not exist, and it is reported rather than clipped.
    """
    wr, battles = _winrate(frame, baseline=baseline, rounds=rounds, level=level, weight=weight, rng=rng,
                           where="bradley_terry")
    return _bradley_terry_from(wr, battles, baseline)


def _bradley_terry_from(wr: pd.DataFrame, battles: list[_Battles], baseline: str | None) -> pd.DataFrame:
    """Bradley–Terry table from a win-rate table and the battles it was computed from.

    ``arena_hard_winrate`` and ``bradley_terry`` with the same arguments and seed give
    ``wr`` and this table; callers that need both compute the win rates (and their
    bootstrap) once with :func:`_winrate` and pass them here.
    """
    bt = np.full(len(wr), np.nan)
    judge_idx = wr.groupby("judge", sort=False, dropna=False).indices
    for b in battles:
        key = b.judge if b.judge is not None else next(iter(judge_idx))
        idx = judge_idx[key]
        wins = np.asarray(b.num.sum(axis=1)).ravel()
        total = np.asarray(b.den.sum(axis=1)).ravel()
        with np.errstate(invalid="ignore", divide="ignore"):
            p = wins / total
        coef = np.full(len(b.models), np.nan)
        inner = (p > 0) & (p < 1)
        if inner.any():
            coef[inner] = _fit_bt(wins[inner], (total - wins)[inner])
        coef[p == 1] = np.inf
        coef[p == 0] = -np.inf
        rating = pd.Series(_ELO_ANCHOR + _ELO_SCALE * coef, index=b.models)
        if baseline is not None and baseline in rating.index:
            rating[baseline] = _ELO_ANCHOR
        bt[idx] = rating.loc[wr["model"].to_numpy()[idx]].to_numpy()
    out = pd.DataFrame(
        {
            "judge": wr["judge"].to_numpy(),
            "model": wr["model"].to_numpy(),
            "bt": bt,
            "lo": _ELO_ANCHOR + _ELO_SCALE * _logit10(wr["lo"].to_numpy() / 100.0),
            "hi": _ELO_ANCHOR + _ELO_SCALE * _logit10(wr["hi"].to_numpy() / 100.0),
        }
    )
    out = out.sort_values(["judge", "bt"], ascending=[True, False], kind="stable", na_position="last").reset_index(drop=True)
    out.attrs.update(wr.attrs)
    return out


#: The tools' own headline numbers (:func:`native_columns`), shown beside the certified column; inspect's
#: metrics are ``inspect_<metric>``.
NATIVE_COLUMNS = ("fastchat_win_rate_adjusted", "mt_bench_score", "arena_hard_score", "alpaca_eval_win_rate",
                  "alpaca_eval_length_controlled_win_rate", "battles_win_rate", "battles_bt_elo",
                  "arena_hard_style_controlled_score")


def is_native(column: str) -> bool:
    """Whether a leaderboard column is a tool's own headline number (:data:`NATIVE_COLUMNS`, ``inspect_*``)."""
    return column in NATIVE_COLUMNS or str(column).startswith("inspect_")


def native_columns(table: pd.DataFrame, natives: list[dict[str, Any]]) -> pd.DataFrame:
    """``table`` with one column per tool's own headline number (``Native.to_dict()`` records).

    Each record names its column (``fastchat_win_rate_adjusted``, ``mt_bench_score``,
    ``arena_hard_score``, ``alpaca_eval_win_rate``, ...) and gives a value per (judge, model);
    rows without one (another judge or format) get NaN. The table is not changed.
    """
    out = table.copy()
    keys = list(zip(out["judge"].astype(str), out["model"].astype(str)))
    for rec in natives:
        vals = {(str(v["judge"]), str(v["model"])): float(v["value"]) for v in rec.get("values", [])}
        if any(k in vals for k in keys):
            out[rec["column"]] = [vals.get(k, np.nan) for k in keys]
    return out


def pin_baseline(table: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """``table`` with the baseline's own win-rate row at 50 (interval 50, 50) and Bradley-Terry at 1000.

    A model ties itself by definition; Arena-Hard's ``show_result.py`` pins the baseline so. Only the
    columns of a win rate against the baseline change (``winrate``, ``bt``, ``arena_hard_score`` and
    their intervals, where they hold a number); the certified scores are the data's.
    """
    out = table.copy()
    row = (out["model"].astype(str) == baseline).to_numpy()
    if not row.any():
        return out
    for cols, value in ((("winrate", "winrate_lo", "winrate_hi", "arena_hard_score"), 50.0),
                        (("bt", "bt_lo", "bt_hi"), _ELO_ANCHOR)):
        for c in cols:
            if c in out.columns and out.loc[row, c].notna().any():
                out.loc[row, c] = value
    return out


def rank(scores: Any) -> np.ndarray:
    """Rank scores in descending order: 1 = best; ties share the average rank.

    Parameters
    ----------
    scores:
        (M,) scores; NaN gets rank NaN and does not take a rank.

    Returns
    -------
    numpy.ndarray
        (M,) float ranks (``scipy.stats.rankdata(-scores, method="average")``).
    """
    x = np.asarray(scores, dtype=float)
    if x.ndim != 1:
        raise InputError(f"The 'scores' parameter of rank must be a 1-D array. Got shape {x.shape} instead.")
    out = np.full(x.shape, np.nan)
    ok = ~np.isnan(x)
    out[ok] = stats.rankdata(-x[ok], method="average")
    return out


_PAIR_CELLS = 1_000_000  # rows x n x n pair comparisons held at once (a chunk that stays in cache)
_PAIRWISE_MAX_N = 500  # above this many values per row, scipy's O(n log n) count per row is the cheaper one


def kendall_tau_b(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Kendall τ_b of ``x`` (n,) against each row of ``ys`` (k, n): ``scipy.stats.kendalltau(x, y).statistic``
    row by row, vectorised (one pass over the n² pairs of all rows instead of k calls of ~0.5 ms overhead).

    scipy counts the tied pairs of x and of y and the concordant-minus-discordant pairs C − D as integers,
    then forms ``(C − D) / sqrt(n0 − n1) / sqrt(n0 − n2)`` and clips it to [−1, 1]. The same integers are
    counted here (exact in any order), from the rows' dense ranks (ties share a rank, as in scipy), and
    the same floating-point operations follow, so every value equals scipy's to the last bit
    (tests/pipeline/test_fast_leaderboard.py, random inputs with ties). NaN where scipy gives NaN: NaN
    in the row or in x (scipy's ``nan_policy="propagate"``), or a side with every pair tied. Cost O(k n²)
    small-integer comparisons, in chunks of rows: cheaper than k scipy calls up to a few hundred values
    per row; above ``_PAIRWISE_MAX_N`` scipy's own O(n log n) count is called row by row instead.
    """
    x = np.asarray(x, dtype=float)
    ys = np.asarray(ys, dtype=float)
    n = x.size
    if n > _PAIRWISE_MAX_N:
        return np.array([stats.kendalltau(x, y, variant="b").statistic for y in ys], dtype=float)
    out = np.full(len(ys), np.nan)
    if n < 2 or np.isnan(x).any():
        return out
    tot = n * (n - 1) // 2
    above = x[:, None] > x[None, :]  # pairs (i, j) with x_i > x_j; the transpose holds those with x_i < x_j
    below = np.ascontiguousarray(above.T)
    xtie = tot - int(np.count_nonzero(above))
    # dense ranks of each row (equal values share one) in the narrowest integer type: comparing them is
    # comparing the values, several times faster than comparing floats
    order = np.argsort(ys, axis=1, kind="stable")
    srt = np.take_along_axis(ys, order, axis=1)
    new = np.ones(ys.shape, dtype=bool)
    new[:, 1:] = srt[:, 1:] != srt[:, :-1]
    ranks = np.empty(ys.shape, dtype=np.int16)  # n <= _PAIRWISE_MAX_N ranks fit
    np.put_along_axis(ranks, order, np.cumsum(new, axis=1, dtype=ranks.dtype), axis=1)
    pos = np.arange(n)
    ytie = (pos - np.maximum.accumulate(np.where(new, pos, 0), axis=1)).sum(axis=1)  # per value: 0 + 1 + ... + (c - 1)
    con_minus_dis = np.empty(len(ys), dtype=np.int64)
    step = max(1, _PAIR_CELLS // (n * n))
    for start in range(0, len(ys), step):
        r = ranks[start : start + step]
        gt = r[:, :, None] > r[:, None, :]  # y_i > y_j: each untied pair of y once
        # a pair ordered alike by x and y is concordant, oppositely discordant; a tie in either is neither
        con_minus_dis[start : start + step] = (np.count_nonzero(gt & above, axis=(1, 2))
                                              - np.count_nonzero(gt & below, axis=(1, 2)))
    ok = ~np.isnan(ys).any(axis=1) & (xtie != tot) & (ytie != tot)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = con_minus_dis / np.sqrt(tot - xtie) / np.sqrt(tot - ytie)
    out[ok] = np.minimum(1.0, np.maximum(-1.0, tau[ok]))
    return out


@validate_params(exempt=AT_A_POINT)
def retention(
    original: Any, certified: Any, *, alpha: float, sigma_model: Any
) -> dict[str, Any]:
    """How much of the original leaderboard the certified scores keep.

    Parameters
    ----------
    original, certified:
        (M,) model scores before and after the mechanism (finite).
    alpha:
        The shrinkage α in [0, 1] (fraction of the score spread kept).
    sigma_model:
        Noise standard deviation of each model's certified mean, (M,) or a float.

    Returns
    -------
    dict
        ``spearman``, ``kendall_tau_b``, ``pearson`` (scipy.stats, original vs certified);
        ``pairs_kept_probability`` (list, M−1): for adjacent models in the original order
        (descending), Φ(α·gap / sqrt(σ_i² + σ_j²)), the probability the mechanism keeps
        their order; ``pairs_kept_mean``; ``alpha``; ``spread_ratio`` = std(certified) /
        std(original) (α plus noise, observed).

    Notes
    -----
    The certified mean difference of models i, j is α·(f_i − f_j) + N(0, σ_i² + σ_j²).
    A zero gap gives 1/2; σ_i = σ_j = 0 gives 1 for a positive gap.
    """
    o = check_finite_array(original, "original", "retention", ndim=1, min_size=2)
    c = check_finite_array(certified, "certified", "retention", ndim=1, min_size=2)
    if c.shape != o.shape:
        raise InputError(f"The 'certified' parameter of retention must have the shape of 'original' {o.shape}. Got {c.shape} instead.")
    alpha = check_in_range(alpha, "alpha", "retention", low=0.0, high=1.0)
    sig = np.broadcast_to(np.asarray(sigma_model, dtype=float), o.shape).copy() if np.ndim(sigma_model) == 0 else np.asarray(sigma_model, dtype=float)
    if sig.shape != o.shape or not np.all(np.isfinite(sig)) or np.any(sig < 0):
        raise InputError("The 'sigma_model' parameter of retention must be a non-negative float or (M,) array with "
                         f"M = {o.size}. Got {sigma_model!r} instead.")
    order = np.argsort(-o, kind="stable")
    gaps = alpha * (o[order[:-1]] - o[order[1:]])
    scale = np.sqrt(sig[order[:-1]] ** 2 + sig[order[1:]] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, gaps / scale, np.where(gaps > 0, np.inf, 0.0))
    kept = stats.norm.cdf(z)
    so, sc = float(np.std(o)), float(np.std(c))
    return {
        # a constant side (one model, or tied scores) has no rank correlation: NaN, without scipy's warning
        "spearman": float(stats.spearmanr(o, c).statistic) if np.ptp(o) > 0 and np.ptp(c) > 0 else float("nan"),
        "kendall_tau_b": float(kendall_tau_b(o, c[None, :])[0]) if np.ptp(o) > 0 and np.ptp(c) > 0 else float("nan"),
        "pearson": float(stats.pearsonr(o, c).statistic) if so > 0 and sc > 0 else float("nan"),
        "pairs_kept_probability": kept.tolist(),
        "pairs_kept_mean": float(kept.mean()),
        "alpha": alpha,
        "spread_ratio": sc / so if so > 0 else float("nan"),
    }


@validate_params(exempt=AT_A_POINT)
def expected_distortion(original_items: Any, alpha: float, center: Any, sigma: float) -> float:
    """E‖M(D) − f(D)‖² of the shrink-and-noise mechanism M(D) = α f + (1 − α) μ + N(0, σ² I_d).

    Parameters
    ----------
    original_items:
        (d,) f(D), the per-item scores (finite).
    alpha:
        Shrinkage α in [0, 1].
    center:
        μ, a float or (d,) array.
    sigma:
        Noise standard deviation σ >= 0.

    Returns
    -------
    float
        (1 − α)² ‖f − μ‖² + d σ² (exact: the bias and the zero-mean noise are orthogonal).
    """
    f = check_finite_array(original_items, "original_items", "expected_distortion", ndim=1)
    alpha = check_in_range(alpha, "alpha", "expected_distortion", low=0.0, high=1.0)
    sigma = check_in_range(sigma, "sigma", "expected_distortion", **bounds("sigma"))
    mu = np.broadcast_to(np.asarray(center, dtype=float), f.shape)
    if not np.all(np.isfinite(mu)):
        raise InputError("The 'center' parameter of expected_distortion must be finite. Got a NaN or infinite value instead.")
    return float((1.0 - alpha) ** 2 * np.sum((f - mu) ** 2) + f.size * sigma**2)

"""Leaderboards and retention: one judge's leaderboard rows (item-bootstrap intervals, win rate,
Bradley–Terry) and retention figures, and the panel leaderboard over judges.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from biasbound.pipeline._results import CertifyResult, JudgeCertification, _Batch, _Canon, jsonable
from biasbound._validation import spawn_seeds as _spawn_seeds
from biasbound.pipeline._settings import _Settings


def _str_column(names: np.ndarray, codes: np.ndarray) -> Any:
    """A pandas ``str`` column holding ``names[codes]`` (taken in Arrow, no per-row Python strings)."""
    return pd.array(names, dtype="str").take(codes)


def _matrix(df: pd.DataFrame, col: str, models: list[str], items: pd.Index) -> np.ndarray:
    """(n_models, n_items) matrix of ``col`` with NaN where absent (pivot, no row loop)."""
    mat = df.pivot_table(index="model", columns="item_id", values=col, aggfunc="first", dropna=False)
    return mat.reindex(index=models, columns=items).to_numpy(dtype=float)


def _boot(
    matrix: np.ndarray, rounds: int, seed: int, counts: list[np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-model mean and 95% percentile item-bootstrap interval (paired over models, seeded).

    ``counts``: the resample counts of ``seed`` (``leaderboard._draw_counts``), shared by the
    bootstraps that use the same seed and number of items (they would draw the same ones).
    """
    from biasbound.leaderboard import bootstrap_means

    b = bootstrap_means(matrix, rounds=rounds, level=0.95, rng=seed, counts=counts)
    return np.asarray(b.mean), np.asarray(b.lo), np.asarray(b.hi)


def _certified_matrix(canon: _Canon, batch: _Batch, rows: np.ndarray, cols: np.ndarray, row_codes: np.ndarray,
                      col_codes: np.ndarray, all_models: list[str], shape: tuple[int, int]) -> np.ndarray:
    """(models × items) certified scores of the batch, NaN where absent, in the order of the original matrix."""
    r, c = rows[batch.pos], cols[batch.pos]  # each certified score's cell, gathered once
    if np.bincount(r, minlength=len(row_codes)).all() and np.bincount(c, minlength=len(col_codes)).all():
        cert_mat = np.full(shape, np.nan)
        cert_mat[r, c] = batch.certified
        return cert_mat
    del r, c
    # Some model or item has no certified score: built by the pivot these matrices always came
    # from, whose memory layout (column-major after its reindex) sets the summation order of
    # the bootstrap means, so the certified means keep their last bit.
    frame = pd.DataFrame({"model": _str_column(canon.model_names, canon.m[batch.pos]),
                          "item_id": _str_column(canon.item_names, canon.i[batch.pos]),
                          "certified": batch.certified})
    return _matrix(frame, "certified", all_models, pd.Index([str(x) for x in canon.item_names[col_codes]]))


def _is_pairwise(frame: pd.DataFrame) -> bool:
    games = set(pd.unique(frame["game"]))
    return {1, 2} <= games


def _pairwise_rows(frame: pd.DataFrame) -> np.ndarray:
    """The rows of the pairwise statistics (boolean mask): variant "original", rerun 0, games 1 and 2."""
    from biasbound.leaderboard import pairwise_rows

    return pairwise_rows(frame)


def _on_arena_hard_levels(frame: pd.DataFrame, rows: np.ndarray) -> bool:
    """True when every non-missing pairwise score (``rows``: :func:`_pairwise_rows`) is one of Arena-Hard's levels."""
    from biasbound.leaderboard import VERDICT_GRID

    score = frame["score"].to_numpy(dtype=float)
    score = score if rows.all() else score[rows]
    return bool((np.isin(score, VERDICT_GRID) | np.isnan(score)).all())


_MEAN_SLICE = 1 << 20  # rows of _exact_group_means' per-row arrays formed at once


def _exact_group_means(values: np.ndarray, keys: np.ndarray, size: int) -> pd.Series | None:
    """``pd.Series(values).groupby(keys).mean()`` (keys in ``[0, size)``) by ``np.bincount`` a slice of rows at a time,
    or None when a group's sum could round.

    pandas divides a group's Kahan-compensated sum of its non-NaN values by their number; when every value is a
    multiple of 1/4 and Σ|v| < 2^50 every partial sum, in any order and any slicing, is exact, so the compensation
    stays 0 and the slices' plain sums give the same sum (``leaderboard.exact_group_sums``), the same quotient. The
    per-row arrays cost one slice (8 MiB) instead of pandas' per-row group codes and sort (10^7 rows: ~100 MiB)."""
    sums, counts, seen, total = np.zeros(size), np.zeros(size, dtype=np.int64), np.zeros(size, dtype=bool), 0.0
    for start in range(0, len(values), _MEAN_SLICE):
        v, k = values[start:start + _MEAN_SLICE], keys[start:start + _MEAN_SLICE]
        ok = ~np.isnan(v)
        v = np.where(ok, v, 0.0)  # pandas skips a missing value; adding 0.0 changes no sum
        quarters = v * 4.0
        if not np.array_equal(quarters, np.round(quarters)):
            return None
        total += float(np.abs(v).sum())
        sums += np.bincount(k, weights=v, minlength=size)
        counts += np.bincount(k[ok], minlength=size)
        seen |= np.bincount(k, minlength=size) > 0
    if total >= 2.0**50:
        return None
    at = np.flatnonzero(seen)  # the groups pandas forms, sorted
    with np.errstate(invalid="ignore", divide="ignore"):
        return pd.Series(sums[at] / counts[at], index=at)


def _judge_leaderboard(
    fj: pd.DataFrame,
    jc: JudgeCertification,
    s: _Settings,
    canon: _Canon,
    batch: _Batch,
    mech: dict[str, Any],
    d_m: pd.Series,
    n_missing: pd.Series,
    rng: np.random.Generator,
    codes: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The judge's leaderboard rows and retention figures (one shared item resample for all bootstraps)."""
    from biasbound import leaderboard as lb
    from biasbound.data.tables import compact_codes

    models = [str(m) for m in d_m.index]
    # (model, item) matrices over every model and item of f(D), both in sorted order
    row_codes, rows = compact_codes(canon.m, len(canon.model_names))
    col_codes, cols = compact_codes(canon.i, len(canon.item_names))
    all_models = [str(m) for m in canon.model_names[row_codes]]
    orig_mat = np.full((len(row_codes), len(col_codes)), np.nan)
    orig_mat[rows, cols] = canon.score
    b_seed = int(rng.integers(2**63))
    # one item resample for every bootstrap of this judge (all are seeded with b_seed)
    counts = lb._draw_counts(b_seed, s.bootstrap_rounds, orig_mat.shape[1])
    cal = jc.calibration
    if s.view == "model":
        cert_mat = _certified_matrix(canon, batch, rows, cols, row_codes, col_codes, all_models, orig_mat.shape)
        # both means over the one resample, in one pass (their common missing cells resampled once)
        (o_mean, o_lo, o_hi), (c_mean, c_lo, c_hi) = (
            (b.mean, b.lo, b.hi) for b in lb.bootstrap_means_shared([orig_mat, cert_mat], rounds=s.bootstrap_rounds,
                                                                    level=0.95, seed=b_seed, counts=counts))
    else:
        o_mean, o_lo, o_hi = _boot(orig_mat, s.bootstrap_rounds, b_seed, counts)
    table = pd.DataFrame({
        "judge": jc.judge,
        "model": all_models,
        "n_items": np.sum(~np.isnan(orig_mat), axis=1).astype(int),
        "n_missing": [int(n_missing.get(m, 0)) for m in all_models],
        "original": o_mean, "original_lo": o_lo, "original_hi": o_hi,
    })
    if s.view == "model":
        table["certified"], table["certified_lo"], table["certified_hi"] = c_mean, c_lo, c_hi
        # σ/√d_m per model (d_m = 1 where absent or 0): numpy's sqrt and division are IEEE-exact like math's
        d = np.maximum(d_m.reindex(all_models).fillna(1).to_numpy().astype(np.int64), 1)
        sigma_model = cal.sigma / np.sqrt(d.astype(float))
        distortion = {m: float(lb.expected_distortion(batch.values[m], cal.alpha, mech[m][1], cal.sigma)) for m in models}
    else:
        res, c_arr, _ = mech["*"]
        cmap = dict(zip(models, np.asarray(res.certified, dtype=float)))
        table["certified"] = [cmap.get(m, np.nan) for m in all_models]
        # interval: around the released value, the item-bootstrap half-widths of the shrunk mean
        # (α times the original's) and the mechanism's own noise (1.96 σ) combined in quadrature, as
        # two independent sources of error (a normal approximation; the noise part is exact)
        z95 = 1.959963984540054
        cert = np.array([cmap.get(m, np.nan) for m in all_models])
        h_lo = cal.alpha * (np.asarray(o_mean) - np.asarray(o_lo))
        h_hi = cal.alpha * (np.asarray(o_hi) - np.asarray(o_mean))
        lo_s = cert - np.sqrt(h_lo**2 + (z95 * cal.sigma) ** 2)
        hi_s = cert + np.sqrt(h_hi**2 + (z95 * cal.sigma) ** 2)
        table["certified_lo"], table["certified_hi"] = lo_s, hi_s
        sigma_model = np.full(len(all_models), cal.sigma)
        distortion = {"*": float(lb.expected_distortion(batch.means, cal.alpha, c_arr, cal.sigma))}
    table["rank_original"] = lb.rank(table["original"].to_numpy())
    table["rank_certified"] = lb.rank(table["certified"].to_numpy())
    for col in ("winrate", "winrate_lo", "winrate_hi", "bt", "bt_lo", "bt_hi"):
        table[col] = np.nan  # the 'preference' columns exist only for pairwise scales other than Arena-Hard's
    stats_note = None
    pairwise = _is_pairwise(fj)
    if pairwise:
        # Arena-Hard's win rate (strong verdicts weighted 3) is defined on its five levels only; any other
        # pairwise scale (1-10 grades, continuous preferences, normalised to [0, 1] in the model's view)
        # gets the mean preference over both games and Bradley-Terry on fractional wins instead.
        keep = _pairwise_rows(fj)
        grid = _on_arena_hard_levels(fj, keep)
        # one bootstrap serves both tables (bradley_terry with the same seed recomputes it)
        wr_table, battles = lb._winrate(fj, baseline=None, rounds=s.bootstrap_rounds, level=0.95, weight=3, rng=b_seed,
                                        where="arena_hard_winrate" if grid else "the pairwise leaderboard",
                                        codes=codes, counts=counts, continuous=not grid, rows=keep)
        bt = lb._bradley_terry_from(wr_table, battles, None).set_index("model")
        wr = wr_table.set_index("model")
        col = "winrate" if grid else "preference"
        table[col] = table["model"].map(wr["winrate"])
        table[f"{col}_lo"] = table["model"].map(wr["lo"])
        table[f"{col}_hi"] = table["model"].map(wr["hi"])
        table["bt"] = table["model"].map(bt["bt"])
        table["bt_lo"] = table["model"].map(bt["lo"])
        table["bt_hi"] = table["model"].map(bt["hi"])
        if not grid:
            stats_note = ("Scores are not on Arena-Hard's five levels {0, 0.25, 0.5, 0.75, 1}, so the Arena-Hard win "
                          "rate is omitted; 'preference' is the mean preference over both games (percent) and 'bt' "
                          "is Bradley-Terry fitted on fractional wins (a preference p counts p win, 1 - p loss).")
    else:
        stats_note = ("Single-answer scores: win rate, mean preference and Bradley-Terry need pairwise judgments "
                      "(games 1 and 2) and are omitted; 'original' is the mean score.")
    if pairwise:
        # context for readers: f(D) is the original presentation order only; this is the mean over both orders
        if fj["model"].hasnans:  # astype(str) keeps a missing model missing, and groupby leaves it out
            means = fj["score"][keep].groupby(fj["model"].astype(str)[keep]).mean()
        else:  # grouped by the judge's model codes (its sorted model texts): the same groups and row order, same means
            # (every row kept: the same rows in the same order without the copies)
            score, model = (fj["score"].to_numpy(), codes[0]) if keep.all() else (fj["score"].to_numpy()[keep], codes[0][keep])
            by_code = _exact_group_means(score, model, len(codes[1]))
            if by_code is None:
                by_code = pd.Series(score).groupby(model).mean()
            means = pd.Series(by_code.to_numpy(), index=codes[1][by_code.index.to_numpy()])
        table["original_both_orders"] = table["model"].map(means)
    ok = table["certified"].notna().to_numpy()
    if ok.sum() >= 2:
        ret = dict(lb.retention(table["original"].to_numpy()[ok], table["certified"].to_numpy()[ok],
                                alpha=cal.alpha, sigma_model=sigma_model[ok]))
    else:  # one model: nothing to rank, so rank retention is undefined (reported as such, not an error)
        ret = {"spearman": None, "kendall_tau_b": None, "pearson": None, "pairs_kept_probability": [],
               "pairs_kept_mean": None, "alpha": cal.alpha, "spread_ratio": None,
               "note": "rank retention needs at least two certified models; this judge has one"}
    ret["expected_distortion"] = {
        "per_model": distortion,
        "total": float(sum(distortion.values())),
        "mean": float(np.mean(list(distortion.values()))),
        "formula": "E||M(D) - f(D)||^2 = (1 - alpha)^2 ||f(D) - mu||^2 + d sigma^2",
    }
    if stats_note is not None:
        ret["leaderboard_note"] = stats_note
    ret.update({"judge": jc.judge, "view": s.view, "bootstrap_seed": b_seed, "bootstrap_rounds": s.bootstrap_rounds,
                "sigma": cal.sigma, "n_models": int(ok.sum())})
    return table.sort_values("rank_original", kind="stable").reset_index(drop=True), jsonable(ret)


def _panel(result: CertifyResult, s: _Settings) -> pd.DataFrame | None:
    """Panel leaderboard: mean over judges of the certified scores, with a 95% item bootstrap CI."""
    from biasbound import leaderboard as lb

    if len(result.judges) < 2:
        return None
    lbd = result.leaderboard
    if s.view == "model":
        sc = pd.concat([j.scores for j in result.judges.values()], ignore_index=True)
        per_item = sc.groupby(["model", "item_id"], sort=True)[["original", "certified"]].mean().reset_index()
        models = sorted(per_item["model"].unique())
        items = pd.Index(sorted(per_item["item_id"].unique()))
        seed = _spawn_seeds(s.seed + 2, 1)[0]
        c_mean, c_lo, c_hi = _boot(_matrix(per_item, "certified", models, items), s.bootstrap_rounds, seed)
        o_mean, o_lo, o_hi = _boot(_matrix(per_item, "original", models, items), s.bootstrap_rounds, seed)
        panel = pd.DataFrame({"judge": "panel", "model": models, "original": o_mean, "original_lo": o_lo,
                              "original_hi": o_hi, "certified": c_mean, "certified_lo": c_lo, "certified_hi": c_hi})
    else:
        g = lbd.groupby("model")
        panel = pd.DataFrame({"judge": "panel", "original": g["original"].mean(), "certified": g["certified"].mean()})
        panel = panel.reset_index()
        for c in ("original_lo", "original_hi", "certified_lo", "certified_hi"):
            panel[c] = np.nan  # no item-level certified scores in the leaderboard view
    panel["n_judges"] = panel["model"].map(lbd.groupby("model")["judge"].nunique()).astype(int)
    panel["rank_original"] = lb.rank(panel["original"].to_numpy())
    panel["rank_certified"] = lb.rank(panel["certified"].to_numpy())
    return panel.sort_values("rank_original", kind="stable").reset_index(drop=True)

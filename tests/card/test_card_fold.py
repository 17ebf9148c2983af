"""The judge card from a table's rerun-0 rows plus folds of its rerun >= 1 rows (``biasbound.card_fold``, issue 24)
equals the card of the whole table: every figure to the bit, the rerun mean shift's value and interval to 1e-12
relative (its mean and M2 merged across blocks by Chan's update, which rounds differently from one pass over every
pair). Random tables split by model into blocks, as the blocked certify route reads them. Deterministic (fixed
seeds): no false-failure rate."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

from biasbound import card
from biasbound.card import CardFold, card_fold, merge_folds

_REL = 1e-12


def _table(seed: int, *, judges: int, pairwise: bool, levels: str) -> pd.DataFrame:
    """Models × items of each judge: rerun 0 and reruns 1..3 (game 1 and 2 when pairwise, else game 0), a variant,
    about 5% missing scores; ``levels``: quarters, continuous, or ``split`` (rerun 0 on 9 levels, the reruns on
    sixteenths: only the whole table has more than DISCRETE_LEVELS distinct scores)."""
    rng = np.random.default_rng(seed)
    n_models, n_items = int(rng.integers(5, 9)), int(rng.integers(6, 12))

    def score(rerun: int) -> float:
        if rng.random() < 0.05:
            return float("nan")
        if levels == "continuous":
            return float(rng.random())
        if levels == "split" and rerun:
            return float(rng.integers(0, 17)) / 16
        return float(rng.integers(0, 9 if levels == "split" else 5)) / (8 if levels == "split" else 4)

    rows = []
    games = (1, 2) if pairwise else (0,)
    for j in range(judges):
        for m in range(n_models):
            for i in range(n_items):
                base = {"judge": f"judge{j}", "model": f"m{m}", "item_id": f"q{i:02d}", "source": "t.csv", "line": 0,
                        "verdict": str(rng.choice(["A>B", "B>A", "A=B"]))}
                for g in games:
                    for r in range(int(rng.integers(3, 5))):
                        if r and rng.random() < 0.1:
                            continue  # an item some reruns lack
                        rows.append({**base, "variant": "original", "rerun": r, "game": g, "score": score(r)})
                if rng.random() < 0.5:
                    rows.append({**base, "variant": "bold", "rerun": 0, "game": games[0], "score": score(0)})
                    rows.append({**base, "variant": "bold", "rerun": 1, "game": games[0], "score": score(1)})
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows in no order
    for col in ("judge", "model", "item_id", "variant"):
        frame[col] = frame[col].astype("str")
    return frame


def _blocks(frame: pd.DataFrame, seed: int) -> list[pd.DataFrame]:
    """The table split by model into 2-3 blocks of whole models (each block's rows in table order)."""
    rng = np.random.default_rng(1000 + seed)
    models = rng.permutation(sorted(frame["model"].unique()))
    parts = np.array_split(models, int(rng.integers(2, 4)))
    return [frame[frame["model"].isin(set(p))] for p in parts]


def _folds(blocks: list[pd.DataFrame]) -> dict[str, list[CardFold]]:
    out: dict[str, list[CardFold]] = {}
    for block in blocks:
        for judge, fj in block.groupby(block["judge"].astype(str), sort=True):
            out.setdefault(str(judge), []).append(card_fold(fj))
    return out


def _same(a: Any, b: Any, path: str, loose: set[str]) -> None:
    """Deep equality of two cards; a float at a path in ``loose`` within 1e-12 relative, every other one exact."""
    assert type(a) is type(b), path
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _same(a[k], b[k], f"{path}/{k}", loose)
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), path
        for n, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{n}]", loose)
    elif isinstance(a, float) and path in loose:
        # relative 1e-12; a shift of 0 on the 0-1 scale may come back as a few ulps of 1 (1e-16) from a merge
        assert math.isclose(a, b, rel_tol=_REL, abs_tol=1e-15), (path, a, b)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    else:
        assert a == b, (path, a, b)


CASES = [(0, 1, True, "quarters"), (1, 2, True, "continuous"), (2, 1, False, "quarters"), (3, 2, False, "continuous"),
         (4, 1, True, "split"), (5, 2, True, "quarters")]


@pytest.mark.parametrize(("seed", "judges", "pairwise", "levels"), CASES)
def test_the_card_of_rerun0_rows_and_folds_equals_the_whole_tables(seed: int, judges: int, pairwise: bool,
                                                                    levels: str) -> None:
    from biasbound.pipeline import certify

    full = _table(seed, judges=judges, pairwise=pairwise, levels=levels)
    res = certify(full, out=None, plots=False, progress=False, seed=0, skip_bad=True,
                  neighbors="swap,rerun" if pairwise else "rerun")
    blocks = _blocks(full, seed)
    per_judge = _folds(blocks)
    folds = {j: merge_folds(fs) for j, fs in per_judge.items()}
    for j, fs in per_judge.items():  # blocks in another order give the same fold, to the bit
        assert merge_folds(fs[::-1]) == folds[j] == merge_folds(fs[1:] + fs[:1])
    frame0 = full[full["rerun"] == 0]
    whole = card.judge_card(full, res, rounds=30)
    folded = card.judge_card(frame0, res, rounds=30, folds=folds)
    loose = {f"/judges/{j}/generators/rerun/mean_shift/{k}" for j in folds for k in ("value", "lo", "hi")}
    _same(whole, folded, "", loose)
    for j, c in whole["judges"].items():  # the comparison covers what the folds carry
        rerun = c["generators"]["rerun"]
        assert rerun["pairs"] > 0 and rerun["missing"] > 0 and rerun["mean_shift"]["lo"] < rerun["mean_shift"]["hi"]
        assert "rerun" in c["ranks"]["reversed_by"] and c["judgments"] > len(frame0[frame0["judge"] == j])
        assert c["verdict_rule"].startswith("side") == (levels != "quarters")
    if seed == 5:  # certify's split by judge and its codes of frame0, passed in with the folds: the same card
        from biasbound.data.coded import judge_groups
        from biasbound.pipeline._judge import _codes

        groups = judge_groups(frame0)
        _same(folded, card.judge_card(frame0, res, rounds=30, groups=groups, folds=folds,
                                      codes={j: _codes(g) for j, g in groups.items()}), "", set())
    if levels == "split":  # the rerun rows' scores decide the verdict rule: the rerun-0 rows alone would not
        alone = card.judge_card(frame0, res, rounds=30)
        assert all(c["verdict_rule"].startswith("score") for c in alone["judges"].values())


def test_one_fold_of_the_whole_judge_is_the_cards_own_and_the_merge_is_exact_on_counts() -> None:
    """A fold of every row of a judge (one block) gives the card's rerun figures of the whole table exactly (the
    whole-table card reads them from that very fold); folds of blocks add their counts and keep each model's figures."""
    full = _table(7, judges=1, pairwise=True, levels="continuous")
    fj = full[full["judge"] == "judge0"]
    one = card_fold(fj)
    folds = [card_fold(b) for b in _blocks(fj, 7)]
    merged = merge_folds(folds)
    later = fj[fj["rerun"] >= 1]
    assert one.rows == merged.rows == len(later) and one.scored == merged.scored == int(later["score"].notna().sum())
    for name in ("pairs", "missing", "flips_level", "flips_side", "reversals", "model_sq_mean", "rounds", "scores"):
        assert getattr(one, name) == getattr(merged, name), name
    assert one.shift.n == merged.shift.n and one.shift.mean == pytest.approx(merged.shift.mean, rel=_REL, abs=0)
    nb = card.neighbor_pairs(fj, "rerun")
    assert one.pairs == len(nb) and one.shift.mean == float(np.mean(-nb["difference"].to_numpy()))
    o, n_ = nb["original"].to_numpy(dtype=float), nb["neighbor"].to_numpy(dtype=float)
    assert one.missing == nb.attrs["missing"] > 0
    side = [np.where(x > 0.5, "above", np.where(x < 0.5, "below", "tie")) for x in (o, n_)]
    assert one.flips_side == int((side[0] != side[1]).sum())
    assert one.flips_level == int((o != n_).sum()) and one.reversals == int(((o - 0.5) * (n_ - 0.5) < 0).sum())
    assert 0 < one.reversals <= one.flips_side < one.pairs
    assert one.delta_star() == card._delta_star(nb["model"].to_numpy(), nb["difference"].to_numpy())
    assert len(one.scores) == card.DISCRETE_LEVELS + 1  # continuous: capped, enough to decide
    rows = card._judge_rows(fj)
    assert rows.rerun_fold == one.__class__(**{**one.__dict__, "rows": 0, "scored": 0, "scores": ()})


def test_folds_with_a_frame_holding_reruns_are_refused() -> None:
    full = _table(8, judges=1, pairwise=True, levels="quarters")
    with pytest.raises(ValueError, match="rerun-0 rows only"):
        card.judge_card(full, None, folds={"judge0": card_fold(full)})

"""`biasbound compare OLD NEW`: the embedded Arena-Hard judge against itself exits 0; against the same judge
whose swapped verdicts were doctored so that 20% more of its (model, item) pairs flip, it exits 1 (documented
failure code) and names the flip rate; bad input exits 2 with one sentence.

The doctored judgments are fixed by a seed and the flip-rate intervals are Clopper–Pearson over 5,000 pairs:
the old and new rates (48.8% and 68.8%) are 20 points apart, their 95% intervals about ±1.4 points wide, so the
"moved" verdict is a certainty on these fixed data (no random test; false-failure rate 0).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biasbound.cli import main
from biasbound.data.arena_hard import GAME1_SCORES
from biasbound.data.tables import from_frame
from biasbound.pipeline import certify

pytestmark = pytest.mark.slow  # end to end: compare on certified judge folders (~6 s on a loaded machine)

MODELS = 10


def _subset(demo_set) -> pd.DataFrame:
    f = demo_set.frame
    keep = sorted(set(f["model"].astype(str)))[:MODELS]
    return f[f["model"].isin(keep)].reset_index(drop=True)


def _doctor(frame: pd.DataFrame, share: float = 0.2, seed: int = 7) -> tuple[pd.DataFrame, int]:
    """Flip the game-2 verdict of ``share`` of all (model, item) pairs, chosen among those that did not flip."""
    f = frame.copy()
    g1 = f[f["game"] == 1].set_index(["model", "item_id"])["score"]
    g2 = f[f["game"] == 2].set_index(["model", "item_id"])["score"]
    steady = g1.index[(g1 == g2.reindex(g1.index)).to_numpy()]
    rng = np.random.default_rng(seed)
    n_pairs = int(g1.notna().sum())
    chosen = set(map(tuple, np.asarray(list(steady), dtype=object)[rng.choice(len(steady), round(share * n_pairs),
                                                                                 replace=False)]))
    by_score = {1.0 - s: v for v, s in GAME1_SCORES.items()}  # game 2: score = 1 − game-1 score of the verdict
    rows = (f["game"] == 2) & pd.Series(list(zip(f["model"], f["item_id"])), index=f.index).isin(chosen)
    new = np.where(f.loc[rows, "score"] == 0.5, 1.0, 1.0 - f.loc[rows, "score"])
    f.loc[rows, "score"] = new
    f.loc[rows, "verdict"] = [by_score[s] for s in new]
    return f, len(chosen)


@pytest.fixture(scope="module")
def folders(demo_set, tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    base = _subset(demo_set)
    doctored, n = _doctor(base)
    kw = dict(tau=0.5, delta=0.01, neighbors="swap", seed=0, progress=False, plots=False, bootstrap_rounds=200)
    certify(from_frame(base[["judge", "model", "item_id", "game", "score", "verdict"]], source="old"),
            out=root / "old", **kw)
    certify(from_frame(doctored[["judge", "model", "item_id", "game", "score", "verdict"]], source="new"),
            out=root / "new", **kw)
    table = root / "doctored.csv"
    doctored[["judge", "model", "item_id", "game", "score", "verdict"]].to_csv(table, index=False)
    base[["judge", "model", "item_id", "game", "score", "verdict"]].to_csv(root / "same.csv", index=False)
    return root, n, table


def test_the_doctored_swaps_flip_20_points_more(folders) -> None:
    root, n, _ = folders
    old = json.loads((root / "old" / "summary.json").read_text())["judge_card"]["judges"]["ensemble"]
    new = json.loads((root / "new" / "summary.json").read_text())["judge_card"]["judges"]["ensemble"]
    fo, fn = old["generators"]["swap"]["flip_rate"], new["generators"]["swap"]["flip_rate"]
    assert fn["n"] == fo["n"] == MODELS * 500 and fn["k"] - fo["k"] == n == MODELS * 100
    assert fn["lo"] > fo["hi"]


def test_compare_against_itself_exits_0(folders, capsys) -> None:
    root, _, _ = folders
    assert main(["compare", str(root / "old"), str(root / "old")]) == 0
    out = capsys.readouterr().out
    assert "no figure moved beyond its interval" in out and "MOVED" not in out


def test_compare_against_the_doctored_judge_exits_1_and_names_the_flip_rate(folders, capsys) -> None:
    root, _, _ = folders
    assert main(["compare", str(root / "old"), str(root / "new")]) == 1
    out = capsys.readouterr().out
    moved = [ln for ln in out.splitlines() if "MOVED" in ln]
    assert any("flip_rate:swap" in ln for ln in moved)
    assert "moved beyond their 95% intervals" in out
    # moves allowed: only the thresholds decide
    assert main(["compare", str(root / "old"), str(root / "new"), "--allow-moves"]) == 0
    assert main(["compare", str(root / "old"), str(root / "new"), "--allow-moves", "--fail-if", "flip_rate>0.6"]) == 1
    new = json.loads((root / "new" / "summary.json").read_text())["judge_card"]["judges"]["ensemble"]
    rate = new["generators"]["swap"]["flip_rate"]["value"]
    assert f"FAIL judge ensemble: flip_rate = {rate:.4g} > 0.6" in capsys.readouterr().out
    assert main(["compare", str(root / "old"), str(root / "old"), "--fail-if", "flip_rate>0.6"]) == 0


def test_compare_with_new_judgments_instead_of_a_folder(folders, capsys) -> None:
    """NEW as judgments: the card from the data, and OLD's certificate audited on them (exact census: the
    doctored swaps give P(exceed τ) ≈ 0.107 against δ = 0.01, far outside any audit band)."""
    root, _, table = folders
    assert main(["compare", str(root / "old"), str(table)]) == 1
    out = capsys.readouterr().out
    assert any("flip_rate:swap" in ln and "MOVED" in ln for ln in out.splitlines())
    assert "CONTRADICTED: OLD certificate.json (judge ensemble)" in out
    # a contradicted certificate fails the check even when moves are allowed
    assert main(["compare", str(root / "old"), str(table), "--allow-moves"]) == 1
    capsys.readouterr()
    # the certified judgments themselves: nothing moved, nothing contradicted
    assert main(["compare", str(root / "old"), str(root / "same.csv")]) == 0
    out = capsys.readouterr().out
    assert "CONTRADICTED" not in out and "MOVED" not in out


@pytest.mark.parametrize("args, words", [
    (["--fail-if", "flipp>0.1"], "unknown figure 'flipp'"),
    (["--fail-if", "flip_rate=0.1"], "must read FIGURE>VALUE"),
])
def test_bad_conditions_exit_2(folders, capsys, args, words) -> None:
    root, _, _ = folders
    assert main(["compare", str(root / "old"), str(root / "old"), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_missing_folder_exits_2(folders, tmp_path, capsys) -> None:
    root, _, _ = folders
    assert main(["compare", str(root / "old"), str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_rank_moves_beyond_the_old_rank_interval() -> None:
    """Hand-made cards: a model whose new rank leaves its old 95% rank interval is named; one inside is not."""
    from biasbound.commands.compare import compare_cards

    def card(models, intervals):
        return {"judges": {"j": {"generators": {}, "ranks": {"models": models, "rank_interval": intervals}}}}

    old = card(["a", "b", "c"], {"a": [1, 1], "b": [2, 3], "c": [2, 3]})
    new = card(["b", "a", "c"], {"a": [1, 2], "b": [1, 2], "c": [3, 3]})
    moves = compare_cards(old, new, [])["rank_moves"]["j"]
    assert [(m["model"], m["old_rank"], m["new_rank"]) for m in moves] == [("a", 1, 2), ("b", 2, 1)]
    order = compare_cards(old, new, [])["orders"]["j"]
    assert order["changed"] == 2 and order["spearman"] == 0.5  # ranks (1,2,3) vs (2,1,3)
    same = compare_cards(old, card(["a", "c", "b"], {}), [])["rank_moves"]
    assert same == {}  # b and c swap inside their shared interval 2–3

"""The judge card's rank statements stay linear in models: capped pair lists and a capped order matrix, each the
exact sub-part of the uncapped statements (the same function with ``max_pairs=None, matrix_models=None``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound.card import card_rows, judge_card, rank_statements
from biasbound.pipeline import certify


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, object]:
    rng = np.random.default_rng(11)
    strength = rng.normal(0, 1, 30)
    rows = []
    for m in range(30):
        for i in range(16):
            for g in (1, 2):  # game 2 shifted per model: a position bias that reverses many pairs
                z = strength[m] + rng.normal(0, 1) + (rng.normal(0, 1.5) if g == 2 else 0.0)
                rows.append({"judge": "j", "model": f"m{m}", "item_id": f"q{i}", "variant": "original", "rerun": 0,
                             "game": g, "score": float(np.clip(np.round(2 + z), 0, 4)) / 4, "source": "t.csv", "line": 0})
    frame = pd.DataFrame(rows)
    return frame, certify(frame, out=None, plots=False, progress=False, seed=0)


def test_capped_lists_and_matrix_are_the_exact_parts_of_the_full_statements(table) -> None:
    frame, res = table
    j = res.judges["j"]
    full = rank_statements(frame, j, rounds=50, seed=1, max_pairs=None, matrix_models=None)
    cap = rank_statements(frame, j, rounds=50, seed=1, max_pairs=5, matrix_models=12)
    models = full["models"]
    pos = {m: k for k, m in enumerate(models)}
    mean = j.leaderboard.set_index("model")["original"]
    assert full["reversed_count"]["swap"] > 5  # the cap bites
    for key, count in (("reversed_by", "reversed_count"), ("tied_by", "tied_count")):
        for g, pairs in full[key].items():
            assert full[count][g] == cap[count][g] == len(pairs)  # counted in full either way
            shown = cap[key][g]
            assert len(shown) == min(5, len(pairs))
            assert all(list(p) in pairs for p in shown)
            assert [pos[x] for x, _ in shown] == sorted(pos[x] for x, _ in shown)  # leaderboard order
            # the largest original margins: no listed pair's margin is below an unlisted one's
            margin = {tuple(p): mean[p[0]] - mean[p[1]] for p in pairs}
            left = [margin[tuple(p)] for p in pairs if list(p) not in shown]
            if shown and left:
                assert min(margin[tuple(p)] for p in shown) >= max(left)
    assert cap["pairs_listed"] == 5 and full["pairs_listed"] is None
    # the matrix: the upper-left block of the full one; every pair counted over all models
    assert cap["matrix_models"] == 12 and full["matrix_models"] == len(models)
    assert cap["matrix"] == [row[:12] for row in full["matrix"][:12]]
    for ch in "SBR.":
        assert cap["pair_counts"][ch] == full["pair_counts"][ch] == sum(r.count(ch) for r in full["matrix"]) // 2
    for k in ("separability", "rank_interval", "reversed_bootstrap_separated", "pairs"):
        assert cap[k] == full[k]


def test_card_rows_count_every_reversed_pair_and_say_the_rest(table) -> None:
    frame, res = table
    card = judge_card(frame, res, rounds=50, seed=1, max_pairs=3)["judges"]["j"]
    n = card["ranks"]["reversed_count"]["swap"]
    row = dict(card_rows(card))["pairs reversed by swap on every item"]
    assert row.startswith(f"{n}") and f"… {n - 3} more" in row and "largest original margins" in row


def test_rank_pairs_plot_of_a_capped_matrix(table, tmp_path) -> None:
    from biasbound.report.plots import plot_rank_pairs

    frame, res = table
    cap = rank_statements(frame, res.judges["j"], rounds=50, seed=1, matrix_models=10)
    out = plot_rank_pairs(cap, tmp_path / "rank_pairs.png")
    assert out.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("kw", [{"max_pairs": -1}, {"matrix_models": -3}, {"max_pairs": 1.5}])
def test_caps_out_of_range_are_one_sentence(table, kw) -> None:
    from biasbound._exceptions import InputError

    frame, res = table
    with pytest.raises((InputError, TypeError), match="rank_statements"):
        rank_statements(frame, res.judges["j"], rounds=10, seed=1, **kw)

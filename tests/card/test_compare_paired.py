"""Paired comparison (biasbound.paired, ``compare --paired``) on LLMBar's real both-order judgments.

Two judges on the same 419 items (GPT-4 and ChatGPT, Vanilla prompt), and ChatGPT against a copy of itself whose
flip rate is doctored up by 5 points (21 of its non-flipping items made to flip): the exact McNemar test flags the
doctored copy at p < 0.01 (21 discordant pairs all one way: p = 2^-20), where the disjoint-interval rule does not
(34.1% [29.6, 38.9] vs 39.1% [34.4, 44.0] overlap). Everything is deterministic given the fixed seeds (the bootstrap
interval is checked only for containing the observed difference and excluding 0 where 21 of 419 items moved one
way: no statistical test with a false-failure rate).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from biasbound.card import judge_card, moved_figures
from biasbound.cli import main
from biasbound.data.tables import load_llmbar
from biasbound.paired import (
    check_paired,
    exact_mcnemar,
    judge_pairs,
    paired_comparison,
    paired_figure,
)

DOCTORED_FLIPS = 21  # 5% of ChatGPT/Vanilla's 419 items


def _naive_mcnemar(b: int, c: int) -> float:
    """The textbook exact McNemar p: twice the binomial(b + c, 1/2) tail at min(b, c), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n)


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 21), (21, 0), (5, 5), (116, 71), (3, 17), (40, 41)])
def test_exact_mcnemar_is_the_textbook_formula(b, c):
    assert exact_mcnemar(b, c) == pytest.approx(_naive_mcnemar(b, c), rel=1e-9, abs=1e-300)


@pytest.fixture(scope="module")
def llmbar_files(shared_data, tmp_path_factory):
    raw = pd.read_csv(shared_data / "llmbar" / "judgments.csv.gz")
    root = tmp_path_factory.mktemp("paired")
    gpt4 = raw[(raw["judge"] == "GPT-4") & (raw["strategy"] == "Vanilla")]
    chat = raw[(raw["judge"] == "ChatGPT") & (raw["strategy"] == "Vanilla")]
    doctored = chat.copy()
    same = doctored.index[doctored["winner_orig_order"] == doctored["winner_swapped_order"]]
    pick = np.random.default_rng(0).choice(same, DOCTORED_FLIPS, replace=False)
    doctored.loc[pick, "winner_swapped_order"] = 3 - doctored.loc[pick, "winner_orig_order"]
    paths = {}
    for name, f in (("gpt4", gpt4), ("chatgpt", chat), ("doctored", doctored)):
        paths[name] = root / f"{name}.csv"
        f.to_csv(paths[name], index=False)
    return paths


def _frame(path):
    return load_llmbar(path).frame


def test_doctored_flip_rate_is_flagged_by_mcnemar_not_by_disjoint_intervals(llmbar_files):
    old, new = _frame(llmbar_files["chatgpt"]), _frame(llmbar_files["doctored"])
    res = paired_comparison(old, new, old_judge="ChatGPT/Vanilla", new_judge="ChatGPT/Vanilla", seed=0)
    swap = res["generators"]["swap"]
    assert (swap["up"], swap["down"]) == (DOCTORED_FLIPS, 0)
    assert swap["p"] == pytest.approx(2.0 ** -(DOCTORED_FLIPS - 1)) and swap["p"] < 0.01 and swap["moved"]
    assert swap["diff"] == pytest.approx(DOCTORED_FLIPS / swap["n"])
    assert 0 < swap["lo"] < swap["diff"] < swap["hi"]
    assert res["verdicts"]["changed"] == 0 and not res["verdicts"]["moved"]  # only swapped verdicts were doctored
    # the disjoint-interval rule of the unpaired card misses the same change
    co, cn = judge_card(old), judge_card(new)
    assert not [m for m in moved_figures(co, cn) if m["figure"] == "flip_rate:swap"]
    assert check_paired([res], ["paired_flip_rate_p<0.01"]) and not check_paired([res], ["paired_verdict_p<0.01"])


def test_two_judges_on_the_same_items(llmbar_files):
    old, new = _frame(llmbar_files["gpt4"]), _frame(llmbar_files["chatgpt"])
    assert judge_pairs(["GPT-4/Vanilla"], ["ChatGPT/Vanilla"]) == []  # paired by compare --match, never by guess
    res = paired_comparison(old, new, old_judge="GPT-4/Vanilla", new_judge="ChatGPT/Vanilla", seed=0, rounds=500)
    assert res["pairs"] == res["items"] == 419
    # McNemar's counts read directly from the tables
    both = (old[(old["game"] == 1)].set_index("item_id")["score"].rename("o").to_frame()
            .join(new[new["game"] == 1].set_index("item_id")["score"].rename("n"), how="inner").dropna())
    up, down = int((both["n"] > both["o"]).sum()), int((both["n"] < both["o"]).sum())
    assert (res["verdicts"]["up"], res["verdicts"]["down"]) == (up, down)
    assert res["verdicts"]["p"] == pytest.approx(_naive_mcnemar(up, down))
    swap = res["generators"]["swap"]
    assert swap["lo"] < swap["diff"] < swap["hi"] and swap["lo"] > 0.15  # ChatGPT flips far more than GPT-4
    assert paired_figure(res, "paired_flip_rate_diff") == swap["diff"]
    # the same seed gives the same interval
    again = paired_comparison(old, new, old_judge="GPT-4/Vanilla", new_judge="ChatGPT/Vanilla", seed=0, rounds=500)
    assert again["generators"]["swap"]["lo"] == swap["lo"]


@pytest.mark.slow  # the CLI end to end (three compare runs on 419-item files, ~4 s)
def test_compare_cli_prints_mcnemar_and_fails_on_the_paired_result(llmbar_files, capsys):
    f = llmbar_files
    assert main(["compare", str(f["gpt4"]), str(f["chatgpt"]), "--allow-moves"]) == 2  # no judge in common
    assert main(["compare", str(f["gpt4"]), str(f["chatgpt"]), "--allow-moves",
                 "--match", "GPT-4/Vanilla=ChatGPT/Vanilla"]) == 0
    out = capsys.readouterr().out
    assert "McNemar p" in out and "Paired comparison" in out and "flip_rate:swap" in out
    assert main(["compare", str(f["chatgpt"]), str(f["doctored"]), "--allow-moves",
                 "--fail-if", "paired_flip_rate_p<0.01"]) == 1
    assert "paired_flip_rate_p" in capsys.readouterr().out
    assert main(["compare", str(f["chatgpt"]), str(f["chatgpt"])]) == 0
    out_json = f["chatgpt"].parent / "outcome.json"
    assert main(["compare", str(f["chatgpt"]), str(f["doctored"]), "--json", str(out_json)]) == 1
    doc = json.loads(out_json.read_text(encoding="utf-8"))
    assert doc["exit_code"] == 1 and not doc["passed"] and doc["paired_moved"] == ["flip_rate:swap (McNemar p = 9.54e-07)"]
    assert doc["paired"][0]["generators"]["swap"]["up"] == DOCTORED_FLIPS
    assert main(["compare", str(f["chatgpt"]), str(f["chatgpt"]), "--fail-if", "paired_nonsense<1"]) == 2

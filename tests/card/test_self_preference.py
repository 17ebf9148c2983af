"""Self-preference on the judge card (biasbound.self_preference): families from names and a user mapping; the
figure equals a direct computation on the embedded Arena-Hard data (76 models × 500 items, both orders) and on a
small table whose answer is known. Deterministic (fixed seeds; the interval is only checked to hold the value)."""

from __future__ import annotations

import pandas as pd
import pytest

from biasbound.card import card_rows, judge_card
from biasbound.self_preference import family_of, self_preference


@pytest.mark.parametrize(("name", "family"), [
    ("gpt-4o-mini", "openai"), ("chatgpt-4o-latest(2025-03-26)", "openai"), ("o3-mini-high", "openai"),
    ("o1", "openai"), ("model_graded_qa(openai/gpt-4o)", "openai"), ("GPT-4/Vanilla", "openai"),
    ("claude-3.7-sonnet(thinking)", "anthropic"), ("gemini-2.5-pro-exp-03-25", "google"), ("gemma-2-9b-it", "google"),
    ("PaLM2/CoT", "google"), ("llama-3.1-8b-instruct", "meta"), ("meta-llama/Llama-3-8B", "meta"),
    ("LLaMA2/Vanilla", "meta"), ("mistral-large-2411", "mistral"), ("qwen2.5-32b-instruct", "alibaba"),
    ("qwq-32b", "alibaba"), ("deepseek-r1", "deepseek"), ("command-r-plus-08-2024", "cohere"), ("grok-3-beta", "xai"),
    ("phi-3", "microsoft"), ("nova-pro-v1", "amazon"), ("jamba-1.6-mini", "ai21"), ("Falcon/CoT", "tii"),
    ("ensemble", None), ("hermes-3-llama-3.1-70b", None), ("olmo-2-0325-32b-instruct", None), ("metamath-7b", None),
    ("wizardlm-2-8x22b", None),
])
def test_family_of_names_that_say_it(name, family):
    assert family_of(name) == family


def test_a_user_mapping_comes_first():
    assert family_of("ensemble", {"ensemble": "google"}) == "google"
    assert family_of("gpt-4o", {"gpt-4o": "in-house"}) == "in-house"


def _table(rows):
    return pd.DataFrame(rows, columns=["judge", "model", "item_id", "game", "score"]).assign(variant="original", rerun=0)


def test_the_figure_on_a_table_whose_answer_is_known():
    rows = []
    for i in range(6):
        # own family (openai): 0.9 shown second, 0.7 shown first -> 0.8; others: 0.4 and 0.2 -> 0.3 / 0.5 -> 0.5
        rows += [("gpt-4o", "gpt-3.5-turbo", f"q{i}", 1, 0.7), ("gpt-4o", "gpt-3.5-turbo", f"q{i}", 2, 0.9),
                 ("gpt-4o", "claude-3-haiku", f"q{i}", 1, 0.2), ("gpt-4o", "claude-3-haiku", f"q{i}", 2, 0.4),
                 ("gpt-4o", "llama-3-8b", f"q{i}", 1, 0.5), ("gpt-4o", "llama-3-8b", f"q{i}", 2, 0.5),
                 ("gpt-4o", "vicuna-13b", f"q{i}", 1, 1.0), ("gpt-4o", "vicuna-13b", f"q{i}", 2, 1.0)]
    sp = self_preference(_table(rows), "gpt-4o")
    assert sp["known"] and sp["judge_family"] == "openai" and sp["both_orders"]
    assert sp["own"] == pytest.approx(0.8) and sp["others"] == pytest.approx(0.4) and sp["value"] == pytest.approx(0.4)
    assert sp["unknown_models"] == ["vicuna-13b"] and sp["other_models"] == ["claude-3-haiku", "llama-3-8b"]
    assert sp["lo"] == pytest.approx(0.4) and sp["hi"] == pytest.approx(0.4)  # every item the same: no spread
    assert not self_preference(_table(rows), "ensemble")["known"]
    only_own = self_preference(_table([r for r in rows if r[1] == "gpt-3.5-turbo"]), "gpt-4o")
    assert not only_own["known"] and "another known family" in only_own["note"]


@pytest.mark.slow  # the judge card of the embedded data (~1 s)
def test_on_the_embedded_arena_hard_data_with_a_mapping(demo_set):
    f = demo_set.frame
    plain = judge_card(f)["judges"]["ensemble"]
    assert not plain["self_preference"]["known"]
    assert not [r for r in card_rows(plain) if r[0] == "self-preference"]  # an unknown judge family adds no row
    card = judge_card(f, families={"ensemble": "google"})["judges"]["ensemble"]
    sp = card["self_preference"]
    canon = f[(f["variant"] == "original") & (f["rerun"] == 0) & f["score"].notna()]
    per = canon.groupby(["model", "item_id"])["score"].mean().reset_index()
    per["family"] = [family_of(m) for m in per["model"]]
    own = per.loc[per["family"] == "google", "score"].mean()
    others = per.loc[per["family"].notna() & (per["family"] != "google"), "score"].mean()
    assert sp["own"] == pytest.approx(own, abs=1e-12) and sp["others"] == pytest.approx(others, abs=1e-12)
    assert sp["lo"] < sp["value"] < sp["hi"] and len(sp["own_models"]) == 10
    assert sum(1 for m in pd.unique(per["model"]) if family_of(m) is None) == len(sp["unknown_models"]) == 9
    assert any(r[0] == "self-preference" and "confounded" in r[1] for r in card_rows(card))

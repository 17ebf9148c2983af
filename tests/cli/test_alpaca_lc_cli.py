"""``certify`` on AlpacaEval annotations shows AlpacaEval 2's length-controlled win rate, certified or not.

The expected numbers are alpaca_eval 0.6.6's own output (tests/data/alpaca_eval_lc/native_lc.json); the check
is deterministic (false-failure rate 0).
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from alpaca_lc_fixture import LC, NATIVE, write_model
from conftest import SHARED_DATA


@pytest.mark.slow
def test_certify_shows_the_lc_win_rate_for_certified_and_not_certified_models(tmp_path, capsys, monkeypatch):
    from biasbound.cli import main

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    root = tmp_path / "results"
    write_model(root, "alpaca-7b", "alpaca-7b")
    # two runs standing in as alpaca-7b's verbose/concise neighbours, so that alpaca-7b is certified
    write_model(root, "gemma-7b-it", "alpaca-7b_verbose")
    write_model(root, "vicuna-7b", "alpaca-7b_concise")
    write_model(root, "claude-2.1", "claude-2.1")
    shutil.copy(LC / "df_gamed.csv", root / "df_gamed.csv")
    out = tmp_path / "o"
    code = main(["certify", str(root), "--out", str(out), "--no-plots", "--no-progress", "--bootstrap-rounds", "50"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model")
    col = "alpaca_eval_length_controlled_win_rate"
    for m in ("alpaca-7b", "claude-2.1"):
        assert lb.loc[m, col] == pytest.approx(NATIVE[m]["length_controlled_winrate"], abs=1e-3)
    assert lb.loc["alpaca-7b", "certified_status"] == "certified"
    assert str(lb.loc["claude-2.1", "certified_status"]).startswith("not certified")
    assert "instruction difficulty and gamed baselines from the user's df_gamed.csv" in text
    # the terminal: the certified leaderboard (4 significant digits) and the "Not certified" table (2 decimals)
    assert f"{NATIVE['alpaca-7b']['length_controlled_winrate']:.4g}" in text
    assert f"{NATIVE['claude-2.1']['length_controlled_winrate']:.2f}" in text and "Not certified" in text


@pytest.mark.slow
def test_certify_without_df_gamed_leaves_the_column_empty_and_says_why(tmp_path, capsys, monkeypatch):
    from biasbound.cli import main

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    alpaca = SHARED_DATA / "alpaca_eval" / "results"
    out = tmp_path / "o"
    code = main(["certify", str(alpaca / "alpaca-7b"), str(alpaca / "alpaca-7b_verbose"),
                 str(alpaca / "alpaca-7b_concise"), "--out", str(out), "--no-plots", "--no-progress",
                 "--bootstrap-rounds", "50"])
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "alpaca_eval_length_controlled_win_rate is empty: AlpacaEval's GLM needs its df_gamed.csv" in text
    lb = pd.read_csv(out / "leaderboard.csv")
    assert "alpaca_eval_length_controlled_win_rate" not in lb.columns or lb[
        "alpaca_eval_length_controlled_win_rate"].isna().all()

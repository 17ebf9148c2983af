"""AlpacaEval 2's length-controlled win rate against AlpacaEval's own code.

The truth is ``tests/data/alpaca_eval_lc/native_lc.json``: what alpaca_eval 0.6.6's
``get_length_controlled_winrate`` returned on the full annotations (805 records) of 11 models of
AlpacaEval's repository, with the ``df_gamed.csv`` stand-in beside it (see its PROVENANCE.md and
``benchmarks/alpaca_lc_native.py``). Every check here is deterministic (no sampling: false-failure rate 0).
"""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from biasbound._exceptions import DataFormatError
from biasbound.data.alpaca_eval import load_alpaca_eval
from biasbound.data.alpaca_lc import GAMED_FILE, LC_COLUMN, length_controlled_win_rate, read_gamed

from alpaca_lc_fixture import ANNOTATOR, BASELINE, FEATURES, LC, NATIVE, write_results
from conftest import SHARED_DATA


@pytest.fixture(autouse=True)
def _no_hub_cache(tmp_path, monkeypatch):
    """No test sees a Hugging Face cache of the machine it runs on."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-empty"))
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)


def lc_of(js) -> dict[tuple[str, str], float]:
    for rec in js.frame.attrs["integration"]["native"]:
        if rec["column"] == LC_COLUMN:
            return {(v["judge"], v["model"]): v["value"] for v in rec["values"]}
    return {}


@pytest.mark.parametrize("model", sorted(NATIVE))
def test_lc_equals_alpaca_evals_own_code(model):
    """Acceptance: equal to AlpacaEval's number to 1e-3 (measured: 0.0 for all 11 models)."""
    grp = FEATURES[FEATURES["model"] == model].sort_values("index")
    got = length_controlled_win_rate(grp["len_1"], grp["len_2"], grp["preference"], read_gamed(LC / GAMED_FILE),
                                     is_baseline=model == BASELINE)
    assert got == pytest.approx(NATIVE[model]["length_controlled_winrate"], abs=1e-3)


def test_the_gamed_baselines_move_the_number():
    """The comparison above can fail: without the gamed baselines' regularisation the number moves by more than 1e-3."""
    gamed = read_gamed(LC / GAMED_FILE)
    grp = FEATURES[FEATURES["model"] == "gpt4_gamed"].sort_values("index")
    flipped = type(gamed)(rows=gamed.rows.assign(preference=1 - gamed.rows["preference"]), difficulty=gamed.difficulty,
                          source="flipped")
    got = length_controlled_win_rate(grp["len_1"], grp["len_2"], grp["preference"], flipped)
    assert abs(got - NATIVE["gpt4_gamed"]["length_controlled_winrate"]) > 1e-3


def test_reader_fills_the_column_from_a_file_beside_the_annotations(tmp_path):
    root = write_results(tmp_path / "results", ["alpaca-7b", "claude-2.1", BASELINE])
    shutil.copy(LC / GAMED_FILE, root / GAMED_FILE)
    js = load_alpaca_eval(root)
    got = lc_of(js)
    assert set(got) == {(ANNOTATOR, m) for m in ("alpaca-7b", "claude-2.1", BASELINE)}
    for (_, m), v in got.items():
        assert v == pytest.approx(NATIVE[m]["length_controlled_winrate"], abs=1e-3)
    remarks = js.frame.attrs["integration"]["remarks"]
    assert any("beside the annotations" in r and str(root / GAMED_FILE) in r for r in remarks)
    assert "position" not in js.frame.columns and "len_1" not in js.frame.columns


def test_reader_takes_alpaca_evals_download_in_the_hugging_face_cache(tmp_path, monkeypatch):
    root = write_results(tmp_path / "results", ["phi-2"])
    hub = tmp_path / "hub"
    repo = hub / "datasets--tatsu-lab--alpaca_eval"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123", encoding="utf-8")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    shutil.copy(LC / GAMED_FILE, repo / "snapshots" / "abc123" / GAMED_FILE)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    js = load_alpaca_eval(root)
    assert lc_of(js)[(ANNOTATOR, "phi-2")] == pytest.approx(NATIVE["phi-2"]["length_controlled_winrate"], abs=1e-3)
    assert any("Hugging Face cache" in r for r in js.frame.attrs["integration"]["remarks"])


def test_without_df_gamed_the_column_is_empty_and_the_reason_is_one_sentence():
    js = load_alpaca_eval(SHARED_DATA / "alpaca_eval" / "results")
    assert lc_of(js) == {}
    why = [r for r in js.frame.attrs["integration"]["remarks"] if r.startswith(LC_COLUMN)]
    assert len(why) == 1 and "is empty" in why[0] and GAMED_FILE in why[0] and why[0].count(". ") == 0


def test_a_short_file_is_computed_by_position_and_said(tmp_path):
    """The vendored annotations keep 16 of 805 records: AlpacaEval's rule still runs (difficulty by position)."""
    root = tmp_path / "results"
    shutil.copytree(SHARED_DATA / "alpaca_eval" / "results" / "alpaca-7b", root / "alpaca-7b")
    shutil.copy(LC / GAMED_FILE, root / GAMED_FILE)
    js = load_alpaca_eval(root)
    assert 0.0 < lc_of(js)[(ANNOTATOR, "alpaca-7b")] < 100.0
    assert any("holds 16 records" in r for r in js.frame.attrs["integration"]["remarks"])


@pytest.mark.parametrize(("text", "line", "what"), [
    ("index,preference,std_delta_len,instruction_difficulty\n0,0.5,0.1,0.2\n", None, "not_gamed_baseline"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,0.5,0.1,0.2,False\n1,0.5,0.1,x,False\n",
     3, "instruction_difficulty"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1.5,0.1,0.2,False\n", 2, "preference"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,0.5,0.1,0.2,maybe\n", 2,
     "not_gamed_baseline"),
])
def test_a_bad_df_gamed_names_the_file_and_line(tmp_path, text, line, what):
    root = write_results(tmp_path / "results", ["alpaca-7b"])
    (root / GAMED_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        load_alpaca_eval(root)
    msg = str(err.value)
    assert GAMED_FILE in msg and what in msg
    if line is not None:
        assert f"line {line}" in msg or f":{line}" in msg


def test_a_df_gamed_with_0_1_flags_is_refused(tmp_path):
    """AlpacaEval negates not_gamed_baseline with ~, which is wrong on 0/1 integers: refused, not guessed."""
    root = write_results(tmp_path / "results", ["alpaca-7b"])
    gamed = pd.read_csv(LC / GAMED_FILE)
    gamed.assign(not_gamed_baseline=gamed["not_gamed_baseline"].astype(int)).to_csv(root / GAMED_FILE, index=False)
    with pytest.raises(DataFormatError, match="not_gamed_baseline must be True or False"):
        load_alpaca_eval(root)

"""AlpacaEval and MT-Bench readers on real vendored files, their errors, and `certify` on them.

Expected values are computed in the tests from the raw JSON with the formats' own documented
rules (AlpacaEval: preference - 1; FastChat: g1/g2 winners in model labels), never copied from
the reader's output.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound import DataFormatError
from biasbound.cli import main
from biasbound.data.alpaca_eval import item_id, load_alpaca_eval
from biasbound.data.mt_bench import load_mt_bench
from conftest import SHARED_DATA

ALPACA = SHARED_DATA / "alpaca_eval" / "results"
ALPACA_DISCRETE = SHARED_DATA / "alpaca_eval" / "discrete" / "results"
MT = SHARED_DATA / "mt_bench"
PAIR = MT / "phi-3" / "model_judgment" / "gpt-4_pair.jsonl"
SINGLE = MT / "phi-3" / "model_judgment" / "gpt-4_single.jsonl"


def _annotations(model: str) -> list[dict]:
    return json.loads((ALPACA / model / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json").read_text())


# ----------------------------------------------------------------------------------------- AlpacaEval
def test_alpaca_eval_maps_annotator_model_variants_and_preferences():
    js = load_alpaca_eval(ALPACA)
    f = js.frame
    assert set(f["judge"]) == {"weighted_alpaca_eval_gpt4_turbo"}
    assert set(f["model"]) == {"alpaca-7b", "gpt-3.5-turbo-1106"}
    assert f.groupby(["model", "variant"]).size().to_dict() == {
        (m, v): 16 for m in ("alpaca-7b", "gpt-3.5-turbo-1106") for v in ("concise", "original", "verbose")}
    assert (f["game"] == 0).all() and (f["rerun"] == 0).all()
    for name, model, variant in (("alpaca-7b", "alpaca-7b", "original"), ("alpaca-7b_verbose", "alpaca-7b", "verbose"),
                                 ("gpt-3.5-turbo-1106_concise", "gpt-3.5-turbo-1106", "concise")):
        recs = _annotations(name)
        expected = {item_id(r["instruction"]): r["preference"] - 1.0 for r in recs}
        got = f[(f["model"] == model) & (f["variant"] == variant)].set_index("item_id")["score"].to_dict()
        assert got.keys() == expected.keys()
        for k, v in expected.items():
            assert got[k] == pytest.approx(v, abs=1e-12)
    # the variants judge the same instructions: every variant row has its original row
    orig = set(f.loc[f["variant"] == "original", ["model", "item_id"]].itertuples(index=False))
    assert set(f.loc[f["variant"] != "original", ["model", "item_id"]].itertuples(index=False)) <= orig
    notes = f.attrs["integration"]
    assert "preference" in notes["score_rule"] and any("does not record" in r for r in notes["remarks"])
    assert "baseline (generator_1): gpt4_1106_preview" in " ".join(notes["remarks"])


def test_alpaca_eval_discrete_annotator():
    js = load_alpaca_eval(ALPACA_DISCRETE)
    recs = json.loads((ALPACA_DISCRETE / "alpaca-7b" / "alpaca_eval_gpt4" / "annotations.json").read_text())
    assert set(js.frame["judge"]) == {"alpaca_eval_gpt4"}
    assert sorted(js.frame["score"].tolist()) == sorted(float(r["preference"] - 1) for r in recs)
    assert int((js.frame["score"] == 1.0).sum()) == sum(r["preference"] == 2 for r in recs) > 0


def _write(tmp: Path, records: list, name: str = "annotations.json") -> Path:
    p = tmp / "m" / "ann" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(records, indent=2))
    return p


def _rec(gen2: str, instr: str, pref) -> dict:
    return {"instruction": instr, "output_1": "a", "generator_1": "base", "output_2": "b", "generator_2": gen2,
            "annotator": "ann", "preference": pref}


def test_alpaca_eval_missing_draw_and_lonely_variant(tmp_path):
    p = _write(tmp_path, [_rec("x", "q1", None), _rec("x", "q2", 0), _rec("x", "q3", 1.25), _rec("y_verbose", "q1", 2)])
    js = load_alpaca_eval(p)
    f = js.frame.set_index(["model", "item_id"])["score"]
    assert math.isnan(f[("x", item_id("q1"))]) and f[("x", item_id("q2"))] == 0.5 and f[("x", item_id("q3"))] == 0.25
    assert f[("y_verbose", item_id("q1"))] == 1.0  # no base model 'y' loaded: its own model, not a variant
    counts = js.frame.attrs["integration"]["not_mapped"]
    assert counts["preference null or NaN (missing judgment)"] == 1
    assert counts["preference 0, AlpacaEval's legacy draw code (read as 0.5)"] == 1
    assert any("'y_verbose' read as its own model" in k for k in counts)
    assert js.report.missing == 1


def test_alpaca_eval_bad_preference_names_file_and_line(tmp_path):
    p = _write(tmp_path, [_rec("x", "q1", 1), _rec("x", "q2", 3)])
    line = next(i for i, t in enumerate(p.read_text().splitlines(), 1) if '"preference": 3' in t)
    start = max(i for i, t in enumerate(p.read_text().splitlines()[:line], 1) if t.strip() == "{")
    with pytest.raises(DataFormatError) as ei:
        load_alpaca_eval(p)
    assert ei.value.path == str(p) and ei.value.line == start and "preference 3" in str(ei.value)


# ----------------------------------------------------------------------------------------- MT-Bench
def _pair_records() -> list[dict]:
    return [json.loads(t) for t in PAIR.read_text().splitlines() if t.strip()]


def test_mt_bench_pair_games_are_both_orders_in_model_labels():
    js = load_mt_bench(PAIR)
    f = js.frame
    recs = _pair_records()
    score = {"model_1": 1.0, "model_2": 0.0}  # model_1 = phi-3 is the evaluated model, model_2 the baseline
    for game, key in ((1, "g1_winner"), (2, "g2_winner")):
        got = f[f["game"] == game].set_index("item_id")["score"]
        for r in recs:
            want = score.get(r[key], math.nan)  # tie and error are missing by default
            v = got[f"{r['question_id']}/turn{r['turn']}"]
            assert (math.isnan(v) and math.isnan(want)) or v == want
    assert set(f["judge"]) == {"gpt-4/pair"} and set(f["model"]) == {"phi-3"}
    n_err = sum((r["g1_winner"] == "error") + (r["g2_winner"] == "error") for r in recs)
    n_tie = sum((r["g1_winner"] == "tie") + (r["g2_winner"] == "tie") for r in recs)
    counts = f.attrs["integration"]["not_mapped"]
    assert counts["pairwise verdict 'error': missing"] == n_err == 3
    assert counts["pairwise verdict 'tie': missing (pass ties='half' to score it 0.5)"] == n_tie == 1
    assert js.report.missing == n_err + n_tie
    half = load_mt_bench(PAIR, ties="half").frame
    assert int((half["score"] == 0.5).sum()) == n_tie and int(half["score"].isna().sum()) == n_err


def test_mt_bench_single_scale_and_items():
    js = load_mt_bench(MT / "gpt-3.5-sad-happy")
    recs = [json.loads(t) for t in (MT / "gpt-3.5-sad-happy" / "model_judgment" / "gpt-4_single.jsonl").read_text().splitlines()]
    f = js.frame.set_index(["model", "item_id"])["score"]
    for r in recs:
        assert f[(r["model"], f"{r['question_id']}/turn{r['turn']}")] == pytest.approx((r["score"] - 1) / 9)
    assert any(r["score"] == 9.5 for r in recs)  # a non-integer rating is kept as is
    assert set(js.frame["judge"]) == {"gpt-4/single"} and (js.frame["game"] == 0).all()
    assert "(r - 1) / 9" in js.frame.attrs["integration"]["score_rule"]


def _single(model: str, qid: int, score, turn: int = 1) -> str:
    return json.dumps({"question_id": qid, "model": model, "judge": ["gpt-4", "single-v1"], "user_prompt": "u",
                       "judgment": "j", "score": score, "turn": turn, "tstamp": 0.0})


def test_mt_bench_single_unparsed_rating_reruns_and_bad_score(tmp_path):
    p = tmp_path / "gpt-4_single.jsonl"
    p.write_text("\n".join([_single("a", 1, 7), _single("a", 2, -1), _single("a", 1, 4)]) + "\n")
    js = load_mt_bench(p)
    f = js.frame.set_index(["item_id", "rerun"])["score"]
    assert f[("1/turn1", 0)] == pytest.approx(6 / 9) and f[("1/turn1", 1)] == pytest.approx(3 / 9)
    assert math.isnan(f[("2/turn1", 0)])
    assert js.frame.attrs["integration"]["not_mapped"] == {"single rating -1 (FastChat could not parse a rating): missing": 1}
    p.write_text("\n".join([_single("a", 1, 7), _single("a", 2, 11)]) + "\n")
    with pytest.raises(DataFormatError) as ei:
        load_mt_bench(p)
    assert (ei.value.path, ei.value.line) == (str(p), 2) and "outside the 0-10 scale" in str(ei.value)


def test_mt_bench_pairwise_all_mode_gives_both_models(tmp_path):
    def rec(m1, m2, w1, w2):
        return json.dumps({"question_id": 5, "model_1": m1, "model_2": m2, "g1_winner": w1, "g2_winner": w2,
                           "judge": ["gpt-4", "pair-v2"], "turn": 1})
    p = tmp_path / "gpt-4_pair.jsonl"
    p.write_text("\n".join([rec("a", "b", "model_1", "model_2"), rec("a", "c", "model_2", "model_2"),
                            rec("b", "c", "tie", "model_1")]) + "\n")
    f = load_mt_bench(p).frame.set_index(["model", "item_id", "game"])["score"]
    assert f[("a", "5/turn1/vs/b", 1)] == 1.0 and f[("b", "5/turn1/vs/a", 1)] == 0.0
    assert f[("a", "5/turn1/vs/b", 2)] == 0.0 and f[("b", "5/turn1/vs/a", 2)] == 1.0
    assert f[("c", "5/turn1/vs/a", 1)] == 1.0 and math.isnan(f[("b", "5/turn1/vs/c", 1)])
    p.write_text(rec("a", "b", "A", "model_1") + "\n")
    with pytest.raises(DataFormatError) as ei:
        load_mt_bench(p)
    assert ei.value.line == 1 and "'g1_winner'" in str(ei.value)


# ----------------------------------------------------------------------------------------- CLI
def _rms(x) -> float:
    x = np.asarray(x, dtype=float)
    return float(np.sqrt(np.mean(x**2)))


def test_cli_certifies_alpaca_eval_with_variant_neighbors(tmp_path, capsys):
    code = main(["certify", str(ALPACA), "--out", str(tmp_path), "--holdout", "0", "--no-plots", "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0
    assert "neighbours found in the data: variant:concise,variant:verbose" in out and "score rule" in out
    cert = json.loads((tmp_path / "certificate.json").read_text())
    per_model = {d["scope"]["model"]: d["scope"]["model_sensitivity"]["generators"]
                 for d in json.loads((tmp_path / "certificates.json").read_text())}
    # with no hold-out every neighbour enters the estimate: per model, Δ* = RMS over its items of
    # (preference - preference of the variant); the judge's figure is the max over its models
    for variant in ("verbose", "concise"):
        per = {}
        for model in ("alpaca-7b", "gpt-3.5-turbo-1106"):
            base = {r["instruction"]: r["preference"] for r in _annotations(model)}
            diffs = [base[r["instruction"]] - r["preference"] for r in _annotations(f"{model}_{variant}")]
            per[model] = _rms(diffs)
            got = per_model[model][f"variant:{variant}"]
            assert got["delta_star"] == pytest.approx(per[model], rel=1e-9) and got["m"] == len(diffs) == 16
        assert cert["scope"]["generators_table"][f"variant:{variant}"]["delta_star"] == pytest.approx(max(per.values()), rel=1e-9)


def test_cli_certifies_mt_bench_pairs_with_swap(tmp_path, capsys):
    code = main(["certify", str(PAIR), "--out", str(tmp_path), "--holdout", "0", "--no-plots", "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "neighbours found in the data: swap" in out and "3 × pairwise verdict 'error'" in out
    cert = json.loads((tmp_path / "certificate.json").read_text())
    s = {"model_1": 1.0, "model_2": 0.0}
    diffs = [s[r["g1_winner"]] - s[r["g2_winner"]] for r in _pair_records() if r["g1_winner"] in s and r["g2_winner"] in s]
    assert cert["scope"]["generators_table"]["swap"]["delta_star"] == pytest.approx(_rms(diffs), rel=1e-9)
    assert cert["scope"]["generators_table"]["swap"]["m"] == len(diffs)


def test_cli_malformed_tool_file_is_one_sentence_exit_2(tmp_path, capsys):
    p = tmp_path / "gpt-4_single.jsonl"
    p.write_text(_single("a", 1, 7) + "\n" + '{"question_id": 2, "model": "a", "judge": "gpt-4", "score": 3, "turn": 1}\n')
    code = main(["certify", str(p), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and f"{p}:2:" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_columns_map_a_long_table(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = []
    for m in ("sys-a", "sys-b"):
        for q in range(12):
            s = float(rng.integers(1, 11))
            rows.append({"grader": "g", "system": m, "question": f"q{q}", "style": "original", "rating": s})
            rows.append({"grader": "g", "system": m, "question": f"q{q}", "style": "bold", "rating": min(10.0, s + 1)})
    table = tmp_path / "t.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    bad = main(["certify", str(table), "--out", str(tmp_path / "x"), "--columns", "judge=grader,oops=system"])
    assert bad == 2 and "'--columns' option" in capsys.readouterr().err
    # without the mapping the loader cannot find item_id
    assert main(["certify", str(table), "--out", str(tmp_path / "y")]) == 2
    capsys.readouterr()
    code = main(["certify", str(table), "--out", str(tmp_path / "o"), "--columns",
                 "judge=grader,model=system,item_id=question,variant=style,score=rating", "--scale", "1,10",
                 "--generators", "variant:bold", "--holdout", "0", "--no-plots", "--bootstrap-rounds", "50"])
    assert code == 0
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    frame = pd.DataFrame(rows)
    wide = frame.pivot_table(index=["system", "question"], columns="style", values="rating")
    diff = (wide["original"] - wide["bold"]) / 9  # the 1-10 scale given by --scale
    expected = max(_rms(diff.xs(m, level="system")) for m in ("sys-a", "sys-b"))  # the judge's figure: max over models
    assert cert["scope"]["generators_table"]["variant:bold"]["delta_star"] == pytest.approx(expected, rel=1e-9)


def test_cli_llmbar_gold_accuracy_on_the_judge_card(tmp_path):
    """LLMBar's gold label is read as the human label: the judge's accuracy against it is on the judge card."""
    import json

    src = SHARED_DATA / "llmbar" / "judgments.csv.gz"
    small = tmp_path / "llmbar.csv"
    df = pd.read_csv(src, dtype=str)
    one = df[(df["judge"] == df["judge"].iloc[0]) & (df["strategy"] == df["strategy"].iloc[0])].head(200)
    one.to_csv(small, index=False)
    code = main(["certify", str(small), "--out", str(tmp_path / "o"), "--no-plots", "--bootstrap-rounds", "50"])
    assert code == 0
    card = json.loads((tmp_path / "o" / "summary.json").read_text())["judge_card"]["judges"]
    (judge,) = card
    agree = card[judge]["human_agreement"]["agreement"]
    kept = one.dropna(subset=["winner_orig_order"])
    assert agree["n"] == len(kept)
    assert agree["accuracy"] == pytest.approx((kept["winner_orig_order"] == kept["gold_label"]).mean())
    assert main(["certify", str(small), "--out", str(tmp_path / "p"), "--llmbar-view", "gold"]) == 2


def test_mt_bench_pair_file_from_a_single_answer_judge_is_not_a_swap(tmp_path):
    # FastChat's play_a_match_pair with a 'single' prompt writes g1_winner == g2_winner derived from
    # m1_score/m2_score (no turn): one grading per answer, not two presentation orders
    def rec(m1, m2, s1, s2):
        w = "tie" if abs(s1 - s2) <= 0.1 else ("model_1" if s1 > s2 else "model_2")
        return json.dumps({"question_id": 7, "model_1": m1, "model_2": m2, "g1_winner": w, "g2_winner": w,
                           "judge": ["gpt-4", "single-v1"], "g1_user_prompt": "u", "g1_judgment": "j",
                           "g2_user_prompt": "u", "g2_judgment": "j", "m1_score": s1, "m2_score": s2, "tstamp": 0.0})
    p = tmp_path / "gpt-4_pair.jsonl"
    p.write_text("\n".join([rec("a", "b", 8, 4), rec("a", "c", 7, 7)]) + "\n")
    js = load_mt_bench(p)
    f = js.frame
    assert (f["game"] == 0).all() and set(f["judge"]) == {"gpt-4/single"}
    got = f.set_index(["model", "item_id", "rerun"])["score"]
    assert got[("a", "7/turn1", 0)] == pytest.approx(7 / 9) and got[("a", "7/turn1", 1)] == pytest.approx(6 / 9)
    assert got[("b", "7/turn1", 0)] == pytest.approx(3 / 9) and got[("c", "7/turn1", 0)] == pytest.approx(6 / 9)
    assert sum(js.frame.attrs["integration"]["not_mapped"].values()) == 2


def test_cli_auto_leaves_out_models_without_the_neighbors(tmp_path, capsys):
    import shutil

    root = tmp_path / "results"
    shutil.copytree(ALPACA, root)
    lonely = root / "other-model" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    lonely.parent.mkdir(parents=True)
    lonely.write_text(json.dumps([{**_rec("other-model", r["instruction"], 1.5), "annotator": r["annotator"],
                                   "generator_1": r["generator_1"]} for r in _annotations("alpaca-7b")]))
    code = main(["certify", str(root), "--out", str(tmp_path / "o"), "--no-plots", "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0
    assert "left out (no variant:concise / variant:verbose neighbour in the data)" in out and "other-model" in out
    lb = pd.read_csv(tmp_path / "o" / "leaderboard.csv")
    certified = lb[lb["certified_status"] == "certified"]
    assert set(certified["model"]) == {"alpaca-7b", "gpt-3.5-turbo-1106"} and certified["certified"].notna().all()
    # the left-out model keeps its tool's own number (AlpacaEval's win rate: every preference 1.5 -> 50), not certified
    other = lb[lb["model"] == "other-model"].iloc[0]
    assert other["certified_status"] == "not certified: no neighbour of this model in the data"
    assert pd.isna(other["certified"]) and other["alpaca_eval_win_rate"] == pytest.approx(50.0)
    assert "Not certified — 1 model(s)" in out


def test_cli_truncated_alpaca_eval_file_names_the_line(tmp_path, capsys):
    src = (ALPACA / "alpaca-7b" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json").read_text()
    p = tmp_path / "results" / "alpaca-7b" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    p.parent.mkdir(parents=True)
    lines = src.splitlines()
    p.write_text("\n".join(lines[: len(lines) // 2]) + "\n")  # cut in the middle of a record
    assert main(["certify", str(tmp_path / "results"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{p}:" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_certifies_mt_bench_single_ratings_with_their_reruns(tmp_path, capsys):
    path = MT / "llama-3-8b" / "model_judgment" / "gpt-4_single-origin.jsonl"
    recs = [json.loads(t) for t in path.read_text().splitlines()]
    code = main(["certify", str(path), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots",
                 "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "neighbours found in the data: rerun" in out
    assert "4 × single rating -1 (FastChat could not parse a rating): missing" in out
    first: dict = {}
    diffs = []
    for r in recs:  # the first judgment of an item is f(D); a later one is a rerun neighbour
        key = (r["question_id"], r["turn"])
        if key not in first:
            first[key] = r["score"]
        elif first[key] != -1 and r["score"] != -1:
            diffs.append((first[key] - r["score"]) / 9)
    assert len(diffs) == 6 and _rms(diffs) > 0  # 10 repeated items, 4 of whose first rating is -1 (missing)
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert cert["scope"]["generators_table"]["rerun"]["delta_star"] == pytest.approx(_rms(diffs), rel=1e-9)
    assert cert["scope"]["generators_table"]["rerun"]["m"] == 6


def test_cli_auto_refuses_judges_with_different_neighbors(tmp_path, capsys):
    single = MT / "llama-3-8b" / "model_judgment" / "gpt-4_single-origin.jsonl"
    code = main(["certify", str(PAIR), str(single), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "different neighbours per judge (gpt-4/pair: swap; gpt-4/single: rerun)" in err
    assert len(err.strip().splitlines()) == 1

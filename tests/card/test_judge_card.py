"""The judge card (biasbound.card) on real data where every figure can be counted directly.

* LLMBar (both presentation orders of 885 items, 65 judge configurations): the card's swap flip rates are
  the per-configuration rates counted straight from the raw CSV (GPT-4/Swap_CoT 1.9%, Falcon/CoT 87.3%), in
  the same order; the Clopper–Pearson interval is the beta-quantile formula.
* Two synthetic judges written as LLMBar rows on LLMBar's real items, with the SAME accuracy (exactly 1/2):
  one always picks the answer shown first, one picks the same output in both orders. The position preference
  tells them apart (1 against 0.5 exactly).
* The embedded Arena-Hard data (76 models × 500 questions): the share of first-shown verdicts, the strict
  reversal rate and the flip rate against counts from the raw verdict letters; the bias-robust separability
  beside the bootstrap one; the pairs reversed by swapping every answer against model means recomputed here.

Everything is an exact count or formula on fixed data (no random test; false-failure rate 0).
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biasbound._exceptions import InputError
from biasbound.card import card_rows, check_card, judge_card, moved_figures, parse_threshold, read_card
from biasbound.data.tables import load_llmbar
from biasbound.pipeline import certify
from biasbound.testing import assert_judge_card

pytestmark = pytest.mark.slow  # end to end: judge cards of LLMBar and Arena-Hard data (~10 s on a loaded machine)


def _raw_llmbar(shared_data) -> pd.DataFrame:
    with gzip.open(shared_data / "llmbar" / "judgments.csv.gz", "rt", encoding="utf-8") as fh:
        return pd.read_csv(fh)


@pytest.fixture(scope="module")
def llmbar_card(shared_data):
    js = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz")
    return judge_card(js.frame)


def test_llmbar_flip_rates_are_the_published_per_configuration_rates(llmbar_card, shared_data) -> None:
    raw = _raw_llmbar(shared_data)
    raw["judge"] = raw["judge"] + "/" + raw["strategy"]
    both = raw.dropna(subset=["winner_orig_order", "winner_swapped_order"])
    counted = (both["winner_orig_order"] != both["winner_swapped_order"]).groupby(both["judge"]).agg(["sum", "size"])
    judges = llmbar_card["judges"]
    assert len(judges) == 65
    for name, c in judges.items():
        f = c["generators"]["swap"]["flip_rate"]
        assert (f["k"], f["n"]) == (int(counted.loc[name, "sum"]), int(counted.loc[name, "size"])), name
        # Clopper–Pearson from its beta-quantile definition
        k, n = f["k"], f["n"]
        lo = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
        hi = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
        assert f["lo"] == pytest.approx(lo, rel=1e-6, abs=1e-12) and f["hi"] == pytest.approx(hi, rel=1e-6)
    assert round(100 * judges["GPT-4/Swap_CoT"]["generators"]["swap"]["flip_rate"]["value"], 1) == 1.9
    assert round(100 * judges["Falcon/CoT"]["generators"]["swap"]["flip_rate"]["value"], 1) == 87.3
    # the same order as the counted rates
    mine = pd.Series({n: c["generators"]["swap"]["flip_rate"]["value"] for n, c in judges.items()})
    theirs = counted["sum"] / counted["size"]
    assert list(mine.sort_values(kind="stable").index) == list(theirs.reindex(mine.index).sort_values(kind="stable").index)
    # binary verdicts: every change of verdict is a reversal
    for c in judges.values():
        assert c["generators"]["swap"]["strict_reversal"]["k"] == c["generators"]["swap"]["flip_rate"]["k"]


def _synthetic_llmbar(raw: pd.DataFrame) -> pd.DataFrame:
    """Two judges on LLMBar's first 400 items (gold labels real), both exactly 50% accurate."""
    items = raw[raw["judge"] == raw["judge"].iloc[0]].drop_duplicates(["subset", "item"]).head(400).copy()
    gold = items["gold_label"].astype(int).to_numpy()
    first = items.assign(judge="always-first", strategy="x", winner_orig_order=1, winner_swapped_order=2)
    # picks gold on the first half of the items, the other output on the second half, in both orders
    pick = np.where(np.arange(len(items)) < len(items) // 2, gold, 3 - gold)
    consistent = items.assign(judge="consistent", strategy="x", winner_orig_order=pick, winner_swapped_order=pick)
    return pd.concat([first, consistent], ignore_index=True)


def test_position_preference_separates_always_first_from_consistent_at_equal_accuracy(shared_data, tmp_path) -> None:
    rows = _synthetic_llmbar(_raw_llmbar(shared_data))
    path = tmp_path / "two-judges.csv"
    rows.to_csv(path, index=False)
    frame = load_llmbar(path).frame
    accuracy = (frame["score"] == frame["human"]).groupby(frame["judge"]).mean()
    assert accuracy["always-first/x"] == accuracy["consistent/x"] == 0.5  # the same accuracy, exactly
    card = judge_card(load_llmbar(path).frame)["judges"]
    a, c = card["always-first/x"], card["consistent/x"]
    assert a["position_preference"]["value"] == 1.0 and a["position_preference"]["lo"] > 0.99
    assert c["position_preference"]["value"] == 0.5
    assert c["position_preference"]["lo"] < 0.5 < c["position_preference"]["hi"]
    assert a["position_preference"]["model_first_in_game"] == 1  # LLMBar: output 1 is shown first in game 1
    assert a["generators"]["swap"]["flip_rate"]["value"] == 1.0 and c["generators"]["swap"]["flip_rate"]["value"] == 0.0


@pytest.fixture(scope="module")
def arena(demo_set):
    res = certify(demo_set, tau=0.5, delta=0.01, neighbors="swap", seed=0, out=None, progress=False, plots=False,
                  bootstrap_rounds=200)
    return res, demo_set.frame


def test_arena_hard_card_figures_are_the_counts_of_the_raw_verdicts(arena) -> None:
    res, f = arena
    c = res.judge_card["judges"]["ensemble"]
    # first-shown preference from the verdict letters: A is shown first in both games
    v = f.loc[f["score"].notna() & f["game"].isin([1, 2]), "verdict"].str.strip()
    first, second = v.isin(["A>B", "A>>B"]).sum(), v.isin(["B>A", "B>>A"]).sum()
    pos = c["position_preference"]
    assert (pos["k"], pos["n"], pos["ties"]) == (first, first + second, int(v.isin(["A=B"]).sum()))
    assert pos["value"] > 0.5 and pos["lo"] > 0.5  # this judge prefers the first-shown answer
    assert pos["model_first_in_game"] == 2  # Arena-Hard: the judged model is B in game 1
    g1 = f[f["game"] == 1].set_index(["model", "item_id"])["score"]
    g2 = f[f["game"] == 2].set_index(["model", "item_id"])["score"]
    both = pd.concat([g1.rename("a"), g2.rename("b")], axis=1).dropna()
    sw = c["generators"]["swap"]
    assert sw["flip_rate"]["k"] == int((both["a"] != both["b"]).sum()) and sw["flip_rate"]["n"] == len(both)
    assert sw["strict_reversal"]["k"] == int((((both["a"] - 0.5) * (both["b"] - 0.5)) < 0).sum())
    assert sw["mean_shift"]["value"] == pytest.approx(float((both["b"] - both["a"]).mean()), abs=1e-12)
    text = dict(card_rows(c))
    assert "prefers the first-shown answer" in text and "strict reversal (swap)" in text and "flip rate (swap)" in text


def test_arena_hard_rank_statements(arena) -> None:
    res, f = arena
    rk = res.judge_card["judges"]["ensemble"]["ranks"]
    sep = rk["separability"]
    assert rk["pairs"] == 76 * 75 // 2
    assert 0 < sep["bias_robust"] <= sep["bootstrap"] <= 1 and sep["bias_robust"] <= sep["all_items"]
    # the pairs reversed by swapping every answer, recomputed from the model means of both games
    canon = f[f["game"] == 1].groupby("model")["score"]
    n = canon.count()
    g1 = f[f["game"] == 1].set_index(["model", "item_id"])["score"]
    g2 = f[f["game"] == 2].set_index(["model", "item_id"])["score"]
    swapped = g2.where(g2.notna() & g1.notna(), g1).groupby(level="model").sum() / n  # a missing swap keeps its score
    mean = canon.mean()
    models = list(mean.sort_values(ascending=False, kind="stable").index)
    expect = {(a, b) for i, a in enumerate(models) for b in models[i + 1:]
              if mean[a] > mean[b] and swapped[a] < swapped[b]}
    ties = {(a, b) for i, a in enumerate(models) for b in models[i + 1:]
            if mean[a] > mean[b] and swapped[a] == swapped[b]}
    assert {tuple(p) for p in rk["reversed_by"]["swap"]} == expect and len(expect) > 0
    assert {tuple(p) for p in rk["tied_by"]["swap"]} == ties
    # rank intervals: within 1..76, and each holds the model's rank on the full data (ties share the better
    # rank, as in the bootstrap; exact for these fixed data and seed)
    full = dict(zip(mean.index, stats.rankdata(-mean.to_numpy(), method="min")))
    for m in rk["models"]:
        lo, hi = rk["rank_interval"][m]
        assert 1 <= lo <= full[m] <= hi <= 76, (m, lo, full[m], hi)
    assert sum(row.count("R") for row in rk["matrix"]) == 2 * len(expect)


def test_what_the_data_add_on_arena_hard(arena) -> None:
    res, _ = arena
    c = res.judge_card["judges"]["ensemble"]
    wd = c["what_the_data_add"]
    cert = res.judges["ensemble"].certificate
    assert wd["violation_range_alone"] == cert.range_implied["bound"]
    assert wd["alpha_data"] == res.judges["ensemble"].calibration.alpha
    assert 0 < wd["alpha_range_alone"] < wd["alpha_data"] and wd["alpha_ratio"] == pytest.approx(
        wd["alpha_data"] / wd["alpha_range_alone"])
    # the range alone at its own α holds at the same σ; the data's α would not hold on the range alone
    from biasbound.bounds import AlmostSure, Knowledge, violation_bound

    k = Knowledge.of({"range": [AlmostSure(cert.range_implied["A"], shift_ratio=cert.range_implied.get("shift_ratio"))]})
    cal = res.judges["ensemble"].calibration
    assert violation_bound(cal.tau, wd["alpha_range_alone"], cal.sigma, cal.dim, k) <= cal.delta
    assert violation_bound(cal.tau, wd["alpha_data"], cal.sigma, cal.dim, k) > cal.delta


def test_a_bias_radius_of_the_whole_range_says_so(arena) -> None:
    """Known truth: 14% of the swaps reverse a verdict outright (|Δ| = 1, the whole 0–1 range) and δ = 0.01, so no
    radius below 1 can hold; the card must say the radius is the whole range — and not say it below the range."""
    res, f = arena
    c = res.judge_card["judges"]["ensemble"]
    br = c["bias_radius"]
    assert c["generators"]["swap"]["strict_reversal"]["lo"] > br["delta"]
    assert br["radius"] == br["range_max"] == 1.0
    text = dict(card_rows(c))[f"bias radius at δ = {br['delta']:g}"]
    assert text.startswith("1 = the largest change the score range allows (1): more than δ of the neighbours")
    smaller = {**c, "bias_radius": {**br, "radius": 0.75}}
    assert "the largest change" not in dict(card_rows(smaller))[f"bias radius at δ = {br['delta']:g}"]


def test_thresholds_and_the_pytest_helper(llmbar_card, tmp_path) -> None:
    assert parse_threshold("flip_rate>0.1") == ("flip_rate", ">", 0.1)
    assert parse_threshold(" flip_rate:rerun <= 0.05 ") == ("flip_rate:rerun", "<=", 0.05)
    for bad in ("flip_rate", "flip_rate>>0.1", "nonsense>0.1", "flip_rate>x"):
        with pytest.raises(InputError):
            parse_threshold(bad)
    two = {**llmbar_card, "judges": {k: llmbar_card["judges"][k] for k in ("GPT-4/Swap_CoT", "Falcon/CoT")}}
    failed = check_card(two, ["flip_rate>0.1"])
    assert len(failed) == 1 and failed[0].startswith("judge Falcon/CoT: flip_rate = 0.8726")
    with pytest.raises(InputError, match="rerun"):
        check_card(two, ["flip_rate:rerun>0.1"])  # the data hold no reruns: named, not skipped
    assert_judge_card(two, "flip_rate>0.9", "position_preference>0.95")
    with pytest.raises(AssertionError, match="Falcon/CoT: position_preference = 0.934"):
        assert_judge_card(two, "position_preference>0.6")
    assert_judge_card(two, "position_preference>0.6", judge="GPT-4/Swap_CoT")
    path = tmp_path / "summary.json"
    path.write_text(json.dumps({"judge_card": two}))
    assert read_card(path)["judges"].keys() == two["judges"].keys()
    assert moved_figures(two, two) == []
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(InputError, match="no judge card"):
        read_card(tmp_path / "bad.json")


def test_readme_pytest_helper_snippet_runs(llmbar_card, tmp_path, monkeypatch) -> None:
    """The compare guide's `assert_judge_card` example, run on a folder holding a position-consistent judge's card
    (passes) and a position-biased one's (fails, naming the figure)."""
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "compare.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```py\n(.*?)```", guide, flags=re.S)
    monkeypatch.chdir(tmp_path)
    for judge, passes in (("GPT-4/Swap_CoT", True), ("Falcon/CoT", False)):
        (tmp_path / "cert-new").mkdir(exist_ok=True)
        card = {**llmbar_card, "judges": {judge: llmbar_card["judges"][judge]}}
        (tmp_path / "cert-new" / "summary.json").write_text(json.dumps({"judge_card": card}))
        ns: dict = {}
        exec(compile(code, "docs/guides/compare.md", "exec"), ns)  # noqa: S102 - our own guide
        if passes:
            ns["test_judge_is_position_consistent"]()
        else:
            with pytest.raises(AssertionError, match="flip_rate = 0.8726"):
                ns["test_judge_is_position_consistent"]()


def test_continuous_preferences_flip_when_the_preferred_side_changes(shared_data) -> None:
    """AlpacaEval's weighted annotator (continuous preferences, verbose/concise variants): a flip is a change
    of the side of 0.5, counted here from the raw table; any tiny change of a continuous score is not a flip."""
    from biasbound.data.alpaca_eval import load_alpaca_eval

    js = load_alpaca_eval(shared_data / "alpaca_eval" / "results")
    f = js.frame
    card = judge_card(f)["judges"]
    (c,) = card.values()
    assert c["verdict_rule"].startswith("side of 0.5")
    canon = f[f["variant"] == "original"].set_index(["model", "item_id"])["score"]
    for name in ("verbose", "concise"):
        nb = f[f["variant"] == name].set_index(["model", "item_id"])["score"]
        both = pd.concat([canon.rename("a"), nb.rename("b")], axis=1).dropna()
        k = int((np.sign(both["a"] - 0.5) != np.sign(both["b"] - 0.5)).sum())
        fr = c["generators"][f"variant:{name}"]["flip_rate"]
        assert (fr["k"], fr["n"]) == (k, len(both)) and (both["a"] != both["b"]).sum() > k
        assert c["generators"][f"variant:{name}"]["mean_shift"]["value"] == pytest.approx(float((both["b"] - both["a"]).mean()))
    assert any(label == "mean signed shift (variant:verbose)" and "verbose answers" in text for label, text in card_rows(c))


def test_rerun_flip_rate_and_cost_per_1000_judgments() -> None:
    """A hand-made table: 3 of 10 items change level on the rerun; 40 calls, 30,000 tokens and $0.90 for the
    60 judgments → 666.7 calls, 500,000 tokens and $15 per 1,000."""
    rows = []
    for m in ("a", "b"):
        for i in range(10):
            s0 = (i % 5) / 4
            s1 = s0 if i >= 3 else 1 - s0 if s0 != 0.5 else 0.0
            rows += [(m, f"q{i}", 0, s0), (m, f"q{i}", 1, s0), (m, f"q{i}", 2, s1 if m == "a" else s0)]
    f = pd.DataFrame(rows, columns=["model", "item_id", "rerun", "score"]).assign(
        judge="j", variant="original", game=0, verdict=None, source="t", line=range(60))
    usage = {"j": {"calls": 40, "prompt_tokens": 20000, "completion_tokens": 10000, "cost": 0.9}}
    c = judge_card(f, usage=usage)["judges"]["j"]
    r = c["generators"]["rerun"]["flip_rate"]
    assert (r["k"], r["n"]) == (3, 40)  # model a, rerun 2 only: 3 of the 40 rerun pairs
    assert c["generators"]["rerun"]["strict_reversal"] is None  # single-answer discrete scores: no direction
    assert c["position_preference"] is None
    cost = c["cost"]
    assert cost["known"] and cost["calls_per_1000"] == pytest.approx(40 / 60 * 1000)
    assert cost["tokens_per_1000"] == pytest.approx(500000) and cost["money_per_1000"] == pytest.approx(15.0)
    assert check_card({"judges": {"j": c}}, ["rerun_flip_rate>0.05"]) == ["judge j: rerun_flip_rate = 0.075 > 0.05"]
    assert judge_card(f)["judges"]["j"]["cost"]["known"] is False


def test_mt_bench_pairwise_position_preference_from_fastchat_labels(shared_data) -> None:
    """FastChat's g1/g2 winners are in original labels and model_1 is assistant A in g1: the first-shown share
    counted from the raw records (27 of the 36 decisive verdicts)."""
    from biasbound.data.mt_bench import load_mt_bench

    path = shared_data / "mt_bench" / "phi-3" / "model_judgment" / "gpt-4_pair.jsonl"
    first = decisive = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        for game, key in ((1, "g1_winner"), (2, "g2_winner")):
            if rec[key] in ("model_1", "model_2"):
                decisive += 1
                first += (game == 1) == (rec[key] == "model_1")
    (c,) = judge_card(load_mt_bench(path, skip_bad=True).frame)["judges"].values()
    pos = c["position_preference"]
    assert (pos["k"], pos["n"]) == (first, decisive) == (27, 36)
    assert pos["model_first_in_game"] == 1


def test_judges_side_by_side(llmbar_card) -> None:
    """A panel's judges in one table: one row per judge with its card's figures (the terminal prints it)."""
    from rich.console import Console

    from biasbound.card import panel_rows
    from biasbound.commands.certify import print_judge_card

    two = {"judges": {k: llmbar_card["judges"][k] for k in ("GPT-4/Swap_CoT", "Falcon/CoT")}}
    rows = {r["judge"]: r for r in panel_rows(two)}
    for name, c in two["judges"].items():
        assert rows[name]["flip_rate"] == c["generators"]["swap"]["flip_rate"]["value"]
        assert rows[name]["position_preference"] == c["position_preference"]["value"]
    two["panel"] = panel_rows(two)
    console = Console(width=200, record=True)
    print_judge_card(two, console)
    text = console.export_text()
    assert "Judges side by side (2" in text and "87.3%" in text and "1.9%" in text and "93.4%" in text

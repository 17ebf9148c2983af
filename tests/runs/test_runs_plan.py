"""``biasbound plan`` (task "runs"): α per m from a pilot run, and what m neighbours per model cost.

The known truths: at m = every item the census α is exactly what ``certify`` gives on the pilot with
that generator alone; at the pilot's m the call and token counts are exactly the pilot's. No statistics.
"""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest
import yaml

from conftest import SHARED_DATA
from biasbound import InputError
from biasbound.cli import main
from biasbound.data.tables import from_frame
from biasbound.pipeline import certify
from biasbound.planning import plan
from biasbound.runner import run
from biasbound.testing import SyntheticServerConfig, serve_in_thread

DATA = SHARED_DATA / "arena-hard-v0.1"
pytestmark = pytest.mark.slow  # a pilot run and several certify calls: about a minute in all


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pilot")
    with serve_in_thread(SyntheticServerConfig()) as server:
        cfg = {"data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                        "baseline": "gpt-4-0314", "n_items": 16, "include_baseline": True},
               "judge": {"base_url": server.url, "model": "biasbound-synthetic-judge", "name": "synthetic",
                         "api_key_env": "BIASBOUND_TEST_UNSET_KEY",
                         "prices": {"prompt_per_million": 1.0, "completion_per_million": 2.0}},
               "neighbors": {"generators": ["swap", "format"], "neighbors_per_generator": 8},
               "bootstrap_rounds": 100, "plots": False, "seed": 4, "output": str(tmp / "out")}
        (tmp / "p.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
        run(tmp / "p.yaml", progress=False)
    return tmp / "out"


def test_plan_reference_is_the_census_and_costs_are_the_pilots(pilot) -> None:
    p = plan(pilot, grid=[2, 4, 8, 16])
    frame = pd.read_parquet(pilot / "judgments.parquet")
    swap = p.generators["swap"]
    assert [r["m"] for r in swap.rows] == [2, 4, 8, 16] and swap.census
    direct = certify(from_frame(frame[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]],
                                source="x", scale=(0.0, 1.0), judge="synthetic"),
                     neighbors=["swap"], seed=4, progress=False, plots=False, bootstrap_rounds=100, baseline="gpt-4-0314")
    assert swap.reference_alpha == pytest.approx(direct.judges["synthetic"].calibration.alpha, rel=1e-12)
    assert swap.target_alpha == pytest.approx(0.95 * swap.reference_alpha)
    alphas = [r["alpha"] for r in swap.rows]
    assert swap.chosen_m == next(r["m"] for r in swap.rows if r["alpha"] >= swap.target_alpha)
    assert all(a is not None and 0 < a <= 1 for a in alphas)

    fmt = p.generators["format"]
    assert [r["m"] for r in fmt.rows] == [2, 4, 8]  # the pilot drew 8 per model: no m beyond
    # format does not apply to every item: the drawn items without a neighbour count at the range bound, and
    # every m still certifies (the plan had said "only 0 hold a neighbour row" when it left out the item ids)
    assert all(r["alpha"] is not None and "reason" not in r for r in fmt.rows), fmt.rows
    top = fmt.rows[-1]
    rows = frame[frame["variant"] == "format"]
    assert top["judge_calls"] == len(rows)  # every applied format neighbour of the pilot, one call each
    con = sqlite3.connect(pilot / "judge_cache.sqlite")
    payloads = [json.loads(con.execute("SELECT payload FROM judge_calls WHERE key = ?", (k,)).fetchone()[0])
                for k in rows["cache_key"]]
    con.close()
    assert top["prompt_tokens"] == sum(x["prompt_tokens"] for x in payloads)
    assert top["completion_tokens"] == sum(x["completion_tokens"] for x in payloads)
    assert top["cost"] == pytest.approx(sum(x["cost"] for x in payloads), rel=1e-9)
    assert top["neighbours"] == 8 * p.models


def test_plan_with_an_absolute_target_and_the_cli(pilot, tmp_path, capsys) -> None:
    p = plan(pilot, alpha=1.0, grid=[4, 8])
    assert all(g.chosen_m is None or g.chosen()["alpha"] >= 1.0 for g in p.generators.values())
    assert main(["plan", str(pilot), "--json", "--grid", "4,8", "--generators", "format",
                 "--out", str(tmp_path / "plan.json")]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == json.loads((tmp_path / "plan.json").read_text())
    assert list(doc["generators"]) == ["format"] and [r["m"] for r in doc["generators"]["format"]["grid"]] == [4, 8]
    assert main(["plan", str(pilot), "--generators", "format", "--grid", "4,8"]) == 0
    printed = capsys.readouterr().out
    assert "The plan: the smallest m per model reaching the target" in printed and "format" in printed


@pytest.mark.parametrize(("args", "words"), [
    (["--grid", "1,x"], "--grid"),
    (["--alpha", "1.5"], "--alpha"),
    (["--generators", "paraphrase"], "'paraphrase'"),
    (["--looks", "8,4"], "--looks"),
    (["--looks", "4,8", "--min-gain", "2"], "--min-gain"),
])
def test_plan_bad_options_are_one_sentence(pilot, capsys, args, words) -> None:
    assert main(["plan", str(pilot), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_plan_needs_a_run_folder(tmp_path, capsys) -> None:
    assert main(["plan", str(tmp_path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert str(tmp_path) in err and "run_summary.json" in err


def test_plan_on_a_census_set_ends_at_the_census_alpha(demo_set) -> None:
    """A slice of the embedded set (every swap judged): at m = every item the plan's α is certify's census α."""
    frame = demo_set.frame
    models = sorted(frame["model"].unique())[:4]
    items = sorted(frame["item_id"].unique())[:60]
    sub = frame[frame["model"].isin(models) & frame["item_id"].isin(items)]
    jset = from_frame(sub[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]], source="slice",
                      scale=(0.0, 1.0), judge=str(sub["judge"].iloc[0]))
    from biasbound.planning import plan_judgments

    p = plan_judgments(jset, grid=[10, 30, 60], seed=1, bootstrap_rounds=50)
    swap = p.generators["swap"]
    census = certify(jset, neighbors=["swap"], seed=1, progress=False, plots=False, bootstrap_rounds=50)
    assert swap.reference_alpha == pytest.approx(census.judges[jset.frame["judge"].iloc[0]].calibration.alpha, rel=1e-12)
    assert [r["judge_calls"] for r in swap.rows] == [40, 120, 240]  # 4 models × m, one judgment per neighbour
    # a sample's α stays below the census α on the band's event (probability >= 1 - β = 0.95 per row, so this
    # line could fail for at most ~10% of seeds; deterministic at seed 1)
    assert all(r["alpha"] is not None and r["alpha"] <= swap.reference_alpha + 1e-12 for r in swap.rows[:-1])


def test_plan_needs_a_pilot_or_demo_not_both(pilot, capsys) -> None:
    assert main(["plan"]) == 2
    assert "--demo" in capsys.readouterr().err
    assert main(["plan", str(pilot), "--demo"]) == 2
    assert "both" in capsys.readouterr().err


def test_plan_over_several_draws_chooses_an_m_every_draw_reaches(demo_set) -> None:
    frame = demo_set.frame
    models = sorted(frame["model"].unique())[:3]
    items = sorted(frame["item_id"].unique())[:40]
    sub = frame[frame["model"].isin(models) & frame["item_id"].isin(items)]
    jset = from_frame(sub[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]], source="slice",
                      scale=(0.0, 1.0), judge=str(sub["judge"].iloc[0]))
    from biasbound.planning import plan_judgments

    p = plan_judgments(jset, grid=[5, 10, 20, 40], draws=3, bootstrap_rounds=50)
    rows = p.generators["swap"].rows
    for r in rows[:-1]:
        assert r["draws"] == 3 and r["alpha_min"] <= r["alpha"] <= r["alpha_max"]
    assert "alpha_min" not in rows[-1] or rows[-1]["draws"] == 1  # the census is the same for every order
    target = p.generators["swap"].target_alpha
    chosen = p.generators["swap"].chosen_m
    assert chosen == next(r["m"] for r in rows if r.get("alpha_min", r["alpha"]) >= target)
    with pytest.raises(InputError, match="--draws"):
        plan_judgments(jset, draws=0)


def _pilot_config(tmp, url: str, out: str) -> dict:
    return {"data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                     "baseline": "gpt-4-0314", "n_items": 16, "include_baseline": True},
            "judge": {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic",
                      "api_key_env": "BIASBOUND_TEST_UNSET_KEY"},
            "neighbors": {"generators": ["swap", "format"], "neighbors_per_generator": 3},
            "bootstrap_rounds": 100, "plots": False, "seed": 4, "output": str(tmp / out)}


def test_run_takes_the_plan_as_its_budget(pilot, tmp_path, capsys) -> None:
    """`run --budget PLAN.json` judges the planned m per model of the generator it draws; the plan's calls for
    that m are the calls the run spends on it (the issue asks within 25%; a census generator needs no budget)."""
    # --within 0: the plan asks for the pilot's own α, reached at the pilot's m = 8 (not the config's 3); the
    # budgeted run draws with the pilot's seed, so it judges the pilot's 8 items per model again (calls as planned;
    # the 25% of the issue allows for another draw's share of items the perturbation does not apply to)
    assert main(["plan", str(pilot), "--grid", "4,8", "--within", "0", "--generators", "format",
                 "--out", str(tmp_path / "plan.json")]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "plan.json").read_text())
    m = doc["generators"]["format"]["chosen_m"]
    assert m == 8, doc["generators"]["format"]
    with serve_in_thread(SyntheticServerConfig()) as server:
        (tmp_path / "r.yaml").write_text(yaml.safe_dump(_pilot_config(tmp_path, server.url, "budgeted")), encoding="utf-8")
        code = main(["run", str(tmp_path / "r.yaml"), "--budget", str(tmp_path / "plan.json"), "--no-progress"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((tmp_path / "budgeted" / "run_summary.json").read_text())
    assert summary["config"]["neighbors"]["neighbors_per_generator"] == m  # the config said 3
    assert summary["config"]["neighbors"]["budget_from"] == str(tmp_path / "plan.json")
    fmt = next(g for g in (summary["generators"].values() if isinstance(summary["generators"], dict)
                           else summary["generators"]) if g["generator"] == "format")
    assert fmt["m"] == m
    judged = pd.read_parquet(tmp_path / "budgeted" / "judgments.parquet")
    spent = int((judged["variant"] == "format").sum())
    planned = doc["generators"]["format"]["chosen"]["judge_calls"]
    assert abs(spent - planned) <= 0.25 * planned, (spent, planned)


@pytest.mark.parametrize(("plan_doc", "words"), [
    ("not json", "not a readable plan"),
    ({"generators": {}}, "not a 'biasbound plan'"),
    ({"settings": {"tau": 0.5}, "generators": {"swap": {"chosen_m": 5}}}, "plans no m for the generator 'format'"),
    ({"settings": {}, "generators": {"format": {"chosen_m": None}}}, "at no m of its grid"),
    ({"settings": {"tau": 0.3}, "generators": {"format": {"chosen_m": 4}}}, "a plan made for tau = 0.3"),
    ({"settings": {}, "generators": {"format": {"chosen_m": 1.5}}}, "chosen_m must be an integer >= 2"),
])
def test_run_budget_refuses_a_plan_that_does_not_fit_in_one_sentence(tmp_path, capsys, plan_doc, words) -> None:
    (tmp_path / "plan.json").write_text(plan_doc if isinstance(plan_doc, str) else json.dumps(plan_doc), encoding="utf-8")
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(_pilot_config(tmp_path, "http://127.0.0.1:9/v1", "x")), encoding="utf-8")
    assert main(["run", str(tmp_path / "r.yaml"), "--budget", str(tmp_path / "plan.json"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and "plan.json" in err
    assert not (tmp_path / "x").exists()  # refused before any judge call


def test_run_budget_is_the_last_look_of_a_sequential_run(tmp_path) -> None:
    from biasbound.config import load_config, with_plan_budget

    cfg = _pilot_config(tmp_path, "http://127.0.0.1:9/v1", "x")
    cfg["neighbors"] = {"generators": ["format"], "sequential": {"looks": [2, 4, 8, 16]}}
    cfg["calibration"] = {"beta": 0.05}
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    (tmp_path / "plan.json").write_text(json.dumps({"settings": {}, "generators": {"format": {"chosen_m": 6}}}))
    budgeted = with_plan_budget(load_config(tmp_path / "r.yaml"), tmp_path / "plan.json")
    assert budgeted.neighbors.looks == (2, 4, 6) and budgeted.neighbors.m == 6


def test_plan_reads_the_bias_radius_and_flip_width_and_says_when_a_census_would_not_do(pilot, capsys) -> None:
    """Targets beyond α: at the census (swap's last grid row) the plan's bias radius and flip-rate interval width
    are certify's own on the pilot with swap alone; a radius no m reaches is answered honestly — even a census
    does not reach it (swap), or the pilot's draw is too small to tell (format)."""
    frame = pd.read_parquet(pilot / "judgments.parquet")
    direct = certify(from_frame(frame[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]],
                                source="x", scale=(0.0, 1.0), judge="synthetic"),
                     neighbors=["swap"], seed=4, progress=False, plots=False, bootstrap_rounds=100, baseline="gpt-4-0314")
    card = direct.judge_card["judges"]["synthetic"]
    easy = plan(pilot, grid=[2, 4, 8, 16], bias_radius=1.0, flip_width=1.0)
    census = easy.generators["swap"].rows[-1]
    assert census["m"] == 16 and census["bias_radius"] == card["bias_radius"]["radius"]
    flip = card["generators"]["swap"]["flip_rate"]
    assert census["flip_rate_width"] == pytest.approx(flip["hi"] - flip["lo"], abs=1e-12)
    plain = plan(pilot, grid=[2, 4, 8, 16])
    assert {g: p.chosen_m for g, p in easy.generators.items()} == {g: p.chosen_m for g, p in plain.generators.items()}
    hard = plan(pilot, grid=[2, 4, 8, 16], bias_radius=1e-6)
    assert all(p.chosen_m is None for p in hard.generators.values())
    assert hard.generators["swap"].why_not.startswith("not reached even by a census")
    assert hard.generators["format"].why_not.startswith("not reached by m ≤ 8")
    assert hard.to_dict()["generators"]["swap"]["targets"] == {"bias_radius": 1e-6}
    assert main(["plan", str(pilot), "--grid", "2,4", "--bias-radius", "1e-6"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "not reached even by a census" in printed and "bias radius" in printed


@pytest.mark.parametrize("args", [["--bias-radius", "0"], ["--flip-width", "1.5"]])
def test_plan_target_options_out_of_range_are_one_sentence(pilot, capsys, args) -> None:
    assert main(["plan", str(pilot), *args]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"The '{args[0]}' option of plan must be in (0, 1]" in err and "Traceback" not in err

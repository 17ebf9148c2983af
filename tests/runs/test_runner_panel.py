"""A panel in one run: two synthetic judges with different, known position biases judge the same
items and neighbours; one certify writes per-judge certificates and the panel leaderboard.

Truth is exact: each server's formula is evaluated here without HTTP on the same items, so the
swap sensitivity (a census: both games of every item are judged) and the format sensitivity (on
the perturbations the run drew, read from neighbors.jsonl) are known for each judge.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from biasbound import DataFormatError
from biasbound.config import load_config, parse_config
from biasbound.judge.prompts import render_pairwise
from biasbound.neighbors.base import JudgeItem
from biasbound.neighbors.registry import make_generator
from biasbound.rubric import default_rubric
from biasbound.runner import _sub_seed, load_items, run
from biasbound.testing import SyntheticJudge, SyntheticServerConfig, serve_in_thread
from biasbound.testing.synthetic import SyntheticJudgeConfig
from conftest import SHARED_DATA

pytestmark = pytest.mark.slow  # end to end: a panel run against synthetic servers

DATA = SHARED_DATA / "arena-hard-v0.1"
GAME1 = {"B>>A": 1.0, "B>A": 0.75, "A=B": 0.5, "A>B": 0.25, "A>>B": 0.0}
N_ITEMS = 16
#: Judge "fair" has no position bias; judge "biased" strongly favours Assistant A.
JUDGES = {"fair": SyntheticJudgeConfig(position_bias=0.0, jitter_sd=0.0),
          "biased": SyntheticJudgeConfig(position_bias=1.5, jitter_sd=0.0)}


def _endpoint(url: str, name: str, temperature: float) -> dict:
    return {"base_url": url, "model": f"synthetic-{name}", "name": name, "api_key_env": "BIASBOUND_TEST_UNSET_KEY",
            "concurrency": 8, "sampling": {"temperature": temperature, "seed": 0},
            "prices": {"prompt_per_million": 1.0 if name == "fair" else 3.0, "completion_per_million": 2.0},
            "retry": {"timeout": 10.0, "backoff_initial": 0.01, "backoff_max": 0.05, "backoff_jitter": 0.01}}


def _config(folder: Path, judges: list[dict], output: str) -> Path:
    cfg = {"data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                    "baseline": "gpt-4-0314", "n_items": N_ITEMS, "include_baseline": True},
           "judges": judges, "neighbors": {"generators": ["swap", "format"], "neighbors_per_generator": 8},
           "calibration": {"holdout": 0.0}, "bootstrap_rounds": 200, "plots": False, "seed": 3, "output": output}
    path = folder / f"{output}.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("panel")
    with serve_in_thread(SyntheticServerConfig(judge=JUDGES["fair"], model="synthetic-fair")) as fair, \
            serve_in_thread(SyntheticServerConfig(judge=JUDGES["biased"], model="synthetic-biased")) as biased:
        path = _config(folder, [_endpoint(fair.url, "fair", 0.0), _endpoint(biased.url, "biased", 0.7)], "both")
        result = run(path, progress=False)
        alone = run(_config(folder, [_endpoint(biased.url, "biased", 0.7)], "alone"), progress=False)
    return result, alone, path


def _score(judge: SyntheticJudge, item: JudgeItem) -> float:
    msgs = render_pairwise(item.question, item.answer_a, item.answer_b, rubric=item.rubric)
    s = GAME1[judge.judgment(msgs, 0)["overall"]]
    return s if item.game == 1 else 1.0 - s


def _truth(cfg, name: str) -> dict[str, dict[str, float]]:
    """Per model: the swap and format Δ* of judge ``name`` (format over the items the run drew)."""
    judge = SyntheticJudge(JUDGES[name])
    ctx = load_items(cfg)
    rubric = default_rubric("pairwise")
    drawn = [json.loads(t) for t in (cfg.output / "neighbors.jsonl").read_text().splitlines()]
    gen = make_generator("format", seed=_sub_seed(cfg.seed, "generator", "format"))
    out = {}
    for model in ctx.models:
        items = {q: JudgeItem(q, ctx.questions[q], ctx.answers[model][q], ctx.baseline[q], model, rubric, game=1)
                 for q in ctx.item_ids if q in ctx.answers[model]}
        swap = [_score(judge, it) - _score(judge, it.with_changes(game=2)) for it in items.values()]
        fmt = []
        for d in drawn:
            if d["generator"] == "format" and d["model"] == model and d["status"] == "applied":
                it = items[d["item_id"]]
                fmt.append(_score(judge, it) - _score(judge, gen.perturb(it).item))
        out[model] = {"swap": float(np.sqrt(np.mean(np.square(swap)))),
                      "variant:format": float(np.sqrt(np.mean(np.square(fmt))))}
    return out


def test_panel_judges_same_items_and_neighbors_and_writes_one_panel_report(panel):
    result, _, _ = panel
    out = result.config.output
    frame = result.judgments.frame
    assert set(frame["judge"]) == {"fair", "biased"}
    keys = ["model", "item_id", "variant", "rerun", "game"]
    a = frame[frame["judge"] == "fair"][keys].sort_values(keys).reset_index(drop=True)
    b = frame[frame["judge"] == "biased"][keys].sort_values(keys).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)  # the same items and the same neighbours for both judges
    assert result.summary["judges"] == ["fair", "biased"] and result.summary["missing_judgments"] == 0
    for name in ("panel_leaderboard.csv", "certificate-fair.json", "certificate-biased.json",
                 "model_judgment/fair/gpt-3.5-turbo-0125.jsonl", "model_judgment/biased/gpt-3.5-turbo-0125.jsonl"):
        assert (out / name).is_file(), name
    panel_lb = pd.read_csv(out / "panel_leaderboard.csv")
    assert set(panel_lb["model"]) == {"gpt-3.5-turbo-0125", "gpt-4-0314"}
    # each judge's own sampling and prices reached its requests and its cost
    cost = result.summary["stages"]
    assert cost["fair/original"]["cost"] is not None and cost["biased/original"]["cost"] is not None
    drawn = [json.loads(t) for t in (out / "neighbors.jsonl").read_text().splitlines()]
    assert all(set(d["by_judge"]) == {"fair", "biased"} for d in drawn)


def test_panel_sensitivities_match_each_judges_known_bias(panel):
    result, _, _ = panel
    cfg = result.config
    certs = {d["scope"]["judge"] + "/" + d["scope"]["model"]: d["scope"]["model_sensitivity"]["generators"]
             for d in json.loads((cfg.output / "certificates.json").read_text())}
    swaps = {}
    for name in ("fair", "biased"):
        truth = _truth(cfg, name)
        for model, per in truth.items():
            got = certs[f"{name}/{model}"]
            for g, v in per.items():  # hold-out 0 and no jitter: the estimate equals the truth exactly
                assert got[g]["delta_star"] == pytest.approx(v, abs=1e-12), (name, model, g)
        swaps[name] = max(p["swap"] for p in truth.values())
    # deterministic (no jitter, fixed items and seeds): no false-failure rate to state
    assert swaps["biased"] > swaps["fair"] + 0.2  # the position bias shows up where it was put


def test_panel_judge_equals_the_same_judge_alone(panel):
    result, alone, _ = panel
    both = result.judgments.frame
    one = alone.judgments.frame
    keys = ["model", "item_id", "variant", "rerun", "game"]
    x = both[both["judge"] == "biased"].sort_values(keys)[keys + ["score"]].reset_index(drop=True)
    y = one.sort_values(keys)[keys + ["score"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(x, y)


def test_panel_config_errors(tmp_path):
    base = {"data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                     "baseline": "gpt-4-0314"}, "output": "o"}
    ep = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(DataFormatError, match="'judges' must be a list of judges with distinct names"):
        parse_config({**base, "judges": [ep, ep]}, source=tmp_path / "r.yaml")
    with pytest.raises(DataFormatError, match="'judges' must be used without 'judge'"):
        parse_config({**base, "judge": ep, "judges": [ep]}, source=tmp_path / "r.yaml")
    with pytest.raises(DataFormatError, match=r"judges\[1\].sampling.temperature"):
        parse_config({**base, "judges": [ep, {**ep, "name": "b", "sampling": {"temperature": 9}}]}, source=tmp_path / "r.yaml")
    cfg = parse_config({**base, "judges": [ep, {**ep, "name": "b"}]}, source=tmp_path / "r.yaml")
    assert [j.name for j in cfg.panel] == ["m", "b"] and cfg.judge.name == "m"
    one = parse_config({**base, "judge": ep}, source=tmp_path / "r.yaml")
    assert one.panel == (one.judge,)


def test_run_summary_prints_each_judge_of_the_panel(panel):
    from io import StringIO

    from rich.console import Console

    from biasbound.commands.run import print_run_summary

    result, _, _ = panel
    buf = StringIO()
    print_run_summary(result, Console(file=buf, width=200))
    text = buf.getvalue()
    stages = result.summary["stages"]
    frame = result.judgments.frame
    for j in ("fair", "biased"):
        # the judgments requested are the judge's rows of the table (originals and neighbours, each once); the
        # preflight's requests, the first originals asked again from the cache, are counted apart
        n = int((frame["judge"] == j).sum())
        pre = stages.get(f"{j}/preflight", {}).get("requests", 0)
        assert (pre > 0) == (j == "fair")  # the preflight asks the first judge: its line keeps those requests apart
        first = f" (+ {pre} preflight requests)" if pre else ""
        assert f"judge {j}: {n} judgments requested{first}, 0 missing or failed, cost " in text
    # the biased judge's prices are 3x the fair one's on prompts: its cost is higher on the same calls
    assert stages["biased/original"]["cost"] > stages["fair/original"]["cost"]


def test_example_panel_config_is_valid():
    cfg = load_config(Path(__file__).resolve().parents[2] / "examples" / "run-panel.yaml")
    assert [j.name for j in cfg.panel] == ["fair", "position-biased"]
    assert [j.temperature for j in cfg.panel] == [0.0, 0.7]
    assert cfg.panel[1].prompt_price_per_million == 2.5

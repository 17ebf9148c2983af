"""Sequential judging in ``biasbound run`` (task "runs"): looks declared in advance, each the first m of
every model's seeded draw, β split over the looks, stop when α gains less than ``min_gain``.

Exact checks only (the synthetic judge is deterministic; every seed fixed): which items each look
judged, the stop rule applied to the recorded α's, the β of every knowledge record in the certificate,
and that no call is paid twice over the looks.
"""

from __future__ import annotations

import json
import sqlite3

import pytest
import yaml

from conftest import SHARED_DATA
from biasbound import DataFormatError
from biasbound.config import load_config
from biasbound.neighbors.registry import sample_indices
from biasbound.runner import _sub_seed, load_items, run
from biasbound.testing import SyntheticServerConfig, serve_in_thread

DATA = SHARED_DATA / "arena-hard-v0.1"


def _config(path, url: str, output, neighbors: dict, **extra) -> object:
    cfg = {"data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                    "baseline": "gpt-4-0314", "n_items": 40, "include_baseline": True},
           "judge": {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic",
                     "api_key_env": "BIASBOUND_TEST_UNSET_KEY", "concurrency": 16},
           "neighbors": neighbors, "bootstrap_rounds": 100, "plots": False, "seed": 9, "output": str(output), **extra}
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.mark.slow
def test_sequential_looks_judge_prefixes_split_beta_and_stop_by_the_rule(tmp_path) -> None:
    looks, min_gain, beta = [5, 10, 20, 30], 0.01, 0.05
    with serve_in_thread(SyntheticServerConfig()) as server:
        path = _config(tmp_path / "s.yaml", server.url, tmp_path / "out",
                       {"generators": ["swap", "format", "rerun"], "sequential": {"looks": looks, "min_gain": min_gain}})
        result = run(path, progress=False)
    seq = json.loads((tmp_path / "out" / "run_summary.json").read_text())["sequential"]
    assert seq == result.summary["sequential"]
    assert seq["looks"] == looks and seq["beta_per_look"] == pytest.approx(beta / len(looks))
    per = seq["per_look"]
    # the rule, replayed on the recorded α's: stop at the first look gaining less than min_gain, else the last
    alphas = [p["alpha"] for p in per]
    expect = next((k + 1 for k in range(1, len(alphas)) if alphas[k] < alphas[k - 1] * (1 + min_gain)), len(looks))
    assert seq["stopped_at_look"] == expect == len(per)
    m = looks[expect - 1]
    assert seq["m"] == m
    # every look judged the first m of the seeded draw of looks[-1]: the final neighbours are exactly that prefix
    cfg = load_config(path)
    ctx = load_items(cfg)
    drawn: dict[tuple[str, str], list[str]] = {}
    for line in (tmp_path / "out" / "neighbors.jsonl").read_text().splitlines():
        rec = json.loads(line)
        drawn.setdefault((rec["generator"], rec["model"]), []).append(rec["item_id"])
    for g in ("format", "rerun"):
        for model in ctx.models:
            items = [q for q in ctx.item_ids if q in ctx.answers[model]]
            idx, _ = sample_indices(len(items), looks[-1], _sub_seed(cfg.seed, "sample", g, model))
            assert drawn[(g, model)] == [items[i] for i in idx[:m]]
    # the certificate's drawn-generator knowledge is held at β/K, split again by certify over its records
    # (3 generators × the models), so every model's statements hold jointly
    cert = json.loads((tmp_path / "out" / "certificate.json").read_text())
    records = cert["knowledge"]["generators"]  # "<model> | <generator>" -> records
    betas = [rec["beta"] for key, recs in records.items() if not key.endswith("| swap") for rec in recs]
    assert len(betas) == 2 * 2 and betas == pytest.approx([beta / len(looks) / (3 * len(ctx.models))] * 4)
    # no call paid twice: the looks' HTTP calls add up to the distinct calls in the cache
    con = sqlite3.connect(tmp_path / "out" / "judge_cache.sqlite")
    n_cached = con.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
    con.close()
    assert sum(p["calls"] for p in per) == n_cached


@pytest.mark.parametrize(("neighbors", "extra", "key"), [
    ({"generators": ["swap", "format"], "sequential": {"looks": [10, 5]}}, {}, "neighbors.sequential.looks"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [10]}}, {}, "neighbors.sequential.looks"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10], "min_gain": 2}}, {}, "neighbors.sequential.min_gain"),
    ({"generators": ["swap", "format"], "neighbors_per_generator": 10, "sequential": {"looks": [5, 10]}}, {},
     "neighbors.neighbors_per_generator"),
    ({"generators": ["swap"], "sequential": {"looks": [5, 10]}}, {}, "neighbors.sequential"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10]}}, {"calibration": {"beta": None}}, "calibration.beta"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10]}}, {"calibration": {"alpha": 0.3}}, "calibration.alpha"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10], "target": {"alpha": 0}}}, {},
     "neighbors.sequential.target.alpha"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10], "target": {"flip_rate_width": "narrow"}}}, {},
     "neighbors.sequential.target.flip_rate_width"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10], "target": {"radius": 0.5}}}, {},
     "neighbors.sequential.target.radius"),
    ({"generators": ["swap", "format"], "sequential": {"looks": [5, 10], "target": {}}}, {}, "neighbors.sequential.target"),
    ({"generators": ["swap"], "options": {"swap": {"census": False}}}, {}, "neighbors.options.swap"),
    ({"generators": ["swap"], "options": {"swap": {"drawn": "yes"}}}, {}, "neighbors.options.swap.drawn"),
])
def test_sequential_config_errors_name_the_key(tmp_path, neighbors, extra, key) -> None:
    path = _config(tmp_path / "bad.yaml", "http://127.0.0.1:9/v1", tmp_path / "o", neighbors, **extra)
    with pytest.raises(DataFormatError) as err:
        load_config(path)
    assert f"'{key}'" in str(err.value) and "bad.yaml" in str(err.value)


def test_swap_drawn_alone_is_a_drawn_generator_for_sequential_judging(tmp_path) -> None:
    path = _config(tmp_path / "ok.yaml", "http://127.0.0.1:9/v1", tmp_path / "o",
                   {"generators": ["swap"], "options": {"swap": {"drawn": True}}, "sequential": {"looks": [5, 10]}})
    cfg = load_config(path)
    assert cfg.neighbors.swap_drawn and cfg.neighbors.looks == (5, 10) and cfg.neighbors.m == 10


def test_targets_met_reads_alpha_the_bias_radius_and_every_flip_interval() -> None:
    from biasbound.planning import targets_met

    card = {"bias_radius": {"radius": 0.4},
            "generators": {"variant:format": {"flip_rate": {"lo": 0.1, "hi": 0.2}},
                           "rerun": {"flip_rate": {"lo": 0.0, "hi": 0.3}}}}
    gens = ["variant:format", "rerun"]
    assert not targets_met({}, 0.5, card, gens)  # no target: never stops on one
    assert targets_met({"alpha": 0.4}, 0.4, card, gens) and not targets_met({"alpha": 0.41}, 0.4, card, gens)
    assert not targets_met({"alpha": 0.1}, None, card, gens)  # a look without a certificate meets nothing
    assert targets_met({"bias_radius": 0.4}, 0.3, card, gens) and not targets_met({"bias_radius": 0.39}, 0.3, card, gens)
    assert targets_met({"flip_rate_width": 0.3}, 0.3, card, gens)
    assert not targets_met({"flip_rate_width": 0.25}, 0.3, card, gens)  # rerun's interval is 0.3 wide
    assert not targets_met({"flip_rate_width": 0.5}, 0.3, card, [*gens, "variant:paraphrase"])  # no figure: not met
    assert not targets_met({"alpha": 0.1, "bias_radius": 0.3}, 0.3, card, gens)  # every stated target must be met


@pytest.mark.slow
def test_a_sequential_run_stops_at_the_first_look_meeting_its_targets(tmp_path) -> None:
    # every target below is met by any certified look (α > 0.01, a radius is at most the range 1, an interval at
    # most 1 wide): the run stops at the first look, says why, and records the targets in the certificate
    looks = [5, 10, 20]
    target = {"alpha": 0.01, "bias_radius": 1.0, "flip_rate_width": 1.0}
    with serve_in_thread(SyntheticServerConfig()) as server:
        path = _config(tmp_path / "s.yaml", server.url, tmp_path / "out",
                       {"generators": ["swap", "format"], "sequential": {"looks": looks, "min_gain": 0.0,
                                                                        "target": target}})
        result = run(path, progress=False)
    seq = result.summary["sequential"]
    assert seq["stopped_at_look"] == 1 and seq["stopped_by"] == "target" and seq["m"] == 5
    assert seq["target"] == target and seq["beta_per_look"] == pytest.approx(0.05 / 3)  # β still split over all 3
    cert = json.loads((tmp_path / "out" / "certificate.json").read_text())
    assert cert["scope"]["sequential"]["target"] == target and cert["scope"]["sequential"]["look"] == 1


def test_looks_beyond_the_items_are_refused_before_any_call(tmp_path, capsys) -> None:
    """`sequential.looks: [2, 1000]` on 40 items: the last look could judge nothing new; refused through the CLI
    before any judge call (the endpoint below does not exist)."""
    from biasbound.cli import main

    path = _config(tmp_path / "s.yaml", "http://127.0.0.1:9/v1", tmp_path / "out",
                   {"generators": ["swap", "format"], "sequential": {"looks": [2, 1000], "min_gain": 0.01}})
    assert main(["run", str(path), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "'neighbors.sequential.looks' of" in err and "ends at 1000, but each model holds at most 40 items" in err
    assert "end the looks at 40 or below (e.g. [2, 40])" in err
    assert not (tmp_path / "out" / "judge_cache.sqlite").exists()

"""`biasbound run` takes every certify parameter: a run config with sigma, hamming, range_bound and
deterministic_judge (and the same values given as run options) certifies exactly as `biasbound certify` with
those flags on the judgments the run recorded. Deterministic: the synthetic judge at temperature 0, fixed seeds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import SHARED_DATA  # tests/data: vendored real data

from biasbound.cli import main
from biasbound.testing import SyntheticServerConfig, serve_in_thread

pytestmark = pytest.mark.slow  # end to end: `biasbound run` against the synthetic server

DATA = SHARED_DATA / "arena-hard-v0.1"
N_ITEMS = 12
#: every certify parameter `run` could not set before, at values other than their defaults
SETTINGS = {"sigma": 0.02, "hamming": 2, "range_bound": True, "deterministic_judge": True}


def _config(folder: Path, url: str, calibration: dict) -> Path:
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "models": ["gpt-3.5-turbo-0125"], "n_items": N_ITEMS,
                 "include_baseline": True},
        "judge": {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic",
                  "api_key_env": "BIASBOUND_TEST_UNSET_KEY", "concurrency": 4,
                  "retry": {"timeout": 10.0, "backoff_initial": 0.01, "backoff_max": 0.05, "backoff_jitter": 0.01}},
        # m = every item: a census of swaps (no recorded draw), so certify on the table sees what run saw
        "neighbors": {"generators": ["swap"], "neighbors_per_generator": N_ITEMS},
        "tau": 0.5, "delta": 0.01, "calibration": calibration, "bootstrap_rounds": 20, "plots": False, "seed": 3,
        "output": "out",
    }
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _certificate(folder: Path) -> dict:
    doc = json.loads((folder / "certificate.json").read_text())
    doc.pop("created")
    return doc


def test_run_certifies_as_certify_with_the_same_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with serve_in_thread(SyntheticServerConfig(latency_ms=0)) as server:
        (tmp_path / "a").mkdir()
        by_config = _config(tmp_path / "a", server.url, dict(SETTINGS))
        assert main(["run", str(by_config), "--no-progress"]) == 0
        # the same settings as run options over a config that has none of them
        (tmp_path / "b").mkdir()
        by_flags = _config(tmp_path / "b", server.url, {})
        assert main(["run", str(by_flags), "--no-progress", "--sigma", "0.02", "--hamming", "2", "--range-bound",
                     "--deterministic-judge"]) == 0
    run_a, run_b = tmp_path / "a" / "out", tmp_path / "b" / "out"
    assert main(["certify", str(run_a / "judgments.parquet"), "--out", str(tmp_path / "c"), "--generators", "swap",
                 "--tau", "0.5", "--delta", "0.01", "--seed", "3", "--bootstrap-rounds", "20", "--no-plots",
                 "--no-progress", "--baseline", "gpt-4-0314", "--sigma", "0.02", "--hamming", "2", "--range-bound",
                 "--deterministic-judge"]) == 0
    capsys.readouterr()
    a, b, c = _certificate(run_a), _certificate(run_b), _certificate(tmp_path / "c")
    assert a == b  # config keys and run options are one route
    assert a["sigma"] == 0.02 and a["scope"]["deterministic_judge"] is True
    assert a["neighborhood"] == {"kind": "hamming", "k": 2}
    # certify read the run's table from a file: where the scores came from (the reproduce record, the score
    # scale's source, and the digest over the records that holds them) differs; every figure of the certificate
    # is the same
    recorded = [doc["scope"].pop("reproduce")["certify"] for doc in (a, c)]
    for key, value in SETTINGS.items():
        assert recorded[0][key] == recorded[1][key] == value, key
    assert a["scope"].pop("judge_prompt")["name"] == "biasbound-pairwise"  # the run knows its prompt; certify cannot
    for doc in (a, c):
        doc["scope"].pop("score_scale"), doc.pop("records_sha256")
    assert a == c

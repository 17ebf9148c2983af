"""The run config's human_labels key: parsed (relative to the config, must exist) and passed on to certify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import SHARED_DATA  # tests/data: vendored real data

from biasbound._exceptions import DataFormatError
from biasbound.config import load_config

DATA = SHARED_DATA / "arena-hard-v0.1"


def _config(folder: Path, url: str = "http://127.0.0.1:9/v1", **extra: object) -> Path:
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 12, "include_baseline": True},
        "judge": {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic",
                  "api_key_env": "BIASBOUND_TEST_UNSET_KEY", "concurrency": 8,
                  "retry": {"timeout": 10.0, "backoff_initial": 0.01, "backoff_max": 0.05, "backoff_jitter": 0.01}},
        "neighbors": {"generators": ["swap"]}, "bootstrap_rounds": 50, "plots": False, "seed": 0, "output": "out",
    }
    cfg.update(extra)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_config_reads_human_labels_relative_to_itself(tmp_path: Path) -> None:
    (tmp_path / "labels.csv").write_text("item_id,label\nq,1\n", encoding="utf-8")
    cfg = load_config(_config(tmp_path, human_labels="labels.csv"))
    assert cfg.human_labels == tmp_path / "labels.csv" and cfg.to_dict()["human_labels"] == str(tmp_path / "labels.csv")
    assert load_config(_config(tmp_path)).human_labels is None
    with pytest.raises(DataFormatError, match="human_labels"):
        load_config(_config(tmp_path, human_labels="absent.csv"))


@pytest.mark.slow
def test_run_certifies_with_the_labels(tmp_path: Path) -> None:
    from biasbound.runner import load_items, run
    from biasbound.testing.server import SyntheticServerConfig, serve_in_thread

    probe = load_config(_config(tmp_path))
    ctx = load_items(probe)
    items = [q for q in ctx.item_ids if all(q in ctx.answers[m] for m in ctx.models)][:8]
    lines = ["item_id,model,label"] + [f"{q},{m},{(k + j) % 2}" for k, q in enumerate(items)
                                       for j, m in enumerate(ctx.models)]
    (tmp_path / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with serve_in_thread(SyntheticServerConfig(latency_ms=0)) as server:
        result = run(_config(tmp_path, server.url, human_labels="labels.csv"), progress=False)
    assert result.certification is not None and result.certification.human is not None
    human = json.loads((tmp_path / "out" / "human.json").read_text())
    (judge,) = human["judges"]
    assert human["judges"][judge]["agreement"]["n"] == len(items) * len(ctx.models)

"""`biasbound run` with batch judging (`judge.batch`) against the synthetic judge server's batch API on localhost:
the same judgments and certificates as the live run, a killed run that resumes by polling its recorded batch, a
failed batch in one sentence (exit code 2 with `fallback: stop`), and no API key in any file of the run folder.
Deterministic: the synthetic judge at temperature 0, fixed seeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from conftest import SHARED_DATA  # tests/data: vendored real data

from biasbound.card import card_rows
from biasbound.cli import main
from biasbound.testing import SyntheticServerConfig, serve_in_thread

pytestmark = pytest.mark.slow  # end to end: `biasbound run` against the synthetic server

DATA = SHARED_DATA / "arena-hard-v0.1"
N_ITEMS = 10
KEY_ENV = "BIASBOUND_TEST_BATCH_RUN_KEY"
SECRET = "sk-run-batch-secret-9f8e7d6c5b4a"


def _config(folder: Path, url: str, batch: object = None) -> Path:
    judge = {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic", "api_key_env": KEY_ENV,
             "concurrency": 4, "prices": {"prompt_per_million": 2.0, "completion_per_million": 8.0},
             "retry": {"timeout": 10.0, "backoff_initial": 0.01, "backoff_max": 0.05, "backoff_jitter": 0.01}}
    if batch is not None:
        judge["batch"] = batch
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "models": ["gpt-3.5-turbo-0125"], "n_items": N_ITEMS,
                 "include_baseline": True},
        "judge": judge, "neighbors": {"generators": ["swap", "format", "rerun"], "neighbors_per_generator": 6},
        "tau": 0.5, "delta": 0.01, "calibration": {"beta": 0.05, "holdout": 0.3}, "bootstrap_rounds": 20,
        "plots": False, "seed": 3, "output": "out",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _certificate(out: Path) -> dict:
    doc = json.loads((out / "certificate.json").read_text())
    doc.pop("created")
    return doc


def _judgments(out: Path) -> pd.DataFrame:
    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "status"]
    return pd.read_parquet(out / "judgments.parquet")[cols]


def _no_secret_in(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_a_batch_run_certifies_as_the_live_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve_in_thread(SyntheticServerConfig(api_key_env=KEY_ENV, batch_polls=2)) as server:
        assert main(["run", str(_config(tmp_path / "live", server.url)), "--no-progress"]) == 0
        live_calls = server.stats()["n_requests"]
        server.reset()
        batch = {"poll_interval": 0.01, "discount": 0.5}
        assert main(["run", str(_config(tmp_path / "batch", server.url, batch)), "--no-progress"]) == 0
        stats = server.stats()
    live, batched = tmp_path / "live" / "out", tmp_path / "batch" / "out"
    pd.testing.assert_frame_equal(_judgments(batched), _judgments(live))
    assert _certificate(batched) == _certificate(live)
    # the originals and the neighbours went in one batch each; only the 4 preflight calls were live
    assert stats["batches"]["created"] == 2 and stats["n_requests"] == 4 and live_calls > 4
    recorded = json.loads((batched / "judge_batches.json").read_text())["batches"]
    assert [b["status"] for b in recorded] == ["completed", "completed"]
    summary = json.loads((batched / "run_summary.json").read_text())
    assert summary["judging_cost"]["batch_calls"] == summary["judging_cost"]["calls"] - 4 == 47
    live_cost = json.loads((live / "run_summary.json").read_text())["judging_cost"]["cost"]
    assert summary["judging_cost"]["cost"] < live_cost  # at half price but for the preflight
    card = json.loads((batched / "summary.json").read_text())["judge_card"]["judges"]["synthetic"]
    (line,) = [v for k, v in card_rows(card) if k == "cost per 1,000 judgments"]
    assert line.endswith("(47 of 51 calls at batch prices)")  # 4 preflight calls live, 47 by batch
    assert _no_secret_in(tmp_path) == []  # the key reached no file of either run folder


def test_a_failed_batch_stops_the_run_in_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve_in_thread(SyntheticServerConfig(api_key_env=KEY_ENV, batch_mode="fail")) as server:
        path = _config(tmp_path, server.url, {"poll_interval": 0.01, "fallback": "stop"})
        assert main(["run", str(path), "--no-progress"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: The batch batch_000001 failed (Synthetic batch failure")
    assert "requests have no reply; the run stops" in err and "Traceback" not in err
    assert _no_secret_in(tmp_path) == []


def test_a_killed_run_resumes_by_polling_its_recorded_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`biasbound run` in a child process is killed (SIGKILL) once its first batch id is on disk; the re-run polls
    that batch: the server counts one submission per judging step, as an uninterrupted run makes."""
    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve_in_thread(SyntheticServerConfig(api_key_env=KEY_ENV, batch_polls=8)) as server:
        path = _config(tmp_path, server.url, {"poll_interval": 0.2})
        state = tmp_path / "out" / "judge_batches.json"
        env = {**os.environ, KEY_ENV: SECRET}
        child = subprocess.Popen([sys.executable, "-m", "biasbound", "run", str(path), "--no-progress"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(6000):  # at most 60 s to start and submit
                if state.exists() or child.poll() is not None:
                    break
                time.sleep(0.01)
        finally:
            child.send_signal(signal.SIGKILL)
            child.wait()
        first = json.loads(state.read_text())["batches"]
        assert len(first) == 1 and not first[0]["collected"]
        assert server.stats()["batches"]["retrieved"] < 8  # the batch had not ended when the run was killed
        assert main(["run", str(path), "--no-progress"]) == 0
        stats = server.stats()
    batches = json.loads(state.read_text())["batches"]
    assert batches[0]["batch_id"] == first[0]["batch_id"] and batches[0]["collected"]
    assert stats["batches"]["created"] == 2  # the originals' batch polled again, never re-submitted
    assert _no_secret_in(tmp_path) == []


def test_an_expired_batch_run_asks_the_rest_live_and_certifies_as_the_live_run(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, SECRET)
    with serve_in_thread(SyntheticServerConfig(api_key_env=KEY_ENV)) as server:
        assert main(["run", str(_config(tmp_path / "live", server.url)), "--no-progress"]) == 0
    with serve_in_thread(SyntheticServerConfig(api_key_env=KEY_ENV, batch_mode="expire", batch_polls=2)) as server:
        assert main(["run", str(_config(tmp_path / "batch", server.url, {"poll_interval": 0.01})), "--no-progress"]) == 0
        stats = server.stats()
    live, batched = tmp_path / "live" / "out", tmp_path / "batch" / "out"
    pd.testing.assert_frame_equal(_judgments(batched), _judgments(live))
    assert _certificate(batched) == _certificate(live)
    recorded = json.loads((batched / "judge_batches.json").read_text())["batches"]
    without = sum(b["requests"] - b["answered"] for b in recorded)
    assert stats["n_requests"] == 4 + without  # the preflight, then only the requests the batches left unanswered
    notes = [n for n in json.loads((batched / "run_summary.json").read_text())["notes"] if n.startswith("The batch ")]
    assert [n.split()[2] for n in notes] == [b["batch_id"] for b in recorded]
    assert all("expired before its completion window (24h) ended" in n and n.endswith("they were asked live.")
               for n in notes)

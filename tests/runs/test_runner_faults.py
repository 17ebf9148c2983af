"""``biasbound run`` under faults: 20% injected failures, ``kill -9`` and resume, API-key hygiene.

The synthetic judge server (in this process) injects 429, 500, timeouts, truncated and
garbage replies; the run is a separate process when it is killed. Real Arena-Hard answers
(a seeded subset of 40 questions; gpt-3.5-turbo-0125 vs the baseline gpt-4-0314, and the
baseline against itself).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound.judge.cache import cache_key
from biasbound.judge.prompts import TEMPLATE_VERSION
from biasbound.runner import run
from biasbound.testing import SyntheticServerConfig, serve_in_thread

pytestmark = pytest.mark.slow  # end to end: runs under injected faults, kill -9 and resume

DATA = SHARED_DATA / "arena-hard-v0.1"
FAULTS = SyntheticServerConfig(latency_ms=2, fault_rate=0.2, fault_seed=11, timeout_sleep_s=1.0)
KEY_ENV = "BIASBOUND_TEST_RUN_KEY"
FAKE_KEY = "sk-bbtest-7f3a9c1e5d2b4a6f8e0c-RECOGNISABLE"


def write_config(path: Path, url: str, output: str, *, key_env: str = "BIASBOUND_TEST_UNSET_KEY", **extra: object) -> Path:
    retry = {"timeout": 0.4, "max_attempts": 14, "max_parse_attempts": 10, "backoff_initial": 0.01,
             "backoff_max": 0.05, "backoff_jitter": 0.01}
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 40, "include_baseline": True},
        "judge": {"base_url": url, "model": "biasbound-synthetic-judge", "name": "synthetic", "api_key_env": key_env,
                  "concurrency": 16, "retry": retry},
        "rewriter": {"base_url": url, "model": "synthetic-rewriter", "api_key_env": key_env, "concurrency": 16,
                     "retry": retry},
        "neighbors": {"generators": ["swap", "format", "paraphrase", "schematic", "agreeable", "rerun"],
                      "neighbors_per_generator": 20},
        "calibration": {"beta": 0.05, "holdout": 0.3}, "bootstrap_rounds": 1000, "plots": False,
        "seed": 3, "output": output,
    }
    cfg.update(extra)
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _key_of(entry: dict, url: str) -> str:
    """The client's cache key of a logged request (base seed 0 for both endpoints, so rerun = seed)."""
    return cache_key(identity=None, model=entry["model"], messages=entry["messages"], temperature=entry["temperature"],
                     max_tokens=entry["max_tokens"], top_p=entry["top_p"], seed=entry["seed"], rerun=entry["seed"],
                     template_version=TEMPLATE_VERSION)


def _cache_keys(db: Path) -> set[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return {r[0] for r in con.execute("SELECT key FROM judge_calls")}
    except sqlite3.OperationalError:  # table not created yet
        return set()
    finally:
        con.close()


def _certificate_numbers(path: Path) -> dict:
    cert = json.loads(path.read_text())
    cert.pop("created", None)
    return cert


def test_faults_kill9_and_resume(tmp_path) -> None:
    with serve_in_thread(FAULTS) as server:
        # 1. an uninterrupted run under 20% faults: nothing lost, retries recorded
        ref = run(write_config(tmp_path / "a.yaml", server.url, "out_a"), progress=False)
        outcomes = server.stats()["outcomes"]
        assert {"429", "500", "timeout", "truncated", "garbage"} <= set(outcomes)
        s = ref.summary
        assert s["missing_judgments"] == 0 and s["totals"]["ok"] == s["totals"]["requests"]
        assert s["totals"]["retries"] > 0
        assert ref.judgments.frame["score"].notna().all()
        n_calls = len(_cache_keys(tmp_path / "out_a" / "judge_cache.sqlite"))

        # 2. the same config in a subprocess, killed with SIGKILL mid-run
        cfg_b = write_config(tmp_path / "b.yaml", server.url, "out_b")
        db = tmp_path / "out_b" / "judge_cache.sqlite"
        err_path = tmp_path / "run_b.stderr"
        with err_path.open("wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "biasbound.cli", "run", str(cfg_b), "--no-progress"],
                                    stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if db.exists() and len(_cache_keys(db)) >= n_calls // 3:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, (f"the run ended (exit {proc.poll()}) before it could be killed: "
                                         f"{err_path.read_text(errors='replace')[-2000:]}")
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        killed_at = time.time()
        finished = _cache_keys(db)
        assert 0 < len(finished) < n_calls

        # 3. restart: completes, and no call finished before the kill is requested again. A log entry is
        # written when its reply is sent (a 'timeout' fault sleeps first), so entries are split by their
        # arrival time: nothing can arrive from the killed process after it died.
        resumed = run(cfg_b, progress=False)
        after = [e for e in server.log if e["time"] > killed_at]
        assert after  # the restart did call the server for the unfinished work
        requested_again = {_key_of(e, server.url) for e in after} & finished
        assert not requested_again
        assert resumed.summary["totals"]["cache_hits"] > 0

    # 4. identical outputs (timestamps aside)
    a, b = tmp_path / "out_a", tmp_path / "out_b"
    pd.testing.assert_frame_equal(pd.read_parquet(a / "scores.parquet"), pd.read_parquet(b / "scores.parquet"))
    pd.testing.assert_frame_equal(pd.read_csv(a / "leaderboard.csv"), pd.read_csv(b / "leaderboard.csv"))
    assert _certificate_numbers(a / "certificate.json") == _certificate_numbers(b / "certificate.json")
    assert (a / "neighbors.jsonl").read_text() == (b / "neighbors.jsonl").read_text()


def test_api_key_never_written_or_printed(tmp_path, capfd, caplog) -> None:
    """A recognisable fake key (the server demands it) appears in no output file, cache, log record or terminal text."""
    caplog.set_level(logging.DEBUG)
    os.environ[KEY_ENV] = FAKE_KEY
    try:
        config = SyntheticServerConfig(api_key_env=KEY_ENV, fault_rate=0.2, fault_seed=5, fault_kinds=("429", "500"))
        with serve_in_thread(config) as server:
            cfg = write_config(tmp_path / "k.yaml", server.url, "out_k", key_env=KEY_ENV,
                               neighbors={"generators": ["swap", "paraphrase", "rerun"], "neighbors_per_generator": 10})
            result = run(cfg, progress=True)
            proc = subprocess.run([sys.executable, "-m", "biasbound.cli", "run", str(cfg)], capture_output=True,
                                  env={**os.environ}, timeout=120)
    finally:
        del os.environ[KEY_ENV]
    assert result.summary["missing_judgments"] == 0  # the server accepted the key
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    captured = capfd.readouterr()
    texts = [captured.out, captured.err, proc.stdout.decode(), proc.stderr.decode(), caplog.text,
             "\n".join(r.getMessage() for r in caplog.records)]
    assert any(texts)  # progress bars and summaries were printed
    for t in texts:
        assert FAKE_KEY not in t
    files = [p for p in (tmp_path / "out_k").rglob("*") if p.is_file()]
    assert any(p.name.startswith("judge_cache.sqlite") for p in files)
    for p in files + [cfg]:
        assert FAKE_KEY.encode() not in p.read_bytes(), p

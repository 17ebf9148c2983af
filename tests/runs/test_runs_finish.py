"""Runs finish what they start (task "runs"): re-runs call again what failed or went missing, the cache
survives a server moved to another port, the summary accounts for every requested call, an unreadable
cache file is one sentence.

The synthetic judge server answers deterministically from the messages and the seed (its faults are
drawn per attempt from a fixed ``fault_seed``), so an uninterrupted run against a healthy server is
the exact truth every interrupted, faulty history must end at. Nothing here is statistical: no
false-failure rate to state; every seed is fixed.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from conftest import SHARED_DATA  # tests/data: vendored real Arena-Hard answers
from biasbound import BiasboundError
from biasbound.runner import run
from biasbound.testing import SyntheticServerConfig, serve_in_thread

DATA = SHARED_DATA / "arena-hard-v0.1"
SRC = Path(__file__).resolve().parents[2] / "src"
HEAVY_FAULTS = SyntheticServerConfig(latency_ms=1, fault_rate=0.7, fault_seed=23, timeout_sleep_s=0.4)
COLUMNS = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "status"]


def write_config(path: Path, url: str, output: Path, *, max_attempts: int = 6, timeout: float = 10.0,
                 **extra: object) -> Path:
    """A run config; ``timeout`` (not in the cache key) is short only where the server's 'timeout' faults must bite:
    a short one against a healthy server on a loaded machine only adds connect timeouts."""
    retry = {"timeout": timeout, "max_attempts": max_attempts, "max_parse_attempts": max_attempts,
             "backoff_initial": 0.01, "backoff_max": 0.02, "backoff_jitter": 0.01}
    endpoint = {"base_url": url, "api_key_env": "BIASBOUND_TEST_UNSET_KEY", "concurrency": 8, "retry": retry}
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 12, "include_baseline": True},
        "judge": {**endpoint, "model": "biasbound-synthetic-judge", "name": "synthetic"},
        "rewriter": {**endpoint, "model": "synthetic-rewriter"},
        "neighbors": {"generators": ["swap", "format", "paraphrase", "rerun"], "neighbors_per_generator": 6},
        "bootstrap_rounds": 200, "plots": False, "seed": 5, "output": str(output), **extra,
    }
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def cache_rows(db: Path) -> dict[str, str]:
    """``{key: status}`` of a cache file (read-only; empty before the table exists)."""
    if not db.exists():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return dict(con.execute("SELECT key, status FROM judge_calls").fetchall())
    except sqlite3.OperationalError:
        return {}
    finally:
        con.close()


def judgments(out: Path) -> pd.DataFrame:
    frame = pd.read_parquet(out / "judgments.parquet")[COLUMNS]
    return frame.sort_values(COLUMNS[:6], kind="stable").reset_index(drop=True)


def cli(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.Popen([sys.executable, "-m", "biasbound.cli", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.slow
def test_killed_runs_under_heavy_faults_end_equal_to_an_uninterrupted_run(tmp_path) -> None:
    # the truth: one uninterrupted run against a healthy server
    with serve_in_thread(SyntheticServerConfig(latency_ms=1)) as healthy:
        ref = run(write_config(tmp_path / "ref.yaml", healthy.url, tmp_path / "ref"), progress=False)
    assert ref.summary["missing_judgments"] == 0
    n_keys = len(cache_rows(tmp_path / "ref" / "judge_cache.sqlite"))

    out = tmp_path / "out"
    db = out / "judge_cache.sqlite"
    rng = np.random.default_rng(2026)
    with serve_in_thread(HEAVY_FAULTS) as faulty:
        # 70% of the attempts fail (429, 500, timeout, truncated, garbage); killed with SIGKILL at random points
        cfg = write_config(tmp_path / "faulty.yaml", faulty.url, out, max_attempts=3, timeout=0.25)
        kills = 0
        for threshold in sorted(rng.uniform(0.1, 0.8, size=3)):
            proc = cli("run", str(cfg), "--no-progress")
            try:
                deadline = time.monotonic() + 120
                while proc.poll() is None and time.monotonic() < deadline and len(cache_rows(db)) < threshold * n_keys:
                    time.sleep(0.01)
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGKILL)
                    kills += 1
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
        # then one run to its end under the same faults: 3 attempts per call leave many failed or missing
        proc = cli("run", str(cfg), "--no-progress")
        proc.wait(timeout=300)
        assert faulty.stats()["outcomes"].keys() >= {"429", "500", "timeout", "truncated", "garbage"}
    assert kills >= 1
    left = [s for s in cache_rows(db).values() if s != "ok"]
    assert left, "the faulty history left nothing failed or missing: the test would not test retrying"

    # the healthy server again, on another port: the cache key holds no base URL, so nothing is paid twice
    with serve_in_thread(SyntheticServerConfig(latency_ms=1)) as healthy:
        # the faulty server's garbage and truncated replies are cached as unparseable: a resume keeps a judge's
        # unparseable reply (it would answer the same) unless asked to call again, as here
        kept = run(write_config(tmp_path / "kept.yaml", healthy.url, out), progress=False, retry_failed=False)
        assert kept.summary["missing_judgments"] > 0  # --no-retry-failed leaves them missing
        assert kept.summary["totals"]["recalled"] == 0
        n_log = len(healthy.log)
        cfg = write_config(tmp_path / "healthy.yaml", healthy.url, out, retry_unparseable=True)
        resumed = run(cfg, progress=False)
        called_again = len(healthy.log) - n_log
    s = resumed.summary
    assert s["missing_judgments"] == 0 and s["totals"]["failed"] == 0, (s["totals"], s.get("failures"))
    t, rw = s["totals"], s["stages"]["rewrites"]
    assert 0 < t["recalled"] + rw["recalled"] <= len(left)
    # the healthy server saw exactly the attempts the summary counts: the calls left failed or missing (and
    # the neighbours a recovered rewrite unlocked), none of the finished ones
    assert called_again == t["attempts"] + rw["attempts"] < n_keys
    assert t["requests"] == t["cache_hits"] + t["shared"] + t["calls"]
    pd.testing.assert_frame_equal(judgments(out), judgments(tmp_path / "ref"))
    assert (out / "neighbors.jsonl").read_text() == (tmp_path / "ref" / "neighbors.jsonl").read_text()


@pytest.mark.slow
def test_a_run_in_one_session_never_calls_a_request_twice(tmp_path) -> None:
    """``retry_failed`` re-calls only outcomes cached *before* the session: every failure of a run is final within it."""
    always_fail = SyntheticServerConfig(fault_rate=1.0, fault_kinds=("500",), fault_seed=1)
    with serve_in_thread(always_fail) as server:
        cfg = write_config(tmp_path / "f.yaml", server.url, tmp_path / "o", max_attempts=2)
        with pytest.raises(BiasboundError):  # nothing scored: certify refuses; the judging outputs are written first
            run(cfg, progress=False)
        summary = pd.read_json(tmp_path / "o" / "run_summary.json", typ="series")
        totals = summary["totals"]
        # every distinct call made exactly max_attempts attempts, none twice (shared requests took the same outcome)
        assert totals["attempts"] == 2 * totals["calls"] and totals["calls"] > 0
        assert totals["failed"] == totals["requests"] and totals["recalled"] == 0
        bodies = [tuple(m["content"] for m in e["messages"]) + (e["seed"], e["model"]) for e in server.log]
        counts = pd.Series(bodies).value_counts()
        assert counts.max() == 2  # two attempts per distinct body, and no third from a re-call


@pytest.mark.slow
def test_unreadable_cache_is_one_sentence_naming_the_file(tmp_path) -> None:
    with serve_in_thread(SyntheticServerConfig()) as server:
        cfg = write_config(tmp_path / "c.yaml", server.url, tmp_path / "o")
        run(cfg, progress=False)
        db = tmp_path / "o" / "judge_cache.sqlite"
        data = db.read_bytes()
        for name, damaged in [("garbage", b"not a database at all " * 50), ("truncated", data[: len(data) // 3])]:
            db.write_bytes(damaged)
            for side in (db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
                side.unlink(missing_ok=True)
            proc = subprocess.run([sys.executable, "-m", "biasbound.cli", "run", str(cfg), "--no-progress"],
                                  env={**os.environ, "PYTHONPATH": str(SRC)}, capture_output=True, text=True,
                                  timeout=120)
            assert proc.returncode == 2, (name, proc.stderr[-2000:])
            err = " ".join(proc.stderr.split())
            assert "Traceback" not in proc.stderr
            assert str(db) in err and "not a readable SQLite database" in err, (name, err)
            assert db.read_bytes() == damaged  # the user's file is left as it was


@pytest.mark.slow
def test_demo_run_twice_takes_every_call_of_the_second_run_from_the_cache(tmp_path, capsys, monkeypatch) -> None:
    """`demo --run` starts its server on a random free port each time; the second run still pays nothing."""
    from biasbound.cli import main

    monkeypatch.chdir(tmp_path)
    args = ["demo", "--run", "--n-items", "10", "--generators", "swap,format,paraphrase,rerun", "--out", "d",
            "--no-progress"]
    assert main(args) == 0
    first = pd.read_json(tmp_path / "d" / "run" / "run_summary.json", typ="series")
    first_judgments = judgments(tmp_path / "d" / "run")
    card1 = _card_cost(tmp_path / "d" / "run")
    capsys.readouterr()
    assert main(args) == 0
    printed = " ".join(capsys.readouterr().out.split())
    second = pd.read_json(tmp_path / "d" / "run" / "run_summary.json", typ="series")
    card2 = _card_cost(tmp_path / "d" / "run")
    t1, t2 = first["totals"], second["totals"]
    assert t1["calls"] > 0 and t1["shared"] == 10  # the baseline against itself reads the same in both orders
    assert t2["requests"] == t1["requests"] == t2["cache_hits"]
    assert t2["calls"] == t2["attempts"] == t2["shared"] == 0
    rw = second["stages"]["rewrites"]
    assert rw["requests"] == rw["cache_hits"] > 0 and rw["attempts"] == 0
    assert f"judge calls: {t2['requests']} requested = {t2['requests']} from the cache + 0 shared + 0 over HTTP" in printed
    pd.testing.assert_frame_equal(judgments(tmp_path / "d" / "run"), first_judgments)
    # what the judgments cost does not drop to nothing because this session read them back: the same calls, tokens
    # and money as the session that made them, said to come from the earlier session
    assert card1["known"] and card1["calls"] == first["judging_cost"]["calls"] > 0 and card1["money"] > 0
    assert card1["from_earlier_sessions"] == 0 and card1["note"] is None
    assert {k: card2[k] for k in ("calls", "tokens", "money")} == {k: card1[k] for k in ("calls", "tokens", "money")}
    assert card2["from_earlier_sessions"] == card2["calls"]
    assert f"{card2['calls']} of the {card2['calls']} calls were made by an earlier session" in card2["note"]


def _card_cost(folder) -> dict:
    import json

    card = json.loads((folder / "summary.json").read_text(encoding="utf-8"))["judge_card"]
    (judge,) = card["judges"].values()
    return judge["cost"]

"""The async judge client against the real synthetic server on localhost.

Every check compares the client's results with the pure synthetic formula (computed
in-process, independently of HTTP and parsing) or with the server's own request log.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from biasbound import JudgeError
from biasbound.judge import (
    TEMPLATE_VERSION,
    JudgeCache,
    JudgeConfig,
    JudgeRequest,
    RedactingFilter,
    cache_key,
    judge_many,
    judge_many_sync,
    pairwise_games,
    redact,
    render_single,
    to_arena_hard_record,
)
from biasbound.judge.client import _aiohttp_available, _pool_sizes
from biasbound.testing import SyntheticJudge, SyntheticServerConfig, serve_in_thread

pytestmark = pytest.mark.slow  # end to end: HTTP runs against the synthetic server (~13 s on a loaded machine)

FAST_RETRY = dict(backoff_initial=0.01, backoff_max=0.05, backoff_jitter=0.01)


def make_requests(n_items: int, *, reruns: int = 1) -> list[JudgeRequest]:
    out = []
    for i in range(n_items):
        answer = f"Use a hammer and {i} nails.\n\n- **Check** the wood.\n- Start slowly."
        g1, g2 = pairwise_games(f"Question {i}?", answer, f"Baseline answer {i}.")
        for r in range(reruns):
            out.append(JudgeRequest(key=f"q{i}/g1/r{r}", messages=g1, rerun=r))
            out.append(JudgeRequest(key=f"q{i}/g2/r{r}", messages=g2, rerun=r))
        out.append(JudgeRequest(key=f"q{i}/single", messages=render_single(f"Question {i}?", answer)))
    return out


def config_for(url: str, **kw) -> JudgeConfig:
    return JudgeConfig(**{"base_url": url, "model": "synth", "api_key_env": "BIASBOUND_TEST_UNSET_KEY",
                          "concurrency": 8, "timeout": 5.0, **FAST_RETRY, **kw})


def expected_verdict(judge: SyntheticJudge, request: JudgeRequest, base_seed: int = 0):
    return judge.judgment(request.messages, base_seed + request.rerun)["overall"]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch):
    monkeypatch.delenv("BIASBOUND_TEST_UNSET_KEY", raising=False)


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_ok_path_tokens_cost_and_arena_record(tmp_path, monkeypatch, transport) -> None:
    """The same results over the SDK's aiohttp transport and its default httpx2 one."""
    monkeypatch.setenv("BIASBOUND_JUDGE_TRANSPORT", transport)
    url = "http://127.0.0.1:1/v1"
    assert _aiohttp_available(url) is (transport == "aiohttp")
    assert _pool_sizes(64, transport == "aiohttp") == ([64] if transport == "aiohttp" else [8] * 8)
    config = SyntheticServerConfig(latency_ms=5)
    judge = SyntheticJudge(config.judge)
    requests = make_requests(5)
    with serve_in_thread(config) as server:
        cfg = config_for(server.url, prompt_price_per_million=2.0, completion_price_per_million=8.0)
        results = judge_many_sync(requests, config=cfg, cache=tmp_path / "c.sqlite", progress=False)
        assert server.stats()["n_requests"] == len(requests)
    assert [r.key for r in results] == [q.key for q in requests]
    for req, res in zip(requests, results):
        assert res.status == "ok" and res.attempts == 1 and not res.from_cache
        want = expected_verdict(judge, req)
        assert res.verdict == (float(want) if req.task == "judge-single" else want)
        prompt_words = sum(len(m["content"].split()) for m in req.messages)
        assert res.prompt_tokens == prompt_words
        assert res.completion_tokens == len(res.raw.split())
        assert res.cost == pytest.approx((prompt_words * 2.0 + res.completion_tokens * 8.0) / 1e6)
    record = to_arena_hard_record(question_id="q0", model="m", judge="synth", games=results[:2])
    assert [g["score"] for g in json.loads(json.dumps(record))["games"]] == [results[0].verdict, results[1].verdict]


def test_injected_faults_lose_no_judgment(tmp_path) -> None:
    config = SyntheticServerConfig(latency_ms=2, fault_rate=0.2, fault_seed=3, timeout_sleep_s=2.0)
    judge = SyntheticJudge(config.judge)
    requests = make_requests(20)
    with serve_in_thread(config) as server:
        cfg = config_for(server.url, timeout=1.0, max_attempts=12, max_parse_attempts=8)
        results = judge_many_sync(requests, config=cfg, cache=tmp_path / "c.sqlite", progress=False)
        stats = server.stats()
    assert all(r.status == "ok" for r in results)
    assert [r.verdict for r in results] == [
        float(expected_verdict(judge, q)) if q.task == "judge-single" else expected_verdict(judge, q) for q in requests]
    # every HTTP attempt is accounted for, and the faults really happened and were retried
    assert sum(r.attempts for r in results) == stats["n_requests"]
    faults = stats["n_requests"] - stats["outcomes"]["ok"]
    # every fault cost one more attempt; on a loaded machine an answer the server sent in time may still reach the
    # client after its timeout and be retried too (the server logs it "ok"), so retries are at least the faults
    assert faults > 0 and sum(r.attempts - 1 for r in results) >= faults


@pytest.mark.parametrize("kind", ["429", "500", "timeout", "truncated", "garbage"])
def test_each_fault_kind_is_retried_to_the_right_verdict(tmp_path, kind) -> None:
    """Each kind alone at a 50% rate: the 36 requests (12 items x two games + one single rating)
    see it at least once unless all 36 first attempts pass. The draws are a hash of the seed,
    body and attempt, so the outcome is fixed; over seeds that would be a 0.5**36 (< 1e-10)
    chance per kind."""
    config = SyntheticServerConfig(latency_ms=2, fault_rate=0.5, fault_kinds=(kind,), fault_seed=5, timeout_sleep_s=0.6)
    judge = SyntheticJudge(config.judge)
    requests = make_requests(12)
    with serve_in_thread(config) as server:
        cfg = config_for(server.url, timeout=0.3, max_attempts=16, max_parse_attempts=16)
        results = judge_many_sync(requests, config=cfg, cache=tmp_path / "c.sqlite", progress=False)
        stats = server.stats()
    assert stats["outcomes"].get(kind, 0) > 0
    assert all(r.status == "ok" for r in results)
    assert [r.verdict for r in results] == [
        float(expected_verdict(judge, q)) if q.task == "judge-single" else expected_verdict(judge, q) for q in requests]


def test_hard_cap_records_failed_or_missing_never_a_score(tmp_path) -> None:
    transport = SyntheticServerConfig(fault_kinds=("500", "429"), task_fault_rates={"judge-single": 1.0})
    with serve_in_thread(transport) as server:
        cfg = config_for(server.url, max_attempts=4, max_parse_attempts=2)
        results = judge_many_sync(make_requests(3), config=cfg, cache=tmp_path / "a.sqlite", progress=False)
        assert server.stats()["n_requests"] == 3 * 2 + 3 * 4
    assert [r.task for r in results].count("judge-single") == 3
    for r in results:
        if r.task == "judge-single":
            assert r.status == "failed" and r.verdict is None and r.factors == {} and r.attempts == 4
            assert "after 4 attempt(s)" in r.reason and ("HTTP 500" in r.reason or "HTTP 429" in r.reason)
        else:
            assert r.status == "ok"
    unparseable = SyntheticServerConfig(fault_kinds=("garbage", "truncated"), task_fault_rates={"judge-single": 1.0})
    with serve_in_thread(unparseable) as server:
        cfg = config_for(server.url, max_attempts=6, max_parse_attempts=3)
        results = judge_many_sync(make_requests(2), config=cfg, cache=tmp_path / "b.sqlite", progress=False)
    singles = [r for r in results if r.task == "judge-single"]
    assert len(singles) == 2
    for r in singles:
        assert r.status == "missing" and r.verdict is None and r.attempts == 3
        assert r.raw is not None and "Rating: [[" not in r.raw and "3 unparseable replies" in r.reason
    with JudgeCache(tmp_path / "b.sqlite") as cache:
        assert cache.counts()["missing"] == 2


def test_concurrency_bound_and_rate_limit(tmp_path, monkeypatch) -> None:
    from biasbound.judge import client as client_module

    slots: list[float] = []
    wait = client_module._RateLimiter.wait

    async def recording_wait(self) -> float | None:  # the start slot each request was granted
        start = await wait(self)
        if start is not None:
            slots.append(start)
        return start

    monkeypatch.setattr(client_module._RateLimiter, "wait", recording_wait)
    with serve_in_thread(SyntheticServerConfig(latency_ms=60)) as server:
        results = judge_many_sync(make_requests(6), config=config_for(server.url, concurrency=3), progress=False)
        stats = server.stats()
        assert all(r.status == "ok" for r in results)
        assert 2 <= stats["max_in_flight"] <= 3
        assert slots == []  # no limit configured: no slot reserved
        server.reset()
        judge_many_sync(make_requests(2), config=config_for(server.url, requests_per_minute=600), progress=False)
        assert len(server.log) == 6
    # 6 requests at 600/min: every request went through the limiter and was granted its own start slot,
    # at least 60/600 = 0.1 s after the previous one (the schedule itself, not a wall-clock measurement)
    assert len(slots) == 6
    slots.sort()
    assert all(b - a >= 0.1 - 1e-9 for a, b in zip(slots, slots[1:]))


def test_rate_limiter_spaces_starts_on_a_fake_clock(monkeypatch) -> None:
    from biasbound.judge import client as client_module

    clock = [100.0]
    slept: list[float] = []

    async def fake_sleep(dt: float) -> None:
        slept.append(dt)
        clock[0] += dt

    monkeypatch.setattr(client_module.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(client_module.asyncio, "sleep", fake_sleep)
    limiter = client_module._RateLimiter(120)  # one start per 0.5 s

    async def five() -> list[float]:
        starts = []
        for _ in range(5):
            await limiter.wait()
            starts.append(clock[0])
        return starts

    import asyncio as _asyncio

    loop = _asyncio.new_event_loop()
    try:
        starts = loop.run_until_complete(five())
    finally:
        loop.close()
    assert starts == [100.0, 100.5, 101.0, 101.5, 102.0]
    assert slept == [0.5, 0.5, 0.5, 0.5]
    assert client_module._RateLimiter(None).interval == 0.0


def test_cache_second_run_is_free_and_reruns_are_distinct(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    requests = make_requests(4, reruns=3)
    with serve_in_thread(SyntheticServerConfig()) as server:
        cfg = config_for(server.url, base_seed=100)
        first = judge_many_sync(requests, config=cfg, cache=path, progress=False)
        assert server.stats()["n_requests"] == len(requests)
        pairwise_seeds = sorted({e["seed"] for e in server.log if e["task"] == "judge-pairwise"})
        assert pairwise_seeds == [100, 101, 102]
        server.reset()
        second = judge_many_sync(requests, config=cfg, cache=path, progress=False)
        assert server.stats()["n_requests"] == 0
    assert all(r.from_cache for r in second)
    assert [(r.key, r.verdict, r.raw, r.cache_key) for r in first] == [(r.key, r.verdict, r.raw, r.cache_key) for r in second]
    assert len({r.cache_key for r in first}) == len(requests)
    # reruns of the same game: same messages, distinct keys and seeds
    g1 = [r for r in first if r.key.startswith("q0/g1/")]
    assert len({r.cache_key for r in g1}) == 3 and [r.seed for r in g1] == [100, 101, 102]


def test_retry_failed_calls_only_the_failures(tmp_path) -> None:
    path = tmp_path / "c.sqlite"
    requests = make_requests(6)
    with serve_in_thread(SyntheticServerConfig(fault_rate=0.5, fault_kinds=("500",), fault_seed=1)) as server:
        cfg = config_for(server.url, max_attempts=1, max_parse_attempts=1)
        first = judge_many_sync(requests, config=cfg, cache=path, progress=False)
        n_failed = sum(r.status == "failed" for r in first)
        assert 0 < n_failed < len(requests)
        server.reset()
        again = judge_many_sync(requests, config=cfg, cache=path, progress=False)
        assert server.stats()["n_requests"] == 0 and [r.status for r in again] == [r.status for r in first]
        retried = judge_many_sync(requests, config=cfg, cache=path, progress=False, retry_failed=True)
        assert server.stats()["n_requests"] == n_failed
    failed_keys = {r.key for r in first if r.status == "failed"}
    assert {r.key for r in retried if not r.from_cache} == failed_keys


_WORKER = textwrap.dedent("""
    import sys
    from biasbound.judge import JudgeConfig, JudgeRequest, judge_many_sync, pairwise_games
    url, cache, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    requests = []
    for i in range(n):
        g1, _ = pairwise_games(f"Question {i}?", f"Answer {i} uses a hammer.", f"Baseline {i}.")
        requests.append(JudgeRequest(key=f"q{i}", messages=g1))
    cfg = JudgeConfig(base_url=url, model="synth", api_key_env="BIASBOUND_TEST_UNSET_KEY", concurrency=2)
    judge_many_sync(requests, config=cfg, cache=cache, progress=False)
""")


def test_kill_9_and_resume_repeats_no_finished_call(tmp_path) -> None:
    n = 40
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    cache_path = tmp_path / "resume.sqlite"
    with serve_in_thread(SyntheticServerConfig(latency_ms=50)) as server:
        env = {k: v for k, v in os.environ.items() if k != "BIASBOUND_TEST_UNSET_KEY"}
        proc = subprocess.Popen([sys.executable, str(script), server.url, str(cache_path), str(n)], env=env)
        finished: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if cache_path.exists():
                conn = sqlite3.connect(f"file:{cache_path}?mode=ro", uri=True, timeout=5)
                try:
                    count = conn.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
                except sqlite3.OperationalError:  # table not created yet
                    count = 0
                conn.close()
                if count >= 8:
                    break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL
        with JudgeCache(cache_path) as cache:
            finished = cache.keys()
        assert 0 < len(finished) < n  # killed mid-run
        while server.stats()["in_flight"]:  # let the dead worker's last requests drain before counting
            time.sleep(0.01)
        server.reset()
        requests = []
        for i in range(n):
            g1, _ = pairwise_games(f"Question {i}?", f"Answer {i} uses a hammer.", f"Baseline {i}.")
            requests.append(JudgeRequest(key=f"q{i}", messages=g1))
        cfg = JudgeConfig(base_url=server.url, model="synth", api_key_env="BIASBOUND_TEST_UNSET_KEY", concurrency=8)
        resumed = judge_many_sync(requests, config=cfg, cache=cache_path, progress=False)
        called = [cache_key(identity=None, model=e["model"], messages=e["messages"], temperature=e["temperature"],
                            max_tokens=e["max_tokens"], top_p=e["top_p"], seed=e["seed"], rerun=e["seed"] - cfg.base_seed,
                            template_version=TEMPLATE_VERSION) for e in server.log]
        assert not set(called) & set(finished)
        assert len(called) == n - len(finished)
        uninterrupted = judge_many_sync(requests, config=cfg, cache=tmp_path / "fresh.sqlite", progress=False)
    assert all(r.status == "ok" for r in resumed)
    assert [(r.key, r.verdict, r.factors, r.raw) for r in resumed] == [
        (r.key, r.verdict, r.factors, r.raw) for r in uninterrupted]


def test_api_key_never_leaks(tmp_path, monkeypatch, caplog, capfd) -> None:
    key = f"sk-bbtest-{uuid.uuid4().hex}"
    monkeypatch.setenv("BIASBOUND_FAKE_JUDGE_KEY", key)
    caplog.set_level(logging.DEBUG)
    config = SyntheticServerConfig(api_key_env="BIASBOUND_FAKE_JUDGE_KEY", fault_rate=0.3, fault_kinds=("500",))
    requests = make_requests(3)
    with serve_in_thread(config) as server:
        cfg = JudgeConfig(base_url=server.url, model="synth", api_key_env="BIASBOUND_FAKE_JUDGE_KEY", max_attempts=2,
                          **FAST_RETRY)
        results = judge_many_sync(requests, config=cfg, cache=tmp_path / "cache.sqlite", progress=True)
        monkeypatch.setenv("BIASBOUND_FAKE_JUDGE_KEY", key + "-wrong")
        with pytest.raises(JudgeError) as refused:
            judge_many_sync(make_requests(4)[-3:], config=cfg, cache=tmp_path / "cache.sqlite", progress=False)
    assert all(r.status in ("ok", "failed") for r in results) and any(r.status == "ok" for r in results)
    assert any(r.status == "failed" for r in results)  # error reasons were produced too
    (tmp_path / "results.json").write_text(json.dumps([r.to_dict(include_messages=True) for r in results]))
    (tmp_path / "arena.jsonl").write_text(json.dumps(to_arena_hard_record(
        question_id="q0", model="m", judge="synth", games=results[:2])) + "\n")
    logging.getLogger("biasbound.judge").warning("a message with the key %s in it", key)  # outside a run: no filter
    files = sorted(p for p in tmp_path.iterdir() if p.is_file())
    assert any(p.name.startswith("cache.sqlite") for p in files)
    for path in files:
        assert key.encode() not in path.read_bytes(), path
    assert key not in str(refused.value) and "401" in str(refused.value)
    out, err = capfd.readouterr()
    assert key not in out and key not in err
    in_run_logs = [r.getMessage() for r in caplog.records if "a message with the key" not in r.getMessage()]
    assert in_run_logs and not any(key in m for m in in_run_logs)
    assert key not in repr(cfg) and all(key not in repr(r) for r in results)
    # the redaction helpers themselves
    assert redact(f"Bearer {key} failed", [key]) == "Bearer [REDACTED] failed"
    record = logging.LogRecord("openai", logging.DEBUG, __file__, 1, "headers %s", (f"Bearer {key}",), None)
    assert RedactingFilter([key]).filter(record) and key not in record.getMessage()


def test_missing_key_for_a_remote_endpoint_is_a_clear_error(monkeypatch) -> None:
    cfg = JudgeConfig(base_url="https://judge.example.com/v1", model="m", api_key_env="BIASBOUND_TEST_UNSET_KEY")
    with pytest.raises(JudgeError, match="BIASBOUND_TEST_UNSET_KEY"):
        judge_many_sync(make_requests(1), config=cfg, progress=False)


def test_sync_wrapper_refuses_a_running_loop() -> None:
    cfg = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env="BIASBOUND_TEST_UNSET_KEY")

    async def inside() -> None:
        judge_many_sync([], config=cfg, progress=False)

    with pytest.raises(JudgeError, match="await judge_many"):
        asyncio.run(inside())
    assert asyncio.run(judge_many([], config=cfg, progress=False)) == []


def test_config_and_request_validation() -> None:
    from biasbound import InputError

    with pytest.raises(InputError, match="'concurrency'"):
        JudgeConfig(base_url="http://127.0.0.1/v1", model="m", concurrency=0)
    with pytest.raises(InputError, match="'base_url'"):
        JudgeConfig(base_url="127.0.0.1:8000", model="m")
    with pytest.raises(InputError, match="'max_parse_attempts'"):
        JudgeConfig(base_url="http://127.0.0.1/v1", model="m", max_parse_attempts=0)
    with pytest.raises(InputError, match="'task'"):
        JudgeRequest(key="k", messages=[{"role": "user", "content": "no system message"}])
    with pytest.raises(InputError, match="'messages'"):
        JudgeRequest(key="k", messages=[])


def test_aiohttp_transport_is_not_used_through_a_proxy(monkeypatch) -> None:
    for var in ("BIASBOUND_JUDGE_TRANSPORT", "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "no_proxy",
                "NO_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert _aiohttp_available("https://judge.example.com/v1")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert not _aiohttp_available("https://judge.example.com/v1")  # httpx2 honours the proxy variables
    assert _aiohttp_available("http://judge.example.com/v1")  # no proxy named for plain http
    monkeypatch.setenv("NO_PROXY", "judge.example.com")
    assert _aiohttp_available("https://judge.example.com/v1")


def test_backoff_schedule_is_exponential_capped_plus_jitter(tmp_path, monkeypatch) -> None:
    """Waits before retries 1..5: min(backoff_max, backoff_initial * 2**k) + U(0, jitter) (tenacity's wait_random)."""
    import random

    import biasbound.judge.client as client_module

    slept: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args, **kwargs):
        if delay > 0:
            slept.append(delay)
        return await real_sleep(0)

    monkeypatch.setattr(random, "random", lambda: 1.0)  # the largest jitter
    monkeypatch.setattr(client_module.asyncio, "sleep", recording_sleep)
    failing = SyntheticServerConfig(task_fault_rates={"judge-single": 1.0}, fault_kinds=("500",))
    with serve_in_thread(failing) as server:
        cfg = config_for(server.url, concurrency=1, max_attempts=6, backoff_initial=0.5, backoff_max=3.0,
                         backoff_jitter=0.25)
        (result,) = judge_many_sync([make_requests(1)[-1]], config=cfg, progress=False)
        assert server.stats()["n_requests"] == 6
    assert result.status == "failed" and result.attempts == 6
    assert slept == pytest.approx([0.5 + 0.25, 1.0 + 0.25, 2.0 + 0.25, 3.0 + 0.25, 3.0 + 0.25])


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_refused_connection_stops_before_judging_naming_the_url_and_reason(monkeypatch, transport) -> None:
    import socket

    monkeypatch.setenv("BIASBOUND_JUDGE_TRANSPORT", transport)
    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = config_for(f"http://127.0.0.1:{port}/v1", max_attempts=2)
    # the endpoint is checked before the first judgment: a refused connection stops the run at once,
    # naming the URL and the transport's reason, instead of failing every call after its retries
    with pytest.raises(JudgeError, match=rf"Cannot connect to the endpoint http://127.0.0.1:{port}/v1 .*before judging") as info:
        judge_many_sync([make_requests(1)[-1]], config=cfg, progress=False)
    assert "connect" in str(info.value).lower().split("(", 1)[1]

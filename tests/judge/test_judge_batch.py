"""Batch judging (biasbound.judge.batch) and the tokens-per-minute limit (biasbound.judge.ratelimit), against the
synthetic judge server's real HTTP batch API on localhost. Deterministic: the synthetic judge at fixed seeds; no
wall-clock assertion (the limiter runs on a fake clock)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from biasbound._exceptions import InputError, JudgeError
from biasbound.judge import ratelimit
from biasbound.judge.batch import BatchOptions
from biasbound.judge.client import JudgeConfig, JudgeRequest, JudgeSession
from biasbound.judge.prompts import render_pairwise
from biasbound.testing import SyntheticServerConfig, serve_in_thread

N = 8


def _requests(n: int = N) -> list[JudgeRequest]:
    return [JudgeRequest(key=f"q{i}", messages=render_pairwise(f"question {i}?", f"answer {i} " * (i + 1), "the baseline"))
            for i in range(n)]


def _judge(url: str, folder: Path, *, batch: BatchOptions | None, **config: object) -> tuple[list, JudgeSession]:
    cfg = JudgeConfig(base_url=url, model="synthetic", batch=batch, backoff_initial=0.0, backoff_jitter=0.0,
                      **config)  # type: ignore[arg-type]

    async def go() -> tuple[list, JudgeSession]:
        async with JudgeSession(cfg, cache=folder / "judge_cache.sqlite") as session:
            return await session.judge(_requests()), session

    return asyncio.run(go())


FAST = BatchOptions(poll_interval=0.001)


def _verdicts(results: list) -> list:
    return [(r.key, r.status, r.verdict) for r in results]


def test_a_batch_gives_the_live_verdicts_and_no_live_call(tmp_path: Path) -> None:
    with serve_in_thread(SyntheticServerConfig(batch_polls=3)) as server:
        live, _ = _judge(server.url, tmp_path / "live", batch=None)
        n_live = server.stats()["n_requests"]
        server.reset()
        batched, session = _judge(server.url, tmp_path / "batch", batch=FAST)
        stats = server.stats()
    assert n_live == N and stats["n_requests"] == 0  # every batch reply came from the batch, none live
    assert stats["batches"]["created"] == 1 and stats["batches"]["retrieved"] == 3
    assert _verdicts(batched) == _verdicts(live) and all(r.status == "ok" for r in batched)
    assert {r.batch for r in batched} == {"batch_000001"} and session.notes == []
    assert [r.prompt_tokens for r in batched] == [r.prompt_tokens for r in live]  # the reported usage is kept
    record = json.loads((tmp_path / "batch" / "judge_batches.json").read_text())["batches"]
    assert [b["batch_id"] for b in record] == ["batch_000001"] and record[0]["collected"]
    # a second session reads every result from the cache: nothing is submitted again
    with serve_in_thread(SyntheticServerConfig()) as server:
        again, _ = _judge(server.url, tmp_path / "batch", batch=FAST)
        assert server.stats()["batches"]["created"] == 0
    assert all(r.from_cache for r in again) and _verdicts(again) == _verdicts(live)


def test_a_killed_session_polls_its_recorded_batch_and_submits_nothing_again(tmp_path: Path) -> None:
    """The session is cancelled (a kill, as far as the session can tell) while it waits on its batch; the next
    one finds the batch id in judge_batches.json and polls it: the server counts exactly one submission."""
    with serve_in_thread(SyntheticServerConfig(batch_polls=6)) as server:
        cfg = JudgeConfig(base_url=server.url, model="synthetic", batch=BatchOptions(poll_interval=0.01))
        state_file = tmp_path / "judge_batches.json"

        async def killed() -> None:
            async with JudgeSession(cfg, cache=tmp_path / "judge_cache.sqlite") as session:
                task = asyncio.ensure_future(session.judge(_requests()))
                while not state_file.exists():
                    await asyncio.sleep(0.001)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

        asyncio.run(killed())
        recorded = json.loads(state_file.read_text())["batches"]
        assert len(recorded) == 1 and not recorded[0]["collected"]
        assert server.stats()["batches"]["retrieved"] < 6  # killed before the batch ended
        results, _ = _judge(server.url, tmp_path, batch=BatchOptions(poll_interval=0.01))
        stats = server.stats()
    assert stats["batches"]["created"] == 1 and stats["n_requests"] == 0
    assert {r.batch for r in results} == {recorded[0]["batch_id"]} and all(r.status == "ok" for r in results)


def test_an_expired_batch_re_asks_only_the_requests_without_a_reply(tmp_path: Path) -> None:
    with serve_in_thread(SyntheticServerConfig()) as server:
        live, _ = _judge(server.url, tmp_path / "live", batch=None)
    with serve_in_thread(SyntheticServerConfig(batch_mode="expire", batch_polls=2)) as server:
        results, session = _judge(server.url, tmp_path / "batch", batch=FAST)
        stats, log = server.stats(), server.log
    answered = [r for r in results if r.batch is not None]
    assert len(answered) == N - N // 2 and stats["n_requests"] == N // 2  # the expired half, asked live once each
    live_asked = {json.dumps(e["messages"]) for e in log}
    assert live_asked == {json.dumps(list(r.messages)) for r in results if r.batch is None}
    assert _verdicts(results) == _verdicts(live)
    (note,) = session.notes
    assert note == ("The batch batch_000001 expired before its completion window (24h) ended: 4 of its 8 requests "
                    "have no reply; they were asked live.")


def test_a_failed_batch_stops_the_session_in_one_sentence_with_fallback_stop(tmp_path: Path) -> None:
    with serve_in_thread(SyntheticServerConfig(batch_mode="fail")) as server:
        with pytest.raises(JudgeError) as caught:
            _judge(server.url, tmp_path, batch=BatchOptions(poll_interval=0.001, fallback="stop"))
        assert server.stats()["n_requests"] == 0
    text = str(caught.value)
    assert text.startswith("The batch batch_000001 failed (Synthetic batch failure") and "8 of its 8 requests" in text
    assert text.count(". ") == 0 and "\n" not in text  # one sentence


def test_batch_prices_come_from_the_config_and_are_never_invented(tmp_path: Path) -> None:
    prices = {"prompt_price_per_million": 2.0, "completion_price_per_million": 8.0}
    with serve_in_thread(SyntheticServerConfig()) as server:
        live, _ = _judge(server.url, tmp_path / "a", batch=None, **prices)
        half, _ = _judge(server.url, tmp_path / "b", batch=BatchOptions(poll_interval=0.001, discount=0.5), **prices)
        unpriced, _ = _judge(server.url, tmp_path / "c", batch=FAST, **prices)
    assert [r.cost for r in half] == pytest.approx([r.cost / 2 for r in live], rel=1e-12)
    assert all(r.cost is None for r in unpriced)
    assert BatchOptions(prompt_price_per_million=1.0, completion_price_per_million=4.0).prices(2.0, 8.0) == (1.0, 4.0)
    with pytest.raises(InputError, match="both"):
        BatchOptions(prompt_price_per_million=1.0)
    with pytest.raises(InputError, match="'fallback'"):
        BatchOptions(fallback="retry")


def test_the_api_key_reaches_no_file_of_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-batch-test-0123456789abcdef"
    monkeypatch.setenv("BIASBOUND_TEST_BATCH_KEY", secret)
    with serve_in_thread(SyntheticServerConfig(api_key_env="BIASBOUND_TEST_BATCH_KEY", batch_mode="expire")) as server:
        results, _ = _judge(server.url, tmp_path, batch=FAST, api_key_env="BIASBOUND_TEST_BATCH_KEY")
    assert all(r.status == "ok" for r in results)  # the server checked the key on every route
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"judge_cache.sqlite", "judge_batches.json"}
    assert not [p for p in files if secret.encode() in p.read_bytes()]


# ------------------------------------------------------------------------------------ tokens per minute
class FakeClock:
    """Time that passes only when the limiter sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


def test_the_token_limit_holds_every_minute_against_the_synthetic_server(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(ratelimit, "clock", clock)
    monkeypatch.setattr(ratelimit, "sleep", clock.sleep)
    starts: list[tuple[float, int]] = []
    real_acquire = ratelimit.TokenLimiter.acquire

    async def recording(self: ratelimit.TokenLimiter, tokens: int) -> list[float]:
        entry = await real_acquire(self, tokens)
        starts.append((entry[0], tokens))
        return entry

    monkeypatch.setattr(ratelimit.TokenLimiter, "acquire", recording)
    estimate = ratelimit.estimate_tokens(_requests()[0].messages, 64, "synthetic")
    limit = 3 * estimate  # about three calls a minute
    with serve_in_thread(SyntheticServerConfig()) as server:
        results, _ = _judge(server.url, tmp_path, batch=None, tokens_per_minute=limit, max_tokens=64, concurrency=8)
    assert all(r.status == "ok" for r in results) and len(starts) == N
    # the estimates reserved within any 60 s of fake time never pass the limit
    for t0, _ in starts:
        assert sum(tok for t, tok in starts if t0 <= t < t0 + 60.0) <= limit
    # waiting happened on the fake clock only: the 8 calls needed more than one minute of it
    assert clock.now - 1000.0 > 60.0 and clock.sleeps


def test_a_reservation_is_corrected_by_the_reported_usage(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr(ratelimit, "clock", clock)
    monkeypatch.setattr(ratelimit, "sleep", clock.sleep)

    async def go() -> tuple[float, float, float]:
        lim = ratelimit.TokenLimiter(1000)
        a = await lim.acquire(900)
        lim.settle(a, 100)  # the server reported 100 tokens: 900 more fit at once
        before = clock.now
        await lim.acquire(900)
        waited_for = clock.now - before
        await lim.acquire(500)  # 1000 in the window: this one waits until the first two leave it
        return waited_for, clock.now - before, lim.in_window()

    no_wait, waited, left = asyncio.run(go())
    assert no_wait == 0.0 and waited == pytest.approx(60.0) and left == 500.0


def test_the_token_rule_is_stated_and_counts_max_tokens() -> None:
    msgs = [{"role": "user", "content": "x" * 400}]
    assert ratelimit.estimate_tokens(msgs, 50) - ratelimit.estimate_tokens(msgs, 0) == 50
    assert "tiktoken" in ratelimit.TOKEN_RULE
    if "not installed" in ratelimit.TOKEN_RULE:
        assert ratelimit.estimate_tokens(msgs, 0) == 100 + 4
    with pytest.raises(InputError, match="tokens_per_minute"):
        JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", tokens_per_minute=0)


# ------------------------------------------------------------------------------------ the run config
def _run_config(tmp_path: Path, **judge: object) -> dict:
    table = tmp_path / "answers.csv"
    table.write_text("item_id,question,model,answer,baseline\n"
                     "1,q1,m,a1,b1\n2,q2,m,a2,b2\n", encoding="utf-8")
    return {"data": {"table": str(table)}, "output": str(tmp_path / "out"),
            "judge": {"base_url": "http://127.0.0.1:8011/v1", "model": "j", **judge}}


def test_the_run_config_declares_batch_and_tokens_per_minute(tmp_path: Path) -> None:
    from biasbound._exceptions import DataFormatError
    from biasbound.config import parse_config

    cfg = parse_config(_run_config(tmp_path, batch=True, tokens_per_minute=90_000), base=tmp_path)
    jc = cfg.judge.judge_config()
    assert jc.batch == BatchOptions() and jc.tokens_per_minute == 90_000
    assert cfg.to_dict()["judge"]["batch"]["poll_interval"] == 30.0  # the run summary's config is JSON-ready
    cfg = parse_config(_run_config(tmp_path, batch={"poll_interval": 5, "discount": 0.5, "fallback": "stop"}),
                       base=tmp_path)
    assert cfg.judge.batch == BatchOptions(poll_interval=5.0, discount=0.5, fallback="stop")
    assert parse_config(_run_config(tmp_path, batch=False), base=tmp_path).judge.batch is None
    bad = [({"batch": {"discount": 1.5}}, "'judge.batch.discount'"),
           ({"batch": {"fallback": "retry"}}, "'judge.batch.fallback'"),
           ({"batch": {"wait": 1}}, "judge.batch"),
           ({"batch": {"prices": {"prompt_per_million": 1.0}}}, "'judge.batch.prices'"),
           ({"tokens_per_minute": 0}, "'judge.tokens_per_minute'")]
    for judge, key in bad:
        with pytest.raises(DataFormatError, match=key):
            parse_config(_run_config(tmp_path, **judge), base=tmp_path)


def test_a_batch_cancelled_by_hand_is_named_and_its_requests_asked_live(tmp_path: Path) -> None:
    """Someone cancels the batch (``batches.cancel`` through the openai SDK) while the session waits on it."""
    import openai

    with serve_in_thread(SyntheticServerConfig(batch_polls=10**6)) as server:
        cfg = JudgeConfig(base_url=server.url, model="synthetic", batch=BatchOptions(poll_interval=0.005))
        state_file = tmp_path / "judge_batches.json"

        async def go() -> tuple[list, list[str]]:
            async with JudgeSession(cfg, cache=tmp_path / "judge_cache.sqlite") as session:
                task = asyncio.ensure_future(session.judge(_requests()))
                while not state_file.exists():
                    await asyncio.sleep(0.001)
                (record,) = json.loads(state_file.read_text())["batches"]
                async with openai.AsyncOpenAI(base_url=server.url, api_key="EMPTY") as client:
                    cancelled = await client.batches.cancel(record["batch_id"])
                assert cancelled.status == "cancelled"
                return await task, session.notes

        results, notes = asyncio.run(go())
        stats = server.stats()
    assert stats["batches"]["cancelled"] == 1 and stats["n_requests"] == N and all(r.status == "ok" for r in results)
    assert notes == ["The batch batch_000001 was cancelled: 8 of its 8 requests have no reply; they were asked live."]


def test_the_server_refuses_bad_batch_input_and_its_cli_takes_the_modes() -> None:
    from biasbound.commands import serve

    assert serve.build_config(batch_mode="expire", batch_polls=3).batch_mode == "expire"
    with pytest.raises(InputError, match="batch_mode"):
        serve.build_config(batch_mode="sometimes")
    with pytest.raises(InputError, match="batch_polls"):
        SyntheticServerConfig(batch_polls=0)
    import openai

    with serve_in_thread() as server:
        client = openai.OpenAI(base_url=server.url, api_key="EMPTY", max_retries=0)
        with pytest.raises(openai.NotFoundError):
            client.batches.create(input_file_id="file-none", endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.BadRequestError):
            client.files.create(file=("x.jsonl", b"{}\n"), purpose="fine-tune")
        client.close()


def test_a_server_without_a_batch_api_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from biasbound.testing import _batches

    def no_route(self, state, method, path, headers, body):  # a server that serves chat completions only
        return 404, {"error": {"message": f"No route {path!r}.", "type": "not_found_error", "code": 404}}

    monkeypatch.setattr(_batches.BatchStore, "route", no_route)
    with serve_in_thread() as server:
        with pytest.raises(JudgeError) as caught:
            _judge(server.url, tmp_path, batch=FAST)
        assert server.stats()["n_requests"] == 0
    text = str(caught.value)
    assert text.startswith(f"The judge endpoint {server.url} refused the batch route (HTTP 404 on POST /v1/files")
    assert "remove 'batch'" in text and "\n" not in text

"""An endpoint that cannot be reached stops a run at once, with a sentence naming the URL; judgments already
made stay cached."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from biasbound import JudgeError
from biasbound.cli import main
from biasbound.judge.cache import JudgeCache
from biasbound.judge.client import MAX_CONNECTION_FAILURES, JudgeConfig, JudgeRequest, JudgeSession
from biasbound.testing import serve_in_thread

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "run-synthetic.yaml"


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(i: int) -> JudgeRequest:
    return JudgeRequest(key=f"k{i}", task="paraphrase",
                        messages=[{"role": "system", "content": "biasbound-task: paraphrase\nRewrite the text."},
                                  {"role": "user", "content": f"<<<RESPONSE\nThe answer number {i} is here.\nRESPONSE>>>"}])


def test_run_against_a_dead_endpoint_names_the_url_at_once(tmp_path: Path, capsys) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    root = EXAMPLE.parents[1]
    text = EXAMPLE.read_text().replace("http://127.0.0.1:8011/v1", url).replace("../src", str(root / "src"))
    text = text.replace("output: runs/synthetic", f"output: {tmp_path / 'out'}").replace("n_items: 80", "n_items: 12")
    cfg = tmp_path / "run.yaml"
    cfg.write_text(text)
    code = main(["run", str(cfg), "--no-progress"])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "Traceback" not in err
    assert f"Cannot connect to the endpoint {url}" in err and "before judging" in err
    assert "variant" not in err  # the cause is named, not a missing neighbour later on
    # it stopped at the one request before judging (it used to retry 402 attempts for 12 items); how long
    # that takes is benchmarks' business, not a test's


def test_connection_failures_in_a_row_stop_the_session_and_keep_the_cache(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.sqlite"

    async def go() -> None:
        with serve_in_thread() as server:
            cfg = JudgeConfig(base_url=server.url, model="biasbound-synthetic-judge", max_attempts=3,
                              backoff_initial=0.001, backoff_max=0.002, backoff_jitter=0.001, concurrency=2)
            async with JudgeSession(cfg, cache=cache_path) as session:
                first = await session.judge([_request(i) for i in range(4)])
                assert all(r.status == "ok" for r in first)
                server.stop()  # the endpoint goes away in the middle of the run
                with pytest.raises(JudgeError, match=f"Cannot connect to the endpoint {server.url}.*failed "
                                                     f"connections in a row"):
                    await session.judge([_request(i) for i in range(4, 30)])
                # at most the attempts in flight when the limit was hit, not 26 calls x 3 attempts
                assert session._run.connection_failures < MAX_CONNECTION_FAILURES + cfg.concurrency

    asyncio.run(go())
    with JudgeCache(cache_path) as cache:
        assert cache.counts()["ok"] >= 4  # what was judged before the failure stays


def test_a_dead_rewriter_is_named_before_anything_is_judged(tmp_path: Path, capsys) -> None:
    dead = f"http://127.0.0.1:{_closed_port()}/v1"
    root = EXAMPLE.parents[1]
    with serve_in_thread() as server:
        text = EXAMPLE.read_text().replace("../src", str(root / "src"))
        text = text.replace("output: runs/synthetic", f"output: {tmp_path / 'out'}").replace("n_items: 80", "n_items: 6")
        judge_part, rewriter_part = text.split("rewriter:", 1)
        text = (judge_part.replace("http://127.0.0.1:8011/v1", server.url)
                + "rewriter:" + rewriter_part.replace("http://127.0.0.1:8011/v1", dead))
        cfg = tmp_path / "run.yaml"
        cfg.write_text(text)
        code = main(["run", str(cfg), "--no-progress"])
        served = server.stats()["n_requests"]
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "Traceback" not in err
    assert f"Cannot connect to the endpoint {dead}" in err and "before judging" in err
    assert served <= 1  # at most the judge's one cheap check: no judgment was requested

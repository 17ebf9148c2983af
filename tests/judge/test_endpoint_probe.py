"""The one cheap request before judging: a slow reply is asked again, a dead or silent endpoint stops the run.

A real HTTP server on localhost (``http.server``) whose ``GET /models`` replies come late for the first
``late`` requests (later than the client's timeout), then at once.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from biasbound import JudgeError
from biasbound.judge.client import PROBE_TRIES, JudgeConfig, JudgeSession

TIMEOUT = 0.5  # the client's timeout (s)
LATE = 20.0  # a late reply waits this long: far past the timeout, whatever the machine's load


def _serve(late: int) -> tuple[ThreadingHTTPServer, dict]:
    seen = {"models": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with lock:
                seen["models"] += 1
                n = seen["models"]
            if n <= late:
                time.sleep(LATE)
            body = json.dumps({"object": "list", "data": []}).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:  # the client gave up on this one
                pass

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


async def _probe(url: str) -> None:
    cfg = JudgeConfig(base_url=url, model="m", timeout=TIMEOUT, max_attempts=2, backoff_initial=0.001,
                      backoff_max=0.002, backoff_jitter=0.001)
    async with JudgeSession(cfg, cache=None) as session:
        await session.check_endpoint()


def test_a_slow_first_reply_is_asked_again_not_called_unreachable() -> None:
    server, seen = _serve(late=PROBE_TRIES - 1)
    try:
        asyncio.run(_probe(f"http://127.0.0.1:{server.server_address[1]}/v1"))  # no JudgeError
    finally:
        server.shutdown()
    assert seen["models"] == PROBE_TRIES  # two late replies given up on, the third answered


def test_an_endpoint_that_never_answers_in_time_stops_the_run_with_one_sentence() -> None:
    server, seen = _serve(late=10**6)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        with pytest.raises(JudgeError) as info:
            asyncio.run(_probe(url))
    finally:
        server.shutdown()
    text = str(info.value)
    assert f"The endpoint {url} accepted the connection but did not answer" in text
    assert f"in {PROBE_TRIES} tries before judging" in text and "\n" not in text
    assert seen["models"] == PROBE_TRIES

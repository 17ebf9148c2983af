"""A real HTTP server speaking the OpenAI chat-completions protocol, answering with the synthetic judge.

Use it to test judge pipelines (this package's and others') against a judge whose biases
are known exactly: ``POST /v1/chat/completions`` answers with
:meth:`biasbound.testing.synthetic.SyntheticJudge.reply` (the request's ``seed`` seeds the
jitter), ``GET /v1/models`` lists the one model, ``GET /v1/stats`` reports counters.

Latency and faults are configurable. For each request the server counts how many times it
has seen that exact request body before (the *attempt*), and draws
``u = hash(fault_seed, body, attempt)``: with probability ``fault_rate`` the attempt fails, the
kind chosen evenly among ``fault_kinds``: ``429``, ``500``, ``timeout`` (sleeps
``timeout_sleep_s`` seconds -- set it past the client timeout), ``truncated`` (the reply cut
before its verdict, ``finish_reason="length"``) or ``garbage`` (text without a verdict).
Because each attempt draws afresh, retries eventually succeed unless the rate is 1.

Only the standard library is used (``http.server.ThreadingHTTPServer``). Start it with
:func:`serve_in_thread` in tests or ``biasbound serve-synthetic-judge`` from a shell.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from biasbound._exceptions import InputError
from biasbound._validation import check_in_range, check_int
from biasbound.judge.parsing import task_of
from biasbound.testing.synthetic import SyntheticJudge, SyntheticJudgeConfig

__all__ = ["FAULT_KINDS", "RunningServer", "SyntheticServerConfig", "run_server", "serve_in_thread"]

FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "truncated", "garbage")
_TRUNCATE_BEFORE = ("My final verdict", "Rating:", "RESPONSE>>>")
_GARBAGE = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor".split()


@dataclass(frozen=True)
class SyntheticServerConfig:
    """Configuration of the synthetic judge server.

    Parameters
    ----------
    judge:
        The judging formula's coefficients.
    model:
        The one model name served (requests may name any model; it is echoed back).
    latency_ms:
        Delay before every reply, in milliseconds.
    fault_rate:
        Probability that an attempt fails (0 to 1).
    fault_kinds:
        Kinds drawn evenly when an attempt fails (subset of :data:`FAULT_KINDS`).
    task_fault_rates:
        Per-task overrides of ``fault_rate`` (e.g. ``{"judge-single": 1.0}``).
    fault_seed:
        Seed of the per-attempt fault draws.
    timeout_sleep_s:
        How long a ``timeout`` fault sleeps before answering.
    api_key_env:
        When set, the server reads the expected key from this environment variable at start and
        answers 401 to requests without ``Authorization: Bearer <key>``.
    """

    judge: SyntheticJudgeConfig = field(default_factory=SyntheticJudgeConfig)
    model: str = "biasbound-synthetic-judge"
    latency_ms: float = 0.0
    fault_rate: float = 0.0
    fault_kinds: tuple[str, ...] = FAULT_KINDS
    task_fault_rates: Mapping[str, float] = field(default_factory=dict)
    fault_seed: int = 0
    timeout_sleep_s: float = 5.0
    api_key_env: str | None = None

    def __post_init__(self) -> None:
        where = "SyntheticServerConfig"
        if not isinstance(self.judge, SyntheticJudgeConfig):
            raise TypeError(f"The 'judge' parameter of {where} must be a SyntheticJudgeConfig. Got {type(self.judge).__name__} instead.")
        check_in_range(self.latency_ms, "latency_ms", where, low=0)
        check_in_range(self.fault_rate, "fault_rate", where, low=0, high=1)
        kinds = tuple(self.fault_kinds)
        if not kinds or any(k not in FAULT_KINDS for k in kinds):
            raise InputError(f"The 'fault_kinds' parameter of {where} must be a non-empty subset of {list(FAULT_KINDS)}. Got {list(kinds)} instead.")
        object.__setattr__(self, "fault_kinds", kinds)
        for task, rate in dict(self.task_fault_rates).items():
            check_in_range(rate, f"task_fault_rates[{task!r}]", where, low=0, high=1)
        object.__setattr__(self, "task_fault_rates", dict(self.task_fault_rates))
        check_int(self.fault_seed, "fault_seed", where, low=0)
        check_in_range(self.timeout_sleep_s, "timeout_sleep_s", where, low=0)


class _State:
    """Counters and the request log, shared by the handler threads."""

    def __init__(self, config: SyntheticServerConfig, api_key: str | None) -> None:
        self.config = config
        self.judge = SyntheticJudge(config.judge)
        self.api_key = api_key
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.n_requests = 0
        self.outcomes: Counter[str] = Counter()
        self.attempts: Counter[str] = Counter()
        self.log: list[dict[str, Any]] = []

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def next_attempt(self, body_hash: str) -> int:
        with self.lock:
            self.n_requests += 1
            attempt = self.attempts[body_hash]
            self.attempts[body_hash] += 1
            return attempt

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.outcomes[entry["outcome"]] += 1
            self.log.append(entry)

    def stats(self) -> dict[str, Any]:
        with self.lock:
            return {"n_requests": self.n_requests, "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
                    "outcomes": dict(self.outcomes)}

    def reset(self) -> None:
        with self.lock:
            self.max_in_flight = self.in_flight
            self.n_requests = 0
            self.outcomes.clear()
            self.log.clear()

    def fault(self, task: str | None, body_hash: str, attempt: int) -> str | None:
        cfg = self.config
        rate = cfg.task_fault_rates.get(task or "", cfg.fault_rate)
        if rate <= 0.0:
            return None
        digest = hashlib.sha256(f"{cfg.fault_seed}\x1f{body_hash}\x1f{attempt}".encode()).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
        if u >= rate:
            return None
        return cfg.fault_kinds[min(len(cfg.fault_kinds) - 1, int(u / rate * len(cfg.fault_kinds)))]


def _truncate(text: str) -> str:
    cuts = [text.find(m) for m in _TRUNCATE_BEFORE if text.find(m) >= 0]
    return text[: min(cuts)] if cuts else text[: len(text) // 2]


def _garbage(body_hash: str, attempt: int) -> str:
    digest = hashlib.sha256(f"garbage\x1f{body_hash}\x1f{attempt}".encode()).digest()
    return " ".join(_GARBAGE[b % len(_GARBAGE)] for b in digest[:24])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "biasbound-synthetic-judge"
    state: _State  # set on the subclass made per server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's signature
        """Silence the per-request access log."""

    def _send_json(self, code: int, payload: Mapping[str, Any]) -> None:
        body = json.dumps(payload).encode("utf-8")
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout); nothing to do

    def _error(self, code: int, message: str, kind: str) -> None:
        self._send_json(code, {"error": {"message": message, "type": kind, "code": code}})

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": self.state.config.model, "object": "model", "created": 0, "owned_by": "biasbound"}]})
        elif path in ("/v1/stats", "/stats"):
            self._send_json(200, self.state.stats())
        else:
            self._error(404, f"No route {path!r}.", "not_found_error")

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"No route {path!r}.", "not_found_error")
            return
        state = self.state
        if state.api_key is not None and self.headers.get("Authorization", "") != f"Bearer {state.api_key}":
            self._error(401, "Missing or wrong API key.", "authentication_error")
            return
        try:
            body = json.loads(raw or b"{}")
            messages = body["messages"]
            task = task_of(messages)
        except (ValueError, KeyError, TypeError, AttributeError):
            self._error(400, "The body must be a JSON chat-completions request with 'messages'.", "invalid_request_error")
            return
        body_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
        attempt = state.next_attempt(body_hash)
        state.enter()
        try:
            self._answer(body, messages, task, body_hash, attempt)
        finally:
            state.leave()

    def _answer(self, body: dict[str, Any], messages: list[dict[str, Any]], task: str | None,
                body_hash: str, attempt: int) -> None:
        state = self.state
        cfg = state.config
        if cfg.latency_ms > 0:
            time.sleep(cfg.latency_ms / 1000.0)
        fault = state.fault(task, body_hash, attempt)
        entry = {"body_hash": body_hash, "attempt": attempt, "task": task, "model": body.get("model"),
                 "messages": messages, "seed": body.get("seed"), "temperature": body.get("temperature"),
                 "max_tokens": body.get("max_tokens"), "top_p": body.get("top_p"), "outcome": fault or "ok",
                 "time": time.time()}
        if fault == "timeout":
            time.sleep(cfg.timeout_sleep_s)
        if fault == "429":
            state.record(entry)
            self._error(429, "Synthetic rate limit: slow down.", "rate_limit_error")
            return
        if fault == "500":
            state.record(entry)
            self._error(500, "Synthetic internal server error.", "server_error")
            return
        try:
            text = state.judge.reply(messages, body.get("seed"))
        except InputError as exc:
            entry["outcome"] = "bad-request"
            state.record(entry)
            self._error(400, str(exc), "invalid_request_error")
            return
        finish = "stop"
        if fault == "truncated":
            text, finish = _truncate(text), "length"
        elif fault == "garbage":
            text = _garbage(body_hash, attempt)
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        completion_tokens = len(text.split())
        state.record(entry)
        self._send_json(200, {
            "id": f"chatcmpl-{body_hash[:24]}-{attempt}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or cfg.model,
            "system_fingerprint": "biasbound-synthetic",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        })


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    allow_reuse_address = True


def _make_server(config: SyntheticServerConfig, host: str, port: int) -> tuple[_Server, _State]:
    if not isinstance(config, SyntheticServerConfig):
        raise TypeError(f"The 'config' parameter must be a SyntheticServerConfig. Got {type(config).__name__} instead.")
    api_key = None
    if config.api_key_env is not None:
        api_key = os.environ.get(config.api_key_env)
        if not api_key:
            raise InputError(f"The environment variable {config.api_key_env!r} named by 'api_key_env' is not set.")
    state = _State(config, api_key)
    handler = type("_BoundHandler", (_Handler,), {"state": state})
    return _Server((host, port), handler), state


@dataclass
class RunningServer:
    """A server running in a background thread.

    Unpacks as ``url, stop = running``; also exposes :meth:`stats`, :attr:`log` and :meth:`reset`.
    """

    url: str
    stop: Callable[[], None]
    _state: _State

    def __iter__(self) -> Iterator[Any]:
        return iter((self.url, self.stop))

    def stats(self) -> dict[str, Any]:
        """Counters: ``n_requests``, ``in_flight``, ``max_in_flight``, ``outcomes``."""
        return self._state.stats()

    @property
    def log(self) -> list[dict[str, Any]]:
        """A copy of the request log (one dict per request: task, model, messages, seed, sampling, attempt, outcome)."""
        with self._state.lock:
            return list(self._state.log)

    def reset(self) -> None:
        """Clear the counters and the log (the per-body attempt counts are kept)."""
        self._state.reset()


@contextmanager
def serve_in_thread(
    config: SyntheticServerConfig | None = None, *, host: str = "127.0.0.1", port: int = 0
) -> Iterator[RunningServer]:
    """Run the synthetic judge server in a daemon thread for the duration of a ``with`` block.

    Parameters
    ----------
    config:
        Server configuration; ``None`` uses the defaults (no latency, no faults).
    host, port:
        Where to listen; port 0 picks a free port.

    Yields
    ------
    RunningServer
        ``url`` is the OpenAI base URL (``http://host:port/v1``); ``stop()`` shuts the server down
        (also done on exit).

    Examples
    --------
    >>> with serve_in_thread() as server:
    ...     server.url.startswith("http://127.0.0.1:")
    True
    """
    server, state = _make_server(config or SyntheticServerConfig(), host, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                              name="biasbound-synthetic-judge")
    thread.start()
    stopped = threading.Event()

    def stop() -> None:
        if not stopped.is_set():
            stopped.set()
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)

    actual_host, actual_port = server.server_address[:2]
    try:
        yield RunningServer(f"http://{actual_host}:{actual_port}/v1", stop, state)
    finally:
        stop()


def run_server(
    config: SyntheticServerConfig | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 8011,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve in the foreground until interrupted (Ctrl-C); ``on_ready(url)`` is called once listening."""
    server, _ = _make_server(config or SyntheticServerConfig(), host, port)
    actual_host, actual_port = server.server_address[:2]
    if on_ready is not None:
        on_ready(f"http://{actual_host}:{actual_port}/v1")
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()

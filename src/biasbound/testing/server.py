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

The server is one asyncio event loop (standard library only; ``uvloop`` is used when it is
installed, as an optional speed-up) with a minimal HTTP/1.1 keep-alive parser: request line,
headers and a ``Content-Length`` body (a chunked request body is refused with 501). Latency and
``timeout`` sleeps are timers on the loop, so thousands of requests can wait at once without a
thread each. Start it with :func:`serve_in_thread` in tests or ``biasbound serve-synthetic-judge``
from a shell.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import signal
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

from biasbound._exceptions import InputError
from biasbound._validation import arg, check_in_range, check_int, cli_command
from biasbound.judge.parsing import task_of
from biasbound.testing.synthetic import SyntheticJudge, SyntheticJudgeConfig

__all__ = ["FAULT_KINDS", "REPLY_STYLES", "RunningServer", "SyntheticServerConfig", "run_server", "serve_in_thread"]

FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "truncated", "garbage")
#: How the server answers, like a real small model would: ``native`` (biasbound's own format), ``prose`` (a sentence
#: with no verdict), ``echo`` (the prompt's last lines repeated), ``number`` (a bare number 1-10), ``letter``
#: (``Output (a)`` / ``Output (b)``, with log-probabilities of the two letters), ``identifier`` (AlpacaEval's ``m`` /
#: ``M``, with log-probabilities of the two), ``ranking`` (AlpacaEval 1's Python list ``[{'model': 'model_1', 'rank':
#: 1}, ...]``). Non-native replies depend only on the messages and the seed: identical requests get identical
#: replies; ``letter``, ``identifier`` and ``ranking`` name the first-shown answer with probability 0.7 (a position bias).
REPLY_STYLES: tuple[str, ...] = ("native", "prose", "echo", "number", "letter", "identifier", "ranking")
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
    style:
        How replies are written (:data:`REPLY_STYLES`): ``native`` or a small model's ways.
    serial:
        Serve one request at a time: each waits for the ones before it (``latency_ms`` each).
    batch_mode, batch_polls:
        The batch API (``/v1/files``, ``/v1/batches``: :mod:`biasbound.testing._batches`): a batch ends at its
        ``batch_polls``-th retrieval, ``complete`` (every request answered), ``expire`` (half answered, the
        rest in the error file) or ``fail``.
    replay:
        ``None`` (the synthetic judge), or a judgment set to replay: ``"demo"`` (the embedded set), a
        :class:`~biasbound.data.JudgmentSet` or its frame. The server then answers pairwise judge
        requests with the recorded verdicts (:class:`biasbound.testing.replay.ReplayJudge`; the run's
        inputs come from :func:`~biasbound.testing.replay.write_replay_inputs`); latency and faults apply
        as usual.
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
    replay: Any = None
    style: str = "native"
    serial: bool = False
    batch_mode: str = "complete"
    batch_polls: int = 1

    def __post_init__(self) -> None:
        where = "SyntheticServerConfig"
        from biasbound.testing._batches import BATCH_MODES

        if self.batch_mode not in BATCH_MODES:
            raise InputError(f"The 'batch_mode' parameter of {where} must be one of {list(BATCH_MODES)}. "
                             f"Got {self.batch_mode!r} instead.")
        check_int(self.batch_polls, "batch_polls", where, low=1)
        if self.style not in REPLY_STYLES:
            raise InputError(f"The 'style' parameter of {where} must be one of {list(REPLY_STYLES)}. Got {self.style!r} instead.")
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
    """Counters and the request log (mutated on the event loop, read from any thread under the lock)."""

    def __init__(self, config: SyntheticServerConfig, api_key: str | None) -> None:
        self.config = config
        if config.replay is not None:
            from biasbound.testing.replay import ReplayJudge

            self.judge: Any = ReplayJudge(config.replay)
        else:
            self.judge = SyntheticJudge(config.judge)
        self.api_key = api_key
        self.busy_until = 0.0  # serial mode: when the one request being served is done (loop time)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.n_requests = 0
        self.outcomes: Counter[str] = Counter()
        self.attempts: Counter[str] = Counter()
        self.log: list[dict[str, Any]] = []
        from biasbound.testing._batches import BatchStore

        self.batches = BatchStore(config.batch_mode, config.batch_polls, completion_payload)

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
                    "outcomes": dict(self.outcomes), "batches": dict(self.batches.counts)}

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


def _styled(style: str, messages: Any, seed: Any) -> tuple[str, dict[str, Any] | None]:
    """A reply in one of the non-native :data:`REPLY_STYLES`: a function of the messages and the seed alone."""
    digest = hashlib.sha256(json.dumps([messages, seed], sort_keys=True).encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    last = str(messages[-1].get("content", "")) if messages else ""
    if style == "prose":
        return "Both outputs have their merits, and the better one depends on what the user values most.", None
    if style == "echo":
        return "\n".join(last.splitlines()[-3:]), None
    if style == "number":
        return str(1 + int(u * 10)), None
    p_a = 0.7
    if style == "ranking":
        first = 1 if u < p_a else 2
        return str([{"model": "model_1", "rank": first}, {"model": "model_2", "rank": 3 - first}]), None
    a, b = ("m", "M") if style == "identifier" else ("a", "b")
    letter = a if u < p_a else b
    lp = {a: math.log(p_a), b: math.log(1 - p_a)}
    content = [{"token": letter, "logprob": lp[letter],
                "top_logprobs": [{"token": t, "logprob": v} for t, v in lp.items()]}]
    return (letter if style == "identifier" else f"Output ({letter})"), {"content": content}


def _truncate(text: str) -> str:
    cuts = [text.find(m) for m in _TRUNCATE_BEFORE if text.find(m) >= 0]
    return text[: min(cuts)] if cuts else text[: len(text) // 2]


def _garbage(body_hash: str, attempt: int) -> str:
    digest = hashlib.sha256(f"garbage\x1f{body_hash}\x1f{attempt}".encode()).digest()
    return " ".join(_GARBAGE[b % len(_GARBAGE)] for b in digest[:24])


_MAX_HEAD = 64 * 1024  # bytes of request line + headers
_MAX_BODY = 256 * 1024 * 1024
_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_BATCH_PATHS = ("/v1/files", "/v1/batches", "/files", "/batches")
_SERVER_NAME = "biasbound-synthetic-judge"
_REASONS = {s.value: s.phrase for s in HTTPStatus}


class _Date:
    """The ``Date`` header value, formatted once per second."""

    def __init__(self) -> None:
        self._second = -1
        self._value = ""

    def __call__(self) -> str:
        now = time.time()
        second = int(now)
        if second != self._second:
            self._second, self._value = second, formatdate(now, usegmt=True)
        return self._value


class _Request:
    """One parsed HTTP request."""

    __slots__ = ("method", "path", "headers", "body", "keep_alive")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes, keep_alive: bool) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


class _BadRequest(Exception):
    """The bytes received are not an HTTP/1.x request this server can frame; answer and close."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """Request line and headers (names lower-cased) of one request head (without the blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, f"Bad request line {lines[0][:100]!r}.")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise _BadRequest(400, f"Bad header line {line[:100]!r}.")
        name = name.lower()
        value = value.strip()
        if name == "content-length" and headers.get(name, value) != value:
            raise _BadRequest(400, "Conflicting Content-Length headers.")
        headers[name] = value
    return parts[0], parts[1], parts[2], headers


class _Connection(asyncio.Protocol):
    """One client connection: requests are answered one at a time, in order (pipelining allowed)."""

    def __init__(self, server: _Serving) -> None:
        self.server = server
        self.state = server.state
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False  # a request is being answered (its reply may be waiting on a timer)
        self.closed = False
        self.sent_continue = False
        self.parsing = False  # inside _next (a reply sent at once must not re-enter it)

    # ---------------------------------------------------------------- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        # A reply still waiting on its timer is produced (and logged) all the same, then dropped,
        # as the thread of a thread-per-connection server would.
        self.closed = True
        self.server.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    # ---------------------------------------------------------------- framing

    def _next(self) -> None:
        """Answer the complete requests in the buffer, one at a time (a loop, not a recursion, when they
        are answered at once)."""
        if self.parsing:
            return
        self.parsing = True
        try:
            while not self.busy and not self.closed and self.buffer:
                try:
                    request = self._take()
                except _BadRequest as exc:
                    self._send_error(exc.code, str(exc), "invalid_request_error", keep_alive=False)
                    return
                if request is None:
                    return
                self.busy = True
                self._dispatch(request)
        finally:
            self.parsing = False

    def _take(self) -> _Request | None:
        buf = self.buffer
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > _MAX_HEAD:
                raise _BadRequest(431, "Request header fields too large.")
            return None
        if end > _MAX_HEAD:
            raise _BadRequest(431, "Request header fields too large.")
        method, target, version, headers = _parse_head(bytes(buf[:end]))
        if "transfer-encoding" in headers:
            raise _BadRequest(501, "Chunked (Transfer-Encoding) request bodies are not supported; send Content-Length.")
        raw_length = headers.get("content-length", "0")
        if not raw_length.isdigit() or int(raw_length) > _MAX_BODY:
            raise _BadRequest(400, f"Bad Content-Length {raw_length[:40]!r}.")
        length = int(raw_length)
        start = end + 4
        if len(buf) < start + length:
            if (headers.get("expect", "").lower() == "100-continue" and not self.sent_continue
                    and self.transport is not None):
                self.sent_continue = True
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return None
        body = bytes(buf[start:start + length])
        del buf[:start + length]
        self.sent_continue = False
        connection = headers.get("connection", "").lower()
        keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
        return _Request(method, target.split("?", 1)[0].rstrip("/"), headers, body, keep_alive)

    # ---------------------------------------------------------------- replies

    def _send_json(self, code: int, payload: Mapping[str, Any] | bytes, *, keep_alive: bool) -> None:
        """Write one response (a JSON payload, or raw bytes: a file's content) and move on to the next request
        (or close)."""
        raw = isinstance(payload, bytes)
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
        ctype = "application/octet-stream" if raw else "application/json"
        head = (f"HTTP/1.1 {code} {_REASONS.get(code, 'Unknown')}\r\nServer: {_SERVER_NAME}\r\n"
                f"Date: {self.server.date()}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                f"{'' if keep_alive else 'Connection: close' + chr(13) + chr(10)}\r\n")
        transport = self.transport
        self.busy = False
        if self.closed or transport is None or transport.is_closing():
            return  # the client gave up (e.g. its timeout); nothing to do
        transport.write(head.encode("latin-1") + body)
        if not keep_alive:
            self.closed = True
            transport.close()
            return
        if self.buffer:
            self._next()

    def _send_error(self, code: int, message: str, kind: str, *, keep_alive: bool) -> None:
        self._send_json(code, {"error": {"message": message, "type": kind, "code": code}}, keep_alive=keep_alive)

    # ---------------------------------------------------------------- routes

    def _dispatch(self, request: _Request) -> None:
        path, keep = request.path, request.keep_alive
        if path.startswith(_BATCH_PATHS) and request.method in ("GET", "POST"):
            state = self.state
            if state.api_key is not None and request.headers.get("authorization", "") != f"Bearer {state.api_key}":
                self._send_error(401, "Missing or wrong API key.", "authentication_error", keep_alive=keep)
                return
            code, payload = state.batches.route(state, request.method, path, request.headers, request.body)
            self._send_json(code, payload, keep_alive=keep)
        elif request.method == "GET":
            if path in ("/v1/models", "/models"):
                self._send_json(200, {"object": "list", "data": [
                    {"id": self.state.config.model, "object": "model", "created": 0, "owned_by": "biasbound"}]},
                    keep_alive=keep)
            elif path in ("/v1/stats", "/stats"):
                self._send_json(200, self.state.stats(), keep_alive=keep)
            else:
                self._send_error(404, f"No route {path!r}.", "not_found_error", keep_alive=keep)
        elif request.method == "POST":
            self._chat(request)
        else:
            self._send_error(501, f"Unsupported method ({request.method!r}).", "invalid_request_error", keep_alive=keep)

    def _chat(self, request: _Request) -> None:
        keep = request.keep_alive
        if request.path not in _CHAT_PATHS:
            self._send_error(404, f"No route {request.path!r}.", "not_found_error", keep_alive=keep)
            return
        state = self.state
        if state.api_key is not None and request.headers.get("authorization", "") != f"Bearer {state.api_key}":
            self._send_error(401, "Missing or wrong API key.", "authentication_error", keep_alive=keep)
            return
        try:
            body = json.loads(request.body or b"{}")
            messages = body["messages"]
            task = task_of(messages)
        except (ValueError, KeyError, TypeError, AttributeError):
            self._send_error(400, "The body must be a JSON chat-completions request with 'messages'.",
                             "invalid_request_error", keep_alive=keep)
            return
        body_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
        attempt = state.next_attempt(body_hash)
        state.enter()
        call = (body, messages, task, body_hash, attempt, keep)
        latency = state.config.latency_ms / 1000.0
        if state.config.serial:  # one request at a time, like a single-slot llama.cpp server: the rest queue
            now = self.server.loop.time()
            state.busy_until = max(now, state.busy_until) + latency
            latency = state.busy_until - now
        if latency > 0:
            self.server.later(latency, self._after_latency, call)
        else:
            self._after_latency(call)

    def _after_latency(self, call: tuple[Any, ...]) -> None:
        body, messages, task, body_hash, attempt, keep = call
        state = self.state
        fault = state.fault(task, body_hash, attempt)
        entry = {"body_hash": body_hash, "attempt": attempt, "task": task, "model": body.get("model"),
                 "messages": messages, "seed": body.get("seed"), "temperature": body.get("temperature"),
                 "max_tokens": body.get("max_tokens"), "top_p": body.get("top_p"), "outcome": fault or "ok",
                 "time": time.time()}
        if fault == "timeout":
            self.server.later(state.config.timeout_sleep_s, self._answer, call, fault, entry)
        else:
            self._answer(call, fault, entry)

    def _answer(self, call: tuple[Any, ...], fault: str | None, entry: dict[str, Any]) -> None:
        body, messages, _, body_hash, attempt, keep = call
        state = self.state
        cfg = state.config
        answered = False
        try:
            if fault == "429":
                state.record(entry)
                self._send_error(429, "Synthetic rate limit: slow down.", "rate_limit_error", keep_alive=keep)
                answered = True
                return
            if fault == "500":
                state.record(entry)
                self._send_error(500, "Synthetic internal server error.", "server_error", keep_alive=keep)
                answered = True
                return
            logprobs = None
            try:
                if cfg.style == "native":
                    text = state.judge.reply(messages, body.get("seed"))
                else:
                    text, logprobs = _styled(cfg.style, messages, body.get("seed"))
            except InputError as exc:
                entry["outcome"] = "bad-request"
                state.record(entry)
                self._send_error(400, str(exc), "invalid_request_error", keep_alive=keep)
                answered = True
                return
            finish = "stop"
            if fault == "truncated":
                text, finish = _truncate(text), "length"
            elif fault == "garbage":
                text = _garbage(body_hash, attempt)
            state.record(entry)
            self._send_json(200, _completion(body, messages, text, finish, logprobs, f"{body_hash[:24]}-{attempt}",
                                             cfg.model), keep_alive=keep)
            answered = True
        finally:
            state.leave()
            if not answered:  # an unexpected error (reported by the loop's exception handler): drop the connection
                self.busy = False
                self.closed = True
                if self.transport is not None:
                    self.transport.abort()


def _completion(body: Mapping[str, Any], messages: Any, text: str, finish: str, logprobs: Any, reply_id: str,
                model: str) -> dict[str, Any]:
    """A chat-completions reply body (usage: words of the messages and of the reply)."""
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
    completion_tokens = len(text.split())
    return {
        "id": f"chatcmpl-{reply_id}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model") or model, "system_fingerprint": "biasbound-synthetic",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish,
                     "logprobs": logprobs if body.get("logprobs") else None}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def completion_payload(state: _State, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
    """The live route's reply to a chat-completions body, without latency or faults (a batch line's response):
    ``(status code, body)``."""
    try:
        messages = body["messages"]
        task_of(messages)
        if state.config.style == "native":
            text, logprobs = state.judge.reply(messages, body.get("seed")), None
        else:
            text, logprobs = _styled(state.config.style, messages, body.get("seed"))
    except (InputError, KeyError, TypeError, AttributeError) as exc:
        return 400, {"error": {"message": str(exc), "type": "invalid_request_error", "code": 400}}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()
    return 200, _completion(body, messages, text, "stop", logprobs, f"{digest[:24]}-batch", state.config.model)


class _Serving:
    """The listening socket, its connections and pending timers, all owned by one event loop."""

    def __init__(self, config: SyntheticServerConfig, loop: asyncio.AbstractEventLoop) -> None:
        if not isinstance(config, SyntheticServerConfig):
            raise TypeError(f"The 'config' parameter must be a SyntheticServerConfig. Got {type(config).__name__} instead.")
        api_key = None
        if config.api_key_env is not None:
            api_key = os.environ.get(config.api_key_env)
            if not api_key:
                raise InputError(f"The environment variable {config.api_key_env!r} named by 'api_key_env' is not set.")
        self.state = _State(config, api_key)
        self.loop = loop
        self.date = _Date()
        self.connections: set[_Connection] = set()
        self.timers: set[asyncio.TimerHandle] = set()
        self.server: asyncio.AbstractServer | None = None

    def later(self, delay: float, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback(*args)`` after ``delay`` seconds on the loop (no thread blocks meanwhile)."""
        handle: asyncio.TimerHandle

        def fire() -> None:
            self.timers.discard(handle)
            callback(*args)

        handle = self.loop.call_later(delay, fire)
        self.timers.add(handle)

    async def start(self, host: str, port: int) -> str:
        where = cli_command() or "serve_in_thread"
        port = check_int(port, arg("port", "--port"), where, low=0, high=65535)
        if not isinstance(host, str) or not host.strip():
            raise InputError(f"The {arg('host', '--host')!r} {'option' if cli_command() else 'parameter'} of {where} "
                             f"must name an interface such as 127.0.0.1. Got {host!r} instead.")
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:  # port in use, no permission, unknown host: one sentence, never a traceback
            sock.close()
            why = exc.strerror or str(exc)
            raise InputError(
                f"Cannot listen on {host}:{port} ({why}); choose another {arg('port', '--port')} "
                "(0 picks a free one)" + (" or another host" if isinstance(exc, socket.gaierror) else "") + "."
            ) from None
        self.server = await self.loop.create_server(lambda: _Connection(self), sock=sock, backlog=1024)
        actual_host, actual_port = sock.getsockname()[:2]
        shown = f"[{actual_host}]" if ":" in actual_host else actual_host
        return f"http://{shown}:{actual_port}/v1"

    def shutdown(self) -> None:
        """Stop listening, cancel pending replies and drop every connection."""
        if self.server is not None:
            self.server.close()
        for handle in list(self.timers):
            handle.cancel()
        self.timers.clear()
        for conn in list(self.connections):
            conn.closed = True
            if conn.transport is not None:
                conn.transport.abort()
        self.connections.clear()


def _new_loop() -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's when it is installed (an optional speed-up, ~10% less server CPU per
    request) unless ``BIASBOUND_EVENT_LOOP=asyncio``, else asyncio's."""
    if os.environ.get("BIASBOUND_EVENT_LOOP", "").strip().lower() == "asyncio":
        return asyncio.new_event_loop()
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


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
    """Run the synthetic judge server on an event loop in a daemon thread for the duration of a ``with`` block.

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
    loop = _new_loop()
    try:
        serving = _Serving(config or SyntheticServerConfig(), loop)
    except BaseException:
        loop.close()
        raise
    started = threading.Event()
    outcome: dict[str, Any] = {}

    def main() -> None:  # the loop lives and dies in its own thread
        try:
            outcome["url"] = loop.run_until_complete(serving.start(host, port))
        except BaseException as exc:  # handed to the caller below, which re-raises it
            outcome["error"] = exc
            loop.close()
            return
        finally:
            started.set()
        try:
            loop.run_forever()
        finally:
            serving.shutdown()
            loop.close()

    thread = threading.Thread(target=main, daemon=True, name="biasbound-synthetic-judge")
    thread.start()
    started.wait()
    if "error" in outcome:
        thread.join()
        raise outcome["error"]
    url = outcome["url"]
    stopped = threading.Event()

    def stop() -> None:
        if stopped.is_set():
            return
        stopped.set()
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)

    try:
        yield RunningServer(url, stop, serving.state)
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
    loop = _new_loop()
    try:
        serving = _Serving(config or SyntheticServerConfig(), loop)
        url = loop.run_until_complete(serving.start(host, port))
        handled = False
        if threading.current_thread() is threading.main_thread():
            try:  # Ctrl-C stops the loop between callbacks, never inside one
                loop.add_signal_handler(signal.SIGINT, loop.stop)
                handled = True
            except (NotImplementedError, RuntimeError):  # e.g. Windows' proactor loop
                handled = False
        if on_ready is not None:
            on_ready(url)
        try:
            loop.run_forever()
        except KeyboardInterrupt:
            pass
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGINT)
            serving.shutdown()
    finally:
        loop.close()

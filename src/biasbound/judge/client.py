"""The async judge runner: any OpenAI-compatible chat-completions endpoint, cached and retried.

One async path for every judge call (``judge_many``):

* ``openai.AsyncOpenAI(base_url=..., api_key=..., max_retries=0)`` -- the SDK's own
  retries are off so the policy below is the only one. Its HTTP client is the SDK's
  aiohttp-backed ``openai.DefaultAioHttpClient`` when ``aiohttp`` is installed (half the
  client CPU per call of the default httpx2 one at high concurrency) and no proxy is set for
  the endpoint; else ``openai.DefaultAsyncHttpxClient``. ``BIASBOUND_JUDGE_TRANSPORT=httpx``
  forces the latter. Calls go through ``client.post(..., cast_to=Response)``: the SDK's
  auth, headers, status errors and timeouts without its typed request/response models;
* one judge may be served by several endpoints (``base_url`` plus ``extra_endpoints``: a vLLM
  fleet, replicas behind no load balancer), each with its own ``concurrency`` (an
  ``asyncio.Semaphore``) and optional ``requests_per_minute``; every attempt goes to the
  endpoint with the fewest queued-or-running requests per unit of concurrency (join the
  shortest queue), a retry prefers another endpoint than the one that just failed, and an
  endpoint that refuses connections ``MAX_CONNECTION_FAILURES`` times in a row is left out
  (the run stops only when every endpoint is down);
* retries with exponential backoff and jitter (``tenacity.AsyncRetrying``) decided per
  error type: 408, 409, 429, 5xx, timeouts and connection errors are retried; any other
  4xx is not. A reply without a usable verdict (garbage, truncated) is retried too, at
  most ``max_parse_attempts`` times. ``max_attempts`` caps all HTTP attempts of a call;
  after it the call is recorded as ``failed`` (transport) or ``missing`` (no verdict)
  with a reason -- never a tie, never a score;
* 401/403/404 (bad key, bad model, bad URL) stop the run with a :class:`JudgeError`;
  calls finished before that stay in the cache;
* every final outcome is committed to the :class:`~biasbound.judge.cache.JudgeCache` at
  once, so an interrupted run resumes without repeating a finished call.

The API key is read from the environment variable *named* in the config; it is never
stored in the config, the cache, a result, a log record or an error message (log records
and exception texts pass through :class:`RedactingFilter` / :func:`redact`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import ipaddress
import logging
import os
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import openai
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, wait_exponential, wait_random

from biasbound._exceptions import InputError, JudgeError

try:  # the openai SDK >= 3 ships its transport as ``httpx2``; older releases use ``httpx``
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _httpx  # type: ignore[no-redef]
from biasbound._validation import check_in_range, check_int
from biasbound.parameters import bounds
from biasbound.judge.cache import JudgeCache, cache_key, legacy_cache_key
from biasbound.judge.parsing import TASKS, ParsedReply, parse_reply, rubric_factors, task_of
from biasbound.judge.prompts import TEMPLATE_VERSION
from biasbound.judge.ratelimit import TokenLimiter, estimate_tokens
from biasbound.judge._wire import _new_state, chat_body

__all__ = [
    "Endpoint",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "JudgeSession",
    "RedactingFilter",
    "judge_many",
    "judge_many_sync",
    "redact",
]

logger = logging.getLogger("biasbound.judge")

_REDACTED = "[REDACTED]"
_RETRY_STATUS = frozenset({408, 409, 429})
_ABORT_STATUS = frozenset({401, 403, 404})
#: Connection failures in a row (no reply of any kind in between) after which a run stops: the endpoint is
#: down or the URL is wrong, and more retries only spend minutes before blaming something else.
MAX_CONNECTION_FAILURES = 8
#: tries of the one cheap request before judging when the endpoint answers too slowly (a refused connection: one)
PROBE_TRIES = 3


def _is_connection_failure(exc: BaseException) -> bool:
    """True when no HTTP reply arrived because the connection could not be made (refused, DNS, unreachable).

    The SDK's aiohttp transport reports a refused connection as a connect timeout, so a timeout counts
    when its cause says it could not connect ("Cannot connect to host ..."); a connection not accepted within the
    timeout ("Connection timeout to host ...": a busy server, a loaded machine) is a timeout, retried like one, and
    so is a server that accepted the connection and was slow.
    """
    if not isinstance(exc, openai.APIConnectionError):
        return False
    if not isinstance(exc, openai.APITimeoutError):
        return True
    cause = exc.__cause__
    return cause is not None and "cannot connect" in str(cause).lower()


_POOL_SHARD = 8  # connections per httpx2 pool (see _pool_sizes)
_LOCAL_HOSTS = frozenset({"localhost", "localhost.localdomain", "host.docker.internal"})


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class Endpoint:
    """One server of a judge: its OpenAI-compatible base URL, its own concurrency and rate limit.

    Parameters
    ----------
    base_url:
        e.g. ``"http://gpu2:8000/v1"``.
    concurrency:
        Maximum HTTP requests in flight to this server (>= 1).
    requests_per_minute:
        Optional cap on request starts per minute to this server (``None`` = no cap).
    """

    base_url: str
    concurrency: int = 8
    requests_per_minute: float | None = None

    def __post_init__(self) -> None:
        where = "Endpoint"
        parsed = urlparse(self.base_url) if isinstance(self.base_url, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InputError(f"The 'base_url' parameter of {where} must be an http(s) URL. Got {self.base_url!r} instead.")
        check_int(self.concurrency, "concurrency", where, low=1)
        if self.requests_per_minute is not None:
            check_in_range(self.requests_per_minute, "requests_per_minute", where, low=0, low_open=True)


@dataclass(frozen=True)
class JudgeConfig:
    """How to reach a judge endpoint and how hard to try.

    Parameters
    ----------
    base_url:
        OpenAI-compatible base URL, e.g. ``"https://api.openai.com/v1"`` or
        ``"http://127.0.0.1:8011/v1"``.
    model:
        Model name sent to the endpoint.
    api_key_env:
        Name of the environment variable holding the key (the key itself is never stored).
        When it is unset and the endpoint is local (localhost, 127.0.0.0/8, ::1) the
        placeholder ``"EMPTY"`` is sent; for other endpoints that is a :class:`JudgeError`.
    concurrency:
        Maximum HTTP requests in flight to ``base_url`` (>= 1).
    requests_per_minute:
        Optional cap on request starts per minute to ``base_url`` (``None`` = no cap).
    extra_endpoints:
        Further servers of the same judge (:class:`Endpoint`, each with its own concurrency and
        rate limit); requests are balanced over ``base_url`` and these client-side. Every
        endpoint must serve the same weights under ``model``: they share one cache identity.
    cache_identity:
        The judge's identity in the cache key (see :func:`biasbound.judge.cache.cache_key`).
        ``None`` (default): the model name, sampling and messages identify a call, wherever it
        was served, so a judge moved to another host or port does not re-pay. Pin a label when
        two servers serve different weights under one model name.
    max_attempts:
        Cap on HTTP attempts per call, retries included (>= 1).
    max_parse_attempts:
        Cap on attempts whose reply had no usable verdict (>= 1; ``max_attempts`` caps it too).
    timeout:
        Seconds before an HTTP attempt is abandoned (counts as a retryable timeout).
    backoff_initial, backoff_max, backoff_jitter:
        Exponential backoff: wait ``min(backoff_max, backoff_initial * 2**k) + U(0, backoff_jitter)``
        seconds before retry ``k + 1``.
    temperature, max_tokens, top_p:
        Sampling parameters (``top_p=None`` is not sent).
    base_seed:
        The ``seed`` sent is ``base_seed + rerun``.
    template_version:
        Goes into every cache key.
    prompt_price_per_million, completion_price_per_million:
        Optional prices (any currency) per million prompt/completion tokens; both given ->
        each result carries ``cost``.
    tokens_per_minute:
        Optional cap on the tokens reserved per minute over every endpoint of the judge (prompt tokens
        estimated before the call plus ``max_tokens``, corrected by the reported usage:
        :mod:`biasbound.judge.ratelimit`); ``None`` = no cap.
    batch:
        ``None`` (every call live) or a :class:`biasbound.judge.batch.BatchOptions`: the calls a
        :meth:`JudgeSession.judge` must make go to the provider's batch API (:mod:`biasbound.judge.batch`).
    """

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    concurrency: int = 8
    requests_per_minute: float | None = None
    extra_endpoints: Sequence[Endpoint] = ()
    cache_identity: str | None = None
    max_attempts: int = 6
    max_parse_attempts: int = 3
    timeout: float = 120.0
    backoff_initial: float = 1.0
    backoff_max: float = 30.0
    backoff_jitter: float = 1.0
    temperature: float = 0.0
    max_tokens: int = 4096
    top_p: float | None = None
    base_seed: int = 0
    template_version: str = TEMPLATE_VERSION
    prompt_price_per_million: float | None = None
    completion_price_per_million: float | None = None
    tokens_per_minute: float | None = None
    batch: Any = None

    def __post_init__(self) -> None:
        where = "JudgeConfig"
        for name in ("base_url", "model", "api_key_env", "template_version"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"The {name!r} parameter of {where} must be a non-empty str. Got {value!r} instead.")
        parsed = urlparse(self.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise InputError(f"The 'base_url' parameter of {where} must be an http(s) URL. Got {self.base_url!r} instead.")
        check_int(self.concurrency, "concurrency", where, low=1)
        extra = tuple(self.extra_endpoints)
        for i, e in enumerate(extra):
            if not isinstance(e, Endpoint):
                raise InputError(f"The 'extra_endpoints' parameter of {where} must hold Endpoint objects. "
                                 f"Got {type(e).__name__} at index {i} instead.")
        urls = [self.base_url.rstrip("/"), *(e.base_url.rstrip("/") for e in extra)]
        dup = next((u for u in urls if urls.count(u) > 1), None)
        if dup is not None:
            raise InputError(f"The endpoints of {where} must differ; {dup!r} is given twice.")
        object.__setattr__(self, "extra_endpoints", extra)
        if self.cache_identity is not None and (not isinstance(self.cache_identity, str) or not self.cache_identity.strip()):
            raise InputError(f"The 'cache_identity' parameter of {where} must be a non-empty str or None. "
                             f"Got {self.cache_identity!r} instead.")
        check_int(self.max_attempts, "max_attempts", where, **bounds("max_attempts"))
        check_int(self.max_parse_attempts, "max_parse_attempts", where, low=1)
        check_int(self.max_tokens, "max_tokens", where, low=1)
        check_int(self.base_seed, "base_seed", where, low=0)
        if self.requests_per_minute is not None:
            check_in_range(self.requests_per_minute, "requests_per_minute", where, low=0, low_open=True)
        if self.tokens_per_minute is not None:
            check_in_range(self.tokens_per_minute, "tokens_per_minute", where, low=0, low_open=True)
        if self.batch is not None:
            from biasbound.judge.batch import BatchOptions

            if not isinstance(self.batch, BatchOptions):
                raise InputError(f"The 'batch' parameter of {where} must be a BatchOptions or None. "
                                 f"Got {type(self.batch).__name__} instead.")
        check_in_range(self.timeout, "timeout", where, low=0, low_open=True)
        check_in_range(self.backoff_initial, "backoff_initial", where, low=0)
        check_in_range(self.backoff_max, "backoff_max", where, low=0)
        check_in_range(self.backoff_jitter, "backoff_jitter", where, low=0)
        object.__setattr__(self, "temperature", check_in_range(self.temperature, "temperature", where, low=0, high=2))
        if self.top_p is not None:
            object.__setattr__(self, "top_p", check_in_range(self.top_p, "top_p", where, low=0, high=1, low_open=True))
        for name in ("prompt_price_per_million", "completion_price_per_million"):
            if getattr(self, name) is not None:
                check_in_range(getattr(self, name), name, where, low=0)

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """Every server of the judge: ``base_url`` (with ``concurrency``, ``requests_per_minute``), then ``extra_endpoints``."""
        return (Endpoint(self.base_url, self.concurrency, self.requests_per_minute), *self.extra_endpoints)

    @property
    def is_local(self) -> bool:
        """Whether every endpoint points at this machine."""
        return all(_is_local_url(e.base_url) for e in self.endpoints)


def _is_local_url(url: str) -> bool:
    host = (urlparse(url).hostname or "").lower()
    if host in _LOCAL_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class JudgeRequest:
    """One chat call to make.

    Parameters
    ----------
    key:
        The caller's label for the call (e.g. ``"q17/model-x/game1/rerun0"``); not part of the cache key.
    messages:
        Chat messages; the system message's first line names the task (``biasbound-task: ...``).
    task:
        One of ``judge-pairwise``, ``judge-single``, ``paraphrase``, ``insert-error``;
        ``None`` reads it from the system message.
    rerun:
        Rerun index (>= 0); the seed sent is ``base_seed + rerun`` unless ``seed`` is given.
    model, temperature, max_tokens, top_p, seed:
        Per-request overrides of the config (``None`` = use the config).
    metadata:
        Anything the caller wants back on the result (not sent, not in the cache key).
    """

    key: str
    messages: Sequence[Mapping[str, str]]
    task: str | None = None
    rerun: int = 0
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    seed: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    parser: Any = None

    def __post_init__(self) -> None:
        where = "JudgeRequest"
        if not isinstance(self.key, str) or not self.key:
            raise InputError(f"The 'key' parameter of {where} must be a non-empty str. Got {self.key!r} instead.")
        msgs = tuple(dict(m) for m in self.messages)
        if not msgs or not all(isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in msgs):
            raise InputError(f"The 'messages' parameter of {where} must be a non-empty list of {{role, content}} str dicts "
                             f"(request {self.key!r}).")
        object.__setattr__(self, "messages", msgs)
        check_int(self.rerun, "rerun", where, low=0)
        task = self.task if self.task is not None else task_of(msgs)
        if task not in TASKS:
            raise InputError(f"The 'task' parameter of {where} must be one of {', '.join(map(repr, TASKS))} "
                             f"(or named on the system message's first line). Got {task!r} for request {self.key!r} instead.")
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "metadata", dict(self.metadata))


@dataclass(frozen=True)
class JudgeResult:
    """The outcome of one :class:`JudgeRequest`.

    Attributes
    ----------
    key, cache_key, task, rerun, seed, model:
        Identify the call.
    status:
        ``"ok"`` (value parsed), ``"missing"`` (replies came back but none had a usable verdict
        within the parse budget, or the verdict was ambiguous) or ``"failed"`` (the endpoint
        failed beyond the retry budget). Only ``ok`` results carry a value.
    verdict:
        Pairwise: overall label (``"A>B"``); single: rating (float in [1, 10]); rewrite tasks:
        the rewritten text. ``None`` unless ``status == "ok"``.
    factors:
        Per-factor verdicts / scores (``None`` = missing factor).
    extra:
        Task-specific extras (insert-error: ``{"inserted": description}``).
    raw:
        The last reply text received (``None`` if none arrived).
    reason:
        Why the result is not ok (or which factors are missing); ``None`` otherwise.
    prompt_tokens, completion_tokens:
        Summed over every attempt that returned usage (``None`` when no usage came back).
    cost:
        From the config's per-million prices, else ``None``.
    attempts:
        HTTP attempts made (0 when served from the cache in this run: see ``from_cache``).
    latency:
        Seconds from the first attempt to the final outcome, backoff included.
    from_cache:
        Whether this run read the result from the cache.
    recalled:
        Whether the call was made again because the cache held a ``failed``/``missing`` outcome
        of an earlier session (``retry_failed``).
    endpoint:
        The base URL of the endpoint that gave the last reply (``None`` from the cache or when none came).
    messages, metadata:
        Echoed from the request.
    """

    key: str
    cache_key: str
    task: str
    status: str
    verdict: Any = None
    factors: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    raw: str | None = None
    reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost: float | None = None
    attempts: int = 0
    latency: float = 0.0
    rerun: int = 0
    seed: int | None = None
    model: str = ""
    from_cache: bool = False
    recalled: bool = False
    endpoint: str | None = None
    messages: Sequence[Mapping[str, str]] = field(default=(), repr=False)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: time spent inside HTTP calls (the server's time, over every attempt) and waiting for biasbound's own
    #: concurrency and rate limits before them; ``span`` = (first send, last reply) on ``time.monotonic``
    server_seconds: float | None = None
    queue_seconds: float | None = None
    span: tuple[float, float] | None = None
    #: the provider batch that answered the call (``None``: a live call); its cost is at the batch prices
    batch: str | None = None

    @property
    def verdicts(self) -> dict[str, Any]:
        """``{"overall": verdict, <factor>: ...}``."""
        return {"overall": self.verdict, **dict(self.factors)}

    def to_dict(self, *, include_messages: bool = False) -> dict[str, Any]:
        """A JSON-ready form (messages left out unless asked for)."""
        out = dataclasses.asdict(self)
        out["factors"] = dict(self.factors)
        out["extra"] = dict(self.extra)
        out["metadata"] = dict(self.metadata)
        if include_messages:
            out["messages"] = [dict(m) for m in self.messages]
        else:
            out.pop("messages")
        return out


# --------------------------------------------------------------------------- key redaction


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Replace every occurrence of each secret (4+ characters) in ``text`` with ``[REDACTED]``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, _REDACTED)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that removes the given secrets from every record's message and traceback text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        super().__init__()
        self._secrets = tuple(s for s in secrets if s and len(s) >= 4)

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        clean = redact(message, self._secrets)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_text is None:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, self._secrets)
        return True


_FILTERED_LOGGERS = ("openai", "openai._base_client", "httpx", "httpcore", "httpx2", "httpcore2", "biasbound", "biasbound.judge")


@contextmanager
def _redacting_logs(secret: str | None) -> Iterator[None]:
    """Attach a :class:`RedactingFilter` to the SDK/httpx/biasbound loggers and to every root handler."""
    filt = RedactingFilter([secret])
    targets: list[logging.Filterer] = [logging.getLogger(n) for n in _FILTERED_LOGGERS]
    for lg in [logging.getLogger()] + [logging.getLogger(n) for n in _FILTERED_LOGGERS]:
        targets.extend(lg.handlers)
    for t in targets:
        t.addFilter(filt)
    try:
        yield
    finally:
        for t in targets:
            t.removeFilter(filt)


def _api_key(config: JudgeConfig) -> tuple[str, str | None]:
    """Return (key to send, secret to redact)."""
    key = os.environ.get(config.api_key_env)
    if key:
        return key, key
    if config.is_local:
        return "EMPTY", None
    raise JudgeError(
        f"The judge endpoint {config.base_url} needs an API key: set the environment variable "
        f"{config.api_key_env!r} (named by 'api_key_env' in the judge config)."
    )


# --------------------------------------------------------------------------- retry machinery


class _Unparseable(Exception):
    """A reply arrived but held no usable verdict (retryable up to max_parse_attempts)."""

    def __init__(self, parsed: ParsedReply, finish_reason: str | None) -> None:
        super().__init__(parsed.reason or "no verdict found")
        self.parsed = parsed
        self.finish_reason = finish_reason


_RETRY_SEED_STEP = 1_000_003  # a parse retry's seed: the call's seed + k * this (k = 1, 2, ...)


def _top_logprobs(choice: Mapping[str, Any]) -> list[dict[str, float]] | None:
    """Token -> log-probability of each reply position's alternatives (OpenAI chat ``logprobs.content``)."""
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, Mapping) else None
    if not isinstance(content, list):
        return None
    out: list[dict[str, float]] = []
    for pos in content:
        if not isinstance(pos, Mapping):
            continue
        alts = {str(a["token"]): float(a["logprob"]) for a in pos.get("top_logprobs") or []
                if isinstance(a, Mapping) and isinstance(a.get("logprob"), (int, float))}
        if isinstance(pos.get("logprob"), (int, float)):
            alts.setdefault(str(pos.get("token")), float(pos["logprob"]))
        out.append(alts)
    return out or None


def _retryable(exc: BaseException) -> bool:
    if isinstance(exc, _Unparseable):
        return True
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUS or exc.status_code >= 500
    return False


class _RateLimiter:
    """Spaces request starts at least ``60 / rpm`` seconds apart."""

    def __init__(self, rpm: float | None) -> None:
        self.interval = 0.0 if rpm is None else 60.0 / float(rpm)
        self._next = 0.0
        self._lock = asyncio.Lock()

    @property
    def next_start(self) -> float:
        """The ``time.monotonic()`` of the earliest free start slot."""
        return self._next

    async def wait(self) -> float | None:
        """Wait for this request's start slot and return it (``None`` when no limit is set)."""
        if self.interval <= 0.0:
            return None
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)
        return start


@dataclass
class _Call:
    request: JudgeRequest
    model: str
    temperature: float
    max_tokens: int
    top_p: float | None
    seed: int
    cache_key: str
    factors: tuple[str, ...] | None
    recalled: bool = False


def _resolve(request: JudgeRequest, config: JudgeConfig) -> _Call:
    model = request.model if request.model is not None else config.model
    temperature = float(request.temperature) if request.temperature is not None else config.temperature
    max_tokens = int(request.max_tokens) if request.max_tokens is not None else config.max_tokens
    top_p = float(request.top_p) if request.top_p is not None else config.top_p
    seed = int(request.seed) if request.seed is not None else config.base_seed + request.rerun
    key = cache_key(
        identity=config.cache_identity, model=model, messages=request.messages, temperature=temperature,
        max_tokens=max_tokens, top_p=top_p, seed=seed, rerun=request.rerun,
        template_version=config.template_version if request.parser is None
        else f"{config.template_version}+parser-{request.parser.fingerprint()}",
    )
    return _Call(request, model, temperature, max_tokens, top_p, seed, key, rubric_factors(request.messages))


class _Lane:
    """One endpoint of a judge: its client(s), concurrency gate, rate limiter and load."""

    def __init__(self, index: int, endpoint: Endpoint, clients: Sequence[openai.AsyncOpenAI]) -> None:
        self.index = index
        self.url = endpoint.base_url
        self.concurrency = endpoint.concurrency
        self.clients = tuple(clients)
        self._next_client = 0
        self.semaphore = asyncio.Semaphore(endpoint.concurrency)
        self.limiter = _RateLimiter(endpoint.requests_per_minute)
        self.load = 0  # attempts queued for or running on this endpoint
        self.attempts = 0
        self.connection_failures = 0  # attempts in a row that could not connect (reset by any reply)
        self.down = False

    def client(self) -> openai.AsyncOpenAI:
        c = self.clients[self._next_client % len(self.clients)]
        self._next_client += 1
        return c


class _Run:
    """State shared by the calls of one ``judge_many`` run."""

    def __init__(self, config: JudgeConfig, cache: JudgeCache | None,
                 clients: Sequence[Sequence[openai.AsyncOpenAI]], secret: str | None) -> None:
        self.config = config
        self.cache = cache
        self.lanes = tuple(_Lane(i, e, c) for i, (e, c) in enumerate(zip(config.endpoints, clients)))
        self.secret = secret
        self.abort: JudgeError | None = None
        self.tokens = None if config.tokens_per_minute is None else TokenLimiter(config.tokens_per_minute)
        self._checked = False
        self._check_lock = asyncio.Lock()

    @property
    def connection_failures(self) -> int:
        """Failed connections in a row, summed over the endpoints."""
        return sum(lane.connection_failures for lane in self.lanes)

    def pick(self, avoid: _Lane | None = None) -> _Lane:
        """The endpoint for the next attempt: the live one with the least load per unit of concurrency
        (then the earliest free rate-limit slot), another than ``avoid`` when there is a choice."""
        live = [lane for lane in self.lanes if not lane.down] or list(self.lanes)
        choice = [lane for lane in live if lane is not avoid] or live
        now = time.monotonic()
        return min(choice, key=lambda lane: (lane.load / lane.concurrency, max(0.0, lane.limiter.next_start - now),
                                             lane.index))

    async def check_endpoint(self) -> None:
        """One cheap request (``GET /models``) to every endpoint before the first judgment: an endpoint that
        cannot be reached stops the run at once with a sentence naming its URL. Any HTTP reply counts as
        reachable (a server without /models answers 404); a refused key (401/403) stops the run as a refused
        call does."""
        async with self._check_lock:
            if self._checked:
                return
            for lane in self.lanes:
                for tried in range(1, PROBE_TRIES + 1):
                    try:
                        await lane.clients[0].get("/models", cast_to=_httpx.Response)
                    except openai.APIStatusError as exc:
                        if exc.status_code in (401, 403):
                            self.abort = JudgeError(self.clean(
                                f"The judge endpoint {lane.url} refused the key with HTTP {exc.status_code}; "
                                f"check the key in {self.config.api_key_env!r}."))
                    except openai.APIConnectionError as exc:
                        if _is_connection_failure(exc):
                            self.abort = self._unreachable(exc, "before judging", lane.url)
                        elif tried < PROBE_TRIES:
                            continue  # a slow reply is not a dead endpoint (a busy server, a loaded machine): ask again
                        else:
                            self.abort = JudgeError(self.clean(
                                f"The endpoint {lane.url} accepted the connection but did not answer a request within "
                                f"the timeout ({self.config.timeout:g} s) in {PROBE_TRIES} tries before judging; raise "
                                "the timeout or check the server; judgments already made are cached, so a re-run "
                                "resumes."))
                    break
                if self.abort is not None:
                    break
            self._checked = True
        if self.abort is not None:
            raise self.abort

    def _unreachable(self, exc: BaseException, when: str, url: str) -> JudgeError:
        cause = exc.__cause__ if exc.__cause__ is not None and str(exc.__cause__) else exc
        return JudgeError(self.clean(
            f"Cannot connect to the endpoint {url} ({str(cause)[:200]}) {when}; check that the "
            "server is running and that base_url is right; judgments already made are cached, so a re-run resumes."))

    def clean(self, text: str) -> str:
        return redact(text, [self.secret])

    def describe(self, exc: BaseException) -> str:
        # the kind first, in words: refused connection, timeout, HTTP error (an unparseable reply is a 'missing'
        # outcome, never described here) -- the SDK's aiohttp adapter reports a refused connection as a timeout
        if isinstance(exc, openai.APIStatusError):
            what = f"HTTP error: HTTP {exc.status_code} {type(exc).__name__}"
        elif _is_connection_failure(exc):
            what = f"refused connection (no server answered): {type(exc).__name__}"
        elif isinstance(exc, openai.APITimeoutError):
            what = f"timeout (no reply within the client timeout of {self.config.timeout:g} s): {type(exc).__name__}"
        else:
            what = type(exc).__name__
        text = f"{what}: {exc}"
        cause = exc.__cause__
        if cause is not None and str(cause) and str(cause) not in text:
            # the transport's own words, e.g. "Cannot connect to host ..." behind an APITimeoutError
            # (the SDK's aiohttp adapter maps a refused connection to a connect timeout)
            text += f" ({type(cause).__name__}: {cause})"
        return self.clean(text)[:500]

    def cost(self, prompt_tokens: int | None, completion_tokens: int | None, *, batch: bool = False) -> float | None:
        """The call's cost at the configured prices; a batch call's at the batch prices (``None`` when the
        config states none: no price is invented)."""
        p, c = self.config.prompt_price_per_million, self.config.completion_price_per_million
        if batch:
            p, c = self.config.batch.prices(p, c)
        if p is None or c is None or prompt_tokens is None or completion_tokens is None:
            return None
        return (prompt_tokens * p + completion_tokens * c) / 1e6

    async def _with_retries(self, attempt: Callable[[], Awaitable[ParsedReply]], state: dict[str, Any]) -> ParsedReply:
        """Run ``attempt`` until it returns, retrying per :func:`_retryable` with exponential backoff and jitter.

        ``tenacity.AsyncRetrying``: after failed attempt ``k + 1`` (k >= 0) the wait is
        ``min(backoff_max, backoff_initial * 2**k) + U(0, backoff_jitter)``. The last exception is
        re-raised when it is not retryable, when the run was aborted, after ``max_attempts`` HTTP
        attempts, or after ``max_parse_attempts`` unparseable replies.
        """
        cfg = self.config

        def stop(retry_state: RetryCallState) -> bool:
            if self.abort is not None or state["attempts"] >= cfg.max_attempts:
                return True
            exc = retry_state.outcome.exception() if retry_state.outcome else None
            return isinstance(exc, _Unparseable) and (state["parse_failures"] >= cfg.max_parse_attempts
                                                      or bool(state.get("deterministic")))

        retrying = AsyncRetrying(
            stop=stop,
            wait=wait_exponential(multiplier=cfg.backoff_initial, max=cfg.backoff_max, exp_base=2)
            + wait_random(0.0, cfg.backoff_jitter),
            retry=retry_if_exception(_retryable),
            reraise=True,
        )
        return await retrying(attempt)

    async def _post(self, lane: _Lane, kwargs: Mapping[str, Any], state: dict[str, Any]) -> Any:
        """One HTTP attempt on ``lane`` (the caller holds its concurrency slot): the SDK's own transport (auth,
        headers, status errors, timeouts) without its per-call request transform and pydantic response model
        (~2x less client CPU per call); a refused connection counts towards leaving the endpoint out."""
        sent = time.monotonic()
        state["first"] = sent if state["first"] is None else state["first"]
        state["attempts"] += 1
        lane.attempts += 1
        state["last_lane"] = lane  # a retry prefers another endpoint
        try:
            http = await lane.client().post("/chat/completions", body=kwargs, cast_to=_httpx.Response)
        except openai.APIConnectionError as exc:
            if _is_connection_failure(exc):
                self._connection_failed(lane, exc)
            raise
        except openai.APIStatusError:
            lane.connection_failures = 0  # the server answered
            raise
        lane.connection_failures = 0
        state["endpoint"] = lane.url
        state["last"] = time.monotonic()
        state["server"] += state["last"] - sent
        return http

    def _connection_failed(self, lane: _Lane, exc: BaseException) -> None:
        lane.connection_failures += 1
        if lane.connection_failures >= MAX_CONNECTION_FAILURES and not lane.down:
            lane.down = True
            if len(self.lanes) > 1:
                logger.warning("judge endpoint %s left out after %d failed connections in a row",
                               lane.url, lane.connection_failures)
            if all(x.down for x in self.lanes) and self.abort is None:
                self.abort = self._unreachable(exc, f"after {lane.connection_failures} failed connections in a row",
                                               lane.url)

    def _take_reply(self, call: _Call, response: Any, state: dict[str, Any]) -> tuple[ParsedReply, str | None]:
        """Read one chat-completions reply body (a dict): count its usage into ``state``, keep its text as
        ``state["raw"]`` and parse it with the request's parser (the live and the batch route alike).
        Returns the parsed reply and the reply's ``finish_reason``."""
        usage = response.get("usage") or None
        choices = response.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        text = message.get("content") if isinstance(message, dict) else None
        text = text if isinstance(text, str) else ""
        if isinstance(usage, dict):
            state["prompt"] = (state["prompt"] or 0) + int(usage.get("prompt_tokens") or 0)
            state["completion"] = (state["completion"] or 0) + int(usage.get("completion_tokens") or 0)
        state["repeated"] = state["raw"] is not None and state["raw"] == text
        state["raw"] = text
        parser = call.request.parser
        if parser is not None:
            return parser.parse(text, call.request.task, _top_logprobs(choice)), choice.get("finish_reason")
        return parse_reply(text, call.request.task, factors=call.factors), choice.get("finish_reason")

    async def judge(self, call: _Call) -> JudgeResult:
        cfg = self.config
        state = _new_state()
        kwargs = chat_body(call)
        parser = call.request.parser
        tokens = self.tokens

        async def attempt() -> ParsedReply:
            lane = self.pick(avoid=state["last_lane"])
            lane.load += 1
            queued = time.monotonic()
            try:
                await lane.limiter.wait()
                held = None if tokens is None else await tokens.acquire(estimate_tokens(call.request.messages,
                                                                                        call.max_tokens, call.model))
                async with lane.semaphore:
                    state["queue"] += time.monotonic() - queued
                    before = (state["prompt"] or 0) + (state["completion"] or 0)
                    http = await self._post(lane, kwargs, state)  # a failed attempt keeps its estimate counted
            finally:
                lane.load -= 1
            try:
                response = http.json()
                parsed, finish_reason = self._take_reply(call, response, state)
            except (ValueError, AttributeError) as exc:
                raise openai.APIResponseValidationError(response=http, body=None,
                                                        message=f"malformed chat-completions response: {exc}") from None
            if held is not None and tokens is not None:  # the estimate corrected by the usage the server reports
                tokens.settle(held, (state["prompt"] or 0) + (state["completion"] or 0) - before)
            if parsed.status != "ok" and not (parsed.reason or "").startswith("ambiguous"):
                state["parse_failures"] += 1
                # A server that repeated its reply word for word is deterministic: asking again would only
                # repeat it, so no further parse retry. With the judge's own parser a retry asks with a new
                # seed; the built-in prompts keep the call's seed, so a resumed run and an uninterrupted one
                # get the same verdicts from a seeded server whatever faults came in between.
                # (a truncated reply, finish_reason 'length', proves nothing: it is retried as before)
                state["deterministic"] = state["repeated"] and finish_reason != "length"
                if parser is not None:
                    kwargs["seed"] = call.seed + _RETRY_SEED_STEP * state["parse_failures"]
                raise _Unparseable(parsed, finish_reason)
            return parsed

        t0 = time.monotonic()
        status, parsed, reason, refused = "failed", None, None, False
        try:
            parsed = await self._with_retries(attempt, state)
            status, reason = parsed.status, parsed.reason
        except _Unparseable as exc:
            status = "missing"
            reason = (f"{exc.parsed.reason or 'no verdict found'} after {state['parse_failures']} unparseable "
                      f"repl{'y' if state['parse_failures'] == 1 else 'ies'} (last finish_reason={exc.finish_reason})")
        except openai.APIStatusError as exc:
            reason = f"{self.describe(exc)} after {state['attempts']} attempt(s)"
            refused = exc.status_code in _ABORT_STATUS
            if refused and self.abort is None:
                hint = (f"check the key in {cfg.api_key_env!r}" if exc.status_code in (401, 403)
                        else f"check base_url {cfg.base_url!r} and model {call.model!r}")
                self.abort = JudgeError(self.clean(f"The judge endpoint refused the request with HTTP {exc.status_code}; {hint}."))
        except openai.OpenAIError as exc:  # timeouts, connection errors, malformed responses
            reason = f"{self.describe(exc)} after {state['attempts']} attempt(s)"
        return self.finish(call, state, status, parsed, reason, latency=time.monotonic() - t0, store=not refused)

    def finish(self, call: _Call, state: Mapping[str, Any], status: str, parsed: ParsedReply | None,
               reason: str | None, *, latency: float, store: bool = True, batch: str | None = None) -> JudgeResult:
        """The call's :class:`JudgeResult` from its attempts' ``state``, committed to the cache at once
        (``store``: a refused call is a configuration error, not an outcome); ``batch``: the provider batch
        that answered it (its cost then at the batch prices)."""
        ok = parsed is not None and status == "ok"
        result = JudgeResult(
            key=call.request.key, cache_key=call.cache_key, task=call.request.task, status=status,
            verdict=parsed.value if ok and parsed is not None else None,
            factors=dict(parsed.factors) if parsed is not None else {},
            extra=dict(parsed.extra) if parsed is not None else {},
            raw=state["raw"], reason=reason, prompt_tokens=state["prompt"], completion_tokens=state["completion"],
            cost=self.cost(state["prompt"], state["completion"], batch=batch is not None), attempts=state["attempts"],
            latency=latency, rerun=call.request.rerun, seed=call.seed, model=call.model, from_cache=False,
            recalled=call.recalled, endpoint=state["endpoint"], messages=call.request.messages,
            metadata=call.request.metadata,
            server_seconds=state["server"] if state["last"] is not None else None, queue_seconds=state["queue"],
            span=(state["first"], state["last"]) if state["last"] is not None else None, batch=batch,
        )
        if status != "ok":
            logger.warning("judge call %s %s: %s", call.request.key, status, reason)
        if self.cache is not None and store:
            self.cache.put(call.cache_key, status, _payload(result))
        return result


_PAYLOAD_FIELDS = ("task", "status", "verdict", "factors", "extra", "raw", "reason", "prompt_tokens",
                   "completion_tokens", "cost", "attempts", "latency", "seed", "rerun", "model", "batch")


def _payload(result: JudgeResult) -> dict[str, Any]:
    # Field by field: ``to_dict`` (dataclasses.asdict) would deep-copy the messages only to drop them.
    d = {k: getattr(result, k) for k in _PAYLOAD_FIELDS}
    d["factors"], d["extra"] = dict(result.factors), dict(result.extra)
    if d["batch"] is None:  # a live call's entry as before
        del d["batch"]
    return d


def _fill(results: list[JudgeResult | None], calls: Sequence[_Call], indices: Sequence[int], result: JudgeResult) -> None:
    """The result of one distinct call for every request that asked it (same cache key)."""
    for j in indices:
        results[j] = result if j == indices[0] else dataclasses.replace(
            result, key=calls[j].request.key, messages=calls[j].request.messages, metadata=calls[j].request.metadata)


def _legacy_entry(store: JudgeCache, call: _Call, config: JudgeConfig) -> dict[str, Any] | None:
    """An entry of a cache written when the base URL was in the key (see :func:`legacy_cache_key`), looked up
    at each of the judge's endpoints; an ``ok`` one is copied under the call's key, so it is found directly next time."""
    for endpoint in config.endpoints:
        old = legacy_cache_key(base_url=endpoint.base_url, model=call.model, messages=call.request.messages,
                               temperature=call.temperature, max_tokens=call.max_tokens, top_p=call.top_p, seed=call.seed,
                               rerun=call.request.rerun, template_version=config.template_version)
        entry = store.get(old)
        if entry is not None:
            if entry["status"] == "ok":
                store.put(call.cache_key, "ok", entry["payload"])
            return entry
    return None


def _from_cache(call: _Call, entry: Mapping[str, Any]) -> JudgeResult:
    p = entry["payload"]
    return JudgeResult(
        key=call.request.key, cache_key=call.cache_key, task=p["task"], status=entry["status"], verdict=p["verdict"],
        factors=p["factors"], extra=p["extra"], raw=p["raw"], reason=p["reason"], prompt_tokens=p["prompt_tokens"],
        completion_tokens=p["completion_tokens"], cost=p["cost"], attempts=p["attempts"], latency=p["latency"],
        rerun=p["rerun"], seed=p["seed"], model=p["model"], from_cache=True, messages=call.request.messages,
        metadata=call.request.metadata, batch=p.get("batch"),
    )


class _RateColumn(ProgressColumn):
    """Calls per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("? calls/s" if speed is None else f"{speed:.1f} calls/s", style="progress.data.speed")


# --------------------------------------------------------------------------- transport


def _aiohttp_available(base_url: str) -> bool:
    """Whether the SDK's aiohttp transport (``openai[aiohttp]``) is installed and fit for ``base_url``.

    It is not used when the environment names a proxy for the endpoint (the SDK's aiohttp
    client does not read proxy variables; httpx2 does), or when ``BIASBOUND_JUDGE_TRANSPORT=httpx``.
    """
    if os.environ.get("BIASBOUND_JUDGE_TRANSPORT", "").strip().lower() == "httpx":
        return False
    if not hasattr(openai, "DefaultAioHttpClient"):
        return False
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    parsed = urlparse(base_url)
    if urllib.request.getproxies().get(parsed.scheme) and not urllib.request.proxy_bypass(parsed.hostname or ""):
        return False
    return True


def _pool_sizes(concurrency: int, aiohttp: bool) -> list[int]:
    """Connections per ``AsyncOpenAI`` client.

    With the aiohttp transport one pool holds every connection. httpcore (the httpx2
    transport) scans all its connections on every request, so its pool is split into shards
    of at most ``_POOL_SHARD`` connections (one client each, used round-robin).
    """
    if aiohttp:
        return [concurrency]
    n_shards = max(1, -(-concurrency // _POOL_SHARD))
    per = -(-concurrency // n_shards)
    return [per] * n_shards


def _http_client(connections: int, timeout: float, aiohttp: bool) -> Any:
    """The SDK's own HTTP client: aiohttp-backed (about half the client CPU per call at high
    concurrency) or the default httpx2 one."""
    limits = _httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    factory = openai.DefaultAioHttpClient if aiohttp else openai.DefaultAsyncHttpxClient
    return factory(limits=limits, timeout=_httpx.Timeout(timeout), verify=_ssl_context())


@functools.lru_cache(maxsize=1)
def _ssl_context() -> Any:
    """The default TLS context (CA bundle loaded once per process, not once per session)."""
    create = getattr(_httpx, "create_ssl_context", None)
    return create() if create is not None else True


# --------------------------------------------------------------------------- public entry points


class JudgeSession:
    """One open judge endpoint: its ``AsyncOpenAI`` client(s) and connection pool, the cache and the limits.

    Use it when a caller makes several batches of calls (the runner: originals, rewrites,
    neighbours) so that the client, its connection pool and the concurrency/rate limits
    are shared; :func:`judge_many` is a one-batch session.

    Parameters
    ----------
    config:
        Endpoint, concurrency and retry policy.
    cache:
        A :class:`JudgeCache`, a path to one (opened here, closed on exit), or ``None``.
    retry_failed:
        Call again the requests whose cached outcome is ``failed`` *from before this session opened*
        (an earlier run: a server that was down, a run that was killed).
    retry_unparseable:
        Call again the requests whose cached reply held no verdict (``missing``) from before this session
        opened; off by default (a changed prompt or parser has another cache key and is called anyway). Outcomes
        cached by this session are reused either way, so one run never calls the same request twice.

    Attributes
    ----------
    counts:
        Running totals over the session: ``requests`` (results returned), ``cache_hits``,
        ``shared`` (requests answered by an identical request of the same batch: same cache key),
        ``calls`` (distinct calls made over HTTP), ``recalled`` (of those, calls made again because
        an earlier run left them failed or missing), ``attempts`` (HTTP attempts, retries included).
        ``requests = cache_hits + shared + calls``.
    endpoint_attempts:
        HTTP attempts per endpoint base URL.

    Raises
    ------
    JudgeError
        On entry when no API key is available for a non-local endpoint.

    Examples
    --------
    >>> async def go(config, requests):  # doctest: +SKIP
    ...     async with JudgeSession(config, cache="cache.sqlite") as session:
    ...         first = await session.judge(requests)
    ...         text = await session.complete(messages)
    """

    def __init__(self, config: JudgeConfig, *, cache: JudgeCache | str | Path | None = None,
                 retry_failed: bool = False, retry_unparseable: bool = False) -> None:
        if not isinstance(config, JudgeConfig):
            raise TypeError(f"The 'config' parameter of JudgeSession must be a JudgeConfig. Got {type(config).__name__} instead.")
        self.config = config
        self.retry_failed = bool(retry_failed)
        self.retry_unparseable = bool(retry_unparseable)
        self._opened = 0.0
        self._cache_arg = cache
        self.cache: JudgeCache | None = None
        self._own_cache = False
        self._stack: ExitStack | None = None
        self._run: _Run | None = None
        self._client: openai.AsyncOpenAI | None = None
        self._clients: list[openai.AsyncOpenAI] = []
        self.counts: dict[str, int] = {"requests": 0, "cache_hits": 0, "shared": 0, "calls": 0, "recalled": 0,
                                       "attempts": 0}
        #: sentences about the session's batches (one that expired, failed or was cancelled, and what became of
        #: its requests)
        self.notes: list[str] = []

    @property
    def endpoint_attempts(self) -> dict[str, int]:
        """HTTP attempts per endpoint base URL (all zero before the session opens)."""
        if self._run is None:
            return {e.base_url: 0 for e in self.config.endpoints}
        return {lane.url: lane.attempts for lane in self._run.lanes}

    async def __aenter__(self) -> JudgeSession:
        api_key, secret = _api_key(self.config)
        self._own_cache = self._cache_arg is not None and not isinstance(self._cache_arg, JudgeCache)
        self.cache = JudgeCache(self._cache_arg) if self._own_cache else self._cache_arg  # type: ignore[assignment]
        self._stack = ExitStack()
        self._stack.enter_context(_redacting_logs(secret))
        cfg = self.config
        # Connection pools sized to each endpoint's concurrency and reused by every call of the session.
        per_lane: list[list[openai.AsyncOpenAI]] = []
        for endpoint in cfg.endpoints:
            aiohttp = _aiohttp_available(endpoint.base_url)
            per_lane.append([
                openai.AsyncOpenAI(base_url=endpoint.base_url, api_key=api_key, max_retries=0, timeout=cfg.timeout,
                                   http_client=_http_client(per, cfg.timeout, aiohttp))
                for per in _pool_sizes(endpoint.concurrency, aiohttp)
            ])
        self._clients = [c for lane in per_lane for c in lane]
        self._client = self._clients[0]
        self._run = _Run(cfg, self.cache, per_lane, secret)
        self._opened = time.time()
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            for c in self._clients:
                await c.close()
        finally:
            self._client = None
            self._clients = []
            if self._stack is not None:
                self._stack.close()
                self._stack = None
            if self._own_cache and self.cache is not None:
                self.cache.close()
                self.cache = None

    def _active(self) -> _Run:
        if self._run is None or self._client is None:
            raise JudgeError("The JudgeSession is not open; use 'async with JudgeSession(...) as session'.")
        if self._run.abort is not None:
            raise self._run.abort
        return self._run

    def uncached(self, requests: Sequence[JudgeRequest]) -> int:
        """How many of ``requests`` :meth:`judge` would call the endpoint for: no cached result, or (with
        ``retry_failed``) a failed/missing one from before the session opened."""
        if self.cache is None:
            return len(requests)
        n = 0
        for r in requests:
            call = _resolve(r, self.config)
            entry = self.cache.get(call.cache_key)
            if entry is None and self.config.cache_identity is None:
                entry = _legacy_entry(self.cache, call, self.config)
            n += entry is None or (self._recall(entry, self.retry_failed))
        return n

    def _recall(self, entry: Mapping[str, Any], retry: bool) -> bool:
        """Call again a cached outcome of an earlier session: a failed call (no reply) when ``retry``; an
        unparseable reply (``missing``) only with ``retry_unparseable`` -- the same prompt and parser would
        most likely meet the same reply again (a changed prompt or parser has another cache key)."""
        if entry["status"] == "ok" or entry["created"] >= self._opened:
            return False
        if entry["status"] == "missing":
            return self.retry_unparseable
        return retry

    async def check_endpoint(self) -> None:
        """One cheap request (``GET /models``): raises a ``JudgeError`` naming the URL when it cannot be reached."""
        await self._active().check_endpoint()

    async def judge(
        self,
        requests: Sequence[JudgeRequest],
        *,
        progress: bool = False,
        retry_failed: bool | None = None,
        description: str = "judging",
        batch: bool = True,
    ) -> list[JudgeResult]:
        """Judge every request (cached, concurrent, retried) and return the results in request order.

        See :func:`judge_many` for the parameters, the result and the errors; ``retry_failed=None``
        uses the session's setting (a failed/missing outcome cached by this session is never re-called).
        With the config's ``batch`` options the calls to make go through the provider's batch API
        (:mod:`biasbound.judge.batch`; ``batch=False``: live all the same), the ones a batch left without a
        reply live.
        """
        run = self._active()
        requests = list(requests)
        for i, r in enumerate(requests):
            if not isinstance(r, JudgeRequest):
                raise TypeError("The 'requests' parameter of judge_many must hold JudgeRequest objects. "
                                f"Got {type(r).__name__} at index {i} instead.")
        store = self.cache
        calls = [_resolve(r, self.config) for r in requests]
        results: list[JudgeResult | None] = [None] * len(calls)
        todo: dict[str, list[int]] = {}
        retry = self.retry_failed if retry_failed is None else bool(retry_failed)
        for i, call in enumerate(calls):
            entry = store.get(call.cache_key) if store is not None else None
            if entry is None and store is not None and self.config.cache_identity is None:
                entry = _legacy_entry(store, call, self.config)
            if entry is not None and not self._recall(entry, retry):
                results[i] = _from_cache(call, entry)
            else:
                call.recalled = entry is not None
                todo.setdefault(call.cache_key, []).append(i)
        n_cached = len(requests) - sum(map(len, todo.values()))
        called = dict(todo)
        if todo:  # something must be asked: first make sure the endpoint answers at all
            await run.check_endpoint()
        if todo and self.config.batch is not None and batch:
            from biasbound.judge.batch import judge_by_batch

            answered = await judge_by_batch(run, self._clients[0], {k: calls[ix[0]] for k, ix in todo.items()},
                                            self.config.batch, state_path=self._batch_state(), progress=progress,
                                            notes=self.notes)
            for key, result in answered.items():
                _fill(results, calls, todo.pop(key), result)
        columns = (TextColumn("[progress.description]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   _RateColumn(), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn())
        with Progress(*columns, console=Console(stderr=True), disable=not progress, transient=False) as bar:
            task_id = bar.add_task(f"{description} ({n_cached} cached)", total=len(requests))
            bar.advance(task_id, n_cached)

            bar.advance(task_id, len(requests) - n_cached - sum(map(len, todo.values())))

            async def one(indices: list[int]) -> None:
                _fill(results, calls, indices, await run.judge(calls[indices[0]]))
                bar.advance(task_id, len(indices))
                if run.abort is not None:
                    raise run.abort

            tasks = [asyncio.ensure_future(one(indices)) for indices in todo.values()]
            try:
                await asyncio.gather(*tasks)
            finally:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        out = [r for r in results if r is not None]
        self.counts["requests"] += len(out)
        self.counts["cache_hits"] += sum(r.from_cache for r in out)
        self.counts["shared"] += sum(len(ix) - 1 for ix in called.values())
        self.counts["calls"] += len(called)
        self.counts["recalled"] += sum(calls[ix[0]].recalled for ix in called.values())
        self.counts["attempts"] += sum(results[ix[0]].attempts for ix in called.values() if results[ix[0]] is not None)  # type: ignore[union-attr]
        return out

    def _batch_state(self) -> Path | None:
        """``judge_batches.json`` next to the cache file (the run folder); ``None`` without a file cache."""
        path = getattr(self.cache, "path", None)
        return None if path is None or path == ":memory:" else Path(path).parent / "judge_batches.json"

    async def complete(self, messages: Sequence[Mapping[str, str]], *, key: str = "complete", rerun: int = 0) -> str:
        """One chat call through the session (cached, retried); returns the reply text.

        Shaped for the LLM neighbour generators' ``complete(messages)`` argument.

        Raises
        ------
        JudgeError
            When the call ends ``failed`` or ``missing`` (the generator records it as a rejected attempt).
        """
        (result,) = await self.judge([JudgeRequest(key=key, messages=messages, rerun=rerun)], batch=False)
        if result.status != "ok" or result.raw is None:
            raise JudgeError(f"The call {key!r} to {self.config.base_url} ended {result.status}: {result.reason}.")
        return result.raw


async def judge_many(
    requests: Sequence[JudgeRequest],
    *,
    config: JudgeConfig,
    cache: JudgeCache | str | Path | None = None,
    progress: bool = True,
    retry_failed: bool = False,
) -> list[JudgeResult]:
    """Judge every request (cached, concurrent, retried) and return the results in request order.

    Parameters
    ----------
    requests:
        The calls to make. Requests with the same cache key are called once.
    config:
        Endpoint, concurrency and retry policy.
    cache:
        A :class:`JudgeCache`, a path to one (opened and closed here), or ``None`` (no cache).
    progress:
        Show a rich progress bar (rate and ETA) on stderr.
    retry_failed:
        Call again the requests whose cached outcome (from before this call) is ``failed`` or ``missing``.

    Returns
    -------
    list of JudgeResult
        One per request, same order. Failures are results with ``status`` ``"failed"`` or
        ``"missing"`` and a ``reason``.

    Raises
    ------
    JudgeError
        No API key for a non-local endpoint, or the endpoint answered 401/403/404
        (remaining calls are cancelled; finished calls stay in the cache).
    """
    if not isinstance(config, JudgeConfig):
        raise TypeError(f"The 'config' parameter of judge_many must be a JudgeConfig. Got {type(config).__name__} instead.")
    requests = list(requests)
    for i, r in enumerate(requests):
        if not isinstance(r, JudgeRequest):
            raise TypeError(f"The 'requests' parameter of judge_many must hold JudgeRequest objects. Got {type(r).__name__} at index {i} instead.")
    async with JudgeSession(config, cache=cache) as session:
        return await session.judge(requests, progress=progress, retry_failed=retry_failed)


def judge_many_sync(
    requests: Sequence[JudgeRequest],
    *,
    config: JudgeConfig,
    cache: JudgeCache | str | Path | None = None,
    progress: bool = True,
    retry_failed: bool = False,
) -> list[JudgeResult]:
    """Blocking wrapper of :func:`judge_many` (not usable inside a running event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(judge_many(requests, config=config, cache=cache, progress=progress, retry_failed=retry_failed))
    raise JudgeError("judge_many_sync cannot run inside a running event loop; use 'await judge_many(...)' instead.")

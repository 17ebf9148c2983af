"""Batch judging: the calls of a run through a provider's batch API (OpenAI-compatible batch files).

With ``judge.batch`` in the run config (:class:`BatchOptions` on the :class:`~biasbound.judge.JudgeConfig`),
:meth:`biasbound.judge.JudgeSession.judge` sends the calls it must make -- the ones not in the cache -- as
one batch per judging step instead of one HTTP request each:

1. the requests are written as a batch input file, one JSON line per distinct call:
   ``{"custom_id": <cache key>, "method": "POST", "url": "/v1/chat/completions", "body": <the live route's body>}``
   (the cache key is a hash of the call: it names no secret), uploaded with the openai SDK's
   ``files.create(purpose="batch")`` and submitted with ``batches.create``;
2. the batch id is recorded in ``judge_batches.json`` next to the cache (the run folder) *before* any wait,
   so a run that is killed resumes by polling the same batch: a recorded batch that holds a call still to
   be made is polled, never submitted again;
3. ``batches.retrieve`` is polled every ``poll_interval`` seconds until the batch ends; its output and error
   files are downloaded and every reply is parsed by the live route's own parser
   (:meth:`biasbound.judge.client._Run._take_reply`) and committed to the same cache, so everything downstream
   (judgment table, certificates, card) is unchanged. A reply without a verdict is ``missing`` (one reply,
   no parse retry: the batch gives one answer per request);
4. a batch that failed, expired or was cancelled, or that completed with requests in its error file, is
   reported in one sentence naming the batch id and what happened; only the requests without a reply go
   again: live (``fallback: live``, the default) or not at all (``fallback: stop``: the run stops with that
   sentence and a re-run submits them in a new batch).

Costs: a call answered by a batch is priced at the batch prices -- ``prices`` given under ``batch``, else the
judge's prices less ``discount`` -- and has no cost when neither is given (no price is invented).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import openai

from biasbound._exceptions import InputError, JudgeError
from biasbound._validation import check_in_range, check_int
from biasbound.judge import ratelimit
from biasbound.judge._wire import _new_state, chat_body

# the live route's call, run and result objects (biasbound.judge.client, which imports this module: duck-typed here)
_Call: TypeAlias = Any
_Run: TypeAlias = Any
JudgeResult: TypeAlias = Any

__all__ = ["BATCH_STATE", "BatchOptions", "judge_by_batch"]

#: The file (next to the judge cache) recording every batch a run submitted.
BATCH_STATE = "judge_batches.json"
FALLBACKS = ("live", "stop")
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
_CHAT_URL = "/v1/chat/completions"


@dataclass(frozen=True)
class BatchOptions:
    """How to judge through a provider's batch API.

    Parameters
    ----------
    poll_interval:
        Seconds between two ``batches.retrieve`` polls (> 0).
    completion_window:
        The window the provider is asked to finish in (OpenAI accepts ``"24h"``).
    discount:
        The batch discount as a fraction of the judge's prices (0.5 = half price); ``None`` = not stated.
    prompt_price_per_million, completion_price_per_million:
        The batch prices themselves (both or neither); they win over ``discount``.
    fallback:
        What the requests a batch left without a reply become: ``"live"`` (asked live at once) or
        ``"stop"`` (the run stops saying so; a re-run submits them in a new batch).
    max_requests:
        Requests per batch file (a provider's cap; OpenAI's is 50,000); more calls go in several batches.
    state_file:
        Where the batch ids are recorded; ``None`` = ``judge_batches.json`` next to the cache.
    """

    poll_interval: float = 30.0
    completion_window: str = "24h"
    discount: float | None = None
    prompt_price_per_million: float | None = None
    completion_price_per_million: float | None = None
    fallback: str = "live"
    max_requests: int = 50_000
    state_file: Path | None = None

    def __post_init__(self) -> None:
        where = "BatchOptions"
        check_in_range(self.poll_interval, "poll_interval", where, low=0, low_open=True)
        if not isinstance(self.completion_window, str) or not self.completion_window.strip():
            raise InputError(f"The 'completion_window' parameter of {where} must be a non-empty str such as '24h'. "
                             f"Got {self.completion_window!r} instead.")
        if self.discount is not None:
            check_in_range(self.discount, "discount", where, low=0, high=1, high_open=True)
        given = [p is not None for p in (self.prompt_price_per_million, self.completion_price_per_million)]
        if any(given) and not all(given):
            raise InputError(f"The batch prices of {where} must be given both (prompt and completion) or neither.")
        for name in ("prompt_price_per_million", "completion_price_per_million"):
            if getattr(self, name) is not None:
                check_in_range(getattr(self, name), name, where, low=0)
        if self.fallback not in FALLBACKS:
            raise InputError(f"The 'fallback' parameter of {where} must be one of {list(FALLBACKS)}. "
                             f"Got {self.fallback!r} instead.")
        check_int(self.max_requests, "max_requests", where, low=1)

    def prices(self, prompt: float | None, completion: float | None) -> tuple[float | None, float | None]:
        """The per-million batch prices: stated ones, else the live ones less the discount, else none."""
        if self.prompt_price_per_million is not None:
            return self.prompt_price_per_million, self.completion_price_per_million
        if self.discount is None or prompt is None or completion is None:
            return None, None
        return prompt * (1.0 - self.discount), completion * (1.0 - self.discount)

    def describe(self) -> str:
        """The price rule in words (for the run summary)."""
        if self.prompt_price_per_million is not None:
            return (f"batch prices {self.prompt_price_per_million:g}/{self.completion_price_per_million:g} per million "
                    "prompt/completion tokens")
        if self.discount is not None:
            return f"the judge's prices less the batch discount of {self.discount:.0%}"
        return "no batch price stated: batch calls have no cost"


# --------------------------------------------------------------------------- the state file


class _State:
    """``judge_batches.json``: every batch submitted, with its requests (cache keys) and what became of it."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.batches: list[dict[str, Any]] = []
        if path is not None and path.is_file():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.batches = list(data["batches"])
            except (ValueError, KeyError, TypeError):
                raise JudgeError(f"{path}: not a batch record biasbound wrote (move it away to submit afresh; the "
                                 "batches it named are then not polled).") from None

    def save(self) -> None:
        if self.path is None:
            return
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps({"format": "biasbound-batches/1", "batches": self.batches}, indent=1) + "\n",
                       encoding="utf-8")
        os.replace(tmp, self.path)  # never half a record: a kill leaves the old or the new one


# --------------------------------------------------------------------------- the batch route


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)


async def _submit(client: openai.AsyncOpenAI, calls: Sequence[_Call], options: BatchOptions, state: _State,
                  progress: bool) -> dict[str, Any]:
    lines = [json.dumps({"custom_id": c.cache_key, "method": "POST", "url": _CHAT_URL, "body": chat_body(c)},
                        ensure_ascii=False) for c in calls]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    uploaded = await client.files.create(file=("biasbound-batch.jsonl", data, "application/jsonl"), purpose="batch")
    batch = await client.batches.create(input_file_id=uploaded.id, endpoint=_CHAT_URL,  # type: ignore[arg-type]
                                        completion_window=options.completion_window,  # type: ignore[arg-type]
                                        metadata={"tool": "biasbound"})
    record = {"batch_id": batch.id, "input_file_id": uploaded.id, "status": batch.status, "requests": len(calls),
              "custom_ids": [c.cache_key for c in calls], "submitted": time.time(), "collected": False}
    state.batches.append(record)
    state.save()  # recorded before any wait: a killed run polls this batch again
    _say(progress, f"batch {batch.id}: {len(calls)} requests submitted (recorded in {state.path or 'memory'})")
    return record


async def _wait(client: openai.AsyncOpenAI, record: dict[str, Any], options: BatchOptions, progress: bool) -> Any:
    """Poll the batch until it ends; returns the last ``Batch`` object."""
    polls = 0
    while True:
        batch = await client.batches.retrieve(record["batch_id"])
        polls += 1
        if batch.status in _ENDED:
            record["polls"] = int(record.get("polls", 0)) + polls
            return batch
        counts = batch.request_counts
        if progress and counts is not None and polls % 10 == 1:
            _say(progress, f"batch {batch.id}: {batch.status} ({counts.completed} of {counts.total} done)")
        await ratelimit.sleep(options.poll_interval)


async def _lines(client: openai.AsyncOpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if not file_id:
        return []
    content = await client.files.content(file_id)
    out = []
    for line in content.text.splitlines():
        if line.strip():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn line answers nothing: its request goes again
            if isinstance(rec, dict):
                out.append(rec)
    return out


def _happened(batch: Any, options: BatchOptions, n_errors: int) -> str:
    if batch.status == "expired":
        return f"expired before its completion window ({options.completion_window}) ended"
    if batch.status == "cancelled":
        return "was cancelled"
    if batch.status == "failed":
        errors = getattr(getattr(batch, "errors", None), "data", None) or []
        first = next((e.message for e in errors if getattr(e, "message", None)), None)
        return "failed" + (f" ({str(first)[:200]})" if first else "")
    return f"completed with {n_errors} request(s) in its error file"


async def _collect(run: _Run, client: openai.AsyncOpenAI, record: dict[str, Any], batch: Any,
                   calls: Mapping[str, _Call], options: BatchOptions) -> tuple[dict[str, JudgeResult], str | None]:
    """Parse the batch's output file into results (committed to the cache); returns them and, when requests
    of the batch have no reply, the sentence saying what happened."""
    results: dict[str, JudgeResult] = {}
    errors = await _lines(client, getattr(batch, "error_file_id", None))
    for rec in await _lines(client, getattr(batch, "output_file_id", None)):
        key = rec.get("custom_id")
        response = rec.get("response") or {}
        call = calls.get(key) if isinstance(key, str) else None
        if call is None or not isinstance(response, dict) or response.get("status_code") != 200:
            if isinstance(key, str) and key in calls:
                errors.append(rec)
            continue
        state = _new_state()
        state["attempts"], state["endpoint"] = 1, run.config.base_url
        body = response.get("body")
        if not isinstance(body, dict):
            errors.append(rec)
            continue
        parsed, finish = run._take_reply(call, body, state)
        status, reason = parsed.status, parsed.reason
        if status != "ok" and not (reason or "").startswith("ambiguous"):
            status = "missing"
            reason = (f"{reason or 'no verdict found'} after 1 unparseable reply in batch {record['batch_id']} "
                      f"(finish_reason={finish})")
        results[key] = run.finish(call, state, status, parsed, reason, latency=0.0, batch=record["batch_id"])  # type: ignore[index]
    record.update(status=batch.status, collected=True, answered=len(results))
    asked = [k for k in record["custom_ids"] if k in calls]
    unanswered = [k for k in asked if k not in results]
    if not unanswered:
        return results, None
    what = _happened(batch, options, len(errors))
    return results, (f"The batch {record['batch_id']} {what}: {len(unanswered)} of its {len(asked)} requests have "
                     "no reply")


async def judge_by_batch(run: _Run, client: openai.AsyncOpenAI, calls: Mapping[str, _Call], options: BatchOptions, *,
                         state_path: Path | None, progress: bool = False,
                         notes: list[str] | None = None) -> dict[str, JudgeResult]:
    """Judge ``calls`` (cache key -> call) through the batch API; returns the results of the calls that got a
    reply (committed to the cache). The calls left without one are the caller's to ask live
    (``fallback: live``; the sentence saying so goes into ``notes``), or a :class:`JudgeError` names the batch
    (``fallback: stop``)."""
    try:
        return await _judge_by_batch(run, client.with_options(max_retries=3), calls, options, state_path=state_path,
                                     progress=progress, notes=notes)
    except openai.APIStatusError as exc:  # e.g. a server without a batch API: 404 on /files
        what = f"HTTP {exc.status_code} on {exc.request.method} {exc.request.url.path}"
        raise JudgeError(run.clean(
            f"The judge endpoint {run.config.base_url} refused the batch route ({what}: {str(exc.message)[:200]}); "
            "check that it offers an OpenAI-compatible batch API, or remove 'batch' from the judge's config to judge "
            "live; replies already received are cached.")) from None
    except openai.APIConnectionError as exc:
        raise JudgeError(run.clean(
            f"The batch route of {run.config.base_url} could not be reached ({type(exc).__name__}); the batches "
            "submitted are recorded, so a re-run polls them again.")) from None


async def _judge_by_batch(run: _Run, client: openai.AsyncOpenAI, calls: Mapping[str, _Call], options: BatchOptions, *,
                          state_path: Path | None, progress: bool,
                          notes: list[str] | None) -> dict[str, JudgeResult]:
    """:func:`judge_by_batch` without the translation of the SDK's errors (the SDK retries the few file and batch
    requests itself)."""
    state = _State(options.state_file if options.state_file is not None else state_path)
    pending = dict(calls)
    results: dict[str, JudgeResult] = {}
    sentences: list[str] = []
    # 1. resume: a recorded batch not yet collected that holds calls still to make is polled, never re-submitted
    for record in state.batches:
        if record.get("collected") or not any(k in pending for k in record.get("custom_ids", ())):
            continue
        _say(progress, f"batch {record['batch_id']}: resuming (recorded by an earlier session)")
        await _one(run, client, record, pending, options, state, results, sentences, progress)
    # 2. the rest in new batches
    todo = list(pending.values())
    for start in range(0, len(todo), options.max_requests):
        chunk = [c for c in todo[start:start + options.max_requests] if c.cache_key in pending]
        if chunk:
            record = await _submit(client, chunk, options, state, progress)
            await _one(run, client, record, pending, options, state, results, sentences, progress)
    if sentences:
        if options.fallback == "stop":
            raise JudgeError(run.clean("; ".join(sentences) + "; the run stops ('batch.fallback: stop'): the replies "
                                       "received are cached and a re-run submits the rest in a new batch."))
        for s in sentences:
            line = s + "; they were asked live."
            _say(progress, line)
            if notes is not None:
                notes.append(line)
    return results


async def _one(run: _Run, client: openai.AsyncOpenAI, record: dict[str, Any], pending: dict[str, _Call],
               options: BatchOptions, state: _State, results: dict[str, JudgeResult], sentences: list[str],
               progress: bool) -> None:
    batch = await _wait(client, record, options, progress)
    got, sentence = await _collect(run, client, record, batch, pending, options)
    state.save()
    results.update(got)
    for k in got:
        pending.pop(k, None)
    if sentence is not None:
        sentences.append(sentence)
    _say(progress, f"batch {record['batch_id']}: {batch.status}, {len(got)} replies read")

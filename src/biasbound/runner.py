"""``biasbound run CONFIG.yaml``: judge → perturb → judge neighbours → measure → certify → report.

One YAML file (:mod:`biasbound.config`) names the questions and answers, the judge
endpoint and template, the neighbour generators and the certification settings.
:func:`run` then

1. judges the original context: every (model, item) in game 1 and game 2 for the
   pairwise template (Arena-Hard's two orders), or once for single 1-10 grading;
2. draws the neighbours, Hamming-1 (one item perturbed per neighbour): for each
   generator and model, ``m`` items without replacement with a seed derived from the
   master seed, the generator and the model; each drawn item is perturbed with its own
   item-derived seed (:meth:`NeighborGenerator.perturb` with ``rng=None``), so a
   perturbation never depends on which other items were drawn -- the population the
   ``m`` neighbours are sampled from is one fixed perturbation per item. ``swap`` is a
   census: both games of every item are judged in step 1 anyway;
3. judges the neighbours (variant ``<generator>`` = game-1 judgment of the perturbed item;
   ``rerun`` = game 1 at rerun index 1, i.e. seed base + 1);
4. builds a :class:`~biasbound.data.JudgmentSet` (canonical f(D) = game 1, variant
   ``original``, rerun 0; the swap neighbour = game 2 in the model's view, as the
   Arena-Hard loader has it) and calls :func:`biasbound.pipeline.certify` with neighbours
   ``swap``, ``variant:<generator>`` and ``rerun``;
5. writes certify's outputs plus ``model_judgment/<judge>/<model>.jsonl`` (Arena-Hard's
   judgment format, pairwise), ``judgments.parquet`` (every judgment incl. neighbours,
   with status and reason), ``neighbors.jsonl`` (every perturbation: what changed, the
   generator details, rejected attempts) and ``run_summary.json`` (calls, cache hits,
   retries, failures with reasons, missing verdicts, tokens, cost, seeds).

Resuming: every finished call (judge and rewriter) is committed to the SQLite cache
``<output>/judge_cache.sqlite``; perturbations are deterministic given the seed (the
rewriter's replies come from the cache), so a restarted run regenerates the same
neighbours and repeats no finished call; calls an earlier run left failed or missing are
called again (``retry_failed``, default on; ``--no-retry-failed`` keeps them), but a reply that held no
verdict is kept unless the config says ``retry_unparseable: true`` (a changed prompt or parser is a new call). The cache key
holds the model, sampling, messages and the judge's pinned ``cache_identity`` but not the
base URL, so a server restarted on another port or host is not paid twice. Failed or missing judgments are scored NaN --
counted, reported, never scored. Perturbations that did not apply (``not-applicable``:
nothing to change; ``failed``: no acceptable rewrite) are recorded in ``neighbors.jsonl``
and counted but not judged: they are not neighbours.

Swap drawn (``neighbors.options.swap.drawn``): step 1 judges game 1 only and swap is drawn like the
other generators, game 2 judged for the m drawn items per model.

Sequential judging (``neighbors.sequential``): the looks are declared in the config; look k is
this whole pipeline with ``m = looks[k]`` taken as the first m of each seeded draw of
``looks[-1]`` and ``beta / K``, the earlier looks' calls coming from the cache; the run stops at
the first look whose α gains less than ``min_gain`` (:func:`_run_sequential`), and the stopped
look's certificates record the schedule (``scope.sequential``; docs/proofs/sequential.md).
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import (
    DataFormatError,
    InfeasibleCertificateError,
    InputError,
    JudgeError,
)
from biasbound.config import CERTIFY_NAMES, LLM_GENERATORS, RunConfig, load_config
from biasbound.data._io import iter_json_records

__all__ = [
    "CERTIFY_NAMES",
    "RunResult",
    "item_fields",
    "item_messages",
    "load_items",
    "original_items",
    "run",
    "run_async",
    "score_of",
]

#: Generator name -> the neighbour name ``pipeline.certify`` reads from the judgment table.
_CACHE_NAME = "judge_cache.sqlite"
_MAX_LISTED_FAILURES = 200
#: A game a drawn swap did not judge (``options.swap.drawn``), in the Arena-Hard judgment files.
_NOT_DRAWN = {"verdict": None, "status": "not drawn", "reason": "swap drawn: this item's game 2 was not in the draw"}


# ----------------------------------------------------------------------------------------
# results
# ----------------------------------------------------------------------------------------
@dataclass
class RunResult:
    """What :func:`run` produced.

    Attributes
    ----------
    config:
        The validated configuration.
    judgments:
        The :class:`~biasbound.data.JudgmentSet` given to ``certify`` (neighbours included).
    certification:
        The :class:`~biasbound.pipeline.CertifyResult` (``None`` when certify failed; see ``summary``).
    summary:
        The run summary (also in ``run_summary.json``).
    outputs:
        ``{name: path}`` of every file written.
    perturbations:
        ``{generator: [(model, item_index, Perturbation), ...]}`` in draw order.
    """

    config: RunConfig
    judgments: Any
    certification: Any
    summary: dict[str, Any]
    outputs: dict[str, Path]
    perturbations: dict[str, list[tuple[str, int, Any]]] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------
# loading questions and answers
# ----------------------------------------------------------------------------------------


def _question_text(rec: Mapping[str, Any]) -> str | None:
    if isinstance(rec.get("prompt"), str):
        return rec["prompt"]
    turns = rec.get("turns")
    if isinstance(turns, list) and turns and isinstance(turns[0], Mapping) and isinstance(turns[0].get("content"), str):
        return turns[0]["content"]
    return None


def _answer_text(rec: Mapping[str, Any]) -> str | None:
    msgs = rec.get("messages")
    if isinstance(msgs, list):
        for m in reversed(msgs):
            if isinstance(m, Mapping) and m.get("role") == "assistant":
                c = m.get("content")
                if isinstance(c, Mapping):
                    c = c.get("answer")
                return c if isinstance(c, str) else None
    choices = rec.get("choices")  # Arena-Hard v0.1 answer files of the older layout
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        turns = choices[0].get("turns")
        if isinstance(turns, list) and turns and isinstance(turns[0], Mapping) and isinstance(turns[0].get("content"), str):
            return turns[0]["content"]
    return None


@dataclass(frozen=True)
class _Context:
    item_ids: tuple[str, ...]
    questions: dict[str, str]
    answers: dict[str, dict[str, str]]  # model -> item -> answer
    baseline: dict[str, str] | None  # item -> baseline answer (pairwise)
    models: tuple[str, ...]
    skipped: dict[str, Any]


def _load_arena_hard(cfg: RunConfig) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, int]]:
    data = cfg.data
    questions: dict[str, str] = {}
    if data.questions is None:  # the config schema requires it for this layout; a RunConfig built by hand may not
        raise InputError(f"The key 'data.questions' of {cfg.path} must name the questions file. Got none instead.")
    skipped: Counter[str] = Counter()
    for ln, rec in iter_json_records(data.questions):
        qid = rec.get("uid", rec.get("question_id"))
        text = _question_text(rec)
        if qid is None or text is None:
            raise DataFormatError("a question needs 'uid' (or 'question_id') and 'prompt' (or 'turns').",
                                  path=str(data.questions), line=ln)
        questions[str(qid)] = text
    answers: dict[str, dict[str, str]] = {}
    for path in data.answers:
        for ln, rec in iter_json_records(path):
            qid = rec.get("uid", rec.get("question_id"))
            model = rec.get("model", path.name.rsplit(".jsonl", 1)[0])
            if qid is None:
                raise DataFormatError("an answer needs 'uid' (or 'question_id').", path=str(path), line=ln)
            text = _answer_text(rec)
            if text is None or not text.strip():
                skipped[f"empty answer ({model})"] += 1
                continue
            answers.setdefault(str(model), {})[str(qid)] = text
    return questions, answers, dict(skipped)


def _load_table(cfg: RunConfig) -> tuple[dict[str, str], dict[str, dict[str, str]], dict[str, str] | None, dict[str, int]]:
    path = cfg.data.table
    if path is None:  # the config schema requires it for this layout; a RunConfig built by hand may not
        raise InputError(f"The key 'data.table' of {cfg.path} must name the judgment table. Got none instead.")
    from biasbound.data.tables import file_format, read_rows

    # the long-table reader: checked bytes (truncated .gz, binary, non-UTF-8 are one sentence) and physical
    # line numbers (answers often hold quoted newlines), every column read as text
    frame, lines = read_rows(path, file_format(path), what="answer")
    need = ["item_id", "question", "model", "answer"]
    miss = [c for c in need if c not in frame.columns]
    if miss:
        raise DataFormatError(f"the answer table lacks the column(s) {miss}; it needs item_id, question, model, answer[, baseline].",
                              path=str(path), line=1)
    questions: dict[str, str] = {}
    answers: dict[str, dict[str, str]] = {}
    baseline: dict[str, str] | None = {} if "baseline" in frame.columns else None
    skipped: Counter[str] = Counter()
    for k, row in zip(lines.tolist(), frame.itertuples(index=False)):
        for col in ("item_id", "model"):
            value = getattr(row, col)
            if value is None or (isinstance(value, float) and value != value) or not str(value).strip():
                raise DataFormatError(f"empty {col}.", path=str(path), line=k)
        qid, q, model, ans = str(row.item_id).strip(), row.question, str(row.model).strip(), row.answer
        if not isinstance(q, str) or not q.strip():
            raise DataFormatError("empty question.", path=str(path), line=k)
        questions.setdefault(qid, q)
        if isinstance(ans, str) and ans.strip():
            answers.setdefault(model, {})[qid] = ans
        else:
            skipped[f"empty answer ({model})"] += 1
        if baseline is not None:
            b = row.baseline
            if isinstance(b, str) and b.strip():
                baseline.setdefault(qid, b)
    return questions, answers, baseline, dict(skipped)


def load_items(cfg: RunConfig) -> _Context:
    """Load questions and answers, pick the seeded subset of items and the models to judge.

    Items are the questions that have a baseline answer (pairwise); a model without an
    answer to a chosen item is not judged on it (counted in ``skipped``).
    """
    data = cfg.data
    baseline_answers: dict[str, str] | None
    if data.table is not None:
        questions, answers, baseline_answers, skipped = _load_table(cfg)
        if cfg.template == "pairwise" and data.baseline is not None:
            baseline_answers = answers.pop(data.baseline, None)
            if baseline_answers is None:
                raise InputError(f"The key 'data.baseline' of {cfg.path} names {data.baseline!r}, which has no rows in {data.table}.")
        if cfg.template == "pairwise" and not baseline_answers:
            raise InputError(f"The template 'pairwise' of {cfg.path} needs baseline answers: add a 'baseline' column to "
                             f"{data.table} or set 'data.baseline' to a model of the table.")
        if cfg.template == "single":
            baseline_answers = None
    else:
        questions, answers, skipped = _load_arena_hard(cfg)
        baseline_answers = None
        if cfg.template == "pairwise":
            if data.baseline not in answers:
                raise InputError(f"The key 'data.baseline' of {cfg.path} must name a model with an answer file; "
                                 f"got {data.baseline!r}, models: {sorted(answers)}.")
            baseline_answers = answers.pop(str(data.baseline))
    if data.models is not None:
        unknown = [m for m in data.models if m not in answers]
        if unknown:
            raise InputError(f"The key 'data.models' of {cfg.path} must name models with answers; {unknown[0]!r} has none "
                             f"(models: {sorted(answers)}).")
        models = tuple(data.models)
    else:
        models = tuple(sorted(answers))
    answers = {m: answers[m] for m in models}
    if data.include_baseline and baseline_answers is not None and data.baseline not in answers:
        models = (*models, str(data.baseline))
        answers[str(data.baseline)] = dict(baseline_answers)
    if not models:
        raise InputError(f"The data of {cfg.path} hold no model to judge besides the baseline.")
    pool = sorted(q for q in questions if baseline_answers is None or q in baseline_answers)
    if len(pool) < 2:
        raise InputError(f"The data of {cfg.path} hold {len(pool)} usable question(s); at least 2 are needed.")
    if data.n_items is not None and data.n_items > len(pool):
        raise InputError(f"The key 'data.n_items' of {cfg.path} asks for {data.n_items} items, but the data hold "
                         f"{len(pool)} usable question(s); set it to at most {len(pool)} or remove it to use all.")
    if data.n_items is not None and data.n_items < len(pool):
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, zlib.crc32(b"items")]))
        chosen = sorted(pool[i] for i in rng.choice(len(pool), size=data.n_items, replace=False))
    else:
        chosen = pool
    no_answer = {m: int(sum(q not in answers[m] for q in chosen)) for m in models}
    skipped = dict(skipped)
    skipped["no answer for a chosen item"] = {m: n for m, n in no_answer.items() if n}
    return _Context(item_ids=tuple(chosen), questions=questions, answers=answers,
                    baseline=baseline_answers, models=models, skipped=skipped)


# ----------------------------------------------------------------------------------------
# judging helpers
# ----------------------------------------------------------------------------------------
def item_messages(item: Any, prompt: Any = None) -> list[dict[str, str]]:
    """The judge's chat messages for a :class:`~biasbound.neighbors.JudgeItem` (its game, rubric, answers);
    ``prompt`` (a :class:`~biasbound.judge.custom.JudgePrompt`) replaces the built-in templates."""
    from biasbound.judge.prompts import render_pairwise, render_single

    if prompt is not None:
        return prompt.render(**item_fields(item))
    if item.baseline is None:
        return render_single(item.question, item.answer, rubric=item.rubric)
    return render_pairwise(item.question, item.answer_a, item.answer_b, rubric=item.rubric)


def item_fields(item: Any) -> dict[str, Any]:
    """The fields a user template sees: question, the answers, reference, position (of the model's answer)."""
    pairwise = item.baseline is not None
    return {"question": item.question, "answer": item.answer,
            "answer_a": item.answer_a if pairwise else None, "answer_b": item.answer_b if pairwise else None,
            "reference": getattr(item, "reference", None),
            "position": ("B" if item.game == 1 else "A") if pairwise else None}


def score_of(result: Any, game: int) -> float:
    """The model's-view score on [0, 1] of a judge result; NaN unless ``status == "ok"``.

    Pairwise verdicts map as Arena-Hard's (game 1: ``B>>A`` = 1 ... ``A>>B`` = 0; game 2
    mirrored); a single rating r in [1, 10] maps to ``(r - 1) / 9``.
    """
    from biasbound.data.arena_hard import verdict_score

    if result.status != "ok" or result.verdict is None:
        return math.nan
    if game == 0:
        return (float(result.verdict) - 1.0) / 9.0
    return verdict_score(str(result.verdict), game)


def _request(item: Any, tag: str, prompt: Any = None) -> Any:
    from biasbound.judge.client import JudgeRequest

    key = f"{item.model}/{item.item_id}/{tag}/g{item.game}/r{item.rerun}"
    task = None if prompt is None else ("judge-pairwise" if item.baseline is not None else "judge-single")
    return JudgeRequest(key=key, messages=item_messages(item, prompt), rerun=item.rerun, task=task,
                        parser=None if prompt is None else prompt.parser,
                        metadata={"model": item.model, "item_id": item.item_id, "variant": item.variant,
                                  "game": item.game, "rerun": item.rerun, "tag": tag})


def _sub_seed(master: int, *labels: str) -> int:
    ss = np.random.SeedSequence([master, *(zlib.crc32(lab.encode("utf-8")) for lab in labels)])
    return int(ss.generate_state(1, dtype=np.uint64)[0] % np.uint64(2**63))


def _stage_stats(results: Sequence[Any]) -> dict[str, Any]:
    """Counts of one stage: ``requests = cache_hits + shared + calls``; ``attempts = calls + retries``."""
    status = Counter(r.status for r in results)
    called = [r for r in results if not r.from_cache]
    fresh = list({r.cache_key: r for r in called}.values())  # one per distinct call
    tokens_p = sum(r.prompt_tokens or 0 for r in fresh)
    tokens_c = sum(r.completion_tokens or 0 for r in fresh)
    costs = [r.cost for r in fresh if r.cost is not None]
    reasons = Counter(r.reason.split(" after ")[0] for r in results if r.status != "ok" and r.reason)
    return {
        "requests": len(results), "ok": status.get("ok", 0), "missing": status.get("missing", 0),
        "failed": status.get("failed", 0), "cache_hits": sum(r.from_cache for r in results),
        "shared": len(called) - len(fresh), "calls": len(fresh), "recalled": sum(bool(r.recalled) for r in fresh),
        "attempts": sum(r.attempts for r in fresh),
        "retries": sum(max(0, r.attempts - 1) for r in fresh), "prompt_tokens": tokens_p, "completion_tokens": tokens_c,
        "cost": float(sum(costs)) if costs else None, "failure_reasons": dict(reasons),
    }


def _merge_stats(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        for k, v in p.items():
            if k == "failure_reasons":
                agg = Counter(out.get(k, {}))
                agg.update(v)
                out[k] = dict(agg)
            elif k == "cost":
                out[k] = v if out.get(k) is None else (out[k] if v is None else out[k] + v)
            else:
                out[k] = out.get(k, 0) + v
    return out


# ----------------------------------------------------------------------------------------
# the run
# ----------------------------------------------------------------------------------------
@dataclass
class _RunState:
    """What the stages of one run accumulate: the judgment rows, per-stage counts, failures, draws."""

    judge_name: str
    several: bool  # a panel: stage names carry the judge's name
    current: str = ""  # the judge whose results ``record`` takes
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    perturbations: dict[str, list[tuple[str, int, Any]]] = field(default_factory=dict)
    gen_summaries: dict[str, Any] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    games_by_judge: dict[str, dict[str, dict[str, list[Any]]]] = field(default_factory=dict)
    counts_by_judge: dict[str, dict[str, Any]] = field(default_factory=dict)
    endpoint_attempts: dict[str, dict[str, int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judge_counts: dict[str, Any] = field(default_factory=dict)
    neighbor_items: list[tuple[Any, str]] = field(default_factory=list)
    prompt: Any = None  # the judge's own prompt and parser (a JudgePrompt), None for the built-in ones
    results: list[Any] = field(default_factory=list)  # the first judge's results (for the serving summary)
    sampled_draws: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: every distinct judge call behind this run's judgments: (prompt tokens, completion tokens, cost, read from the
    #: cache) — a call an earlier session of the run made and this one read back still cost what it cost
    used: dict[str, tuple[int, int, float | None, bool]] = field(default_factory=dict)
    batched: set[str] = field(default_factory=set)  # the calls of ``used`` a provider batch answered (batch prices)

    def count(self, results: Sequence[Any], stage: str) -> str:
        """Count ``results`` as the stage's requests and their calls as the run's (its totals and judging cost);
        returns the stage's name (the judge's own with several judges)."""
        if self.several:
            stage = f"{self.current}/{stage}"
        stages = self.stages
        stages[stage] = _merge_stats([stages[stage], _stage_stats(results)]) if stage in stages else _stage_stats(results)
        for r in results:
            key = r.cache_key if r.cache_key is not None else f"#{id(r)}"
            if not r.from_cache or key not in self.used:  # a call made now replaces the cached copy it re-made
                self.used[key] = (r.prompt_tokens or 0, r.completion_tokens or 0, r.cost, bool(r.from_cache))
                (self.batched.add if getattr(r, "batch", None) else self.batched.discard)(key)
        return stage

    def record(self, results: Sequence[Any], stage: str, tags: Sequence[tuple[Any, str]]) -> None:
        stage = self.count(results, stage)
        if self.current == self.judge_name:
            self.results.extend(results)
        for r, (item, variant) in zip(results, tags):
            self.rows.append({
                "judge": self.current, "model": item.model, "item_id": item.item_id, "variant": variant,
                "rerun": item.rerun, "game": item.game, "score": score_of(r, item.game),
                "verdict": None if r.verdict is None else str(r.verdict), "status": r.status, "reason": r.reason,
                "attempts": r.attempts, "from_cache": r.from_cache, "cache_key": r.cache_key, "stage": stage,
                "raw_reply": r.raw if r.status != "ok" else None,  # what the parser could not read
            })
            if r.status != "ok" and len(self.failures) < _MAX_LISTED_FAILURES:
                self.failures.append({"stage": stage, "key": r.key, "status": r.status, "reason": r.reason})


def _judge_items(cfg: RunConfig, ctx: _Context) -> dict[str, list[Any]]:
    """The canonical judge item of every (model, chosen item): game 1 (pairwise) or the single grading."""
    from biasbound.neighbors.base import JudgeItem
    from biasbound.rubric import Rubric, default_rubric

    rubric = (default_rubric(cfg.template) if cfg.rubric is None else Rubric.from_factors(cfg.rubric, kind=cfg.template))
    pairwise = cfg.template == "pairwise"
    game0 = 1 if pairwise else 0
    items: dict[str, list[Any]] = {}
    for model in ctx.models:
        items[model] = [
            JudgeItem(item_id=q, question=ctx.questions[q], answer=ctx.answers[model][q],
                      baseline=ctx.baseline[q] if pairwise and ctx.baseline is not None else None,
                      model=model, rubric=rubric, game=game0)
            for q in ctx.item_ids if q in ctx.answers[model]
        ]
    return items


def _original_items(ctx: _Context, items: Mapping[str, list[Any]], pairwise: bool) -> list[Any]:
    """The original context to judge: every item, in both games for pairwise (``pairwise`` false when swap
    is drawn: game 2 is then judged as a neighbour)."""
    orig_items: list[Any] = []
    for model in ctx.models:
        for it in items[model]:
            orig_items.append(it)
            if pairwise:
                orig_items.append(it.with_changes(game=2))
    return orig_items


def original_items(cfg: RunConfig) -> list[Any]:
    """Every original judge item of the run's data, in both orders for a pairwise template (what ``run --dry-run``
    renders); no judge is called."""
    ctx = load_items(cfg)
    return _original_items(ctx, _judge_items(cfg, ctx), cfg.template == "pairwise")


async def _preflight(cfg: RunConfig, state: _RunState, judge_session: Any, orig_items: Sequence[Any], *,
                     progress: bool) -> None:
    """A few calls before the budget is spent: print the parse rate and one raw reply, stop naming the cause
    when too few replies parse (the calls go through the cache: the originals' stage reuses them)."""
    from biasbound.judge.preflight import check_replies

    pf = cfg.preflight
    if pf is None or pf.calls == 0 or not orig_items:
        return
    reqs = [_request(it, "original", state.prompt) for it in orig_items[:pf.calls]]
    res = await judge_session.judge(reqs, progress=False, description="preflight", batch=False)  # live: a check first
    state.count(res, "preflight")  # its calls count in the run's totals and cost (the originals reuse them)
    report = check_replies(res, pf)
    state.notes.append(report.line())
    if progress:
        print(report.line(), file=sys.stderr)


async def _judge_originals(cfg: RunConfig, state: _RunState, judge_session: Any, orig_items: Sequence[Any], *,
                           pairwise: bool, progress: bool) -> None:
    """Stage 1: judge the original context (checking every endpoint of the run first when anything is uncached)."""
    from biasbound.judge.client import JudgeSession

    panel = cfg.panel
    gens = cfg.neighbors.generators
    reqs = [_request(it, "original", state.prompt) for it in orig_items]
    if judge_session.uncached(reqs):
        # something will be judged: every endpoint of the run answers one cheap request first, so a
        # dead rewriter or panel judge is named before any judging is paid for (a fully cached
        # re-run needs no endpoint and checks none)
        await judge_session.check_endpoint()
        others = list(panel[1:])
        if any(g in LLM_GENERATORS for g in gens) and not cfg.rewriter_is_judge and cfg.rewriter is not None:
            others.append(cfg.rewriter)
        for endpoint in others:
            async with JudgeSession(endpoint.judge_config(), cache=None) as probe:
                await probe.check_endpoint()
    await _preflight(cfg, state, judge_session, orig_items, progress=progress)
    res = await judge_session.judge(reqs, progress=progress, description="judging the original context")
    state.record(res, "original", [(it, "original") for it in orig_items])
    arena_games = state.games_by_judge[state.judge_name]
    for it, r in zip(orig_items, res):
        arena_games[it.model].setdefault(it.item_id, [None, None])[it.game - 1 if pairwise else 0] = r


async def _open_rewriter(cfg: RunConfig, state: _RunState, judge_session: Any, cache: Any, retry_failed: bool) -> Any:
    """The session that rewrites answers for paraphrase/agreeable (``None`` when no generator needs one)."""
    from biasbound.judge.client import JudgeSession

    if not any(g in LLM_GENERATORS for g in cfg.neighbors.generators):
        return None
    if cfg.rewriter_is_judge:
        state.notes.append("The judge endpoint also rewrote the answers for paraphrase/agreeable "
                           "('allow_judge_as_rewriter: true').")
        return judge_session
    if cfg.rewriter is None:  # the config schema refuses this; a RunConfig built by hand may not
        raise InputError(f"The key 'rewriter' of {cfg.path} must name an endpoint for paraphrase/agreeable, "
                         "or set 'allow_judge_as_rewriter: true'. Got none instead.")
    rewriter_session = JudgeSession(cfg.rewriter.judge_config(), cache=cache, retry_failed=retry_failed,
                                    retry_unparseable=cfg.retry_unparseable)
    await rewriter_session.__aenter__()
    return rewriter_session


async def _draw_neighbors(cfg: RunConfig, ctx: _Context, state: _RunState, items: Mapping[str, list[Any]],
                           rewriter_session: Any) -> None:
    """Stage 2: the neighbours (seeded, Hamming-1, one perturbation per item) into ``state.perturbations``,
    the applied ones into ``state.neighbour_items`` and the uniform draws into ``state.sampled_draws``."""
    from biasbound.neighbors.registry import make_generator, sample_indices
    from biasbound.neighbors.swap import SwapGenerator

    perturbations, gen_summaries, notes = state.perturbations, state.gen_summaries, state.notes
    neighbor_items, sampled_draws = state.neighbor_items, state.sampled_draws
    for g in cfg.neighbors.generators:
        opts = dict(cfg.neighbors.options.get(g, {}))
        gen_seed = _sub_seed(cfg.seed, "generator", g)
        if g == "swap":
            gen = SwapGenerator(seed=gen_seed)
            if not cfg.neighbors.swap_drawn:
                perturbations[g] = [(m, k, gen.perturb(it)) for m in ctx.models for k, it in enumerate(items[m])]
                gen_summaries[g] = {**gen.summary(), "m": "census (all items, both games judged)"}
                continue
        else:  # swap drawn (options.swap.drawn): game 2 of the drawn items only, like any drawn generator
            try:
                gen = make_generator(g, seed=gen_seed, **opts)
            except InputError as exc:
                raise InputError(f"The key 'neighbors.options.{g}' of {cfg.path} is not accepted: {exc}") from None
        drawn: list[tuple[str, int, Any]] = []
        for model in ctx.models:
            n = len(items[model])
            m = min(cfg.neighbors.m, n)
            if m < cfg.neighbors.m:
                notes.append(f"{g}: model {model!r} has {n} items, fewer than neighbors_per_generator="
                             f"{cfg.neighbors.m}; all {n} items were perturbed once (no repeats).")
            draw_seed = _sub_seed(cfg.seed, "sample", g, model)
            # the first m of a seeded draw of draw_m (= m unless sequential): itself a uniform draw of m
            idx, _ = sample_indices(n, min(max(cfg.neighbors.draw_m or m, m), n), draw_seed)
            idx = idx[:m]
            if m < n:  # a uniform draw without replacement by a recorded seed: certify's sample knowledge
                sampled_draws.setdefault(CERTIFY_NAMES[g], {"seed": int(cfg.seed), "per_model": {}})
                # the drawn item ids: certify counts a drawn item left without a row at the range bound
                sampled_draws[CERTIFY_NAMES[g]]["per_model"][model] = {
                    "seed": int(draw_seed), "m": m, "n": n,
                    "items": [str(items[model][int(i)].item_id) for i in idx]}
            idx = [int(i) for i in idx]
            if gen.requires_llm and rewriter_session is None:  # unreachable: opened above for LLM generators
                raise RuntimeError(f"no rewriter session for the {g!r} generator")
            if gen.requires_llm:
                gate = asyncio.Semaphore(cfg.rewriter.concurrency if cfg.rewriter else 8)

                async def one(k: int, _gen: Any = gen, _model: str = model, _gate: Any = gate) -> tuple[str, int, Any]:
                    async with _gate:
                        p = await _gen.perturb_async(items[_model][k], None, rewriter_session.complete)
                    return _model, k, p

                drawn += list(await asyncio.gather(*(one(k) for k in idx)))
            else:
                drawn += [(model, k, gen.perturb(items[model][k])) for k in idx]
        perturbations[g] = drawn
        gen_summaries[g] = {**gen.summary(), "m": cfg.neighbors.m}
        for _, _, p in drawn:
            if p.status == "applied":
                neighbor_items.append((p.item, g))


async def _judge_neighbors(state: _RunState, judge_session: Any, *, progress: bool) -> None:
    """Stage 3: judge the neighbours."""
    neighbor_items = state.neighbor_items
    reqs = [_request(it, g, state.prompt) for it, g in neighbor_items]
    res = await judge_session.judge(reqs, progress=progress, description="judging the neighbours")
    state.record(res, "neighbors", [(it, it.variant) for it, _ in neighbor_items])
    _drawn_swap_games(state.games_by_judge[state.judge_name], neighbor_items, res)


def _drawn_swap_games(games: dict[str, dict[str, list[Any]]], neighbor_items: Sequence[tuple[Any, str]],
                      results: Sequence[Any]) -> None:
    """Drawn swap neighbours are game 2 of their item: into the Arena-Hard judgment files."""
    for (it, g), r in zip(neighbor_items, results):
        if g == "swap":
            games[it.model].setdefault(it.item_id, [None, None])[1] = r


async def _judge_panel(cfg: RunConfig, ctx: _Context, state: _RunState, orig_items: Sequence[Any], cache: Any, *,
                       pairwise: bool, progress: bool, retry_failed: bool) -> None:
    """A panel: every further judge grades the same original context and the same neighbours."""
    from biasbound.judge.client import JudgeSession

    neighbor_items = state.neighbor_items
    for endpoint in cfg.panel[1:]:
        state.current = endpoint.name
        games: dict[str, dict[str, list[Any]]] = {m: {} for m in ctx.models}
        state.games_by_judge[endpoint.name] = games
        async with JudgeSession(endpoint.judge_config(), cache=cache, retry_failed=retry_failed,
                            retry_unparseable=cfg.retry_unparseable) as session:
            res = await session.judge([_request(it, "original", state.prompt) for it in orig_items], progress=progress,
                                      description=f"{endpoint.name}: judging the original context")
            state.record(res, "original", [(it, "original") for it in orig_items])
            for it, r in zip(orig_items, res):
                games[it.model].setdefault(it.item_id, [None, None])[it.game - 1 if pairwise else 0] = r
            res = await session.judge([_request(it, g, state.prompt) for it, g in neighbor_items], progress=progress,
                                      description=f"{endpoint.name}: judging the neighbours")
            state.record(res, "neighbors", [(it, it.variant) for it, _ in neighbor_items])
            _drawn_swap_games(games, neighbor_items, res)
            state.counts_by_judge[endpoint.name] = dict(session.counts)
            state.notes.extend(session.notes)
            state.endpoint_attempts[endpoint.name] = session.endpoint_attempts


async def _judge_all(cfg: RunConfig, ctx: _Context, state: _RunState, items: Mapping[str, list[Any]], cache: Any, *,
                     pairwise: bool, progress: bool, retry_failed: bool) -> None:
    """Stages 1-3 with the judge's session (and the rewriter's), then the panel's further judges."""
    from biasbound._progress import start_step
    from biasbound.judge.client import JudgeSession

    gens = cfg.neighbors.generators
    async with JudgeSession(cfg.judge.judge_config(), cache=cache, retry_failed=retry_failed,
                            retry_unparseable=cfg.retry_unparseable) as judge_session:
        # 1. the original context (both games for pairwise)
        orig_items = _original_items(ctx, items, pairwise and not cfg.neighbors.swap_drawn)
        await _judge_originals(cfg, state, judge_session, orig_items, pairwise=pairwise, progress=progress)

        # 2. neighbours (seeded, Hamming-1, one perturbation per item)
        rewriter_session = await _open_rewriter(cfg, state, judge_session, cache, retry_failed)
        generating = start_step(f"generating the neighbours ({', '.join(gens)})", enabled=progress)
        try:
            await _draw_neighbors(cfg, ctx, state, items, rewriter_session)
        finally:
            generating.stop()
            if rewriter_session is not None and rewriter_session is not judge_session:
                await rewriter_session.__aexit__(None, None, None)
                state.stages["rewrites"] = dict(rewriter_session.counts)
                state.endpoint_attempts[f"rewriter {cfg.rewriter.name}" if cfg.rewriter else "rewriter"] = \
                    rewriter_session.endpoint_attempts

        # 3. judge the neighbours
        await _judge_neighbors(state, judge_session, progress=progress)
        state.judge_counts = dict(judge_session.counts)
        state.notes.extend(judge_session.notes)  # batches that expired, failed or were cancelled
        state.counts_by_judge[state.judge_name] = state.judge_counts
        state.endpoint_attempts[state.judge_name] = judge_session.endpoint_attempts

    await _judge_panel(cfg, ctx, state, orig_items, cache, pairwise=pairwise, progress=progress, retry_failed=retry_failed)


def _judgment_table(cfg: RunConfig, state: _RunState, out: Path, outputs: dict[str, Path]) -> tuple[pd.DataFrame, Any]:
    """Stage 4: the judgment table (with the answers' gold labels as its ``human`` column when they have one) and the
    JudgmentSet certify reads (written as ``judgments.parquet`` by :func:`_write_judgments` once the run's usage
    is known)."""
    from biasbound.data.tables import from_frame

    frame = pd.DataFrame(state.rows)
    frame = frame.sort_values(["judge", "model", "item_id", "variant", "rerun", "game"], kind="stable").reset_index(drop=True)
    frame = _with_gold_labels(cfg, frame)
    columns = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]
    jset = from_frame(frame[columns + (["human"] if "human" in frame.columns else [])],
                      source="judgments.parquet", scale=(0.0, 1.0), judge=state.judge_name)
    return frame, jset


def _gold_labels(cfg: RunConfig) -> dict[tuple[str, str], float] | None:
    """The answer table's optional ``gold_label`` column per (model, item), checked (a label that is not a number:
    one sentence naming the table and line); None when the table has no such column. Read before any judge call,
    so that a bad label costs no judging, and again where the judgment table is made."""
    if cfg.data.table is None:
        return None
    from biasbound.data.tables import file_format, read_rows

    table, _ = read_rows(cfg.data.table, file_format(cfg.data.table), what="answer")
    if "gold_label" not in table.columns:
        return None
    gold: dict[tuple[str, str], float] = {}
    for line, (m, i, g) in enumerate(zip(table["model"], table["item_id"], table["gold_label"]), start=2):
        if pd.isna(g) or not str(g).strip():
            continue  # no label for this answer: the normal case
        try:
            gold[(str(m).strip(), str(i).strip())] = float(g)
        except (TypeError, ValueError):
            raise InputError(f"{cfg.data.table}:{line}: gold_label must be a number on the judge's score scale in the "
                             f"model's view (for pairwise judging 1 = the model's answer is the better one, 0 = the "
                             f"baseline's). Got {str(g)[:40]!r} instead.") from None
    return gold


def _with_gold_labels(cfg: RunConfig, frame: pd.DataFrame) -> pd.DataFrame:
    """Carry the answer table's optional ``gold_label`` column (per model and item, on the judge's score scale in
    the model's view, as the scores are) into the judgment table as its ``human`` column: certify reads it as the
    human labels (agreement on the judge card, human-anchored scores: :mod:`biasbound.human`); the frame is
    unchanged when there is none."""
    gold = None if frame.empty else _gold_labels(cfg)
    if gold is None:
        return frame
    frame = frame.copy()
    frame["human"] = [gold.get((m, i), float("nan")) for m, i in zip(frame["model"], frame["item_id"])]
    return frame


def _write_judgments(cfg: RunConfig, frame: pd.DataFrame, jset: Any, summary: dict[str, Any], out: Path,
                     outputs: dict[str, Path]) -> None:
    """``judgments.parquet``: every judgment, with the judging cost (``attrs["usage"]``: the run summary's
    ``judging_cost``, the judge card's cost row; a panel's stages are not split by judge) in the file's metadata, so that
    ``biasbound verify --judgments``
    re-reads the table exactly as certify got it."""
    if len(cfg.panel) == 1:
        usage = {str(cfg.panel[0].name): summary["judging_cost"]}
        frame.attrs["usage"] = usage
        jset.frame.attrs["usage"] = usage
    frame.to_parquet(out / "judgments.parquet", index=False)
    outputs["judgments"] = out / "judgments.parquet"


def _run_summary(cfg: RunConfig, ctx: _Context, state: _RunState, frame: pd.DataFrame,
                 cache_counts: Any, retry_failed: bool) -> dict[str, Any]:
    """Stage 5: the run summary (``run_summary.json`` once certify is done)."""
    panel = cfg.panel
    stages = state.stages
    neighbor_names = [CERTIFY_NAMES[g] for g in cfg.neighbors.generators]
    return {
        "config": cfg.to_dict(), "judge": state.judge_name, "template": cfg.template, "seed": cfg.seed,
        "items": len(ctx.item_ids), "models": list(ctx.models), "skipped_inputs": ctx.skipped,
        "stages": stages, "totals": _merge_stats([v for k, v in stages.items() if k != "rewrites"]),
        "session_counts": state.judge_counts, "cache": cache_counts, "retry_failed": bool(retry_failed),
        "cache_identity": {e.name: e.cache_identity for e in panel}, "endpoint_attempts": state.endpoint_attempts,
        "judges": [e.name for e in panel], "session_counts_by_judge": state.counts_by_judge,
        "missing_judgments": int(frame["score"].isna().sum()),
        "missing_by_status": {k: int(v) for k, v in frame.loc[frame["score"].isna(), "status"].value_counts().items()},
        "failures": state.failures, "generators": state.gen_summaries,
        "perturbation_status": {g: dict(Counter(p.status for _, _, p in ps)) for g, ps in state.perturbations.items()},
        "certify_neighbors": neighbor_names, "notes": state.notes, "judging_cost": _judging_cost(state),
        "serving": _serving(cfg, state),
    }


def _serving(cfg: RunConfig, state: _RunState) -> dict[str, Any]:
    """Parse rate, server latency apart from queue time, tokens per second, sustained concurrency (first judge)."""
    from biasbound.judge.serving import serving_summary

    out = serving_summary(state.results, cfg.judge.concurrency)
    if "warning" in out and out["warning"] not in state.notes:
        state.notes.append(out["warning"])
    return out


def _judging_cost(state: _RunState) -> dict[str, Any]:
    """What the judgments of this run cost: every distinct judge call behind them, whichever session of the run made
    it (``totals`` counts this session's calls only; a resumed or repeated run reads earlier calls from the cache,
    with the tokens and cost recorded when they were made)."""
    used = state.used.values()
    costs = [c for _, _, c, _ in used if c is not None]
    return {"calls": len(used), "prompt_tokens": sum(p for p, _, _, _ in used),
            # a sum over some of the calls only (batch calls without a stated batch price) is no cost: unknown
            "completion_tokens": sum(c for _, c, _, _ in used),
            "cost": float(sum(costs)) if costs and len(costs) == len(used) else None,
            "from_earlier_sessions": sum(cached for _, _, _, cached in used),
            **({"batch_calls": len(state.batched)} if state.batched else {})}


def _refuse_dead_judges(cfg: RunConfig, frame: pd.DataFrame, summary: dict[str, Any], out: Path, t_start: float) -> None:
    """A judge none of whose calls gave a verdict: the endpoint is the problem, say so (summary written first)."""
    panel = cfg.panel
    for endpoint in panel:
        mine = frame[frame["judge"] == endpoint.name] if len(panel) > 1 else frame
        if len(mine) and mine["score"].isna().all():
            reasons = Counter(str(r) for r in mine["reason"].dropna())
            why = f" (most often: {reasons.most_common(1)[0][0]})" if reasons else ""
            summary["certify"] = {"status": "failed", "reason": "every judge call failed"}
            summary["seconds"] = round(time.monotonic() - t_start, 3)
            _write_json(out / "run_summary.json", summary)
            if reasons and all("unparseable repl" in r for r in reasons):
                raise JudgeError(f"The judge {endpoint.model!r} at {endpoint.base_url} answered all {len(mine)} calls, but no "
                                 f"reply held a verdict the parser accepts{why}; nothing to certify. Give the judge's own "
                                 f"prompt and parser under 'prompt' (the raw replies are in the 'raw_reply' column of "
                                 f"{out / 'judgments.parquet'}).")
            raise JudgeError(f"Every one of the {len(mine)} calls to the judge {endpoint.model!r} at {endpoint.base_url} "
                             f"failed{why}; nothing to certify. Check that endpoint (its URL, model and key); the run's "
                             f"files are in {out} and a re-run reuses every call that succeeded.")


def _certify_run(cfg: RunConfig, state: _RunState, jset: Any, summary: dict[str, Any], outputs: dict[str, Path],
                 out: Path, t_start: float, *, pairwise: bool, progress: bool, schedule: dict[str, Any] | None = None) -> Any:
    """Stage 6: certify the judgments (the summary is written whether it succeeds or not); a sequential
    look's ``schedule`` goes into the certificates' scope."""
    from biasbound._exceptions import BiasboundError
    from biasbound.pipeline import certify

    c = cfg.calibration
    certification = None
    try:
        scheduled: dict[str, Any] = {"schedule": schedule} if schedule is not None else {}
        if cfg.human_labels is not None:
            scheduled["human_labels"] = str(cfg.human_labels)
        scheduled["judge_prompt"] = _prompt_record(cfg)  # scope.judge_prompt: which prompt and parser made the verdicts
        certification = certify(  # every certify parameter of the config (biasbound.parameters.CERTIFY)
            jset, **c.certify_kwargs(), neighbors=summary["certify_neighbors"], seed=cfg.seed, out=out,
            progress=progress, baseline=cfg.data.baseline if pairwise else None, sampled=state.sampled_draws or None,
            **scheduled,
        )
        outputs.update(certification.outputs)
        summary["certify"] = {"status": "ok"}
    except BiasboundError as exc:
        summary["certify"] = {"status": "failed", "reason": str(exc)}
        partial = getattr(exc, "partial_result", None)
        if partial is not None:
            outputs.update(partial.outputs)
        summary["seconds"] = round(time.monotonic() - t_start, 3)
        _write_json(out / "run_summary.json", summary)
        raise
    return certification


def _prompt_record(cfg: RunConfig) -> dict[str, Any]:
    """The judge's prompt and parser as the certificates' scope records them (the config's own, or the built-in)."""
    from biasbound.judge.custom import builtin_prompt_record

    if cfg.prompt is not None:
        return dict(cfg.prompt.scope())
    return builtin_prompt_record(cfg.template, cfg.rubric)


async def run_async(config: RunConfig | str | Path, *, progress: bool = True, retry_failed: bool = True,
                    sign_key: str | Path | None = None) -> RunResult:
    """Run the whole pipeline (see the module docstring); the async form of :func:`run`."""
    from biasbound.pipeline._staging import seal_outputs

    cfg = config if isinstance(config, RunConfig) else load_config(config)
    private_key = None
    if sign_key is not None:  # read before any judge call: a bad key is refused before anything is spent
        from biasbound._integrity import load_private_key

        private_key = load_private_key(sign_key, where="run")
    if cfg.neighbors.looks and cfg.neighbors.draw_m is None:
        result = await _run_sequential(cfg, progress=progress, retry_failed=retry_failed)
    else:
        result = await _run_once(cfg, progress=progress, retry_failed=retry_failed)
    seal_outputs(cfg.output, result.outputs.values(), private_key)  # every file the run wrote, in the manifest
    return result


async def _run_once(cfg: RunConfig, *, progress: bool, retry_failed: bool,
                    schedule: dict[str, Any] | None = None) -> RunResult:
    """One pass of the stages; ``schedule``: a sequential look's record, completed with this look's judge
    requests and calls and written into the certificates' scope (``scope.sequential``)."""
    from biasbound.judge.cache import JudgeCache

    t_start = time.monotonic()
    out = cfg.output
    out.mkdir(parents=True, exist_ok=True)
    ctx = load_items(cfg)
    _gold_labels(cfg)  # a bad gold label stops the run before any judge call
    judge_name = cfg.judge.name
    pairwise = cfg.template == "pairwise"
    game0 = 1 if pairwise else 0
    items = _judge_items(cfg, ctx)
    looks = cfg.neighbors.looks
    most = max((len(v) for v in items.values()), default=0)
    if looks and cfg.neighbors.drawn and looks[-1] > most:  # a look beyond the items judges nothing new and spends β
        raise InputError(f"The key 'neighbors.sequential.looks' of {cfg.path} ends at {looks[-1]}, but each model holds "
                         f"at most {most} items: a look beyond the items judges nothing new and still spends its share "
                         f"of beta; end the looks at {most} or below (e.g. {[x for x in looks if x < most] + [most]}).")
    state = _RunState(judge_name=judge_name, several=len(cfg.panel) > 1, current=judge_name, prompt=cfg.prompt)
    state.games_by_judge[judge_name] = {m: {} for m in ctx.models}
    cache = JudgeCache(out / _CACHE_NAME)
    try:
        await _judge_all(cfg, ctx, state, items, cache, pairwise=pairwise, progress=progress, retry_failed=retry_failed)
    finally:
        cache_counts = cache.counts()
        cache.close()

    # 4. the judgment table
    outputs: dict[str, Path] = {}
    frame, jset = _judgment_table(cfg, state, out, outputs)

    # 5. Arena-Hard judgment files, neighbours, summary
    for name, games in state.games_by_judge.items():
        outputs.update(_write_arena_hard(out, name, games, pairwise, cfg, several=len(cfg.panel) > 1))
    outputs["neighbors"] = _write_neighbors(out / "neighbors.jsonl", state.perturbations, frame, game0)
    summary = _run_summary(cfg, ctx, state, frame, cache_counts, retry_failed)
    _write_judgments(cfg, frame, jset, summary, out, outputs)

    # 6. certify
    _refuse_dead_judges(cfg, frame, summary, out, t_start)
    if schedule is not None:
        schedule = _this_look(schedule, summary)
        summary["sequential_look"] = schedule
    certification = _certify_run(cfg, state, jset, summary, outputs, out, t_start, pairwise=pairwise, progress=progress,
                                 schedule=schedule)
    summary["seconds"] = round(time.monotonic() - t_start, 3)
    outputs["run_summary"] = _write_json(out / "run_summary.json", summary)
    return RunResult(config=cfg, judgments=jset, certification=certification, summary=summary, outputs=outputs,
                     perturbations=state.perturbations)


def _neighbor_judgments(summary: Mapping[str, Any]) -> int:
    """The neighbour judge requests of one pass (a sequential look judges a prefix of the next look's draw)."""
    stages = summary.get("stages", {})
    return int(sum(v.get("requests", 0) for k, v in stages.items() if k == "neighbors" or k.endswith("/neighbors")))


def _this_look(schedule: dict[str, Any], summary: Mapping[str, Any]) -> dict[str, Any]:
    """A look's schedule record completed with what this look judged and what the run has spent so far."""
    t = summary.get("totals", {})
    calls = int(t.get("calls", 0))
    spent = int(schedule.get("calls_before", 0)) + calls
    out = {k: v for k, v in schedule.items() if k != "calls_before"}
    out.update({"neighbour_judgments": _neighbor_judgments(summary), "calls_this_look": calls, "calls_spent": spent})
    return out


async def _run_sequential(cfg: RunConfig, *, progress: bool, retry_failed: bool) -> RunResult:
    """Sequential judging: look k judges the first ``looks[k]`` neighbours of each model's seeded draw of
    ``looks[-1]`` (earlier looks' calls come from the cache) and certifies at β/K (K looks declared in
    advance: on the union of the K looks' events, probability >= 1 - β, whichever look the rule stops at;
    docs/proofs/sequential.md); the run stops at the first look that meets every stated target
    (:func:`biasbound.planning.targets_met`) or whose α gains less than ``min_gain`` over the previous look's
    (:func:`biasbound.planning.sequential_stops`), or at the last (the budget). The
    stopped look's outputs stay; its certificates record the schedule (``scope.sequential``: the rule, the
    looks declared, β per look, the looks taken with their α and calls, the calls spent) and
    ``run_summary.json`` records every look."""
    import dataclasses

    from biasbound.planning import SEQUENTIAL_RULE, sequential_stops, targets_met

    looks = cfg.neighbors.looks
    beta = cfg.calibration.beta
    if beta is None:  # parse_config refuses this; a RunConfig built by hand may not
        raise InputError(f"The key 'calibration.beta' of {cfg.path} must be a number with 'neighbors.sequential'.")
    beta_look = beta / len(looks)
    drawn = cfg.neighbors.drawn
    declared = {"rule": SEQUENTIAL_RULE, "looks": list(looks), "generators": drawn, "beta": beta,
                "beta_per_look": beta_look, "min_gain": cfg.neighbors.min_gain,
                **({"target": dict(cfg.neighbors.target)} if cfg.neighbors.target else {}),
                "budget": {"neighbours_per_model": looks[-1], "generators": len(drawn)}}
    record: list[dict[str, Any]] = []
    result: RunResult | None = None
    stopped, stopped_by = None, None
    previous = None
    spent = 0
    for k, m in enumerate(looks):
        cfg_k = dataclasses.replace(
            cfg, neighbors=dataclasses.replace(cfg.neighbors, m=m, draw_m=looks[-1]),
            calibration=dataclasses.replace(cfg.calibration, beta=beta_look))
        last = k == len(looks) - 1
        schedule = {**declared, "look": k + 1, "m": m, "looks_before": [dict(r) for r in record], "calls_before": spent}
        try:
            result = await _run_once(cfg_k, progress=progress, retry_failed=retry_failed, schedule=schedule)
        except InfeasibleCertificateError as exc:  # too few neighbours yet: the next look may certify
            if last:
                raise
            summary = json.loads((cfg.output / "run_summary.json").read_text(encoding="utf-8"))
            look = summary.get("sequential_look") or {}
            spent = int(look.get("calls_spent", spent))
            record.append({"look": k + 1, "m": m, "alpha": None, "reason": str(exc)[:300],
                           "neighbour_judgments": look.get("neighbour_judgments"), "calls": look.get("calls_this_look"),
                           "gain": None})
            continue
        alpha = float(result.certification.judges[result.config.judge.name].calibration.alpha)
        t = result.summary["totals"]
        look = result.summary["sequential_look"]
        spent = int(look["calls_spent"])
        record.append({"look": k + 1, "m": m, "alpha": alpha, "calls": t.get("calls", 0), "attempts": t.get("attempts", 0),
                       "cost": t.get("cost"), "neighbour_judgments": look["neighbour_judgments"],
                       "gain": None if previous is None else alpha / previous - 1.0})
        card = (result.certification.judge_card.get("judges") or {}).get(result.config.judge.name)
        if targets_met(cfg.neighbors.target, alpha, card, [CERTIFY_NAMES[g] for g in drawn]):
            stopped, stopped_by = k + 1, "target"
            break
        if sequential_stops(previous, alpha, cfg.neighbors.min_gain):
            stopped, stopped_by = k + 1, "min_gain"
            break
        previous = alpha
    if result is None:  # unreachable: the last look raises instead of continuing
        raise RuntimeError("sequential run ended without a look")
    seq = {**declared, "stopped_at_look": stopped or record[-1]["look"],
           "stopped_by": stopped_by if stopped else "budget (the last look)", "m": record[-1]["m"],
           "neighbour_judgments": record[-1]["neighbour_judgments"], "calls_spent": spent, "per_look": record}
    result.summary["sequential"] = seq
    result.summary["notes"].append(f"Sequential judging: looks {list(looks)} declared in advance, β = {beta:g} split "
                                   f"over them (β/K = {beta_look:g} in the certificate); stopped at m = {record[-1]['m']}.")
    result.outputs["run_summary"] = _write_json(cfg.output / "run_summary.json", result.summary)
    return result


def run(config: RunConfig | str | Path, *, progress: bool = True, retry_failed: bool = True,
        sign_key: str | Path | None = None) -> RunResult:
    """Run ``biasbound run``: judge → perturb → judge neighbours → certify → outputs.

    Parameters
    ----------
    config:
        A :class:`~biasbound.config.RunConfig` or the path of a YAML config file.
    progress:
        Show progress bars on stderr.
    retry_failed:
        Call again the judge and rewriter calls that an earlier run left ``failed`` or ``missing`` in
        the cache (a server that was down, faults past the retry budget); ``False`` keeps them as they
        are (still counted missing, never scored).
    sign_key:
        An Ed25519 private key (``biasbound keygen``): the outputs manifest, which lists every file the run
        wrote into its folder (the judgments, neighbours and run summary with certify's outputs), is signed.

    Returns
    -------
    RunResult

    Raises
    ------
    DataFormatError
        A config or input file problem (one sentence naming the file and the key or line).
    JudgeError
        The judge endpoint refused the requests (bad key, model or URL); finished calls stay cached.
    InfeasibleCertificateError
        ``certify`` could not certify (the outputs of the judging steps are written first).
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(run_async(config, progress=progress, retry_failed=retry_failed, sign_key=sign_key))
    raise JudgeError("run cannot be called inside a running event loop; use 'await run_async(...)' instead.")


# ----------------------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------------------
def _write_json(path: Path, obj: Any) -> Path:
    from biasbound.pipeline import jsonable

    path.write_text(json.dumps(jsonable(obj), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def _safe(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "x"


def _write_arena_hard(out: Path, judge: str, games: dict[str, dict[str, list[Any]]], pairwise: bool,
                      cfg: RunConfig, *, several: bool = False) -> dict[str, Path]:
    """``model_judgment/<judge>/<model>.jsonl`` in Arena-Hard's format (pairwise only)."""
    from biasbound.judge.parsing import to_arena_hard_record

    if not pairwise:
        return {}
    folder = out / "model_judgment" / _safe(judge)
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for model, per_item in games.items():
        path = folder / f"{_safe(model)}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            for qid in sorted(per_item):
                rec = to_arena_hard_record(question_id=qid, model=model, judge=judge, baseline=cfg.data.baseline,
                                           games=[_NOT_DRAWN if g is None else g for g in per_item[qid]])
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        written[f"arena_hard:{judge}:{model}" if several else f"arena_hard:{model}"] = path
    return written


def _write_neighbors(path: Path, perturbations: dict[str, list[tuple[str, int, Any]]], frame: pd.DataFrame,
                     game0: int) -> Path:
    """One JSON line per perturbation: what changed, generator details, the judged scores.

    ``original_score``/``neighbor_score`` are the first judge's; with a panel, ``by_judge`` holds
    every judge's ``{original_score, neighbor_score, judgment_status}``.
    """
    judges = list(dict.fromkeys(frame["judge"].tolist())) if len(frame) else []
    canon_score: dict[str, dict[tuple[str, str], float]] = {}
    lookup: dict[str, dict[tuple[Any, ...], tuple[float, str]]] = {}
    for j in judges:
        fj = frame[frame["judge"] == j]
        canon = fj[(fj["variant"] == "original") & (fj["rerun"] == 0) & (fj["game"] == game0)]
        canon_score[j] = dict(zip(zip(canon["model"], canon["item_id"]), canon["score"]))
        lookup[j] = {(r.model, r.item_id, r.variant, r.rerun, r.game): (r.score, r.status) for r in fj.itertuples(index=False)}

    def scores(j: str, model: str, it: Any, applied: bool) -> dict[str, Any]:
        judged = lookup[j].get((model, it.item_id, it.variant, it.rerun, it.game)) if applied else None
        orig = canon_score[j].get((model, it.item_id), math.nan)
        return {"judged": judged is not None, "judgment_status": None if judged is None else judged[1],
                "original_score": None if orig != orig else float(orig),
                "neighbor_score": None if judged is None or judged[0] != judged[0] else float(judged[0])}

    with open(path, "w", encoding="utf-8") as fh:
        for g, drawn in perturbations.items():
            for draw, (model, k, p) in enumerate(drawn):
                rec = p.to_record()
                it = p.item
                applied = p.status == "applied"
                rec.update({"model": model, "item_index": k, "draw": draw, "generator": g})
                if judges:
                    rec.update(scores(judges[0], model, it, applied))
                if len(judges) > 1:
                    rec["by_judge"] = {j: scores(j, model, it, applied) for j in judges}
                rec["rubric"] = it.rubric.to_dict() if g == "schematic" else None
                fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    return path

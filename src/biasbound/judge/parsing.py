"""Verdict parsing for judge replies, and export to Arena-Hard-Auto judgment records.

Rules (documented contract, tested in ``tests/judge/test_judge_parsing.py``):

* Pairwise labels are ``A>>B, A>B, A=B, B>A, B>>A`` inside ``[[...]]`` (spaces inside the
  brackets are ignored). Aliases are mapped to these five: ``A<<B -> B>>A``, ``A<B -> B>A``,
  ``B<<A -> A>>B``, ``B<A -> A>B``, ``B=A -> A=B``.
* A *factor line* is a line whose label (before the colon, markdown ``*``/``_``/``#`` stripped)
  is a rubric factor name, e.g. ``**Correctness**: [[A>B]]`` or ``Helpfulness: 7``.
* The *overall* pairwise verdict is every ``[[label]]`` outside factor lines; the overall
  single rating is every ``[[number]]`` outside factor lines. Like Arena-Hard-Auto's
  ``get_score`` we take the **unique** value: one distinct value -> ok; none -> missing
  (reason ``"no verdict found"``); several distinct values -> missing (reason
  ``"ambiguous: ..."``). Repeating the same verdict is fine. An ambiguous factor is ``None``.
* Nothing is ever imputed: a missing verdict is ``None`` with the raw text kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from biasbound._exceptions import InputError
from biasbound.judge.prompts import PAIRWISE_FACTORS, SINGLE_FACTORS

__all__ = [
    "PAIRWISE_VERDICTS",
    "ParsedReply",
    "flip_verdict",
    "normalize_verdict",
    "parse_pairwise",
    "parse_reply",
    "parse_rewrite",
    "parse_single",
    "rubric_factors",
    "task_of",
    "to_arena_hard_record",
]

PAIRWISE_VERDICTS: tuple[str, ...] = ("A>>B", "A>B", "A=B", "B>A", "B>>A")
_ALIASES: dict[str, str] = {
    "A>>B": "A>>B", "A>B": "A>B", "A=B": "A=B", "B>A": "B>A", "B>>A": "B>>A",
    "A<<B": "B>>A", "A<B": "B>A", "B<<A": "A>>B", "B<A": "A>B", "B=A": "A=B",
}
_FLIP = {"A>>B": "B>>A", "A>B": "B>A", "A=B": "A=B", "B>A": "A>B", "B>>A": "A>>B"}

TASKS: tuple[str, ...] = ("judge-pairwise", "judge-single", "paraphrase", "insert-error")

_BRACKET_RE = re.compile(r"\[\[([^\[\]\n]{1,20})\]\]")
_LABEL_RE = re.compile(r"^[\s>*_#`-]*([A-Za-z][A-Za-z0-9 _-]*?)[\s*_`]*:(.*)$")
_NUMBER_RE = re.compile(r"^[\s*_`]*(-?\d+(?:\.\d+)?)(?:\s*/\s*10)?\b")
_TASK_RE = re.compile(r"^\s*biasbound-task:\s*([a-z-]+)\s*$")


def normalize_verdict(label: str) -> str | None:
    """Map a pairwise label (or an alias such as ``A<<B``) to one of :data:`PAIRWISE_VERDICTS`.

    Returns ``None`` when ``label`` is not a verdict.
    """
    return _ALIASES.get(re.sub(r"\s+", "", label).upper())


def flip_verdict(verdict: str) -> str:
    """Return the verdict seen from the other position (``A>B`` <-> ``B>A``)."""
    norm = normalize_verdict(verdict)
    if norm is None:
        raise InputError(f"The 'verdict' parameter of flip_verdict must be one of {list(PAIRWISE_VERDICTS)}. Got {verdict!r} instead.")
    return _FLIP[norm]


@dataclass(frozen=True)
class ParsedReply:
    """What a parser extracted from one reply.

    Attributes
    ----------
    task:
        The protocol task the reply answers.
    status:
        ``"ok"`` when the main value was found, else ``"missing"``.
    value:
        Pairwise: the overall verdict (``"A>B"``); single: the rating (float in [1, 10]);
        paraphrase/insert-error: the rewritten text. ``None`` when missing.
    factors:
        Factor name -> verdict (pairwise) or score (single); ``None`` for a missing or
        ambiguous factor. Empty for rewrite tasks.
    extra:
        Rewrite tasks: ``{"inserted": description}`` for insert-error.
    reason:
        Why the value is missing (``None`` when ok); factor problems are listed too.
    raw:
        The reply text, always kept.
    """

    task: str
    status: str
    value: Any
    factors: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"task": self.task, "status": self.status, "value": self.value, "factors": dict(self.factors),
                "extra": dict(self.extra), "reason": self.reason, "raw": self.raw}


def _check_reply(text: object, where: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"The 'text' parameter of {where} must be a str. Got {type(text).__name__} instead.")
    return text


def _split_factor_lines(text: str, factors: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Return (factor -> list of the text after the colon on its lines, other lines)."""
    wanted = {f.lower().replace("_", " "): f for f in factors}
    found: dict[str, list[str]] = {}
    others: list[str] = []
    for line in text.splitlines():
        m = _LABEL_RE.match(line)
        if m:
            label = re.sub(r"\s+", " ", m.group(1).strip().lower().replace("_", " "))
            if label in wanted:
                found.setdefault(wanted[label], []).append(m.group(2))
                continue
        others.append(line)
    return found, others


def _unique(values: list[Any], what: str) -> tuple[Any, str | None]:
    distinct = list(dict.fromkeys(values))
    if not distinct:
        return None, f"no {what} found"
    if len(distinct) > 1:
        return None, f"ambiguous: conflicting {what}s {', '.join(str(v) for v in distinct)}"
    return distinct[0], None


def parse_pairwise(text: str, *, factors: Sequence[str] = PAIRWISE_FACTORS) -> ParsedReply:
    """Extract the overall verdict and the per-factor verdicts from a pairwise reply.

    Parameters
    ----------
    text:
        The judge's reply.
    factors:
        Factor names to look for (the rubric's names; default the five pairwise factors).

    Returns
    -------
    ParsedReply
        ``value`` is one of :data:`PAIRWISE_VERDICTS` or ``None`` (status ``"missing"``,
        with ``reason`` ``"no verdict found"`` or ``"ambiguous: ..."``).
    """
    text = _check_reply(text, "parse_pairwise")
    by_factor, others = _split_factor_lines(text, factors)
    factor_values: dict[str, Any] = {}
    notes: list[str] = []
    for name in factors:
        labels = [normalize_verdict(tok) for rest in by_factor.get(name, []) for tok in _BRACKET_RE.findall(rest)]
        value, why = _unique([v for v in labels if v is not None], "verdict")
        factor_values[name] = value
        if why is not None:
            notes.append(f"{name}: {why}")
    overall = [normalize_verdict(tok) for line in others for tok in _BRACKET_RE.findall(line)]
    value, reason = _unique([v for v in overall if v is not None], "verdict")
    status = "ok" if value is not None else "missing"
    return ParsedReply("judge-pairwise", status, value, factor_values, {}, _join_reason(reason, notes), text)


def _rating(token: str) -> float | None:
    try:
        v = float(token)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parse_single(text: str, *, factors: Sequence[str] = SINGLE_FACTORS) -> ParsedReply:
    """Extract the 1-10 rating (``Rating: [[7]]``) and factor scores (``Helpfulness: 7``).

    A rating outside [1, 10] is missing with reason ``"rating X outside [1, 10]"``; a factor
    score outside [1, 10] is ``None``.
    """
    text = _check_reply(text, "parse_single")
    by_factor, others = _split_factor_lines(text, factors)
    factor_values: dict[str, Any] = {}
    notes: list[str] = []
    for name in factors:
        scores = []
        for rest in by_factor.get(name, []):
            m = _BRACKET_RE.search(rest)
            token = m.group(1) if m else (n.group(1) if (n := _NUMBER_RE.match(rest)) else "")
            v = _rating(token.strip())
            if v is not None:
                scores.append(v)
        value, why = _unique(scores, "score")
        if value is not None and not 1.0 <= value <= 10.0:
            value, why = None, f"score {value:g} outside [1, 10]"
        factor_values[name] = value
        if why is not None:
            notes.append(f"{name}: {why}")
    ratings = [_rating(tok.strip()) for line in others for tok in _BRACKET_RE.findall(line)]
    value, reason = _unique([v for v in ratings if v is not None], "rating")
    if value is not None and not 1.0 <= value <= 10.0:
        value, reason = None, f"rating {value:g} outside [1, 10]"
    status = "ok" if value is not None else "missing"
    return ParsedReply("judge-single", status, value, factor_values, {}, _join_reason(reason, notes), text)


def _between(text: str, start: str, end: str) -> list[str]:
    pattern = re.compile(rf"^{re.escape(start)}[ \t]*\n(.*?)\n?^{re.escape(end)}[ \t]*$", re.M | re.S)
    return pattern.findall(text)


def parse_rewrite(text: str, *, task: str = "paraphrase") -> ParsedReply:
    """Extract the rewritten text of a ``paraphrase`` or ``insert-error`` reply.

    The text sits between a line ``<<<RESPONSE`` and a line ``RESPONSE>>>``; insert-error
    replies also carry a one-line description between ``<<<INSERTED`` and ``INSERTED>>>``.
    Missing or repeated blocks give status ``"missing"``.
    """
    text = _check_reply(text, "parse_rewrite")
    if task not in ("paraphrase", "insert-error"):
        raise InputError(f"The 'task' parameter of parse_rewrite must be one of 'paraphrase', 'insert-error'. Got {task!r} instead.")
    blocks = _between(text, "<<<RESPONSE", "RESPONSE>>>")
    value, reason = _unique(blocks, "RESPONSE block")
    extra: dict[str, Any] = {}
    if task == "insert-error":
        inserted = [b.strip() for b in _between(text, "<<<INSERTED", "INSERTED>>>")]
        desc, why = _unique(inserted, "INSERTED block")
        extra["inserted"] = desc
        if why is not None:
            value, reason = None, _join_reason(reason, [why])
    status = "ok" if value is not None else "missing"
    return ParsedReply(task, status, value, {}, extra, reason, text)


def _join_reason(reason: str | None, notes: list[str]) -> str | None:
    parts = ([reason] if reason else []) + notes
    return "; ".join(parts) if parts else None


def task_of(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """Return the task named on the first line of the system message, or ``None``."""
    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            first = message["content"].split("\n", 1)[0]
            m = _TASK_RE.match(first)
            return m.group(1) if m and m.group(1) in TASKS else None
    return None


def rubric_factors(messages: Sequence[Mapping[str, Any]]) -> tuple[str, ...] | None:
    """Factor names listed (``Factor k - Title: ...``) in the system message, in order; ``None`` if none."""
    for message in messages:
        if message.get("role") == "system" and isinstance(message.get("content"), str):
            names = re.findall(r"^Factor\s+\d+\s+-\s+([A-Za-z][A-Za-z0-9 ]*?)\s*:", message["content"], re.M)
            return tuple(n.strip().lower().replace(" ", "_") for n in names) or None
    return None


def parse_reply(text: str, task: str, *, factors: Sequence[str] | None = None) -> ParsedReply:
    """Dispatch to the parser for ``task`` (one of the four protocol tasks)."""
    if task == "judge-pairwise":
        return parse_pairwise(text, factors=PAIRWISE_FACTORS if factors is None else factors)
    if task == "judge-single":
        return parse_single(text, factors=SINGLE_FACTORS if factors is None else factors)
    if task in ("paraphrase", "insert-error"):
        return parse_rewrite(text, task=task)
    raise InputError(f"The 'task' parameter of parse_reply must be one of {', '.join(map(repr, TASKS))}. Got {task!r} instead.")


def _game_field(game: Any, name: str) -> Any:
    return game.get(name) if isinstance(game, Mapping) else getattr(game, name)


def to_arena_hard_record(
    *,
    question_id: str,
    model: str,
    judge: str,
    games: Sequence[Any],
    baseline: str | None = None,
    category: str | None = None,
) -> dict[str, Any]:
    """Build one Arena-Hard-Auto judgment record (a line of ``model_judgment/<judge>/<model>.jsonl``).

    Parameters
    ----------
    question_id:
        The question id (written as both ``question_id`` (v0.1 readers) and ``uid`` (v2 readers)).
    model, judge:
        The judged model and the judge's name.
    games:
        Two games in Arena-Hard order (game 1: baseline is A; game 2: model is A). Each is a
        :class:`~biasbound.judge.client.JudgeResult` or a mapping with ``verdict`` (or
        ``score``), ``raw`` (or ``judgment``) and ``messages`` (or ``user_prompt``).
    baseline, category:
        Optional extra fields read by Arena-Hard-Auto v2 (``baseline``, ``category``).

    Returns
    -------
    dict
        ``{question_id, uid, model, judge, [baseline], [category], games: [{score,
        judgment: {answer}, user_prompt, prompt, status, reason}, ...]}``; ``score`` is the
        overall verdict label or ``None`` when missing/failed (Arena-Hard drops such rows as
        "null judgments").
    """
    if len(games) != 2:
        raise InputError(f"The 'games' parameter of to_arena_hard_record must hold exactly 2 games. Got {len(games)} instead.")
    out_games = []
    for game in games:
        if isinstance(game, Mapping):
            score = game.get("verdict", game.get("score"))
            raw = game.get("raw", game.get("judgment"))
            messages = game.get("messages")
            user_prompt = game.get("user_prompt")
            status = game.get("status", "ok" if score is not None else "missing")
            reason = game.get("reason")
        else:
            score = _game_field(game, "verdict")
            raw = _game_field(game, "raw")
            messages = getattr(game, "messages", None)
            user_prompt = None
            status = _game_field(game, "status")
            reason = _game_field(game, "reason")
        if isinstance(raw, Mapping):
            raw = raw.get("answer")
        if score is not None:
            norm = normalize_verdict(str(score))
            if norm is None:
                raise InputError(f"The 'games' parameter of to_arena_hard_record holds an unknown verdict {score!r}; "
                                 f"allowed: {list(PAIRWISE_VERDICTS)}.")
            score = norm
        if user_prompt is None and messages:
            user_prompt = next((m["content"] for m in messages if m.get("role") == "user"), None)
        out_games.append({
            "score": score if status == "ok" else None,
            "judgment": {"answer": raw},
            "user_prompt": user_prompt,
            "prompt": list(messages) if messages else None,
            "status": status,
            "reason": reason,
        })
    record: dict[str, Any] = {"question_id": question_id, "uid": question_id, "model": model, "judge": judge}
    if baseline is not None:
        record["baseline"] = baseline
    if category is not None:
        record["category"] = category
    record["games"] = out_games
    return record

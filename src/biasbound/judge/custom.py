"""A judge configured by its own prompt and its own verdict parser.

A :class:`JudgePrompt` holds a system and a user template (Jinja, rendered with the item's fields
``question``, ``answer_a``, ``answer_b`` (pairwise), ``answer`` (single), ``reference`` and
``position``), few-shot messages placed between them, and a :class:`VerdictParser`:

* ``regex``  -- a regular expression whose first group (or whole match) is looked up in ``map``
  (spelling -> ``A>B``-style verdict, or -> rating for single grading); the first match counts.
* ``json``   -- a field of a JSON object found in the reply (``field``, dotted for nesting), mapped
  like ``regex`` or read as a number.
* ``number`` -- the first number in the reply, kept when it lies on the stated scale ``[low, high]``
  and rescaled onto 1-10 (biasbound's single rating).
* ``logprob`` -- the log-probabilities of the verdict tokens at the first reply position where one of
  them is among the top alternatives (``map`` from token to verdict, e.g. ``a`` in ``Output (a)``); the verdict
  is the most probable mapped token and ``extra["p"]`` the probabilities, renormalised over the mapped tokens.

Named presets reproduce other tools' prompts and parsers (template headers cite the source):
``llmbar`` (LLMBar's Vanilla_NoRules, "Output (a)"/"Output (b)"), ``mt-bench`` (FastChat's
pair-v2, ``[[A]]``/``[[B]]``/``[[C]]``), ``alpaca-eval`` (AlpacaEval 2.0's weighted_alpaca_eval_gpt4_turbo:
the best model's identifier ``m``/``M`` read from the log-probabilities), ``alpaca-eval-gpt4`` (AlpacaEval 1's
alpaca_eval_gpt4 ranking) and ``arena-hard`` (biasbound's built-in Arena-Hard-style prompt and parser, unchanged).

Which verdict spellings name a position: ``A``, ``a``, ``Output (a)``, ``[[A]]``, ``Assistant A``
name the first-shown answer; ``B``/``b``/``Output (b)``/``[[B]]``/``Assistant B`` the second; ``C``,
``tie`` name neither. A user parser maps its own spellings through ``map``; the values must be
one of ``A>>B, A>B, A=B, B>A, B>>A`` (see :data:`biasbound.judge.parsing.PAIRWISE_VERDICTS`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from biasbound._exceptions import DataFormatError
from biasbound.judge.parsing import PAIRWISE_VERDICTS, ParsedReply, normalize_verdict

__all__ = ["PARSER_KINDS", "PRESETS", "JudgePrompt", "VerdictParser", "builtin_prompt_record", "describe_prompt_record", "prompt_from_config",
           "prompt_record_digest"]

PARSER_KINDS: tuple[str, ...] = ("regex", "json", "number", "logprob")
PRESETS: tuple[str, ...] = ("alpaca-eval", "alpaca-eval-gpt4", "arena-hard", "llmbar", "mt-bench")
_FIELDS = ("question", "answer", "answer_a", "answer_b", "reference", "position")


@dataclass(frozen=True)
class VerdictParser:
    """How a verdict is read from a reply (see the module docstring for the kinds)."""

    kind: str
    pattern: str | None = None
    field: str | None = None
    mapping: tuple[tuple[str, str], ...] = ()
    low: float = 1.0
    high: float = 10.0
    ignore_case: bool = True

    def fingerprint(self) -> str:
        """A short stable hash of the parser (goes into the cache key and the certificate's scope)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {"kind": self.kind, "pattern": self.pattern, "field": self.field, "map": dict(self.mapping),
                "scale": [self.low, self.high], "ignore_case": self.ignore_case}

    def _lookup(self, token: str) -> str | None:
        key = token.strip()
        for spelling, verdict in self.mapping:
            if spelling == key or (self.ignore_case and spelling.lower() == key.lower()):
                return verdict
        return None

    def _value(self, verdict: str, task: str) -> Any:
        if task == "judge-single":
            return self._rating(float(verdict))
        return normalize_verdict(verdict)

    def _rating(self, x: float) -> float | None:
        if not math.isfinite(x) or not self.low <= x <= self.high:
            return None
        return 1.0 + 9.0 * (x - self.low) / (self.high - self.low)

    def parse(self, text: str, task: str, logprobs: Sequence[Mapping[str, float]] | None = None) -> ParsedReply:
        """Read the verdict of one reply; ``status="missing"`` with a reason when none is found."""
        reply = _Reply(text, task)
        if self.kind == "regex":
            return self._parse_regex(reply)
        if self.kind == "json":
            return self._parse_json(reply)
        if self.kind == "number":
            return self._parse_number(reply)
        return self._parse_logprob(reply, logprobs)

    def _parse_regex(self, r: _Reply) -> ParsedReply:
        flags = re.IGNORECASE if self.ignore_case else 0
        m = re.search(str(self.pattern), r.text, flags)
        if m is None:
            return r.missing(f"no match of the parser's pattern {self.pattern!r}")
        token = m.group(1) if m.groups() else m.group(0)
        if not self.mapping and r.task == "judge-single":
            try:
                rating = self._rating(float(token))
            except ValueError:
                rating = None
            return r.ok(rating) if rating is not None else r.missing(f"{token!r} is not a number on [{self.low}, {self.high}]")
        verdict = self._lookup(token)
        return r.ok(self._value(verdict, r.task)) if verdict is not None else r.missing(f"{token!r} is not in the parser's map")

    def _parse_json(self, r: _Reply) -> ParsedReply:
        obj = _first_json_object(r.text)
        if obj is None:
            return r.missing("no JSON object in the reply")
        value: Any = obj
        for part in str(self.field).split("."):
            if not isinstance(value, Mapping) or part not in value:
                return r.missing(f"the JSON object has no field {self.field!r}")
            value = value[part]
        if self.mapping:
            verdict = self._lookup(str(value))
            return r.ok(self._value(verdict, r.task)) if verdict is not None else r.missing(f"{value!r} is not in the parser's map")
        try:
            rating = self._rating(float(value))
        except (TypeError, ValueError):
            rating = None
        return r.ok(rating) if rating is not None else r.missing(f"{value!r} is not a number on [{self.low}, {self.high}]")

    def _parse_number(self, r: _Reply) -> ParsedReply:
        m = re.search(r"-?\d+(?:\.\d+)?", r.text)
        if m is None:
            return r.missing("no number in the reply")
        rating = self._rating(float(m.group(0)))
        return r.ok(rating) if rating is not None else r.missing(f"{m.group(0)} is not on the scale [{self.low}, {self.high}]")

    def _parse_logprob(self, r: _Reply, logprobs: Sequence[Mapping[str, float]] | None) -> ParsedReply:
        if not logprobs:
            return r.missing("the server returned no log-probabilities")
        probs: dict[str, float] = {}
        for position in logprobs:  # the first reply position whose alternatives hold a verdict token
            for token, lp in position.items():
                verdict = self._lookup(token)
                if verdict is not None:
                    probs[verdict] = probs.get(verdict, 0.0) + math.exp(lp)
            if probs:
                break
        if not probs:
            return r.missing("none of the parser's tokens is among the reply's top log-probabilities")
        total = sum(probs.values())
        best = max(probs, key=lambda v: probs[v])
        return r.ok(self._value(best, r.task), p={v: p / total for v, p in probs.items()})


@dataclass(frozen=True)
class _Reply:
    """One reply being parsed: its text and task, and the two outcomes a parser gives."""

    text: str
    task: str

    def missing(self, reason: str) -> ParsedReply:
        return ParsedReply(task=self.task, status="missing", value=None, reason=reason, raw=self.text)

    def ok(self, value: Any, **extra: Any) -> ParsedReply:
        return ParsedReply(task=self.task, status="ok", value=value, extra=dict(extra), raw=self.text)


def _first_json_object(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    return None


@dataclass(frozen=True)
class JudgePrompt:
    """A judge's own prompt (templates and few-shot messages) and parser."""

    name: str
    system: str | None
    user: str
    parser: VerdictParser
    few_shot: tuple[tuple[str, str], ...] = ()
    json_schema: Mapping[str, Any] | None = field(default=None, compare=False)

    def fingerprint(self) -> str:
        """A short stable hash of the templates, few-shot messages and parser."""
        blob = json.dumps([self.system, self.user, list(self.few_shot), self.parser.to_dict()], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def scope(self) -> dict[str, Any]:
        """What the run summary and the certificate's scope (``scope.judge_prompt``) record about the prompt and
        parser: the preset name, the templates, the few-shot messages and the parser as they were used, and
        ``sha256``, the digest of all of them (:func:`prompt_record_digest`)."""
        rec: dict[str, Any] = {"name": self.name, "fingerprint": self.fingerprint(), "system": self.system,
                               "user": self.user,
                               "few_shot": [{"role": role, "content": content} for role, content in self.few_shot],
                               "parser": self.parser.to_dict()}
        rec["sha256"] = prompt_record_digest(rec)
        return rec

    def render(self, **fields: Any) -> list[dict[str, str]]:
        """The chat messages for one item (missing fields render as errors naming them)."""
        env = _env()
        try:
            out: list[dict[str, str]] = []
            if self.system:
                out.append({"role": "system", "content": env.from_string(self.system).render(**fields).strip("\n")})
            out.extend({"role": role, "content": content} for role, content in self.few_shot)
            out.append({"role": "user", "content": env.from_string(self.user).render(**fields).strip("\n")})
        except jinja2.UndefinedError as exc:
            raise DataFormatError(f"The judge prompt {self.name!r} uses a field the item does not have ({exc.message}); "
                                  f"the fields are {', '.join(_FIELDS)}.") from None
        return out


def prompt_record_digest(rec: Mapping[str, Any]) -> str:
    """The SHA-256 of a recorded prompt (:meth:`JudgePrompt.scope`): its name, templates, few-shot messages and
    parser, as canonical JSON (the keys sorted; ``sha256`` and ``fingerprint`` themselves left out)."""
    body = {k: v for k, v in rec.items() if k not in ("sha256", "fingerprint")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def describe_prompt_record(rec: Mapping[str, Any]) -> str:
    """One line naming a recorded prompt and parser (``verify`` prints it for ``scope.judge_prompt``)."""
    raw_parser = rec.get("parser")
    parser: Mapping[str, Any] = raw_parser if isinstance(raw_parser, Mapping) else {}
    how = str(parser.get("kind"))
    if parser.get("pattern"):
        how += f" {parser['pattern']!r}"
    if parser.get("field"):
        how += f" field {parser['field']!r}"
    if parser.get("map"):
        how += " map " + ", ".join(f"{k!r}->{v}" for k, v in dict(parser["map"]).items())
    if parser.get("verdict"):
        how += f" ({parser['verdict']})"
    raw_shots = rec.get("few_shot")
    shots: list[Any] = raw_shots if isinstance(raw_shots, list) else []
    parts = [f"{k} template {len(str(rec[k]).splitlines())} lines" for k in ("system", "user") if rec.get(k)]
    return (f"{rec.get('name')} (sha256 {str(rec.get('sha256'))[:16]}...): parser {how}; {', '.join(parts) or 'no template'}, "
            f"{len(shots)} few-shot message{'' if len(shots) == 1 else 's'} (the full text in scope.judge_prompt)")


def builtin_prompt_record(template: str, rubric: Sequence[Sequence[str]] | None = None) -> dict[str, Any]:
    """The record of biasbound's built-in prompt and parser (no ``prompt`` block in the config): the templates,
    their version and the config's rubric (the factors the built-in templates render), with the same digest as a
    user's prompt."""
    from biasbound.judge.prompts import TEMPLATE_VERSION

    kind = "pairwise" if template == "pairwise" else "single"
    rec: dict[str, Any] = {
        "name": f"biasbound-{kind}", "system": _preset_text(f"{kind}_system.jinja"), "user": _preset_text(f"{kind}_user.jinja"),
        "few_shot": [], "template_version": TEMPLATE_VERSION, "rubric": None if rubric is None else [list(f) for f in rubric],
        "parser": {"kind": "builtin", "verdict": "My final verdict is: [[A>B]]" if kind == "pairwise" else "Rating: [[N]]"}}
    rec["sha256"] = prompt_record_digest(rec)
    return rec


def _env() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)


def _preset_text(name: str) -> str:
    loader = jinja2.PackageLoader("biasbound.judge", "templates")
    source, _, _ = loader.get_source(_env(), name)
    return source


def _letter_map(a: str, b: str, tie: str | None) -> tuple[tuple[str, str], ...]:
    pairs = [(a, "A>B"), (b, "B>A")]
    if tie is not None:
        pairs.append((tie, "A=B"))
    return tuple(pairs)


def preset(name: str) -> JudgePrompt | None:
    """The named preset (``None`` for ``arena-hard``: biasbound's built-in prompt and parser)."""
    if name == "arena-hard":
        return None
    if name == "llmbar":
        # LLMBar's own parser looks for "Output (a)" / "Output (b)" in the reply; a bare "(a)" counts too.
        parser = VerdictParser(kind="regex", pattern=r"Output\s*\(?\s*([ab])\s*\)?", mapping=_letter_map("a", "b", None))
        return JudgePrompt("llmbar", _preset_text("preset_llmbar_system.jinja"), _preset_text("preset_llmbar_user.jinja"), parser)
    if name == "mt-bench":
        # FastChat's pair-v2 parser: "[[A]]" / "[[B]]" / "[[C]]" (tie), the first one found.
        parser = VerdictParser(kind="regex", pattern=r"\[\[([ABC])\]\]", mapping=_letter_map("A", "B", "C"), ignore_case=False)
        return JudgePrompt("mt-bench", _preset_text("preset_mt_bench_system.jinja"),
                           _preset_text("preset_mt_bench_user.jinja"), parser)
    if name in ("alpaca-eval", "alpaca-eval-gpt4"):
        return _alpaca_eval(name)
    raise KeyError(name)


def _alpaca_eval(name: str) -> JudgePrompt:
    """AlpacaEval's annotators (templates/NOTICE-alpaca_eval.md): ``alpaca-eval`` is weighted_alpaca_eval_gpt4_turbo
    (the best model's identifier, ``m`` = output_1 = answer A, ``M`` = answer B, read from the log-probabilities of
    the reply's first token, case-sensitive: AlpacaEval's logprob_parser), ``alpaca-eval-gpt4`` is alpaca_eval_gpt4
    (a Python list of ``{'model': ..., 'rank': ...}``; ``model_1``'s rank 1 or 2 names the better answer, as
    AlpacaEval's ranking_parser reads it; any other rank is unparseable)."""
    if name == "alpaca-eval":
        parser = VerdictParser(kind="logprob", mapping=(("m", "A>B"), ("M", "B>A")), ignore_case=False)
        return JudgePrompt(name, _preset_text("preset_alpaca_eval_system.jinja"), _preset_text("preset_alpaca_eval_user.jinja"),
                           parser)
    parser = VerdictParser(kind="regex", pattern=r"""['"]model['"]\s*:\s*['"]model_1['"]\s*,\s*['"]rank['"]\s*:\s*(\d+)""",
                           mapping=(("1", "A>B"), ("2", "B>A")), ignore_case=False)
    return JudgePrompt(name, _preset_text("preset_alpaca_eval_gpt4_system.jinja"),
                       _preset_text("preset_alpaca_eval_gpt4_user.jinja"), parser)


def prompt_from_config(raw: Any, *, template: str, base: Path, fail: Any) -> JudgePrompt | None:
    """Validate the config's ``prompt`` block; ``fail(key, what, value)`` builds the one-sentence error.

    ``{preset: llmbar}`` or ``{system: file, user: file, few_shot: [{role, content}, ...],
    parser: {kind: regex, pattern: ..., map: {...}} | {kind: json, field: ..., map: ...} |
    {kind: number, scale: [1, 10]} | {kind: logprob, map: {...}}}``.
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise fail("prompt", "a mapping with 'preset' or 'user' (and 'system', 'few_shot', 'parser')", raw)
    unknown = sorted(set(raw) - {"preset", "system", "user", "few_shot", "parser"})
    if unknown:
        raise fail(f"prompt.{unknown[0]}", "one of preset, system, user, few_shot, parser", raw[unknown[0]])
    if "preset" in raw:
        name = raw["preset"]
        if name not in PRESETS:
            raise fail("prompt.preset", f"one of {', '.join(PRESETS)}", name)
        if len(raw) > 1:
            raise fail("prompt", "either a preset alone or your own templates and parser", dict(raw))
        if template != "pairwise" and name != "arena-hard":
            raise fail("prompt.preset", f"used with template 'pairwise' ({name!r} is a pairwise prompt)", name)
        return preset(str(name))
    if "user" not in raw:
        raise fail("prompt.user", "the path of the user-message template (Jinja, with the item's fields)", None)
    if "parser" not in raw:
        raise fail("prompt.parser", "a parser: {kind: regex|json|number|logprob, ...}", None)
    texts = _templates(raw, base, fail)
    shots = _few_shot(raw.get("few_shot"), fail)
    parser = _parser(raw["parser"], template, fail)
    return JudgePrompt("custom", texts["system"], str(texts["user"]), parser, tuple(shots))



def _templates(raw: Mapping[str, Any], base: Path, fail: Any) -> dict[str, str | None]:
    """The system and user templates of a ``prompt`` block, read and checked (valid Jinja, known fields only)."""
    texts: dict[str, str | None] = {"system": None}
    for key in ("system", "user"):
        if raw.get(key) is None:
            continue
        path = Path(str(raw[key]))
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise fail(f"prompt.{key}", "the path of an existing template file", str(raw[key]))
        text = path.read_text(encoding="utf-8")
        try:
            ast = _env().parse(text)
        except jinja2.TemplateSyntaxError as exc:
            raise fail(f"prompt.{key}", f"a valid Jinja template ({path}, line {exc.lineno}: {exc.message})",
                       str(raw[key])) from None
        from jinja2 import meta

        bad = sorted(meta.find_undeclared_variables(ast) - set(_FIELDS))
        if bad:
            raise fail(f"prompt.{key}", f"a template using only the fields {', '.join(_FIELDS)} ({path} uses {bad[0]!r})",
                       str(raw[key]))
        texts[key] = text
    return texts


def _few_shot(raw: Any, fail: Any) -> list[tuple[str, str]]:
    """The few-shot messages of a ``prompt`` block as (role, content) pairs."""
    shots: list[tuple[str, str]] = []
    for i, m in enumerate(raw or []):
        if not (isinstance(m, Mapping) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)):
            raise fail(f"prompt.few_shot[{i}]", "a {role: user|assistant, content: text} message", m)
        shots.append((str(m["role"]), str(m["content"])))
    return shots


def _parser(raw: Any, template: str, fail: Any) -> VerdictParser:
    if not isinstance(raw, Mapping) or raw.get("kind") not in PARSER_KINDS:
        raise fail("prompt.parser.kind", f"one of {', '.join(PARSER_KINDS)}", raw.get("kind") if isinstance(raw, Mapping) else raw)
    kind = str(raw["kind"])
    allowed = {"regex": {"pattern", "map", "scale", "ignore_case"}, "json": {"field", "map", "scale"},
               "number": {"scale"}, "logprob": {"map"}}[kind] | {"kind"}
    extra = sorted(set(raw) - allowed)
    if extra:
        raise fail(f"prompt.parser.{extra[0]}", f"absent for a {kind!r} parser (it takes {', '.join(sorted(allowed))})", raw[extra[0]])
    pattern = raw.get("pattern")
    if kind == "regex":
        if not isinstance(pattern, str):
            raise fail("prompt.parser.pattern", "a regular expression", pattern)
        try:
            re.compile(pattern)
        except re.error as exc:
            raise fail("prompt.parser.pattern", f"a valid regular expression ({exc})", pattern) from None
    if kind == "json" and not isinstance(raw.get("field"), str):
        raise fail("prompt.parser.field", "the name of the JSON field holding the verdict", raw.get("field"))
    mapping_raw = raw.get("map") or {}
    if not isinstance(mapping_raw, Mapping):
        raise fail("prompt.parser.map", "a mapping from the judge's spelling to a verdict", mapping_raw)
    mapping: list[tuple[str, str]] = []
    for spelling, verdict in mapping_raw.items():
        ok = (normalize_verdict(str(verdict)) is not None) if template == "pairwise" else _is_number(verdict)
        if not ok:
            what = f"one of {', '.join(PAIRWISE_VERDICTS)}" if template == "pairwise" else "a number on the scale"
            raise fail(f"prompt.parser.map.{spelling}", what, verdict)
        mapping.append((str(spelling), str(verdict)))
    if kind == "logprob" and not mapping:
        raise fail("prompt.parser.map", "the verdict tokens and their verdicts (e.g. {A: A>B, B: B>A})", None)
    if template == "pairwise" and kind in ("regex", "json") and not mapping:
        raise fail("prompt.parser.map", "a mapping from the judge's spellings to verdicts (template 'pairwise')", None)
    if template == "pairwise" and kind == "number":
        raise fail("prompt.parser.kind", "regex, json or logprob with template 'pairwise' (a number is a single rating)", kind)
    scale = raw.get("scale", [1, 10])
    if not (isinstance(scale, Sequence) and len(scale) == 2 and all(_is_number(s) for s in scale) and float(scale[0]) < float(scale[1])):
        raise fail("prompt.parser.scale", "[low, high] with low < high", scale)
    return VerdictParser(kind=kind, pattern=pattern, field=raw.get("field"), mapping=tuple(mapping),
                         low=float(scale[0]), high=float(scale[1]), ignore_case=bool(raw.get("ignore_case", True)))


def _is_number(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False

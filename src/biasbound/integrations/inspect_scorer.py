"""An inspect_ai scorer that also grades perturbed neighbours: :func:`bias_bounded`.

The wrapper grades each sample exactly as the wrapped scorer does (its Score is returned
unchanged) and then grades the sample's neighbours with the same scorer — the answer
reformatted (``format``), paraphrased (``paraphrase``) or given an inserted error
(``agreeable``) by biasbound's generators, the rubric reordered or reworded (``schematic``,
through a ``rubric_scorer`` factory), or the same input graded again (``rerun``). The raw
neighbour values go into ``Score.metadata["biasbound"]``; :func:`biasbound.integrations.load_inspect_log`
turns them into variant and rerun rows, so ``biasbound certify LOG`` certifies the log.

All model calls go through inspect's own model layer: the wrapped scorer uses whatever
grader model it was given (any model inspect supports), and the LLM generators' rewriter is
``inspect_ai.model.get_model(rewriter)``.

The metric :func:`neighbor_sensitivity` records, per generator, the RMS of the score change
(original − neighbour) over the samples, on the reader's [0, 1] scale, with the number of
pairs: exactly the per-generator Δ* that ``biasbound certify LOG --holdout 0`` reports for
the log's model (with a hold-out, certify estimates Δ* on its calibration share only).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from biasbound._exceptions import InputError
from biasbound.data.inspect_log import GENERATORS, METADATA_KEY, raw_score, require_inspect
from biasbound.parameters import validate_params

__all__ = ["GENERATORS", "bias_bounded", "neighbor_sensitivity", "rubric_instructions"]

_FORMAT_VERSION = 1

require_inspect()

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import Score, SampleScore, Scorer, Target, metric, scorer  # noqa: E402
from inspect_ai.solver import TaskState  # noqa: E402


def rubric_instructions(rubric: Any) -> str:
    """Grading instructions rendered from a :class:`biasbound.Rubric` (factor order and emphasis).

    Use it in a ``rubric_scorer`` factory, e.g.
    ``lambda r: model_graded_qa(instructions=rubric_instructions(r) + GRADE_TEXT, model=grader)``.
    """
    lines = ["Judge the submission on these factors, in this order of importance:"]
    for i, f in enumerate(rubric.factors, start=1):
        lines.append(f"{i}. {f}: {rubric.emphasis[f]}")
    return "\n".join(lines)


def _name_of(s: Any) -> str:
    try:
        from inspect_ai._util.registry import registry_unqualified_name

        return str(registry_unqualified_name(s))
    except Exception:  # an unregistered callable: its Python name
        return str(getattr(s, "__name__", type(s).__name__))


def _grader_from(score: Score) -> str | None:
    grading = (score.metadata or {}).get("grading")
    if isinstance(grading, list):
        for msg in reversed(grading):  # ChatMessage objects while scoring, dicts once read back from a log
            role = msg.get("role") if isinstance(msg, Mapping) else getattr(msg, "role", None)
            model = msg.get("model") if isinstance(msg, Mapping) else getattr(msg, "model", None)
            if role == "assistant" and isinstance(model, str):
                return model
    return None


def _with_answer(state: TaskState, answer: str) -> TaskState:
    """A copy of ``state`` whose output (and last assistant message) is ``answer``."""
    new = copy.copy(state)  # shallow: the store, tools and sandbox handles stay shared, output and messages are new
    new.output = ModelOutput.from_content(model=str(state.output.model or state.model), content=answer)
    messages = list(state.messages)
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], ChatMessageAssistant):
            messages[i] = ChatMessageAssistant(content=answer, model=messages[i].model)
            break
    new.messages = messages
    return new


def _complete_with(model: Any) -> Callable[[list[dict[str, str]]], Any]:
    async def complete(messages: list[dict[str, str]]) -> str:
        chat = [ChatMessageSystem(content=m["content"]) if m["role"] == "system" else ChatMessageUser(content=m["content"])
                for m in messages]
        out = await model.generate(chat)
        return out.completion

    return complete


def _pairs(scores: Sequence[SampleScore]) -> dict[str, list[tuple[float, float]]]:
    """Per generator, the (original, neighbour) pairs on the reader's [0, 1] scale (both present)."""
    by_sample: dict[Any, dict[int, dict[str, Any]]] = {}
    for ss in scores:
        bb = (ss.score.metadata or {}).get(METADATA_KEY)
        if isinstance(bb, Mapping):
            by_sample.setdefault(ss.sample_id, {})[int(bb.get("epoch", 1))] = {"value": ss.score.value, **bb}
    raw: list[tuple[str, Any, Any]] = []  # (generator, original value, neighbour value)
    for epochs in by_sample.values():
        first = epochs.get(1)
        if first is None:
            continue
        for e, rec in sorted(epochs.items()):
            if e > 1:
                raw.append(("rerun", first["value"], rec["value"]))
        for nb in first.get("neighbors", []):
            if nb.get("status", "applied") == "applied":
                raw.append((str(nb["generator"]), first["value"], nb.get("value")))
    mapped = []
    for gen, a, b in raw:
        ka, xa = raw_score(a, None)
        kb, xb = raw_score(b, None)
        mapped.append((gen, ka, xa, kb, xb))
    # the scale the wrapper declared (scale=...), as the reader uses it; else [0, 1], which the wrapper checked
    declared = next((e[1].get("scale") for e in by_sample.values() if 1 in e and e[1].get("scale")), None)
    lo, hi = (float(declared[0]), float(declared[1])) if declared else (0.0, 1.0)
    out: dict[str, list[tuple[float, float]]] = {}
    for gen, ka, xa, kb, xb in mapped:
        if ka == "missing" or kb == "missing":
            continue
        ya = (xa - lo) / (hi - lo) if ka == "number" else xa
        yb = (xb - lo) / (hi - lo) if kb == "number" else xb
        out.setdefault(gen, []).append((ya, yb))
    return out


@metric(scores="unreduced")
def neighbor_sensitivity() -> Any:
    """Per generator: Δ* = RMS over samples of (original − neighbour) on [0, 1], and its pair count ``m_<gen>``."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        result: dict[str, float] = {}
        for gen, pairs in sorted(_pairs(scores).items()):
            d = np.asarray([a - b for a, b in pairs], dtype=float)
            result[gen] = float(np.sqrt(np.mean(d**2))) if d.size else math.nan
            result[f"m_{gen}"] = float(d.size)
        return result

    return compute


#: bias_bounded refuses a grader whose first this-many grades all failed (no value, or inspect's
#: "Grade not found" explanation)
FAILED_GRADER_AFTER = 5


def _failed_grade(s: Any) -> str | None:
    """Why a grade failed (``None`` when it is a grade): no score, no value, or inspect's 'grade not found'."""
    if s is None:
        return "no score"
    value = getattr(s, "value", None)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return str(getattr(s, "explanation", None) or "no value")
    explanation = str(getattr(s, "explanation", "") or "")
    if explanation.lower().startswith("grade not found"):
        return explanation
    return None


@validate_params
def bias_bounded(
    wrapped: Scorer,
    generators: Sequence[str] = ("format", "rerun"),
    *,
    rubric_scorer: Callable[[Any], Scorer] | None = None,
    rubric: Any = None,
    rewriter: str | Any | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    scale: tuple[float, float] | None = None,
) -> Scorer:
    """Wrap a (model-graded) scorer so that each sample's neighbours are graded too.

    The returned scorer keeps the wrapped scorer's own metrics (accuracy, stderr, ...) and adds
    :func:`neighbor_sensitivity`.

    Parameters
    ----------
    wrapped:
        The scorer whose grades are certified, e.g. ``model_graded_qa(model="openai/gpt-4o")``.
    generators:
        Among ``format``, ``paraphrase``, ``schematic``, ``agreeable``, ``rerun``.
    rubric_scorer:
        ``rubric -> Scorer`` building the wrapped scorer for a rubric; needed by ``schematic``
        (which changes the rubric, not the answer). ``rubric`` is the original rubric
        (default: biasbound's single-answer rubric); the caller should pass
        ``wrapped=rubric_scorer(rubric)`` so that the original and its neighbours differ only
        in the rubric.
    rewriter:
        The model (inspect name or ``Model``) that rewrites answers for ``paraphrase`` and
        ``agreeable``; required when they are requested.
    seed:
        Base seed of the generators (each generator's seed is derived from it and the
        generator name; each item's perturbation from that seed and the sample id).
    options:
        Generator options, e.g. ``{"format": {"p_family": 1.0}}``.
    judge:
        The judge's name in biasbound's outputs (default: the wrapped scorer's name with the
        grader model when the score's grading messages record it).
    scale:
        ``(lo, hi)``, the grader's numeric scale (e.g. ``(1, 10)``); recorded in every score so
        the metric and ``biasbound certify LOG`` map values alike. Needed when the grader gives
        numbers outside [0, 1]: such a value without it (or outside it) is an error of the
        sample, which stops the eval (a scale is never guessed).

    Returns
    -------
    Scorer
        Returns the wrapped scorer's Score (value, answer, explanation unchanged) with
        ``metadata["biasbound"] = {"version", "judge", "epoch", "neighbors": [{"generator",
        "status", "changed", "value", "reason"}, ...]}``.

    Notes
    -----
    Neighbours are graded on epoch 1 only (the reader reads epoch 1's; later epochs are reruns
    of the whole sample already), so no grader call goes to a neighbour that is never read.
    ``rerun`` calls the wrapped scorer again on the same state: with inspect's model cache on,
    the repeat returns the cached grade and measures no jitter. A neighbour that could not be
    built (``not-applicable``, ``failed``) is recorded with its status and is not a neighbour;
    an unscored neighbour grade is a missing judgment.
    """
    from inspect_ai._util.registry import registry_info
    from inspect_ai.scorer._scorer import SCORER_METRICS, scorer_metrics

    made = _bias_bounded(wrapped, generators, rubric_scorer=rubric_scorer, rubric=rubric, rewriter=rewriter, seed=seed,
                         options=options, judge=judge, scale=scale)
    try:
        own = scorer_metrics(wrapped)
    except Exception:  # an unregistered scorer callable: it declares no metrics
        own = []
    if isinstance(own, list) and own:  # the wrapped scorer's own metrics stay, the sensitivity is added
        registry_info(made).metadata[SCORER_METRICS] = [*own, neighbor_sensitivity()]
    return made


def _check_generators(gens: tuple[str, ...], rubric_scorer: Any, rewriter: Any) -> list[str]:
    """bias_bounded's generators checked against what they need; the ones that need a rewriting model."""
    bad = [g for g in gens if g not in GENERATORS]
    if bad or not gens:
        raise InputError(f"The 'generators' parameter of bias_bounded must list generators among "
                         f"{', '.join(map(repr, GENERATORS))}. Got {list(gens)!r} instead.")
    if "schematic" in gens and rubric_scorer is None:
        raise InputError("The 'rubric_scorer' parameter of bias_bounded must be a function rubric -> Scorer when "
                         "'schematic' is requested: the wrapper cannot change the rubric inside another scorer.")
    needs_llm = [g for g in gens if g in ("paraphrase", "agreeable")]
    if needs_llm and rewriter is None:
        raise InputError(f"The 'rewriter' parameter of bias_bounded must name a model for {', '.join(needs_llm)}. Got None.")
    return needs_llm


class _FailedGrades:
    """Refuse, in one sentence, a grader none of whose first FAILED_GRADER_AFTER grades was a grade."""

    def __init__(self, wrapped_name: str) -> None:
        self.wrapped_name = wrapped_name
        self.grades, self.failed, self.example = 0, 0, ""

    def __call__(self, s: Any) -> None:
        self.grades += 1
        why = _failed_grade(s)
        if why is None:
            return
        self.failed += 1
        self.example = self.example or why
        if self.grades >= FAILED_GRADER_AFTER and self.failed == self.grades:
            raise InputError(f"bias_bounded: every one of the {self.grades} grades of {self.wrapped_name} so far failed "
                             f"(e.g. {self.example[:160]!r}), so there is nothing to certify; check that the "
                             "grader's model is reachable (for a local OpenAI-compatible server use "
                             "'openai-api/<name>/<model>') and that its replies match the scorer's grade pattern.")


@scorer(metrics=[neighbor_sensitivity()], name="bias_bounded")
def _bias_bounded(
    wrapped: Scorer,
    generators: Sequence[str] = ("format", "rerun"),
    *,
    rubric_scorer: Callable[[Any], Scorer] | None = None,
    rubric: Any = None,
    rewriter: str | Any | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    scale: tuple[float, float] | None = None,
) -> Scorer:
    """The registered scorer behind :func:`bias_bounded` (same parameters)."""
    from biasbound.neighbors.registry import make_generator
    from biasbound.rubric import default_rubric

    if scale is not None:
        from biasbound.data.tables import check_scale

        lo_hi = check_scale(scale, "bias_bounded")
    else:
        lo_hi = None

    def check_value(value: Any, what: str) -> None:
        """A numeric grade outside the declared scale ([0, 1] without one) stops the sample, in one sentence."""
        try:
            kind, x = raw_score(value, None)
        except Exception:
            return  # not a number: the reader maps (or reports) it
        lo, hi = lo_hi if lo_hi is not None else (0.0, 1.0)
        if kind == "number" and not lo <= x <= hi:
            hint = ("pass scale=(lo, hi) with the grader's range, e.g. scale=(1, 10)" if lo_hi is None
                    else "give the grader's full range in scale=")
            raise InputError(f"bias_bounded: the {what} grade {x:g} lies outside the scale [{lo:g}, {hi:g}]; {hint}.")

    gens = tuple(str(g) for g in generators)
    needs_llm = _check_generators(gens, rubric_scorer, rewriter)
    base_rubric = rubric if rubric is not None else default_rubric("single")
    opts = {k: dict(v) for k, v in (options or {}).items()}
    import zlib

    made = {g: make_generator(g, seed=int(np.random.SeedSequence([seed, zlib.crc32(g.encode())]).generate_state(1)[0]),
                              **opts.get(g, {}))
            for g in gens if g != "rerun"}
    rewriter_model = get_model(rewriter) if needs_llm else None
    complete = _complete_with(rewriter_model) if rewriter_model is not None else None
    wrapped_name = _name_of(wrapped)

    count = _FailedGrades(wrapped_name)

    async def score(state: TaskState, target: Target) -> Score:
        original = await wrapped(state, target)
        count(original)
        if original is None:
            return original
        from biasbound.neighbors.base import JudgeItem

        check_value(original.value, "original")
        grader = _grader_from(original)
        name = judge or (f"{wrapped_name}({grader})" if grader else wrapped_name)
        if int(state.epoch) > 1:  # only epoch 1's neighbours are read: grade none on later epochs
            meta = dict(original.metadata or {})
            meta[METADATA_KEY] = {"version": _FORMAT_VERSION, "judge": name, "epoch": int(state.epoch), "neighbors": [],
                                  **({"scale": list(lo_hi)} if lo_hi is not None else {})}
            return Score(value=original.value, answer=original.answer, explanation=original.explanation, metadata=meta,
                         history=original.history)

        answer = state.output.completion if state.output is not None else ""
        item = JudgeItem(item_id=str(state.sample_id), question=state.input_text, answer=answer or " ", baseline=None,
                         model=str(state.model), rubric=base_rubric, game=0)
        records: list[dict[str, Any]] = []
        for g in gens:
            rec: dict[str, Any] = {"generator": g}
            if g == "rerun":
                s = await wrapped(state, target)
                rec.update(status="applied", changed="the same input graded again")
            else:
                gen = made[g]
                p = await gen.perturb_async(item, None, complete) if gen.requires_llm else gen.perturb(item)
                rec.update(status=p.status, changed=p.changed)
                if p.status != "applied":
                    records.append(rec)
                    continue
                if g == "schematic":
                    s = await rubric_scorer(p.item.rubric)(state, target)  # type: ignore[misc]
                else:
                    s = await wrapped(_with_answer(state, p.item.answer), target)
            value = None if s is None else s.value
            if isinstance(value, float) and math.isnan(value):
                value = None
            check_value(value, f"{g} neighbour")
            rec["value"] = value
            if value is None:
                rec["reason"] = getattr(s, "reason", None) or (s.explanation if s is not None else "no score")
            records.append(rec)
        meta = dict(original.metadata or {})
        meta[METADATA_KEY] = {"version": _FORMAT_VERSION, "judge": name, "epoch": int(state.epoch), "neighbors": records,
                              **({"scale": list(lo_hi)} if lo_hi is not None else {})}
        return Score(value=original.value, answer=original.answer, explanation=original.explanation, metadata=meta,
                     history=original.history)

    return score

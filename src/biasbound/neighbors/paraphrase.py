"""LLM paraphrase neighbours: a minimal stylistic rewrite of the response, checked before use.

The chat function is injected (``complete(messages) -> Awaitable[str]``); this module
never imports the judge client. Messages follow the judge protocol of
``docs/DESIGN.md``: the system message starts with ``biasbound-task: paraphrase``,
the text travels between a ``<<<RESPONSE`` line and a ``RESPONSE>>>`` line, and so does
the reply. Further ``biasbound-*`` header lines (template version, variation seed,
attempt number) follow the first line; they make every attempt a distinct request, so
a retry is never answered from a cache with the reply that was just rejected.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import numpy as np

from biasbound._exceptions import InputError, JudgeError
from biasbound._validation import check_in_range, check_int
from biasbound.neighbors.base import CompleteFn, JudgeItem, NeighborGenerator, Perturbation, RejectedPerturbation
from biasbound.neighbors.formatting import mask_protected
from biasbound.parameters import bounds, validate_params

__all__ = [
    "PARAPHRASE_TEMPLATE_VERSION",
    "ParaphraseGenerator",
    "extract_block",
    "protected_content",
    "render_task_messages",
    "word_ratio",
]

PARAPHRASE_TEMPLATE_VERSION = "paraphrase-v1"
_TEMPLATES = Path(__file__).with_name("templates")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")
_PLACEHOLDERS = re.compile("[\ue000-\ue0ff]+")


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
    )


def render_task_messages(task: str, *, text: str, **variables: Any) -> list[dict[str, str]]:
    """Render ``templates/<task>.system.jinja`` and ``<task>.user.jinja`` into chat messages.

    Parameters
    ----------
    task:
        Template stem: ``"paraphrase"`` or ``"insert_error"``.
    text:
        The response placed between the ``<<<RESPONSE`` / ``RESPONSE>>>`` lines.
    **variables:
        Further template variables (``template_version``, ``variation``, ``attempt``,
        ``previous_rejection``).

    Returns
    -------
    list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]``.
    """
    env = _environment()
    system = env.get_template(f"{task}.system.jinja").render(text=text, **variables)
    user = env.get_template(f"{task}.user.jinja").render(text=text, **variables)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def extract_block(reply: str, name: str) -> list[str]:
    """Return every text between a ``<<<NAME`` line and the next ``NAME>>>`` line.

    Marker lines may carry surrounding whitespace; the text in between is returned
    verbatim (lines joined with ``\\n``). An opening marker without a closing one is
    ignored.
    """
    lines = reply.split("\n")
    blocks: list[str] = []
    k = 0
    while k < len(lines):
        if lines[k].strip() == f"<<<{name}":
            for j in range(k + 1, len(lines)):
                if lines[j].strip() == f"{name}>>>":
                    blocks.append("\n".join(lines[k + 1 : j]))
                    k = j
                    break
        k += 1
    return blocks


def protected_content(text: str) -> dict[str, Counter[str]]:
    """Return the multisets a paraphrase must keep: code blocks, inline code, URLs, numbers.

    Numbers are the maximal digit runs with decimal points (``3.14``, ``2024``; ``1,000``
    counts as ``1`` and ``000``) outside code and URLs.
    """
    masked = mask_protected(text, urls=True, math=False)
    prose = _PLACEHOLDERS.sub(" ", masked.text)
    return {
        "code_blocks": Counter(masked.of_kind("code_block")),
        "inline_code": Counter(masked.of_kind("inline_code")),
        "urls": Counter(masked.of_kind("url")),
        "numbers": Counter(_NUMBER.findall(prose)),
    }


def _multiset_diff(before: Counter[str], after: Counter[str], limit: int = 3) -> str:
    lost = list((before - after).elements())[:limit]
    new = list((after - before).elements())[:limit]
    short = [(s[:40] + "...") if len(s) > 40 else s for s in lost + new]
    return f"lost {short[: len(lost)]!r}, gained {short[len(lost):]!r}"


def word_ratio(original: str, new: str) -> float:
    """Return ``len(new.split()) / len(original.split())``."""
    return len(new.split()) / len(original.split())


class ParaphraseGenerator(NeighborGenerator):
    """Minimal stylistic rewrite of the evaluated answer by an LLM, validated before use.

    Parameters
    ----------
    seed:
        Base seed; the per-item seed sets the ``biasbound-variation`` header line.
    max_attempts:
        Requests per item before the item is recorded as ``status="failed"``.
    min_ratio, max_ratio:
        Accepted range of the word-count ratio new/original (default 0.75-1.25).
    complete:
        Default chat function; ``perturb_async(..., complete=...)`` overrides it.

    Notes
    -----
    An attempt is accepted only if the reply has exactly one ``<<<RESPONSE`` block,
    the text is non-empty and differs from the original, the word-count ratio lies in
    ``[min_ratio, max_ratio]``, and the multisets of fenced code blocks, inline code
    spans, URLs and numbers are unchanged. Every rejected attempt is stored in
    ``rejections_`` and counted as ``counts_["rejected:<reason>"]``; an item without an
    accepted attempt is returned with ``status="failed"`` (its item unchanged) and
    counted as ``counts_["failed"]``. Endpoint failures (:class:`biasbound.JudgeError`)
    end the item's attempts with reason ``"endpoint-error"``.
    """

    name = "paraphrase"
    requires_llm = True
    task = "paraphrase"
    template_version = PARAPHRASE_TEMPLATE_VERSION

    @validate_params
    def __init__(
        self,
        *,
        seed: int | None = None,
        max_attempts: int = 3,
        min_ratio: float = 0.75,
        max_ratio: float = 1.25,
        complete: CompleteFn | None = None,
    ) -> None:
        super().__init__(seed=seed)
        where = type(self).__name__
        self.max_attempts = check_int(max_attempts, "max_attempts", where, **bounds("max_attempts"))
        self.min_ratio = check_in_range(min_ratio, "min_ratio", where, low=0.0, high=1.0, low_open=True)
        self.max_ratio = check_in_range(max_ratio, "max_ratio", where, low=1.0)
        if complete is not None and not callable(complete):
            raise TypeError(f"The 'complete' parameter of {where} must be an async function. Got {type(complete).__name__} instead.")
        self.complete = complete

    # -- sync entry is refused: the generator needs a chat function ------------------------
    def perturb(self, item: JudgeItem, rng: np.random.Generator | int | None = None) -> Perturbation:
        """Not available: LLM generators are asynchronous; use :meth:`perturb_async`."""
        raise TypeError(
            f"{type(self).__name__} needs an LLM: call 'await perturb_async(item, rng, complete)' "
            "or sample_neighbors_async instead of perturb."
        )

    def messages(self, text: str, *, attempt: int, variation: int, previous_rejection: str | None) -> list[dict[str, str]]:
        """Return the chat messages of one attempt."""
        return render_task_messages(
            self.task.replace("-", "_"),
            text=text,
            template_version=self.template_version,
            variation=variation,
            attempt=attempt,
            previous_rejection=previous_rejection,
        )

    def check_reply(self, original: str, reply: str) -> tuple[str | None, str, str, dict[str, Any]]:
        """Validate one reply.

        Returns
        -------
        text, reason, detail, extra
            ``text`` is the accepted rewrite or ``None``; ``reason``/``detail`` say why
            not (``"accepted"`` when accepted); ``extra`` holds measured values.
        """
        blocks = extract_block(reply, "RESPONSE")
        if len(blocks) != 1:
            what = "no" if not blocks else f"{len(blocks)}"
            return None, "missing-markers", f"the reply has {what} <<<RESPONSE ... RESPONSE>>> block(s), expected exactly one.", {}
        new = blocks[0]
        if not new.strip():
            return None, "empty", "the rewritten text is empty.", {}
        if new.strip() == original.strip():
            return None, "unchanged", "the rewritten text equals the original.", {}
        ratio = word_ratio(original, new)
        extra: dict[str, Any] = {"word_ratio": round(ratio, 4)}
        if not self.min_ratio <= ratio <= self.max_ratio:
            return None, "length-ratio", (
                f"the word-count ratio {ratio:.3f} is outside [{self.min_ratio:g}, {self.max_ratio:g}]."
            ), extra
        try:
            after = protected_content(new)
        except InputError:
            return None, "private-use-characters", "the rewritten text contains private-use characters U+E000-U+E0FF.", extra
        before = protected_content(original)
        for key, reason in (
            ("code_blocks", "changed-code-blocks"),
            ("inline_code", "changed-inline-code"),
            ("urls", "changed-urls"),
            ("numbers", "changed-numbers"),
        ):
            if before[key] != after[key]:
                return None, reason, f"the {key.replace('_', ' ')} differ: {_multiset_diff(before[key], after[key])}.", extra
        return new, "accepted", "", extra

    def _precheck(self, item: JudgeItem) -> str | None:
        if not item.answer.split():
            return "the answer has no words"
        for marker in ("<<<RESPONSE", "RESPONSE>>>", "<<<INSERTED", "INSERTED>>>"):
            if any(line.strip() == marker for line in item.answer.split("\n")):
                return f"the answer contains the protocol marker line {marker!r}"
        try:
            mask_protected(item.answer)
        except InputError:
            return "the answer contains private-use characters U+E000-U+E0FF"
        return None

    def _accept(self, item: JudgeItem, new: str, reply: str, details: dict[str, Any]) -> Perturbation:
        return self._result(
            item.with_changes(answer=new, variant=self.name),
            f"paraphrase accepted on attempt {details['attempts']} (word ratio {details['word_ratio']:.2f})",
            details,
        )

    async def perturb_async(
        self,
        item: JudgeItem,
        rng: np.random.Generator | int | None = None,
        complete: CompleteFn | None = None,
    ) -> Perturbation:
        """Ask the LLM for a rewrite, validate it, retry up to ``max_attempts`` times.

        Parameters
        ----------
        item:
            The item whose ``answer`` is rewritten.
        rng:
            Generator, seed or ``None`` (derived from the generator seed and the item).
        complete:
            ``async complete(messages) -> str``; defaults to the one given at construction.

        Returns
        -------
        Perturbation
            ``status="applied"`` with the accepted text, ``"not-applicable"`` when the
            answer cannot be sent (no words, protocol markers inside), or ``"failed"``.
        """
        where = f"{type(self).__name__}.perturb_async"
        if not isinstance(item, JudgeItem):
            raise TypeError(f"The 'item' parameter of {where} must be a JudgeItem. Got {type(item).__name__} instead.")
        complete = complete if complete is not None else self.complete
        if complete is None or not callable(complete):
            raise TypeError(f"The 'complete' parameter of {where} must be an async function messages -> str. Got None instead.")
        gen, seed = self._item_rng(item, rng)
        variation = int(gen.integers(2**31))
        details: dict[str, Any] = {
            "seed": seed,
            "variation": variation,
            "template": self.template_version,
            "field": "answer",
            "rejections": [],
        }
        problem = self._precheck(item)
        if problem is not None:
            details["reason"] = problem
            self.counts_["not-applicable"] += 1
            return self._result(item, f"no {self.name} possible: {problem}", details, status="not-applicable")
        previous: str | None = None
        for attempt in range(1, self.max_attempts + 1):
            messages = self.messages(item.answer, attempt=attempt, variation=variation, previous_rejection=previous)
            try:
                reply = await complete(messages)
            except JudgeError as exc:
                self._reject(item, attempt, "endpoint-error", str(exc), details)
                break
            if not isinstance(reply, str):
                raise TypeError(f"The 'complete' function given to {where} must return a str. Got {type(reply).__name__} instead.")
            new, reason, detail, extra = self.check_reply(item.answer, reply)
            if new is not None:
                details.update(extra, attempts=attempt)
                self.counts_["applied"] += 1
                return self._accept(item, new, reply, details)
            self._reject(item, attempt, reason, detail, details)
            previous = detail[:1].upper() + detail[1:] if detail else reason
        self.counts_["failed"] += 1
        details["attempts"] = len(details["rejections"])
        reasons = ", ".join(r["reason"] for r in details["rejections"])
        return self._result(
            item, f"no acceptable {self.name} after {details['attempts']} attempt(s) ({reasons})", details, status="failed"
        )

    def _reject(self, item: JudgeItem, attempt: int, reason: str, detail: str, details: dict[str, Any]) -> None:
        record = RejectedPerturbation(item_id=item.item_id, generator=self.name, attempt=attempt, reason=reason, detail=detail)
        self.rejections_.append(record)
        self.counts_[f"rejected:{reason}"] += 1
        details["rejections"].append(record.to_record())

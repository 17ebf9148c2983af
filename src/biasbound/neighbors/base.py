"""Judging-context items, perturbation records and the neighbour-generator base class.

A judgment context ``D`` is a sequence of :class:`JudgeItem` (one prompt-response pair
each, with everything the judge prompt is built from). A neighbour ``D'`` differs from
``D`` in exactly one item, replaced by the ``item`` of a :class:`Perturbation`
(paper, Def. "Neighboring Judgment Contexts"). Generators never talk to a judge: the
LLM-backed ones receive a ``complete`` coroutine function from the caller.

:class:`Rubric` and :func:`default_rubric` are defined in :mod:`biasbound.rubric` (one type
shared with the judge templates) and re-exported here.
"""

from __future__ import annotations

import zlib
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

import numpy as np

from biasbound._exceptions import InputError
from biasbound._validation import check_int, check_one_of, resolve_rng
from biasbound.rubric import Rubric, default_rubric
from biasbound.parameters import validate_params

__all__ = [
    "CompleteFn",
    "JudgeItem",
    "NeighborGenerator",
    "Perturbation",
    "RejectedPerturbation",
    "Rubric",
    "default_rubric",
]

#: ``complete(messages) -> Awaitable[str]``: one chat completion, messages in OpenAI form.
CompleteFn = Callable[[list[dict[str, str]]], Awaitable[str]]

PerturbationStatus = Literal["applied", "not-applicable", "failed"]
_STATUSES: tuple[str, ...] = ("applied", "not-applicable", "failed")


@dataclass(frozen=True)
class JudgeItem:
    """One prompt-response pair of a judgment context, with all the judge prompt needs.

    Parameters
    ----------
    item_id:
        The question identifier (Arena-Hard ``uid``).
    question:
        The prompt shown to the evaluated model.
    answer:
        The evaluated model's response (what the content generators perturb).
    baseline:
        The baseline model's answer for pairwise grading, ``None`` for single-answer grading.
    model:
        Name of the evaluated model.
    rubric:
        Factor names, order and emphasis used in the judge prompt.
    game:
        Pairwise only: ``1`` = baseline is Assistant A, ``2`` = the evaluated answer is A
        (Arena-Hard's convention). Must be ``0`` for single-answer items.
    rerun:
        Rerun index (0 for the first judgment); the judge sends ``seed = base + rerun``.
    variant:
        Which content perturbation produced this item (``"original"`` for unperturbed
        data). Swaps and reruns are encoded in ``game``/``rerun`` and keep ``variant``.
    """

    item_id: str
    question: str
    answer: str
    baseline: str | None
    model: str
    rubric: Rubric
    game: int = 1
    rerun: int = 0
    variant: str = "original"

    def __post_init__(self) -> None:
        for name in ("item_id", "question", "answer", "model", "variant"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"The {name!r} parameter of JudgeItem must be a str. Got {type(value).__name__} instead.")
        if self.baseline is not None and not isinstance(self.baseline, str):
            raise TypeError(
                f"The 'baseline' parameter of JudgeItem must be a str or None. Got {type(self.baseline).__name__} instead."
            )
        if not isinstance(self.rubric, Rubric):
            raise TypeError(f"The 'rubric' parameter of JudgeItem must be a Rubric. Got {type(self.rubric).__name__} instead.")
        if self.baseline is None:
            check_int(self.game, "game", "JudgeItem (single-answer item, baseline=None)", low=0, high=0)
        else:
            check_int(self.game, "game", "JudgeItem (pairwise item)", low=1, high=2)
        check_int(self.rerun, "rerun", "JudgeItem", low=0)

    @property
    def kind(self) -> str:
        """``"pairwise"`` when a baseline is present, else ``"single"``."""
        return "single" if self.baseline is None else "pairwise"

    @property
    def answer_a(self) -> str:
        """Assistant A's answer (pairwise): the baseline in game 1, the evaluated answer in game 2."""
        if self.baseline is None:
            raise InputError(f"The item {self.item_id!r} is a single-answer item; it has no Assistant A.")
        return self.baseline if self.game == 1 else self.answer

    @property
    def answer_b(self) -> str:
        """Assistant B's answer (pairwise): the evaluated answer in game 1, the baseline in game 2."""
        if self.baseline is None:
            raise InputError(f"The item {self.item_id!r} is a single-answer item; it has no Assistant B.")
        return self.answer if self.game == 1 else self.baseline

    def with_changes(self, **changes: Any) -> JudgeItem:
        """Return a copy with ``changes`` applied (validated like the constructor)."""
        return replace(self, **changes)


@dataclass(frozen=True)
class Perturbation:
    """The result of perturbing one item.

    Parameters
    ----------
    item:
        The changed item (equal to the input item when ``status != "applied"``).
    changed:
        Human-readable sentence saying what changed (or why nothing did).
    details:
        JSON-ready record: the seed used, the operations applied, accepted/rejected
        attempts, the inserted error, ...
    generator:
        Name of the generator that produced it.
    status:
        ``"applied"``; ``"not-applicable"`` (nothing the generator could change, e.g. no
        markdown to reformat: the neighbour equals the original, counted, not hidden);
        ``"failed"`` (an LLM generator found no acceptable rewrite within its attempts).
    """

    item: JudgeItem
    changed: str
    details: dict[str, Any]
    generator: str = ""
    status: PerturbationStatus = "applied"

    def __post_init__(self) -> None:
        check_one_of(self.status, "status", "Perturbation", _STATUSES)

    @property
    def applied(self) -> bool:
        """Whether the item was actually changed."""
        return self.status == "applied"

    def to_record(self) -> dict[str, Any]:
        """Return a flat JSON-ready record (without the item texts)."""
        return {
            "item_id": self.item.item_id,
            "generator": self.generator,
            "status": self.status,
            "changed": self.changed,
            "game": self.item.game,
            "rerun": self.item.rerun,
            "variant": self.item.variant,
            "details": self.details,
        }


@dataclass(frozen=True)
class RejectedPerturbation:
    """One rejected LLM attempt, kept so that failures are counted with their reason.

    Parameters
    ----------
    item_id, generator, attempt:
        Which item, which generator, which attempt (1-based).
    reason:
        Short machine-readable reason, e.g. ``"missing-markers"``, ``"length-ratio"``,
        ``"changed-numbers"``, ``"changed-code-blocks"``, ``"unchanged"``.
    detail:
        One sentence with the evidence (the ratio, the numbers that differ, ...).
    """

    item_id: str
    generator: str
    attempt: int
    reason: str
    detail: str

    def to_record(self) -> dict[str, Any]:
        """Return the record as a dict."""
        return {
            "item_id": self.item_id,
            "generator": self.generator,
            "attempt": self.attempt,
            "reason": self.reason,
            "detail": self.detail,
        }


class NeighborGenerator:
    """Base class of the neighbour generators for new judge runs.

    Parameters
    ----------
    seed:
        Base seed. ``perturb(item)`` without an ``rng`` derives the item's seed from
        ``(seed, item_id, rerun, game)``, so an item's perturbation does not depend on
        which other items were drawn. ``None`` draws a fresh seed, stored in ``seed``.

    Attributes
    ----------
    counts_:
        ``Counter`` of outcomes: ``"applied"``, ``"not-applicable"``, ``"failed"`` and,
        for LLM generators, ``"rejected:<reason>"`` per rejected attempt.
    rejections_:
        Every rejected LLM attempt as a :class:`RejectedPerturbation`.
    """

    name: ClassVar[str] = "base"
    requires_llm: ClassVar[bool] = False

    @validate_params
    def __init__(self, *, seed: int | None = None) -> None:
        _, self.seed = resolve_rng(seed)
        self.counts_: Counter[str] = Counter()
        self.rejections_: list[RejectedPerturbation] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed})"

    # -- randomness ---------------------------------------------------------------------
    def _item_rng(self, item: JudgeItem, rng: np.random.Generator | int | None) -> tuple[np.random.Generator, int]:
        """Resolve ``rng``; ``None`` means: derived from ``self.seed`` and the item's identity."""
        if rng is None:
            key = f"{item.item_id}\x1f{item.model}\x1f{item.game}\x1f{item.rerun}".encode()
            ss = np.random.SeedSequence([self.seed, zlib.crc32(key), len(key)])
            rng = int(ss.generate_state(2, dtype=np.uint64)[0] % np.uint64(2**63))
        return resolve_rng(rng)

    # -- public API -----------------------------------------------------------------------
    def perturb(self, item: JudgeItem, rng: np.random.Generator | int | None = None) -> Perturbation:
        """Return a neighbour of ``item`` (synchronous generators)."""
        _check_item(item, f"{type(self).__name__}.perturb")
        gen, seed = self._item_rng(item, rng)
        result = self._perturb(item, gen, seed)
        self.counts_[result.status] += 1
        return result

    async def perturb_async(
        self,
        item: JudgeItem,
        rng: np.random.Generator | int | None = None,
        complete: CompleteFn | None = None,
    ) -> Perturbation:
        """Async form; deterministic generators ignore ``complete`` and call :meth:`perturb`."""
        return self.perturb(item, rng)

    def _perturb(self, item: JudgeItem, rng: np.random.Generator, seed: int) -> Perturbation:
        raise NotImplementedError

    def summary(self) -> dict[str, Any]:
        """Return ``{"generator", "seed", "counts", "rejections"}`` for reports."""
        return {
            "generator": self.name,
            "seed": self.seed,
            "counts": dict(sorted(self.counts_.items())),
            "rejections": [r.to_record() for r in self.rejections_],
        }

    def _result(
        self,
        item: JudgeItem,
        changed: str,
        details: dict[str, Any],
        status: PerturbationStatus = "applied",
    ) -> Perturbation:
        return Perturbation(item=item, changed=changed, details=details, generator=self.name, status=status)


def _check_item(item: Any, where: str) -> JudgeItem:
    if not isinstance(item, JudgeItem):
        raise TypeError(f"The 'item' parameter of {where} must be a JudgeItem. Got {type(item).__name__} instead.")
    return item

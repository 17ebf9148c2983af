"""Schematic neighbours: the judge's rubric is reordered or re-emphasised; the response is not.

The judge templates render ``JudgeItem.rubric`` (factor order and one emphasis sentence
per factor), so changing the rubric perturbs the judging context of one item without
touching its answer (paper, Def. "Neighboring Judgment Contexts", example (ii)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from biasbound._exceptions import InputError
from biasbound._validation import check_int, check_one_of
from biasbound.neighbors.base import JudgeItem, NeighborGenerator, Perturbation
from biasbound.parameters import validate_params

__all__ = ["EMPHASIS_BANK", "GENERIC_EMPHASIS", "SchematicGenerator"]

#: Alternative emphasis sentences per factor, written for biasbound. Same criterion,
#: different wording and weight, so a judge that follows its rubric should not move much.
EMPHASIS_BANK: Mapping[str, tuple[str, ...]] = {
    "correctness": (
        "Check every fact, figure and step: an answer with a factual or logical error is worse than a shorter correct one.",
        "Accuracy comes first; also verify that the answer follows the prompt's instructions on format and role.",
        "Reward answers whose claims are true and whose reasoning holds; penalise mistakes and misleading statements.",
    ),
    "completeness": (
        "Judge whether the answer covers everything its intended reader needs, without gaps.",
        "An answer that leaves out a necessary part of the solution should lose on this factor.",
        "Consider whether a reader could act on the answer without looking anything else up.",
    ),
    "safety": (
        "The answer must not enable harm or illegal activity; a refusal of only the unsafe part is acceptable.",
        "Penalise content that could hurt someone; do not penalise a careful, partial refusal.",
        "Consider whether following the answer could cause damage, and whether unsafe parts were declined.",
    ),
    "conciseness": (
        "Prefer answers that say what is needed and stop; padding and repetition count against them.",
        "Brevity matters: unnecessary detail or rambling lowers this factor.",
        "Reward a direct answer; long answers are fine only when the prompt calls for depth.",
    ),
    "style": (
        "Prefer a clear, natural tone and varied sentences over formulaic lists and stock phrases.",
        "Consider readability and tone: the answer should sound natural and be pleasant to read.",
        "Reward fluent, well-organised writing; generic filler phrasing counts against it.",
    ),
    "helpfulness": (
        "Consider how far the answer solves the user's actual problem.",
        "Ask whether the user would be better off after reading this answer.",
        "Weigh how useful the answer is for the task the user set.",
    ),
    "relevance": (
        "Every part of the answer should address the question that was asked.",
        "Penalise material that wanders away from the question.",
        "Check that the answer stays on the user's topic throughout.",
    ),
    "accuracy": (
        "Check that facts, code and reasoning are correct.",
        "Mistakes in facts or logic should weigh heavily.",
        "Reward answers whose statements can be trusted as true.",
    ),
    "depth": (
        "Consider how thoroughly the answer engages with the substance of the question.",
        "Reward answers that go beyond the surface where the question needs it.",
        "Judge whether the answer explains the why, not only the what.",
    ),
    "creativity": (
        "Reward original, well-chosen ideas where the question leaves room for them.",
        "Consider whether the answer shows fresh thinking that actually helps.",
        "Give credit for inventive approaches that serve the user.",
    ),
    "detail": (
        "Judge whether the amount of detail suits the question.",
        "Consider whether specifics are given where they matter and omitted where they do not.",
        "Reward the right level of detail: neither sketchy nor bloated.",
    ),
}

#: Rewordings for factors outside the bank (``{factor}`` is replaced by the factor name).
GENERIC_EMPHASIS: tuple[str, ...] = (
    "Weigh {factor} carefully in your judgment.",
    "Treat {factor} as an important criterion.",
    "Consider how well the answer does on {factor}.",
)

_MODES: tuple[str, ...] = ("random", "reorder", "reword", "both")


def _alternatives(factor: str, current: str) -> list[str]:
    bank = EMPHASIS_BANK.get(factor, tuple(s.format(factor=factor) for s in GENERIC_EMPHASIS))
    return [s for s in bank if s != current]


class SchematicGenerator(NeighborGenerator):
    """Reorder the rubric's factors and/or reword one factor's emphasis sentence.

    Parameters
    ----------
    seed:
        Base seed.
    mode:
        ``"reorder"`` (a uniformly random permutation other than the identity),
        ``"reword"`` (``n_reworded`` factors get a different sentence from
        :data:`EMPHASIS_BANK`), ``"both"``, or ``"random"`` (one of the three, uniformly).
    n_reworded:
        How many factors to reword (capped at the number of factors).

    Notes
    -----
    The factor multiset is unchanged and ``item.answer``/``item.baseline`` are not
    touched. A one-factor rubric cannot be reordered; ``"random"`` then rewords.
    """

    name = "schematic"

    @validate_params
    def __init__(self, *, seed: int | None = None, mode: str = "random", n_reworded: int = 1) -> None:
        super().__init__(seed=seed)
        self.mode = check_one_of(mode, "mode", "SchematicGenerator", _MODES)
        self.n_reworded = check_int(n_reworded, "n_reworded", "SchematicGenerator", low=1)

    def _perturb(self, item: JudgeItem, rng: np.random.Generator, seed: int) -> Perturbation:
        rubric = item.rubric
        k = len(rubric.factors)
        mode = self.mode
        if mode == "random":
            mode = ("reorder", "reword", "both")[int(rng.integers(3))] if k > 1 else "reword"
        if mode in ("reorder", "both") and k < 2:
            raise InputError(
                f"The 'mode' {mode!r} of SchematicGenerator needs a rubric with at least 2 factors; "
                f"item {item.item_id!r} has {k}."
            )
        factors: Sequence[str] = rubric.factors
        if mode in ("reorder", "both"):
            perm = rng.permutation(k)
            while np.array_equal(perm, np.arange(k)):
                perm = rng.permutation(k)
            factors = tuple(rubric.factors[i] for i in perm)
        emphasis = dict(rubric.emphasis)
        reworded: dict[str, dict[str, str]] = {}
        if mode in ("reword", "both"):
            picks = rng.choice(k, size=min(self.n_reworded, k), replace=False)
            for i in sorted(int(p) for p in picks):
                factor = rubric.factors[i]
                options = _alternatives(factor, emphasis[factor])
                new = options[int(rng.integers(len(options)))]
                reworded[factor] = {"before": emphasis[factor], "after": new}
                emphasis[factor] = new
        new_rubric = rubric.with_changes(factors=tuple(factors), emphasis=emphasis)  # keeps the kind
        parts = []
        if mode in ("reorder", "both"):
            parts.append("factor order " + " > ".join(rubric.factors) + "  ->  " + " > ".join(factors))
        if reworded:
            parts.append("emphasis reworded for " + ", ".join(reworded))
        details = {
            "seed": seed,
            "mode": mode,
            "order_before": list(rubric.factors),
            "order_after": list(factors),
            "reworded": reworded,
        }
        return self._result(item.with_changes(rubric=new_rubric, variant=self.name), "schematic: " + "; ".join(parts), details)

"""Position-swap neighbours for pairwise judging: Assistant A and B trade places."""

from __future__ import annotations

import numpy as np

from biasbound._exceptions import InputError
from biasbound.neighbors.base import JudgeItem, NeighborGenerator, Perturbation

__all__ = ["SwapGenerator"]


class SwapGenerator(NeighborGenerator):
    """Flip which answer is Assistant A (game 1 <-> game 2); texts and rubric untouched.

    Parameters
    ----------
    seed:
        Recorded for uniformity; the swap itself is deterministic.

    Notes
    -----
    Pairwise items only: a single-answer item (``baseline is None``) raises
    :class:`biasbound.InputError`, because it has no position to swap.
    """

    name = "swap"

    def _perturb(self, item: JudgeItem, rng: np.random.Generator, seed: int) -> Perturbation:
        if item.baseline is None:
            raise InputError(
                f"The 'item' parameter of SwapGenerator.perturb must be a pairwise item (baseline not None); "
                f"item {item.item_id!r} is single-answer."
            )
        new_game = 2 if item.game == 1 else 1
        a_is = "the evaluated answer" if new_game == 2 else "the baseline"
        return self._result(
            item.with_changes(game=new_game),
            f"position swap: game {item.game} -> game {new_game} (Assistant A is now {a_is})",
            {"seed": seed, "game_before": item.game, "game_after": new_game},
        )

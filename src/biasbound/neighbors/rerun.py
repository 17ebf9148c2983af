"""Rerun neighbours: the same input judged again (intrinsic judge jitter)."""

from __future__ import annotations

import numpy as np

from biasbound.neighbors.base import JudgeItem, NeighborGenerator, Perturbation

__all__ = ["RerunGenerator"]


class RerunGenerator(NeighborGenerator):
    """Return the same item with ``rerun`` index + 1; the judge then uses seed base + rerun.

    Parameters
    ----------
    seed:
        Recorded for uniformity; the rerun step itself is deterministic.

    Notes
    -----
    The distance between a judgment and its rerun measures intrinsic jitter, which
    ``biasbound.sensitivity.context_adjusted_rms`` removes from the other generators.
    """

    name = "rerun"

    def _perturb(self, item: JudgeItem, rng: np.random.Generator, seed: int) -> Perturbation:
        new = item.rerun + 1
        return self._result(
            item.with_changes(rerun=new),
            f"rerun {item.rerun} -> {new} (same input, new judge sampling seed)",
            {"seed": seed, "rerun_before": item.rerun, "rerun_after": new},
        )

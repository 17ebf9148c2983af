"""A judge with known error beside known human truth, for the human-anchored estimators' tests and benchmarks.

Each of ``n_items`` items has a human label ``y`` (1 with probability ``prevalence``); the judge's verdict equals it with
probability ``accuracy`` (independently per item) and is the other verdict otherwise. The human mean over the batch is
known exactly, so an interval's coverage can be counted over seeded label draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biasbound._validation import check_in_range, check_int, resolve_rng

__all__ = ["KnownTruth", "known_truth", "label_draw"]


@dataclass(frozen=True)
class KnownTruth:
    """Human labels ``y`` and the judge's verdicts ``f`` of every item (0/1), and the truth ``mean(y)``."""

    y: np.ndarray
    f: np.ndarray
    accuracy: float

    @property
    def truth(self) -> float:
        return float(self.y.mean())


def known_truth(n_items: int, *, accuracy: float, prevalence: float = 0.5,
                rng: np.random.Generator | int | None = None) -> KnownTruth:
    """A batch of ``n_items`` binary items with human truth and a judge right with probability ``accuracy``."""
    n_items = check_int(n_items, "n_items", "known_truth", low=4)
    accuracy = check_in_range(accuracy, "accuracy", "known_truth", low=0.0, high=1.0)
    prevalence = check_in_range(prevalence, "prevalence", "known_truth", low=0.0, high=1.0)
    gen, _ = resolve_rng(rng)
    y = (gen.random(n_items) < prevalence).astype(float)
    right = gen.random(n_items) < accuracy
    return KnownTruth(y=y, f=np.where(right, y, 1.0 - y), accuracy=accuracy)


def label_draw(n_items: int, n_labels: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform random subset of ``n_labels`` of ``n_items`` items, as a boolean mask (the design PPI assumes)."""
    mask = np.zeros(n_items, dtype=bool)
    mask[rng.choice(n_items, size=n_labels, replace=False)] = True
    return mask

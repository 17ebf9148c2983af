"""The judge card's figures from rerun rows folded block by block (issue 24: a table too large to hold whole).

A table read in blocks of whole models (every row of a set of models: every judge, rerun, variant and game) keeps
its rerun-0 rows (``frame0``) and reduces each block's rerun >= 1 rows, per judge, to a :class:`CardFold`
(:func:`biasbound.card.card_fold`): what the judge card reads of them. :func:`merge_folds` joins the folds of blocks
of disjoint model sets, and ``judge_card(frame0, result, folds={judge: fold})`` gives the card
``judge_card(full_frame, result)`` gives.

The card's rerun figures always come from a fold: on a whole table the card folds the judge's own rerun pairs
(:func:`fold_pairs`) and reads the figures from that fold, so the two routes share every line that forms them.
This module imports nothing of the card (which imports it): the pairs and their per-(rerun, model) sums come in
as arrays.

What a fold holds and why it is exact:

* rows, scored judgments and the distinct scores (up to ``DISCRETE_LEVELS + 1`` of them, enough to decide whether
  the table's scores are continuous) of the rerun >= 1 rows: counts add; a union of distinct values is exact;
* the ``rerun`` generator's pairs as :func:`biasbound.neighbors.observed_neighbors` pairs them: each rerun row with
  its model's rerun-0 row, so within the block of that model. Pair and missing counts, flips under both verdict
  rules (the rule is the whole table's, unknown per block), strict reversals: counts add;
* per model name, the mean of the squared differences as :func:`biasbound.card._delta_star` forms it (a model's
  pairs are all in one block, in table order: the same numbers), Δ* being the root of their maximum;
* per (rerun number, model name) the original and neighbour sums the all-items rounds use (formed by the
  card's own ``_round_sums`` on the model's pairs, in table order: the same numbers);
* the mean shift's (n, mean, M2, min, max): merged by Chan et al.'s pairwise update, in an order fixed by the folds'
  model names (so any order of blocks gives the same bits). A merged mean and M2 differ from those of the whole
  array by rounding only (a few ulps: relative 1e-15 for these sizes), hence the one figure not equal to the bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["DISCRETE_LEVELS", "CardFold", "fold_pairs", "merge_folds"]

#: Shifts that are multiples of 1/_GRID are summed exactly (:class:`_Shift`).
_GRID = 256.0

#: More distinct score values than this and the scores are read as continuous (as the score plots do): a verdict
#: is then the side of 0.5 a score falls on, since any change of a continuous score would count as a flip.
DISCRETE_LEVELS = 12


@dataclass(frozen=True)
class _Shift:
    """Sufficient statistics of the mean signed shift (neighbour − original): n, mean, M2 = Σ(x − mean)², min, max,
    and the sums Σx, Σx² with whether every shift is a multiple of 2^-8 (scores on a grid: quarters, tenths of an
    eighth...). On such a grid the sums are exact in any order, so the mean and M2 formed from them are the same bits
    whichever blocks the pairs came in; otherwise Chan's update merges (n, mean, M2) to about 1e-16."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float = float("inf")
    high: float = float("-inf")
    total: float = 0.0
    total2: float = 0.0
    exact: bool = True

    @classmethod
    def of(cls, x: np.ndarray) -> _Shift:
        if x.size == 0:
            return cls()
        scaled = x * _GRID
        exact = bool(np.all(np.abs(x) <= 4.0) and np.all(scaled == np.round(scaled)) and x.size < 2**30)
        mean = float(np.mean(x))  # ttest_1samp's own mean (numpy's pairwise sum): a single fold's value is the old one
        return cls(int(x.size), mean, float(np.sum((x - mean) ** 2)), float(np.min(x)), float(np.max(x)),
                   float(np.sum(x)), float(np.sum(x * x)), exact)

    def merge(self, other: _Shift) -> _Shift:
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n / n)
        m2 = self.m2 + other.m2 + delta * delta * (self.n * other.n / n)
        return _Shift(n, mean, m2, min(self.low, other.low), max(self.high, other.high), self.total + other.total,
                      self.total2 + other.total2, self.exact and other.exact and n < 2**30)

    def moments(self) -> tuple[float, float]:
        """(mean, M2): from the exact sums on a grid (the same bits for any split into blocks), else as merged."""
        if self.exact and self.n:
            return self.total / self.n, max(self.total2 - self.total * self.total / self.n, 0.0)
        return self.mean, self.m2

    def interval(self, level: float) -> dict[str, Any]:
        """The mean with the t interval :func:`scipy.stats.ttest_1samp` gives (t quantile × standard error + mean);
        degenerate (lo = hi = mean) when every value is equal."""
        if self.n == 0:
            return {"value": None, "lo": None, "hi": None, "n": 0}
        m, m2 = self.moments()
        if self.n < 2 or self.low == self.high:
            return {"value": m, "lo": m, "hi": m, "n": self.n}
        se = float(np.sqrt(m2 / (self.n - 1) / self.n))
        tail = (1.0 - level) / 2.0
        q_lo, q_hi = stats.t.ppf([tail, 1.0 - tail], self.n - 1)
        return {"value": m, "lo": float(q_lo * se + m), "hi": float(q_hi * se + m), "n": self.n}


@dataclass(frozen=True)
class CardFold:
    """What one judge's rerun >= 1 rows of a block (or of several blocks, merged) tell the judge card."""

    rows: int = 0  # rerun >= 1 rows
    scored: int = 0  # of them with a score
    scores: tuple[float, ...] = ()  # their distinct scores, sorted, at most DISCRETE_LEVELS + 1
    pairs: int = 0  # rerun pairs with both sides present
    missing: int = 0  # rerun neighbours with a side missing
    flips_level: int = 0  # pairs whose score level changes (discrete verdict rule)
    flips_side: int = 0  # pairs whose side of 0.5 changes (continuous verdict rule)
    reversals: int = 0  # pairs on opposite sides of 0.5
    shift: _Shift = field(default_factory=_Shift)
    model_sq_mean: Mapping[str, float] = field(default_factory=dict)  # per model: mean squared difference (Δ*)
    rounds: Mapping[int, Mapping[str, tuple[float, float]]] = field(default_factory=dict)  # rerun -> model -> sums

    def delta_star(self) -> float | None:
        """Δ* of the rerun pairs: the root of the largest per-model mean squared difference (as ``_delta_star``)."""
        if self.pairs == 0:
            return None
        return float(np.sqrt(pd.Series(list(self.model_sq_mean.values()), dtype=float).max()))

    def _order_key(self) -> tuple[Any, ...]:
        names = sorted(self.model_sq_mean) or sorted({m for r in self.rounds.values() for m in r})
        return (names[0] if names else "", self.shift.n, self.shift.mean, self.shift.m2, self.rows, self.scored)


def cap_scores(values: np.ndarray) -> tuple[float, ...]:
    """The distinct values, sorted, at most ``DISCRETE_LEVELS + 1`` of them (enough to decide the verdict rule)."""
    return tuple(float(v) for v in np.unique(values)[: DISCRETE_LEVELS + 1])


def fold_pairs(original: np.ndarray, neighbor: np.ndarray, m: np.ndarray, missing: int, model_names: np.ndarray,
               round_sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> CardFold:
    """The statistics of one judge's rerun pairs (both sides present; ``m`` the model code into ``model_names``,
    -1 = a missing model id: no model's figure, as a pandas group drops a missing key; ``missing`` the neighbours
    with a side missing). ``round_sums``: ``card._round_sums`` of these pairs (reruns, key = rerun index ×
    (len(model_names) + 1) + code + 1, the original and neighbour sums)."""
    o, n_ = original, neighbor
    per = pd.Series((o - n_) ** 2).groupby(np.where(m >= 0, m, np.nan)).mean()  # as card._delta_star groups
    sq = {str(model_names[int(c)]): float(v) for c, v in zip(per.index, per.to_numpy())}
    rounds: dict[int, dict[str, tuple[float, float]]] = {}
    n_codes = len(model_names) + 1
    reruns, key, o_by, n_by = round_sums
    for r, k, a, b in zip(reruns[key // n_codes], key, o_by, n_by):
        code = int(k % n_codes) - 1
        if code >= 0:
            rounds.setdefault(int(r), {})[str(model_names[code])] = (float(a), float(b))
    return CardFold(pairs=int(o.size), missing=int(missing),
                    flips_level=int(np.count_nonzero(np.abs(o - n_) > 1e-12)),
                    flips_side=int(np.count_nonzero(np.sign(o - 0.5) != np.sign(n_ - 0.5))),
                    reversals=int(np.count_nonzero((o - 0.5) * (n_ - 0.5) < 0)),
                    shift=_Shift.of(n_ - o), model_sq_mean=sq, rounds=rounds)


def merge_folds(folds: Sequence[CardFold]) -> CardFold:
    """The fold of the union of blocks of disjoint model sets (any order of ``folds`` gives the same fold: the mean
    shift's statistics are combined in the order of the folds' model names)."""
    ordered = sorted(folds, key=CardFold._order_key)
    shift = _Shift()
    sq: dict[str, float] = {}
    rounds: dict[int, dict[str, tuple[float, float]]] = {}
    for f in ordered:
        shift = shift.merge(f.shift)
        sq.update(f.model_sq_mean)
        for r, per in f.rounds.items():
            rounds.setdefault(r, {}).update(per)
    scores = np.asarray(sorted({s for f in folds for s in f.scores}), dtype=float)
    return CardFold(rows=sum(f.rows for f in folds), scored=sum(f.scored for f in folds), scores=cap_scores(scores),
                    pairs=sum(f.pairs for f in folds), missing=sum(f.missing for f in folds),
                    flips_level=sum(f.flips_level for f in folds), flips_side=sum(f.flips_side for f in folds),
                    reversals=sum(f.reversals for f in folds), shift=shift, model_sq_mean=sq,
                    rounds={r: rounds[r] for r in sorted(rounds)})

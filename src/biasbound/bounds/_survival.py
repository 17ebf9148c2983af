"""Worst-case survival ``Pr[||Delta|| > t]`` of each knowledge kind (private; each record's ``survivals`` calls its own).

One function per kind, at every threshold of ``t`` at once: the count of a population or sample above each threshold
is one ``searchsorted`` in its sorted values. :mod:`biasbound.figures` combines them over records and generators (the
bias radius). Proof: ``docs/proofs/figures.md``. numpy only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from biasbound.bounds._band import band

# ``r`` is typed Any: this module is a leaf below bounds._knowledge (whose records call it with themselves), so it
# imports no record type (tests/cli/test_import_graph.py counts every import, TYPE_CHECKING ones too).


def almost_sure(r: Any, t: np.ndarray) -> np.ndarray:
    return np.where(r.A > t, 1.0, 0.0)


def moments(r: Any, t: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        markov = np.minimum(1.0, r.U2 / (t * t))  # [proof:radius-markov]
    out = np.where(t == 0, 1.0 if r.U2 > 0 else 0.0, markov)
    return out if r.A is None else np.where(r.A <= t, 0.0, out)


def high_probability(r: Any, t: np.ndarray) -> np.ndarray:
    return np.where(t >= r.A, float(r.eps), 1.0)  # [proof:radius-high-probability]


def random_judge(r: Any, t: np.ndarray) -> np.ndarray:
    t2 = t * t
    if r.k > 1:  # the k-item sum: the tail of its Chernoff layer-cake distribution
        xs, w = r.worst_distribution()
        upper = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
        return np.minimum(1.0, upper[np.searchsorted(xs, t2, side="right")])  # [proof:radius-random-judge-k]
    j = np.searchsorted(r.levels, t2, side="right")  # levels <= t²: Pr[x > t²] <= Pr[x > x_j]
    up = np.asarray(r.upper, dtype=float)
    return np.where(j >= up.size, 0.0, up[np.minimum(j, up.size - 1)])  # [proof:radius-random-judge]


def _above(sq_norms: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``#{x > t^2}`` at every threshold."""
    x = np.sort(np.asarray(sq_norms, dtype=float))
    return x.size - np.searchsorted(x, t * t, side="right")


def full_population(r: Any, t: np.ndarray) -> np.ndarray:
    if r.weights is not None:  # T's probability of each value (Hamming-k law)
        order = np.argsort(np.asarray(r.sq_norms, dtype=float), kind="stable")
        xs, w = np.asarray(r.sq_norms, dtype=float)[order], np.asarray(r.weights, dtype=float)[order]
        upper = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])  # upper[i] = weight of the values from i on
        return np.minimum(1.0, upper[np.searchsorted(xs, t * t, side="right")])  # [proof:radius-exact]
    return _above(r.sq_norms, t).astype(float) / r.m  # [proof:radius-exact]


def sample(r: Any, t: np.ndarray) -> np.ndarray:
    kup = band(r.population_size, r.m, r.beta)
    out = np.minimum(1.0, kup[_above(r.sq_norms, t)].astype(float) / r.population_size)  # [proof:radius-band]
    return out if r.A is None else np.where(r.A <= t, 0.0, out)

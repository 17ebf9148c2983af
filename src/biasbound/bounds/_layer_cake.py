"""A random judge's worst distribution inside its tail bounds (private; :mod:`random_judge` is the unit).

A leaf module (numpy only): the record (:meth:`biasbound.bounds.RandomJudge.worst_distribution`) computes it once,
and the unit, the record's survival and its jump points read it. Proof: ``docs/proofs/random_judge.md``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["worst_law"]


def worst_law(levels: np.ndarray, upper: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values, weights)``: mass ``1 - q_1^+`` at 0, ``q_j^+ - q_{j+1}^+`` at ``x_j`` and ``q_K^+`` at ``x_K``; for ``k``
    items at once the k-item sum's Chernoff tail (``docs/proofs/concentration.md``)."""
    up = upper
    x = np.concatenate([[0.0], levels])
    w = np.maximum(np.concatenate([[1.0 - up[0]], up[:-1] - up[1:], [up[-1]]]), 0.0)  # [proof:rj-layer-cake]
    if k > 1:  # Hamming-k, model view: the k-item sum's Chernoff tail (docs/proofs/concentration.md)
        from biasbound.bounds._concentration import sum_tail_distribution

        x, w = sum_tail_distribution(x, w, k)
    return x, w

"""Known-law scenarios for the random judge's concentration routes, shared by tests/bounds/test_concentration.py and
benchmarks/bench_random_judge_routes.py (docs/proofs/concentration.md): the exact probabilities a bound is checked
against, computed by enumeration and convolution, never by simulation."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2, ncx2

#: The three (alpha, sigma) points at which the Hamming-k scenarios compare a bound with the truth.
HAMMING_POINTS = ((1.0, 0.0), (0.5, 0.1), (0.25, 0.15))


def noisy_tail(q: np.ndarray, tau: float, sigma: float, dim: int) -> np.ndarray:
    """Pr[||x + N(0, sigma^2 I_dim)|| > tau] for ||x||^2 = q: the noncentral chi-square tail (a step at sigma = 0)."""
    q = np.asarray(q, dtype=float)
    if sigma == 0:
        return (q > tau * tau).astype(float)
    s2 = 2 * sigma * sigma
    return np.where(q > 0, ncx2.sf(tau * tau / s2, dim, np.maximum(q / s2, 1e-300)), chi2.sf(tau * tau / s2, dim))


def hamming_truth(laws: np.ndarray, k: int, alpha: float, sigma: float, tau: float, dim: int, L: int) -> float:
    """Exact Pr over a uniform k-subset of the items, each answered afresh by its law on |Δ| = j/L, and the noise."""
    n = laws.shape[0]
    total = 0.0
    subsets = list(itertools.combinations(range(n), k))
    for sub in subsets:
        law = np.array([1.0])
        for i in sub:  # the law of sum of j_i^2 (L² ||Δ_S||²) by convolution
            one = np.zeros(L * L + 1)
            one[np.arange(L + 1) ** 2] = laws[i]
            law = np.convolve(law, one)
        q = np.arange(law.size) / (L * L)
        total += float(np.dot(law, noisy_tail(alpha * alpha * q, tau, sigma, dim)))
    return total / len(subsets)


def recorded_tail_sums(laws: np.ndarray, L: int, rng: np.random.Generator) -> np.ndarray:
    """One recorded draw of a RandomJudge's ``sums``: 1-3 answers per item from its law, per level j the item's share
    of answers with |Δ| >= j/L, summed over items."""
    sums = np.zeros(L)
    for i in range(laws.shape[0]):
        d = rng.choice(L + 1, size=int(rng.integers(1, 4)), p=laws[i])
        sums += np.array([(d >= j).mean() for j in range(1, L + 1)])
    return sums


def square_law(p: np.ndarray, step: np.ndarray, scale: int) -> np.ndarray:
    """The exact law of (scale * Delta_j)^2, an integer, for Delta_j = sum_p step_p B_p / n (B_p ~ Bernoulli(p_p), steps
    multiples of 1/4, scale = 4 n): index m holds Pr[(scale Delta_j)^2 = m]."""
    law = np.array([1.0])
    lo = 0
    for pp, st in zip(p, step):
        j = round(st * 4)
        one = np.zeros(abs(j) + 1)
        one[max(0, -j)] += 1 - pp  # value 0
        one[max(0, j)] += pp  # value j
        lo += min(j, 0)
        law = np.convolve(law, one)
    vals = lo + np.arange(law.size)  # scale * Delta_j
    out = np.zeros(int(np.max(vals**2)) + 1)
    np.add.at(out, vals**2, law)
    return out


@dataclass(frozen=True)
class HeavyShifts:
    """Three models of 40 items each; two models' items flip with probability 0.5-0.9 by half a point to a point, the
    third rarely (seed 31). ``v`` bounds the variance sums by the true second moments; ``above[m]`` is the exact
    Pr[scale^2 ||Delta||^2 >= m] (the models are independent: the law by convolution)."""

    p: np.ndarray
    step: np.ndarray
    a: float
    scale: int
    v: np.ndarray
    above: np.ndarray

    def pr_above(self, A: float) -> float:
        """Exact Pr[||Delta|| > A] for a new draw."""
        m = int(np.floor(A * A * self.scale * self.scale)) + 1  # ||Delta||^2 > A^2
        return float(self.above[m]) if m < self.above.size else 0.0

    def recorded_shift(self, seed: int) -> np.ndarray:
        """One recorded draw's |Delta_j| per model."""
        draw = np.random.default_rng([31, seed]).random(self.p.shape) < self.p
        return np.abs(self.a * np.sum(np.where(draw, self.step, 0.0), axis=1))


def heavy_shifts() -> HeavyShifts:
    rng = np.random.default_rng(31)
    n_models, n_items = 3, 40
    a, scale = 1.0 / n_items, 4 * n_items
    heavy = np.array([True, True, False])
    p = np.where(heavy[:, None], rng.uniform(0.5, 0.9, (n_models, n_items)), rng.uniform(0.0, 0.05, (n_models, n_items)))
    step = rng.choice([-1.0, -0.75, -0.5, 0.5, 0.75, 1.0], size=(n_models, n_items))
    law = np.array([1.0])
    for j in range(n_models):
        law = np.convolve(law, square_law(p[j], step[j], scale))
    above = np.cumsum(law[::-1])[::-1]
    v = np.array([a * a * float(np.sum(p[j] * step[j] ** 2)) for j in range(n_models)])
    return HeavyShifts(p=p, step=step, a=a, scale=scale, v=v, above=above)

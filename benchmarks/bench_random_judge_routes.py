"""The random judge's concentration routes (docs/proofs/concentration.md) at scale: false shares over many seeded
recorded draws with known per-item laws, and the demo's α before/after each route.

Not a test: prints, per scenario, the number of trials, the false count, the share with its binomial 99.9% upper
limit, and the level β the statement allows (a route is wrong if the share's lower limit is above β).

* ``hamming``: a ``RandomJudge`` record with ``k > 1`` from 1-3 recorded draws per item of known laws (few items, one
  binding level, k near d), the unit's bound against the exact probability (enumerated over k-subsets and answers)
  at three (α, σ) points; a trial is false when any point's bound is below the truth.
* ``norm``: ``norm_route`` at (β, ε) with the true second moments as variance bounds; a trial is false when the exact
  ``Pr_new[||Δ|| > A]`` (convolution) exceeds ε. Heavy shifts on few models.

Run: ``python benchmarks/bench_random_judge_routes.py [--trials 2000]``.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import time

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import chi2, ncx2

from biasbound.bounds import RandomJudge, random_judge
from biasbound.bounds._concentration import norm_deviation


def _tail(q: np.ndarray, tau: float, sigma: float, dim: int) -> np.ndarray:
    if sigma == 0:
        return (q > tau * tau).astype(float)
    s2 = 2 * sigma * sigma
    return np.where(q > 0, ncx2.sf(tau * tau / s2, dim, np.maximum(q / s2, 1e-300)), chi2.sf(tau * tau / s2, dim))


def _upper(false: int, n: int, level: float = 1e-3) -> float:
    """Clopper–Pearson upper limit at 1 - level."""
    return 1.0 if false >= n else float(beta_dist.ppf(1 - level, false + 1, n - false))


def _lower(false: int, n: int, level: float = 1e-3) -> float:
    return 0.0 if false == 0 else float(beta_dist.ppf(level, false, n - false + 1))


def hamming(trials: int, n: int, k: int, L: int, laws: np.ndarray, beta: float) -> tuple[int, int]:
    tau, dim = 0.5, n
    points = ((1.0, 0.0), (0.5, 0.1), (0.25, 0.15))
    truth = []
    subsets = list(itertools.combinations(range(n), k))
    for a, s in points:
        tot = 0.0
        for sub in subsets:
            law = np.array([1.0])
            for i in sub:
                one = np.zeros(L * L + 1)
                one[np.arange(L + 1) ** 2] = laws[i]
                law = np.convolve(law, one)
            tot += float(np.dot(law, _tail(a * a * np.arange(law.size) / (L * L), tau, s, dim)))
        truth.append(tot / len(subsets))
    levels = (np.arange(1, L + 1) / L) ** 2
    false = 0
    for t in range(trials):
        r = np.random.default_rng([77, n, k, L, t])
        sums = np.zeros(L)
        for i in range(n):
            d = r.choice(L + 1, size=int(r.integers(1, 4)), p=laws[i])
            sums += np.array([(d >= j).mean() for j in range(1, L + 1)])
        rec = RandomJudge(levels=levels, sums=sums, n=n, beta=beta, k=k)
        false += any(random_judge.violation_bound(tau, a, s, dim, rec) < tr - 1e-12 for (a, s), tr in zip(points, truth))
    return false, trials


def norm(trials: int, beta: float, eps: float) -> tuple[int, int]:
    rng = np.random.default_rng(31)
    n_models, n_items = 3, 40
    a, scale = 1.0 / n_items, 4 * n_items
    heavy = np.array([True, True, False])
    p = np.where(heavy[:, None], rng.uniform(0.5, 0.9, (n_models, n_items)), rng.uniform(0.0, 0.05, (n_models, n_items)))
    step = rng.choice([-1.0, -0.75, -0.5, 0.5, 0.75, 1.0], size=(n_models, n_items))
    total = np.array([1.0])
    for j in range(n_models):
        law, lo = np.array([1.0]), 0
        for pp, st in zip(p[j], step[j]):
            jj = round(st * 4)
            one = np.zeros(abs(jj) + 1)
            one[max(0, -jj)] += 1 - pp
            one[max(0, jj)] += pp
            lo += min(jj, 0)
            law = np.convolve(law, one)
        vals = lo + np.arange(law.size)
        sq = np.zeros(int(np.max(vals**2)) + 1)
        np.add.at(sq, vals**2, law)
        total = np.convolve(total, sq)
    above = np.cumsum(total[::-1])[::-1]
    v = np.array([a * a * float(np.sum(p[j] * step[j] ** 2)) for j in range(n_models)])
    c, R = np.full(n_models, 2 * a), np.full(n_models, 2.0)
    r_new, r_rec = norm_deviation(v, c, R, eps), norm_deviation(v, c, R, beta)
    false = 0
    for t in range(trials):
        draw = np.random.default_rng([31, t]).random((n_models, n_items)) < p
        A = float(np.linalg.norm(np.abs(a * np.sum(np.where(draw, step, 0.0), axis=1)))) + r_rec + r_new
        m = math.floor(A * A * scale * scale) + 1
        false += (float(above[m]) if m < above.size else 0.0) > eps
    return false, trials


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    args = ap.parse_args()
    t0, c0 = time.time(), time.process_time()
    rows = []
    p1 = np.where(np.arange(10) < 3, 0.4, 0.02)
    rows.append(("hamming one binding level (10 items, k=4, L=1)", *hamming(args.trials, 10, 4, 1,
                                                                           np.stack([1 - p1, p1], axis=1), 0.2), 0.2))
    laws = np.random.default_rng(2026).dirichlet(np.r_[8.0, np.full(4, 0.3)], size=8)
    rows.append(("hamming k near d (8 items, k=7, L=4)", *hamming(args.trials, 8, 7, 4, laws, 0.2), 0.2))
    rows.append(("norm route, heavy on 2 of 3 models (beta=0.3, eps=0.1)", *norm(args.trials, 0.3, 0.1), 0.3))
    rows.append(("norm route, heavy on 2 of 3 models (beta=0.5, eps=0.3)", *norm(args.trials, 0.5, 0.3), 0.5))
    for name, f, n, b in rows:
        print(f"{name}: {f}/{n} false, share {f / n:.4f} (99.9% limits {_lower(f, n):.4f}-{_upper(f, n):.4f}); "
              f"allowed beta {b}")
    print(f"wall {time.time() - t0:.1f} s, CPU {time.process_time() - c0:.1f} s, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

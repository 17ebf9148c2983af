"""The random judge's concentration routes (docs/proofs/concentration.md) at scale: false shares over many seeded
recorded draws with known per-item laws, and the demo's α before/after each route.

Not a test: prints, per scenario, the number of trials, the false count, the share with its binomial 99.9% upper
limit, and the level β the statement allows (a route is wrong if the share's lower limit is above β).

* ``hamming``: a ``RandomJudge`` record with ``k > 1`` from 1-3 recorded draws per item of known laws (few items, one
  binding level, k near d), the unit's bound against the exact probability (enumerated over k-subsets and answers)
  at three (α, σ) points; a trial is false when any point's bound is below the truth.
* ``norm``: ``norm_route`` at (β, ε) with the true second moments as variance bounds; a trial is false when the exact
  ``Pr_new[||Δ|| > A]`` (convolution) exceeds ε. Heavy shifts on few models.

The scenarios and their exact laws live in tests/known_laws.py, shared with tests/bounds/test_concentration.py.

Run: ``python benchmarks/bench_random_judge_routes.py [--trials 2000]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import beta as beta_dist

from biasbound.bounds import RandomJudge, random_judge
from biasbound.bounds._concentration import norm_deviation

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from known_laws import HAMMING_POINTS, hamming_truth, heavy_shifts, recorded_tail_sums  # noqa: E402  (tests/)


def _upper(false: int, n: int, level: float = 1e-3) -> float:
    """Clopper–Pearson upper limit at 1 - level."""
    return 1.0 if false >= n else float(beta_dist.ppf(1 - level, false + 1, n - false))


def _lower(false: int, n: int, level: float = 1e-3) -> float:
    return 0.0 if false == 0 else float(beta_dist.ppf(level, false, n - false + 1))


def hamming(trials: int, n: int, k: int, L: int, laws: np.ndarray, beta: float) -> tuple[int, int]:
    tau, dim = 0.5, n
    truth = [hamming_truth(laws, k, a, s, tau, dim, L) for a, s in HAMMING_POINTS]
    levels = (np.arange(1, L + 1) / L) ** 2
    false = 0
    for t in range(trials):
        sums = recorded_tail_sums(laws, L, np.random.default_rng([77, n, k, L, t]))
        rec = RandomJudge(levels=levels, sums=sums, n=n, beta=beta, k=k)
        false += any(random_judge.violation_bound(tau, a, s, dim, rec) < tr - 1e-12
                     for (a, s), tr in zip(HAMMING_POINTS, truth))
    return false, trials


def norm(trials: int, beta: float, eps: float) -> tuple[int, int]:
    law = heavy_shifts()
    n_models = law.p.shape[0]
    c, R = np.full(n_models, 2 * law.a), np.full(n_models, 2.0)
    r_new, r_rec = norm_deviation(law.v, c, R, eps), norm_deviation(law.v, c, R, beta)
    false = 0
    for t in range(trials):
        A = float(np.linalg.norm(law.recorded_shift(t))) + r_rec + r_new
        false += law.pr_above(A) > eps
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

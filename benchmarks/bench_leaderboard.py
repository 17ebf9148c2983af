"""Benchmark: leaderboard statistics on the embedded set (76 models × 500 questions, 76,000 rows).

Times the 1000-round item bootstrap of the model means (biasbound.leaderboard.bootstrap_means
on the 76 × 500 game-1 score matrix), the Arena-Hard win rate with its 1000-round question
bootstrap, and Bradley–Terry with 1000 rounds. Target: the mean bootstrap well under a second.

Run: python benchmarks/bench_leaderboard.py
"""

from __future__ import annotations

import time

import numpy as np

from bench_certify import machine


def main() -> None:
    from biasbound.data.embedded import load_demo
    from biasbound.leaderboard import arena_hard_winrate, bootstrap_means, bradley_terry

    print(machine())
    frame = load_demo().frame
    g1 = frame[frame["game"] == 1]
    mat = g1.pivot_table(index="model", columns="item_id", values="score", aggfunc="first", dropna=False).to_numpy(float)
    print(f"matrix: {mat.shape[0]} models x {mat.shape[1]} items, {int(np.isnan(mat).sum())} missing")
    for name, fn in (
        ("bootstrap_means (1000 rounds)", lambda: bootstrap_means(mat, rounds=1000, rng=0)),
        ("arena_hard_winrate (1000 rounds)", lambda: arena_hard_winrate(frame, rounds=1000, rng=0)),
        ("bradley_terry (1000 rounds)", lambda: bradley_terry(frame, rounds=1000, rng=0)),
    ):
        best = min(_timed(fn) for _ in range(3))
        print(f"{name}: {best * 1000:.0f} ms (best of 3)")


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()

"""Benchmark: leaderboard statistics on the embedded set (76 models × 500 questions, 76,000 rows).

Times the 1000-round item bootstrap of the model means (biasbound.leaderboard.bootstrap_means
on the 76 × 500 game-1 score matrix), the Arena-Hard win rate with its 1000-round question
bootstrap, Bradley–Terry with 1000 rounds, and the win rate + Bradley–Terry pair as
``certify`` computes it (one shared bootstrap). Target: well under a second.

Wall time depends on what else runs on the machine: the CPU time of each call
(time.process_time) and the load average (1 min) are printed beside it.

Run: python benchmarks/bench_leaderboard.py
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bench_certify import machine


def main() -> None:
    import sklearn.linear_model  # noqa: F401  (import time excluded; Bradley–Terry imports it lazily)

    from biasbound import leaderboard as lb
    from biasbound.data.embedded import load_demo
    from biasbound.leaderboard import arena_hard_winrate, bootstrap_means, bradley_terry

    print(machine())
    frame = load_demo().frame
    g1 = frame[frame["game"] == 1]
    mat = g1.pivot_table(index="model", columns="item_id", values="score", aggfunc="first", dropna=False).to_numpy(float)
    print(f"matrix: {mat.shape[0]} models x {mat.shape[1]} items, {int(np.isnan(mat).sum())} missing")

    def both() -> Any:
        wr, battles = lb._winrate(frame, baseline=None, rounds=1000, level=0.95, weight=3, rng=0,
                                  where="arena_hard_winrate")
        return wr, lb._bradley_terry_from(wr, battles, None)

    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    for name, fn in (
        ("bootstrap_means (1000 rounds)", lambda: bootstrap_means(mat, rounds=1000, rng=0)),
        ("arena_hard_winrate (1000 rounds)", lambda: arena_hard_winrate(frame, rounds=1000, rng=0)),
        ("bradley_terry (1000 rounds)", lambda: bradley_terry(frame, rounds=1000, rng=0)),
        ("win rate + Bradley–Terry, one bootstrap (as in certify)", both),
    ):
        wall, cpu = min(_timed(fn) for _ in range(3))
        print(f"{name}: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (best of 3)")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


if __name__ == "__main__":
    main()

"""Benchmark: certify 10^6 judgment rows end to end (minus plots and the HTML report).

Synthetic generic long table: 200 models × 2500 items × 2 games (position swap), scores on
the Arena-Hard grid {0, .25, .5, .75, 1} drawn per model around a model strength, with ~0.5%
missing judgments. Steps timed: load_table from Parquet (the user's path), then
pipeline.certify (neighbours, sensitivity + UCB per model, calibration, mechanism, per-model
and pooled audits, 1000-round item bootstrap, win rate + Bradley–Terry, certificates,
scores.parquet, leaderboard.csv, retention.json). Peak RSS from resource.getrusage.

Run: python benchmarks/bench_certify.py [--models 200 --items 2500] [--repeat 1] [--profile] [--out DIR]
Targets: < 3 s and < 1.5 GB peak for certify.

Wall time depends on what else runs on the machine, so the load average (1 min) is printed
before and after, with the CPU time of the process during certify (time.process_time;
BLAS may use a second core, so CPU time can exceed wall time). Module imports are done
before timing (import time excluded). ``--out DIR`` keeps the outputs (to diff two versions).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def machine() -> str:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem = next(int(x.split()[1]) for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal"))
        ram = f"{mem / 2**20:.1f} GiB"
    except (OSError, StopIteration):
        ram = "?"
    return f"nproc={os.cpu_count()}, CPU={cpu}, RAM={ram}, python={platform.python_version()}"


def synthetic(models: int, items: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, models)
    difficulty = rng.normal(0, 1, items)
    bias = rng.normal(0, 0.4, models)  # position bias per model: game 2 shifted
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    n = models * items
    m_idx = np.repeat(np.arange(models), items)
    i_idx = np.tile(np.arange(items), models)
    frames = []
    for game in (1, 2):
        z = strength[m_idx] - difficulty[i_idx] + rng.normal(0, 1, n) + (bias[m_idx] if game == 2 else 0.0)
        cls = np.clip(np.round(1 / (1 + np.exp(-z)) * 4 + rng.normal(0, 0.5, n)), 0, 4).astype(int)
        score = grid[cls]
        score[rng.random(n) < 0.005] = np.nan
        frames.append(pd.DataFrame({
            "judge": "synthetic-judge", "model": np.char.add("model-", m_idx.astype(str)),
            "item_id": np.char.add("q", i_idx.astype(str)), "variant": "original", "rerun": 0, "game": game,
            "score": score,
        }))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--items", type=int, default=2500)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="certify this many times; report each and the best")
    ap.add_argument("--out", type=Path, default=None, help="keep the outputs of the first run here")
    args = ap.parse_args()
    # import time excluded: everything certify imports lazily
    import biasbound.pipeline  # noqa: F401
    import rich.progress  # noqa: F401
    import sklearn.linear_model  # noqa: F401  (Bradley–Terry)
    from biasbound import abb, audit, certificate, leaderboard, sensitivity  # noqa: F401
    from biasbound.neighbors import observed  # noqa: F401
    from biasbound.data.tables import load_table
    from biasbound.pipeline import certify

    print(machine())
    frame = synthetic(args.models, args.items)
    print(f"rows: {len(frame):,} ({args.models} models x {args.items} items x 2 games)")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "judgments.parquet"
        frame.to_parquet(path, index=False)
        del frame
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        t0 = time.perf_counter()
        js = load_table(path, scale=(0.0, 1.0))
        t1 = time.perf_counter()
        print(f"load_table (parquet): {t1 - t0:.2f} s")
        prof = cProfile.Profile() if args.profile else None
        walls, cpus = [], []
        for run in range(args.repeat):
            out = args.out if (args.out is not None and run == 0) else Path(tmp) / f"out{run}"
            load_before = os.getloadavg()[0]
            if prof:
                prof.enable()
            w, c = time.perf_counter(), time.process_time()
            res = certify(js, out=out, plots=False, progress=False, seed=0)
            w, c = time.perf_counter() - w, time.process_time() - c
            if prof:
                prof.disable()
            walls.append(w)
            cpus.append(c)
            print(f"certify end to end (no plots/report): {w:.2f} s wall, {c:.2f} s CPU "
                  f"(load average 1 min: {load_before:.2f} before, {os.getloadavg()[0]:.2f} after)")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
    if args.repeat > 1:
        print(f"best of {args.repeat}: {min(walls):.2f} s wall, {min(cpus):.2f} s CPU")
    j = next(iter(res.judges.values()))
    print(f"peak RSS: {peak:.0f} MiB (before loading: {base:.0f} MiB)")
    print(f"alpha={j.calibration.alpha:.4g} sigma={j.calibration.sigma:.4g} bound={j.calibration.bound_used} "
          f"pooled audit={j.pooled_audit.verdict} spearman={j.retention['spearman']:.4f}")
    if prof:
        pstats.Stats(prof).sort_stats("cumtime").print_stats(25)


if __name__ == "__main__":
    main()

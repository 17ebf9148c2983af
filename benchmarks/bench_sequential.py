"""Sequential judging on the embedded set replayed as a judge (issue 17's acceptance; a script, not a test).

The synthetic server replays the recorded verdicts of :func:`biasbound.data.load_demo` (76 models ×
500 questions, both games: ``SyntheticServerConfig(replay=...)``, inputs from
:func:`biasbound.testing.replay.write_replay_inputs`). Then:

1. the census: ``biasbound run`` with swap a census (every item judged in both games, 76,000 calls
   over HTTP); its certificate's α is the reference, and its cache holds every answer the replay judge
   can give;
2. per seed (``--seeds``): the fixed default (swap drawn, ``neighbors_per_generator: 50``), the
   sequential rule (swap drawn, ``sequential: {looks, min_gain}``) and ``biasbound plan`` on the fixed
   run as the pilot (grid = the looks). Each run starts from a copy of the census run's cache, so its
   judgments come from the cache: the calls a run *spends* are its judge requests (what a run without
   that cache would pay), counted per stage in ``run_summary.json``; the neighbour calls are compared.

Reported per seed: α (fixed, sequential, vs census), the look the rule stopped at, neighbour calls
(sequential / fixed), and the neighbour calls ``plan`` predicts the sequential rule spends (``plan PILOT
--looks ...``: the rule replayed on the pilot's draw at β/K) vs the sequential run's. Prints the machine and load.

Usage::

    python benchmarks/bench_sequential.py --seeds 20 [--models 76] [--looks 10,20,40] [--min-gain 0.01]
        [--workdir /tmp/bench_seq] [--no-plan]

Measured: README, "Sequential judging".
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
from pathlib import Path

import yaml

from biasbound.data import load_demo
from biasbound.data.embedded import DEMO_BASELINE
from biasbound.planning import plan
from biasbound.runner import run
from biasbound.testing import SyntheticServerConfig, serve_in_thread
from biasbound.testing.replay import write_replay_inputs


def _config(path: Path, table: Path, url: str, out: Path, neighbors: dict, seed: int) -> Path:
    cfg = {"data": {"table": str(table)},
           "judge": {"base_url": url, "model": "replay", "name": "ensemble", "api_key_env": "BIASBOUND_BENCH_UNSET_KEY",
                     "concurrency": 64, "cache_identity": "replay-demo"},
           "neighbors": neighbors, "bootstrap_rounds": 50, "plots": False, "seed": seed, "output": str(out)}
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _alpha(result) -> float:
    return float(result.certification.judges["ensemble"].calibration.alpha)


def _neighbor_requests(summary: dict) -> int:
    return int(summary["stages"].get("neighbors", {}).get("requests", 0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--models", type=int, default=76, help="the first N models of the set (sorted)")
    ap.add_argument("--looks", default="10,20,40")
    ap.add_argument("--min-gain", type=float, default=0.01)
    ap.add_argument("--fixed-m", type=int, default=50)
    ap.add_argument("--workdir", default="/tmp/bench_sequential")
    ap.add_argument("--no-plan", action="store_true")
    args = ap.parse_args()
    looks = [int(x) for x in args.looks.split(",")]
    work = Path(args.workdir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    print(f"machine: {platform.processor() or platform.machine()}, nproc={os.cpu_count()}, load {os.getloadavg()}")
    demo = load_demo()
    models = sorted(demo.frame["model"].unique())[: args.models]
    table = write_replay_inputs(work / "answers.csv", demo, baseline=DEMO_BASELINE, models=models)
    rows = []
    with serve_in_thread(SyntheticServerConfig(replay=demo)) as server:
        t0 = time.monotonic()
        census = run(_config(work / "census.yaml", table, server.url, work / "census", {"generators": ["swap"]}, 0),
                     progress=False)
        census_alpha = _alpha(census)
        http = server.stats()["n_requests"]
        print(f"census: {len(models)} models, {census.summary['totals']['calls']} calls ({http} HTTP requests) in "
              f"{time.monotonic() - t0:.0f} s; census α = {census_alpha:.4f}; "
              f"missing {census.summary['missing_judgments']}", flush=True)
        cache = work / "census" / "judge_cache.sqlite"
        drawn = {"swap": {"drawn": True}}
        for seed in range(1, args.seeds + 1):
            t1 = time.monotonic()
            folders = {k: work / f"s{seed}" / k for k in ("fixed", "seq")}
            for f in folders.values():
                f.mkdir(parents=True)
                shutil.copyfile(cache, f / "judge_cache.sqlite")
            fixed = run(_config(work / f"s{seed}" / "fixed.yaml", table, server.url, folders["fixed"],
                                {"generators": ["swap"], "neighbors_per_generator": args.fixed_m, "options": drawn}, seed),
                        progress=False)
            seq = run(_config(work / f"s{seed}" / "seq.yaml", table, server.url, folders["seq"],
                              {"generators": ["swap"], "options": drawn,
                               "sequential": {"looks": looks, "min_gain": args.min_gain}}, seed), progress=False)
            s = seq.summary["sequential"]
            seq_calls = _neighbor_requests(seq.summary)  # the stopped look's: every earlier look judged a prefix of it
            row = {"seed": seed, "alpha_fixed": _alpha(fixed), "alpha_seq": _alpha(seq),
                   "stopped_m": s["m"], "calls_fixed": _neighbor_requests(fixed.summary), "calls_seq": seq_calls}
            if not args.no_plan:
                p = plan(folders["fixed"], grid=[], looks=looks, min_gain=args.min_gain, bootstrap_rounds=50).generators["swap"]
                row["plan_m"] = p.sequential["stop_m"]
                row["plan_calls"] = p.sequential["judge_calls"]
            rows.append(row)
            print(json.dumps({**row, "seconds": round(time.monotonic() - t1, 1), "load": os.getloadavg()[0]}), flush=True)
    rel = [r["alpha_seq"] / census_alpha - 1 for r in rows]
    rel_fixed = [r["alpha_fixed"] / census_alpha - 1 for r in rows]
    ratio = [r["calls_seq"] / r["calls_fixed"] for r in rows]
    print(f"\ncensus α {census_alpha:.4f}; {len(rows)} seeds")
    print(f"sequential α vs census: min {min(rel):+.2%}, median {statistics.median(rel):+.2%}, max {max(rel):+.2%}; "
          f"within 5% in {sum(x >= -0.05 for x in rel)}/{len(rows)}")
    print(f"fixed m={args.fixed_m} α vs census: min {min(rel_fixed):+.2%}, median {statistics.median(rel_fixed):+.2%}")
    print(f"neighbour calls sequential/fixed: min {min(ratio):.2f}, median {statistics.median(ratio):.2f}, max "
          f"{max(ratio):.2f}; at most half in {sum(x <= 0.5 for x in ratio)}/{len(rows)}; stopped at m: "
          f"{sorted({r['stopped_m'] for r in rows})}")
    if not args.no_plan:
        err = [r["plan_calls"] / r["calls_seq"] - 1 for r in rows if r.get("plan_calls")]
        print(f"plan's predicted calls vs the sequential run's: {', '.join(f'{e:+.0%}' for e in err)}; within 25% in "
              f"{sum(abs(e) <= 0.25 for e in err)}/{len(rows)}")
    print(f"load at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()

"""Benchmark: `certify` in rows and in models, against a reference commit on the same machine in the same run.

Synthetic generic long table (``synthetic``): M models × I items × 2 games (position swap), scores on
the Arena-Hard grid {0, .25, .5, .75, 1} drawn per model around a model strength, ~0.5% missing
judgments. Every case runs in its own fresh interpreter (``--child``): the table is written to
Parquet by the parent (once per case, as Arrow dictionary arrays: the child's peak RSS is never the generator's)
and the child reads it with ``load_table`` (the user's path) and runs ``pipeline.certify`` (tight
calibration, swap neighbours, per-model and judge certificates, audits, bootstrap leaderboard,
retention, scores.parquet; no plots/report): the read and certify are timed apart and together, wall and CPU
time (``time.process_time``; BLAS may use a second core), peak RSS of the process (``resource.getrusage``: the
whole run, read included) and the size of ``certificates.json``. Imports and a warm-up certify on a tiny table
happen before timing.

The grid is 10^5 and 10^6 rows × 20, 200 and 2000 models (``--grid``); ``--ref COMMIT`` also runs
every case on that commit (a ``git worktree add`` in a temporary folder, its own PYTHONPATH), one
after the other, so both see the same machine load. The load average (1 min) is printed with each
case: the machine is shared, and CPU time is the steadier figure.

Run: python benchmarks/bench_certify.py [--grid] [--ref 6ff62ac] [--models 200 --items 2500] [--profile]
     python benchmarks/bench_certify.py --sizes 200x2500 200x7906 200x25000   (the log-log slopes against rows)
(issue 24's case: --models 200 --items 25000, 10^7 rows, read + certify <= 10 s CPU and <= 1.5 GiB peak)
10^8 rows read in blocks (issue 24): --write 1000 5000 T --games 2 --reruns 10, then
     python benchmarks/bench_certify.py --use-table T --models 1000 --items 5000 --games 2 --reruns 10 --route blocks
     (--both-routes also runs the rows route; --keep DIR keeps both outputs to compare them file by file)
Targets (2-core machine): certify on 10^6 rows <= 3 s and <= 1 GB; 2000 models × 25 items <= 8 s and
<= 1 GB; certificates.json linear in models; time <= 2× the reference at 10^6 rows.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
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


def _draws(models: int, items: int, seed: int = 0, games: int = 2,
           reruns: int = 1) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """The synthetic table's draws, game by game then rerun by rerun: ``(game, rerun, model index, item index,
    score)`` per row.  Rerun r > 0 of a judgment repeats rerun 0's level with probability 0.7, else is drawn afresh
    (so most reruns agree: the weighted neighbours' case); the default (2 games, 1 rerun) is the table as before."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, models)
    difficulty = rng.normal(0, 1, items)
    bias = rng.normal(0, 0.4, models)  # position bias per model: game 2 shifted
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    n = models * items
    m_idx = np.repeat(np.arange(models), items)
    i_idx = np.tile(np.arange(items), models)
    first = {}
    for game in (1, 2)[:games]:
        z = strength[m_idx] - difficulty[i_idx] + rng.normal(0, 1, n) + (bias[m_idx] if game == 2 else 0.0)
        cls = np.clip(np.round(1 / (1 + np.exp(-z)) * 4 + rng.normal(0, 0.5, n)), 0, 4).astype(int)
        score = grid[cls]
        score[rng.random(n) < 0.005] = np.nan
        first[game] = (z, score)
        yield game, 0, m_idx, i_idx, score
    for rerun in range(1, reruns):
        for game in (1, 2)[:games]:
            z, score0 = first[game]
            cls = np.clip(np.round(1 / (1 + np.exp(-z)) * 4 + rng.normal(0, 0.5, n)), 0, 4).astype(int)
            score = np.where(rng.random(n) < 0.7, score0, grid[cls])
            score[rng.random(n) < 0.005] = np.nan
            yield game, rerun, m_idx, i_idx, score


def synthetic(models: int, items: int, seed: int = 0) -> pd.DataFrame:
    """The synthetic judgment table (module docstring) as a frame: both games of every (model, item)."""
    frames = [pd.DataFrame({
        "judge": "synthetic-judge", "model": np.char.add("model-", m_idx.astype(str)),
        "item_id": np.char.add("q", i_idx.astype(str)), "variant": "original", "rerun": rerun, "game": game,
        "score": score,
    }) for game, rerun, m_idx, i_idx, score in _draws(models, items, seed)]
    return pd.concat(frames, ignore_index=True)


GRID = [(20, 2500), (200, 250), (2000, 25), (20, 25000), (200, 2500), (2000, 250)]  # 10^5 rows, then 10^6


def write_synthetic(models: int, items: int, path: Path, seed: int = 0, games: int = 2, reruns: int = 1) -> int:
    """:func:`synthetic`'s table (the same draws, in the same order) written to ``path`` as Parquet, built as Arrow
    dictionary arrays so that 10^7 rows cost the writer a few hundred MB, not a frame of Python strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = models * items

    def text(codes: np.ndarray, names: list[str]) -> pa.Array:
        return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(names)).cast(pa.string())

    with pq.ParquetWriter(path, pa.schema([("judge", pa.string()), ("model", pa.string()), ("item_id", pa.string()),
                                           ("variant", pa.string()), ("rerun", pa.int64()), ("game", pa.int64()),
                                           ("score", pa.float64())])) as writer:
        for game, rerun, m_idx, i_idx, score in _draws(models, items, seed, games, reruns):
            writer.write_table(pa.table({
                "judge": text(np.zeros(n, dtype=int), ["synthetic-judge"]),
                "model": text(m_idx, [f"model-{k}" for k in range(models)]),
                "item_id": text(i_idx, [f"q{k}" for k in range(items)]),
                "variant": text(np.zeros(n, dtype=int), ["original"]), "rerun": pa.array(np.full(n, rerun, dtype=np.int64)),
                "game": pa.array(np.full(n, game, dtype=np.int64)), "score": pa.array(score)}))
    return games * reruns * n


def neighbors_of(games: int, reruns: int) -> list[str]:
    """The generators certify is run with: swap with both games, rerun with reruns."""
    return (["swap"] if games == 2 else []) + (["rerun"] if reruns > 1 else [])


def child(models: int, items: int, profile: bool, table: Path | None = None, games: int = 2, reruns: int = 1,
          route: str = "rows", keep: Path | None = None, block_rows: int | None = None) -> dict:
    """One case in this interpreter: read ``table`` (written by the parent), certify; the figures as a dict.

    ``route="blocks"``: certify reads the table in blocks (``biasbound.data.blocked.open_blocked``; the read is then
    inside certify, ``load_s`` 0). ``keep``: the outputs are written there (for comparing two runs)."""
    import biasbound.pipeline  # noqa: F401  (import time excluded: everything certify imports lazily)
    import sklearn.linear_model  # noqa: F401  (Bradley–Terry)
    import importlib

    for name in ("abb", "audit", "calibration", "certificate", "figures", "leaderboard", "sensitivity"):
        try:  # modules of either version (the reference commit may lack some)
            importlib.import_module(f"biasbound.{name}")
        except ImportError:
            pass
    from biasbound.data.tables import load_table
    from biasbound.neighbors import observed  # noqa: F401
    from biasbound.pipeline import certify
    import biasbound.pipeline._judge as judge_stages

    entries: list[tuple[int, int]] = []  # per judge: (observed entries, neighbours they stand for)
    observe = judge_stages._observe

    def counted(*a, **k):  # the observed-neighbour arrays' length (weighted: entries; unweighted: neighbours)
        o = observe(*a, **k)
        entries.append((len(o.diff), int(o.count.sum()) if hasattr(o, "count") else len(o.diff)))
        return o

    judge_stages._observe = counted
    neighbors = neighbors_of(games, reruns)
    with tempfile.TemporaryDirectory() as tmp:
        if table is None:  # run alone (--child without --table): the table written here, before anything is timed
            table = Path(tmp) / "judgments.parquet"
            write_synthetic(models, items, table)
        # certify once on a small table first, so lazily imported modules are not timed
        small = synthetic(3, 10)
        small.to_parquet(Path(tmp) / "small.parquet", index=False)
        certify(load_table(Path(tmp) / "small.parquet", scale=(0.0, 1.0)), out=Path(tmp) / "warm", plots=False,
                progress=False, seed=0)
        entries.clear()
        del small
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        load_before = os.getloadavg()[0]
        prof = cProfile.Profile() if profile else None
        if prof:
            prof.enable()
        out = keep if keep is not None else Path(tmp) / "out"
        t0, c0 = time.perf_counter(), time.process_time()
        if route == "blocks":
            from biasbound.data.blocked import BLOCK_ROWS, open_blocked

            js = open_blocked(table, scale=(0.0, 1.0), block_rows=block_rows or BLOCK_ROWS)
            rows = js.n_rows
        else:
            js = load_table(table, scale=(0.0, 1.0))
            rows = len(js.frame)
        load_s, load_cpu = time.perf_counter() - t0, time.process_time() - c0
        w, c = time.perf_counter(), time.process_time()
        res = certify(js, out=out, plots=False, progress=False, seed=0, neighbors=neighbors)
        w, c = time.perf_counter() - w, time.process_time() - c
        if route == "blocks":
            js.close()
        if prof:
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("cumtime").print_stats(30)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10
        size = (out / "certificates.json").stat().st_size
        j = next(iter(res.judges.values()))
    return {"route": route, "models": models, "items": items, "rows": rows, "load_s": load_s, "load_cpu_s": load_cpu,
            "total_cpu_s": load_cpu + c, "wall_s": w, "cpu_s": c,
            "peak_mib": peak, "peak_before_mib": before, "certificates_json_bytes": size,
            "load_avg": [load_before, os.getloadavg()[0]], "alpha": j.calibration.alpha, "sigma": j.calibration.sigma,
            "observed_entries": sum(e for e, _ in entries), "observed_neighbours": sum(n for _, n in entries)}


def run_case(src: Path, models: int, items: int, profile: bool = False, table: Path | None = None, games: int = 2,
             reruns: int = 1, route: str = "rows", keep: Path | None = None, block_rows: int | None = None) -> dict:
    """One case in a fresh interpreter whose ``biasbound`` is the one under ``src``."""
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "2"))
    cmd = ([sys.executable, str(Path(__file__).resolve()), "--child", str(models), str(items),
            "--games", str(games), "--reruns", str(reruns), "--route", route]
           + (["--profile"] if profile else []) + (["--table", str(table)] if table is not None else [])
           + (["--keep", str(keep)] if keep is not None else [])
           + (["--block-rows", str(block_rows)] if block_rows else []))
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return {"models": models, "items": items, "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    if profile:
        print(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(r: dict) -> str:
    if "error" in r:
        return f"failed: {r['error']}"
    return (f"read {r['load_cpu_s']:5.2f} s CPU + certify {r['cpu_s']:6.2f} s CPU = {r['total_cpu_s']:6.2f} s CPU "
            f"({r['load_s'] + r['wall_s']:6.2f} s wall) | peak RSS {r['peak_mib']:6.0f} MiB "
            f"({r['peak_before_mib']:.0f} before the read) | certificates.json {r['certificates_json_bytes'] / 2**20:8.2f} MiB "
            f"| load {r['load_avg'][0]:.1f}→{r['load_avg'][1]:.1f} | observed entries {r.get('observed_entries', 0):,} "
            f"for {r.get('observed_neighbours', 0):,} neighbours")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, type=int, metavar=("MODELS", "ITEMS"), help=argparse.SUPPRESS)
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--items", type=int, default=2500)
    ap.add_argument("--grid", action="store_true", help="10^5 and 10^6 rows x 20/200/2000 models")
    ap.add_argument("--sizes", nargs="+", default=None, metavar="MODELSxITEMS",
                    help="these cases (e.g. 200x2500 200x7906 200x25000), then the log-log slopes against rows")
    ap.add_argument("--ref", default=None, help="also run every case on this commit (e.g. 6ff62ac)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--games", type=int, choices=(1, 2), default=2, help="1: game 1 only; 2: both orders (swap)")
    ap.add_argument("--reruns", type=int, default=1, help="reruns per judgment (> 1: the rerun generator too)")
    ap.add_argument("--ref-src", type=Path, default=None,
                    help="the reference's source folder as it is (e.g. an editable install's src), instead of --ref")
    ap.add_argument("--json", type=Path, default=None, help="write every result here")
    ap.add_argument("--table", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--write", nargs=3, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--route", choices=("rows", "blocks"), default="rows",
                    help="rows: load_table then certify; blocks: certify reads the table in blocks (open_blocked)")
    ap.add_argument("--both-routes", action="store_true", help="run every case on both routes (this tree)")
    ap.add_argument("--keep", type=Path, default=None, help="write each case's outputs under this folder")
    ap.add_argument("--block-rows", type=int, default=None, help="rows per block of the blocks route")
    ap.add_argument("--use-table", type=Path, default=None, help="certify this Parquet table instead of writing one")
    args = ap.parse_args()
    if args.write:
        write_synthetic(int(args.write[0]), int(args.write[1]), Path(args.write[2]), games=args.games,
                        reruns=args.reruns)
        return
    if args.child:
        print(json.dumps(child(*args.child, profile=args.profile, table=args.table, games=args.games,
                               reruns=args.reruns, route=args.route, keep=args.keep, block_rows=args.block_rows)))
        return
    print(machine(), f"uname -m={platform.machine()}")
    here = Path(__file__).resolve().parents[1] / "src"
    cases = (GRID if args.grid else [tuple(int(x) for x in s.lower().split("x")) for s in args.sizes] if args.sizes
             else [(args.models, args.items)])
    results: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        ref_src = args.ref_src
        ref_name = args.ref or (str(args.ref_src) if args.ref_src else "")
        if args.ref and ref_src is None:
            wt = Path(tmp) / "ref"
            subprocess.run(["git", "-C", str(here.parent), "worktree", "add", "--detach", str(wt), args.ref],
                           check=True, capture_output=True)
            ref_src = wt / "src"
        try:
            for models, items in cases:
                print(f"\n{args.games * args.reruns * models * items:>9,} rows = {models} models x {items} items x "
                      f"{args.games} game(s) x {args.reruns} rerun(s), neighbours {neighbors_of(args.games, args.reruns)}")
                table = args.use_table or Path(tmp) / f"judgments-{models}x{items}.parquet"
                if args.use_table is None:
                    # written by a child of its own: a child's peak RSS starts from its parent's RSS at the fork
                    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--write", str(models), str(items),
                                    str(table), "--games", str(args.games), "--reruns", str(args.reruns)], check=True)
                for route in (("rows", "blocks") if args.both_routes else (args.route,)):
                    keep = None if args.keep is None else args.keep / f"{models}x{items}-{route}"
                    r = run_case(here, models, items, args.profile, table, args.games, args.reruns, route, keep,
                                 args.block_rows)
                    r["version"] = "this"
                    results.append(r)
                    print(f"  this tree   {route:<6} {fmt(r)}")
                if ref_src is not None:
                    r0 = run_case(ref_src, models, items, table=table, games=args.games, reruns=args.reruns)
                    r = results[-1]
                    r0["version"] = ref_name
                    results.append(r0)
                    print(f"  {ref_name:<11} {fmt(r0)}")
                    if "error" not in r and "error" not in r0:
                        print(f"  ratio this/{ref_name}: wall {r['wall_s'] / r0['wall_s']:.2f}, CPU {r['cpu_s'] / r0['cpu_s']:.2f}, "
                              f"read + certify CPU {r['total_cpu_s'] / r0['total_cpu_s']:.2f}, peak RSS "
                              f"{r['peak_mib'] / r0['peak_mib']:.2f}")
                if args.use_table is None:
                    table.unlink()
        finally:
            if args.ref and args.ref_src is None:
                subprocess.run(["git", "-C", str(here.parent), "worktree", "remove", "--force", str(ref_src.parent)],
                               check=False, capture_output=True)
    if args.sizes:
        print_slopes([r for r in results if r.get("version") == "this" and "error" not in r])
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def print_slopes(results: list[dict]) -> None:
    """The least-squares slope of log(figure) against log(rows) over the cases: 1 is linear in rows. Peak RSS is
    given whole and above the interpreter's RSS before the read (imports and the warm-up: a constant)."""
    if len({r["rows"] for r in results}) < 2:
        return
    rows = np.log([r["rows"] for r in results])
    figures = {"read + certify CPU": [r["total_cpu_s"] for r in results],
               "wall": [r["load_s"] + r["wall_s"] for r in results],
               "peak RSS": [r["peak_mib"] for r in results],
               "peak RSS above the pre-read RSS": [r["peak_mib"] - r["peak_before_mib"] for r in results]}
    print(f"\nlog-log slopes against rows ({min(r['rows'] for r in results):,} to {max(r['rows'] for r in results):,}):")
    for name, values in figures.items():
        if min(values) > 0:
            print(f"  {name:<34} {np.polyfit(rows, np.log(values), 1)[0]:.2f}")


if __name__ == "__main__":
    main()

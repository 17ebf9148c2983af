"""Benchmark: the row reduction (biasbound.engine) from 10^6 to 10^8 rows, and the Spark engine beside DuckDB.

Shapes (one judge, scores on the Arena-Hard grid around a model strength, ~0.5% missing):
  1e6: 200 models x 2,500 items x 2 orders          1e7: 200 models x 25,000 items x 2 orders (swap)
  1e8: 1,000 models x 5,000 items x 2 orders x 10 reruns (swap and rerun neighbours)
  1e9 (on paper): 2,000 models x 25,000 items x 2 orders x 10 reruns
Tables are written as Parquet, one file per block of models (files split by model, as judgment logs usually
are), by ``--make``. Each measurement runs in a fresh interpreter (``--child``): ``reduce`` (DuckDB, 1 GB
memory limit, partitions by (judge, model)) from the files, then the models x items matrix of canonical scores
in numpy (what the bootstraps take). Printed: rows, CPU (process time, both cores), wall, peak RSS
(``ru_maxrss``), engine. ``--spark`` also reduces the table on PySpark (local[2]) and checks the statistics
equal DuckDB's (counts exactly, sums to 1e-12). The log-log slope of CPU and peak memory against rows is
printed when several sizes run. The current route (load_table + certify in pandas) is benchmarks/bench_certify.py.

Run: nice -n 10 python benchmarks/scale.py --make --sizes 1e6 1e7 1e8 [--spark] [--dir /tmp/bb-scale]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHAPES = {"1e6": (200, 2_500, 1), "1e7": (200, 25_000, 1), "1e8": (1_000, 5_000, 10), "1e9": (2_000, 25_000, 10)}


def make(size: str, folder: Path, seed: int = 0) -> Path:
    """Write the table of ``size`` as Parquet files of ~5·10^6 rows, split by model; returns the folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    models, items, reruns = SHAPES[size]
    out = folder / size
    if (out / "_done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    item_names = pa.array([f"q{i:06d}" for i in range(items)])
    per_file = max(1, 5_000_000 // (items * 2 * reruns))
    strength = rng.normal(size=models)
    for start in range(0, models, per_file):
        block = range(start, min(models, start + per_file))
        n_cell = items * 2 * reruns
        m = np.repeat(np.arange(len(block)), n_cell)
        i = np.tile(np.repeat(np.arange(items), 2 * reruns), len(block))
        game = np.tile(np.repeat([1, 2], reruns), items * len(block))
        rerun = np.tile(np.arange(reruns), items * 2 * len(block))
        p = 1 / (1 + np.exp(-(strength[start + m] + rng.normal(scale=1.0, size=len(m)))))
        score = grid[np.clip(np.round(p * 4 + rng.normal(scale=0.6, size=len(m))), 0, 4).astype(int)]
        score[rng.random(len(m)) < 0.005] = np.nan
        table = pa.table({
            "judge": pa.DictionaryArray.from_arrays(np.zeros(len(m), dtype=np.int32), pa.array(["judge"])),
            "model": pa.DictionaryArray.from_arrays(m.astype(np.int32), pa.array([f"model-{k:04d}" for k in block])),
            "item_id": pa.DictionaryArray.from_arrays(i.astype(np.int32), item_names),
            "variant": pa.DictionaryArray.from_arrays(np.zeros(len(m), dtype=np.int32), pa.array(["original"])),
            "rerun": rerun.astype(np.int64), "game": game.astype(np.int64), "score": score,
        })
        pq.write_table(table, out / f"part-{start:05d}.parquet", row_group_size=1_000_000)
    (out / "_done").write_text("")
    return out


def child(size: str, folder: Path, engine: str) -> dict:
    import biasbound.engine as eng

    files = sorted(str(p) for p in (folder / size).glob("*.parquet"))
    if engine == "spark":
        from pyspark.sql import SparkSession

        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.driver.memory", "2g").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
    t0, c0 = time.perf_counter(), time.process_time()
    st = eng.reduce(files, engine=engine, **({"session": spark} if engine == "spark" else {}))
    cells = st.cells
    mat = np.full((len(st.models), len(st.items)), np.nan)  # the models x items canonical scores, in numpy
    n = cells["n"].to_numpy()
    mat[cells["model"].to_numpy(), cells["item_id"].to_numpy()] = np.where(n > 0, cells["sum"].to_numpy() / np.maximum(n, 1), np.nan)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    res = {"size": size, "rows": st.rows, "engine": engine, "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
           "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
           "cells": len(cells), "neighbour_rows": len(st.neighbors), "matrix": list(mat.shape)}
    if engine == "spark":
        res["note"] = "CPU and peak RSS of the Python driver only; the JVM's are not counted"
        ref = eng.reduce(files)
        for a, b in ((st.cells, ref.cells), (st.neighbors, ref.neighbors)):
            for c in a.columns:
                if a[c].dtype == np.float64:
                    np.testing.assert_allclose(a[c].to_numpy(), b[c].to_numpy(), rtol=1e-12, atol=1e-15)
                else:
                    assert np.array_equal(a[c].to_numpy(), b[c].to_numpy()), c
        res["equal_to_duckdb"] = True
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="+", default=["1e6", "1e7"], choices=list(SHAPES))
    ap.add_argument("--dir", type=Path, default=Path("/tmp/bb-scale"))
    ap.add_argument("--make", action="store_true")
    ap.add_argument("--spark", action="store_true", help="also reduce on PySpark local[2] and compare (1e6 only)")
    ap.add_argument("--child", nargs=2, metavar=("SIZE", "ENGINE"), help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], a.dir, a.child[1])))
        return
    results = []
    for size in a.sizes:
        if a.make:
            c0 = time.process_time()
            make(size, a.dir)
            print(f"made {size} in {time.process_time() - c0:.1f} s CPU", flush=True)
        engines = ["duckdb"] + (["spark"] if a.spark and size == "1e6" else [])
        for engine in engines:
            out = subprocess.run([sys.executable, __file__, "--dir", str(a.dir), "--child", size, engine],
                                 capture_output=True, text=True, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
            res = json.loads(out.stdout.strip().splitlines()[-1])
            res["load_1min"] = round(os.getloadavg()[0], 1)
            print(json.dumps(res), flush=True)
            results.append(res)
    duck = [r for r in results if r["engine"] == "duckdb"]
    if len(duck) >= 2:
        x = np.log([r["rows"] for r in duck])
        for key in ("cpu_s", "peak_rss_gib", "wall_s"):
            slope = np.polyfit(x, np.log([r[key] for r in duck]), 1)[0]
            print(f"log-log slope of {key} against rows ({duck[0]['size']}..{duck[-1]['size']}): {slope:.2f}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

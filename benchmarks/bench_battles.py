"""Benchmark: the battle-table reader on 200,000 battles (60 models, one judge, Parquet and CSV).

Times ``biasbound.data.battles.load_battles`` (CPU time, imports excluded, best of 3) and,
with ``--ref COMMIT``, the reader of that commit on the same files (its ``battles.py`` loaded from
``git show``), checking that both give the same judgment table and native numbers (the largest
Elo difference is printed). Target (issue #24): ≤ 1 s of CPU, same numbers to 3e-5 Elo.

Run: python benchmarks/bench_battles.py [--ref f8d4013]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def _table(n: int, k: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    models = np.array([f"model-{i}" for i in range(k)])
    ia = rng.integers(0, k, n)
    ib = (ia + rng.integers(1, k, n)) % k
    return pd.DataFrame({"question_id": rng.integers(0, 3000, n).astype(str), "model_a": models[ia],
                         "model_b": models[ib], "judge": "arena",
                         "winner": rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"], n)})


def _cpu(f: Any, *args: Any) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(3):
        t = time.process_time()
        out = f(*args)
        best = min(best, time.process_time() - t)
    return best, out


def _native(js: Any, column: str) -> dict[tuple[str, str], float]:
    rec = next(r for r in js.frame.attrs["integration"]["native"] if r["column"] == column)
    return {(v["judge"], v["model"]): v["value"] for v in rec["values"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--models", type=int, default=60)
    ap.add_argument("--ref", help="a commit whose battle reader to time and compare against")
    args = ap.parse_args()
    for module in ("scipy.optimize", "scipy.sparse.csgraph"):  # imports excluded from the timing
        importlib.import_module(module)

    from biasbound.data.battles import load_battles

    old = None
    if args.ref:
        text = subprocess.run(["git", "show", f"{args.ref}:src/biasbound/integrations/battles.py"], check=True,
                              capture_output=True, text=True).stdout
        tmp = Path(tempfile.mkdtemp()) / "battles_ref.py"
        tmp.write_text(text)
        spec = importlib.util.spec_from_file_location("battles_ref", tmp)
        assert spec is not None and spec.loader is not None
        old = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(old)
    df = _table(args.n, args.models)
    with tempfile.TemporaryDirectory() as d:
        for path in (Path(d) / "battles.parquet", Path(d) / "battles.csv"):
            df.to_parquet(path) if path.suffix == ".parquet" else df.to_csv(path, index=False)
            cpu, new = _cpu(load_battles, path)
            line = f"{path.suffix[1:]:8s} {args.n:,} battles: {cpu:.2f} s CPU"
            if old is not None:
                cpu_ref, ref = _cpu(old.load_battles, path)
                key = ["judge", "model", "item_id", "game", "rerun"]
                pd.testing.assert_frame_equal(ref.frame.sort_values(key).reset_index(drop=True),
                                              new.frame.sort_values(key).reset_index(drop=True))
                a, b = _native(ref, "battles_bt_elo"), _native(new, "battles_bt_elo")
                assert a.keys() == b.keys()
                diff = max(abs(a[k] - b[k]) for k in a)
                line += f"; {args.ref}: {cpu_ref:.2f} s CPU; same table, max |Elo difference| {diff:.2g}"
            print(line, f"(load {os.getloadavg()[0]:.1f})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()

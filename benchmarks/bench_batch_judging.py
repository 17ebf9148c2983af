"""Batch judging against live judging on the synthetic server (a script, not a test).

N pairwise judge calls through :class:`biasbound.judge.JudgeSession`, once live (``--concurrency``) and once
through the server's batch API (``/v1/files``, ``/v1/batches``; the batch ends at its ``--polls``-th poll,
``--poll-interval`` seconds apart). Reports, for each route: wall seconds, HTTP requests the server received,
and whether the verdicts are the same. The server runs in a thread of this process.

Usage::

    python benchmarks/bench_batch_judging.py --n 2000 --concurrency 32 --polls 3 --poll-interval 0.5

Measured: see docs/guides/batch-judging.md.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from biasbound.judge.batch import BatchOptions
from biasbound.judge.client import JudgeConfig, JudgeRequest, JudgeSession
from biasbound.judge.prompts import render_pairwise
from biasbound.testing import SyntheticServerConfig, serve_in_thread


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--polls", type=int, default=3)
    ap.add_argument("--poll-interval", type=float, default=0.5)
    args = ap.parse_args()
    reqs = [JudgeRequest(key=f"q{i}", messages=render_pairwise(f"question {i}?", f"answer {i} " * (1 + i % 50), "base"))
            for i in range(args.n)]
    out = {}
    with serve_in_thread(SyntheticServerConfig(batch_polls=args.polls)) as server:
        for route, batch in (("live", None), ("batch", BatchOptions(poll_interval=args.poll_interval))):
            server.reset()
            before = dict(server.stats()["batches"])
            cfg = JudgeConfig(base_url=server.url, model="synthetic", concurrency=args.concurrency, batch=batch)
            folder = Path(tempfile.mkdtemp())

            async def go(cfg: JudgeConfig = cfg, folder: Path = folder) -> list:
                async with JudgeSession(cfg, cache=folder / "judge_cache.sqlite") as session:
                    return await session.judge(reqs)

            t0, c0 = time.perf_counter(), time.process_time()
            results = asyncio.run(go())
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            stats = server.stats()
            b = {k: v - before[k] for k, v in stats["batches"].items()}
            # batch: one upload, the creates, the polls, and one download per file the batches wrote (files - upload)
            http = stats["n_requests"] + (b["files"] + b["created"] + b["retrieved"] if batch else 0)
            out[route] = [(r.status, r.verdict) for r in results]
            print(f"{route}: {args.n} calls, {wall:.2f} s wall, {cpu:.2f} s CPU (client + server thread), "
                  f"{http} HTTP requests besides GET /models (chat {stats['n_requests']}, batch {b})")
    print("same verdicts:", out["live"] == out["batch"])


if __name__ == "__main__":
    main()

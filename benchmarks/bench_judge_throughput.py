"""Judge-client throughput against the synthetic server (a script, not a test).

N judge calls at a fixed server latency and client concurrency; the ideal wall time is
``N * latency / concurrency``. Reports achieved throughput as a share of that bound.
The server runs in a separate process so the two do not share one GIL.

Usage::

    python benchmarks/bench_judge_throughput.py --n 2000 --latency-ms 50 --concurrency 64 [--cache] [--raw]

``--raw`` first measures the server alone: the same N requests sent by a bare asyncio +
httpx client (the openai SDK's transport package, no SDK, no retries, no parsing). The
judge client cannot beat that figure; if it is far below the ideal, the server (or the
machine) is the bottleneck, not the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

from biasbound.judge import JudgeConfig, JudgeRequest, judge_many_sync, render_single
from biasbound.testing.server import SyntheticServerConfig, run_server


def _serve(latency_ms: float, queue: mp.Queue) -> None:
    run_server(SyntheticServerConfig(latency_ms=latency_ms), host="127.0.0.1", port=0, on_ready=queue.put)


async def _raw(url: str, requests: list, concurrency: int) -> tuple[float, float, int]:
    """Send every request's body with a bare httpx client; return (wall s, client CPU s, n ok)."""
    try:
        import httpx2 as httpx
    except ImportError:  # older openai SDKs use httpx
        import httpx  # type: ignore[no-redef]
    bodies = [json.dumps({"model": "synth", "messages": list(r.messages), "temperature": 0.0, "max_tokens": 4096,
                          "seed": 0}) for r in requests]
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:
        async def one(body: str) -> int:
            async with gate:
                resp = await client.post(url + "/chat/completions", content=body,
                                         headers={"Content-Type": "application/json"})
                return resp.status_code
        t0, c0 = time.perf_counter(), time.process_time()
        codes = await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - t0, time.process_time() - c0, codes.count(200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--cache", action="store_true", help="write every result to a SQLite cache too")
    parser.add_argument("--raw", action="store_true", help="first measure the server alone with a bare httpx client")
    args = parser.parse_args()

    queue: mp.Queue = mp.Queue()
    server = mp.Process(target=_serve, args=(args.latency_ms, queue), daemon=True)
    server.start()
    url = queue.get(timeout=30)
    try:
        requests = [JudgeRequest(key=f"item{i}", messages=render_single(f"Question {i}?", f"Answer {i}: use a hammer."))
                    for i in range(args.n)]
        if args.raw:
            raw_requests = [JudgeRequest(key=f"raw{i}", messages=render_single(f"Raw question {i}?", f"Answer {i}."))
                            for i in range(args.n)]
            r_wall, r_cpu, r_ok = asyncio.run(_raw(url, raw_requests, args.concurrency))
        config = JudgeConfig(base_url=url, model="synth", api_key_env="BIASBOUND_BENCH_UNSET",
                             concurrency=args.concurrency, timeout=30.0)
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "bench.sqlite" if args.cache else None
            t0, c0 = time.perf_counter(), time.process_time()
            results = judge_many_sync(requests, config=config, cache=cache, progress=False)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        server.terminate()
        server.join(timeout=5)
    ok = sum(r.status == "ok" for r in results)
    if args.raw:
        ideal = args.n * args.latency_ms / 1000.0 / args.concurrency
        print(f"server alone (bare httpx client): wall={r_wall:.2f} s  {args.n / r_wall:.0f} calls/s  "
              f"efficiency={ideal / r_wall:.1%}  ok={r_ok}  bare-client CPU {r_cpu / args.n * 1e3:.2f} ms per call")
    bound = args.n * args.latency_ms / 1000.0 / args.concurrency
    print(f"calls={args.n} ok={ok} latency={args.latency_ms:g} ms concurrency={args.concurrency} cache={args.cache}")
    print(f"wall={wall:.2f} s  ideal={bound:.2f} s  throughput={args.n / wall:.0f} calls/s "
          f"(ideal {args.n / bound:.0f} calls/s)  efficiency={bound / wall:.1%}")
    print(f"client CPU {cpu:.2f} s = {cpu / args.n * 1e3:.2f} ms per call (the client alone cannot exceed "
          f"{args.n / cpu:.0f} calls/s on one core)")


if __name__ == "__main__":
    main()

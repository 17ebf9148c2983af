"""Judge-client throughput against the synthetic server (a script, not a test).

N judge calls through :func:`biasbound.judge.judge_many_sync` (the openai SDK's
``AsyncOpenAI`` as transport) at a fixed server latency and client concurrency. The ideal
wall time is ``N * latency / concurrency``; the script reports achieved throughput as a share
of that bound, the client's CPU per call, the server's CPU per call (read from
``/proc/<pid>/stat``) and the machine's load average, for every repetition.

The server runs in a separate process so the two do not share one GIL.

Usage::

    python benchmarks/bench_judge_throughput.py --n 2000 --latency-ms 50 --concurrency 64 \\
        [--repeat 3] [--raw] [--cache] [--progress] [--pin]

``--raw`` first measures the server alone: the same N requests sent by a bare client
(aiohttp when installed, else httpx2; no SDK, no retries, no parsing). The judge client
cannot beat that figure. ``--pin`` pins the server to CPU 1 and the client to CPU 0.

``--transport httpx`` runs the judge client on the SDK's httpx2 client instead of its aiohttp one.

``--endpoints K`` (K >= 2) starts K synthetic servers (one process each) and measures the judge
client against the first alone, then against all K as one judge (``JudgeConfig.extra_endpoints``,
each with ``--concurrency``), and prints the speed-up. Where the servers' latency dominates (a
real judge: hundreds of ms) K endpoints should give nearly K times one's throughput::

    python benchmarks/bench_judge_throughput.py --n 1200 --latency-ms 300 --concurrency 32 --endpoints 2

Measured (2-core shared machine): see README, "Performance".

Budget
------
At 90% of the bound (1152 calls/s for 50 ms at concurrency 64) the one-thread client may spend
at most 0.87 ms CPU per call, and client + server together at most ``n_cpus / 1152`` s per call
(1.74 ms on 2 idle cores). The script prints that budget next to the measured CPU per call.

Measured (2-core shared machine, load average 1.6-2.3 from other jobs, N=2000, 3 runs each)
------------------------------------------------------------------------------------------
* server alone (bare aiohttp client): 778-1114 calls/s (61-87% of the bound), server CPU
  0.35-0.55 ms/call. The former thread-per-connection stdlib server: 590-610 calls/s, 0.79 ms/call.
* ``judge_many`` (openai SDK, aiohttp transport): 318-549 calls/s (25-43%), client CPU
  1.67-2.58 ms/call; with ``--cache`` or ``--progress`` no measurable difference (a cache commit
  is 0.07 ms); on the SDK's httpx2 transport 234-329 calls/s, 2.85-3.63 ms/call. Before this
  work: 204-340 calls/s, 2.4-3.9 ms/call.
* where the client's time goes (py-spy, ~2.2 ms/call): httpx2 request/response objects 33%,
  openai SDK request building 17% + its pydantic options 10%, aiohttp 15% (+2% adapter), the
  asyncio loop 12%, biasbound itself 11% (verdict parsing 5%, the client 4.5%, cache keys 1.5%).
  With a zero-cost mock transport, ``AsyncOpenAI.post`` alone costs 0.63-0.86 ms/call.

Why 90% is out of reach here: the SDK's own per-call cost with no network at all (>= 0.63 ms)
plus the cheapest measured HTTP client (bare aiohttp, >= 0.37 ms) already exceed the 0.87 ms a
single-threaded client may spend; and client (>= 1.5 ms) + server (>= 0.32 ms) exceed the
1.74 ms that even two idle cores allow, so a multi-process client could not reach it on this
machine either. It needs the client spread over >= 2 processes on >= 4 idle cores (about
1152 x 2.1 ms = 2.4 cores busy), or a core about twice as fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from biasbound.judge import JudgeConfig, JudgeRequest, judge_many_sync, render_single
from biasbound.testing.server import SyntheticServerConfig, run_server


def _serve(latency_ms: float, queue: mp.Queue, cpu: int | None) -> None:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    run_server(SyntheticServerConfig(latency_ms=latency_ms), host="127.0.0.1", port=0, on_ready=queue.put)


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``; ``None`` elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _raw(url: str, bodies: list[bytes], concurrency: int) -> tuple[float, float, int, str]:
    """Send every body with a bare client; return (wall s, client CPU s, n ok, client name)."""
    gate = asyncio.Semaphore(concurrency)
    try:
        import aiohttp
    except ImportError:
        aiohttp = None  # type: ignore[assignment]
    if aiohttp is not None:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            async def one_aiohttp(body: bytes) -> int:
                async with gate, session.post(url + "/chat/completions", data=body,
                                              headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    return resp.status
            t0, c0 = time.perf_counter(), time.process_time()
            codes = await asyncio.gather(*(one_aiohttp(b) for b in bodies))
            return time.perf_counter() - t0, time.process_time() - c0, codes.count(200), "aiohttp"
    try:
        import httpx2 as httpx
    except ImportError:  # older openai SDKs use httpx
        import httpx  # type: ignore[no-redef]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:
        async def one_httpx(body: bytes) -> int:
            async with gate:
                resp = await client.post(url + "/chat/completions", content=body,
                                         headers={"Content-Type": "application/json"})
                return resp.status_code
        t0, c0 = time.perf_counter(), time.process_time()
        codes = await asyncio.gather(*(one_httpx(b) for b in bodies))
        return time.perf_counter() - t0, time.process_time() - c0, codes.count(200), httpx.__name__


def _load() -> str:
    return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def _line(label: str, n: int, wall: float, cpu: float, server_cpu: float | None, ideal: float, extra: str = "") -> str:
    server = "n/a" if server_cpu is None else f"{server_cpu / n * 1e3:.2f}"
    return (f"{label}: {n / wall:5.0f} calls/s  efficiency={ideal / wall:6.1%}  wall={wall:.2f} s  "
            f"client CPU {cpu / n * 1e3:.2f} ms/call  server CPU {server} ms/call  {extra}{_load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of each measurement (fresh requests each)")
    parser.add_argument("--cache", action="store_true", help="write every result to a SQLite cache too")
    parser.add_argument("--progress", action="store_true", help="show the rich progress bar (on stderr)")
    parser.add_argument("--raw", action="store_true", help="first measure the server alone with a bare client")
    parser.add_argument("--pin", action="store_true", help="pin the server to CPU 1 and the client to CPU 0")
    parser.add_argument("--endpoints", type=int, default=1,
                        help="K >= 2: K servers; compare one endpoint with all K balanced client-side")
    parser.add_argument("--transport", choices=("auto", "httpx"), default="auto",
                        help="the judge client's HTTP client: the SDK's aiohttp one when installed (auto) or httpx2")
    args = parser.parse_args()
    if args.n < 1 or args.concurrency < 1 or args.latency_ms <= 0 or args.repeat < 1 or args.endpoints < 1:
        parser.error("--n, --concurrency, --repeat and --endpoints must be >= 1 and --latency-ms > 0")
    if args.endpoints > 1:
        _compare_endpoints(args)
        return

    if args.transport == "httpx":
        os.environ["BIASBOUND_JUDGE_TRANSPORT"] = "httpx"
    n, ideal = args.n, args.n * args.latency_ms / 1000.0 / args.concurrency
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    print(f"N={n} latency={args.latency_ms:g} ms concurrency={args.concurrency} cache={args.cache} "
          f"progress={args.progress} pin={args.pin} transport={args.transport}  ideal {n / ideal:.0f} calls/s ({ideal:.2f} s); 90% needs "
          f"client+server CPU <= {cpus / (0.9 * n / ideal) * 1e3:.2f} ms/call on {cpus} idle CPUs and the "
          f"one-thread client <= {1 / (0.9 * n / ideal) * 1e3:.2f} ms/call")

    queue: mp.Queue = mp.Queue()
    server = mp.Process(target=_serve, args=(args.latency_ms, queue, 1 if args.pin else None), daemon=True)
    server.start()
    url = queue.get(timeout=30)
    if args.pin:
        os.sched_setaffinity(0, {0})
    effs: dict[str, list[float]] = {"raw": [], "judge": []}
    try:
        for rep in range(args.repeat):
            if args.raw:
                bodies = [json.dumps({"model": "synth", "messages": render_single(f"Raw {rep} question {i}?", f"Answer {i}."),
                                      "temperature": 0.0, "max_tokens": 4096, "seed": 0}).encode() for i in range(n)]
                s0 = _cpu_seconds(server.pid)
                wall, cpu, ok, name = asyncio.run(_raw(url, bodies, args.concurrency))
                s1 = _cpu_seconds(server.pid)
                effs["raw"].append(ideal / wall)
                print(_line(f"server alone (bare {name})", n, wall, cpu, None if s0 is None or s1 is None else s1 - s0,
                            ideal, f"ok={ok}  "), flush=True)
            requests = [JudgeRequest(key=f"item{i}", messages=render_single(f"Run {rep} question {i}?",
                                                                              f"Answer {i}: use a hammer."))
                        for i in range(n)]
            config = JudgeConfig(base_url=url, model="synth", api_key_env="BIASBOUND_BENCH_UNSET",
                                 concurrency=args.concurrency, timeout=30.0)
            with tempfile.TemporaryDirectory() as tmp:
                cache: Any = Path(tmp) / "bench.sqlite" if args.cache else None
                s0 = _cpu_seconds(server.pid)
                t0, c0 = time.perf_counter(), time.process_time()
                results = judge_many_sync(requests, config=config, cache=cache, progress=args.progress)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                s1 = _cpu_seconds(server.pid)
            ok = sum(r.status == "ok" for r in results)
            effs["judge"].append(ideal / wall)
            print(_line("judge_many (openai SDK)", n, wall, cpu, None if s0 is None or s1 is None else s1 - s0, ideal,
                        f"ok={ok}  "), flush=True)
    finally:
        server.terminate()
        server.join(timeout=5)
    for key, values in effs.items():
        if values:
            print(f"{key}: efficiency best {max(values):.1%}  median {statistics.median(values):.1%} "
                  f"over {len(values)} run(s)")


def _compare_endpoints(args: argparse.Namespace) -> None:
    """One endpoint vs ``args.endpoints`` endpoints of one judge, each at ``args.concurrency``, N calls each way."""
    from biasbound.judge.client import Endpoint

    k, n = args.endpoints, args.n
    queue: mp.Queue = mp.Queue()
    servers = [mp.Process(target=_serve, args=(args.latency_ms, queue, None), daemon=True) for _ in range(k)]
    for p in servers:
        p.start()
    urls = [queue.get(timeout=30) for _ in servers]
    print(f"N={n} latency={args.latency_ms:g} ms concurrency={args.concurrency} per endpoint, {k} endpoints; "
          f"ideal: {args.concurrency / args.latency_ms * 1e3:.0f} calls/s on one, "
          f"{k * args.concurrency / args.latency_ms * 1e3:.0f} on {k}; {os.cpu_count()} CPUs; {_load()}")
    ratios = []
    try:
        for rep in range(args.repeat):
            rates = {}
            for label, extra in (("1 endpoint", ()), (f"{k} endpoints", tuple(Endpoint(u, args.concurrency) for u in urls[1:]))):
                config = JudgeConfig(base_url=urls[0], model="synth", api_key_env="BIASBOUND_BENCH_UNSET",
                                     concurrency=args.concurrency, timeout=30.0, extra_endpoints=extra)
                requests = [JudgeRequest(key=f"item{i}", messages=render_single(f"{label} run {rep} question {i}?",
                                                                                  f"Answer {i}: use a hammer."))
                            for i in range(n)]
                t0, c0 = time.perf_counter(), time.process_time()
                results = judge_many_sync(requests, config=config, progress=False)
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                ok = sum(r.status == "ok" for r in results)
                rates[label] = n / wall
                print(f"{label}: {n / wall:6.1f} calls/s  wall={wall:.2f} s  ok={ok}  client CPU {cpu / n * 1e3:.2f} ms/call  "
                      f"{_load()}", flush=True)
            ratios.append(rates[f"{k} endpoints"] / rates["1 endpoint"])
            print(f"speed-up with {k} endpoints: {ratios[-1]:.2f}x", flush=True)
    finally:
        for p in servers:
            p.terminate()
            p.join(timeout=5)
    print(f"speed-up: median {statistics.median(ratios):.2f}x, min {min(ratios):.2f}x over {len(ratios)} run(s)")


if __name__ == "__main__":
    main()

"""What the judge's server did during a run: parse rate, server latency apart from queue time, tokens per
second and the concurrency the server actually sustained (with a warning when fewer requests were served at
once than were asked for)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["serving_lines", "serving_summary"]


def serving_summary(results: Sequence[Any], requested_concurrency: int) -> dict[str, Any]:
    """Summarise the calls made now (cached results carry no timing and are left out of the timings).

    ``sustained_concurrency`` is the replies per second (first send to last reply) times the fastest call's
    server latency (a service time that includes no wait in the server's queue): about 1 for a server answering
    one request at a time, ``c`` for one serving ``c`` at once. The server latency itself includes any wait in the
    server's own queue, which the client cannot see apart; the queue time is biasbound's own wait.
    """
    answered = [r for r in results if r.raw is not None]
    parsed = sum(r.status == "ok" for r in answered)
    out: dict[str, Any] = {"replies": len(answered), "parsed": int(parsed),
                           "parse_rate": parsed / len(answered) if answered else None}
    timed = [r for r in results if not r.from_cache and r.server_seconds is not None and r.span is not None]
    if not timed:
        return out
    server = np.array([r.server_seconds for r in timed], dtype=float)
    queue = np.array([r.queue_seconds or 0.0 for r in timed], dtype=float)
    tokens = np.array([r.completion_tokens or 0 for r in timed], dtype=float)
    wall = max(r.span[1] for r in timed) - min(r.span[0] for r in timed)
    # replies per second x the server's own service time, estimated by the fastest call (a request that waited
    # in the server's queue looks slow from here; the first of a batch, sent to an idle server, did not wait)
    sustained = float(len(timed) * server.min() / wall) if wall > 0 else None
    out.update({
        "calls_timed": len(timed),
        "server_latency_median_s": float(np.median(server)), "server_latency_p90_s": float(np.quantile(server, 0.9)),
        "queue_median_s": float(np.median(queue)), "queue_p90_s": float(np.quantile(queue, 0.9)),
        "tokens_per_second": float(tokens.sum() / server.sum()) if server.sum() > 0 and tokens.sum() > 0 else None,
        "requested_concurrency": int(requested_concurrency), "sustained_concurrency": sustained,
    })
    if sustained is not None and len(timed) >= 2 * requested_concurrency and requested_concurrency > 1 \
            and sustained < 0.6 * requested_concurrency:
        out["warning"] = (f"the server sustained about {sustained:.1f} concurrent requests of the {requested_concurrency} "
                          "asked for: the rest waited in the server's queue (counted in its latency); lower "
                          "'concurrency' to what it serves, or raise the client 'timeout' to cover that wait")
    return out


def serving_lines(serving: dict[str, Any]) -> list[str]:
    """The serving summary in words (empty when nothing was measured)."""
    lines: list[str] = []
    if serving.get("parse_rate") is not None:
        lines.append(f"judgments parsed: {serving['parsed']} of the {serving['replies']} the judge answered "
                     f"({serving['parse_rate']:.1%}; a parse retry's reply counts once, as its judgment's last)")
    if serving.get("calls_timed"):
        tps = serving.get("tokens_per_second")
        sus = serving.get("sustained_concurrency")
        lines.append(f"server latency: median {serving['server_latency_median_s']:.2f} s, p90 "
                     f"{serving['server_latency_p90_s']:.2f} s (queue before sending: median {serving['queue_median_s']:.2f} s)"
                     + ("" if tps is None else f"; {tps:.1f} completion tokens/s")
                     + ("" if sus is None else f"; sustained concurrency {sus:.1f} of {serving['requested_concurrency']}"))
    if serving.get("warning"):
        lines.append(f"  warning: {serving['warning']}")
    return lines

"""What one judge call sends and records, shared by the live route (:mod:`biasbound.judge.client`) and the batch
route (:mod:`biasbound.judge.batch`): the chat-completions body of a call and the running record of its attempts."""

from __future__ import annotations

from typing import Any

__all__ = ["chat_body"]


def _new_state() -> dict[str, Any]:
    """The running record of one call's attempts (tokens, last reply, timings)."""
    return {"attempts": 0, "parse_failures": 0, "prompt": None, "completion": None, "raw": None, "repeated": False,
            "last_lane": None, "endpoint": None, "queue": 0.0, "server": 0.0, "first": None, "last": None}


def chat_body(call: Any) -> dict[str, Any]:
    """The chat-completions request body of a call (the live route posts it; the batch route writes it as a line's
    ``body``)."""
    kwargs: dict[str, Any] = {"model": call.model, "messages": list(call.request.messages),
                              "temperature": call.temperature, "max_tokens": call.max_tokens, "seed": call.seed}
    if call.top_p is not None:
        kwargs["top_p"] = call.top_p
    parser = call.request.parser
    if parser is not None and parser.kind == "logprob":
        kwargs["logprobs"], kwargs["top_logprobs"] = True, 10
    return kwargs

"""The judge stack: an async OpenAI-compatible client with a SQLite cache, prompts and verdict parsing.

See ``docs/DESIGN.md`` ("Judge protocol") for the message formats shared with the
neighbour generators and the synthetic judge server.
"""

from __future__ import annotations

import importlib
from typing import Any

from biasbound.judge.cache import JudgeCache, cache_key
from biasbound.judge.parsing import (
    PAIRWISE_VERDICTS,
    ParsedReply,
    flip_verdict,
    normalize_verdict,
    parse_pairwise,
    parse_reply,
    parse_rewrite,
    parse_single,
    rubric_factors,
    task_of,
    to_arena_hard_record,
)
from biasbound.judge.prompts import (
    PAIRWISE_FACTORS,
    SINGLE_FACTORS,
    TEMPLATE_VERSION,
    Rubric,
    RubricFactor,
    default_rubric,
    pairwise_games,
    render_pairwise,
    render_single,
)

__all__ = [
    "PAIRWISE_FACTORS",
    "PAIRWISE_VERDICTS",
    "SINGLE_FACTORS",
    "TEMPLATE_VERSION",
    "Endpoint",
    "JudgeCache",
    "JudgeConfig",
    "JudgeRequest",
    "JudgeResult",
    "ParsedReply",
    "RedactingFilter",
    "Rubric",
    "RubricFactor",
    "cache_key",
    "default_rubric",
    "flip_verdict",
    "judge_many",
    "judge_many_sync",
    "normalize_verdict",
    "pairwise_games",
    "parse_pairwise",
    "parse_reply",
    "parse_rewrite",
    "parse_single",
    "redact",
    "render_pairwise",
    "render_single",
    "rubric_factors",
    "task_of",
    "to_arena_hard_record",
]

#: The client (and with it the openai SDK, ~1.7 s to import) loads on first use, so parsing,
#: prompts and the synthetic judge do not pay for it.
_LAZY = frozenset({"Endpoint", "JudgeConfig", "JudgeRequest", "JudgeResult", "RedactingFilter", "judge_many", "judge_many_sync", "redact"})


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'biasbound.judge' has no attribute {name!r}")
    value = getattr(importlib.import_module("biasbound.judge.client"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

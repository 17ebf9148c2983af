"""The judge stack: an async OpenAI-compatible client with a SQLite cache, prompts and verdict parsing.

See ``docs/DESIGN.md`` ("Judge protocol") for the message formats shared with the
neighbour generators and the synthetic judge server.
"""

from __future__ import annotations

from biasbound.judge.cache import JudgeCache, cache_key
from biasbound.judge.client import (
    JudgeConfig,
    JudgeRequest,
    JudgeResult,
    RedactingFilter,
    judge_many,
    judge_many_sync,
    redact,
)
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

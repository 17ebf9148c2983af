"""Loaders for judgment data: Arena-Hard-Auto files, generic long tables, the embedded demo."""

from __future__ import annotations

from biasbound.data.arena_hard import load_arena_hard, verdict_score
from biasbound.data.embedded import DEMO_BASELINE, demo_leaderboard, demo_path, load_demo
from biasbound.data.tables import (
    COLUMNS,
    JudgmentSet,
    LoadReport,
    from_frame,
    infer_scale,
    load_llmbar,
    load_table,
)

__all__ = [
    "COLUMNS",
    "DEMO_BASELINE",
    "JudgmentSet",
    "LoadReport",
    "demo_leaderboard",
    "demo_path",
    "from_frame",
    "infer_scale",
    "load_arena_hard",
    "load_demo",
    "load_llmbar",
    "load_table",
    "verdict_score",
]

"""The one door for judgment inputs: format detection, reading options and every reader.

- :func:`load` (``bb.load``): any input ``biasbound certify`` reads, detected by content, read as certify reads it
  (:mod:`biasbound.data.loading`; detection: :mod:`biasbound.data.detect`);
- the readers: :func:`load_table` (long tables), :func:`load_llmbar`, :func:`load_arena_hard`,
  :func:`load_battles`, :func:`load_mt_bench`, :func:`load_alpaca_eval`, :func:`load_inspect_log`
  (needs ``biasbound[inspect]``), and factor grades (:mod:`biasbound.data.factors`);
- the judgment-table engine every reader ends in (:mod:`biasbound.data.tables`): :class:`JudgmentSet`,
  :class:`LoadReport`, :func:`from_frame`;
- the embedded demo (:func:`load_demo`).
"""

from __future__ import annotations

from biasbound.data.alpaca_eval import load_alpaca_eval
from biasbound.data.arena_hard import load_arena_hard, verdict_score
from biasbound.data.battles import load_battles
from biasbound.data.detect import detect_format
from biasbound.data.embedded import DEMO_BASELINE, demo_leaderboard, demo_path, load_demo
from biasbound.data.inspect_log import load_inspect_log
from biasbound.data.loading import LoadedInputs, load, load_inputs
from biasbound.data.mt_bench import load_mt_bench
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
    "LoadedInputs",
    "demo_leaderboard",
    "demo_path",
    "detect_format",
    "from_frame",
    "infer_scale",
    "load",
    "load_alpaca_eval",
    "load_arena_hard",
    "load_battles",
    "load_demo",
    "load_inputs",
    "load_inspect_log",
    "load_llmbar",
    "load_mt_bench",
    "load_table",
    "verdict_score",
]

"""Readers (and the inspect_ai scorer) for other evaluation tools' judgments.

- :func:`load_alpaca_eval`: AlpacaEval ``annotations.json`` files;
- :func:`load_battles`: pairwise battle tables (``question_id, model_a, model_b, winner``);
- :func:`load_mt_bench`: MT-Bench / FastChat ``*_single.jsonl`` and ``*_pair.jsonl``;
- :func:`load_inspect_log`: inspect_ai ``.eval`` / ``.json`` logs (needs ``biasbound[inspect]``).

Each returns a :class:`~biasbound.data.JudgmentSet` whose ``frame.attrs["integration"]`` holds
the score rule it applied and what it could not map (counted). The scorer wrapper lives in
:mod:`biasbound.inspect`.
"""

from __future__ import annotations

from biasbound.integrations.alpaca_eval import load_alpaca_eval
from biasbound.integrations.battles import load_battles
from biasbound.integrations.inspect_log import load_inspect_log
from biasbound.integrations.mt_bench import load_mt_bench

__all__ = ["load_alpaca_eval", "load_battles", "load_inspect_log", "load_mt_bench"]

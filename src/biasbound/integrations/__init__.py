"""biasbound inside other evaluation tools: the inspect_ai scorer (:mod:`biasbound.inspect` wraps it) and
Arena-Hard's style control (:mod:`biasbound.integrations.style_control`).

The readers of other tools' files live with every other reader in :mod:`biasbound.data` (one door for inputs:
:func:`biasbound.data.load`); their names are re-exported here so that ``from biasbound.integrations import
load_battles`` keeps working.
"""

from __future__ import annotations

from biasbound.data.alpaca_eval import load_alpaca_eval
from biasbound.data.battles import load_battles
from biasbound.data.inspect_log import load_inspect_log
from biasbound.data.mt_bench import load_mt_bench

__all__ = ["load_alpaca_eval", "load_battles", "load_inspect_log", "load_mt_bench"]

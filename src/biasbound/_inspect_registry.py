"""inspect_ai's extension entry point (``[project.entry-points.inspect_ai]``): importing this module registers
biasbound's scorer ``biasbound/bias_bounded`` and metric ``biasbound/neighbor_sensitivity`` in inspect's registry,
so ``registry_lookup("scorer", "biasbound/bias_bounded")`` and ``inspect eval --scorer`` find them by name."""

from __future__ import annotations

from biasbound.inspect import bias_bounded, neighbor_sensitivity

__all__ = ["bias_bounded", "neighbor_sensitivity"]

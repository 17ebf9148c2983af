"""Neighbouring datasets: observed in existing runs (observed.py) and generated for new runs.

``observed`` needs only pandas; the generators (swap, format, paraphrase, schematic, agreeable,
rerun) never import the HTTP judge stack: the LLM-backed ones receive a ``complete`` callable.

The generator classes and the registry (``GENERATORS``, ``make_generator``, ``sample_neighbors``,
...) are loaded on first access, so users who only need observed neighbours do not import the
generators (nor Jinja, which the paraphrase templates use); ``from biasbound.neighbors import X``
works for every name in ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from biasbound.neighbors.base import (
    JudgeItem,
    NeighborGenerator,
    Perturbation,
    RejectedPerturbation,
    Rubric,
    default_rubric,
)
from biasbound.neighbors.observed import (
    ObservedNeighbors,
    canonical_scores,
    leaderboard_view_neighbors,
    observed_neighbors,
    observed_neighbors_for,
)

if TYPE_CHECKING:  # the lazy names, for type checkers
    from biasbound.neighbors.agreeable import AgreeableGenerator
    from biasbound.neighbors.formatting import FormatGenerator
    from biasbound.neighbors.paraphrase import ParaphraseGenerator
    from biasbound.neighbors.registry import (
        GENERATORS,
        apply_neighbor,
        make_generator,
        sample_neighbors,
        sample_neighbors_async,
    )
    from biasbound.neighbors.rerun import RerunGenerator
    from biasbound.neighbors.schematic import SchematicGenerator
    from biasbound.neighbors.swap import SwapGenerator

#: Names loaded on first access: name -> module.
_LAZY = {
    "AgreeableGenerator": "biasbound.neighbors.agreeable",
    "FormatGenerator": "biasbound.neighbors.formatting",
    "GENERATORS": "biasbound.neighbors.registry",
    "ParaphraseGenerator": "biasbound.neighbors.paraphrase",
    "RerunGenerator": "biasbound.neighbors.rerun",
    "SchematicGenerator": "biasbound.neighbors.schematic",
    "SwapGenerator": "biasbound.neighbors.swap",
    "apply_neighbor": "biasbound.neighbors.registry",
    "make_generator": "biasbound.neighbors.registry",
    "sample_neighbors": "biasbound.neighbors.registry",
    "sample_neighbors_async": "biasbound.neighbors.registry",
}

__all__ = [
    "GENERATORS",
    "AgreeableGenerator",
    "FormatGenerator",
    "JudgeItem",
    "NeighborGenerator",
    "ObservedNeighbors",
    "ParaphraseGenerator",
    "Perturbation",
    "RejectedPerturbation",
    "RerunGenerator",
    "Rubric",
    "SchematicGenerator",
    "SwapGenerator",
    "apply_neighbor",
    "canonical_scores",
    "default_rubric",
    "leaderboard_view_neighbors",
    "make_generator",
    "observed_neighbors",
    "observed_neighbors_for",
    "sample_neighbors",
    "sample_neighbors_async",
]


def __getattr__(name: str) -> Any:
    """Load a generator or registry name on first access (then cached in the module)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'biasbound.neighbors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """Every public name, loaded or not."""
    return sorted(set(globals()) | set(__all__))

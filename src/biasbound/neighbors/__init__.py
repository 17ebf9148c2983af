"""Neighbouring datasets: observed in existing runs (observed.py) and generated for new runs.

``observed`` needs only pandas; the generators (swap, format, paraphrase, schematic, agreeable,
rerun) never import the HTTP judge stack: the LLM-backed ones receive a ``complete`` callable.
"""

from __future__ import annotations

from biasbound.neighbors.agreeable import AgreeableGenerator
from biasbound.neighbors.base import (
    JudgeItem,
    NeighborGenerator,
    Perturbation,
    RejectedPerturbation,
    Rubric,
    default_rubric,
)
from biasbound.neighbors.formatting import FormatGenerator
from biasbound.neighbors.observed import (
    ObservedNeighbors,
    canonical_scores,
    leaderboard_view_neighbors,
    observed_neighbors,
    observed_neighbors_for,
)
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

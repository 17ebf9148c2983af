"""Neighbouring datasets: observed in existing runs (observed.py) and generated for new runs."""

from __future__ import annotations

from biasbound.neighbors.observed import (
    ObservedNeighbors,
    canonical_scores,
    leaderboard_view_neighbors,
    observed_neighbors,
    observed_neighbors_for,
)

__all__ = [
    "ObservedNeighbors",
    "canonical_scores",
    "leaderboard_view_neighbors",
    "observed_neighbors",
    "observed_neighbors_for",
]

"""The knowledge the pipeline builds from observed neighbours, against brute force (exact values).

Hamming-k over a census: E||Δ_S||² over uniform k-subsets S (and a uniform neighbour per item) is
computed in closed form by pipeline._knowledge._hamming_k; here it is enumerated subset by subset.
With every member observed it must be equal (to rounding); with unobserved members (at the range
bound, worst sign) it must be an upper bound for every way their moves could have turned out.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from biasbound.pipeline._knowledge import _hamming_k


def _brute(k, members, coord, view_model, moves):
    """E over k-subsets and over each member's neighbours of ||Δ_S||²; moves[p] = list of moves of member p."""
    n = len(members)
    vals = []
    for sub in itertools.combinations(range(n), k):
        for choice in itertools.product(*[moves[p] for p in sub]):
            if view_model:
                vals.append(sum(c * c for c in choice))
            else:
                vec = np.zeros(int(coord.max()) + 1)
                for p, c in zip(sub, choice):
                    vec[coord[p]] += c
                vals.append(float(np.sum(vec**2)))
    return float(np.mean(vals)), max(vals)


@pytest.mark.parametrize("view_model", [True, False])
@pytest.mark.parametrize("reruns", [1, 2])
def test_hamming_k_mean_square_is_exact_for_a_census(view_model, reruns):
    rng = np.random.default_rng(7 + reruns + 2 * view_model)
    n, k = 7, 3
    coord = np.array([0, 0, 0, 1, 1, 2, 2])
    A = np.full(n, 1.0) if view_model else 1.0 / np.bincount(coord)[coord]
    moves = [list(rng.uniform(-1, 1, reruns) * A[p]) for p in range(n)]
    at = np.repeat(np.arange(n), reruns)
    moved = np.concatenate([np.array(m) for m in moves])
    rec, _ = _hamming_k(k, n, at, moved, np.zeros(n, dtype=bool), A, coord, view_model)
    mean, worst = _brute(k, range(n), coord, view_model, moves)
    assert rec.U2 == pytest.approx(mean, rel=1e-12)
    assert rec.A ** 2 >= worst * (1 - 1e-12)  # the almost-sure bound covers every subset
    assert rec.beta == 0.0


@pytest.mark.parametrize("view_model", [True, False])
def test_hamming_k_with_unobserved_members_bounds_every_possible_truth(view_model):
    rng = np.random.default_rng(11)
    n, k = 7, 3
    coord = np.array([0, 0, 0, 1, 1, 2, 2])
    A = np.full(n, 1.0) if view_model else 1.0 / np.bincount(coord)[coord]
    observed = np.array([True, False, True, True, False, True, True])
    moves = [[float(rng.uniform(-1, 1) * A[p])] for p in range(n)]
    at = np.flatnonzero(observed)
    moved = np.array([moves[p][0] for p in at])
    rec, _ = _hamming_k(k, n, at, moved, ~observed, A, coord, view_model)
    # the unobserved members' true moves, anywhere in [-A, A] (the corners are the extremes)
    for signs in itertools.product((-1.0, 0.0, 1.0), repeat=int((~observed).sum())):
        truth = [list(m) for m in moves]
        for p, sgn in zip(np.flatnonzero(~observed), signs):
            truth[p] = [sgn * A[p]]
        mean, worst = _brute(k, range(n), coord, view_model, truth)
        assert rec.U2 >= mean * (1 - 1e-12)
        assert rec.A ** 2 >= worst * (1 - 1e-12)

"""The judge card's rank-interval bootstrap (float32 products where exact) equals the plain float64 route."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biasbound.card import _bootstrap_rank_intervals
from biasbound.leaderboard import _draw_counts, exact_float32, Present


def _old_rank_intervals(mat: np.ndarray, rounds: int, seed: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """A plain copy of the route before: every product in float64."""
    present = ~np.isnan(mat)
    x = np.where(present, mat, 0.0)
    den = present.T.astype(float)
    few_missing = mat.shape[1] > 0 and np.count_nonzero(~present) * 8 < mat.size
    sparse_den = Present(present.astype(float), ~present) if few_missing else None
    ranks = []
    for chunk in _draw_counts(seed, rounds, mat.shape[1]):
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.asarray(chunk @ x.T) / (sparse_den.resampled(chunk) if sparse_den is not None
                                               else np.asarray(chunk @ den))
        means = np.where(np.isnan(means), -np.inf, means)
        ranks.append(stats.rankdata(-means, axis=1, method="min"))
    rk = np.vstack(ranks)
    q = 100.0 * (1.0 - level) / 2.0
    return (np.floor(np.percentile(rk, q, axis=0)).astype(int), np.ceil(np.percentile(rk, 100 - q, axis=0)).astype(int))


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("levels", [True, False])
@pytest.mark.parametrize("missing", [0.0, 0.4])
def test_rank_intervals_equal_the_float64_route(seed: int, levels: bool, missing: float) -> None:
    rng = np.random.default_rng(seed)
    n_models, n_items = int(rng.integers(3, 9)), int(rng.integers(5, 40))
    # quarter levels (Arena-Hard's) take the float32 products; continuous scores keep float64
    mat = rng.integers(0, 5, (n_models, n_items)) / 4.0 if levels else rng.uniform(0, 1, (n_models, n_items))
    mat[rng.random(mat.shape) < missing] = np.nan
    # the levels case does take the float32 route (else this would compare the float64 route with itself)
    assert (exact_float32(np.nan_to_num(mat), n_items) is not None) == levels
    new = _bootstrap_rank_intervals(mat, 200, seed, 0.95)
    old = _old_rank_intervals(mat, 200, seed, 0.95)
    np.testing.assert_array_equal(new[0], old[0])
    np.testing.assert_array_equal(new[1], old[1])

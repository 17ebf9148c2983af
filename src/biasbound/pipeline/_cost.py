"""What the certificate costs the leaderboard, beside what the bias it bounds costs it.

* ``pairs_reversed_between_releases``: the expected number of model pairs whose order differs
  between two independent releases of the certified leaderboard (the mechanism's noise alone):
  with shrunk means ``s`` and per-model noise ``σ_m`` (σ/√d_m for a model's mean in the model view,
  σ in the leaderboard view), a pair (a, b) is ordered "a first" with probability
  ``p = Φ((s_a − s_b)/√(σ_a² + σ_b²))`` in each release, so it differs with probability ``2p(1−p)``
  (exact, summed over pairs).
* ``pairs_reversed_by_one_neighbour``: the expected number of model pairs of the ORIGINAL leaderboard
  (model means of f(D)) reversed by one neighbour D′ ~ T, over the observed neighbours (one judged
  (model, item) pair perturbed, drawn uniformly among those observed; or the one all-items
  neighbour per round). Descriptive, over observed neighbours only (their count is reported).
* ``retention_over_noise``: Spearman and Kendall τ_b between the original means and the certified
  means, as the expectation over the mechanism's noise with a 5–95% band (seeded Monte Carlo over
  the noise; the seed and the number of draws are recorded) instead of one draw.
"""

from __future__ import annotations

import warnings

from typing import Any

import numpy as np
from scipy import special, stats

from biasbound.leaderboard import kendall_tau_b


def pairs_reversed_between_releases(shrunk: np.ndarray, sigma_model: np.ndarray) -> float:
    """Expected pairs ordered differently in two independent releases (exact)."""
    s = np.asarray(shrunk, dtype=float)
    v = np.asarray(sigma_model, dtype=float) ** 2
    iu = np.triu_indices(len(s), k=1)
    gap = s[iu[0]] - s[iu[1]]
    scale = np.sqrt(v[iu[0]] + v[iu[1]])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, gap / scale, np.where(gap > 0, np.inf, np.where(gap < 0, -np.inf, 0.0)))
    p = special.ndtr(z)  # norm.cdf's own routine: the same values, without its copies of z
    return float(np.sum(2.0 * p * (1.0 - p)))


def pairs_reversed_by_moves(means: np.ndarray, model: np.ndarray, move: np.ndarray) -> np.ndarray:
    """Per neighbour: the model pairs of ``means`` reversed when model ``model[j]``'s mean moves by ``move[j]``.

    A pair (a, b) is reversed when b's mean lies strictly between a's old and new mean; ties are
    neither kept nor reversed (not counted)."""
    m = np.asarray(means, dtype=float)
    srt = np.sort(m)
    old = m[model]
    new = old + np.asarray(move, dtype=float)
    # count the means in the open interval (lo, hi) between old and new: searchsorted(hi, "left") minus
    # searchsorted(lo, "right"). The old mean is its model's own, so its position is looked up per model
    # and only the new means are searched (one search per neighbour instead of two; the same counts)
    up, down = new > old, new < old
    between = np.zeros(len(old))
    between[up] = np.searchsorted(srt, new[up], side="left") - np.searchsorted(srt, m, side="right")[model[up]]
    between[down] = np.searchsorted(srt, m, side="left")[model[down]] - np.searchsorted(srt, new[down], side="right")
    return np.maximum(between, 0.0)


def retention_over_noise(original: np.ndarray, shrunk: np.ndarray, sigma_model: np.ndarray, *, seed: int,
                         draws: int = 1000) -> dict[str, Any]:
    """Spearman and Kendall τ_b of original vs certified means over the noise: mean and 5–95% band."""
    o = np.asarray(original, dtype=float)
    s = np.asarray(shrunk, dtype=float)
    sig = np.asarray(sigma_model, dtype=float)
    rng = np.random.default_rng(seed)
    z = s[None, :] + rng.normal(size=(draws, len(s))) * sig[None, :]
    ro = stats.rankdata(o)
    rz = stats.rankdata(z, axis=1)
    constant = ~(np.std(rz, axis=1) > 0)  # a draw with every rank tied has no Spearman correlation
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)  # the constant draws, set to NaN below
        rho = np.asarray(stats.pearsonr(np.broadcast_to(ro, rz.shape), rz, axis=1).statistic, dtype=float)
    rho = np.where(constant, np.nan, rho)
    kt = kendall_tau_b(o, z[: min(draws, 400)])  # scipy's kendalltau per draw, vectorised (same bits)

    def band(x: np.ndarray) -> dict[str, float | None]:
        x = x[np.isfinite(x)]
        if x.size == 0:
            return {"mean": None, "p05": None, "p95": None}
        return {"mean": float(np.mean(x)), "p05": float(np.quantile(x, 0.05)), "p95": float(np.quantile(x, 0.95))}

    return {"spearman": band(rho), "kendall_tau_b": band(kt), "draws": int(draws),
            "kendall_draws": int(min(draws, 400)), "seed": int(seed),
            "what": "original model means vs certified means (shrunk + fresh noise), over the mechanism's noise"}

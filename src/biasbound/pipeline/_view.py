"""The two views of one judge's scores, as objects: what f(D) is, how an observed neighbour moves
it, how the mechanism is applied, and what the certificates and the scores table hold.

* :class:`_ModelView`: f(D) = one model's per-item scores (one certificate per model, all models
  sharing the judge's α and σ);
* :class:`_LeaderboardView`: f(D) = the vector of model mean scores (one certificate per judge).

The stage functions of :mod:`biasbound.pipeline._judge` call these methods instead of branching
on ``settings.view``.
"""

from __future__ import annotations

import functools

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from biasbound._validation import spawn_seeds as _spawn_seeds
from biasbound.pipeline._settings import _SCORE_RANGE, _Settings


@dataclass(frozen=True)
class _BatchScores:
    """The certified batch of one judge (frozen): canonical rows kept after missing values and
    the centre hold-out, sorted by (model, item), as integer codes into the sorted names."""

    pos: np.ndarray  # rows of the canonical table in the batch
    m: np.ndarray  # model code per batch row
    i: np.ndarray  # item code per batch row
    score: np.ndarray
    model_names: np.ndarray
    item_names: np.ndarray
    d_codes: np.ndarray  # items in the batch per model code (0 = model not in the batch)
    model_codes: np.ndarray  # model codes present in the batch, sorted
    centers: dict[str, float] | None  # hold-out centres per model

    @property
    def models(self) -> list[str]:
        """Names of the batch's models, sorted."""
        return [str(m) for m in self.model_names[self.model_codes]]

    @property
    def d_m(self) -> pd.Series:
        """Items per model (index = model name)."""
        return pd.Series(self.d_codes[self.model_codes].astype(np.int64), index=self.model_names[self.model_codes])

    @functools.cached_property
    def dim_of(self) -> dict[str, int]:
        """``{model: items in the batch}`` (a plain dict: one lookup per model, no Series built per call)."""
        return {str(m): int(d) for m, d in zip(self.model_names[self.model_codes], self.d_codes[self.model_codes])}

    def values(self) -> dict[str, np.ndarray]:
        """``{model: its batch scores in item order}``."""
        bounds = np.append(np.searchsorted(self.m, self.model_codes), len(self.m))  # m is sorted
        return {m: self.score[a:b] for m, a, b in zip(self.models, bounds[:-1], bounds[1:])}


def _apply(x: np.ndarray, cal: Any, *, center: Any, rng: int) -> Any:
    """The mechanism at the point chosen from knowledge (α, σ, dim; σ = 0 allowed where the bound is exact):
    :func:`biasbound.mechanism.release`, the one shrink and seeded noise draw."""
    from biasbound.mechanism import release

    if len(x) != cal.dim:
        raise ValueError(f"mechanism dimension {cal.dim} != {len(x)} scores")
    mu = np.asarray(center, dtype=float) if np.ndim(center) else float(center)
    return release(np.asarray(x, dtype=float), alpha=float(cal.alpha), sigma=float(cal.sigma), center=mu, seed=int(rng))


def _center_for(s: _Settings, centers: dict[str, float] | None, model: str, x: np.ndarray) -> float:
    """The shrinkage centre of one model's batch."""
    if s.center_kind == "holdout":
        return float(centers[model])  # type: ignore[index]
    if s.center_kind == "batch":
        return float(np.mean(x))
    return float(s.center_value)


class _ModelView:
    """f(D) = one model's per-item scores; Hamming-1 moves one coordinate by |Δ_i| <= 1."""

    name = "model"

    def __init__(self, batch: _BatchScores) -> None:
        self.batch = batch
        d = batch.d_m
        self.units: list[str] = batch.models
        self.dim = int(d.max())  # the largest model: σ_max decreases in d, so it is admissible for all
        self.max_distance = _SCORE_RANGE  # Hamming-1 on [0, 1]: ||Δ|| = |Δ_i| <= 1
        self.center_max = self.max_distance / math.sqrt(int(d.min()))
        self.shift_scale = {str(batch.model_names[k]): 1.0 / math.sqrt(float(batch.d_codes[k])) for k in batch.model_codes}

    def unit_of(self, model_code: np.ndarray) -> np.ndarray:
        """Unit code of each neighbour: its model code."""
        return model_code

    def unit_name(self, code: int) -> str:
        return str(self.batch.model_names[code])

    def distances(self, model_code: np.ndarray, absdiff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(||f(D) − f(D')||, √d·|mean Δ|)`` of Hamming-1 neighbours: |Δ_i| and |Δ_i|/√d."""
        return absdiff, absdiff / np.sqrt(self.batch.d_codes[model_code].astype(float))

    def unit_dim(self, unit: str) -> int:
        return self.batch.dim_of[unit]

    def apply(self, s: _Settings, cal: Any, recalibrate: Any, judge_seed: int) -> dict[str, Any]:
        """The mechanism on every model's batch, each with its own spawned seed.

        ``recalibrate(dim)`` returns the calibration at another dimension with the judge's α and
        σ (each model's certificate is re-derived at its own d). Returns ``{model: (result, centre,
        calibration)}``.
        """
        values = self.batch.values()
        seeds = dict(zip(self.units, _spawn_seeds(judge_seed, len(self.units))))
        by_dim: dict[int, Any] = {self.dim: cal}
        mech: dict[str, Any] = {}
        for m in self.units:
            x = values[m]
            if len(x) not in by_dim:
                by_dim[len(x)] = recalibrate(len(x))
            c = _center_for(s, self.batch.centers, m, x)
            mech[m] = (_apply(x, by_dim[len(x)], center=c, rng=seeds[m]), c, by_dim[len(x)])
        return mech

    def scores_columns(self, mech: dict[str, Any], n_canon: int, canon_m: np.ndarray) -> dict[str, np.ndarray]:
        """Per-item shrunk and certified columns over the canonical rows (NaN outside the batch)."""
        out = {}
        for col, attr in (("shrunk", "shrunk"), ("certified", "certified")):
            full = np.full(n_canon, np.nan)
            full[self.batch.pos] = np.concatenate([np.asarray(getattr(mech[m][0], attr), dtype=float) for m in self.units])
            out[col] = full
        return out


class _LeaderboardView:
    """f(D) = the vector of model means; Hamming-1 moves one model's mean by |Δ_i| / d_model."""

    name = "leaderboard"

    def __init__(self, batch: _BatchScores) -> None:
        self.batch = batch
        d = batch.d_m
        self.units = ["*"]
        self.dim = len(batch.models)
        self.max_distance = _SCORE_RANGE / int(d.min())
        self.center_max = self.max_distance / math.sqrt(self.dim)
        self.shift_scale = {"*": 1.0 / math.sqrt(self.dim)}

    def unit_of(self, model_code: np.ndarray) -> np.ndarray:
        return np.zeros(len(model_code), dtype=np.intp)

    def unit_name(self, code: int) -> str:
        return "*"

    def distances(self, model_code: np.ndarray, absdiff: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dist = absdiff / self.batch.d_codes[model_code].astype(float)
        return dist, dist / math.sqrt(self.dim)

    def unit_dim(self, unit: str) -> int:
        return self.dim

    def means(self) -> np.ndarray:
        """Model means (pandas' compensated groupby mean, as they have always been computed)."""
        return pd.Series(self.batch.score).groupby(self.batch.m).mean().to_numpy(dtype=float)

    def center(self, s: _Settings, means: np.ndarray) -> Any:
        if s.center_kind == "holdout":
            return np.array([self.batch.centers[m] for m in self.batch.models])  # type: ignore[index]
        if s.center_kind == "batch":
            return float(means.mean())
        return float(s.center_value)

    def apply(self, s: _Settings, cal: Any, recalibrate: Any, judge_seed: int) -> dict[str, Any]:
        means = self.means()
        c = self.center(s, means)
        seed = _spawn_seeds(judge_seed, 1)[0]
        return {"*": (_apply(means, cal, center=c, rng=seed), c, cal)}

    def scores_columns(self, mech: dict[str, Any], n_canon: int, canon_m: np.ndarray) -> dict[str, np.ndarray]:
        res = mech["*"][0]
        out = {}
        for col, vals in (("shrunk_model", res.shrunk), ("certified_model", res.certified)):
            by_code = np.full(len(self.batch.model_names), np.nan)
            by_code[self.batch.model_codes] = np.asarray(vals, dtype=float)
            out[col] = by_code[canon_m]
        return out


def make_view(name: str, batch: _BatchScores) -> _ModelView | _LeaderboardView:
    """The view object named by ``settings.view``."""
    return _ModelView(batch) if name == "model" else _LeaderboardView(batch)

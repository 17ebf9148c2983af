"""Schematic adherence: how much of a judge's overall score its own factor scores explain.

Paper, Appendix C (after Feuer et al. 2025, "Judgment noise"): regress the overall verdict on
the factor scores with a linear model and with a full quadratic model (squares and pairwise
interactions); ``R²_schematic = max(R²_linear, R²_poly)`` and ``S_sch = sqrt(1 - R²_schematic)``.

Two modes:

* ``"paper"``: in-sample OLS R², exactly the paper's definition. With ``k`` factors the quadratic
  model has ``1 + k + k(k+1)/2`` parameters (28 for ``k = 6``), so on a few dozen items the
  in-sample R² is optimistic.
* ``"cv"``: out-of-sample R² from seeded, shuffled K-fold cross-validation (predictions pooled
  over folds, then one R²). It can be negative; ``S_sch`` then uses ``max(0, R²)``. Factor
  scores on a 1-10 grid are often collinear: a training fold's quadratic design can be rank
  deficient (seen on the 60-item judgment-to-noise files), and then the fit is scikit-learn's
  minimum-norm least-squares solution; another solver can predict differently there, so treat
  the quadratic CV R² of small, collinear tables as indicative.

This module imports numpy and scikit-learn only; file loading lives in ``biasbound.data.factors``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from sklearn.linear_model import LinearRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import KFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from biasbound._exceptions import InputError
from biasbound._validation import check_int, check_one_of, resolve_rng

__all__ = ["SchematicResult", "n_parameters", "schematic_adherence"]

MODES = ("paper", "cv")


@dataclass(frozen=True)
class SchematicResult:
    """Schematic adherence of one judge (paper, Appendix C).

    Attributes
    ----------
    r2_linear : float
        R² of the linear model (in-sample for ``"paper"``, cross-validated for ``"cv"``).
    r2_poly : float
        R² of the degree-2 model with squares and pairwise interactions.
    r2 : float
        ``max(r2_linear, r2_poly)``, unclipped (may be negative in ``"cv"`` mode).
    s_sch : float
        ``sqrt(1 - min(1, max(0, r2)))``.
    n_used : int
        Rows with every factor and the overall score present.
    n_dropped : int
        Rows dropped for a missing value (never imputed).
    mode : str
        ``"paper"`` or ``"cv"``.
    folds : int or None
        Number of folds (``"cv"`` only).
    seed : int or None
        Seed of the fold shuffle (``"cv"`` only).
    n_factors : int
        Number of factors ``k``.
    note : str or None
        A plain sentence when the numbers need a caveat: a constant overall score (the judge
        ignores its factors: R² is set to 0, S_sch = 1), or a strongly negative cross-validated
        R² / few rows per model parameter (the factor models overfit; S_sch is then not informative).
    """

    r2_linear: float
    r2_poly: float
    r2: float
    s_sch: float
    n_used: int
    n_dropped: int
    mode: str
    folds: int | None
    seed: int | None
    n_factors: int
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def n_parameters(n_factors: int, model: str) -> int:
    """Number of fitted coefficients (intercept included) of the ``"linear"`` or ``"poly"`` model."""
    k = check_int(n_factors, "n_factors", "n_parameters", low=1)
    model = check_one_of(model, "model", "n_parameters", ("linear", "poly"))
    return 1 + k if model == "linear" else 1 + k + k * (k + 1) // 2


def _linear() -> LinearRegression:
    return LinearRegression()


def _poly() -> Any:
    return make_pipeline(PolynomialFeatures(degree=2, include_bias=False), LinearRegression())


def schematic_adherence(
    factors: ArrayLike,
    overall: ArrayLike,
    *,
    mode: str = "paper",
    folds: int = 5,
    rng: np.random.Generator | int | None = None,
) -> SchematicResult:
    """Schematic adherence ``R²`` of overall scores on factor scores, and ``S_sch``.

    Parameters
    ----------
    factors : array_like of shape (n, k)
        Factor scores, one row per judged item; NaN marks a missing score.
    overall : array_like of shape (n,)
        Overall scores; NaN marks a missing score.
    mode : {"paper", "cv"}
        In-sample R² (the paper's definition) or K-fold cross-validated R².
    folds : int
        Number of folds for ``"cv"`` (``>= 2``); ignored in ``"paper"`` mode.
    rng : numpy.random.Generator, int or None
        Seed of the fold shuffle for ``"cv"`` (recorded); ignored in ``"paper"`` mode.

    Returns
    -------
    SchematicResult

    Raises
    ------
    InputError
        Shape mismatch, infinite values, constant overall scores (R² undefined), or too few
        usable rows: ``"paper"`` needs ``n >= 2 + k + k(k+1)/2`` (one more than the quadratic
        model's parameters) so that its in-sample R² is not trivially 1; ``"cv"`` needs at least
        ``folds`` rows and ``k + 2`` rows in every training split for the linear model (``folds = n``
        is leave-one-out).

    Notes
    -----
    Rows with any missing factor or overall score are dropped and counted, never filled.
    ``R²_schematic = max(R²_linear, R²_poly)``; ``S_sch = sqrt(1 - R²)`` with ``R²`` clipped to
    ``[0, 1]`` (the raw value is reported). In ``"cv"`` mode the maximum over two models is
    slightly optimistic; the clip at 0 means "the factors predict no better than the mean".
    In ``"cv"`` mode a training split smaller than the quadratic model's parameter count gets
    scikit-learn's minimum-norm least-squares fit; its out-of-sample R² is then simply poor.
    Decision: in ``"paper"`` mode an unidentifiable quadratic model is an error rather than a
    silent fallback to the linear model, since the paper's ``R²`` is defined with both.
    """
    where = "schematic_adherence"
    mode = check_one_of(mode, "mode", where, MODES)
    try:
        x = np.asarray(factors, dtype=float)
        y = np.asarray(overall, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"The 'factors' and 'overall' parameters of {where} must be numeric arrays.") from exc
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[1] < 1:
        raise InputError(f"The 'factors' parameter of {where} must be a 2-D array (n, k). Got shape {x.shape} instead.")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise InputError(
            f"The 'overall' parameter of {where} must be a 1-D array with one value per row of 'factors' "
            f"({x.shape[0]}). Got shape {y.shape} instead."
        )
    if np.any(np.isinf(x)) or np.any(np.isinf(y)):
        raise InputError(f"The 'factors' and 'overall' parameters of {where} must not hold infinite values.")
    keep = ~(np.isnan(x).any(axis=1) | np.isnan(y))
    n_dropped = int(np.count_nonzero(~keep))
    x, y = x[keep], y[keep]
    n, k = x.shape
    if n == 0:
        raise InputError(f"The 'overall' parameter of {where} must hold at least one usable row (every factor and "
                         "the overall score present). Got 0 instead.")
    if float(np.ptp(y)) == 0.0:
        # The overall score does not move whatever the factors say: no factor explains any of it. R² is 0/0;
        # it is reported as 0, so S_sch = 1 (no schematic adherence), with a sentence saying why.
        return SchematicResult(
            r2_linear=0.0, r2_poly=0.0, r2=0.0, s_sch=1.0, n_used=int(n), n_dropped=n_dropped, mode=mode,
            folds=None, seed=None, n_factors=int(k),
            note=(f"The overall score is the same ({float(y[0]):g}) on all {n} usable rows: the judge ignores its "
                  "factors, so R² is taken as 0 and S_sch = 1."),
        )
    p_lin = n_parameters(k, "linear")
    p_poly = n_parameters(k, "poly")
    folds_used: int | None = None
    seed: int | None = None
    if mode == "paper":
        if n < p_poly + 1:
            raise InputError(
                f"The 'factors' parameter of {where} must have at least {p_poly + 1} usable rows for the "
                f"paper-mode quadratic model with {k} factors ({p_poly} parameters). Got {n} usable rows "
                "instead; use fewer factors or more items."
            )
        r2_lin = float(r2_score(y, _linear().fit(x, y).predict(x)))
        r2_poly = float(r2_score(y, _poly().fit(x, y).predict(x)))
    else:
        folds_used = check_int(folds, "folds", where, low=2)
        n_train_min = n - math.ceil(n / folds_used)
        if n < folds_used or n_train_min < p_lin + 1:
            raise InputError(
                f"The 'factors' parameter of {where} must have at least {folds_used} usable rows with at least "
                f"{p_lin + 1} in every training split for {folds_used}-fold cross-validation with {k} factors. "
                f"Got {n} usable rows instead."
            )
        gen, seed = resolve_rng(rng)
        cv = KFold(n_splits=folds_used, shuffle=True, random_state=int(gen.integers(2**32)))
        r2_lin = float(r2_score(y, cross_val_predict(_linear(), x, y, cv=cv)))
        r2_poly = float(r2_score(y, cross_val_predict(_poly(), x, y, cv=cv)))
    r2 = max(r2_lin, r2_poly)
    s_sch = math.sqrt(1.0 - min(1.0, max(0.0, r2)))
    note = None
    per_param = n / p_poly
    if mode == "cv" and r2 < -0.5:
        note = (f"Cross-validated R² is {r2:.3g} on {n} rows: the factor models predict worse than the mean "
                f"(overfitting with {p_poly} quadratic parameters); S_sch = {s_sch:.3g} is not informative — use "
                "more items or fewer factors.")
    elif per_param < 5:
        note = (f"Only {n} usable rows for {p_poly} parameters of the quadratic model ({per_param:.2g} per "
                "parameter): R² is unstable; use more items or fewer factors.")
    return SchematicResult(
        r2_linear=r2_lin,
        r2_poly=r2_poly,
        r2=r2,
        s_sch=s_sch,
        n_used=int(n),
        n_dropped=n_dropped,
        mode=mode,
        folds=folds_used,
        seed=seed,
        n_factors=int(k),
        note=note,
    )

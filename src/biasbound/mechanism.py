"""The shrunk Gaussian mechanism ``M(D) = alpha f(D) + (1 - alpha) mu + Z``, ``Z ~ N(0, sigma^2 I_d)``: one shrink and
one noise draw, used by the release (:func:`apply_mechanism`, the pipeline's views) and by ``Certificate.verify``.

The noise of a release is ``numpy.random.default_rng(seed).normal(0, sigma, d)`` (zeros at ``sigma = 0``, which the
exact bounds allow): the seed is written into every certificate, so the released scores can be re-drawn and
checked.  numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biasbound._exceptions import InputError
from biasbound._validation import check_finite_array, check_in_range, resolve_rng
from biasbound.parameters import bounds, validate_params

__all__ = ["MechanismResult", "apply_mechanism", "noise", "release", "shrink"]


@dataclass(frozen=True)
class MechanismResult:
    """Output of :func:`apply_mechanism`.

    Attributes
    ----------
    certified : numpy.ndarray
        ``M(D) = g(f(D)) + Z``.
    shrunk : numpy.ndarray
        ``g(f(D)) = alpha f(D) + (1 - alpha) mu``.
    noise : numpy.ndarray
        ``Z ~ N(0, sigma^2 I_d)``.
    sigma, alpha : float
        Noise scale and shrinkage used.
    center : float or numpy.ndarray
        The shrinkage centre ``mu``.
    seed : int
        Seed that reproduces ``noise`` (``apply_mechanism(..., rng=seed)``).
    """

    certified: np.ndarray
    shrunk: np.ndarray
    noise: np.ndarray
    sigma: float
    alpha: float
    center: float | np.ndarray
    seed: int


@validate_params
def noise(seed: int, sigma: float, size: int) -> np.ndarray:
    """The mechanism's noise ``Z ~ N(0, sigma^2 I_size)`` drawn from ``numpy.random.default_rng(seed)``."""
    return np.random.default_rng(seed).normal(0.0, sigma, size=size)


def _shrink(x: np.ndarray, alpha: float, center: float | np.ndarray) -> np.ndarray:
    return alpha * x + (1.0 - alpha) * center


@validate_params
def release(x: np.ndarray, *, alpha: float, sigma: float, center: float | np.ndarray, seed: int) -> MechanismResult:
    """The mechanism on checked inputs: ``alpha x + (1 - alpha) center + noise(seed, sigma, len(x))``."""
    shrunk = _shrink(x, alpha, center)
    z = noise(seed, sigma, x.size)
    mu = np.asarray(center, dtype=float)
    return MechanismResult(certified=shrunk + z, shrunk=shrunk, noise=z, sigma=float(sigma), alpha=float(alpha),
                           center=mu if mu.ndim else float(mu), seed=int(seed))


@validate_params
def shrink(x: ArrayLike, *, alpha: float, center: float | ArrayLike) -> np.ndarray:
    """Affine shrinkage ``g(x) = alpha x + (1 - alpha) mu``, an ``alpha``-Lipschitz map.

    Parameters
    ----------
    x : array_like
        Scores, 1-D, finite.
    alpha : float
        Lipschitz constant in (0, 1].
    center : float or array_like
        The centre ``mu`` (scalar or one value per score).

    Returns
    -------
    numpy.ndarray
        The shrunk scores.

    Notes
    -----
    ``||g(x) - g(y)|| = alpha ||x - y||``, so the RMS sensitivity contracts by ``alpha`` (Lemma B.1) when ``mu``
    is fixed within the batch.

    References
    ----------
    Paper: Appendix B, Lemma B.1 / B.4, Proposition B.2 / B.3.
    """
    where = "shrink"
    arr = check_finite_array(x, "x", where, ndim=1)
    a = check_in_range(alpha, "alpha", where, **bounds("alpha"))
    return _shrink(arr, a, _check_center(center, arr.size, where))


def _check_center(center: float | ArrayLike, n: int, where: str) -> float | np.ndarray:
    if np.ndim(center) == 0:
        return check_in_range(center, "center", where)
    mu = check_finite_array(center, "center", where, ndim=1)
    if mu.size != n:
        raise InputError(f"The 'center' parameter of {where} must be a scalar or hold {n} values, one per score. Got {mu.size} instead.")
    return mu


def apply_mechanism(scores: ArrayLike, calibration: Any, *, center: float | ArrayLike,
                    rng: np.random.Generator | int | None = None) -> MechanismResult:
    """Apply a calibrated mechanism ``M(D) = g(f(D)) + Z`` to one batch of scores.

    Parameters
    ----------
    scores : array_like
        ``f(D)``: one finite score per item, length ``calibration.dim`` (drop missing judgments before this step;
        NaN is an error, never imputed).
    calibration : BoundCalibration
        From :func:`biasbound.calibrate` (its ``alpha``, ``sigma`` and ``dim``).
    center : float or array_like
        Shrinkage centre ``mu``; the kind of centre the knowledge assumed (fixed within the batch unless the
        records carry the centre's shift).
    rng : numpy.random.Generator, int or None
        Source of the noise; the seed used is recorded in the result.

    Returns
    -------
    MechanismResult

    Notes
    -----
    Guarantee: ``(calibration.tau, calibration.delta)``-A-BB for this batch and the neighbour generators the
    knowledge describes.  Utility: ``E||M(D) - g(f(D))||^2 = d sigma^2`` (Remark 3.4).

    References
    ----------
    Paper: Algorithm 1, Theorem 3.1, Proposition B.3.
    """
    where = "apply_mechanism"
    from biasbound.calibration import BoundCalibration

    if not isinstance(calibration, BoundCalibration):
        raise TypeError(f"The 'calibration' parameter of {where} must be a BoundCalibration. Got {type(calibration).__name__} instead.")
    x = check_finite_array(scores, "scores", where, ndim=1)
    if x.size != calibration.dim:
        raise InputError(f"The 'scores' parameter of {where} must hold calibration.dim={calibration.dim} values "
                         f"(mismatched dimensions). Got {x.size} instead.")
    mu = _check_center(center, x.size, where)
    if not (calibration.sigma > 0 or (calibration.method == "tight" and calibration.sigma == 0)):
        raise InputError(f"The calibration's sigma must be > 0 (Theorem 3.1 needs sigma > 0). Got {calibration.sigma!r} instead.")
    _, seed = resolve_rng(rng)
    return release(x, alpha=calibration.alpha, sigma=calibration.sigma, center=mu, seed=seed)

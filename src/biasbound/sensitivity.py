"""Root-mean-squared sensitivity of a judge, its confidence bounds, and their combination.

The quantity certified by A-BB (paper, Def. 3.4) is the root-mean-squared sensitivity

.. math:: \\Delta^*_2(f, D) = \\big(\\mathbb{E}_{D' \\sim T(D)} \\|f(D) - f(D')\\|_2^2\\big)^{1/2}.

It is estimated from ``m`` sampled neighbours by the plug-in :func:`rms`; a one-sided
upper confidence bound for it (valid for i.i.d. neighbours with a known a.s. bound on the
distance) is :func:`sensitivity_ucb`. Several neighbour generators are folded into one
number by :func:`combine` (paper, "Combination Logic"). Proofs: ``docs/proofs/sensitivity-bounds.md``.

This module imports numpy and scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import brentq
# the same C routine as the ufunc scipy.special.rel_entr (the same values) without the ufunc's dispatch on a Python
# float, about 10x faster: the KL bounds' root finding calls it thousands of times per judge
from scipy.special.cython_special import rel_entr

from biasbound._exceptions import InputError
from biasbound._rounding import above, below
from biasbound._validation import check_finite_array, check_in_range, check_int, check_one_of
from biasbound.parameters import bounds, validate_params

__all__ = [
    "CombinedSensitivity",
    "SensitivityEstimate",
    "bonferroni",
    "combine",
    "context_adjusted_rms",
    "distances",
    "estimate",
    "kl_lower_bound",
    "kl_upper_bound",
    "rms",
    "sensitivity_lcb",
    "sensitivity_ucb",
]

UCB_METHODS = ("best", "bernstein", "kl")
COMBINE_HOW = ("max", "rms")
DEFAULT_FLOOR = 1e-3


# ----------------------------------------------------------------------------- distances


def distances(original: ArrayLike, neighbors: ArrayLike) -> np.ndarray:
    """Euclidean distances ``||f(D) - f(D'_i)||_2`` between a score vector and its neighbours.

    Parameters
    ----------
    original : array_like of shape (d,)
        The judge's score vector ``f(D)`` on the unperturbed context.
    neighbors : array_like of shape (m, d)
        One row per neighbour context ``D'_i``: the score vector ``f(D'_i)``.

    Returns
    -------
    numpy.ndarray of shape (m,)
        ``||f(D) - f(D'_i)||_2`` for every neighbour.

    Raises
    ------
    InputError
        If a value is NaN or infinite (drop missing judgments first) or the shapes disagree.
    """
    x = check_finite_array(original, "original", "distances", ndim=1)
    y = check_finite_array(neighbors, "neighbors", "distances", ndim=2)
    if y.shape[1] != x.shape[0]:
        raise InputError(
            f"The 'neighbors' parameter of distances must have shape (m, {x.shape[0]}) to match 'original'. "
            f"Got shape {y.shape} instead."
        )
    return np.linalg.norm(y - x[None, :], axis=1)


def _check_distances(values: ArrayLike, where: str, *, min_size: int = 1) -> np.ndarray:
    d = check_finite_array(values, "distances", where, ndim=1, min_size=min_size)
    if np.any(d < 0):
        raise InputError(
            f"The 'distances' parameter of {where} must hold non-negative norms. Got minimum {d.min()!r} instead."
        )
    return d


def rms(distances: ArrayLike) -> float:
    """Plug-in RMS sensitivity ``Δ* = sqrt(mean(d_i²))`` (paper, Def. 3.4 and Alg. 1, line 4).

    Parameters
    ----------
    distances : array_like of shape (m,)
        Non-negative neighbour distances ``||f(D) - f(D'_i)||_2``.

    Returns
    -------
    float
        The root mean square of ``distances``.
    """
    d = _check_distances(distances, "rms")
    return float(math.sqrt(float(np.mean(d * d))))


# ------------------------------------------------------------------ confidence bounds


def _kl(p: float, q: float) -> float:
    """Bernoulli KL divergence ``kl(p || q)`` (0 log 0 = 0)."""
    return rel_entr(p, q) + rel_entr(1.0 - p, 1.0 - q)


@validate_params
def kl_upper_bound(mean: float, n: int, beta: float) -> float:
    """Chernoff–Hoeffding upper confidence bound for the mean of [0, 1]-bounded i.i.d. variables.

    Returns the largest ``q`` in ``[mean, 1]`` with ``n · kl(mean || q) <= log(1/β)``,
    rounded up (the returned ``q`` satisfies ``n · kl(mean || q) >= log(1/β)`` or ``q = 1``).

    Parameters
    ----------
    mean : float
        Sample mean ``X̄`` of ``n`` i.i.d. variables with values in ``[0, 1]``.
    n : int
        Number of variables (``>= 1``).
    beta : float
        Failure probability in ``(0, 1)``.

    Returns
    -------
    float
        ``q`` with ``Pr[E X > q] <= β``.

    Notes
    -----
    Hoeffding (1963, Thm. 1): for i.i.d. ``X_i ∈ [0, 1]`` with mean ``μ`` and ``x < μ``,
    ``Pr[X̄ <= x] <= exp(-n · kl(x || μ))``. Inverting this tail bound gives the
    upper bound above; see ``docs/proofs/sensitivity-bounds.md``.
    """
    mean = check_in_range(mean, "mean", "kl_upper_bound", low=0.0, high=1.0)
    n = check_int(n, "n", "kl_upper_bound", low=1)
    beta = check_in_range(beta, "beta", "kl_upper_bound", **bounds("beta"))
    return kl_bound(mean, n, beta, upper=True)


@validate_params
def kl_lower_bound(mean: float, n: int, beta: float) -> float:
    """Chernoff–Hoeffding lower confidence bound for the mean of [0, 1]-bounded i.i.d. variables.

    The smallest ``q`` in ``[0, mean]`` with ``n · kl(mean || q) <= log(1/β)``, rounded down.
    Same parameters and reference as :func:`kl_upper_bound` (applied to ``1 - X``).
    """
    mean = check_in_range(mean, "mean", "kl_lower_bound", low=0.0, high=1.0)
    n = check_int(n, "n", "kl_lower_bound", low=1)
    beta = check_in_range(beta, "beta", "kl_lower_bound", **bounds("beta"))
    return kl_bound(mean, n, beta, upper=False)


def kl_bound(mean: float, n: int, beta: float, *, upper: bool) -> float:
    if not upper:  # lower bound on E X  =  1 - upper bound on E(1 - X)
        return max(0.0, 1.0 - kl_bound(1.0 - mean, n, beta, upper=True))
    level = math.log(1.0 / beta) / n
    if mean >= 1.0:
        return 1.0

    def h(q: float) -> float:
        return _kl(mean, q) - level

    hi = 1.0 - 1e-16
    if h(hi) <= 0.0:  # the bound reaches (numerically) 1
        return 1.0
    if mean == 0.0:  # closed form: -log(1 - q) = level
        q = -math.expm1(-level)
    else:
        q = brentq(h, mean, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps, maxiter=500)
    # Safe end: kl(mean || .) increases on [mean, 1], so step up until h(q) >= 0.
    step = max(1e-15, 4 * np.finfo(float).eps * q)
    while q < 1.0 and h(q) < 0.0:
        q = min(1.0, q + step)
        step *= 2.0
    return float(q)


def _bernstein_width(x: np.ndarray, beta: float) -> float:
    """Maurer–Pontil (2009, Thm. 4) empirical Bernstein deviation for X ∈ [0, 1] at level β.

    ``E X <= mean + width`` with probability ``>= 1 - β``; applied to ``1 - X`` (same sample
    variance) it gives ``E X >= mean - width``.
    """
    n = x.size
    log_term = math.log(2.0 / beta)
    var = float(np.var(x, ddof=1))
    return math.sqrt(2.0 * var * log_term / n) + 7.0 * log_term / (3.0 * (n - 1))


def _bernstein_upper(x: np.ndarray, beta: float) -> float:
    """Empirical Bernstein upper bound on E X for X ∈ [0, 1]."""
    return float(np.mean(x)) + _bernstein_width(x, beta)


@validate_params(exempt={"method": "the confidence bound's method"})
def sensitivity_ucb(
    distances: ArrayLike,
    *,
    beta: float,
    max_distance: float,
    method: str = "best",
) -> float:
    """Upper ``(1 - β)`` confidence bound on the RMS sensitivity ``Δ*``.

    Parameters
    ----------
    distances : array_like of shape (m,)
        ``m >= 2`` i.i.d. neighbour distances ``||f(D) - f(D'_i)||_2``, each in ``[0, max_distance]``.
    beta : float
        Failure probability in ``(0, 1)``.
    max_distance : float
        A bound, known before seeing the data, on every possible distance (e.g. ``sqrt(d)``
        for scores in ``[0, 1]^d``). Must be positive.
    method : {"best", "kl", "bernstein"}
        ``"kl"``: Chernoff–Hoeffding KL bound; ``"bernstein"``: Maurer–Pontil empirical
        Bernstein bound; ``"best"``: the smaller of both, each at ``β/2``.

    Returns
    -------
    float
        ``U`` with ``Pr[Δ* > U] <= β`` over the draw of the neighbours; ``Δ* <= U <= max_distance``
        up to one ulp of rounding up.

    Raises
    ------
    InputError
        For fewer than two distances, values outside ``[0, max_distance]``, NaN, or bad parameters.

    Notes
    -----
    Let ``X_i = (d_i / max_distance)²``. The ``X_i`` are i.i.d. with values in ``[0, 1]``
    and mean ``μ = (Δ* / max_distance)²``, so any upper confidence bound ``q`` for ``μ``
    gives ``Δ* <= max_distance · sqrt(q)``. Two bounds for the mean of bounded i.i.d.
    variables are used:

    * KL (Hoeffding 1963, Thm. 1): ``Pr[X̄ <= x] <= exp(-m · kl(x || μ))`` for ``x < μ``.
      Hence ``q = max{q ∈ [X̄, 1] : m · kl(X̄ || q) <= log(1/β)}`` satisfies ``Pr[μ > q] <= β``.
      ``q`` is found with :func:`scipy.optimize.brentq` and moved to the safe (upper) side.
    * Empirical Bernstein (Maurer & Pontil 2009, Thm. 4): with probability ``>= 1 - β``,
      ``μ <= X̄ + sqrt(2 V log(2/β) / m) + 7 log(2/β) / (3 (m - 1))``, ``V`` the unbiased
      sample variance. Needs ``m >= 2``.

    ``"best"`` takes the minimum of both computed at ``β/2``: the event that either fails has
    probability ``<= β/2 + β/2`` (union bound), and outside it both hold, so the minimum holds.
    The bound is clipped at 1 (``μ <= 1`` always). Both bounds need independence and the
    a-priori range; a data-dependent ``max_distance`` (e.g. the observed maximum) voids them.

    References
    ----------
    W. Hoeffding, "Probability inequalities for sums of bounded random variables", JASA 1963.
    A. Maurer and M. Pontil, "Empirical Bernstein bounds and sample variance penalization", COLT 2009.
    """
    where = "sensitivity_ucb"
    method = check_one_of(method, "method", where, UCB_METHODS)
    beta = check_in_range(beta, "beta", where, **bounds("beta"))
    max_distance = check_in_range(max_distance, "max_distance", where, low=0.0, low_open=True)
    d = _check_distances(distances, where, min_size=2)
    return _ucb(d, beta=beta, max_distance=max_distance, method=method)


def _mean(x: np.ndarray, weights: np.ndarray | None) -> float:
    """The mean of ``x``, each value counted ``weights`` times (integer multiplicities); none: each once.  With
    every weight 1 the same float as ``np.mean(x)`` (one pairwise sum of the same terms, divided by their number)."""
    if weights is None:
        return float(np.mean(x))
    return float(np.sum(x * weights) / np.sum(weights))


def _expanded(x: np.ndarray, weights: np.ndarray | None) -> np.ndarray:
    """``x`` with each value repeated its weight's times (the empirical Bernstein bound's sample variance)."""
    return x if weights is None else np.repeat(x, weights.astype(np.int64))


def _check_range(d: np.ndarray, max_distance: float, where: str) -> None:
    if np.any(d > max_distance):
        raise InputError(
            f"The 'distances' parameter of {where} must lie in [0, max_distance={max_distance:g}]. "
            f"Got maximum {float(d.max())!r} instead; pass an a-priori bound as max_distance."
        )


def _ucb(d: np.ndarray, *, beta: float, max_distance: float, method: str, weights: np.ndarray | None = None) -> float:
    """``weights``: integer multiplicities of the distances (equal distances counted once); none: each once."""
    _check_range(d, max_distance, "sensitivity_ucb")
    x = (d / max_distance) ** 2
    x = np.clip(x, 0.0, 1.0)
    m = x.size if weights is None else int(weights.sum())
    mean = float(np.clip(_mean(x, weights), 0.0, 1.0))
    if method == "kl":
        bound = kl_bound(mean, m, beta, upper=True)
    elif method == "bernstein":
        bound = _bernstein_upper(_expanded(x, weights), beta)
    else:
        bound = min(kl_bound(mean, m, beta / 2.0, upper=True), _bernstein_upper(_expanded(x, weights), beta / 2.0))
    bound = min(1.0, max(bound, mean))
    ucb = max_distance * math.sqrt(bound)
    # Round against ourselves: never below the plug-in value, one ulp up for float error.
    plug_in = float(math.sqrt(_mean(d * d, weights)))
    ucb = min(above(max(ucb, plug_in)), max_distance)
    return float(max(ucb, plug_in))


def _bernstein_lower(x: np.ndarray, beta: float) -> float:
    """Empirical Bernstein lower bound on E X for X ∈ [0, 1] (the upper bound applied to ``1 - X``)."""
    return float(np.mean(x)) - _bernstein_width(x, beta)


@validate_params(exempt={"method": "the confidence bound's method"})
def sensitivity_lcb(
    distances: ArrayLike,
    *,
    beta: float,
    max_distance: float,
    method: str = "best",
) -> float:
    """Lower ``(1 - β)`` confidence bound on the RMS sensitivity ``Δ*`` (mirror of :func:`sensitivity_ucb`).

    Parameters
    ----------
    distances : array_like of shape (m,)
        ``m >= 2`` i.i.d. neighbour distances, each in ``[0, max_distance]``.
    beta : float
        Failure probability in ``(0, 1)``.
    max_distance : float
        A-priori bound on every distance (positive).
    method : {"best", "kl", "bernstein"}
        As in :func:`sensitivity_ucb`; ``"best"`` is the larger of both lower bounds, each at ``β/2``.

    Returns
    -------
    float
        ``L`` with ``Pr[Δ* < L] <= β``; ``0 <= L <=`` the plug-in value.

    Notes
    -----
    With ``X_i = (d_i / max_distance)²`` the KL bound is :func:`kl_lower_bound` (Hoeffding 1963
    applied to ``1 - X``) and the empirical Bernstein bound is Maurer & Pontil (2009, Thm. 4)
    applied to ``1 - X`` (same sample variance). Used to subtract rerun jitter from an upper
    bound without invalidating it (:func:`context_adjusted_rms` of a UCB and an LCB); see
    ``docs/proofs/sensitivity-bounds.md``.
    """
    where = "sensitivity_lcb"
    method = check_one_of(method, "method", where, UCB_METHODS)
    beta = check_in_range(beta, "beta", where, **bounds("beta"))
    max_distance = check_in_range(max_distance, "max_distance", where, low=0.0, low_open=True)
    d = _check_distances(distances, where, min_size=2)
    _check_range(d, max_distance, where)
    x = np.clip((d / max_distance) ** 2, 0.0, 1.0)
    mean = float(np.clip(np.mean(x), 0.0, 1.0))
    if method == "kl":
        bound = kl_bound(mean, x.size, beta, upper=False)
    elif method == "bernstein":
        bound = _bernstein_lower(x, beta)
    else:
        bound = max(kl_bound(mean, x.size, beta / 2.0, upper=False), _bernstein_lower(x, beta / 2.0))
    bound = max(0.0, min(bound, mean))
    lcb = below(max_distance * math.sqrt(bound)) if bound > 0 else 0.0
    plug_in = float(math.sqrt(float(np.mean(d * d))))
    return float(max(0.0, min(lcb, plug_in)))


# -------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class SensitivityEstimate:
    """RMS sensitivity of one neighbour generator.

    Attributes
    ----------
    name : str
        Generator name (e.g. ``"swap"``, ``"paraphrase"``).
    delta_star : float
        Plug-in ``Δ*`` (:func:`rms`).
    m : int
        Number of neighbours used.
    ucb : float or None
        Upper ``(1 - beta)`` confidence bound on ``Δ*`` (None unless beta and max_distance were given).
    beta : float or None
        Failure probability of ``ucb``.
    ucb_method : str or None
        Method of :func:`sensitivity_ucb` used for ``ucb``.
    max_distance : float or None
        A-priori bound on every distance, when given.
    center_shift : float or None
        ``S_μ``: RMS of ``sqrt(d)·|μ(D) - μ(D')|`` over the neighbours (batch-mean centre only).
    """

    name: str
    delta_star: float
    m: int
    ucb: float | None = None
    beta: float | None = None
    ucb_method: str | None = None
    max_distance: float | None = None
    center_shift: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


@validate_params
def estimate(
    distances: ArrayLike,
    *,
    name: str,
    beta: float | None = None,
    max_distance: float | None = None,
    mean_shifts: ArrayLike | None = None,
    ucb_method: str = "best",
    weights: ArrayLike | None = None,
) -> SensitivityEstimate:
    """Estimate the RMS sensitivity of one generator, with an optional confidence bound.

    Parameters
    ----------
    distances : array_like of shape (m,)
        Neighbour distances ``||f(D) - f(D'_i)||_2`` (drop missing judgments first).
    name : str
        Generator name recorded in the estimate.
    beta : float, optional
        Failure probability of the upper confidence bound; requires ``max_distance``.
    max_distance : float, optional
        A-priori bound on every distance; checked against ``distances`` when given.
    mean_shifts : array_like of shape (m,), optional
        ``sqrt(d)·|μ(D) - μ(D'_i)|`` per neighbour for a batch-mean centre; their RMS is ``S_μ``.
    ucb_method : {"best", "kl", "bernstein"}
        Passed to :func:`sensitivity_ucb`.
    weights : array_like of shape (m,), optional
        Positive integer multiplicities: ``distances[j]`` (and ``mean_shifts[j]``) stands for ``weights[j]``
        neighbours with that very distance (e.g. reruns with one difference, kept once). The estimate equals the
        one from the distances repeated their weights' times; ``m`` counts the neighbours so repeated.

    Returns
    -------
    SensitivityEstimate
    """
    where = "estimate"
    if not isinstance(name, str) or not name:
        raise InputError(f"The 'name' parameter of {where} must be a non-empty string. Got {name!r} instead.")
    d = _check_distances(distances, where)
    ucb_method = check_one_of(ucb_method, "ucb_method", where, UCB_METHODS)
    w = None
    if weights is not None:
        w = np.asarray(weights)
        if w.shape != d.shape or not np.issubdtype(w.dtype, np.integer) or np.any(w < 1):
            raise InputError(f"The 'weights' parameter of {where} must hold one positive integer per distance "
                             f"({d.size}). Got {w.size} value(s) of dtype {w.dtype} instead.")
    n_total = d.size if w is None else int(w.sum())
    md = None
    if max_distance is not None:
        md = check_in_range(max_distance, "max_distance", where, low=0.0, low_open=True)
        _check_range(d, md, where)
    ucb = None
    b = None
    if beta is not None:
        b = check_in_range(beta, "beta", where, **bounds("beta"))
        if md is None:
            raise InputError(
                f"The 'max_distance' parameter of {where} must be given with 'beta': "
                "a confidence bound needs an a-priori bound on the distances. Got None instead."
            )
        if n_total < 2:
            raise InputError(
                f"The 'distances' parameter of {where} must hold at least 2 values for a confidence bound. "
                f"Got {n_total} instead."
            )
        ucb = _ucb(d, beta=b, max_distance=md, method=ucb_method, weights=w)
    shift = None
    if mean_shifts is not None:
        s = check_finite_array(mean_shifts, "mean_shifts", where, ndim=1)
        if s.shape != d.shape:
            raise InputError(
                f"The 'mean_shifts' parameter of {where} must have one value per neighbour ({d.size}). "
                f"Got {s.size} instead."
            )
        if np.any(s < 0):
            raise InputError(f"The 'mean_shifts' parameter of {where} must be non-negative. Got minimum {s.min()!r} instead.")
        shift = float(math.sqrt(_mean(s * s, w)))
    return SensitivityEstimate(
        name=name,
        delta_star=float(math.sqrt(_mean(d * d, w))),
        m=n_total,
        ucb=ucb,
        beta=b,
        ucb_method=ucb_method if ucb is not None else None,
        max_distance=md,
        center_shift=shift,
    )


# ------------------------------------------------------------------------ combination


@dataclass(frozen=True)
class CombinedSensitivity:
    """Several generators' sensitivities folded into one (paper, "Combination Logic").

    Attributes
    ----------
    how : str
        ``"max"`` (conservative envelope) or ``"rms"`` (root mean square of the components).
    delta_star : float
        Combined point sensitivity.
    ucb : float or None
        Combined upper confidence bound (None unless every component has one).
    components : dict of str to float
        Each generator's ``Δ*`` after flooring.
    floor : float
        Lower bound applied to every component before aggregation.
    ucb_components : dict of str to float or None
        Each generator's floored UCB (None when ``ucb`` is None).
    generators : dict of str to dict
        Each generator's unfloored record ``{"delta_star", "m", "ucb"}`` (``m`` and ``ucb`` are None
        for plain-float inputs); the shape of ``Certificate.generators``.
    """

    how: str
    delta_star: float
    ucb: float | None
    components: dict[str, float]
    floor: float
    ucb_components: dict[str, float] | None = None
    generators: dict[str, dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def _aggregate(values: Sequence[float], how: str) -> float:
    v = np.asarray(values, dtype=float)
    if how == "max":
        return float(v.max())
    return float(math.sqrt(float(np.mean(v * v))))


def combine(
    estimates: Sequence[SensitivityEstimate] | Mapping[str, float],
    *,
    how: str = "max",
    floor: float = DEFAULT_FLOOR,
) -> CombinedSensitivity:
    """Combine the sensitivities of several neighbour generators.

    Parameters
    ----------
    estimates : sequence of SensitivityEstimate, or mapping of name to float
        One entry per generator. Plain floats (e.g. a schematic ``S_sch``) carry no UCB.
    how : {"max", "rms"}
        ``"max"``: ``max_k S_k`` (certifies every generator and their mixtures, paper App. B);
        ``"rms"``: ``sqrt(mean_k S_k²)`` (the paper's ``combined_abb_rms``; equals the RMS
        sensitivity of the uniform mixture of the generators).
    floor : float
        Every component is raised to at least ``floor`` before aggregation (paper: ``1e-3``).

    Returns
    -------
    CombinedSensitivity

    Notes
    -----
    UCBs combine the same way as the point values. For a statement that holds for all ``K``
    generators simultaneously at level ``1 - β``, compute each generator's UCB at
    ``bonferroni(β, K) = β / K``; the union bound then gives the combined level.
    """
    where = "combine"
    how = check_one_of(how, "how", where, COMBINE_HOW)
    floor = check_in_range(floor, "floor", where, low=0.0)
    items: list[tuple[str, float, float | None]] = []
    sizes: dict[str, int | None] = {}
    if isinstance(estimates, Mapping):
        for key, value in estimates.items():
            v = check_in_range(value, f"estimates[{key!r}]", where, low=0.0)
            items.append((str(key), v, None))
            sizes[str(key)] = None
    else:
        for i, est in enumerate(estimates):
            if not isinstance(est, SensitivityEstimate):
                raise TypeError(
                    f"The 'estimates' parameter of {where} must hold SensitivityEstimate objects. "
                    f"Got {type(est).__name__} at position {i} instead."
                )
            items.append((est.name, est.delta_star, est.ucb))
            sizes[est.name] = est.m
    if not items:
        raise InputError(f"The 'estimates' parameter of {where} must hold at least one generator. Got 0 instead.")
    names = [n for n, _, _ in items]
    if len(set(names)) != len(names):
        raise InputError(f"The 'estimates' parameter of {where} must have distinct names. Got {names!r} instead.")
    components = {n: max(v, floor) for n, v, _ in items}
    delta = _aggregate(list(components.values()), how)
    ucb = None
    ucb_components = None
    if all(u is not None for _, _, u in items):
        ucb_components = {n: max(float(u), floor) for n, _, u in items}  # type: ignore[arg-type]
        ucb = _aggregate(list(ucb_components.values()), how)
    generators = {n: {"delta_star": v, "m": sizes[n], "ucb": u} for n, v, u in items}
    return CombinedSensitivity(
        how=how,
        delta_star=delta,
        ucb=ucb,
        components=components,
        floor=floor,
        ucb_components=ucb_components,
        generators=generators,
    )


@validate_params
def bonferroni(beta: float, k: int) -> float:
    """Per-generator failure probability ``β / k`` for a simultaneous level-``(1 - β)`` statement.

    Parameters
    ----------
    beta : float
        Overall failure probability in ``(0, 1)``.
    k : int
        Number of generators (``>= 1``).

    Returns
    -------
    float
    """
    beta = check_in_range(beta, "beta", "bonferroni", **bounds("beta"))
    k = check_int(k, "k", "bonferroni", low=1)
    return beta / k


def context_adjusted_rms(total: float, intrinsic: float) -> float:
    """Remove intrinsic jitter from a sensitivity: ``sqrt(max(0, total² - intrinsic²))``.

    Parameters
    ----------
    total : float
        RMS sensitivity measured under the generator (includes rerun jitter); ``>= 0``.
    intrinsic : float
        RMS sensitivity across plain reruns of the same context; ``>= 0``.

    Returns
    -------
    float
        The context-adjusted RMS (0 when the jitter explains all of ``total``).

    Notes
    -----
    If the perturbation effect and the jitter are uncorrelated, mean squared distances add, so
    the perturbation's share is ``total² - intrinsic²`` (paper, "Combination Logic"). This is a
    modelling assumption, not a bound; the certified value should not rely on it when the
    jitter itself is part of the bias to be bounded.
    """
    t = check_in_range(total, "total", "context_adjusted_rms", low=0.0)
    j = check_in_range(intrinsic, "intrinsic", "context_adjusted_rms", low=0.0)
    return float(math.sqrt(max(0.0, t * t - j * j)))

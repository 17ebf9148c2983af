"""The one probability every bound is built from, and the shrunk shift it is applied to (private).

``M(D) - M(D') = v + B`` with ``B = Z - Z' ~ N(0, 2 sigma^2 I_d)`` independent of the neighbour draw
and ``v = g_D(f(D)) - g_D'(f(D'))`` the shift of the shrunk scores.  For a shift of squared norm ``q``,

    Pr[||v + B||_2 > tau] = ncx2.sf(tau^2 / (2 sigma^2); d, q / (2 sigma^2))      (sigma > 0)
                          = 1[q > tau^2]                                         (sigma = 0)

because ``||v + B||^2 / (2 sigma^2)`` is noncentral chi-square with ``d`` degrees of freedom and
noncentrality ``||v||^2 / (2 sigma^2)`` (B is rotation invariant, so only ``||v||`` matters).
The tail is nondecreasing in ``q`` (the noncentral chi-square family is stochastically increasing
in its noncentrality), which every worst case below uses.

Shift of the shrunk scores (``g(x) = alpha x + (1 - alpha) mu``): for a centre fixed within the
batch ``v = alpha Delta`` and ``q = alpha^2 ||Delta||^2``.  For the batch-mean centre
``mu(D) = mean(f(D)) 1``, with ``s^2 = d mean(Delta)^2``,
``q = alpha^2 ||Delta||^2 + (1 - alpha^2) s^2`` (``audit.effective_sq_distances``), and when
``s^2 <= rho ||Delta||^2`` almost surely (``rho = k/d`` for Hamming-k neighbours by Cauchy–Schwarz,
``rho = 1`` always) ``q <= kappa(alpha)^2 ||Delta||^2`` with ``kappa^2 = alpha^2 + (1 - alpha^2) rho``.

Float contract: scipy's ``ncx2.sf``/``chi2.sf`` are trusted to a relative error of ``1e-7``; every
probability returned here is moved up by that much (``_up_prob``) so a computed bound never
undershoots the true one by float error.  numpy/scipy only.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from scipy import special, stats

from biasbound._rounding import pad

try:  # the Boost routine scipy.stats.ncx2.sf calls, without its argument-checking layer (about 6x faster)
    from scipy.special._ufuncs import _ncx2_sf as _NCX2_SF
except ImportError:  # pragma: no cover - other scipy versions: the public function
    _NCX2_SF = None

__all__: list[str] = []

#: relative error allowance on scipy's chi-square tails (see module docstring)
SCIPY_REL_ERR = 1e-7
#: tau^2 / (2 sigma^2) above which the noncentral tail is replaced by the triangle-inequality bound
_HUGE = 1e7


def _up_prob(p: np.ndarray | float) -> np.ndarray:
    """Move computed probabilities up past their float error, clipped to [0, 1]."""
    p = np.asarray(p, dtype=float)
    return np.clip(p * (1.0 + SCIPY_REL_ERR) + np.where(p > 0, 1e-300, 0.0), 0.0, 1.0)


def tail(q: np.ndarray | float, *, tau: float, sigma: float, dim: int) -> np.ndarray:
    """``Pr[||v + B|| > tau]`` for shifts of squared norm ``q`` (array), rounded up.

    ``sigma = 0`` gives the exact indicator ``q > tau^2`` (no rounding needed).
    """
    q = np.asarray(q, dtype=float)
    if sigma == 0.0:
        return (q > tau * tau).astype(float)  # [proof:tail-indicator]
    scale = 2.0 * sigma * sigma
    x = tau * tau / scale
    if x > _HUGE:  # [proof:tail-tiny-sigma] Boost's series do not converge here: the triangle inequality instead
        r = np.sqrt(q)
        gap = np.maximum(tau - r, 0.0)
        p = np.where(r < tau, stats.chi2.sf(gap * gap / scale, dim), 1.0)
        return _up_prob(np.where(np.isnan(p), 1.0, p))
    lam = q / scale
    flat = lam.ravel()
    if flat.size <= 8 and _NCX2_SF is not None:  # a handful (a random judge's levels)
        return np.array(_few_tails(x, int(dim), tuple(flat.tolist())), dtype=float).reshape(q.shape)
    if flat.size <= 64:  # few values: evaluate each (the same value per element as through the unique ones)
        uniq, inverse = flat, np.arange(flat.size)
    elif flat.size and bool(np.all(flat[1:] >= flat[:-1])):  # sorted (a population's shifts): unique in one pass
        first = np.empty(flat.size, dtype=bool)
        first[0] = True
        np.not_equal(flat[1:], flat[:-1], out=first[1:])
        uniq, inverse = flat[first], np.cumsum(first) - 1
    else:
        uniq, inverse = np.unique(lam, return_inverse=True)
    out = np.empty_like(uniq)
    zero = uniq == 0.0
    if zero.any():  # chi2.sf's own routine (scipy.special.chdtrc) without the argument-checking layer
        out[zero] = special.chdtrc(float(dim), x)
    if np.any(~zero):
        lam_nz = uniq[~zero]
        out[~zero] = (_NCX2_SF(x, float(dim), lam_nz) if _NCX2_SF is not None
                      else stats.ncx2.sf(x, dim, lam_nz))  # [proof:tail-ncx2]
    out = np.where(np.isnan(out), 1.0, out)  # a failed evaluation is replaced by the trivial bound
    return _up_prob(out[inverse.ravel()].reshape(q.shape))


@functools.lru_cache(maxsize=8192)
def _few_tails(x: float, dim: int, lams: tuple[float, ...]) -> tuple[float, ...]:
    """:func:`tail`'s values (rounded up) at noncentralities ``lams`` and ``x = tau^2 / (2 sigma^2)``: the same steps per
    value in Python floats (IEEE like numpy's; a ufunc gives one element the value it gives it inside an array).

    A pure function of its arguments, remembered: a judge's models share their random-judge levels, so every model
    of one dimension evaluates its checked point and its sigma grid at the same shifts (only the weights differ)."""
    zero_p = None
    vals = []
    for v in lams:
        if v == 0.0:
            zero_p = float(special.chdtrc(float(dim), x)) if zero_p is None else zero_p
            p = zero_p
        else:
            p = float(_NCX2_SF(x, float(dim), v))
        p = 1.0 if p != p else p  # NaN: the trivial bound
        p = p * (1.0 + SCIPY_REL_ERR) + (1e-300 if p > 0 else 0.0)  # as _up_prob
        vals.append(min(max(p, 0.0), 1.0))
    return tuple(vals)


def weighted_sum(w: np.ndarray, p: np.ndarray, const: float, *, groups: np.ndarray | None = None) -> float:
    """``sum(w * p) + const`` rounded up past its float error (a sum of several terms gains 1e-12 relative).

    ``groups`` (optional): an integer label per term such that equal labels have equal ``p``; with equal
    weights the sum is then taken over the distinct terms times their counts, exactly (as rationals, rounded
    once: the same correctly rounded value as ``math.fsum`` over every term)."""
    v = _exact_sum(w, p, groups) + const
    if w.size > 1 or const:
        v = pad(v)  # [proof:sum-rounding]
    return min(1.0, v) if v > 0 else 0.0


def _exact_sum(w: np.ndarray, p: np.ndarray, groups: np.ndarray | None) -> float:
    """The correctly rounded ``sum(w * p)``: ``math.fsum`` of the terms, or of their distinct values times counts."""
    terms = w * p
    if groups is not None and terms.size > 64 and bool(np.all(w == w.flat[0])):
        counts = np.bincount(groups.ravel())
        if counts.size <= 256:
            first = np.zeros(counts.size, dtype=np.int64)
            first[groups.ravel()[::-1]] = np.arange(terms.size - 1, -1, -1)  # one term of each label
            distinct = terms.ravel()[first].tolist()
            total = sum((Fraction(t) * int(c) for t, c in zip(distinct, counts.tolist()) if c), Fraction(0))
            return float(total)  # Fraction -> float rounds once, to nearest (as fsum does)
    return math.fsum(terms.ravel().tolist())


def kappa_sq(alpha: float, shift_ratio: float | None) -> float:
    """``kappa(alpha)^2``: ``alpha^2`` (fixed centre) or ``alpha^2 + (1 - alpha^2) rho`` (batch centre)."""
    a2 = alpha * alpha
    if shift_ratio is None:
        return a2
    return a2 + (1.0 - a2) * shift_ratio  # [proof:kappa]


@functools.lru_cache(maxsize=4096)
def _chi2_isf(delta: float, dim: int) -> float:
    """``chi2.isf(delta, dim)``, remembered: a judge's thousands of models share a few dimensions."""
    return float(stats.chi2.isf(delta, dim))


def noise_only_sigma(tau: float, delta: float, dim: int) -> float:
    """Largest sigma at which the noise alone (zero shift) stays within delta: ``tau / sqrt(2 chi2.isf(delta, d))``.

    No shrinkage can beat this: any sigma above it violates every bound; used as the upper end of searches.
    """
    q = _chi2_isf(float(delta), int(dim))
    if not math.isfinite(q) or q <= 0:
        return math.inf
    return tau / math.sqrt(2.0 * q)  # [proof:noise-only]


def check_point(tau: float, alpha: float, sigma: float, dim: int, where: str) -> tuple[float, float, float, int]:
    """Validate ``(tau, alpha, sigma, dim)`` at a bound's public entry (one error sentence each)."""
    from biasbound._validation import check_in_range, check_int
    from biasbound.parameters import bounds

    t = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    a = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)  # a point of the domain (parameters.AT_A_POINT)
    s = check_in_range(sigma, "sigma", where, **bounds("sigma"))
    d = check_int(dim, "dim", where, **bounds("dim"))
    return t, a, s, d


def check_record(knowledge: object, types: tuple[type, ...], where: str) -> None:
    if not isinstance(knowledge, types):
        names = " or ".join(t.__name__ for t in types)
        raise TypeError(f"The 'knowledge' parameter of {where} must be {names}. Got {type(knowledge).__name__} instead.")

"""Radii, rounding helpers and the order-statistic index behind :mod:`biasbound.abb` (private).

The pieces of the calibration that involve neither the shrinkage nor the noise scale:

* the rounding contract (``_up``/``_down`` move a computed bound past its float error in the
  safe direction) and the float-safe split ``delta = delta_B + delta_Delta``;
* the noise radii ``r`` with ``Pr[chi2_d > r^2] <= delta_B``: Laurent–Massart (paper,
  Theorem 3.1) and the exact chi-square quantile (tight calibration), both rounded up;
* the distribution-free order-statistic index of a quantile bound.

The public names are re-exported by :mod:`biasbound.abb`; import them from there.
numpy/scipy only: no I/O, no pandas.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from biasbound._validation import check_in_range, check_int

__all__ = ["chi2_radius", "laurent_massart_radius", "order_statistic_index"]

_EPS = 2.0**-52
_SLACK = 16 * _EPS  # relative float error allowance for a chain of a few IEEE operations


# --------------------------------------------------------------------------- rounding helpers
def _up(x: float) -> float:
    """Round a computed non-negative quantity up past its float error (bounds we must not undershoot)."""
    if x == 0.0 or math.isinf(x):
        return x
    y = x * (1.0 + _SLACK) if x > 0 else x * (1.0 - _SLACK)
    return math.nextafter(y, math.inf)


def _down(x: float) -> float:
    """Round a computed quantity down past its float error (quantities we must not overshoot)."""
    if x == 0.0 or math.isinf(x):
        return x
    y = x * (1.0 - _SLACK) if x > 0 else x * (1.0 + _SLACK)
    return math.nextafter(y, -math.inf)


def _split(delta: float, delta_B: float) -> tuple[float, float]:
    """Return ``(delta_B, delta_Delta)`` with ``delta_Delta = delta - delta_B`` and a float sum ``<= delta``."""
    dd = delta - delta_B
    while dd > 0 and delta_B + dd > delta:
        dd = math.nextafter(dd, 0.0)
    return delta_B, max(dd, 0.0)


# --------------------------------------------------------------------------- radii
def laurent_massart_radius(dim: int, delta_B: float) -> float:
    """Laurent–Massart radius ``r`` with ``Pr[chi2_d > r^2] <= delta_B``, rounded up.

    Parameters
    ----------
    dim : int
        Degrees of freedom ``d >= 1`` (the number of scores).
    delta_B : float
        Tail probability in (0, 1).

    Returns
    -------
    float
        ``sqrt(d + 2 sqrt(d log(1/delta_B)) + 2 log(1/delta_B))``, rounded up.

    Notes
    -----
    Laurent & Massart (2000), Lemma 1: ``Pr[chi2_d - d >= 2 sqrt(d x) + 2x] <= exp(-x)``.
    With ``x = log(1/delta_B)`` and ``B ~ N(0, 2 sigma^2 I_d)`` this gives
    ``Pr[||B|| > sqrt(2) sigma r] <= delta_B`` (proof of Theorem 3.1).  Valid for every
    ``d >= 1`` with no further assumption; rounded up so it never undershoots.

    References
    ----------
    B. Laurent and P. Massart, "Adaptive estimation of a quadratic functional by model
    selection", Ann. Statist. 28(5), 2000.  Paper: Theorem 3.1, Corollary 3.2.
    """
    d = check_int(dim, "dim", "laurent_massart_radius", low=1)
    dB = check_in_range(delta_B, "delta_B", "laurent_massart_radius", low=0.0, high=1.0, low_open=True, high_open=True)
    return _lm(d, dB)


def _lm(d: int, dB: float) -> float:
    x = _up(-math.log(dB))
    return _up(math.sqrt(_up(d + 2.0 * math.sqrt(d * x) + 2.0 * x)))


def chi2_radius(dim: int, delta_B: float) -> float:
    """Exact chi-square radius ``r`` with ``Pr[chi2_d > r^2] <= delta_B``, rounded up.

    Parameters
    ----------
    dim : int
        Degrees of freedom ``d >= 1``.
    delta_B : float
        Tail probability in (0, 1).

    Returns
    -------
    float
        ``sqrt(chi2.isf(delta_B, d))`` rounded up until ``chi2.sf(r^2, d) <= delta_B`` holds
        numerically, and never above :func:`laurent_massart_radius` (both are valid, the
        smaller is returned).

    Notes
    -----
    ``||B||^2 / (2 sigma^2) ~ chi2_d`` exactly, so the ``(1 - delta_B)`` quantile is the
    smallest valid radius; Laurent–Massart is an upper bound on it.  Used by the tight
    calibrator in place of the paper's Laurent–Massart radius (never looser).

    References
    ----------
    Paper: proof of Theorem 3.1 (the chi-square step); ``docs/proofs/tight-calibration.md``.
    """
    d = check_int(dim, "dim", "chi2_radius", low=1)
    dB = check_in_range(delta_B, "delta_B", "chi2_radius", low=0.0, high=1.0, low_open=True, high_open=True)
    return _chi2r(d, dB)


def _chi2r(d: int, dB: float) -> float:
    lm = _lm(d, dB)
    q = float(stats.chi2.isf(dB, d))
    if not math.isfinite(q) or q <= 0:
        return lm
    r = _up(math.sqrt(q))
    for _ in range(200):
        if float(stats.chi2.sf(r * r, d)) <= dB:
            break
        r = _up(r * (1.0 + 1e-12))
    else:  # pragma: no cover - scipy failed to converge; the LM radius is always valid
        return lm
    return min(r, lm)


def _radius(kind: str, d: int, dB: float) -> float:
    return _lm(d, dB) if kind == "laurent-massart" else _chi2r(d, dB)


def order_statistic_index(m: int, delta_Delta: float, beta: float) -> int | None:
    """Smallest ``j`` with ``P(Bin(m, 1 - delta_Delta) >= j) <= beta`` (``None`` when no ``j <= m`` works).

    Parameters
    ----------
    m : int
        Number of i.i.d. observed neighbour distances.
    delta_Delta : float
        Tail probability in (0, 1) the quantile bound must achieve.
    beta : float
        Allowed failure probability in (0, 1) over the neighbour sample.

    Returns
    -------
    int or None
        The 1-based index ``j``.  Then ``Pr[||Delta|| > X_(j)] <= delta_Delta`` holds with
        probability at least ``1 - beta`` over the sample.

    Notes
    -----
    With ``q`` the ``(1 - delta_Delta)`` quantile of ``||Delta||``, ``X_(j) < q`` needs at
    least ``j`` of the ``m`` draws below ``q``, and each is below ``q`` with probability at
    most ``1 - delta_Delta``; so ``Pr[X_(j) < q] <= binom.sf(j - 1, m, 1 - delta_Delta)``.
    A margin of ``1e-10`` relative is kept against the scipy tail's float error.

    References
    ----------
    H. A. David and H. N. Nagaraja, *Order Statistics*, 3rd ed., 2003, Sec. 7.2
    (distribution-free confidence bounds for quantiles).
    """
    mm = check_int(m, "m", "order_statistic_index", low=1)
    dD = check_in_range(delta_Delta, "delta_Delta", "order_statistic_index", low=0.0, high=1.0, low_open=True, high_open=True)
    b = check_in_range(beta, "beta", "order_statistic_index", low=0.0, high=1.0, low_open=True, high_open=True)
    return _os_index(mm, dD, b)


def _os_index(m: int, dD: float, beta: float) -> int | None:
    tails = stats.binom.sf(np.arange(m), m, 1.0 - dD)  # tails[j-1] = P(Bin >= j)
    ok = np.nonzero(tails <= beta * (1.0 - 1e-10))[0]
    if ok.size == 0:
        return None
    return int(ok[0]) + 1

"""Bound unit: moment (and range) knowledge — the exact worst case over all such distributions.

Statement: if ``E||Delta||^2 <= U2`` (and ``||Delta|| <= A`` a.s. when known), then with ``q`` the squared
norm of the shrunk shift, ``E q <= u`` and ``q <= Q`` where ``u = kappa^2 U2`` (also
``<= alpha^2 U2 + (1 - alpha^2) shift_U2`` for a batch centre with a bound on ``E s^2``) and
``Q = kappa^2 A^2``, and

    Pr[||M(D) - M(D')|| > tau] <= cav h (u),    h(q) = ncx2.sf(tau^2 / (2 sigma^2); d, q / (2 sigma^2)),

the concave majorant of ``h`` on ``[0, Q]`` (``[0, inf)`` without ``A``) evaluated at ``u``: the
supremum of ``E h(q)`` over all distributions with ``E q <= u`` on that interval (attained in the limit by
two-point distributions), i.e. the exact worst case for this knowledge.  ``sigma = 0``: ``min(1, u/tau^2)``
(Markov, which is then exact) or 0 when ``Q <= tau^2``.  The paper's Cor. 3.2 is a weaker bound on
the same quantity.  Proof: ``docs/proofs/moments.md``.  numpy/scipy only.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from biasbound._rounding import above, pad
from biasbound.bounds._knowledge import Moments
from biasbound.bounds._tail import check_point, check_record, kappa_sq, tail
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["EXACT", "NAME", "applies", "concave_majorant_at", "violation_bound"]

NAME = "moments"
EXACT = True

_N_COARSE = 65
_N_DENSE = 193
_N_REFINE = 65


def applies(knowledge: object) -> str | None:
    return None if isinstance(knowledge, Moments) else "needs a bound on E||Delta||^2"


@validate_params
def concave_majorant_at(u: float, *, tau: float, sigma: float, dim: int, q_max: float | None) -> float:
    """``cav h(u)`` for ``h(q) = Pr[||v + B|| > tau]`` at ``||v||^2 = q``, on ``[0, q_max]`` (``None``: ``[0, inf)``).

    Computed from above: ``h`` is nondecreasing, so on a grid ``g_0 = 0 < ... < g_n`` the step function
    ``hbar = h(g_{i+1})`` on ``(g_i, g_{i+1}]`` dominates ``h``; the concave majorant of ``hbar`` (the upper
    hull of the points ``(g_i, h(g_{i+1}))`` and the right end) dominates that of ``h``.
    """
    if sigma == 0.0:
        if q_max is not None and q_max <= tau * tau:
            return 0.0  # [proof:sigma0-range]
        if u <= 0:
            return 0.0
        return min(1.0, above(u / (tau * tau)))  # [proof:sigma0-markov]
    if q_max is not None and u >= q_max:
        return float(tail(q_max, tau=tau, sigma=sigma, dim=dim))
    g, h = _base_grid(tau, sigma, dim)
    if q_max is not None:
        keep = g < q_max
        g = np.append(g[keep], q_max)
        h = np.append(h[keep], tail(q_max, tau=tau, sigma=sigma, dim=dim))
    elif u >= g[-1]:
        return 1.0
    val, ends = _majorant_at_points(g, h, u, q_max)
    for _ in range(5):  # refine the grid around the two points the majorant at u rests on (any grid is valid)
        extra = []
        for e in ends:
            i = int(np.searchsorted(g, e))
            lo, hi = g[max(i - 3, 0)], g[min(i + 3, g.size - 1)]
            extra.append(np.linspace(lo, hi, _N_REFINE))
        new = np.setdiff1d(np.concatenate(extra), g)
        if new.size == 0:
            break
        g = np.concatenate([g, new])
        h = np.concatenate([h, tail(new, tau=tau, sigma=sigma, dim=dim)])
        order = np.argsort(g, kind="stable")
        g, h = g[order], h[order]
        prev = val
        val, ends = _majorant_at_points(g, h, u, q_max)
        if val >= prev * (1.0 - 1e-4):  # converged (the value only decreases as the grid refines)
            break
    return min(1.0, pad(val) + 1e-300)


@functools.lru_cache(maxsize=64)
def _base_grid(tau: float, sigma: float, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """A grid over the whole rise of ``h`` (dense where it rises) and ``h`` on it; shared by every ``u`` and range."""
    scale = 2.0 * sigma * sigma
    x = tau * tau / scale
    sd = math.sqrt(2.0 * dim + 4.0 * max(x - dim, 0.0))
    top = (x + 40.0 * sd + 100.0) * scale  # h(top) is 1 to double precision; beyond it hbar = 1 anyway
    c = max(x - dim, 0.0)
    dense = np.linspace(max(c - 15.0 * sd, 0.0), c + 15.0 * sd, _N_DENSE) * scale
    g = np.unique(np.concatenate([np.linspace(0.0, top, _N_COARSE), dense[dense < top], [0.0, top]]))
    h = tail(g, tau=tau, sigma=sigma, dim=dim)
    g.setflags(write=False)
    h.setflags(write=False)
    return g, h


def _majorant_at_points(g: np.ndarray, h: np.ndarray, u: float, q_max: float | None) -> tuple[float, tuple[float, float]]:
    """Concave majorant at ``u`` of the step function ``hbar``: a value from above, and the two points it rests on.

    The corner points of ``hbar`` are ``(g_i, h(g_{i+1}))`` and the right end ``(g_n, h(g_n))`` (``(g_n, 1)``
    without a range).  The majorant at ``u`` is the largest chord value at ``u`` between a point left of ``u`` and one
    right of it (computed over all pairs when there are few), equivalently, by LP duality,
    ``min_b max_i [y_i + b (u - x_i)]``: every line above all the points bounds it at ``u``, so any ``b`` gives a
    valid value; the bisection on ``b`` (where the best left and right points balance) only makes it small.
    """
    px = g
    py = np.append(h[1:], 1.0 if q_max is None else h[-1])  # [proof:step-majorant]
    left = px <= u
    xl, yl = px[left], py[left]
    xr, yr = px[~left], py[~left]
    if xr.size == 0:
        return float(yl.max()), (float(xl[-1]), float(xl[-1]))
    dl, dr = u - xl, xr - u
    if xl.size * xr.size <= 40_000:  # few pairs: the largest chord value at u over all pairs, exactly
        span = xr[None, :] - xl[:, None]  # > 0: right points lie strictly right of u, left ones at or left of it
        chord = yl[:, None] + (yr[None, :] - yl[:, None]) * (dl[:, None] / span)  # [proof:hull]
        k = int(np.argmax(chord))
        i, j = divmod(k, chord.shape[1])
        return float(chord[i, j]), (float(xl[i]), float(xr[j]))

    def sides(b: float) -> tuple[float, float]:
        return float(np.max(yl + b * dl)), float(np.max(yr - b * dr))

    lo, hi = 0.0, 1.0
    while sides(hi)[0] < sides(hi)[1] and hi < 1e300:
        hi *= 16.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-7 * hi:
            break
        a, c = sides(mid)
        if a < c:
            lo = mid
        else:
            hi = mid
    best = min((max(sides(b)), b) for b in (lo, hi))  # [proof:hull] a line above every point, at u
    b = best[1]
    return best[0], (float(xl[int(np.argmax(yl + b * dl))]), float(xr[int(np.argmax(yr - b * dr))]))


def effective(alpha: float, knowledge: Moments) -> tuple[float, float | None]:
    """``(u, Q)``: bounds on the mean and the maximum of the squared shrunk shift."""
    k2 = kappa_sq(alpha, knowledge.shift_ratio)
    u = k2 * knowledge.U2
    if knowledge.shift_U2 is not None:
        a2 = alpha * alpha
        u = min(u, a2 * knowledge.U2 + (1.0 - a2) * knowledge.shift_U2)  # [proof:batch-moment]
    Q = None if knowledge.A is None else k2 * knowledge.A * knowledge.A
    return u, Q


def _bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Moments) -> float:
    u, Q = effective(alpha, knowledge)
    return concave_majorant_at(u, tau=tau, sigma=sigma, dim=dim, q_max=Q)


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Moments) -> float:
    """Exact worst-case ``Pr[||M(D) - M(D')|| > tau]`` given ``E||Delta||^2 <= U2`` (and ``||Delta|| <= A``).

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise ``>= 0`` (0 = deterministic), dimension.
    knowledge : Moments

    Returns
    -------
    float
        The concave majorant of the noncentral chi-square tail at the moment bound (computed from above).
    """
    where = "moments.violation_bound"
    t, a, s, d = check_point(tau, alpha, sigma, dim, where)
    check_record(knowledge, (Moments,), where)
    return _bound(t, a, s, d, knowledge)

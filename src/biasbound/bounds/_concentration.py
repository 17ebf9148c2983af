"""Concentration for a random judge: the k-item sum's tail (Chernoff) and the norm of a sum of independent
vectors with independent coordinates (private).

* :func:`sum_tail_distribution` — Hamming-k, model view: ``||Delta_S||^2`` is the sum of ``k`` items' ``x``, the
  items drawn uniformly without replacement.  From the worst per-item distribution of a :class:`RandomJudge` record
  (values ``x_j``, weights ``w_j``), Hoeffding (1963, Thm. 4) and independence give
  ``E exp(lam ||Delta_S||^2) <= (sum_j w_j exp(lam x_j))^k``; Chernoff bounds the tail at every lattice point of the
  sum and the layer cake turns the tail bounds into a distribution whose violation probability bounds the true one.
* :func:`norm_deviation` — ``r`` with ``Pr[||W|| > r] <= p`` for ``W`` with independent coordinates, each a sum of
  independent zero-mean terms bounded by ``c_j`` in size with variance sum at most ``v_j``: the smaller of the
  per-coordinate Bernstein union and a Chernoff bound on the sum of the (truncated) squares.

Proof: ``docs/proofs/concentration.md``.  numpy/scipy only.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import log_ndtr, logsumexp

__all__ = ["bernstein", "norm_deviation", "norm_route", "sum_tail_distribution"]

#: most points of the k-sum's tail grid (a coarser grid rounds each point's tail up to the next lattice point)
_MAX_POINTS = 4096
#: lam * x_K over which the Chernoff bound is minimised (a fixed grid: any lam >= 0 gives a valid bound)
_LAM = np.concatenate([[0.0], np.geomspace(1e-3, 1e7, 400)])


def bernstein(v: float, c: float, log_term: float) -> float:
    """``t`` with ``exp(-t^2 / (2 (v + c t / 3))) = exp(-log_term)``: Bernstein's deviation for a sum of independent
    terms each at most ``c`` above its mean, variance sum at most ``v``."""
    a = c * log_term / 3.0
    return a + math.sqrt(a * a + 2.0 * v * log_term)


def sum_tail_distribution(values: np.ndarray, weights: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(t, w)``: a distribution of ``X = ||Delta_S||^2`` (values ``t``, weights ``w``) whose tail is at least the
    Chernoff bound's on ``X``'s at every ``t``, for ``X`` the sum of ``k`` items' ``x``.

    Parameters
    ----------
    values, weights : ndarray
        The worst per-item distribution (``values[0] = 0`` and increasing; the weights sum to 1).
    k : int
        Items perturbed at once.

    Returns
    -------
    (ndarray, ndarray)
        ``t_0 = 0 < ... < t_G = k x_K`` and nonnegative weights summing to 1.
    """
    x = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)
    top = k * float(x[-1])
    # lattice: every level an integer multiple of the smallest, so every sum is one (the pipeline's (j/L)^2 levels)
    unit = float(x[1]) if x.size > 1 else top
    mult = x / unit
    lattice = bool(np.all(np.abs(mult - np.round(mult)) <= 1e-9 * np.maximum(mult, 1.0)))
    steps = round(top / unit) if lattice else _MAX_POINTS
    step = max(1, -(-steps // _MAX_POINTS))  # lattice points per grid step
    n_pts = -(-steps // step)
    t = np.minimum(np.arange(n_pts + 1) * (step * unit if lattice else top / n_pts), top)
    t[-1] = top
    # Pr[X > t_{g-1}] = Pr[X >= t_{g-1} + unit] on the lattice; off it, Pr[X >= t_{g-1}]
    at = t[:-1] + (unit if lattice else 0.0)
    with np.errstate(divide="ignore"):
        logw = np.log(np.maximum(w, 0.0))
    lam = _LAM[:, None] / float(x[-1])
    log_m = logsumexp(logw[None, :] + lam * x[None, :], axis=1)  # log E exp(lam x) of the worst item  [proof:ck-mgf]
    # Chernoff: Pr[X >= s] <= exp(-lam s) (E exp(lam x))^k for every lam >= 0, minimised over the grid [proof:ck-chernoff]
    # float error of each exponent: a relative 1e-14 of the magnitudes summed (logsumexp at lam x up to 1e7), added
    slack = 1e-14 * (k * (np.abs(log_m) + lam[:, 0] * float(x[-1])))[:, None] + 1e-14 * lam * at[None, :]
    log_tail = np.min(k * log_m[:, None] - lam * at[None, :] + slack, axis=0)
    tails = np.minimum(1.0, np.exp(np.minimum(log_tail, 0.0)) * (1.0 + 1e-12))
    tails = np.minimum.accumulate(tails)  # the tail of X is nonincreasing: a running minimum stays above it
    weights_out = np.maximum(np.concatenate([[1.0 - tails[0]], tails[:-1] - tails[1:], [tails[-1]]]), 0.0)  # [proof:ck-layer-cake]
    return t, weights_out


def _bennett_log_mgf(v: np.ndarray, c: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Bennett: ``log E exp(s W) <= v (e^{c|s|} - 1 - c|s|) / c^2`` for ``W`` a sum of independent zero-mean terms
    each at most ``c`` in size, variances summing to at most ``v`` (rows: coordinates; columns: ``s``)."""
    u = c[:, None] * np.abs(s)[None, :]
    with np.errstate(over="ignore"):  # inf: a vacuous bound, never the minimum
        return v[:, None] * np.expm1(u) / (c[:, None] ** 2) - v[:, None] * u / (c[:, None] ** 2)


def _log_mgf_truncated(v: np.ndarray, c: np.ndarray, lam: float, G: float, cells: int = 512) -> np.ndarray:
    """Per coordinate, an upper bound on ``E_g[1{|g| <= G} E exp(sqrt(2 lam) g W_j)]`` (``g ~ N(0, 1)``): on each cell
    of ``|g|`` the mgf bound at its right end (nondecreasing in ``|g|``) times the cell's exact Gaussian mass."""
    edges = np.linspace(0.0, G, cells + 1)
    # log of 2 (Phi(b) - Phi(a)) through the upper tails, accurate far out (a difference of cdfs near 1 is 0 in floats)
    la, lb = log_ndtr(-edges[:-1]), log_ndtr(-edges[1:])
    with np.errstate(divide="ignore"):
        log_mass = math.log(2.0) + la + np.log(-np.expm1(lb - la))
    log_f = _bennett_log_mgf(v, c, math.sqrt(2.0 * lam) * edges[1:])
    return logsumexp(log_f + log_mass[None, :], axis=1)  # [proof:nd-mgf]


_GS = (6.0, 9.0, 13.0, 19.0, 28.0, 40.0)


def _chernoff_table(v: np.ndarray, c: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The Chernoff route's grid, independent of ``p``: ``(lams, w0s, log_g0, log_m)`` with ``log_g0[w]`` the log of
    ``sum_j g_j(w0)`` and ``log_m[l, G, w]`` the log of ``prod_j M_j`` at ``(lam_l, G, w0_w)`` (``inf`` where ``tau`` is
    not defined). The grid comes from the design quantities ``c`` and ``R`` alone (never from ``v``)."""
    lo, hi = 2.0 * float(np.max(c)), float(np.max(R))
    w0s = np.geomspace(lo, max(hi, lo), 24)
    lams = np.geomspace(1e-2, 1e4, 60) / float(np.max(c) * np.max(R))
    with np.errstate(over="ignore", divide="ignore"):
        log_gj = np.minimum(0.0, math.log(2.0) - w0s[None, :] ** 2 / (2.0 * (v[:, None] + c[:, None] * w0s[None, :] / 3.0)))
    log_g0 = logsumexp(log_gj, axis=0)  # log sum_j Pr[|W_j| > w0]  [proof:nd-truncate]
    log_m = np.full((lams.size, len(_GS), w0s.size), np.inf)
    for li, lam in enumerate(lams):
        x = np.array(_GS)[:, None] - math.sqrt(2.0 * lam) * w0s[None, :]  # (G, w0)
        with np.errstate(divide="ignore", invalid="ignore"):
            # the Gaussian variable's part beyond G: at most 2 e^{lam w0^2} Pr[g > G - sqrt(2 lam) w0] (x > 0 only)
            log_tau = np.where(x > 0, math.log(2.0) + lam * w0s[None, :] ** 2 + log_ndtr(-np.maximum(x, 0.0)), np.inf)
        for gi, G in enumerate(_GS):
            if not np.any(np.isfinite(log_tau[gi])):
                continue
            log_i = _log_mgf_truncated(v, c, float(lam), G)  # (d,)
            parts = np.stack([log_gj, np.broadcast_to(log_i[:, None], log_gj.shape),
                              np.broadcast_to(log_tau[gi][None, :], log_gj.shape)])
            with np.errstate(over="ignore"):  # a sum past the float range is +inf: a vacuous grid point
                log_m[li, gi] = np.where(np.isfinite(log_tau[gi]), np.sum(logsumexp(parts, axis=0), axis=0), np.inf)
    return lams, w0s, log_g0, log_m


def norm_deviation(v: np.ndarray, c: np.ndarray, R: np.ndarray, p: float | tuple[float, ...]) -> Any:
    """``r`` with ``Pr[||W|| > r] <= p``: ``W`` has independent coordinates, ``W_j`` a sum of independent zero-mean terms
    each at most ``c_j`` in size, their variances summing to at most ``v_j``.

    The smaller of two bounds, each valid at ``p`` (so is their minimum, a function of ``(v, c, p)`` alone):
    Bernstein per coordinate at ``p / d`` each, and Chernoff on the sum of the squares truncated at ``w0`` (the
    truncation's failure, Bernstein per coordinate, spent from ``p``), minimised over a fixed grid of
    ``(lam, G, w0)`` scaled by the coordinates' sizes and ranges alone.  Nondecreasing in every ``v_j``.

    Parameters
    ----------
    v, c, R : ndarray
        Per coordinate: the variance sum's bound ``>= 0``, the terms' size bound ``> 0`` and a bound on ``|W_j|``
        (a design quantity: the number of terms times ``c_j``).
    p : float or tuple of float
        Each in (0, 1); a tuple gives one ``r`` per value (the grid is computed once).

    Returns
    -------
    float, or a list of float for a tuple ``p``
    """
    v = np.asarray(v, dtype=float)
    c = np.asarray(c, dtype=float)
    R = np.asarray(R, dtype=float)
    d = v.size
    ps = (p,) if isinstance(p, float | int) else tuple(p)
    lams, _, log_g0, log_m = _chernoff_table(v, c, R)
    out = []
    for pp in ps:
        best = math.sqrt(sum(bernstein(float(vj), float(cj), math.log(2.0 * d / pp)) ** 2
                             for vj, cj in zip(v, c)))  # [proof:nd-union]
        ok = log_g0 < math.log(pp)
        if np.any(ok):
            left = pp - np.exp(log_g0[ok])
            s = (log_m[:, :, ok] - np.log(left)[None, None, :]) / lams[:, None, None]  # e^{-lam s} prod M_j = left  [proof:nd-chernoff]
            s_min = float(np.min(s))
            if math.isfinite(s_min):
                best = min(best, math.sqrt(max(s_min, 0.0)))
        out.append(best)
    return out[0] if len(ps) == 1 and not isinstance(p, tuple) else out


def norm_route(base: np.ndarray, v: np.ndarray, c: np.ndarray, R: np.ndarray, beta: float, eps: float) -> float:
    """Every item perturbed, leaderboard view: ``A`` with ``Pr[||Delta|| > A] <= eps`` over the new draw, on an event of
    probability ``>= 1 - beta`` over the recorded answers (given the variance bounds ``v``, which hold on their own event).

    ``||Delta|| <= ||mu|| + ||Delta - mu||`` and ``||mu|| <= ||base|| + ||mu_hat - mu_obs||`` (``base_j`` the recorded
    model mean's size plus the unobserved items' range, ``mu_obs`` the observed items' part of ``E Delta``): two
    norms of sums of independent zero-mean terms with independent coordinates, each bounded by :func:`norm_deviation`
    (the recorded one at ``beta``, the new draw's at ``eps``)."""
    # one grid for both: the recorded vector's own deviation at beta  [proof:nr-recorded]
    # and the new draw's deviation from its mean at eps  [proof:nr-new]
    rec, new = norm_deviation(v, c, R, (beta, eps))
    return float(np.linalg.norm(np.asarray(base, dtype=float))) + rec + new  # [proof:nr-triangle]

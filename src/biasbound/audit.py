"""Audit an A-BB certificate on held-out neighbours: exact (noncentral chi-square) and Monte Carlo.

A certificate claims ``Pr[||M(D) - M(D')|| > τ] <= δ`` over a random neighbour ``D' ~ T(D)`` and
the mechanism noise. Given the raw distances ``||f(D) - f(D'_i)||`` of held-out neighbours
(not used to calibrate), this module computes that probability exactly for each neighbour and
bounds its population mean. Proof notes: ``docs/proofs/audit.md``.

This module imports numpy and scipy only.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binomtest, chi2, ncx2

from biasbound._exceptions import InputError
from biasbound._validation import check_finite_array, check_in_range, check_int, resolve_rng
from biasbound.sensitivity import _kl_bound

__all__ = ["AuditResult", "audit", "audit_certificate", "effective_sq_distances", "exceedance_probabilities"]

#: ``"holds"``: the confidence bound on the violation probability is at most δ (the audit could
#: have contradicted the certificate and did not); ``"violated"``: it contradicts it;
#: ``"inconclusive"``: neither; ``"not contradictable"``: the certificate rests on an almost-sure
#: bound whose worst neighbour already has probability <= δ, so no neighbour within the bound can
#: contradict it (only one outside the bound can, and that is "violated"); ``"exact"``: the
#: probability was computed over T's whole population, nothing is estimated (set by the pipeline).
VERDICTS = ("holds", "violated", "inconclusive", "not contradictable", "exact")
#: Verdicts that do not contradict the certificate.
NOT_CONTRADICTED = ("holds", "not contradictable", "exact")


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit`.

    Attributes
    ----------
    n_neighbors : int
        Number of held-out neighbours audited.
    exact_probability : float
        Mean over neighbours of the exact ``p_i = Pr[||Δ_eff,i + B|| > τ]``.
    exact_ucb : float
        KL–Chernoff upper confidence bound (level ``confidence``) on the population mean of ``p_i``.
    exact_lcb : float
        KL–Chernoff lower confidence bound (level ``confidence``) on the same mean.
    mc_probability : float
        Monte Carlo estimate of the empirical-neighbour exceedance probability.
    mc_ucb : float
        One-sided Clopper–Pearson upper bound (level ``confidence``) for the Monte Carlo estimate.
    n_mc : int
        Monte Carlo draws.
    confidence : float
        Confidence level of the bounds.
    verdict : str
        ``"holds"`` (``exact_ucb <= δ``), ``"violated"`` (``exact_lcb > δ``, or a neighbour beyond
        ``max_distance``), ``"not contradictable"`` (``p_max <= δ``: the certificate's almost-sure
        bound alone implies it, whatever the neighbours within the bound) or ``"inconclusive"``.
    tau, delta, sigma, alpha : float
        The audited certificate's parameters.
    dim : int
        Score dimension ``d``.
    center : str
        ``"fixed"`` (no ``mean_shifts``) or ``"batch"``.
    seed : int
        Seed of the Monte Carlo draws.
    max_distance : float or None
        The almost-sure bound on ``||f(D) - f(D')||`` the certificate assumed, when it assumed one.
    p_max : float
        ``Pr[||Δ_eff + B|| > τ]`` at the largest possible neighbour (``1.0`` without ``max_distance``):
        every ``p_i`` lies in ``[0, p_max]``, which scales the confidence bounds.
    bound_violations : int
        Held-out neighbours farther than ``max_distance``; any such neighbour falsifies the
        certificate's own assumption and makes the verdict ``"violated"``.
    """

    n_neighbors: int
    exact_probability: float
    exact_ucb: float
    exact_lcb: float
    mc_probability: float
    mc_ucb: float
    n_mc: int
    confidence: float
    verdict: str
    tau: float
    delta: float
    sigma: float
    alpha: float
    dim: int
    center: str
    seed: int
    max_distance: float | None = None
    p_max: float = 1.0
    bound_violations: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return asdict(self)


def effective_sq_distances(distances: np.ndarray, alpha: float, mean_shifts: np.ndarray | None) -> np.ndarray:
    """Squared distance between shrunk neighbour scores: ``||g_D(f(D)) - g_D'(f(D'))||²``.

    Fixed centre: ``α²||Δ||²``. Batch-mean centre ``μ(D) = mean(f(D))·1``: with ``Δ = f(D) - f(D')``
    and ``s = sqrt(d)·|mean(Δ)|``, ``||αΔ + (1-α)mean(Δ)1||² = α²||Δ||² + (1-α²)s²``
    (expand and use ``<Δ, 1> = d·mean(Δ)``).
    """
    sq = (alpha * alpha) * distances * distances
    if mean_shifts is not None:
        sq = sq + (1.0 - alpha * alpha) * mean_shifts * mean_shifts
    return sq


def exceedance_probabilities(sq_eff: np.ndarray, *, tau: float, sigma: float, dim: int) -> np.ndarray:
    """Exact ``Pr[||Δ_eff + B|| > τ]`` for ``B ~ N(0, 2σ²I_d)`` and each squared ``||Δ_eff||²``.

    ``||Δ_eff + B||² / (2σ²)`` is noncentral chi-square with ``d`` degrees of freedom and
    noncentrality ``||Δ_eff||² / (2σ²)``; ``σ = 0`` gives the indicator ``||Δ_eff|| > τ``.
    """
    scale = 2.0 * sigma * sigma
    if scale == 0.0:  # sigma = 0, or so small that 2σ² underflows: the noise moves no score
        return (np.asarray(sq_eff, dtype=float) > tau * tau).astype(float)
    x = tau * tau / scale
    # each distinct distance is evaluated once (scores on a grid repeat a handful of distances);
    # the survival function is element-wise, so the values are those of the full evaluation
    sq_eff = np.asarray(sq_eff, dtype=float)
    uniq, inverse = np.unique(sq_eff, return_inverse=True)
    lam = uniq / scale
    if lam.size <= _CACHED_DISTANCES:  # few distinct distances: audits of many models share them
        p = np.array(_survival(x, dim, tuple(lam.tolist())), dtype=float)
    else:
        p = _survival_array(x, dim, lam)
    return np.clip(p[inverse.ravel()].reshape(sq_eff.shape), 0.0, 1.0)


_CACHED_DISTANCES = 64


def _survival_array(x: float, dim: int, lam: np.ndarray) -> np.ndarray:
    """``Pr[χ'²_dim(λ) > x]`` for each λ (central χ² where λ = 0)."""
    p = np.empty_like(lam)
    zero = lam == 0.0
    p[zero] = chi2.sf(x, dim)
    if np.any(~zero):
        p[~zero] = ncx2.sf(x, dim, lam[~zero])
    return p


@functools.lru_cache(maxsize=1024)
def _survival(x: float, dim: int, lam: tuple[float, ...]) -> tuple[float, ...]:
    """:func:`_survival_array` memoised on exact inputs (the per-model audits of a judge share
    τ, σ and the grid of score differences, and often the dimension)."""
    return tuple(_survival_array(x, dim, np.array(lam, dtype=float)).tolist())


@functools.lru_cache(maxsize=256)
def _clopper_pearson_upper(k: int, n: int, confidence: float) -> float:
    """One-sided (upper) Clopper–Pearson bound; cached, as many audits share ``(k, n)``."""
    return float(binomtest(k, n, alternative="less").proportion_ci(confidence_level=confidence, method="exact").high)


def audit(
    *,
    tau: float,
    delta: float,
    sigma: float,
    alpha: float,
    distances: ArrayLike,
    dim: int,
    mean_shifts: ArrayLike | None = None,
    confidence: float = 0.99,
    n_mc: int = 20000,
    rng: np.random.Generator | int | None = None,
    max_distance: float | None = None,
) -> AuditResult:
    """Check a ``(τ, δ)`` A-BB claim on held-out neighbours.

    Parameters
    ----------
    tau : float
        Tolerance ``τ > 0``.
    delta : float
        Claimed failure probability in ``(0, 1)``.
    sigma : float
        Noise standard deviation of the mechanism (``>= 0``).
    alpha : float
        Shrinkage coefficient in ``[0, 1]``.
    distances : array_like of shape (m,)
        Raw distances ``||f(D) - f(D'_i)||`` (before shrinkage) of held-out neighbours, i.i.d. from ``T(D)``.
    dim : int
        Score dimension ``d``.
    mean_shifts : array_like of shape (m,), optional
        ``s_i = sqrt(d)·|mean(f(D) - f(D'_i))|`` when the shrinkage centre is the batch mean;
        omit for a centre fixed within the batch.
    confidence : float
        Level of the confidence bounds, in ``(0, 1)``.
    n_mc : int
        Monte Carlo draws (``>= 1``).
    rng : numpy.random.Generator, int or None
        Randomness of the Monte Carlo check; the seed is recorded.
    max_distance : float, optional
        An almost-sure bound on the raw distances that the certificate assumed (the
        deterministic bound). Each ``p_i`` then lies in ``[0, p_max]`` with ``p_max`` the
        exceedance probability of the farthest admissible neighbour, so the KL–Chernoff bounds
        are applied to ``p_i / p_max`` (much tighter when ``p_max`` is small). A held-out distance
        above ``max_distance`` falsifies the assumption: the verdict is then ``"violated"``.

    Returns
    -------
    AuditResult

    Notes
    -----
    ``M(D) - M(D') = Δ_eff + B`` with ``B = Z - Z' ~ N(0, 2σ²I_d)`` independent of the neighbour.
    Exact part: ``p_i = ncx2.sf(τ²/(2σ²), d, ||Δ_eff,i||²/(2σ²))``; the claimed probability is the
    population mean ``E p(D')``; the ``p_i`` are i.i.d. in ``[0, p_max]`` (``p_max = 1`` unless
    ``max_distance`` is given), so the KL–Chernoff bounds (Hoeffding 1963) on ``p_i / p_max`` at
    ``confidence``, multiplied back by ``p_max``, bracket it. ``p`` is increasing in ``||Δ_eff||``,
    and ``||Δ_eff||² <= α²D² + (1-α²)D² `` for a batch centre (``s_i <= ||Δ_i||`` by Cauchy–Schwarz),
    ``α²D²`` for a fixed one, with ``D = max_distance``. Monte Carlo part: each draw picks a held-out
    neighbour uniformly and one noise vector (drawn as a noncentral chi-square variate), giving
    i.i.d. Bernoulli(``mean p_i``) outcomes; its Clopper–Pearson bound checks the exact computation
    for the empirical neighbour distribution (it says nothing beyond those neighbours).
    """
    where = "audit"
    tau = check_in_range(tau, "tau", where, low=0.0, low_open=True)
    delta = check_in_range(delta, "delta", where, low=0.0, high=1.0, low_open=True, high_open=True)
    sigma = check_in_range(sigma, "sigma", where, low=0.0)
    alpha = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)
    dim = check_int(dim, "dim", where, low=1)
    confidence = check_in_range(confidence, "confidence", where, low=0.0, high=1.0, low_open=True, high_open=True)
    n_mc = check_int(n_mc, "n_mc", where, low=1)
    d = check_finite_array(distances, "distances", where, ndim=1)
    if np.any(d < 0):
        raise InputError(f"The 'distances' parameter of {where} must hold non-negative norms. Got minimum {d.min()!r} instead.")
    s = None
    if mean_shifts is not None:
        s = check_finite_array(mean_shifts, "mean_shifts", where, ndim=1)
        if s.shape != d.shape:
            raise InputError(
                f"The 'mean_shifts' parameter of {where} must have one value per neighbour ({d.size}). Got {s.size} instead."
            )
        if np.any(s < 0):
            raise InputError(f"The 'mean_shifts' parameter of {where} must be non-negative. Got minimum {s.min()!r} instead.")
    n_violations = 0
    p_max = 1.0
    if max_distance is not None:
        max_distance = check_in_range(max_distance, "max_distance", where, low=0.0)
        n_violations = int(np.count_nonzero(d > max_distance))
        if s is not None:
            n_violations += int(np.count_nonzero(s > max_distance))
        d_max = np.array([max_distance])
        s_max = None if s is None else d_max
        p_max = float(exceedance_probabilities(effective_sq_distances(d_max, alpha, s_max), tau=tau, sigma=sigma, dim=dim)[0])
    gen, seed = resolve_rng(rng)

    sq_eff = effective_sq_distances(d, alpha, s)
    p = exceedance_probabilities(sq_eff, tau=tau, sigma=sigma, dim=dim)
    m = int(d.size)
    beta = 1.0 - confidence
    exact = float(np.mean(p))
    if n_violations == 0 and p_max < 1.0:
        scaled = min(1.0, exact / p_max) if p_max > 0.0 else 0.0
        ucb = p_max * _kl_bound(scaled, m, beta, upper=True)
        lcb = p_max * _kl_bound(scaled, m, beta, upper=False)
    else:
        ucb = _kl_bound(min(1.0, exact), m, beta, upper=True)
        lcb = _kl_bound(min(1.0, exact), m, beta, upper=False)

    idx = gen.integers(0, m, size=n_mc)
    scale = 2.0 * sigma * sigma
    if scale == 0.0:  # sigma = 0, or so small that 2σ² underflows (as in exceedance_probabilities)
        hits = sq_eff[idx] > tau * tau
    else:
        w = gen.noncentral_chisquare(dim, sq_eff[idx] / scale)
        hits = w > tau * tau / scale
    k = int(np.count_nonzero(hits))
    mc_ucb = _clopper_pearson_upper(k, n_mc, confidence)

    if n_violations:
        verdict = "violated"
    elif p_max <= delta:  # every admissible neighbour has p_i <= p_max <= δ: nothing to find
        verdict = "not contradictable"
    elif ucb <= delta:
        verdict = "holds"
    elif lcb > delta:
        verdict = "violated"
    else:
        verdict = "inconclusive"
    return AuditResult(
        n_neighbors=m,
        exact_probability=exact,
        exact_ucb=float(ucb),
        exact_lcb=float(lcb),
        mc_probability=k / n_mc,
        mc_ucb=mc_ucb,
        n_mc=n_mc,
        confidence=confidence,
        verdict=verdict,
        tau=tau,
        delta=delta,
        sigma=sigma,
        alpha=alpha,
        dim=dim,
        center="fixed" if s is None else "batch",
        seed=seed,
        max_distance=max_distance,
        p_max=p_max,
        bound_violations=n_violations,
    )


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def audit_certificate(
    certificate: Any,
    distances: ArrayLike,
    mean_shifts: ArrayLike | None = None,
    **kw: Any,
) -> AuditResult:
    """Audit a Certificate (or its dict form) on held-out neighbour distances.

    Parameters
    ----------
    certificate : Certificate-like or dict
        Must expose ``tau``, ``delta``, ``sigma``, ``alpha``, ``dim`` and ``center``
        (a dict with ``kind``, or a plain kind string; ``center_kind`` is also accepted).
    distances : array_like of shape (m,)
        Raw held-out neighbour distances.
    mean_shifts : array_like of shape (m,), optional
        Required when the centre kind is ``"batch"``; rejected otherwise.
    **kw
        ``confidence``, ``n_mc``, ``rng`` for :func:`audit`. When the certificate used the
        deterministic bound, its almost-sure ``sensitivity`` is passed as ``max_distance``.

    Returns
    -------
    AuditResult
    """
    where = "audit_certificate"
    values = {}
    for key in ("tau", "delta", "sigma", "alpha", "dim"):
        v = _get(certificate, key)
        if v is None:
            raise InputError(f"The 'certificate' parameter of {where} must have a {key!r} field. Got none instead.")
        values[key] = v
    center = _get(certificate, "center")
    kind = _get(center, "kind") if isinstance(center, Mapping) or hasattr(center, "kind") else center
    if kind is None:
        kind = _get(certificate, "center_kind")
    if kind is None:
        raise InputError(f"The 'certificate' parameter of {where} must record its centre kind. Got none instead.")
    kind = str(kind)
    if kind == "batch" and mean_shifts is None:
        raise InputError(
            f"The 'mean_shifts' parameter of {where} must be given for a certificate with a batch-mean centre. Got None instead."
        )
    if kind != "batch" and mean_shifts is not None:
        raise InputError(
            f"The 'mean_shifts' parameter of {where} only applies to a batch-mean centre; "
            f"this certificate's centre is {kind!r}. Got mean shifts instead."
        )
    allowed = {"confidence", "n_mc", "rng"}
    extra = sorted(set(kw) - allowed)
    if extra:
        raise TypeError(f"audit_certificate got unexpected keyword argument(s) {extra}; allowed: {sorted(allowed)}.")
    dim = values["dim"]
    if isinstance(dim, float) and dim.is_integer():
        dim = int(dim)
    if _get(certificate, "bound_used") == "deterministic" and _get(certificate, "sensitivity") is not None:
        kw = {**kw, "max_distance": float(_get(certificate, "sensitivity"))}  # schema 1
    rng_rec = _get(certificate, "range")
    if isinstance(rng_rec, Mapping) and rng_rec.get("A") is not None:  # schema 2: the score range's a.s. bound
        kw = {**kw, "max_distance": float(rng_rec["A"])}
    nb = _get(certificate, "neighborhood")
    if isinstance(nb, Mapping) and not (nb.get("kind") == "hamming" and nb.get("k") == 1):
        raise InputError(
            f"The 'certificate' parameter of {where} certifies {nb.get('kind')} neighbours"
            + (f" (k={nb.get('k')})" if nb.get("k") is not None else "")
            + "; the audit checks one-item (Hamming-1) neighbour distances only."
        )
    return audit(
        tau=values["tau"],
        delta=values["delta"],
        sigma=values["sigma"],
        alpha=values["alpha"],
        dim=dim,
        distances=distances,
        mean_shifts=mean_shifts,
        **kw,
    )

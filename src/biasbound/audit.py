"""Audit an A-BB certificate on held-out neighbours: exact (noncentral chi-square) and Monte Carlo.

A certificate claims ``Pr[||M(D) - M(D')|| > τ] <= δ`` over a random neighbour ``D' ~ T(D)`` and
the mechanism noise. Given the raw distances ``||f(D) - f(D'_i)||`` of held-out neighbours
(not used to calibrate), this module computes that probability exactly for each neighbour and
bounds its population mean. Proof notes: ``docs/proofs/audit.md``.

This module imports numpy and scipy only.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binomtest, chi2, ncx2

from biasbound._exceptions import InputError
from biasbound._validation import check_finite_array, check_in_range, check_int, resolve_rng
from biasbound.sensitivity import kl_bound
from biasbound.parameters import AT_A_POINT, validate_params

__all__ = ["AuditResult", "CertificateAudit", "PartAudit", "audit", "audit_certificate", "audit_certificate_parts",
           "effective_sq_distances", "exceedance_probabilities"]

#: ``"holds"``: the confidence bound on the violation probability is at most δ (the audit could
#: have contradicted the certificate and did not); ``"violated"``: it contradicts it;
#: ``"inconclusive"``: neither; ``"not contradictable"``: the certificate rests on an almost-sure
#: bound whose worst neighbour already has probability <= δ, so no neighbour within the bound can
#: contradict it (only one outside the bound can, and that is "violated"); ``"exact"``: the
#: probability was computed over T's whole population, nothing is estimated (set by the pipeline);
#: ``"recheck"``: the neighbours given are the very ones the certificate was calibrated on (its census), so
#: the probability over them is recomputed exactly and compared with δ — a re-computation, not new evidence.
VERDICTS = ("holds", "violated", "inconclusive", "not contradictable", "exact", "recheck")
#: Severity order of the verdicts (the worst part of an audit leads).
_SEVERITY = {"violated": 0, "inconclusive": 1, "holds": 2, "recheck": 3, "exact": 3, "not contradictable": 4}


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


@validate_params(exempt=AT_A_POINT)
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


@validate_params
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


@validate_params(exempt=AT_A_POINT)
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
        ucb = p_max * kl_bound(scaled, m, beta, upper=True)
        lcb = p_max * kl_bound(scaled, m, beta, upper=False)
    else:
        ucb = kl_bound(min(1.0, exact), m, beta, upper=True)
        lcb = kl_bound(min(1.0, exact), m, beta, upper=False)

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
    else:
        verdict = _interval_verdict(lcb, ucb, delta)
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


@validate_params(records={"certificate": ("tau", "delta", "sigma", "alpha", "dim")})
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
    scope = _get(certificate, "scope")
    if (isinstance(scope, Mapping) and (_get(certificate, "view") or "model") == "model"
            and scope.get("model") in (None, "*") and len(scope.get("models") or {}) > 1):
        raise InputError(
            f"The 'certificate' parameter of {where} certifies {len(scope['models'])} models, each with its own claim; "
            "a mean over them could hide a model whose claim fails. Audit each model with audit_certificate_parts."
        )
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


# --------------------------------------------------------------------------- a certificate, part by part
@dataclass(frozen=True)
class PartAudit:
    """One part of a certificate's claim audited on its own: a (model, generator) pair.

    Attributes
    ----------
    model : str or None
        The model whose own claim this is (None: the certificate's one population, e.g. the leaderboard view).
    generator : str
        The neighbour generator (``"mixture"`` when the certificate's generators combine as a mixture).
    kind : str
        ``"audit"``: fresh neighbours, a statistical audit; ``"recheck"``: the neighbours are the census the
        certificate was calibrated on, so the probability is recomputed exactly (no new evidence);
        ``"held-out"``: the certificate rests on a sample, whose calibration share was found among the
        neighbours and set aside — the rest is audited; ``"census"``: the certified batch itself (data hash)
        with a neighbour for every item, so the probability over T is computed exactly (verdict "exact" or
        "violated").
    reason : str
        One sentence saying which of the above and why.
    result : AuditResult
        The audit (for a recheck, ``exact_lcb = exact_ucb = exact_probability``, nothing estimated).
    """

    model: str | None
    generator: str
    kind: str
    reason: str
    result: AuditResult

    @property
    def verdict(self) -> str:
        return self.result.verdict

    @property
    def label(self) -> str:
        return self.generator if self.model is None else f"{self.model} / {self.generator}"

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "generator": self.generator, "kind": self.kind, "reason": self.reason,
                **self.result.to_dict()}


@dataclass(frozen=True)
class CertificateAudit:
    """Every part of a certificate audited on its own, the worst first (never a mean over models).

    ``verdict`` is the worst part's: ``"violated"`` when any one model's claim is contradicted, else
    ``"inconclusive"`` when any part cannot decide, else the part's "does not contradict" verdict.
    The parts' statistical audits share one error budget: each runs at confidence
    ``1 - (1 - confidence)/n_statistical`` (Bonferroni), so the chance that any part is called
    "violated" while every claim holds is at most ``1 - confidence``.
    """

    parts: tuple[PartAudit, ...]
    confidence: float
    part_confidence: float
    not_audited: tuple[str, ...] = ()

    @property
    def worst(self) -> PartAudit:
        return self.parts[0]

    @property
    def verdict(self) -> str:
        return self.worst.verdict

    @property
    def n_neighbors(self) -> int:
        return int(sum(p.result.n_neighbors for p in self.parts))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.parts:
            out[p.verdict] = out.get(p.verdict, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "confidence": self.confidence, "part_confidence": self.part_confidence,
                "counts": self.counts(), "not_audited": list(self.not_audited), "parts": [p.to_dict() for p in self.parts]}


def _part_record(certificate: Any, model: str | None, generator: str) -> Any:
    """The certificate's calibration record of one (model, generator) — the first whose kind holds the neighbour data
    it was calibrated on (``CALIBRATION_DATA``: a full population, a sample, a random judge's draws) — or None."""
    from biasbound.bounds._knowledge import record_from_dict

    kn = _get(certificate, "knowledge")
    gens = kn.get("generators") if isinstance(kn, Mapping) else None
    if not isinstance(gens, Mapping):
        return None
    from biasbound.calibration import UNIT_SEPARATOR

    keys = [generator] if model is None else [f"{model}{UNIT_SEPARATOR}{generator}", generator]
    for key in keys:
        recs = gens.get(key)
        if key == generator and model is not None and any(UNIT_SEPARATOR in str(k) for k in gens):
            continue  # several models' records: the bare name is not this model's
        if not isinstance(recs, list):
            continue
        for rd in recs:
            try:
                r = record_from_dict(rd)
            except (InputError, TypeError, KeyError, ValueError):
                continue
            if r.CALIBRATION_DATA:
                return r
    return None


_FRESH = "fresh neighbours: a statistical audit of this part's claim"


def _part_dim(certificate: Any, models: Any, model: str | None) -> int:
    """A part's dimension: its model's (``scope.models``) in a judge's model-view certificate, else the certificate's."""
    dim = _get(certificate, "dim")
    if model is not None and isinstance(models, Mapping) and isinstance(models.get(model), Mapping):
        dim = models[model].get("dim", dim)
    return int(dim)


def _role(rec: Any, d: np.ndarray, s: np.ndarray | None, mine: bool, in_census: bool
          ) -> tuple[str, str, int, np.ndarray, np.ndarray | None]:
    """``(kind, reason, filled, distances, mean_shifts)`` of one part: what its record says the given distances are
    (a recheck of its own data, its sample held out), else a census of the certified batch, else fresh evidence."""
    role = None if rec is None else rec.audit_role(d * d, mine)
    kind, reason, filled = ("audit", _FRESH, 0) if role is None else (role.kind, role.reason, role.filled)
    if role is not None and role.keep is not None:
        d = d[role.keep]
        s = None if s is None else s[role.keep]
    if kind == "audit" and in_census and (rec is None or not rec.RANDOM_JUDGE):
        # a judge declared deterministic: one neighbour per item of the certified batch is its whole
        # population. For a random judge these are one draw of its answers, audited statistically below.
        kind = "census"
        reason = (f"these files hold the certified batch itself (its data hash matches) with one neighbour for each "
                  f"of its {d.size} items: the probability over T for these neighbour judgments is computed exactly, "
                  "nothing estimated (if they are the judgments it was calibrated on, a recheck, not new evidence)")
    return kind, reason, filled, d, s


def _recomputed(res: AuditResult, kind: str, rec: Any, d: np.ndarray, s: np.ndarray | None, dim: int, filled: int,
                delta: float) -> AuditResult:
    """A recheck or census part: the probability recomputed exactly (or the record's own bound) and its verdict."""
    if rec is not None and rec.RECHECK_UNIT is not None:  # the kind's own recheck: its unit's bound at the point
        from biasbound.bounds import unit

        exact = float(unit(rec.RECHECK_UNIT).violation_bound(res.tau, res.alpha, res.sigma, dim, rec))
    else:
        sq_eff = effective_sq_distances(d, res.alpha, s)
        p = exceedance_probabilities(sq_eff, tau=res.tau, sigma=res.sigma, dim=dim)
        exact = (math.fsum(p.tolist()) + filled * res.p_max) / (d.size + filled)
    if res.bound_violations:  # a neighbour beyond the certificate's almost-sure bound falsifies it
        verdict = "violated"
    elif res.verdict == "not contradictable":  # no data within the range could contradict it: say so
        verdict = res.verdict
    else:
        verdict = ("recheck" if kind == "recheck" else "exact") if exact <= delta * (1.0 + 1e-9) else "violated"
    return dataclasses.replace(res, exact_probability=exact, exact_ucb=exact, exact_lcb=exact, verdict=verdict)


@validate_params
def audit_certificate_parts(
    certificate: Any,
    parts: Mapping[tuple[str | None, str], tuple[ArrayLike, ArrayLike | None]],
    *,
    confidence: float = 0.99,
    n_mc: int = 20000,
    rng: np.random.Generator | int | None = None,
    not_audited: tuple[str, ...] = (),
    census: Any = (),
    own: Any = None,
) -> CertificateAudit:
    """Audit a certificate part by part: each model's (and generator's) claim on its own neighbours.

    Parameters
    ----------
    certificate : Certificate-like or dict
        As for :func:`audit_certificate`; a judge's model-view certificate records each model's dimension in
        ``scope.models`` and each (model, generator)'s calibration record in ``knowledge``.
    parts : mapping (model or None, generator) -> (distances, mean_shifts or None)
        The neighbour distances of each part (``model=None``: the certificate's single population).
    confidence : float
        Family-wise level: the statistical parts run at ``1 - (1 - confidence)/n`` each (Bonferroni).
    n_mc, rng
        As for :func:`audit` (one seed; each part draws its own from it).
    not_audited : tuple of str
        Parts of the claim for which no neighbour was given (reported, not audited).
    census : collection of (model or None, generator)
        Parts whose distances are every neighbour of the certified batch itself (the caller checked the data
        hash and one neighbour per item): the probability over T is then computed exactly (a recheck).
    own : collection of (model or None, generator), optional
        Parts whose neighbour rows the caller recognised as the certificate's own data by their digest (the
        judgment rows' SHA-256 against the certificate's ``judgments_sha256``: item ids and answers). When
        given, only these parts can be a "recheck"; every other part is fresh evidence, audited, even when its
        counts and level sums happen to equal the record's (``biasbound audit`` always passes it). None (a
        Python caller with distances only): recognised by the recorded values alone, as before.

    Returns
    -------
    CertificateAudit
        Parts sorted worst first (verdict severity, then the exact probability, largest first).

    Notes
    -----
    A part whose squared distances are exactly the certificate's recorded census (a ``FullPopulation``
    record: its observed values, the ``filled`` ones at the range bound left out) is a **recheck**: the
    probability over that population at the released (α, σ) is recomputed exactly — with the filled
    items at the range bound's probability, as the certificate counted them — and the verdict is
    "recheck" when it is at most δ (relative tolerance 1e-9, the certificate's own), else "violated".
    Likewise a part whose distances are a ``RandomJudge`` record's own draws (one per item, the same level
    sums): the record's (1 − β) bound is recomputed at the released point — a recheck of the same data.
    Nothing is estimated and nothing new is learned. A part whose record is a ``Sample`` has that sample
    removed from the given neighbours (the calibration share is never evidence about itself); the rest is
    audited. Every other part is a statistical audit (:func:`audit_certificate`).
    """
    where = "audit_certificate_parts"
    confidence = check_in_range(confidence, "confidence", where, low=0.0, high=1.0, low_open=True, high_open=True)
    if not parts:
        raise InputError(f"The 'parts' parameter of {where} must hold at least one part. Got none instead.")
    gen, seed = resolve_rng(rng)
    scope = _get(certificate, "scope") or {}
    models = scope.get("models") if isinstance(scope, Mapping) else None
    delta = float(_get(certificate, "delta"))
    prepared = []
    for (model, generator), (dist, shifts) in parts.items():
        d = check_finite_array(dist, "distances", where, ndim=1)
        s = None if shifts is None else check_finite_array(shifts, "mean_shifts", where, ndim=1)
        rec = _part_record(certificate, model, generator)
        mine = own is None or (model, generator) in own  # the caller's digest says these rows are the certified ones
        kind, reason, filled, d, s = _role(rec, d, s, mine, (model, generator) in census)
        prepared.append((model, generator, d, s, _part_dim(certificate, models, model), kind, reason, filled, rec))
    n_stat = sum(1 for p in prepared if p[5] not in ("recheck", "census") and p[2].size)
    part_conf = 1.0 - (1.0 - confidence) / max(1, n_stat)
    out = []
    for model, generator, d, s, dim, kind, reason, filled, rec in prepared:
        if d.size == 0:
            not_audited = (*not_audited, generator if model is None else f"{model} / {generator}")
            continue
        kw: dict[str, Any] = {"confidence": part_conf, "n_mc": n_mc, "rng": int(gen.integers(2**63))}
        single = dict(certificate) if isinstance(certificate, Mapping) else {
            k: _get(certificate, k) for k in ("tau", "delta", "sigma", "alpha", "center", "center_kind", "range",
                                              "neighborhood", "bound_used", "sensitivity")}
        single["dim"] = dim
        single["scope"] = None  # this part is one model's (or the one population's) claim
        res = audit_certificate(single, d, s, **kw)
        if kind in ("recheck", "census"):
            res = _recomputed(res, kind, rec, d, s, dim, filled, delta)
        out.append(PartAudit(model=model, generator=generator, kind=kind, reason=reason, result=res))
    if not out:
        raise InputError(f"The 'parts' parameter of {where} holds no neighbour to audit.")
    kn = _get(certificate, "knowledge")
    if isinstance(kn, Mapping) and kn.get("how") in ("mixture", "rms"):
        out = _mixtures(out, delta)
    out.sort(key=lambda p: (_SEVERITY.get(p.verdict, 9), -p.result.exact_probability, p.label))
    return CertificateAudit(parts=tuple(out), confidence=confidence, part_confidence=part_conf,
                            not_audited=tuple(not_audited))


def _interval_verdict(lcb: float, ucb: float, delta: float) -> str:
    """The verdict of a confidence interval ``[lcb, ucb]`` on the violation probability against ``delta``."""
    if ucb <= delta:
        return "holds"
    if lcb > delta:
        return "violated"
    return "inconclusive"


def _mixtures(parts: list[PartAudit], delta: float) -> list[PartAudit]:
    """Per model, the generators' audits combined as the uniform mixture the certificate claims.

    The mixture's probability is the mean over generators of each generator's; every part's bounds hold
    together with the family-wise confidence (Bonferroni over the parts), so the mean of their upper
    (lower) bounds bounds the mixture from above (below)."""
    by: dict[str | None, list[PartAudit]] = {}
    for p in parts:
        by.setdefault(p.model, []).append(p)
    out = []
    for model, ps in by.items():
        if len(ps) == 1:
            out.append(ps[0])
            continue
        n = len(ps)
        exact = math.fsum(p.result.exact_probability for p in ps) / n
        ucb = math.fsum(p.result.exact_ucb for p in ps) / n
        lcb = math.fsum(p.result.exact_lcb for p in ps) / n
        if any(p.result.bound_violations for p in ps):
            verdict = "violated"
        elif all(p.kind in ("recheck", "census") for p in ps):
            ok = exact <= delta * (1.0 + 1e-9)
            verdict = ("recheck" if all(p.kind == "recheck" for p in ps) else "exact") if ok else "violated"
        else:
            verdict = _interval_verdict(lcb, ucb, delta)
        first = ps[0].result
        res = dataclasses.replace(
            first, n_neighbors=sum(p.result.n_neighbors for p in ps), exact_probability=exact, exact_ucb=ucb,
            exact_lcb=lcb, mc_probability=math.fsum(p.result.mc_probability for p in ps) / n,
            mc_ucb=math.fsum(p.result.mc_ucb for p in ps) / n, verdict=verdict,
            bound_violations=sum(p.result.bound_violations for p in ps))
        names = ", ".join(p.generator for p in ps)
        kinds = {p.kind for p in ps}
        kind = kinds.pop() if len(kinds) == 1 else "audit"
        out.append(PartAudit(model=model, generator=f"mixture of {names}", kind=kind,
                             reason=f"a generator picked uniformly among {names}: the mean of their audits", result=res))
    return out

"""Schema version 1 of the A-BB certificate (the sensitivity-based calibration of ``biasbound.abb``; private).

Kept so that certificates written before schema version 2 still read and verify, and so that a
:class:`biasbound.abb.Calibration` still makes a certificate.  New code: :mod:`biasbound.certificate`.

The A-BB certificate: what was certified, under which assumptions, and how to re-check it.

A :class:`Certificate` is a frozen record of one calibrated mechanism applied to one batch:
the ``(tau, delta)`` guarantee, the split and bound used, the sensitivity per neighbour
generator, the shrinkage, the noise, the seed and a hash of the scores, plus one plain
sentence stating the guarantee and its scope.  It round-trips through JSON exactly (NaN and
infinity are rejected, never written) and :meth:`Certificate.verify` re-derives
``sigma_max`` from the recorded inputs (Theorem 3.1 / Proposition B.3 arithmetic).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biasbound import __version__
from biasbound._exceptions import DataFormatError, InputError
from biasbound._validation import check_one_of
from biasbound.abb import BOUNDS, RADII, Calibration, recompute_sigma_max

__all__ = ["CENTER_KINDS", "CertificateV1", "CertificateVerificationError", "guarantee_sentence", "make_certificate_v1",
           "sha256_of_array"]

CENTER_KINDS = ("fixed", "holdout", "ema", "batch")


class CertificateVerificationError(InputError):
    """A certificate's recorded numbers do not support its claimed guarantee."""


def sha256_of_array(scores: ArrayLike) -> str:
    """Hex SHA-256 of the scores as little-endian float64 bytes (C order).

    Parameters
    ----------
    scores : array_like
        The score vector (any shape; flattened in C order).

    Returns
    -------
    str
        64 hex characters; identical for equal float64 arrays.
    """
    arr = np.ascontiguousarray(np.asarray(scores, dtype="<f8")).ravel()
    return hashlib.sha256(arr.tobytes()).hexdigest()


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def guarantee_sentence(
    *,
    tau: float,
    delta: float,
    dim: int,
    generators: dict[str, Any],
    bound_used: str,
    beta: float | None,
    sensitivity: float,
    neighbor_relation: str | None = None,
    combination: str | None = None,
    batch: str | None = None,
    jitter_adjusted: bool = False,
) -> str:
    """One plain sentence stating the certified guarantee, its assumptions and its scope.

    Parameters
    ----------
    tau, delta, dim : float, float, int
        The certified tolerance, failure probability and number of judged items.
    generators : dict
        Generator names (keys) the sensitivity was measured on.
    bound_used : str
        ``"markov"``, ``"deterministic"`` or ``"order-statistic"`` (sets the assumptions).
    beta : float or None
        Confidence parameter over the neighbour sample (None: no confidence clause).
    sensitivity : float
        The quantity the bound used (point estimate, UCB, a.s. maximum or order statistic).
    neighbor_relation : str, optional
        Plain description of the neighbour relation, appended in parentheses.
    combination : {"max", "rms"} or None
        How several generators' sensitivities were combined.  ``"max"`` (or an almost-sure bound)
        covers each generator and any mixture of them; ``"rms"`` with a bound that uses the
        sensitivity covers only the uniform mixture of the generators (paper, Appendix B), and
        the sentence says so.
    batch : str, optional
        What ``M(D)`` is, replacing the default ``"this fixed batch of {dim} judged items"``
        (e.g. a vector of model means, or a family of per-model batches).
    jitter_adjusted : bool
        The sensitivity had rerun jitter removed (``context_adjusted_rms``).  Under a bound that
        uses the sensitivity the claim is then about the jitter-free judge, which the sentence states.

    Returns
    -------
    str
    """
    names = ", ".join(sorted(generators)) if generators else "the neighbour generator"
    rel = f"{{{names}}}" + (f" ({neighbor_relation})" if neighbor_relation else "")
    uses_sensitivity = bound_used != "deterministic"
    if len(generators) > 1 and combination == "rms" and uses_sensitivity:
        draw = (f"a neighbour drawn from a generator picked uniformly at random among {rel} (the RMS combination "
                "covers this uniform mixture only, not each generator alone)")
    elif len(generators) > 1:
        draw = f"neighbours drawn from any one of {rel} or any mixture of them"
    else:
        draw = f"neighbours drawn from {rel}"
    if bound_used == "deterministic":
        assume = (f"assuming every neighbour moves the score vector by at most {_fmt(sensitivity)} in L2 norm "
                  "(an almost-sure bound) and the judge is a fixed function of the batch")
    elif beta is not None:
        assume = ("assuming per-item judgments are independent and the observed neighbours are i.i.d. draws from "
                  f"the generator, with confidence {_fmt(1.0 - beta)} over the neighbour sample")
    else:
        assume = (f"assuming per-item judgments are independent and the measured RMS sensitivity {_fmt(sensitivity)} "
                  "is the generator's true value (a point estimate, no confidence level)")
    if jitter_adjusted and uses_sensitivity:
        assume += ("; the sensitivity had rerun jitter removed in mean square, so this holds for the jitter-free "
                   "judge (observed score = jitter-free score + independent zero-mean rerun noise) and does not "
                   "cover rerun noise")
    what = batch if batch else f"this fixed batch of {dim} judged items"
    return (
        f"For {what} and {draw}, "
        f"Pr[‖M(D) − M(D′)‖₂ > {_fmt(tau)}] ≤ {_fmt(delta)} over the neighbour draw and the mechanism's noise, "
        f"{assume}; it is local to this batch, not a generalization claim."
    )


def _check_finite_tree(value: Any, path: str) -> None:
    """Reject NaN/inf anywhere in a JSON-like tree (they must never be written)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, numbers.Real):
        if not math.isfinite(float(value)):
            raise InputError(f"The certificate field {path!r} must be finite (NaN and infinity are never written). Got {value!r} instead.")
        return
    if isinstance(value, dict):
        for k, v in value.items():
            _check_finite_tree(v, f"{path}.{k}")
        return
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_finite_tree(v, f"{path}[{i}]")
        return
    raise TypeError(f"The certificate field {path!r} must be JSON-serializable. Got {type(value).__name__} instead.")


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays and tuples to plain JSON types."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class CertificateV1:
    """A ``(tau, delta)`` A-BB certificate for one batch (see module docstring).

    Attributes
    ----------
    tau, delta, delta_B, delta_Delta : float
        Guarantee and the failure split used (``delta_B + delta_Delta <= delta``).
    beta : float or None
        The guarantee holds with probability ``>= 1 - beta`` over the neighbour sample.
    dim : int
        Number of certified scores.
    method, bound_used, radius : str
        Calibration method, the bound on the neighbour term, the noise radius kind.
    sensitivity : float
        The quantity the bound used (Delta* or its UCB, a.s. max, or order statistic).
    sensitivity_ucb : float or None
        Upper confidence bound on the combined RMS sensitivity, when measured.
    center_sensitivity : float
        Centre term the bound used (0 for a centre fixed within the batch).
    generators : dict
        name -> {delta_star, m, ucb} per neighbour generator.
    combination : str or None
        How generators were combined ("max" or "rms").
    alpha, alpha_max, sigma, sigma_max : float
        Shrinkage, its feasibility limit, noise used and its maximum.
    center : dict
        {kind, value}: kind in fixed/holdout/ema/batch.
    seed : int
        Seed of the noise draw.
    data_sha256 : str
        Hash of the raw score vector f(D) (float64 bytes).
    biasbound_version, view : str
        Software version and which score view was certified.
    scope : dict
        What was judged (judge, model, ...).
    guarantee : str
        The plain-language sentence.
    audit : dict or None
        Audit result (see ``biasbound.audit``), given to :func:`make_certificate` or added with
        :meth:`with_audit`.
    created : str
        ISO 8601 UTC time.
    bound_details : dict
        Extra numbers needed to re-check the bound (order statistic: order_index, m, beta_per_split).
    """

    tau: float
    delta: float
    delta_B: float
    delta_Delta: float
    beta: float | None
    dim: int
    method: str
    bound_used: str
    radius: str
    sensitivity: float
    sensitivity_ucb: float | None
    center_sensitivity: float
    generators: dict[str, Any]
    combination: str | None
    alpha: float
    alpha_max: float
    center: dict[str, Any]
    sigma: float
    sigma_max: float
    seed: int
    data_sha256: str
    biasbound_version: str
    view: str
    scope: dict[str, Any]
    guarantee: str
    audit: dict[str, Any] | None = None
    created: str = ""
    bound_details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("tau", "delta", "delta_B", "delta_Delta", "sensitivity", "center_sensitivity", "alpha",
                     "alpha_max", "sigma", "sigma_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise TypeError(f"The certificate field {name!r} must be a float. Got {type(v).__name__} instead.")
        if isinstance(self.dim, bool) or not isinstance(self.dim, numbers.Integral):
            raise TypeError(f"The certificate field 'dim' must be an int. Got {type(self.dim).__name__} instead.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, numbers.Integral):
            raise TypeError(f"The certificate field 'seed' must be an int. Got {type(self.seed).__name__} instead.")
        for name in ("generators", "center", "scope", "bound_details"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"The certificate field {name!r} must be a dict. Got {type(getattr(self, name)).__name__} instead.")
        if self.audit is not None and not isinstance(self.audit, dict):
            raise TypeError(f"The certificate field 'audit' must be a dict or None. Got {type(self.audit).__name__} instead.")
        check_one_of(self.bound_used, "bound_used", "Certificate", BOUNDS)
        check_one_of(self.radius, "radius", "Certificate", RADII)
        check_one_of(self.center.get("kind"), "center.kind", "Certificate", CENTER_KINDS)
        for f in dataclasses.fields(self):
            _check_finite_tree(getattr(self, f.name), f.name)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field (JSON types only)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, *, indent: int | None = 2) -> str:
        """Serialize to JSON; NaN and infinity are rejected (never written)."""
        try:
            return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)
        except ValueError as exc:  # allow_nan=False: a non-finite value slipped into a nested dict
            raise InputError(f"The certificate cannot be written: {exc}; NaN and infinity are never written.") from exc

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CertificateV1:
        """Build a certificate from :meth:`to_dict` output (unknown or missing keys are an error)."""
        if not isinstance(data, dict):
            raise TypeError(f"The 'data' parameter of Certificate.from_dict must be a dict. Got {type(data).__name__} instead.")
        names = [f.name for f in dataclasses.fields(cls)]
        required = [f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [n for n in required if n not in data]
        extra = [k for k in data if k not in names]
        if missing or extra:
            raise InputError(f"The certificate must have exactly the documented fields. Missing {missing}, unknown {extra}.")
        return cls(**{k: data[k] for k in names if k in data})

    @classmethod
    def from_json(cls, text: str) -> CertificateV1:
        """Parse :meth:`to_json` output; NaN/Infinity literals are rejected."""

        def _reject(token: str) -> float:
            raise InputError(f"The certificate JSON must not contain {token}; NaN and infinity are never written.")

        try:
            data = json.loads(text, parse_constant=_reject)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"The certificate is not valid JSON: {exc.msg}.", line=exc.lineno) from exc
        return cls.from_dict(data)

    def write(self, path: str | Path) -> Path:
        """Write the JSON form to ``path`` (UTF-8) and return the path."""
        p = Path(path)
        p.write_text(self.to_json() + "\n", encoding="utf-8")
        return p

    @classmethod
    def read(cls, path: str | Path) -> CertificateV1:
        """Read a certificate written by :meth:`write`."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataFormatError(f"The certificate file cannot be read ({exc.strerror}).", path=str(p)) from exc
        try:
            return cls.from_json(text)
        except DataFormatError as exc:
            raise DataFormatError(str(exc), path=str(p), line=exc.line) from exc
        except InputError as exc:
            raise DataFormatError(str(exc), path=str(p)) from exc

    def with_audit(self, audit: dict[str, Any] | Any) -> CertificateV1:
        """Return a copy with ``audit`` set (a dict, or any object with ``to_dict()``)."""
        if hasattr(audit, "to_dict"):
            audit = audit.to_dict()
        if not isinstance(audit, dict):
            raise TypeError(f"The 'audit' parameter of with_audit must be a dict. Got {type(audit).__name__} instead.")
        return dataclasses.replace(self, audit=_plain(audit))

    # ------------------------------------------------------------------ check
    def verify(self) -> dict[str, Any]:
        """Re-derive ``sigma_max`` from the recorded inputs and check the recorded noise against it.

        Returns
        -------
        dict
            ``{"holds": True, "sigma", "sigma_max_recorded", "sigma_max_recomputed", "margin"}``.

        Raises
        ------
        CertificateVerificationError
            If ``sigma`` (or the recorded ``sigma_max``) exceeds the recomputed ``sigma_max``,
            the split does not fit in ``delta``, ``alpha`` is out of (0, 1], or the order
            statistic's binomial condition fails.

        Notes
        -----
        Checks the arithmetic of Theorem 3.1 / Proposition B.3 (and the tight variants), not
        the assumptions behind ``sensitivity``.
        """
        from scipy import stats

        def fail(msg: str) -> None:
            raise CertificateVerificationError(f"The certificate does not verify: {msg}.")

        if not (self.tau > 0 and 0 < self.delta < 1):
            fail(f"tau={self.tau!r} must be > 0 and delta={self.delta!r} in (0, 1)")
        if not (self.delta_B > 0 and self.delta_Delta >= 0 and self.delta_B + self.delta_Delta <= self.delta):
            fail(f"the split delta_B={self.delta_B!r} + delta_Delta={self.delta_Delta!r} must be positive and <= delta={self.delta!r}")
        if not 0 < self.alpha <= 1:
            fail(f"alpha={self.alpha!r} must be in (0, 1]")
        if not self.sigma > 0:
            fail(f"sigma={self.sigma!r} must be > 0")
        if self.beta is not None and not 0 < self.beta < 1:
            fail(f"beta={self.beta!r} must be in (0, 1)")
        if self.center.get("kind") == "batch" and self.alpha < 1 and self.center_sensitivity == 0:
            fail("a batch-mean centre needs a positive center_sensitivity (S_mu) unless alpha = 1")
        if self.bound_used == "order-statistic":
            j, m, b = (self.bound_details.get(k) for k in ("order_index", "m", "beta_per_split"))
            if j is None or m is None or b is None or not 1 <= int(j) <= int(m):
                fail("the order-statistic bound needs order_index, m and beta_per_split in bound_details")
            if float(stats.binom.sf(int(j) - 1, int(m), 1.0 - self.delta_Delta)) > float(b):
                fail(f"order statistic j={j} of m={m} does not bound the (1 - delta_Delta) quantile at level {b}")
        smax = recompute_sigma_max(
            tau=float(self.tau), delta_B=float(self.delta_B), delta_Delta=float(self.delta_Delta), dim=int(self.dim),
            bound=self.bound_used, radius=self.radius, sensitivity=float(self.sensitivity),
            center_term=float(self.center_sensitivity), alpha=float(self.alpha),
        )
        if smax <= 0:
            fail(f"the sensitivity term reaches tau={self.tau!r} at alpha={self.alpha!r}")
        if self.sigma > smax:
            fail(f"sigma={self.sigma!r} exceeds sigma_max={smax!r} recomputed from the recorded inputs")
        if self.sigma_max > smax:
            fail(f"the recorded sigma_max={self.sigma_max!r} exceeds the recomputed {smax!r}")
        return {"holds": True, "sigma": self.sigma, "sigma_max_recorded": self.sigma_max,
                "sigma_max_recomputed": smax, "margin": smax - self.sigma}


def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if hasattr(obj, "to_dict"):
        obj = obj.to_dict()
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        obj = dataclasses.asdict(obj)
    if not isinstance(obj, dict):
        raise TypeError(f"The 'sensitivity' parameter of make_certificate must be a dict or have to_dict(). Got {type(obj).__name__} instead.")
    return obj


def make_certificate_v1(
    calibration: Calibration,
    *,
    sensitivity: Any = None,
    center_kind: str,
    center_value: float | ArrayLike | None,
    seed: int,
    data_sha256: str,
    view: str,
    scope: dict[str, Any] | None = None,
    neighbor_relation: str | None = None,
    created: str | None = None,
    audit: dict[str, Any] | Any | None = None,
    batch_description: str | None = None,
    jitter_adjusted: bool = False,
) -> CertificateV1:
    """Build the certificate for a calibration applied to one batch.

    Parameters
    ----------
    calibration : Calibration
        From :func:`biasbound.abb.calibrate`.
    sensitivity : dict or object with ``to_dict()``, optional
        The combined sensitivity (``how``, ``delta_star``, ``ucb`` and either ``generators``:
        name -> ``{delta_star, m, ucb}`` as :func:`biasbound.sensitivity.combine` gives, or
        ``components``: records each with ``name``, ``delta_star``, ``m``, ``ucb``).  Plain dicts keep this module free of
        ``sensitivity.py`` types.
    center_kind : {"fixed", "holdout", "ema", "batch"}
        How the shrinkage centre was chosen.
    center_value : float or array_like or None
        The centre used.
    seed : int
        Seed of the mechanism's noise (``MechanismResult.seed``).
    data_sha256 : str
        :func:`sha256_of_array` of the raw scores.
    view : str
        Which score view was certified (e.g. ``"model"``).
    scope : dict, optional
        What was judged (judge, model, dataset, ...).
    neighbor_relation : str, optional
        Plain description of the neighbour relation for the guarantee sentence.
    created : str, optional
        ISO time; default now (UTC).
    audit : dict or object with ``to_dict()``, optional
        The audit record to store (as :meth:`Certificate.with_audit` would add it), so that a
        certificate with its audit is built and validated once; ``None`` leaves it unset.
    batch_description : str, optional
        What ``M(D)`` is, for the guarantee sentence (default: a batch of ``dim`` judged items).
    jitter_adjusted : bool
        The sensitivity had rerun jitter removed; the sentence then states the jitter-free claim.

    Returns
    -------
    Certificate

    Raises
    ------
    InputError
        If a batch-mean centre is combined with a calibration that assumed a fixed centre.
    """
    where = "make_certificate"
    if not isinstance(calibration, Calibration):
        raise TypeError(f"The 'calibration' parameter of {where} must be a Calibration. Got {type(calibration).__name__} instead.")
    kind = check_one_of(center_kind, "center_kind", where, CENTER_KINDS)
    if kind == "batch" and calibration.alpha < 1 and calibration.center_sensitivity == 0:
        raise InputError(
            f"The 'center_kind' parameter of {where} is 'batch' but the calibration assumed a centre fixed within the batch "
            "(center_sensitivity=0); recalibrate with center_sensitivity=S_mu or use a fixed/holdout/ema centre."
        )
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"The 'seed' parameter of {where} must be an int. Got {type(seed).__name__} instead.")
    if not isinstance(data_sha256, str) or len(data_sha256) != 64:
        raise InputError(f"The 'data_sha256' parameter of {where} must be a 64-character hex digest. Got {data_sha256!r} instead.")
    if audit is not None:
        if hasattr(audit, "to_dict"):
            audit = audit.to_dict()
        if not isinstance(audit, dict):
            raise TypeError(f"The 'audit' parameter of {where} must be a dict or None. Got {type(audit).__name__} instead.")
    sens = _as_dict(sensitivity)
    generators: dict[str, Any] = {}
    if isinstance(sens.get("generators"), dict):
        # sensitivity.CombinedSensitivity: name -> {delta_star, m, ucb} (unfloored).
        for name, comp in sens["generators"].items():
            c = _as_dict(comp)
            generators[str(name)] = {"delta_star": c.get("delta_star"), "m": c.get("m"), "ucb": c.get("ucb")}
    else:
        # A plain list of per-generator records, each with its name.
        for comp in sens.get("components", ()) or ():
            c = _as_dict(comp)
            generators[str(c.get("name"))] = {"delta_star": c.get("delta_star"), "m": c.get("m"), "ucb": c.get("ucb")}
    ucb = sens.get("ucb")
    cv: Any = None if center_value is None else _plain(np.asarray(center_value, dtype=float))
    sel = calibration.selected
    details = {k: sel[k] for k in ("order_index", "m", "beta_per_split", "n_splits") if k in sel}
    sentence = guarantee_sentence(tau=calibration.tau, delta=calibration.delta, dim=calibration.dim, generators=generators,
                                  bound_used=calibration.bound_used, beta=calibration.beta,
                                  sensitivity=calibration.sensitivity, neighbor_relation=neighbor_relation,
                                  combination=sens.get("how"), batch=batch_description,
                                  jitter_adjusted=bool(jitter_adjusted))
    return CertificateV1(
        tau=calibration.tau, delta=calibration.delta, delta_B=calibration.delta_B, delta_Delta=calibration.delta_Delta,
        beta=calibration.beta, dim=calibration.dim, method=calibration.method, bound_used=calibration.bound_used,
        radius=calibration.radius, sensitivity=calibration.sensitivity,
        sensitivity_ucb=None if ucb is None else float(ucb), center_sensitivity=calibration.center_sensitivity,
        generators=_plain(generators), combination=sens.get("how"), alpha=calibration.alpha,
        alpha_max=calibration.alpha_max, center={"kind": kind, "value": cv}, sigma=calibration.sigma,
        sigma_max=calibration.sigma_max, seed=int(seed), data_sha256=data_sha256, biasbound_version=__version__,
        view=str(view), scope=_plain(dict(scope or {})), guarantee=sentence,
        audit=None if audit is None else _plain(audit),
        created=created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        bound_details=_plain(details),
    )

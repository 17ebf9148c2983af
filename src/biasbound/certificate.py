"""The A-BB certificate (schema version 3): what was certified, from what knowledge, and how to re-check it.

A :class:`Certificate` records one calibrated mechanism applied to one batch.  Its fields are of two kinds
(``docs/certificate-schema.md`` lists every field):

* **inputs** — the guarantee ``(tau, delta)``, ``dim``, ``method``, the point ``(alpha, sigma)``, the knowledge
  per generator (the statistics the bounds use: per record m, N, sums, max, β, distinct values and counts)
  and how generators combine, ``tau_split`` and the default rule, the range bound ``A``, the centre, the
  neighbourhood, the units, the seed and the data hash;
* **derived** — everything else: ``sigma_max``, ``alpha_max``, ``alpha_at_sigma``, the bound's value, unit and
  exactness, ``beta``, the candidates, the frontier, ``range_implied``, the original-scale statement, the
  bias radius (per generator, combined and its curve over delta), the paper's split, and the guarantee
  sentence.

:meth:`Certificate.verify` recomputes every derived field from the inputs with the same functions that made
it (:func:`biasbound.calibration.calibrate` at the recorded point, :mod:`biasbound.figures`) and
fails on any difference (relative tolerance 1e-9), on a bound above ``delta``, on a missing or different
``records_sha256`` (every field but ``created``), on a judge's seed or centre that is not its models', and — given
the scores (and the released scores) — on a data hash (or seed) that does not match.  ``judgments_sha256`` binds the
certificate to every judgment used (checked by ``biasbound verify --judgments``).  Schema version 2 certificates read
and verify with a warning (no judgments digest; their records digest was optional and covered four records).
Schema version 1 (the calibrator before knowledge records, never in a released version) is no longer read: such a
file is refused with one sentence naming it.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from biasbound._version import __version__
from biasbound._exceptions import DataFormatError, InputError
from biasbound._validation import check_one_of, spawn_seeds
from biasbound.parameters import validate_params

__all__ = [
    "CENTER_KINDS",
    "READABLE_VERSIONS",
    "SCHEMA_VERSION",
    "Certificate",
    "CertificateVerificationError",
    "confidence_phrase",
    "make_certificate",
    "sha256_of_array",
]

CENTER_KINDS = ("fixed", "holdout", "ema", "batch")


class CertificateVerificationError(InputError):
    """A certificate's recorded numbers do not support its claimed guarantee."""


#: the one sentence for a schema-1 file (the calibrator before knowledge records; no released version wrote one)
V1_REFUSED = ("it is a schema version 1 certificate, which this biasbound no longer reads or verifies; "
              "re-run certify to write a schema-3 certificate")


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


def _finite_json(value: Any) -> bool:
    """True when json's C encoder takes ``value`` with ``allow_nan=False``: then :func:`_check_finite_tree` passes too
    (every type it accepts the walk accepts, NaN and infinity refused by both), so the walk runs only otherwise."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


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


#: the exact built-in types :func:`_plain` returns unchanged
_SCALARS = frozenset({str, float, int, bool, type(None)})
_STR = frozenset({str})


def _plain(value: Any) -> Any:
    """Convert numpy scalars/arrays and tuples to plain JSON types."""
    kind = type(value)  # exact built-in types first (the bulk of every certificate), the same results as below
    if value is None or kind is str or kind is float or kind is int or kind is bool:
        return value
    if kind is dict:
        # a leaf (str keys, built-in scalar values: most dicts of a certificate) is copied as it is, the types read
        # in one C-level scan (issuperset stops at the first other type) instead of one call per value
        if _SCALARS.issuperset(map(type, value.values())) and _STR.issuperset(map(type, value)):
            return dict(value)
        return {k if type(k) is str else str(k): _plain(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        if _SCALARS.issuperset(map(type, value)):  # a leaf list (levels, sums, curves): the same copy, no call per value
            return list(value)
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value

SCHEMA_VERSION = 3
#: Schema versions that read; version 2 (no judgments digest, records_sha256 optional) verifies with a warning.
READABLE_VERSIONS = (2, SCHEMA_VERSION)
_RTOL = 1e-9
#: ``records_sha256`` of a schema-3 certificate read from a file that lacks it (verify() then fails).
_ABSENT = "absent"

#: fields recomputed by verify() (everything not listed in _INPUTS or _RECORDS)
_DERIVED = ("sigma_max", "alpha_max", "alpha_at_sigma", "bound_used", "bound_value", "exact", "beta", "point_estimate",
            "candidates", "frontier", "range_implied", "original_scale", "bias_radius", "paper", "guarantee")


def _fmt(x: float) -> str:
    return f"{x:.4g}"


# --------------------------------------------------------------------------- derivation (shared by make and verify)
def _derive(inp: dict[str, Any]) -> dict[str, Any]:
    """Every derived field from the inputs (see the module docstring)."""
    from biasbound.bounds import knowledge_from_dict
    from biasbound.calibration import calibrate
    from biasbound.figures import DEFAULT_DELTAS, bias_radius, original_scale, range_implied

    k = knowledge_from_dict(inp["knowledge"])
    fr = inp["frontier_inputs"]
    c = calibrate(k, tau=inp["tau"], delta=inp["delta"], dim=inp["dim"], alpha=inp["alpha"], sigma=inp["sigma"],
                  method=inp["method"], tau_split=fr["tau_split"], frontier_points=fr["n"], _rule=fr["default_rule"])
    return _derive_from(c, inp, k, DEFAULT_DELTAS, bias_radius, original_scale, range_implied)


def _radius(x: float) -> float | None:
    return None if not math.isfinite(x) else float(x)


def _derive_from(c: Any, inp: dict[str, Any], k: Any, deltas: tuple[float, ...], bias_radius: Any, original_scale: Any,
                 range_implied: Any, shared_radii: dict[Any, Any] | None = None) -> dict[str, Any]:
    from biasbound.bounds import almost_sure
    from biasbound.bounds._knowledge import AlmostSure, Knowledge

    out: dict[str, Any] = {
        "sigma_max": c.sigma_max, "alpha_max": c.alpha_max, "alpha_at_sigma": c.alpha_at_sigma, "bound_used": c.bound_used,
        "bound_value": c.bound_value, "exact": c.exact, "beta": c.beta, "point_estimate": c.point_estimate,
        "candidates": [{key: v for key, v in cand.items() if key not in ("alpha_at_sigma", "sigma_at_alpha")}
                       for cand in c.candidates],
        "frontier": {"points": [dict(p) for p in c.frontier], "default_rule": c.default_rule, "tau_split": c.tau_split},
    }
    ri = inp["range"]
    if ri is None:
        out["range_implied"] = None
    else:
        rec = AlmostSure(ri["A"], shift_ratio=ri.get("shift_ratio"))
        v = almost_sure.violation_bound(c.tau, c.alpha, c.sigma, c.dim, rec)
        out["range_implied"] = {"A": ri["A"], "shift_ratio": ri.get("shift_ratio"), "bound": v,
                                "holds": range_implied(tau=c.tau, delta=c.delta, alpha=c.alpha, sigma=c.sigma, dim=c.dim,
                                                       A=ri["A"], shift_ratio=ri.get("shift_ratio"))}
    fixed = inp["center"]["kind"] != "batch"
    out["original_scale"] = original_scale(tau=c.tau, alpha=c.alpha, sigma=c.sigma) if fixed else None
    # the score range is a sure fact about Delta whatever else is known: a radius never exceeds it (a moment
    # bound alone gives Markov's sqrt(U2/delta), which can exceed the range, e.g. 4.42 on a [0, 1] scale)
    kr = k if ri is None else Knowledge(generators=tuple((name, tuple(recs) + (AlmostSure(ri["A"]),))
                                                          for name, recs in k.generators), how=k.how)
    from biasbound.figures import bias_radii  # bias_radius at many deltas from one scan of the knowledge

    at, *curve = bias_radii((c.delta, *deltas), kr)

    def shared(key: tuple[Any, ...], held: tuple[Any, ...], compute: Any) -> Any:
        """``compute()``, or its value from an earlier certificate of this build with the same key (a judge's
        certificate lists its models' records again): ``key`` names records by id, and ``held`` keeps those records
        with the value, so an id found is never another object's."""
        if shared_radii is None:
            return compute()
        got = shared_radii.get(key)
        if got is None or len(got[0]) != len(held) or any(a is not b for a, b in zip(got[0], held)):
            got = shared_radii[key] = (held, compute())
        return got[1]

    # a generator's own radius at delta: a function of its records, the range bound A added to them and delta alone
    # (bias_radii's value at one delta does not depend on the other deltas asked: every step is per threshold)
    a_range = None if ri is None else ri["A"]
    if len(kr.generators) == 1:  # one generator: its own radius is the combined one (max or mixture of one survival)
        name, recs = k.generators[0]
        per = {name: _radius(at)}
        if shared_radii is not None:
            key = ("radius", c.delta, a_range, *map(id, recs))
            shared_radii[key] = (tuple(recs), per[name])
    else:
        per = {name: shared(("radius", c.delta, a_range, *map(id, recs)), tuple(recs),
                            lambda name=name, kr_recs=kr_recs: _radius(bias_radius(c.delta, Knowledge(generators=((name, kr_recs),)))))
               for (name, recs), (_, kr_recs) in zip(k.generators, kr.generators)}

    # each record's own curve: what that piece of knowledge alone says about the judge (and a check on it)
    def record_curve(r: Any) -> list[float | None]:
        return list(shared(("curve", deltas, id(r)), (r,), lambda: [_radius(x) for x in bias_radii(deltas, r)]))

    per_record = {name: [record_curve(r) for r in recs] for name, recs in k.generators}
    out["bias_radius"] = {"delta": c.delta, "radius": _radius(at), "per_generator": per,
                          "curve": [{"delta": d, "radius": _radius(x)} for d, x in zip(deltas, curve)],
                          "per_record_curve": per_record}
    if c.paper_split is not None:
        leg = c.paper_split
        out["paper"] = {"delta_B": leg.delta_B, "delta_Delta": leg.delta_Delta, "sensitivity": leg.sensitivity,
                        "center_sensitivity": leg.center_sensitivity, "radius": leg.radius,
                        "noise_radius_unit": leg.noise_radius_unit}
    else:
        out["paper"] = None
    out["guarantee"] = _sentence(inp, out, k)
    return _plain(out)


def _sentence(inp: dict[str, Any], der: dict[str, Any], k: Any) -> str:
    """The guarantee in one paragraph, in the user's units, saying plainly when it follows from the range alone."""
    from biasbound.bounds._knowledge import Wording, facts

    u = inp["units"]
    scale, unit = float(u.get("scale", 1.0)), str(u.get("name", "score units"))
    parts = [f"For {_batch(inp)} and {_draw(inp, k)}, Pr[‖M(D) − M(D′)‖₂ > {_fmt(inp['tau'] * scale)} {unit}] ≤ "
             f"{_fmt(inp['delta'])} over the neighbour draw and the mechanism's noise (shrinkage α = {_fmt(inp['alpha'])}, "
             f"noise σ = {_fmt(inp['sigma'] * scale)} {unit})."]
    rests = facts(k.records, Wording(_fmt, scale, unit))  # each kind of knowledge describes its own records
    ri = der.get("range_implied") or {}
    holds_surely = bool(ri.get("holds"))
    if rests and holds_surely:  # the statement holds surely; the data were only the calibration's input
        parts.append("It was calibrated from: " + "; ".join(rests) + " — which the statement does not need.")
    elif rests:
        parts.append("It rests on: " + "; ".join(rests) + ".")
    conf = confidence_phrase(k)
    if conf is not None and not holds_surely:  # range-implied: it holds surely, no confidence
        parts.append(f"It holds {conf}.")
    if holds_surely:
        parts.append(f"This follows from the score range alone (no neighbour can move the scores by more than "
                     f"{_fmt(ri['A'] * scale)} {unit}): it holds for ANY judge on this range and says nothing about this "
                     "judge in particular.")
    parts += _restatements(inp, der, scale, unit)
    parts.append("It is local to this batch, not a generalization claim.")
    return " ".join(parts)


def _batch(inp: dict[str, Any]) -> str:
    return str(inp.get("batch_description") or f"this fixed batch of {inp['dim']} judged items")


def _draw(inp: dict[str, Any], k: Any) -> str:
    """How the neighbour is drawn: the generators (and the neighbourhood), each one or a mixture of them."""
    names = [n for n, _ in k.generators]
    shown = ", ".join(names) if len(names) <= 6 else ", ".join(names[:3]) + f", … ({len(names)} in all, listed in the knowledge)"
    rel = "{" + shown + "}" + (f" ({inp['neighbor_relation']})" if inp.get("neighbor_relation") else "")
    nb = inp.get("neighborhood") or {}
    if nb.get("kind") == "hamming":
        rel += f" [Hamming-{nb.get('k')}]"
    elif nb.get("kind") == "all-items":
        rel += " [all items at once]"
    if len(names) > 1 and k.how == "mixture":
        return f"a neighbour from a generator picked uniformly at random among {rel} (not each generator alone)"
    if len(names) > 1:
        return f"neighbours from any one of {rel}"
    return f"neighbours from {rel}"


def _restatements(inp: dict[str, Any], der: dict[str, Any], scale: float, unit: str) -> list[str]:
    """The same guarantee restated: in the unshrunk judge's units, and as its bias radius."""
    out = []
    os_ = der.get("original_scale")
    if os_ is not None and inp["alpha"] < 1:
        out.append(f"Equivalently (a change of units), (M(D) − (1 − α)·centre)/α is the unshrunk judge's scores plus "
                   f"Gaussian noise of standard deviation {_fmt(os_['sigma'] * scale)} {unit}, and it changes by more "
                   f"than {_fmt(os_['tau'] * scale)} {unit} with the same probability.")
    br = der["bias_radius"]
    if br["radius"] is not None:
        out.append(f"Without shrinkage or noise this judge's scores move by more than {_fmt(br['radius'] * scale)} {unit} "
                   f"with probability at most {_fmt(inp['delta'])} (its bias radius).")
    return out


def confidence_phrase(knowledge: Any) -> str | None:
    """How confident the statement is over the neighbour sample (None when no record spends a β).

    One unit: ``"with confidence 1 − β over the neighbour sample"``. A judge's certificate over several
    models is each model's own claim: each holds with confidence ``1 − β_model`` over its own sample;
    all of them at once with ``1 − Σβ`` (a union bound) only when ``Σβ < 1`` — otherwise no joint
    confidence is stated (a sum of 76 β = 0.05 is 3.8, and "confidence −2.8" means nothing)."""
    from biasbound.bounds._knowledge import Knowledge
    from biasbound.calibration import beta_per_unit

    per = beta_per_unit(knowledge)
    total = math.fsum(per.values())
    if total <= 0:
        return None
    k = Knowledge.of(knowledge)
    random_judge = any(r.RANDOM_JUDGE for r in k.records)
    # a random judge's bound is a confidence bound over its recorded answers (and the items drawn, if sampled)
    over, own = (("the judge's recorded answers (and any sample of items)", "that model's recorded answers")
                 if random_judge else ("the neighbour sample", "that model's own neighbour sample"))
    if len(per) == 1:
        return f"with confidence {_fmt(1.0 - total)} over {over}"
    worst = max(per.values())
    spent = sum(1 for b in per.values() if b > 0)
    each = (f"with confidence {_fmt(1.0 - worst)} for each model over {own}"
            if spent == len(per) and len(set(per.values())) == 1 else
            f"with confidence at least {_fmt(1.0 - worst)} for each model over {own} "
            f"({spent} of the {len(per)} models rest on a sample or a random judge's answers)")
    if total < 1.0:
        return each + f"; for all {len(per)} models at once with confidence {_fmt(1.0 - total)} (their β summed)"
    return each + (f"; no confidence is stated for all {len(per)} models at once (their β sum to {_fmt(total)} ≥ 1, "
                   "so the union bound says nothing)")


#: Records no statistic determines; in schema 2 ``records_sha256`` covered these alone.
_RECORDS = ("scope", "audit", "diagnostics", "biasbound_version")
#: Fields ``records_sha256`` leaves out in schema 3 (it covers every other field): the time stamp and itself.
_UNDIGESTED = ("created", "records_sha256")


def _digested(version: Any) -> tuple[str, ...]:
    if version == 2:
        return _RECORDS
    return tuple(f.name for f in dataclasses.fields(Certificate) if f.name not in _UNDIGESTED)


def _records_digest(values: dict[str, Any], version: Any = None) -> str:
    """SHA-256 of the canonical JSON (sorted keys, compact) of the digested fields in ``values``: schema 3 every
    field but ``created`` and ``records_sha256``; schema 2 the :data:`_RECORDS` fields (``version`` default:
    ``values["schema_version"]``)."""
    version = values.get("schema_version") if version is None else version
    # the values are _plain's output (a cycle would have recursed there without end): no circular-reference check
    text = json.dumps({k: values.get(k) for k in _digested(version)}, sort_keys=True,
                      ensure_ascii=False, allow_nan=False, separators=(",", ":"), check_circular=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- the record
@dataclass(frozen=True)
class Certificate:
    """A ``(tau, delta)`` A-BB certificate, schema version 2 (field list: ``docs/certificate-schema.md``)."""

    schema_version: int
    tau: float
    delta: float
    dim: int
    method: str
    alpha: float
    sigma: float
    knowledge: dict[str, Any]
    frontier_inputs: dict[str, Any]
    range: dict[str, Any] | None
    center: dict[str, Any]
    neighborhood: dict[str, Any] | None
    units: dict[str, Any]
    neighbor_relation: str | None
    batch_description: str | None
    seed: int
    data_sha256: str
    view: str
    scope: dict[str, Any]
    # derived
    sigma_max: float
    alpha_max: float
    alpha_at_sigma: float
    bound_used: str
    bound_value: float
    exact: bool
    beta: float | None
    point_estimate: bool
    candidates: list[dict[str, Any]]
    frontier: dict[str, Any]
    range_implied: dict[str, Any] | None
    original_scale: dict[str, float] | None
    bias_radius: dict[str, Any]
    paper: dict[str, Any] | None
    guarantee: str
    # provenance and reports (not recomputed)
    biasbound_version: str
    created: str
    audit: dict[str, Any] | None = None
    diagnostics: dict[str, Any] | None = None
    #: SHA-256 of every judgment the certification used (originals and neighbours; ``biasbound._integrity``),
    #: the judge's over its models' digests; None for a certificate made from scores alone (library use).
    judgments_sha256: str | None = None
    #: SHA-256 of every field but ``created`` and itself (schema 2: scope, audit, diagnostics, provenance), written
    #: by :meth:`to_dict`; a certificate read back checks it in :meth:`verify`, and a schema-3 file without it fails.
    records_sha256: str | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self) -> None:
        if isinstance(self.schema_version, bool) or self.schema_version not in READABLE_VERSIONS:
            raise InputError(f"The certificate's 'schema_version' must be one of {list(READABLE_VERSIONS)}. "
                             f"Got {self.schema_version!r} instead.")
        check_one_of(self.center.get("kind"), "center.kind", "Certificate", CENTER_KINDS)
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if _finite_json(fields):  # every field at once; else the walk names the field and path (or passes it)
            return
        for name, v in fields.items():
            _check_finite_tree(v, name)

    @property
    def inputs(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in ("tau", "delta", "dim", "method", "alpha", "sigma", "knowledge",
                                              "frontier_inputs", "range", "center", "neighborhood", "units",
                                              "neighbor_relation", "batch_description")}

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        """Plain dict of every field (JSON types only)."""
        d = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        d["records_sha256"] = _records_digest(d)  # always of the fields as they are now
        return d

    def to_json(self, *, indent: int | None = 2) -> str:
        """Serialize to JSON; NaN and infinity are rejected (never written)."""
        try:
            return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)
        except ValueError as exc:
            raise InputError(f"The certificate cannot be written: {exc}; NaN and infinity are never written.") from exc

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Build a certificate from :meth:`to_dict` output; a schema-1 dict (no ``schema_version``) is refused."""
        if not isinstance(data, dict):
            raise TypeError(f"The 'data' parameter of Certificate.from_dict must be a dict. Got {type(data).__name__} instead.")
        if data.get("schema_version", 1) == 1:
            raise DataFormatError(f"The certificate cannot be read: {V1_REFUSED}.")
        names = [f.name for f in dataclasses.fields(cls)]
        if data.get("schema_version") == 2:  # written before the judgments digest
            names.remove("judgments_sha256")
        required = [f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING]
        missing = [n for n in required if n not in data]
        extra = [k for k in data if k not in names]
        if missing or extra:
            raise InputError(f"The certificate must have exactly the documented fields. Missing {missing}, unknown {extra}.")
        values = {k: data[k] for k in names if k in data}
        if data.get("schema_version") == SCHEMA_VERSION and not isinstance(data.get("records_sha256"), str):
            values["records_sha256"] = _ABSENT  # read, and refused by verify() with one sentence
        return cls(**values)

    @classmethod
    def from_json(cls, text: str) -> Any:
        """Parse :meth:`to_json` output (schema version 2 or 3); NaN/Infinity literals are rejected."""

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
    def read(cls, path: str | Path) -> Any:
        """Read a certificate written by :meth:`write` (schema version 2 or 3)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise DataFormatError(f"The certificate file cannot be read ({exc.strerror}).", path=str(p)) from exc
        try:
            return cls.from_json(text)
        except DataFormatError as exc:
            raise DataFormatError(str(exc), path=str(p), line=exc.line) from exc
        except (InputError, TypeError, KeyError) as exc:
            raise DataFormatError(f"The certificate is malformed: {exc}", path=str(p)) from exc

    def with_audit(self, audit: dict[str, Any] | Any) -> Certificate:
        """Return a copy with ``audit`` set (a dict, or any object with ``to_dict()``)."""
        if hasattr(audit, "to_dict"):
            audit = audit.to_dict()
        if not isinstance(audit, dict):
            raise TypeError(f"The 'audit' parameter of with_audit must be a dict. Got {type(audit).__name__} instead.")
        return dataclasses.replace(self, audit=_plain(audit), records_sha256=None)

    # ------------------------------------------------------------------ check
    def verify(self, *, scores: ArrayLike | None = None, certified: ArrayLike | None = None) -> dict[str, Any]:
        """Recompute every derived field from the recorded inputs; check the bound and, given data, the hash and seed.

        Parameters
        ----------
        scores : array_like, optional
            The judge's scores ``f(D)`` the certificate was made for (``data_sha256`` must match).
        certified : array_like, optional
            The released ``M(D)`` (needs ``scores``): re-drawn from ``seed`` and compared.

        Returns
        -------
        dict
            ``{"holds": True, "bound_value", "delta", "checked": [fields]}``.

        Raises
        ------
        CertificateVerificationError
            Naming the first field that does not match, or the bound above ``delta``.
        """

        def fail(msg: str) -> None:
            raise CertificateVerificationError(f"The certificate does not verify: {msg}.")

        try:
            der = _derive(self.inputs)
        except (InputError, TypeError, KeyError, ValueError) as exc:
            fail(f"its inputs do not give a certificate ({exc})")
        for name in _DERIVED:
            where = _mismatch(getattr(self, name), der[name], name)
            if where:
                fail(f"{where} differs from the value recomputed from the recorded inputs")
        if self.records_sha256 == _ABSENT:
            fail("records_sha256 is missing; every schema-3 certificate carries it (deleted after certify wrote the file)")
        if self.records_sha256 is not None and self.records_sha256 != _records_digest(
            {k: _plain(getattr(self, k)) for k in _digested(self.schema_version)}, self.schema_version
        ):
            fail("a recorded field (scope, audit, diagnostics, seed, centre, digests or provenance) differs from the "
                 "records_sha256 written with the certificate")
        where = _seed_or_centre_mismatch(self)
        if where:
            fail(where)
        if not der["bound_value"] <= self.delta:
            fail(f"the bound {der['bound_value']!r} exceeds delta={self.delta!r}")
        if not self.sigma <= der["sigma_max"]:
            fail(f"sigma={self.sigma!r} exceeds sigma_max={der['sigma_max']!r}")
        checked = list(_DERIVED)
        if scores is not None:
            checked += self._verify_data(scores, certified, fail)
        out = {"holds": True, "bound_value": der["bound_value"], "delta": self.delta, "checked": checked}
        if self.schema_version != SCHEMA_VERSION:
            out["warning"] = (f"schema version {self.schema_version}: written before certificates were bound to their "
                              "judgments (no judgments_sha256, records_sha256 optional); re-run certify for a "
                              f"schema-{SCHEMA_VERSION} certificate")
        return out


    def _verify_data(self, scores: ArrayLike, certified: ArrayLike | None, fail: Any) -> list[str]:
        """:meth:`verify` given the data: the scores' hash and, given the released scores, the mechanism's draw at the
        recorded seed and centre. Returns the fields checked."""
        x = np.asarray(scores, dtype=float)
        if sha256_of_array(x) != self.data_sha256:
            fail("data_sha256 does not match the scores given")
        if certified is None:
            return ["data_sha256"]
        from biasbound.mechanism import noise, shrink

        y = np.asarray(certified, dtype=float)
        c = self.center.get("value")
        mu = np.asarray(c, dtype=float) if isinstance(c, list) else float(c if c is not None else np.mean(x))
        z = noise(int(self.seed), self.sigma, x.size)
        parts = _per_model_draws(self.scope, self.view, x.size)
        if parts is not None:  # a judge's model-view certificate: each model drawn with its own seed and centre
            z = np.concatenate([noise(sd, self.sigma, n) for _, n, sd, _ in parts])
            mu = np.concatenate([np.full(n, float(np.mean(x[a:a + n]) if cm is None else cm)) for a, n, _, cm in parts])
        if y.shape != x.shape or not np.allclose(shrink(x, alpha=self.alpha, center=mu) + z, y, rtol=0, atol=1e-12):
            fail("the released scores are not the mechanism's output at the recorded seed, centre, alpha and sigma")
        return ["data_sha256", "seed"]


def _seed_or_centre_mismatch(cert: Certificate) -> str | None:
    """A judge's model-view certificate: its seed must spawn the models' recorded seeds (as the pipeline spawns
    them) and its centre must be theirs (a fixed/ema centre each model's, else their mean)."""
    scope = cert.scope if isinstance(cert.scope, Mapping) else {}
    models = scope.get("models")
    if cert.view != "model" or not isinstance(models, Mapping) or not models:
        return None
    seeds = [v.get("seed") if isinstance(v, Mapping) else None for v in models.values()]
    if all(isinstance(sd, int) for sd in seeds):
        if seeds != spawn_seeds(int(cert.seed), len(seeds)):
            return f"the judge's seed {cert.seed} does not give the models' seeds recorded in scope.models"
    centers = scope.get("centers")
    value = cert.center.get("value")
    if isinstance(centers, Mapping) and centers and isinstance(value, (int, float)) and not isinstance(value, bool):
        cs = [float(c) for c in centers.values() if isinstance(c, (int, float))]
        want = cs if cert.center.get("kind") in ("fixed", "ema") else [float(np.mean(cs))]
        if len(cs) != len(centers) or not all(math.isclose(float(value), c, rel_tol=_RTOL, abs_tol=1e-15) for c in want):
            return f"center.value {value!r} is not the models' centres recorded in scope.centers"
    return None


def _per_model_draws(scope: Any, view: str, size: int) -> list[tuple[int, int, int, float | None]] | None:
    """``(start, dim, seed, centre)`` per model when a model-view judge certificate records each model's own draw
    (``scope.models``: dim and seed; ``scope.centers``) and the dims add up to the scores given; else None."""
    models = scope.get("models") if isinstance(scope, Mapping) and view == "model" else None
    if not isinstance(models, Mapping) or not models:
        return None
    if not all(isinstance(v, Mapping) and "seed" in v and "dim" in v for v in models.values()):
        return None
    centers = scope.get("centers") if isinstance(scope.get("centers"), Mapping) else {}
    out, start = [], 0
    for m, v in models.items():
        n = int(v["dim"])
        out.append((start, n, int(v["seed"]), None if centers.get(m) is None else float(centers[m])))
        start += n
    return out if start == size else None


def _mismatch(recorded: Any, derived: Any, path: str) -> str | None:
    """The path of the first difference between two JSON-like trees (floats compared at relative 1e-9)."""
    if isinstance(derived, bool) or isinstance(recorded, bool) or derived is None or recorded is None \
            or isinstance(derived, str):
        return None if recorded == derived and type(recorded) is type(derived) else path
    if isinstance(derived, numbers.Real):
        if not isinstance(recorded, numbers.Real):
            return path
        return None if math.isclose(float(recorded), float(derived), rel_tol=_RTOL, abs_tol=1e-300) else path
    if isinstance(derived, dict):
        if not isinstance(recorded, dict) or set(recorded) != set(derived):
            return path
        for key in derived:
            w = _mismatch(recorded[key], derived[key], f"{path}.{key}")
            if w:
                return w
        return None
    if isinstance(derived, (list, tuple)):
        if not isinstance(recorded, (list, tuple)) or len(recorded) != len(derived):
            return path
        for i, (a, b) in enumerate(zip(recorded, derived)):
            w = _mismatch(a, b, f"{path}[{i}]")
            if w:
                return w
        return None
    return None if recorded == derived else path


# --------------------------------------------------------------------------- construction
@validate_params
def make_certificate(
    calibration: Any,
    *,
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
    neighborhood: dict[str, Any] | None = None,
    range_bound: float | None = None,
    range_shift_ratio: float | None = None,
    units: dict[str, Any] | None = None,
    diagnostics: dict[str, Any] | None = None,
    judgments_sha256: str | None = None,
    shared_radii: dict[Any, Any] | None = None,
) -> Certificate:
    """Build the certificate for a calibration applied to one batch.

    Parameters
    ----------
    calibration : BoundCalibration
        From :func:`biasbound.calibration.calibrate` (or :func:`~biasbound.calibration.recheck` for a
        per-model certificate at the judge's point).  A searched point is re-derived once at ``(alpha, sigma)``
        so that every number is what :meth:`Certificate.verify` recomputes.
    center_kind, center_value : str, float or array or None
        The shrinkage centre (``"fixed"``, ``"holdout"``, ``"ema"``, ``"batch"``) and its value.
    seed : int
        Seed of the mechanism's noise.
    data_sha256 : str
        :func:`sha256_of_array` of the scores.
    view : str
        ``"model"`` or ``"leaderboard"``.
    scope : dict, optional
        What was judged (judge, model, dataset, coverage, ...).
    neighbor_relation : str, optional
        Plain description of the neighbour relation (in the sentence).
    created : str, optional
        ISO time; default now (UTC).
    audit : dict or object with ``to_dict()``, optional
    batch_description : str, optional
        What ``M(D)`` is, for the sentence.
    neighborhood : dict, optional
        ``{"kind": "hamming", "k": int}`` or ``{"kind": "all-items"}``.
    range_bound : float, optional
        ``A`` implied by the score range alone for this neighbourhood (e.g. ``R sqrt(k)``); enables
        ``range_implied``.
    range_shift_ratio : float, optional
        For a batch-mean centre: ``rho`` of the range bound (``k/d`` for Hamming-k, 1 in general).
    units : dict, optional
        ``{"scale": s, "name": "points on the 1–10 scale"}``: the sentence states ``tau * s`` in those units
        (default ``{"scale": 1.0, "name": "score units"}``, scores on [0, 1]).
    diagnostics : dict, optional
        Reported figures that were not used to calibrate (e.g. the jitter-free sensitivity); not verified.
    judgments_sha256 : str, optional
        :func:`biasbound._integrity.judgments_digest` of the judgment rows used (the pipeline sets it).
    shared_radii : dict, optional
        One empty dict shared by the certificates of one build (a judge's and its models'): each knowledge record's
        bias-radius curve (``bias_radius.per_record_curve``) and each generator's radius (``per_generator``) are
        computed once and read back when the same record objects (and range bound and delta) come again (the
        judge's certificate lists every model's records). The values are unchanged.

    Returns
    -------
    Certificate
    """
    where = "make_certificate"
    from biasbound.calibration import BoundCalibration, recheck

    if not isinstance(calibration, BoundCalibration):
        raise TypeError(f"The 'calibration' parameter of {where} must be a BoundCalibration. Got {type(calibration).__name__} instead.")
    kind = check_one_of(center_kind, "center_kind", where, CENTER_KINDS)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"The 'seed' parameter of {where} must be an int. Got {type(seed).__name__} instead.")
    if not isinstance(data_sha256, str) or len(data_sha256) != 64:
        raise InputError(f"The 'data_sha256' parameter of {where} must be a 64-character hex digest. Got {data_sha256!r} instead.")
    if kind == "batch" and calibration.alpha < 1 and all(
            getattr(r, "shift_ratio", None) is None and getattr(r, "shift_sq", None) is None
            for r in calibration.knowledge.records):
        raise InputError(f"The 'center_kind' parameter of {where} is 'batch' but the knowledge assumes a centre fixed within the "
                         "batch (no shift_ratio or shift_sq); build the knowledge with the batch centre's shift.")
    if audit is not None and hasattr(audit, "to_dict"):
        audit = audit.to_dict()
    if audit is not None and not isinstance(audit, dict):
        raise TypeError(f"The 'audit' parameter of {where} must be a dict or have to_dict(). Got {type(audit).__name__} instead.")
    c = calibration if calibration.checked_point else recheck(calibration)
    cv: Any = None if center_value is None else _plain(np.asarray(center_value, dtype=float))
    u = {"scale": 1.0, "name": "score units"} if units is None else {"scale": float(units.get("scale", 1.0)),
                                                                     "name": str(units.get("name", "score units"))}
    inp = {"tau": c.tau, "delta": c.delta, "dim": c.dim, "method": c.method, "alpha": c.alpha, "sigma": c.sigma,
           "knowledge": c.knowledge.to_dict(),  # made plain with the other inputs just below (once)
           "frontier_inputs": {"n": c.frontier_points, "tau_split": c.tau_split, "default_rule": c.default_rule},
           "range": None if range_bound is None else {"A": float(range_bound),
                                                      "shift_ratio": None if range_shift_ratio is None else float(range_shift_ratio)},
           "center": {"kind": kind, "value": cv}, "neighborhood": _plain(neighborhood), "units": u,
           "neighbor_relation": neighbor_relation, "batch_description": batch_description}
    from biasbound.figures import DEFAULT_DELTAS, bias_radius, original_scale, range_implied

    der = _derive_from(c, inp, c.knowledge, DEFAULT_DELTAS, bias_radius, original_scale, range_implied, shared_radii)
    return Certificate(schema_version=SCHEMA_VERSION, **_plain(inp), seed=int(seed), data_sha256=data_sha256, view=str(view),
                       scope=_plain(dict(scope or {})), **der, biasbound_version=__version__,
                       created=created or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                       audit=None if audit is None else _plain(audit), diagnostics=None if diagnostics is None else _plain(diagnostics),
                       judgments_sha256=judgments_sha256)

"""The certify pipeline: judgments → neighbours → sensitivity → calibration → mechanism → audit → outputs.

``certify`` takes a loaded judgment set (one row per judgment, see docs/DESIGN.md
"Judgment tables") and, for each judge it holds, measures the judge's sensitivity on
the observed Hamming-1 neighbours (position swaps, prompt variants, reruns), calibrates
one shrinkage + Gaussian mechanism per judge (Thm 3.1 / Prop. B.3 of the paper, or the
tight calibration of :mod:`biasbound.abb`), applies it to every model's per-item score
vector, audits the certificate on a held-out share of the neighbours and writes the
certificates, scores, leaderboard, retention figures, plots and an HTML report.

Decisions made where the contracts are silent (documented again in the outputs):

* **One calibration per judge.** In the ``model`` view every model gets its own
  certificate, but all models of a judge share the judge's (α, σ) so that certified
  scores stay comparable: the calibration uses the MAX over models of the per-model
  combined sensitivity (and of its upper confidence bound), which upper-bounds every
  model's own sensitivity, and ``dim`` = the largest number of certified items (σ_max
  decreases in d, so σ is admissible for every model). Each model's certificate is then
  re-derived at its own ``dim`` with the judge's α and σ fixed, so that
  ``Certificate.verify()`` checks exactly the statement made for that model.
* **Order-statistic bound only for a single generator.** Its quantile statement is about
  one neighbour distribution; with several generators (max or RMS combination) only the
  Markov and deterministic bounds are offered to the tight calibrator. With one generator
  and several models, each model's held-in distances are subsampled to the smallest
  per-model count and the element-wise maximum of the sorted samples is passed: its
  order statistics dominate every model's own, so the bound holds for each model.
* **Audit.** Per model on its held-out neighbours (all generators pooled), and pooled over
  the judge's models (the average over models, with ``dim`` = the largest model dimension,
  which can only raise the violation probability). With ~150 held-out neighbours per model
  at δ = 0.01 a per-model verdict can be "inconclusive" (a KL bound on 150 draws only goes
  below δ when the per-neighbour probabilities are essentially zero; the almost-sure distance
  bound passed to the audit helps); the pooled verdict
  is the headline and the per-model verdict counts are reported beside it.
* **Jitter adjustment** (``jitter_adjust=True`` with a ``rerun`` generator): every other
  generator's Δ* and UCB are replaced by ``context_adjusted_rms(x, Δ*_rerun)`` and the rerun
  generator itself is left out of the combination; the certificate then bounds bias beyond
  rerun noise only, and rerun noise must be modelled separately (recorded in the scope).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import BiasboundError, InfeasibleCertificateError, InputError
from biasbound._validation import check_in_range, check_int, check_one_of, resolve_rng

__all__ = [
    "CertifyResult",
    "JudgeCertification",
    "certify",
    "describe_generator",
    "parse_center",
    "parse_neighbors",
]

_WHERE = "certify"
_SCORE_RANGE = 1.0  # certified per-item scores live on [0, 1]
_GEN_RE = re.compile(r"^(swap|rerun|variant:[^,\s]+)$")
_GEN_TEXT = {
    "swap": "one item's presentation order swapped",
    "rerun": "one item re-judged with a new sampling seed",
}


# --------------------------------------------------------------------------------------
# parameter parsing
# --------------------------------------------------------------------------------------
def parse_neighbors(spec: str | Sequence[str]) -> tuple[str, ...]:
    """Parse a generator list such as ``"swap,variant:bold,rerun"``.

    Parameters
    ----------
    spec:
        Comma-separated string or a sequence of generator names: ``swap``, ``rerun``,
        ``variant:NAME``.

    Returns
    -------
    tuple of str
        The generator names, duplicates removed, order kept.
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for raw in items:
        name = str(raw).strip()
        if not name:
            continue
        if not _GEN_RE.match(name):
            raise InputError(
                f"The 'neighbors' parameter of {_WHERE} must list generators among 'swap', 'rerun' and "
                f"'variant:NAME'. Got {name!r} instead."
            )
        if name not in out:
            out.append(name)
    if not out:
        raise InputError(f"The 'neighbors' parameter of {_WHERE} must name at least one generator. Got {spec!r} instead.")
    return tuple(out)


def parse_center(spec: str) -> tuple[str, float | None]:
    """Parse a centre specification: ``fixed:X``, ``ema:X``, ``holdout`` or ``batch``.

    Returns
    -------
    (kind, value)
        ``value`` is the public centre for ``fixed``/``ema`` and ``None`` otherwise.
    """
    if not isinstance(spec, str):
        raise TypeError(f"The 'center' parameter of {_WHERE} must be a str. Got {type(spec).__name__} instead.")
    s = spec.strip().lower()
    if s in ("holdout", "batch"):
        return s, None
    m = re.match(r"^(fixed|ema):(.+)$", s)
    if m:
        try:
            value = float(m.group(2))
        except ValueError:
            value = math.nan
        if not (0.0 <= value <= 1.0):
            raise InputError(
                f"The 'center' parameter of {_WHERE} must hold a value in [0, 1] (scores are normalised). "
                f"Got {spec!r} instead."
            )
        return m.group(1), value
    raise InputError(
        f"The 'center' parameter of {_WHERE} must be one of 'fixed:X', 'ema:X', 'holdout', 'batch'. Got {spec!r} instead."
    )


def describe_generator(name: str) -> str:
    """A plain-words description of a generator for the certificate's guarantee sentence."""
    if name.startswith("variant:"):
        return f"one item's response replaced by its '{name.split(':', 1)[1]}' variant"
    return _GEN_TEXT.get(name, name)


# --------------------------------------------------------------------------------------
# results
# --------------------------------------------------------------------------------------
@dataclass
class JudgeCertification:
    """Everything certified for one judge.

    Attributes
    ----------
    judge, view:
        The judge name and the view (``"model"`` or ``"leaderboard"``).
    calibration:
        The judge-level :class:`biasbound.abb.Calibration` (shared α and σ).
    sensitivity:
        The judge-level combined sensitivity (max over models of the per-model combination).
    estimates:
        ``{model: {generator: SensitivityEstimate}}`` (``"*"`` as model in the leaderboard view).
    certificate:
        The judge-level certificate (``dim`` = the largest model dimension in the model view).
    model_certificates:
        ``{model: Certificate}`` in the model view (empty in the leaderboard view).
    audits, pooled_audit, verdict_counts:
        Per-model audits, the audit pooled over the judge's models, and the per-model verdict counts.
    scores, leaderboard, retention:
        Per-item scores, the judge's leaderboard rows and its retention figures.
    seeds:
        ``{model: seed}`` of the mechanism noise draws.
    notes:
        Plain sentences recorded in the certificate scope.
    """

    judge: str
    view: str
    calibration: Any
    sensitivity: Any
    estimates: dict[str, dict[str, Any]]
    certificate: Any
    model_certificates: dict[str, Any]
    audits: dict[str, Any]
    pooled_audit: Any
    verdict_counts: dict[str, int]
    scores: pd.DataFrame
    leaderboard: pd.DataFrame
    retention: dict[str, Any]
    seeds: dict[str, int]
    notes: list[str] = field(default_factory=list)


@dataclass
class CertifyResult:
    """The result of :func:`certify`.

    Attributes
    ----------
    judges:
        ``{judge: JudgeCertification}`` for every judge that could be certified.
    failures:
        ``{judge: reason}`` for judges that could not be certified (e.g. infeasible).
    leaderboard:
        All judges' leaderboard rows (columns of docs/DESIGN.md "Pipeline outputs").
    panel:
        The panel leaderboard (mean of the judges' certified scores) when several judges.
    retention:
        ``{judge: retention dict}``.
    outputs:
        ``{name: path}`` of every file written.
    seed:
        The master seed.
    load_report:
        The loader's report as a dict (``None`` for a bare DataFrame).
    """

    judges: dict[str, JudgeCertification]
    failures: dict[str, str]
    leaderboard: pd.DataFrame
    panel: pd.DataFrame | None
    retention: dict[str, Any]
    outputs: dict[str, Path]
    seed: int
    load_report: dict[str, Any] | None
    settings: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
def _jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, paths and objects with to_dict() to JSON types."""
    kind = type(obj)  # exact built-in types first (the bulk of every record), same results as below
    if obj is None or kind is str or kind is int or kind is bool:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is dict:
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "to_dict") and not isinstance(obj, (pd.DataFrame, pd.Series)):
        return _jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def _write_json(path: Path, obj: Any, *, plain: bool = False) -> Path:
    """Write ``obj`` as indented JSON; ``plain=True`` when it already holds JSON types only."""
    path.write_text(json.dumps(obj if plain else _jsonable(obj), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "judge"


def _spawn_seeds(master: int, n: int) -> list[int]:
    """``n`` independent seeds spawned from the master seed with numpy's SeedSequence."""
    children = np.random.SeedSequence(master).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0] % (2**63)) for c in children]


def _as_frame(judgments: Any) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    if isinstance(judgments, pd.DataFrame):
        return judgments, None
    frame = getattr(judgments, "frame", None)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"The 'judgments' parameter of {_WHERE} must be a JudgmentSet or a pandas DataFrame. "
            f"Got {type(judgments).__name__} instead."
        )
    report = getattr(judgments, "report", None)
    rep: dict[str, Any] | None
    if report is None:
        rep = None
    elif hasattr(report, "to_dict"):
        rep = _jsonable(report.to_dict())
    elif dataclasses.is_dataclass(report):
        rep = _jsonable(dataclasses.asdict(report))
    else:
        rep = _jsonable(dict(report))
    return frame, rep


def _check_frame(frame: pd.DataFrame, generators: tuple[str, ...]) -> pd.DataFrame:
    need = {"judge", "model", "item_id", "score"}
    miss = sorted(need - set(frame.columns))
    if miss:
        raise InputError(
            f"The 'judgments' parameter of {_WHERE} must have columns judge, model, item_id, score. Missing {miss}."
        )
    frame = frame.copy(deep=False)  # columns may be added below; the caller's frame is never changed
    for col, default in (("variant", "original"), ("rerun", 0), ("game", 0)):
        if col not in frame.columns:
            frame[col] = default
    if len(frame) == 0:
        raise InputError(f"The 'judgments' parameter of {_WHERE} must hold at least one judgment. Got 0 rows instead.")
    variants = set(frame["variant"].astype(str).unique())
    for g in generators:
        if g == "swap" and not frame["game"].isin([2]).any():
            raise InputError(
                f"The 'neighbors' parameter of {_WHERE} asks for 'swap', but the judgments hold no game-2 "
                "(position-swapped) judgments; use a generator present in the data."
            )
        if g == "rerun" and not (frame["rerun"] > 0).any():
            raise InputError(
                f"The 'neighbors' parameter of {_WHERE} asks for 'rerun', but the judgments hold no rerun > 0; "
                "use a generator present in the data."
            )
        if g.startswith("variant:") and g.split(":", 1)[1] not in variants:
            have = sorted(variants - {"original"}) or ["none"]
            raise InputError(
                f"The 'neighbors' parameter of {_WHERE} asks for {g!r}, but that variant is not in the judgments "
                f"(variants present: {', '.join(have)})."
            )
    return frame


# --------------------------------------------------------------------------------------
# settings
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Settings:
    tau: float
    delta: float
    generators: tuple[str, ...]
    method: str
    combine: str
    alpha: float | None
    beta: float | None
    holdout: float
    seed: int
    view: str
    center_kind: str
    center_value: float | None
    jitter_adjust: bool
    bootstrap_rounds: int
    confidence: float
    n_mc: int

    @property
    def used(self) -> tuple[str, ...]:
        """Generators entering the combination (rerun drops out under jitter adjustment)."""
        if self.jitter_adjust:
            return tuple(g for g in self.generators if g != "rerun")
        return self.generators

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["center"] = self.center_kind if self.center_value is None else f"{self.center_kind}:{self.center_value:g}"
        return d


# --------------------------------------------------------------------------------------
# per-judge certification
# --------------------------------------------------------------------------------------
def _group_bounds(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by an integer key, row order kept within a group.

    Returns ``(order, keys, bounds)``: the rows of group ``keys[g]`` are
    ``order[bounds[g]:bounds[g + 1]]``, in their original order.
    """
    order = np.argsort(key, kind="stable")
    keys, starts = np.unique(key[order], return_index=True)
    return order, keys, np.append(starts, len(key))


def _order_within(keys: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Rows sorted by non-negative integer key, then by ``u`` in [0, 1), ties by row.

    Equals ``np.lexsort((u, keys))``. One sort of ``key + u`` gives that order whenever the
    sums have no ties (the rounding of ``key + u`` is monotone within a key and cannot pass
    ``key + 1`` without tying it); with a tie, the exact two-sort form is used.
    """
    combined = keys + u
    order = np.argsort(combined)
    if u.size < 2 or not np.any(combined[order[1:]] == combined[order[:-1]]):
        return order
    by_u = np.argsort(u, kind="stable")  # ties: keep them in row order, as lexsort does
    return by_u[np.argsort(keys[by_u], kind="stable")]


def _group_split(keys: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask marking a seeded ``floor(share·n_g)`` random rows of each group ``g`` (vectorised).

    ``keys`` are non-negative integer group codes. Each row gets a uniform draw (one
    ``rng.random(n)`` call, in row order); a group's rows with the ``floor(share·n_g)``
    smallest draws are marked (ties by row order, as ``rank(method="first")``).
    """
    n = len(keys)
    if n == 0 or share <= 0:
        return np.zeros(n, dtype=bool)
    u = rng.random(n)
    order = _order_within(keys, u)
    size = np.bincount(keys)
    start = np.cumsum(size) - size
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(1, n + 1) - start[keys[order]]
    return rank <= np.floor(share * size[keys])


@dataclass
class _Neighbours:
    """The observed neighbours of one judge on certified items, one entry per neighbour.

    Rows are in generator order, then in the judgment table's row order.
    """

    model: np.ndarray  # model code (index into the judge's sorted model names)
    generator: np.ndarray  # index into the generator tuple
    dist: np.ndarray
    shift: np.ndarray

    def take(self, mask: np.ndarray) -> _Neighbours:
        """The neighbours selected by a boolean mask (order kept)."""
        return _Neighbours(self.model[mask], self.generator[mask], self.dist[mask], self.shift[mask])

    def __len__(self) -> int:
        """Number of neighbours."""
        return len(self.dist)


def _key_codes(fj: pd.DataFrame, m_all: np.ndarray, i_all: np.ndarray) -> dict[str, np.ndarray]:
    """Codes of the judge's id columns that equal-value matching may reuse.

    Only for string columns without missing values, where equal text means equal value;
    ``fj`` holds one judge, so its judge column is then one value.
    """
    codes: dict[str, np.ndarray] = {}
    for col, values in (("judge", np.zeros(len(fj), dtype=np.intp)), ("model", m_all), ("item_id", i_all)):
        series = fj[col]
        if isinstance(series.dtype, pd.StringDtype) and not series.hasnans:
            codes[col] = values
    return codes


def _neighbour_codes(
    fj: pd.DataFrame, generator: str, m_all: np.ndarray, i_all: np.ndarray, model_names: np.ndarray,
    item_names: np.ndarray, key_codes: Mapping[str, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed Hamming-1 neighbours of :func:`biasbound.neighbors.observed.observed_neighbors`
    as (model code, item code, difference) arrays; pairs with a non-finite difference dropped."""
    from biasbound.neighbors import observed as obs

    obs._check_frame(fj, "observed_neighbors")
    kind, name = obs._parse_generator(generator, "observed_neighbors")
    matched = obs._match(fj, kind, name, generator, False, key_codes)
    if matched is not None:
        nb_pos, canon_pos, _, _, _ = matched
        score = fj["score"].to_numpy(dtype=float)
        diff = score[canon_pos] - score[nb_pos]
        m, i = m_all[nb_pos], i_all[nb_pos]
    else:  # keys with missing values: the merge path, its ids looked up by their text
        nb = obs.observed_neighbors(fj, generator)
        diff = nb["difference"].to_numpy(dtype=float)
        m = np.searchsorted(model_names, nb["model"].to_numpy(dtype=str))
        i = np.searchsorted(item_names, nb["item_id"].to_numpy(dtype=str))
    ok = np.isfinite(diff)
    return m[ok], i[ok], diff[ok]


def _estimates(
    groups: Mapping[tuple[str, str], tuple[np.ndarray, np.ndarray]], s: _Settings, units: Sequence[str],
    max_distance: float,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per (unit, generator) SensitivityEstimate from the calibration share of the neighbours.

    ``groups`` maps ``(unit, generator)`` to that group's ``(dist, shift)`` arrays (row order).
    """
    from biasbound.sensitivity import context_adjusted_rms, estimate

    notes: list[str] = []
    k = len(s.used)
    beta_k = None if s.beta is None else s.beta / k
    out: dict[str, dict[str, Any]] = {}
    for unit in units:
        per: dict[str, Any] = {}
        for g in s.generators:
            grp = groups.get((unit, g))
            n = 0 if grp is None else len(grp[0])
            needs_ucb = beta_k is not None and g in s.used
            if grp is None or n < (2 if needs_ucb else 1):
                who = "the leaderboard" if unit == "*" else f"model {unit!r}"
                raise InputError(
                    f"The 'neighbors' parameter of {_WHERE}: generator {g!r} has {n} observed neighbour(s) for {who} "
                    f"after the {s.holdout:g} hold-out, fewer than the 2 a sensitivity bound needs."
                )
            per[g] = estimate(
                grp[0],
                name=g,
                beta=beta_k if needs_ucb else None,
                max_distance=max_distance,
                mean_shifts=grp[1] if s.center_kind == "batch" else None,
            )
        if s.jitter_adjust:
            intr = per["rerun"].delta_star
            for g in s.used:
                e = per[g]
                per[g] = dataclasses.replace(
                    e,
                    delta_star=context_adjusted_rms(e.delta_star, intr),
                    ucb=None if e.ucb is None else context_adjusted_rms(e.ucb, intr),
                )
        out[unit] = per
    if s.jitter_adjust:
        notes.append(
            "Jitter-adjusted: each generator's sensitivity (point estimate and upper bound) had the rerun "
            "RMS removed with context_adjusted_rms, so this certificate bounds bias beyond rerun noise only; "
            "rerun noise must be modelled separately. The rerun RMS used is a point estimate."
        )
    if beta_k is not None and k > 1:
        notes.append(f"Each generator's sensitivity upper bound is at level beta/K = {s.beta:g}/{k} (Bonferroni).")
    return out, notes


def _judge_sensitivity(estimates: dict[str, dict[str, Any]], s: _Settings) -> tuple[Any, float, dict[str, Any]]:
    """Per-unit combination, then the judge-level envelope (max over units)."""
    from biasbound.sensitivity import CombinedSensitivity, combine

    per_unit = {u: combine([per[g] for g in s.used], how=s.combine) for u, per in estimates.items()}
    shifts: list[float] = []
    if s.center_kind == "batch":
        for per in estimates.values():
            vals = np.array([per[g].center_shift or 0.0 for g in s.used], dtype=float)
            shifts.append(float(vals.max() if s.combine == "max" else math.sqrt(float(np.mean(vals**2)))))
    combos = list(per_unit.values())
    ucb = None
    ucb_components = None
    if all(c.ucb is not None for c in combos):
        ucb = max(float(c.ucb) for c in combos)
        ucb_components = {g: max(float(c.ucb_components[g]) for c in combos) for g in s.used}
    judge = CombinedSensitivity(
        how=s.combine,
        delta_star=max(float(c.delta_star) for c in combos),
        ucb=ucb,
        components={g: max(float(c.components[g]) for c in combos) for g in s.used},
        floor=combos[0].floor,
        ucb_components=ucb_components,
    )
    return judge, (max(shifts) if shifts else 0.0), per_unit


def _dominating_sample(unit: np.ndarray, dist: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Element-wise max over units of sorted equal-size subsamples of each unit's distances.

    ``unit`` holds integer unit codes and ``dist`` the distances (row order). Its k-th order
    statistic dominates every unit's k-th order statistic from an i.i.d. sample of the same
    size, so an order-statistic bound computed from it holds for every unit.
    """
    from biasbound.data.tables import _compact

    present, inv = _compact(unit, int(unit.max()) + 1)
    counts = np.bincount(inv, minlength=len(present))
    m = int(counts.min())
    u = rng.random(len(unit))
    order = _order_within(inv, u)
    start = np.cumsum(counts) - counts
    rank = np.empty(len(unit), dtype=np.int64)
    rank[order] = np.arange(1, len(unit) + 1) - start[inv[order]]
    keep = rank <= m
    sub_unit, sub_dist = inv[keep], dist[keep]
    mat = sub_dist[np.argsort(sub_unit, kind="stable")].reshape(len(counts), m)
    mat = -np.sort(-mat, axis=1)  # each unit's kept distances, largest first
    return mat.max(axis=0)


def _make_certificate(cal: Any, **kw: Any) -> Any:
    """:func:`biasbound.certificate.make_certificate` (a scalar centre is recorded as a plain float)."""
    from biasbound.certificate import make_certificate

    return make_certificate(cal, **kw)


def _sha(values: np.ndarray) -> str:
    from biasbound.certificate import sha256_of_array

    return sha256_of_array(np.asarray(values, dtype=float))


def _str_column(names: np.ndarray, codes: np.ndarray) -> Any:
    """A pandas ``str`` column holding ``names[codes]`` (taken in Arrow, no per-row Python strings)."""
    return pd.array(names, dtype="str").take(codes)


def _certify_judge(fj: pd.DataFrame, judge: str, s: _Settings, judge_seed: int) -> JudgeCertification:
    """Certify one judge (both views).

    Models and items are handled as integer codes into their sorted names (one
    factorisation of the judge's table), so the canonical scores, neighbour pairs, splits
    and groupings are numpy operations; the names come back only in the outputs.
    """
    from biasbound.abb import apply_mechanism, calibrate
    from biasbound.audit import audit
    from biasbound.data.tables import _sorted_codes
    from biasbound.neighbors import observed as obs

    rng = np.random.default_rng(judge_seed)
    notes: list[str] = []
    # f(D): canonical scores (observed.canonical_scores) sorted by model, then item
    obs._check_frame(fj, "canonical_scores")
    kind0, _ = obs._parse_generator(s.generators[0], "canonical_scores")
    m_all, model_names = _sorted_codes(fj["model"])
    i_all, item_names = _sorted_codes(fj["item_id"])
    cpos = np.flatnonzero(obs._canonical_rows(fj, kind0))
    cpos = cpos[np.lexsort((i_all[cpos], m_all[cpos]))]
    canon = _Canon(m=m_all[cpos], i=i_all[cpos], score=fj["score"].to_numpy(dtype=float)[cpos],
                   model_names=model_names, item_names=item_names)
    present = ~np.isnan(canon.score)
    n_miss_codes = np.bincount(canon.m, weights=(~present).astype(float), minlength=len(model_names))
    canon_models = np.unique(canon.m)
    n_missing = pd.Series(n_miss_codes[canon_models].astype(int), index=model_names[canon_models])
    v_pos = np.flatnonzero(present)  # rows of canon in the certified batch
    centers: dict[str, float] | None = None
    if s.center_kind == "holdout":
        mask = _group_split(canon.m[v_pos], s.holdout, rng)
        c_pos = v_pos[mask]
        means_c = pd.Series(canon.score[c_pos]).groupby(canon.m[c_pos]).mean()
        centers = {str(model_names[k]): float(v) for k, v in means_c.items()}
        v_pos = v_pos[~mask]
        notes.append(
            f"Holdout centre: a seeded {s.holdout:g} share of each model's items was used only to compute the "
            "centre and is excluded from the certified batch (and from the neighbours)."
        )
    v_m, v_i, v_score = canon.m[v_pos], canon.i[v_pos], canon.score[v_pos]
    d_codes = np.bincount(v_m, minlength=len(model_names))
    model_codes = np.flatnonzero(d_codes)
    d_m = pd.Series(d_codes[model_codes].astype(np.int64), index=model_names[model_codes])
    models = [str(m) for m in d_m.index]
    if not models:
        raise InputError(f"The 'judgments' parameter of {_WHERE} holds no non-missing score for judge {judge!r}.")
    if centers is not None and set(centers) != set(models):
        raise InputError(f"The 'holdout' parameter of {_WHERE} leaves some model of judge {judge!r} without centre items; raise it.")

    # observed neighbours on certified items (pipeline order: generators, then table rows)
    n_items_all = max(len(item_names), 1)
    batch_keys = v_m.astype(np.int64) * n_items_all + v_i  # sorted: canon is sorted by (model, item)
    nb_m, nb_g, nb_d = [], [], []
    key_codes = _key_codes(fj, m_all, i_all)
    for gi, g in enumerate(s.generators):
        m, i, diff = _neighbour_codes(fj, g, m_all, i_all, model_names, item_names, key_codes)
        key = m.astype(np.int64) * n_items_all + i
        at = np.minimum(np.searchsorted(batch_keys, key), max(len(batch_keys) - 1, 0))
        inside = batch_keys[at] == key if len(batch_keys) else np.zeros(len(key), dtype=bool)
        nb_m.append(m[inside])
        nb_g.append(np.full(int(inside.sum()), gi, dtype=np.int64))
        nb_d.append(diff[inside])
    nb_model = np.concatenate(nb_m)
    absdiff = np.abs(np.concatenate(nb_d))
    if s.view == "model":
        unit = nb_model
        dist = absdiff
        shift = absdiff / np.sqrt(d_codes[nb_model].astype(float))
        max_distance = _SCORE_RANGE  # Hamming-1 on [0, 1]: ||Δ|| = |Δ_i| <= 1
        dim = int(d_m.max())
        center_max = max_distance / math.sqrt(int(d_m.min()))
        units = models
    else:
        unit = np.zeros(len(nb_model), dtype=np.intp)
        dist = absdiff / d_codes[nb_model].astype(float)
        dim = len(models)
        shift = dist / math.sqrt(dim)
        max_distance = _SCORE_RANGE / int(d_m.min())
        center_max = max_distance / math.sqrt(dim)
        units = ["*"]
    nb = _Neighbours(model=unit, generator=np.concatenate(nb_g), dist=dist, shift=shift)
    n_gen = len(s.generators)
    held = _group_split(nb.model.astype(np.int64) * n_gen + nb.generator, s.holdout, rng)
    cal_rows = nb.take(~held)
    held_rows = nb.take(held)

    def unit_name(code: int) -> str:
        """The unit of a unit code: the model's name, or "*" for the leaderboard view."""
        return str(model_names[code]) if s.view == "model" else "*"

    order, keys, bounds = _group_bounds(cal_rows.model.astype(np.int64) * n_gen + cal_rows.generator)
    groups = {}
    for k, a, b in zip(keys.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order[a:b]
        groups[(unit_name(k // n_gen), s.generators[k % n_gen])] = (cal_rows.dist[rows], cal_rows.shift[rows])
    estimates, est_notes = _estimates(groups, s, units, max_distance)
    notes += est_notes
    judge_sens, s_mu, per_unit = _judge_sensitivity(estimates, s)

    cal_kw: dict[str, Any] = dict(
        tau=s.tau, delta=s.delta, sensitivity=judge_sens.delta_star, method=s.method,
        max_distance=max_distance,
    )
    if s.center_kind == "batch":
        cal_kw.update(center_sensitivity=s_mu, center_max=center_max)
    if s.beta is not None and judge_sens.ucb is not None:
        cal_kw.update(beta=s.beta, sensitivity_ucb=judge_sens.ucb)
        if len(s.used) == 1 and s.center_kind != "batch":
            used = cal_rows.generator == s.generators.index(s.used[0])
            cal_kw["distances"] = _dominating_sample(cal_rows.model[used], cal_rows.dist[used], rng)
    try:
        cal = calibrate(dim=dim, alpha=s.alpha, **cal_kw)
    except InfeasibleCertificateError as exc:
        raise InfeasibleCertificateError(f"Judge {judge!r}: {exc}", alpha_max=exc.alpha_max) from exc
    if s.view == "model" and len(models) > 1:
        notes.append(
            f"All {len(models)} models of this judge share one calibration: sensitivity = max over models of the "
            f"per-model combined sensitivity, dim = the largest model dimension ({dim}); each model's certificate "
            "is re-derived at its own dimension with the same alpha and sigma."
        )

    # mechanism
    v_bounds = np.append(np.searchsorted(v_m, model_codes), len(v_m))  # v_m is sorted
    values = {m: v_score[a:b] for m, a, b in zip(models, v_bounds[:-1], v_bounds[1:])}
    means = None
    if s.view == "model":
        seeds = dict(zip(models, _spawn_seeds(judge_seed, len(models))))
        cal_by_dim: dict[int, Any] = {dim: cal}
        shrunk_parts, cert_parts, mech = [], [], {}
        for m in models:
            x = values[m]
            dm = len(x)
            if dm not in cal_by_dim:
                kw = {k: v for k, v in cal_kw.items()}
                cal_by_dim[dm] = calibrate(dim=dm, alpha=cal.alpha, sigma=cal.sigma, **kw)
            c = _center_for(s, centers, m, x)
            res = apply_mechanism(x, cal_by_dim[dm], center=c, rng=seeds[m])
            mech[m] = (res, c, cal_by_dim[dm])
            shrunk_parts.append(np.asarray(res.shrunk, dtype=float))
            cert_parts.append(np.asarray(res.certified, dtype=float))
        v_shrunk = np.concatenate(shrunk_parts)
        v_cert = np.concatenate(cert_parts)
    else:
        # pandas' groupby mean (compensated summation), as the model means have always been computed
        means = pd.Series(v_score).groupby(v_m).mean().to_numpy(dtype=float)
        seeds = {"*": _spawn_seeds(judge_seed, 1)[0]}
        if s.center_kind == "holdout":
            c_arr: Any = np.array([centers[m] for m in models])  # type: ignore[index]
        elif s.center_kind == "batch":
            c_arr = float(means.mean())
        else:
            c_arr = float(s.center_value)  # type: ignore[arg-type]
        res = apply_mechanism(means, cal, center=c_arr, rng=seeds["*"])
        mech = {"*": (res, c_arr, cal)}

    # audits
    audit_seeds = _spawn_seeds(judge_seed + 1, len(units) + 1)
    audits: dict[str, Any] = {}
    if s.view == "model":
        order, keys, bounds = _group_bounds(held_rows.model)
        held_by = {str(model_names[k]): order[a:b] for k, a, b in zip(keys.tolist(), bounds[:-1], bounds[1:])}
        for i, m in enumerate(models):
            rows = held_by.get(m)
            if rows is None or len(rows) < 2:
                audits[m] = None
                continue
            audits[m] = audit(
                tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha,
                distances=held_rows.dist[rows],
                mean_shifts=held_rows.shift[rows] if s.center_kind == "batch" else None,
                dim=int(d_m[m]), confidence=s.confidence, n_mc=min(s.n_mc, 5000), rng=audit_seeds[i],
                max_distance=max_distance,
            )
    pooled = None
    if len(held_rows) >= 2:
        pooled = audit(
            tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha,
            distances=held_rows.dist,
            mean_shifts=held_rows.shift if s.center_kind == "batch" else None,
            dim=dim, confidence=s.confidence, n_mc=s.n_mc, rng=audit_seeds[-1], max_distance=max_distance,
        )
    counts = {"holds": 0, "violated": 0, "inconclusive": 0, "not audited": 0}
    for a in audits.values():
        counts["not audited" if a is None else a.verdict] += 1

    # certificates
    relation = "; ".join(describe_generator(g) for g in s.used)
    if len(s.used) > 1:
        relation += f" (combined by {s.combine})"
    base_scope: dict[str, Any] = {
        "judge": judge,
        "generators": list(s.generators),
        "generators_in_combination": list(s.used),
        "holdout_share": s.holdout,
        "neighbors_calibration": int(len(cal_rows)),
        "neighbors_audit": int(len(held_rows)),
        "score_range": [0.0, 1.0],
        "notes": notes,
    }
    gen_table = {
        g: {
            "delta_star": max(float(estimates[u][g].delta_star) for u in units),
            "m": int(sum(estimates[u][g].m for u in units)),
            "ucb": (None if any(estimates[u][g].ucb is None for u in units)
                    else max(float(estimates[u][g].ucb) for u in units)),
        }
        for g in s.generators
    }
    base_scope["generators_table"] = gen_table
    # make_certificate reads components as a list of {name, delta_star, m, ucb} (max over models)
    sens_record = {
        "how": s.combine, "delta_star": judge_sens.delta_star, "ucb": judge_sens.ucb,
        "components": [{"name": g, **gen_table[g]} for g in s.used],
    }
    pooled_dict = None if pooled is None else _jsonable(pooled.to_dict())
    model_certs: dict[str, Any] = {}
    if s.view == "model":
        for m in models:
            res, c, cal_m = mech[m]
            x = values[m]
            scope = dict(base_scope, model=m, n_items=int(len(x)), n_missing=int(n_missing.get(m, 0)),
                         model_sensitivity=_jsonable(per_unit[m].to_dict()))
            cert = _make_certificate(
                cal_m, sensitivity=sens_record, center_kind=s.center_kind, center_value=float(c),
                seed=int(seeds[m]), data_sha256=_sha(x), view="model", scope=scope, neighbor_relation=relation,
            )
            a = audits[m]
            adict = {"model": None if a is None else _jsonable(a.to_dict()), "pooled": pooled_dict,
                     "verdict_counts": counts}
            model_certs[m] = cert.with_audit(adict)
        all_x = np.concatenate([values[m] for m in models])
        jscope = dict(base_scope, model="*", models={
            m: {"dim": int(len(values[m])), "seed": int(seeds[m]), "data_sha256": model_certs[m].data_sha256}
            for m in models
        }, n_missing=int(n_missing.sum()))
        jscope["centers"] = {m: float(mech[m][1]) for m in models}
        judge_cert = _make_certificate(
            cal, sensitivity=sens_record, center_kind=s.center_kind,
            center_value=(float(s.center_value) if s.center_value is not None
                          else float(np.mean([mech[m][1] for m in models]))),
            seed=int(judge_seed), data_sha256=_sha(all_x), view="model", scope=jscope, neighbor_relation=relation,
        )
    else:
        res, c_arr, _ = mech["*"]
        jscope = dict(base_scope, model="*", models=models, n_items={m: int(d_m[m]) for m in models},
                      n_missing=int(n_missing.sum()))
        cval = float(np.mean(c_arr))
        judge_cert = _make_certificate(
            cal, sensitivity=sens_record, center_kind=s.center_kind, center_value=cval,
            seed=int(seeds["*"]), data_sha256=_sha(means), view="leaderboard",
            scope=jscope, neighbor_relation=relation,
        )
    judge_cert = judge_cert.with_audit({"pooled": pooled_dict, "verdict_counts": counts,
                                        "per_model": {m: (None if a is None else a.verdict) for m, a in audits.items()}})

    # scores table: one row per canonical (model, item), in canon order
    in_batch = np.zeros(len(canon.m), dtype=bool)
    in_batch[v_pos] = True
    scores = pd.DataFrame({"model": _str_column(model_names, canon.m), "item_id": _str_column(item_names, canon.i),
                           "original": canon.score})
    scores.insert(0, "judge", judge)
    if s.view == "model":
        for col, vals in (("shrunk", v_shrunk), ("certified", v_cert)):
            full = np.full(len(canon.m), np.nan)
            full[v_pos] = vals
            scores[col] = full
    else:
        res, _, _ = mech["*"]
        for col, vals in (("shrunk_model", res.shrunk), ("certified_model", res.certified)):
            by_code = np.full(len(model_names), np.nan)
            by_code[model_codes] = np.asarray(vals, dtype=float)
            scores[col] = by_code[canon.m]
    scores["in_batch"] = in_batch
    if s.view == "model":  # the table carries the judgments' attrs (load report), as it always has
        scores.attrs = copy.deepcopy(fj.attrs)

    jc = JudgeCertification(
        judge=judge, view=s.view, calibration=cal, sensitivity=judge_sens, estimates=estimates,
        certificate=judge_cert, model_certificates=model_certs, audits=audits, pooled_audit=pooled,
        verdict_counts=counts, scores=scores, leaderboard=pd.DataFrame(), retention={}, seeds=seeds, notes=notes,
    )
    batch = _Batch(pos=v_pos, values=values, means=means, certified=None if s.view != "model" else v_cert)
    jc.leaderboard, jc.retention = _judge_leaderboard(fj, jc, s, canon, batch, mech, d_m, n_missing, rng,
                                                      (m_all, model_names, i_all))
    return jc


@dataclass
class _Canon:
    """f(D) of one judge: the canonical rows sorted by (model, item), as codes into sorted names."""

    m: np.ndarray
    i: np.ndarray
    score: np.ndarray  # NaN = missing
    model_names: np.ndarray
    item_names: np.ndarray


@dataclass
class _Batch:
    """The certified batch: canon rows ``pos`` (non-missing, centre hold-out removed)."""

    pos: np.ndarray
    values: dict[str, np.ndarray]  # {model: scores in item order}
    means: np.ndarray | None  # model means (leaderboard view)
    certified: np.ndarray | None  # per-row certified scores (model view)


def _center_for(s: _Settings, centers: dict[str, float] | None, model: str, x: np.ndarray) -> float:
    if s.center_kind == "holdout":
        return float(centers[model])  # type: ignore[index]
    if s.center_kind == "batch":
        return float(np.mean(x))
    return float(s.center_value)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------
# leaderboard and retention for one judge
# --------------------------------------------------------------------------------------
def _matrix(df: pd.DataFrame, col: str, models: list[str], items: pd.Index) -> np.ndarray:
    """(n_models, n_items) matrix of ``col`` with NaN where absent (pivot, no row loop)."""
    mat = df.pivot_table(index="model", columns="item_id", values=col, aggfunc="first", dropna=False)
    return mat.reindex(index=models, columns=items).to_numpy(dtype=float)


def _boot(
    matrix: np.ndarray, rounds: int, seed: int, counts: list[np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-model mean and 95% percentile item-bootstrap interval (paired over models, seeded).

    ``counts``: the resample counts of ``seed`` (``leaderboard._draw_counts``), shared by the
    bootstraps that use the same seed and number of items (they would draw the same ones).
    """
    from biasbound.leaderboard import _bootstrap_means

    b = _bootstrap_means(matrix, rounds=rounds, level=0.95, rng=seed, counts=counts)
    return np.asarray(b.mean), np.asarray(b.lo), np.asarray(b.hi)


def _is_pairwise(frame: pd.DataFrame) -> bool:
    games = set(pd.unique(frame["game"]))
    return {1, 2} <= games


def _judge_leaderboard(
    fj: pd.DataFrame,
    jc: JudgeCertification,
    s: _Settings,
    canon: _Canon,
    batch: _Batch,
    mech: dict[str, Any],
    d_m: pd.Series,
    n_missing: pd.Series,
    rng: np.random.Generator,
    codes: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The judge's leaderboard rows and retention figures (one shared item resample for all bootstraps)."""
    from biasbound import leaderboard as lb
    from biasbound.data.tables import _compact

    models = [str(m) for m in d_m.index]
    # (model, item) matrices over every model and item of f(D), both in sorted order
    row_codes, rows = _compact(canon.m, len(canon.model_names))
    col_codes, cols = _compact(canon.i, len(canon.item_names))
    all_models = [str(m) for m in canon.model_names[row_codes]]
    orig_mat = np.full((len(row_codes), len(col_codes)), np.nan)
    orig_mat[rows, cols] = canon.score
    b_seed = int(rng.integers(2**63))
    # one item resample for every bootstrap of this judge (all are seeded with b_seed)
    counts = lb._draw_counts(b_seed, s.bootstrap_rounds, orig_mat.shape[1])
    o_mean, o_lo, o_hi = _boot(orig_mat, s.bootstrap_rounds, b_seed, counts)
    table = pd.DataFrame({
        "judge": jc.judge,
        "model": all_models,
        "n_items": np.sum(~np.isnan(orig_mat), axis=1).astype(int),
        "n_missing": [int(n_missing.get(m, 0)) for m in all_models],
        "original": o_mean, "original_lo": o_lo, "original_hi": o_hi,
    })
    cal = jc.calibration
    if s.view == "model":
        if (np.bincount(rows[batch.pos], minlength=len(row_codes)).all()
                and np.bincount(cols[batch.pos], minlength=len(col_codes)).all()):
            cert_mat = np.full(orig_mat.shape, np.nan)
            cert_mat[rows[batch.pos], cols[batch.pos]] = batch.certified
        else:
            # Some model or item has no certified score: built by the pivot these matrices always came
            # from, whose memory layout (column-major after its reindex) sets the summation order of
            # the bootstrap means, so the certified means keep their last bit.
            frame = pd.DataFrame({"model": _str_column(canon.model_names, canon.m[batch.pos]),
                                  "item_id": _str_column(canon.item_names, canon.i[batch.pos]),
                                  "certified": batch.certified})
            cert_mat = _matrix(frame, "certified", all_models,
                               pd.Index([str(x) for x in canon.item_names[col_codes]]))
        c_mean, c_lo, c_hi = _boot(cert_mat, s.bootstrap_rounds, b_seed, counts)
        table["certified"], table["certified_lo"], table["certified_hi"] = c_mean, c_lo, c_hi
        sigma_model = np.array([cal.sigma / math.sqrt(max(int(d_m.get(m, 1)), 1)) for m in all_models])
        distortion = {m: float(lb.expected_distortion(batch.values[m], cal.alpha, mech[m][1], cal.sigma)) for m in models}
    else:
        res, c_arr, _ = mech["*"]
        noise = np.asarray(res.certified, dtype=float) - np.asarray(res.shrunk, dtype=float)
        cmap = dict(zip(models, np.asarray(res.certified, dtype=float)))
        nmap = dict(zip(models, noise))
        center = np.broadcast_to(np.asarray(c_arr, dtype=float), (len(models),))
        cen = dict(zip(models, center))
        table["certified"] = [cmap.get(m, np.nan) for m in all_models]
        # interval: the item-bootstrap interval of the shrunk mean, shifted by the released noise draw
        lo_s = np.array([cal.alpha * lo + (1 - cal.alpha) * cen.get(m, np.nan) + nmap.get(m, np.nan)
                         for m, lo in zip(all_models, o_lo)])
        hi_s = np.array([cal.alpha * hi + (1 - cal.alpha) * cen.get(m, np.nan) + nmap.get(m, np.nan)
                         for m, hi in zip(all_models, o_hi)])
        table["certified_lo"], table["certified_hi"] = lo_s, hi_s
        sigma_model = np.full(len(all_models), cal.sigma)
        distortion = {"*": float(lb.expected_distortion(batch.means, cal.alpha, c_arr, cal.sigma))}
    table["rank_original"] = lb.rank(table["original"].to_numpy())
    table["rank_certified"] = lb.rank(table["certified"].to_numpy())
    for col in ("winrate", "winrate_lo", "winrate_hi", "bt", "bt_lo", "bt_hi"):
        table[col] = np.nan
    if _is_pairwise(fj):
        # one win-rate bootstrap serves both tables (bradley_terry with the same seed recomputes it)
        wr_table, battles = lb._winrate(fj, baseline=None, rounds=s.bootstrap_rounds, level=0.95, weight=3, rng=b_seed,
                                        where="arena_hard_winrate", codes=codes, counts=counts)
        bt = lb._bradley_terry_from(wr_table, battles, None).set_index("model")
        wr = wr_table.set_index("model")
        table["winrate"] = table["model"].map(wr["winrate"])
        table["winrate_lo"] = table["model"].map(wr["lo"])
        table["winrate_hi"] = table["model"].map(wr["hi"])
        table["bt"] = table["model"].map(bt["bt"])
        table["bt_lo"] = table["model"].map(bt["lo"])
        table["bt_hi"] = table["model"].map(bt["hi"])
    ok = table["certified"].notna().to_numpy()
    if ok.sum() >= 2:
        ret = dict(lb.retention(table["original"].to_numpy()[ok], table["certified"].to_numpy()[ok],
                                alpha=cal.alpha, sigma_model=sigma_model[ok]))
    else:  # one model: nothing to rank, so rank retention is undefined (reported as such, not an error)
        ret = {"spearman": None, "kendall_tau_b": None, "pearson": None, "pairs_kept_probability": [],
               "pairs_kept_mean": None, "alpha": cal.alpha, "spread_ratio": None,
               "note": "rank retention needs at least two certified models; this judge has one"}
    ret["expected_distortion"] = {
        "per_model": distortion,
        "total": float(sum(distortion.values())),
        "mean": float(np.mean(list(distortion.values()))),
        "formula": "E||M(D) - f(D)||^2 = (1 - alpha)^2 ||f(D) - mu||^2 + d sigma^2",
    }
    ret.update({"judge": jc.judge, "view": s.view, "bootstrap_seed": b_seed, "bootstrap_rounds": s.bootstrap_rounds,
                "sigma": cal.sigma, "n_models": int(ok.sum())})
    return table.sort_values("rank_original", kind="stable").reset_index(drop=True), _jsonable(ret)


# --------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------
def _cert_dict(cert: Any) -> dict[str, Any]:
    return json.loads(cert.to_json(indent=None))  # same dict; the compact form uses json's C encoder


def _panel(result: CertifyResult, s: _Settings) -> pd.DataFrame | None:
    """Panel leaderboard: mean over judges of the certified scores, with a 95% item bootstrap CI."""
    from biasbound import leaderboard as lb

    if len(result.judges) < 2:
        return None
    lbd = result.leaderboard
    if s.view == "model":
        sc = pd.concat([j.scores for j in result.judges.values()], ignore_index=True)
        per_item = sc.groupby(["model", "item_id"], sort=True)[["original", "certified"]].mean().reset_index()
        models = sorted(per_item["model"].unique())
        items = pd.Index(sorted(per_item["item_id"].unique()))
        seed = _spawn_seeds(s.seed + 2, 1)[0]
        c_mean, c_lo, c_hi = _boot(_matrix(per_item, "certified", models, items), s.bootstrap_rounds, seed)
        o_mean, o_lo, o_hi = _boot(_matrix(per_item, "original", models, items), s.bootstrap_rounds, seed)
        panel = pd.DataFrame({"judge": "panel", "model": models, "original": o_mean, "original_lo": o_lo,
                              "original_hi": o_hi, "certified": c_mean, "certified_lo": c_lo, "certified_hi": c_hi})
    else:
        g = lbd.groupby("model")
        panel = pd.DataFrame({"judge": "panel", "original": g["original"].mean(), "certified": g["certified"].mean()})
        panel = panel.reset_index()
        for c in ("original_lo", "original_hi", "certified_lo", "certified_hi"):
            panel[c] = np.nan  # no item-level certified scores in the leaderboard view
    panel["n_judges"] = panel["model"].map(lbd.groupby("model")["judge"].nunique()).astype(int)
    panel["rank_original"] = lb.rank(panel["original"].to_numpy())
    panel["rank_certified"] = lb.rank(panel["certified"].to_numpy())
    return panel.sort_values("rank_original", kind="stable").reset_index(drop=True)


def _summary(result: CertifyResult) -> dict[str, Any]:
    judges: dict[str, Any] = {}
    for name, j in result.judges.items():
        cal = j.calibration
        judges[name] = {
            "view": j.view,
            "models": int(len(j.leaderboard)),
            "alpha": cal.alpha, "alpha_max": cal.alpha_max, "sigma": cal.sigma, "sigma_max": cal.sigma_max,
            "bound_used": cal.bound_used, "dim": cal.dim,
            "sensitivity": j.sensitivity.delta_star, "sensitivity_ucb": j.sensitivity.ucb,
            "audit_pooled": None if j.pooled_audit is None else j.pooled_audit.to_dict(),
            "audit_verdict_counts": j.verdict_counts,
            "spearman": j.retention.get("spearman"), "kendall_tau_b": j.retention.get("kendall_tau_b"),
            "notes": j.notes,
        }
    return {"settings": result.settings, "seed": result.seed, "judges": judges, "failures": result.failures}


def _write_core(result: CertifyResult, out: Path, s: _Settings) -> None:
    """Certificates, tables and JSON (everything but plots and the HTML report)."""
    o = result.outputs
    out.mkdir(parents=True, exist_ok=True)
    if result.load_report is not None:
        o["load_report"] = _write_json(out / "load_report.json", result.load_report)
    several = len(result.judges) > 1
    model_certs: list[dict[str, Any]] = []
    for name, j in result.judges.items():
        fname = f"certificate-{_safe_name(name)}.json" if several else "certificate.json"
        j.certificate.write(out / fname)
        o[f"certificate:{name}"] = out / fname
        model_certs += [_cert_dict(c) for c in j.model_certificates.values()]
    if model_certs:
        o["certificates"] = _write_json(out / "certificates.json", model_certs, plain=True)  # parsed JSON
    if result.judges:
        scores = pd.concat([j.scores for j in result.judges.values()], ignore_index=True)
        cols = [c for c in ("judge", "model", "item_id", "original", "shrunk", "certified", "shrunk_model",
                            "certified_model", "in_batch") if c in scores.columns]
        scores[cols].to_parquet(out / "scores.parquet", index=False)
        o["scores"] = out / "scores.parquet"
        result.leaderboard.to_csv(out / "leaderboard.csv", index=False)
        o["leaderboard"] = out / "leaderboard.csv"
        o["retention"] = _write_json(out / "retention.json", result.retention if several else
                                     next(iter(result.retention.values())))
        if result.panel is not None:
            result.panel.to_csv(out / "panel_leaderboard.csv", index=False)
            o["panel_leaderboard"] = out / "panel_leaderboard.csv"
    o["summary"] = _write_json(out / "summary.json", _summary(result))


def _write_plots_and_report(result: CertifyResult, out: Path, s: _Settings) -> None:
    from biasbound.report.html import write_report
    from biasbound.report.plots import plot_judge_retention, plot_ranking, plot_score_kde, plot_sensitivity

    o = result.outputs
    several = len(result.judges) > 1
    plots: dict[str, Path] = {}
    for name, j in result.judges.items():
        sfx = f"-{_safe_name(name)}" if several else ""
        cal = j.calibration
        sc = j.scores[j.scores["in_batch"]]
        if j.view == "model":
            orig, cert, shr = sc["original"].to_numpy(), sc["certified"].to_numpy(), sc["shrunk"].to_numpy()
        else:
            per = sc.drop_duplicates("model")
            orig = j.leaderboard["original"].to_numpy()
            cert, shr = per["certified_model"].to_numpy(), per["shrunk_model"].to_numpy()
        label = f" ({name})" if several else ""
        plots[f"score_kde{sfx}"] = plot_score_kde(orig, cert, out / f"score_kde{sfx}.png", shrunk=shr,
                                                  alpha=cal.alpha, sigma=cal.sigma,
                                                  title=f"Scores before and after certification{label}")
        plots[f"ranking{sfx}"] = plot_ranking(j.leaderboard, out / f"ranking{sfx}.png", title=f"Leaderboard{label}")
        gens = j.certificate.scope.get("generators_table") if isinstance(j.certificate.scope, Mapping) else None
        plots[f"sensitivity{sfx}"] = plot_sensitivity(gens, out / f"sensitivity{sfx}.png", tau=s.tau,
                                                      title=f"Sensitivity per generator{label}")
    if several:
        rows = [{"judge": n, "setting": f"{s.method}/{s.combine}", "spearman": r.get("spearman"),
                 "kendall_tau_b": r.get("kendall_tau_b"), "pearson": r.get("pearson")}
                for n, r in result.retention.items()]
        plots["judges"] = plot_judge_retention(pd.DataFrame(rows), out / "judges.png",
                                               title="Ranking retained per judge")
        if result.panel is not None:
            plots["ranking"] = plot_ranking(result.panel, out / "ranking.png", title="Panel leaderboard (mean of judges)")
    for k, p in plots.items():
        o[f"plot:{k}"] = p
    summary = _summary(result)
    audit = {}
    for name, j in result.judges.items():
        if j.pooled_audit is not None:
            audit[f"pooled ({name})"] = j.pooled_audit.to_dict()
        audit[f"per-model verdicts ({name})"] = j.verdict_counts
    headline = {"judges": ", ".join(result.judges), "tau": s.tau, "delta": s.delta, "method": s.method,
                "combine": s.combine, "neighbors": ", ".join(s.generators), "view": s.view,
                "center": s.to_dict()["center"], "seed": s.seed, "failures": summary["failures"] or "none"}
    o["report"] = write_report(
        out, title="biasbound certificate report", summary=headline, leaderboard=result.leaderboard,
        certificates=[_cert_dict(j.certificate) for j in result.judges.values()],
        retention=result.retention, plots=plots, load_report=result.load_report, audit=audit or None,
    )


# --------------------------------------------------------------------------------------
# the public entry point
# --------------------------------------------------------------------------------------
def certify(
    judgments: Any,
    *,
    tau: float = 0.5,
    delta: float = 0.01,
    neighbors: str | Sequence[str] = ("swap",),
    method: str = "tight",
    combine: str = "max",
    alpha: float | None = None,
    beta: float | None = 0.05,
    holdout: float = 0.3,
    seed: int | None = 0,
    view: str = "model",
    center: str = "fixed:0.5",
    jitter_adjust: bool = False,
    bootstrap_rounds: int = 1000,
    out: str | Path | None = None,
    progress: bool = True,
    confidence: float = 0.99,
    n_mc: int = 20000,
    plots: bool = True,
) -> CertifyResult:
    """Certify every judge in a judgment set: (τ, δ)-average bias-bounded scores and their audit.

    Parameters
    ----------
    judgments : JudgmentSet or pandas.DataFrame
        Judgments in the contract schema (docs/DESIGN.md "Judgment tables").
    tau, delta : float
        The A-BB tolerance ``τ > 0`` and failure probability ``δ ∈ (0, 1)`` (Def. 3.5).
    neighbors : str or sequence of str
        Observed generators: ``swap``, ``rerun``, ``variant:NAME`` (comma-separated string allowed).
    method : {"tight", "paper"}
        Calibration method of :func:`biasbound.abb.calibrate`.
    combine : {"max", "rms"}
        Combination over generators (paper, "Combination Logic"); components floored at 1e-3.
    alpha : float, optional
        Shrinkage (Lipschitz constant) in (0, 1]; chosen by the calibrator when None.
    beta : float or None
        Confidence level of the sensitivity upper bound (β/K per generator); None uses the
        point estimate Δ* as the paper does.
    holdout : float
        Share in [0, 0.9] of each model's neighbours held out of calibration for the audit
        (and, for ``center="holdout"``, of each model's items used for the centre).
    seed : int or None
        Master seed; per-model mechanism seeds are spawned from it (SeedSequence) and recorded.
    view : {"model", "leaderboard"}
        ``model``: f(D) = a model's per-item scores, one certificate per model.
        ``leaderboard``: f(D) = the vector of model mean scores, one certificate per judge.
    center : str
        ``fixed:X`` (default ``fixed:0.5``), ``ema:X``, ``holdout`` or ``batch``.
    jitter_adjust : bool
        Fold rerun jitter out of the other generators (needs a ``rerun`` generator and another one).
    bootstrap_rounds : int
        Rounds of the item bootstrap for the leaderboard CIs (≥ 1000 recommended).
    out : path, optional
        Output folder; nothing is written when None.
    progress : bool
        Show a progress bar on stderr.
    confidence : float
        Confidence level of the audits.
    n_mc : int
        Monte Carlo draws of the pooled audit (per-model audits use at most 5000).
    plots : bool
        Write the plots and report.html (when ``out`` is given).

    Returns
    -------
    CertifyResult

    Raises
    ------
    InputError
        For a parameter outside its range or judgments that lack the requested neighbours.
    InfeasibleCertificateError
        When a judge cannot be certified; raised after the other judges' outputs are written
        (the partial :class:`CertifyResult` is attached as ``exc.partial_result``).

    Notes
    -----
    Implements Algorithm 1 of the paper with Lipschitz shrinkage (Prop. B.3) and the tight
    calibration of :mod:`biasbound.abb`; see the module docstring for the decisions on shared
    calibration, order statistics, audits and jitter adjustment.
    """
    tau = check_in_range(tau, "tau", _WHERE, low=0.0, low_open=True)
    delta = check_in_range(delta, "delta", _WHERE, low=0.0, high=1.0, low_open=True, high_open=True)
    gens = parse_neighbors(neighbors)
    method = check_one_of(method, "method", _WHERE, ("tight", "paper"))
    combine = check_one_of(combine, "combine", _WHERE, ("max", "rms"))
    if alpha is not None:
        alpha = check_in_range(alpha, "alpha", _WHERE, low=0.0, high=1.0, low_open=True)
    if beta is not None:
        beta = check_in_range(beta, "beta", _WHERE, low=0.0, high=1.0, low_open=True, high_open=True)
    holdout = check_in_range(holdout, "holdout", _WHERE, low=0.0, high=0.9)
    view = check_one_of(view, "view", _WHERE, ("model", "leaderboard"))
    center_kind, center_value = parse_center(center)
    if center_kind == "holdout" and holdout <= 0:
        raise InputError(f"The 'holdout' parameter of {_WHERE} must be > 0 with center='holdout'. Got {holdout!r} instead.")
    if not isinstance(jitter_adjust, bool):
        raise TypeError(f"The 'jitter_adjust' parameter of {_WHERE} must be a bool. Got {type(jitter_adjust).__name__} instead.")
    if jitter_adjust and ("rerun" not in gens or len(gens) < 2):
        raise InputError(
            f"The 'jitter_adjust' parameter of {_WHERE} needs a 'rerun' generator and at least one other generator. "
            f"Got neighbors={','.join(gens)!r} instead."
        )
    bootstrap_rounds = check_int(bootstrap_rounds, "bootstrap_rounds", _WHERE, low=1)
    confidence = check_in_range(confidence, "confidence", _WHERE, low=0.0, high=1.0, low_open=True, high_open=True)
    n_mc = check_int(n_mc, "n_mc", _WHERE, low=1)
    _, master = resolve_rng(seed)
    frame, load_report = _as_frame(judgments)
    frame = _check_frame(frame, gens)
    s = _Settings(tau=tau, delta=delta, generators=gens, method=method, combine=combine, alpha=alpha, beta=beta,
                  holdout=holdout, seed=master, view=view, center_kind=center_kind, center_value=center_value,
                  jitter_adjust=jitter_adjust, bootstrap_rounds=bootstrap_rounds, confidence=confidence, n_mc=n_mc)
    out_path = None if out is None else Path(out)

    judge_names = sorted(str(j) for j in pd.unique(frame["judge"]))
    judge_seeds = dict(zip(judge_names, _spawn_seeds(master, len(judge_names))))
    if len(judge_names) == 1:  # the one group is the whole table (same rows, order and index)
        groups = {judge_names[0]: frame}
    else:
        groups = {str(k): g for k, g in frame.groupby(frame["judge"].astype(str), sort=True)}
    done: dict[str, JudgeCertification] = {}
    failures: dict[str, str] = {}
    errors: list[BiasboundError] = []

    from rich.progress import Progress

    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task("certifying", total=len(judge_names) + (1 if out_path is not None else 0))
        for name in judge_names:
            bar.update(task, description=f"certifying {name}")
            try:
                done[name] = _certify_judge(groups[name], name, s, judge_seeds[name])
            except (InfeasibleCertificateError, InputError) as exc:
                failures[name] = str(exc)
                errors.append(exc)
            bar.advance(task)
        lbd = (pd.concat([j.leaderboard for j in done.values()], ignore_index=True) if done
               else pd.DataFrame(columns=["judge", "model"]))
        result = CertifyResult(
            judges=done, failures=failures, leaderboard=lbd, panel=None,
            retention={n: j.retention for n, j in done.items()}, outputs={}, seed=master,
            load_report=load_report, settings=_jsonable(s.to_dict()),
        )
        result.panel = _panel(result, s)
        if out_path is not None:
            bar.update(task, description="writing outputs")
            _write_core(result, out_path, s)
            if plots and done:
                _write_plots_and_report(result, out_path, s)
            bar.advance(task)
    if errors:
        first = errors[0]
        where = f"; the outputs of the other judges were written to {out_path}" if (out_path and done) else ""
        msg = (f"{len(errors)} of {len(judge_names)} judge(s) could not be certified: {str(first).rstrip('.')}{where}."
               if len(judge_names) > 1 else str(first))
        exc_out: BiasboundError
        if isinstance(first, InfeasibleCertificateError):
            exc_out = InfeasibleCertificateError(msg, alpha_max=first.alpha_max)
        else:
            exc_out = InputError(msg)
        exc_out.partial_result = result  # type: ignore[attr-defined]
        raise exc_out
    return result

"""Certification of one judge as a sequence of stages along the data flow, each a small function
over frozen records:

    canonical scores → certified batch (centre hold-out) → observed neighbours → hold-out split
    → sensitivity per generator → calibration → mechanism → audits → certificates → scores table
    → leaderboard

The model/leaderboard difference lives in the view object (:mod:`biasbound.pipeline._view`).

Seeding (deterministic given the judge's seed, spawned from the master seed): one generator
``rng = default_rng(judge_seed)`` is consumed by the stages in this fixed order — the centre
hold-out split (``center="holdout"`` only), the neighbour hold-out split, the dominating sample
of the order-statistic bound (one generator only), then the leaderboard bootstrap seed. The
mechanism's noise seeds are spawned from ``judge_seed`` (one per model, SeedSequence), the
audits' from ``judge_seed + 1``; all are recorded in the outputs.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InfeasibleCertificateError, InputError
from biasbound.pipeline._leaderboard import _judge_leaderboard, _str_column
from biasbound.pipeline._neighbours import (
    _dominating_sample,
    _estimates,
    _group_bounds,
    _group_split,
    _jitter_diagnostic,
    _judge_sensitivity,
    _key_codes,
    _neighbour_codes,
    _Neighbours,
)
from biasbound.pipeline._results import JudgeCertification, _Batch, _Canon, _jsonable
from biasbound.pipeline._settings import _WHERE, _Settings, _spawn_seeds, describe_generator
from biasbound.pipeline._view import _BatchScores, _LeaderboardView, _ModelView, make_view


def _make_certificate(cal: Any, **kw: Any) -> Any:
    """:func:`biasbound.certificate.make_certificate` (each certificate built and validated once)."""
    from biasbound.certificate import make_certificate

    return make_certificate(cal, **kw)


def _sha(values: np.ndarray) -> str:
    from biasbound.certificate import sha256_of_array

    return sha256_of_array(np.asarray(values, dtype=float))


# ----------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class _Observed:
    """Observed neighbours of one judge on its certified batch, one entry per neighbour.

    In generator order, then in the judgment table's row order. ``diff`` is signed
    (f(D)_i − f(D')_i on the item's own scale [0, 1]); ``missing`` counts, per generator,
    neighbour judgments that produced no score (never imputed).
    """

    model: np.ndarray
    item: np.ndarray
    generator: np.ndarray
    diff: np.ndarray
    missing: dict[str, int]


@dataclass(frozen=True)
class _Sensitivity:
    """Per (unit, generator) estimates from the calibration share and their combination."""

    estimates: dict[str, dict[str, Any]]
    judge: Any  # CombinedSensitivity over units
    center_shift: float  # S_μ (batch centre)
    per_unit: dict[str, Any]
    jitter: dict[str, Any] | None
    notes: tuple[str, ...]


# ----------------------------------------------------------------------------------- stages
@dataclass(frozen=True)
class _Codes:
    """One factorisation of the judge's table: model and item codes into their sorted names."""

    m: np.ndarray
    model_names: np.ndarray
    i: np.ndarray
    item_names: np.ndarray


def _codes(fj: pd.DataFrame) -> _Codes:
    from biasbound.data.tables import _sorted_codes

    m_all, model_names = _sorted_codes(fj["model"])
    i_all, item_names = _sorted_codes(fj["item_id"])
    return _Codes(m=m_all, model_names=model_names, i=i_all, item_names=item_names)


def _canonical(fj: pd.DataFrame, s: _Settings, codes: _Codes) -> tuple[_Canon, pd.Series]:
    """f(D): the canonical scores sorted by (model, item), and the missing count per model."""
    from biasbound.neighbors import observed as obs

    obs._check_frame(fj, "canonical_scores")
    kind0, _ = obs._parse_generator(s.generators[0], "canonical_scores")
    m_all, model_names, i_all, item_names = codes.m, codes.model_names, codes.i, codes.item_names
    cpos = np.flatnonzero(obs._canonical_rows(fj, kind0))
    cpos = cpos[np.lexsort((i_all[cpos], m_all[cpos]))]
    canon = _Canon(m=m_all[cpos], i=i_all[cpos], score=fj["score"].to_numpy(dtype=float)[cpos],
                   model_names=model_names, item_names=item_names)
    present = ~np.isnan(canon.score)
    n_miss = np.bincount(canon.m, weights=(~present).astype(float), minlength=len(model_names))
    codes = np.unique(canon.m)
    return canon, pd.Series(n_miss[codes].astype(int), index=model_names[codes])


def _certified_batch(canon: _Canon, s: _Settings, judge: str, rng: np.random.Generator) -> tuple[_BatchScores, list[str]]:
    """The certified batch: non-missing canonical rows, minus the seeded centre hold-out."""
    notes: list[str] = []
    v_pos = np.flatnonzero(~np.isnan(canon.score))
    centers: dict[str, float] | None = None
    if s.center_kind == "holdout":
        mask = _group_split(canon.m[v_pos], s.holdout, rng)
        c_pos = v_pos[mask]
        means_c = pd.Series(canon.score[c_pos]).groupby(canon.m[c_pos]).mean()
        centers = {str(canon.model_names[k]): float(v) for k, v in means_c.items()}
        v_pos = v_pos[~mask]
        notes.append(
            f"Holdout centre: a seeded {s.holdout:g} share of each model's items was used only to compute the "
            "centre and is excluded from the certified batch (and from the neighbours)."
        )
    d_codes = np.bincount(canon.m[v_pos], minlength=len(canon.model_names))
    batch = _BatchScores(pos=v_pos, m=canon.m[v_pos], i=canon.i[v_pos], score=canon.score[v_pos],
                         model_names=canon.model_names, item_names=canon.item_names, d_codes=d_codes,
                         model_codes=np.flatnonzero(d_codes), centers=centers)
    if not batch.models:
        raise InputError(f"The 'judgments' parameter of {_WHERE} holds no non-missing score for judge {judge!r}.")
    if centers is not None and set(centers) != set(batch.models):
        raise InputError(f"The 'holdout' parameter of {_WHERE} leaves some model of judge {judge!r} without centre items; raise it.")
    return batch, notes


def _observe(fj: pd.DataFrame, s: _Settings, batch: _BatchScores, codes: _Codes) -> _Observed:
    """Every generator's observed Hamming-1 neighbours whose item is in the certified batch."""
    from biasbound.neighbors import observed as obs

    m_all, model_names, i_all, item_names = codes.m, codes.model_names, codes.i, codes.item_names
    n_items_all = max(len(item_names), 1)
    batch_keys = batch.m.astype(np.int64) * n_items_all + batch.i  # sorted: the batch is sorted by (model, item)
    key_codes = _key_codes(fj, m_all, i_all)
    score_all = fj["score"].to_numpy(dtype=float)
    parts: list[tuple[np.ndarray, ...]] = []
    missing: dict[str, int] = {}
    for gi, g in enumerate(s.generators):
        kind_g, name_g = obs._parse_generator(g, "observed_neighbors")
        missing[g] = int(np.count_nonzero(obs._neighbor_mask(fj, kind_g, name_g) & np.isnan(score_all)))
        m, i, diff = _neighbour_codes(fj, g, m_all, i_all, model_names, item_names, key_codes)
        key = m.astype(np.int64) * n_items_all + i
        at = np.minimum(np.searchsorted(batch_keys, key), max(len(batch_keys) - 1, 0))
        inside = batch_keys[at] == key if len(batch_keys) else np.zeros(len(key), dtype=bool)
        parts.append((m[inside], i[inside], np.full(int(inside.sum()), gi, dtype=np.int64), diff[inside]))
    cat = [np.concatenate([p[k] for p in parts]) for k in range(4)]
    return _Observed(model=cat[0], item=cat[1], generator=cat[2], diff=cat[3], missing=missing)


def _hamming1(observed: _Observed, view: _ModelView | _LeaderboardView) -> _Neighbours:
    """The view's distances of the Hamming-1 neighbours."""
    dist, shift = view.distances(observed.model, np.abs(observed.diff))
    return _Neighbours(model=view.unit_of(observed.model), generator=observed.generator, dist=dist, shift=shift)


def _split(nb: _Neighbours, s: _Settings, rng: np.random.Generator) -> tuple[_Neighbours, _Neighbours]:
    """Seeded hold-out of a ``holdout`` share of each (unit, generator) group: (calibration, audit)."""
    held = _group_split(nb.model.astype(np.int64) * len(s.generators) + nb.generator, s.holdout, rng)
    return nb.take(~held), nb.take(held)


def _sensitivity(cal_rows: _Neighbours, view: _ModelView | _LeaderboardView, s: _Settings) -> _Sensitivity:
    """Per (unit, generator) estimates, their combination and the jitter diagnostic."""
    n_gen = len(s.generators)
    order, keys, bounds = _group_bounds(cal_rows.model.astype(np.int64) * n_gen + cal_rows.generator)
    groups = {}
    for k, a, b in zip(keys.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order[a:b]
        groups[(view.unit_name(k // n_gen), s.generators[k % n_gen])] = (cal_rows.dist[rows], cal_rows.shift[rows])
    estimates, notes = _estimates(groups, s, view.units, view.max_distance)
    judge_sens, s_mu, per_unit = _judge_sensitivity(estimates, s, view.shift_scale)
    jitter, warnings = _jitter_diagnostic(estimates, s)
    if jitter is not None:
        notes.append(
            "Rerun jitter is one of the certificate's generators: the guarantee is about the released scores, which "
            "carry the jitter. The jitter-free sensitivity (scope 'jitter_diagnostic') is reported only and was not "
            "used to calibrate."
        )
    notes += warnings
    return _Sensitivity(estimates=estimates, judge=judge_sens, center_shift=s_mu, per_unit=per_unit, jitter=jitter,
                        notes=tuple(notes))


def _calibration(
    judge: str, s: _Settings, view: _ModelView | _LeaderboardView, sens: _Sensitivity, cal_rows: _Neighbours,
    rng: np.random.Generator,
) -> tuple[Any, dict[str, Any]]:
    """One calibration per judge (shared α and σ); returns it and the keyword arguments that
    re-derive it at another dimension."""
    from biasbound.abb import calibrate

    cal_kw: dict[str, Any] = dict(tau=s.tau, delta=s.delta, sensitivity=sens.judge.delta_star, method=s.method,
                                  max_distance=view.max_distance)
    if s.center_kind == "batch":
        cal_kw.update(center_sensitivity=sens.center_shift, center_max=view.center_max)
    if s.beta is not None and sens.judge.ucb is not None:
        cal_kw.update(beta=s.beta, sensitivity_ucb=sens.judge.ucb)
        if len(s.used) == 1 and s.center_kind != "batch":
            used = cal_rows.generator == s.generators.index(s.used[0])
            cal_kw["distances"] = _dominating_sample(cal_rows.model[used], cal_rows.dist[used], rng)
    try:
        cal = calibrate(dim=view.dim, alpha=s.alpha, **cal_kw)
    except InfeasibleCertificateError as exc:
        raise InfeasibleCertificateError(f"Judge {judge!r}: {exc}", alpha_max=exc.alpha_max) from exc
    return cal, cal_kw


@dataclass(frozen=True)
class _Audits:
    """Per-unit audits on the held-out neighbours, the pooled audit and the verdict counts."""

    per_model: dict[str, Any]
    pooled: Any
    counts: dict[str, int]

    @property
    def violated(self) -> bool:
        """Whether any audit contradicts the certificate."""
        return (self.pooled is not None and self.pooled.verdict == "violated") or self.counts.get("violated", 0) > 0


def _audits(
    s: _Settings, view: _ModelView | _LeaderboardView, cal: Any, held: _Neighbours, judge_seed: int,
) -> _Audits:
    """Audit the certificate on the held-out neighbours of exactly its generators.

    Per model (model view) and pooled over the judge's models. Every audit runs at confidence
    ``1 − (1 − confidence)/(number of audits)`` (Bonferroni), so the chance that some audit of a
    valid certificate says "violated" — which makes ``certify`` exit 1 — is at most ``1 − confidence``.
    """
    from biasbound.audit import audit

    used = np.isin(held.generator, [s.generators.index(g) for g in s.used])
    held = held.take(used)
    audit_seeds = _spawn_seeds(judge_seed + 1, len(view.units) + 1)
    per_model: dict[str, Any] = {}
    n_audits = (len(view.units) if isinstance(view, _ModelView) else 0) + 1
    conf = 1.0 - (1.0 - s.confidence) / n_audits
    batch_center = s.center_kind == "batch"
    if isinstance(view, _ModelView):
        order, keys, bounds = _group_bounds(held.model)
        held_by = {view.unit_name(k): order[a:b] for k, a, b in zip(keys.tolist(), bounds[:-1], bounds[1:])}
        for i, m in enumerate(view.units):
            rows = held_by.get(m)
            if rows is None or len(rows) < 2:
                per_model[m] = None
                continue
            per_model[m] = audit(
                tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha, distances=held.dist[rows],
                mean_shifts=held.shift[rows] if batch_center else None, dim=view.unit_dim(m), confidence=conf,
                n_mc=min(s.n_mc, 5000), rng=audit_seeds[i], max_distance=view.max_distance,
            )
    pooled = None
    if len(held) >= 2:
        pooled = audit(
            tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha, distances=held.dist,
            mean_shifts=held.shift if batch_center else None, dim=view.dim, confidence=conf, n_mc=s.n_mc,
            rng=audit_seeds[-1], max_distance=view.max_distance,
        )
    counts = {"holds": 0, "not contradictable": 0, "violated": 0, "inconclusive": 0, "not audited": 0}
    for a in per_model.values():
        counts["not audited" if a is None else a.verdict] += 1
    return _Audits(per_model=per_model, pooled=pooled, counts=counts)


def _certificates(
    judge: str, judge_seed: int, s: _Settings, view: _ModelView | _LeaderboardView, cal: Any, sens: _Sensitivity,
    mech: dict[str, Any], audits: _Audits, scope_extra: dict[str, Any], n_missing: pd.Series,
) -> tuple[Any, dict[str, Any]]:
    """The judge-level certificate and (model view) one certificate per model."""
    relation = "; ".join(describe_generator(g) for g in s.used)
    if len(s.used) > 1:
        relation += f" (combined by {s.combine})"
    units = view.units
    gen_table = {
        g: {
            "delta_star": max(float(sens.estimates[u][g].delta_star) for u in units),
            "m": int(sum(sens.estimates[u][g].m for u in units)),
            "ucb": (None if any(sens.estimates[u][g].ucb is None for u in units)
                    else max(float(sens.estimates[u][g].ucb) for u in units)),
        }
        for g in s.generators
    }
    base_scope: dict[str, Any] = {
        "judge": judge,
        "generators": list(s.generators),
        "generators_in_combination": list(s.used),
        "holdout_share": s.holdout,
        **scope_extra,
        "score_range": [0.0, 1.0],
        "generators_table": gen_table,
    }
    if sens.jitter is not None:
        base_scope["jitter_diagnostic"] = _jsonable(sens.jitter)
    # make_certificate reads components as a list of {name, delta_star, m, ucb} (max over models)
    sens_record = {"how": s.combine, "delta_star": sens.judge.delta_star, "ucb": sens.judge.ucb,
                   "components": [{"name": g, **gen_table[g]} for g in s.used]}
    pooled = None if audits.pooled is None else _jsonable(audits.pooled.to_dict())
    judge_audit = {"pooled": pooled, "verdict_counts": audits.counts,
                   "per_model": {m: (None if a is None else a.verdict) for m, a in audits.per_model.items()}}
    common = dict(sensitivity=sens_record, center_kind=s.center_kind, neighbor_relation=relation)
    model_certs: dict[str, Any] = {}
    if isinstance(view, _ModelView):
        values = view.batch.values()
        for m in units:
            res, c, cal_m = mech[m]
            a = audits.per_model[m]
            scope = dict(base_scope, model=m, n_items=int(len(values[m])), n_missing=int(n_missing.get(m, 0)),
                         model_sensitivity=_jsonable(sens.per_unit[m].to_dict()))
            model_certs[m] = _make_certificate(
                cal_m, center_value=float(c), seed=int(res.seed), data_sha256=_sha(values[m]), view="model",
                scope=scope, audit={"model": None if a is None else _jsonable(a.to_dict()), "pooled": pooled,
                                    "verdict_counts": audits.counts}, **common,
            )
        jscope = dict(base_scope, model="*", models={
            m: {"dim": int(len(values[m])), "seed": int(mech[m][0].seed), "data_sha256": model_certs[m].data_sha256}
            for m in units
        }, n_missing=int(n_missing.sum()))
        jscope["centers"] = {m: float(mech[m][1]) for m in units}
        judge_cert = _make_certificate(
            cal, center_value=(float(s.center_value) if s.center_value is not None
                               else float(np.mean([mech[m][1] for m in units]))),
            seed=int(judge_seed), data_sha256=_sha(np.concatenate([values[m] for m in units])), view="model",
            scope=jscope, audit=judge_audit,
            # one shared calibration applied to each model's own batch: the claim is per model, never about
            # the concatenation of all models' scores (whose noise norm grows with the total item count)
            batch_description=(None if len(units) == 1 else
                               f"each of this judge's {len(units)} models separately (that model's own batch of at "
                               f"most {view.dim} judged items, as in its per-model certificate; not the concatenation "
                               "of all models' scores)"),
            **common,
        )
        return judge_cert, model_certs
    res, c_arr, _ = mech["*"]
    d_m = view.batch.d_m
    jscope = dict(base_scope, model="*", models=view.batch.models,
                  n_items={m: int(d_m[m]) for m in view.batch.models}, n_missing=int(n_missing.sum()))
    judge_cert = _make_certificate(
        cal, center_value=float(np.mean(c_arr)), seed=int(res.seed), data_sha256=_sha(view.means()),
        view="leaderboard", scope=jscope, audit=judge_audit,
        batch_description=(f"this fixed vector of {view.dim} model mean scores (each the mean of that model's "
                           f"{int(d_m.min())} to {int(d_m.max())} judged items)"),
        **common,
    )
    return judge_cert, model_certs


def _scores_table(
    fj: pd.DataFrame, judge: str, canon: _Canon, view: _ModelView | _LeaderboardView, mech: dict[str, Any],
) -> pd.DataFrame:
    """One row per canonical (model, item), in canonical order: original, shrunk and certified."""
    in_batch = np.zeros(len(canon.m), dtype=bool)
    in_batch[view.batch.pos] = True
    scores = pd.DataFrame({"model": _str_column(canon.model_names, canon.m),
                           "item_id": _str_column(canon.item_names, canon.i), "original": canon.score})
    scores.insert(0, "judge", judge)
    for col, vals in view.scores_columns(mech, len(canon.m), canon.m).items():
        scores[col] = vals
    scores["in_batch"] = in_batch
    if isinstance(view, _ModelView):  # the table carries the judgments' attrs (load report), as it always has
        scores.attrs = copy.deepcopy(fj.attrs)
    return scores


# ----------------------------------------------------------------------------------- one judge
def _certify_judge(fj: pd.DataFrame, judge: str, s: _Settings, judge_seed: int) -> JudgeCertification:
    """Certify one judge: the stages above, in data-flow order (see the module docstring for seeding)."""
    from biasbound.abb import calibrate

    rng = np.random.default_rng(judge_seed)
    codes = _codes(fj)
    canon, n_missing = _canonical(fj, s, codes)
    batch, notes = _certified_batch(canon, s, judge, rng)
    view = make_view(s.view, batch)
    observed = _observe(fj, s, batch, codes)
    cal_rows, held = _split(_hamming1(observed, view), s, rng)
    sens = _sensitivity(cal_rows, view, s)
    notes += list(sens.notes)
    cal, cal_kw = _calibration(judge, s, view, sens, cal_rows, rng)
    if isinstance(view, _ModelView) and len(view.units) > 1:
        notes.append(
            f"All {len(view.units)} models of this judge share one calibration: sensitivity = max over models of the "
            f"per-model combined sensitivity, dim = the largest model dimension ({view.dim}); each model's certificate "
            "is re-derived at its own dimension with the same alpha and sigma."
        )
    mech = view.apply(s, cal, lambda dm: calibrate(dim=dm, alpha=cal.alpha, sigma=cal.sigma, **cal_kw), judge_seed)
    audits = _audits(s, view, cal, held, judge_seed)
    if any(observed.missing.values()):
        notes.append(
            "Missing neighbour judgments were excluded (counts per generator in neighbors_missing): the "
            "certificate covers neighbours that produced a judgment; a perturbation that makes the judge "
            "fail is not measured by it."
        )
    scope_extra = {"neighbors_calibration": int(len(cal_rows)), "neighbors_audit": int(len(held)),
                   "neighbors_missing": observed.missing, "notes": notes}
    judge_cert, model_certs = _certificates(judge, judge_seed, s, view, cal, sens, mech, audits, scope_extra, n_missing)
    jc = JudgeCertification(
        judge=judge, view=s.view, calibration=cal, sensitivity=sens.judge, estimates=sens.estimates,
        certificate=judge_cert, model_certificates=model_certs, audits=audits.per_model, pooled_audit=audits.pooled,
        verdict_counts=audits.counts, scores=_scores_table(fj, judge, canon, view, mech), leaderboard=pd.DataFrame(),
        retention={}, seeds={m: int(r.seed) for m, (r, _, _) in mech.items()}, notes=notes,
        violated=audits.violated,
    )
    values = batch.values()
    lb_batch = _Batch(pos=batch.pos, values=values,
                      means=view.means() if isinstance(view, _LeaderboardView) else None,
                      certified=(np.concatenate([np.asarray(mech[m][0].certified, dtype=float) for m in view.units])
                                 if isinstance(view, _ModelView) else None))
    jc.leaderboard, jc.retention = _judge_leaderboard(fj, jc, s, canon, lb_batch, mech, batch.d_m, n_missing, rng,
                                                      (codes.m, codes.model_names, codes.i))
    return jc


"""Certification of one judge: canonical scores, neighbours and sensitivity, one calibration, the
mechanism per model (or on the model means), the audits, the certificates and the scores table.
"""

from __future__ import annotations

import copy
import math
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
    _judge_sensitivity,
    _key_codes,
    _neighbour_codes,
    _Neighbours,
)
from biasbound.pipeline._results import JudgeCertification, _Batch, _Canon, _jsonable
from biasbound.pipeline._settings import _SCORE_RANGE, _WHERE, _Settings, _spawn_seeds, describe_generator


def _make_certificate(cal: Any, **kw: Any) -> Any:
    """:func:`biasbound.certificate.make_certificate` (a scalar centre is recorded as a plain float).

    The pipeline passes each certificate's audit record as ``audit=``, so every certificate is
    built and validated once (not once more by ``with_audit``).
    """
    from biasbound.certificate import make_certificate

    return make_certificate(cal, **kw)


def _sha(values: np.ndarray) -> str:
    from biasbound.certificate import sha256_of_array

    return sha256_of_array(np.asarray(values, dtype=float))


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
    score_all = fj["score"].to_numpy(dtype=float)
    nb_missing: dict[str, int] = {}
    for gi, g in enumerate(s.generators):
        # neighbour judgments that are missing (e.g. an unparseable verdict) cannot be measured: counted and
        # reported, never imputed; the certificate covers the neighbours that produced a judgment
        kind_g, name_g = obs._parse_generator(g, "observed_neighbors")
        nb_missing[g] = int(np.count_nonzero(obs._neighbor_mask(fj, kind_g, name_g) & np.isnan(score_all)))
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
    if s.view == "model":  # shift = distance / sqrt(d of the neighbour's model), exactly
        shift_scale = {str(model_names[k]): 1.0 / math.sqrt(float(d_codes[k])) for k in model_codes}
    else:  # shift = distance / sqrt(number of models)
        shift_scale = {"*": 1.0 / math.sqrt(dim)}
    judge_sens, s_mu, per_unit = _judge_sensitivity(estimates, s, shift_scale)

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

    if any(nb_missing.values()):
        notes.append(
            "Missing neighbour judgments were excluded (counts per generator in neighbors_missing): the "
            "certificate covers neighbours that produced a judgment; a perturbation that makes the judge "
            "fail is not measured by it."
        )

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
        "neighbors_missing": nb_missing,
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
    judge_audit = {"pooled": pooled_dict, "verdict_counts": counts,
                   "per_model": {m: (None if a is None else a.verdict) for m, a in audits.items()}}
    model_certs: dict[str, Any] = {}
    if s.view == "model":
        for m in models:
            res, c, cal_m = mech[m]
            x = values[m]
            scope = dict(base_scope, model=m, n_items=int(len(x)), n_missing=int(n_missing.get(m, 0)),
                         model_sensitivity=_jsonable(per_unit[m].to_dict()))
            a = audits[m]
            adict = {"model": None if a is None else _jsonable(a.to_dict()), "pooled": pooled_dict,
                     "verdict_counts": counts}
            model_certs[m] = _make_certificate(
                cal_m, sensitivity=sens_record, center_kind=s.center_kind, center_value=float(c),
                seed=int(seeds[m]), data_sha256=_sha(x), view="model", scope=scope, neighbor_relation=relation,
                audit=adict, jitter_adjusted=s.jitter_adjust,
            )
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
            audit=judge_audit, jitter_adjusted=s.jitter_adjust,
            # one shared calibration applied to each model's own batch: the claim is per model, never about
            # the concatenation of all models' scores (whose noise norm grows with the total item count)
            batch_description=(None if len(models) == 1 else
                               f"each of this judge's {len(models)} models separately (that model's own batch of at "
                               f"most {dim} judged items, as in its per-model certificate; not the concatenation "
                               "of all models' scores)"),
        )
    else:
        res, c_arr, _ = mech["*"]
        jscope = dict(base_scope, model="*", models=models, n_items={m: int(d_m[m]) for m in models},
                      n_missing=int(n_missing.sum()))
        cval = float(np.mean(c_arr))
        judge_cert = _make_certificate(
            cal, sensitivity=sens_record, center_kind=s.center_kind, center_value=cval,
            seed=int(seeds["*"]), data_sha256=_sha(means), view="leaderboard",
            scope=jscope, neighbor_relation=relation, audit=judge_audit, jitter_adjusted=s.jitter_adjust,
            batch_description=(f"this fixed vector of {dim} model mean scores (each the mean of that model's "
                               f"{int(d_m.min())} to {int(d_m.max())} judged items)"),
        )

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


def _center_for(s: _Settings, centers: dict[str, float] | None, model: str, x: np.ndarray) -> float:
    if s.center_kind == "holdout":
        return float(centers[model])  # type: ignore[index]
    if s.center_kind == "batch":
        return float(np.mean(x))
    return float(s.center_value)  # type: ignore[arg-type]

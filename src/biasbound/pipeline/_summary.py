"""The certificate's figures as plain rows and as a JSON record: one source for the terminal
summary (``certify``, ``demo``) and ``summary.json``, so they cannot disagree."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["certificate_record", "certificate_rows", "judges_rows"]


def _f(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if v != v:
        return "—"
    return f"{v:.{digits}g}"


def _scope(j: Any) -> Mapping[str, Any]:
    scope = getattr(j.certificate, "scope", None)
    return scope if isinstance(scope, Mapping) else {}


def _range_only(scope: Mapping[str, Any]) -> bool:
    """Whether every generator's knowledge is the score range alone (no neighbour observed)."""
    cov = scope.get("knowledge_coverage") or {}
    kinds = [c.get("kind") for per_unit in cov.values() for c in per_unit.values()]
    return bool(kinds) and all(k == "range" for k in kinds)


def certificate_record(j: Any) -> dict[str, Any]:
    """The figures that tell judges apart, for ``summary.json`` (one judge)."""
    cal = j.calibration
    scope = _scope(j)
    cost = (j.retention or {}).get("cost") or {}
    out: dict[str, Any] = {
        "method": cal.method, "bound_used": cal.bound_used, "alpha": cal.alpha, "sigma": cal.sigma,
        "alpha_max": cal.alpha_max, "sigma_max": cal.sigma_max, "exact": getattr(cal, "exact", False),
        "default_rule": getattr(cal, "default_rule", None),
        "frontier": [dict(p) for p in getattr(cal, "frontier", ()) or ()],
        "guarantee": getattr(j.certificate, "guarantee", None),
        "neighborhood": scope.get("neighborhood", {"kind": "hamming", "k": 1}),
        "range_implied": getattr(j.certificate, "range_implied", None),
        # certified with no neighbour at all (range_bound): the score range's almost-sure bound is the whole knowledge
        "range_only": _range_only(scope),
        "original_scale": getattr(j.certificate, "original_scale", None),
        "bias_radius": getattr(j.certificate, "bias_radius", None),
        "per_model": scope.get("figures"),
        "knowledge_coverage": scope.get("knowledge_coverage"),
        "cost": cost or None,
        "audit": None if j.pooled_audit is None else j.pooled_audit.to_dict(),
        "violated": bool(getattr(j, "violated", False)),
    }
    worst = _worst_model_audit(j)
    if worst is not None:  # each model's claim is its own; the pooled audit is context
        out["audit_worst_model"] = {"model": worst[0], **worst[1].to_dict()}
    jit = scope.get("jitter_diagnostic")
    if jit:
        out["jitter_diagnostic"] = jit
    return out


def certificate_rows(j: Any) -> list[tuple[str, str]]:
    """(label, text) rows of one judge's certificate for a terminal table."""
    cal = j.calibration
    scope = _scope(j)
    rows: list[tuple[str, str]] = [("τ, δ", f"{_f(cal.tau)}, {_f(cal.delta)}")]
    rows += _method_rows(j, cal)
    rows += _relation_rows(j, scope)
    rows += _knowledge_rows(j, scope)
    rows += _calibration_rows(cal)
    rows += _figure_rows(j, cal, scope)
    rows += _cost_rows(j)
    rows += _audit_rows(j)
    counts = ", ".join(f"{k} {v}" for k, v in j.verdict_counts.items() if v)
    if counts:
        rows.append(("audit per model", counts))
    for w in ((scope.get("jitter_diagnostic") or {}).get("warnings") or [])[:3]:
        rows.append(("[yellow]warning[/]", w))
    return rows


def _method_rows(j: Any, cal: Any) -> list[tuple[str, str]]:
    """The method, the bound unit and how confident the statement is."""
    from biasbound.certificate import confidence_phrase

    rows: list[tuple[str, str]] = []
    exact = ("the violation probability itself (every neighbour judged)" if cal.exact
             else "an upper bound on the violation probability")
    ri = getattr(j.certificate, "range_implied", None)
    conf = None if getattr(cal, "knowledge", None) is None else confidence_phrase(cal.knowledge)
    if ri is not None and ri.get("holds"):
        conf = "surely (it follows from the score range alone; no confidence level applies)" if conf else None
    beta = "" if not conf else f"; holds {conf}"
    rows.append(("method / bound", f"{cal.method} / {cal.bound_used} ({exact}{beta})"))
    return rows


def _relation_rows(j: Any, scope: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a neighbour is: the range alone, or Hamming-k over items or (model, item) pairs."""
    rows: list[tuple[str, str]] = []
    nb = scope.get("neighborhood") or {"kind": "hamming", "k": 1}
    if _range_only(scope):
        what = ("every item's score" if nb.get("kind") == "all-items"
                else "one item's score" if nb.get("k", 1) == 1 else f"{nb.get('k')} items' scores")
        rows.append(("neighbours", f"any change of {what} within the score range (no specific perturbation; "
                     "none observed: the certificate follows from the score range alone)"))
    elif getattr(j, "view", "model") == "leaderboard":  # T perturbs (model, item) pairs of the whole leaderboard
        k = nb.get("k", 1)
        rows.append(("neighbours", "every (model, item) pair perturbed at once" if nb.get("kind") == "all-items"
                     else f"Hamming-{k} ({'one (model, item) pair' if k == 1 else str(k) + ' (model, item) pairs'} "
                     "perturbed)"))
    else:
        rows.append(("neighbours", "every item perturbed at once" if nb.get("kind") == "all-items"
                     else f"Hamming-{nb.get('k', 1)} ({'one item' if nb.get('k', 1) == 1 else str(nb.get('k')) + ' items'} "
                     "perturbed)"))
    return rows


def _knowledge_rows(j: Any, scope: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What is known per generator (coverage and RMS shift), or the sensitivity."""
    rows: list[tuple[str, str]] = []
    cov = scope.get("knowledge_coverage")
    if cov:
        parts = []
        for g, c in _coverage_by_generator(cov).items():
            if c["kind"] == "range":
                parts.append(f"{g}: the score range alone (0/{c['total']} items observed), ||Δ|| <= "
                             f"{_f(c['rms_max'], 3)} almost surely")
                continue
            parts.append(f"{g}: {c['kind']}, {c['observed']}/{c['total']} items observed, RMS ||Δ|| {_f(c['rms_max'], 3)}"
                         + ("" if c["exact"] else " (unobserved at the range bound)" if c["kind"] == "partial" else ""))
        rows.append(("knowledge (per generator)", "; ".join(parts)))
    else:
        rows.append(("sensitivity Δ* (UCB)", f"{_f(j.sensitivity.delta_star)} ({_f(j.sensitivity.ucb)})"))
    return rows


def _calibration_rows(cal: Any) -> list[tuple[str, str]]:
    """The calibrated point, its maxima and the frontier."""
    rows: list[tuple[str, str]] = []
    rows.append(("α (spread kept) / α_max", f"{_f(cal.alpha)} / {_f(cal.alpha_max)}"))
    rows.append(("σ / σ_max", f"{_f(cal.sigma)} / {_f(cal.sigma_max)}"))
    rows.append(("dim", str(cal.dim)))
    rule = getattr(cal, "default_rule", None)
    if rule:
        rows.append(("point on the frontier", rule))
    front = getattr(cal, "frontier", None)
    if front:
        pts = ", ".join(f"σ={_f(p['sigma'], 3)}: α*={_f(p['alpha'], 3)}" for p in list(front)[:: max(1, len(front) // 5)])
        rows.append(("frontier α*(σ)", pts))
    return rows


def _figure_rows(j: Any, cal: Any, scope: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The judge-informative figures: range-implied, the original scale, the bias radius."""
    rows: list[tuple[str, str]] = []
    cert = j.certificate
    ri = getattr(cert, "range_implied", None)
    if ri is not None:
        rows.append(("range-implied", "[yellow]yes[/] — it would hold for ANY judge on this score range (the "
                     "almost-sure bound alone gives " + _f(ri["bound"], 3) + " <= δ); it says nothing about this judge"
                     if ri["holds"] else "[green]no[/] — it rests on what the data say about this judge (the range "
                     "alone would give " + _f(ri["bound"], 3) + " > δ)"))
    osc = getattr(cert, "original_scale", None)
    if osc:
        rows.append(("on the original scale", f"(τ/α, σ/α) = ({_f(osc['tau'])}, {_f(osc['sigma'])}): the unshrunk "
                     "judge plus N(0, (σ/α)²) noise, certified at τ/α"))
    fig = scope.get("figures") or {}
    br = getattr(cert, "bias_radius", None)
    if fig.get("bias_radius_per_model") and len(fig["bias_radius_per_model"]) > 1:
        radii = [r for r in fig["bias_radius_per_model"].values() if r is not None]
        n_inf = len(fig["bias_radius_per_model"]) - len(radii)
        if radii:
            srt = sorted(radii)
            rows.append((f"bias radius at δ = {_f(cal.delta)}", f"per model: max {_f(srt[-1])}, median "
                         f"{_f(srt[len(srt) // 2])}, min {_f(srt[0])} over {len(radii)} models"
                         + (f" ({n_inf} unbounded)" if n_inf else "")))
        implied = fig.get("range_implied_models") or []
        if implied:
            rows.append(("range-implied models", f"{len(implied)} of {len(fig['bias_radius_per_model'])}"))
    elif br:
        curve = br.get("curve") or []
        pts = ", ".join(f"δ={_f(p['delta'], 3)}: {_f(p['radius'], 3)}" for p in curve if p["delta"] in (0.01, 0.05, 0.1, 0.2))
        per = br.get("per_generator") or {}
        gens = "; ".join(f"{g} {_f(r)}" for g, r in per.items()) if len(per) > 1 else ""
        rows.append(("bias radius", f"{_f(br['radius'])} at δ = {_f(br['delta'])}" + (f" (per generator: {gens})" if gens else "")
                     + (f"; over δ: {pts}" if pts else "")))
    return rows


def _cost_rows(j: Any) -> list[tuple[str, str]]:
    """The leaderboard's cost of the noise (pairs reversed, rank correlation)."""
    rows: list[tuple[str, str]] = []
    cost = (j.retention or {}).get("cost")
    if cost:
        one = cost.get("pairs_reversed_by_one_neighbour") or {}
        nb_txt = ", ".join(f"{g} {_f(v['expected_pairs_reversed'], 3)}" for g, v in one.items())
        how = ("with every item perturbed at once" if any(v.get("relation") == "all items" for v in one.values())
               else "by one perturbed item")
        rows.append(("leaderboard cost (model pairs)", f"{_f(cost['pairs_reversed_between_two_releases'], 3)} of "
                     f"{cost['pairs']} reversed between two releases (noise) vs {nb_txt or '—'} {how}"))
        ret = cost.get("retention_over_noise") or {}
        sp = ret.get("spearman") or {}
        if sp.get("mean") is not None:
            rows.append(("Spearman over the noise", f"{_f(sp['mean'])} [5–95%: {_f(sp['p05'])}, {_f(sp['p95'])}] "
                         f"({ret.get('draws')} draws, seed {ret.get('seed')})"))
    else:
        r = j.retention or {}
        rows.append(("Spearman / Kendall τ_b", f"{_f(r.get('spearman'))} / {_f(r.get('kendall_tau_b'))}"))
    return rows


def _audit_rows(j: Any) -> list[tuple[str, str]]:
    """The audits: the worst model's first, then the pooled one."""
    rows: list[tuple[str, str]] = []
    worst = _worst_model_audit(j)
    if worst is not None:  # each model's claim is its own: the worst one leads, before any pooled figure
        name, a = worst
        color = {"violated": "red", "inconclusive": "yellow"}.get(a.verdict, "green")
        if hasattr(a, "confidence"):  # a held-out audit: an estimate with its confidence bound
            what = (f"P(exceed) ≈ {_f(a.exact_probability)}, upper bound {_f(a.exact_ucb)} at {_f(a.confidence)} on "
                    f"{a.n_neighbors} held-out neighbours")
        else:  # computed from every observed neighbour: the probability itself, or a bound
            what = f"P(exceed) is {'exactly' if a.verdict == 'exact' else 'at most'} {_f(a.exact_probability)}"
        rows.append(("audit (worst model)", f"[{color}]{a.verdict}[/] — model {name}: {what} (δ = {_f(a.delta)})"))
    pa = j.pooled_audit
    if pa is not None:
        color = {"holds": "green", "not contradictable": "green", "exact": "green", "violated": "red"}.get(pa.verdict, "yellow")
        if hasattr(pa, "confidence"):
            rows.append(("audit (pooled)" if worst is None else "audit (pooled over models, context)",
                         f"[{color}]{pa.verdict}[/] — P(exceed) ≈ {_f(pa.exact_probability)}, UCB "
                         f"{_f(pa.exact_ucb)} at {_f(pa.confidence)} on {pa.n_neighbors} held-out neighbours"))
        else:
            what = "exactly" if pa.verdict == "exact" else "at most"
            rows.append(("audit", f"[{color}]{pa.verdict}[/] — P(exceed) is {what} {_f(pa.exact_probability)} "
                         f"(δ = {_f(pa.delta)}): {pa.reason}"))
    else:
        rows.append(("audit (pooled)", "not run (no held-out neighbours)"))
    return rows


#: Verdict severity: the worst model's audit leads.
_SEVERITY = {"violated": 0, "inconclusive": 1, "holds": 2, "exact": 3, "not contradictable": 4}


def _worst_model_audit(j: Any) -> tuple[str, Any] | None:
    """The per-model audit with the worst verdict (then the largest probability), when several models."""
    audits = {m: a for m, a in (getattr(j, "audits", None) or {}).items() if a is not None and hasattr(a, "verdict")}
    if len(audits) < 2:
        return None
    return min(audits.items(), key=lambda kv: (_SEVERITY.get(kv[1].verdict, 9), -float(kv[1].exact_probability)))


def _audit_cell(j: Any) -> str:
    """The judge's audit in one word: the worst model's verdict when several models, else the pooled one."""
    worst = _worst_model_audit(j)
    if worst is not None:
        return f"{worst[1].verdict} (worst model)"
    return "—" if j.pooled_audit is None else j.pooled_audit.verdict


def _coverage_by_generator(cov: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Coverage summed over units: {generator: {kind, observed, total}} (kind: the weakest over units)."""
    order = {"census": 0, "sample": 1, "partial": 2, "range": 3}
    out: dict[str, dict[str, Any]] = {}
    for per in cov.values():
        for g, c in per.items():
            o = out.setdefault(g, {"kind": c["kind"], "observed": 0, "total": 0, "rms_max": 0.0, "exact": True})
            o["observed"] += int(c["observed"])
            o["total"] += int(c["total"])
            o["rms_max"] = max(o["rms_max"], float(c.get("rms", 0.0)))
            o["exact"] = o["exact"] and bool(c.get("exact", False))
            if order.get(c["kind"], 0) > order.get(o["kind"], 0):
                o["kind"] = c["kind"]
    return out


def judges_rows(result: Any) -> list[list[str]]:
    """One compact row per judge, sorted by bias radius, then α (largest first), then RMS ||Δ||: the judges compared."""
    rows = []
    for name, j in result.judges.items():
        cert = j.certificate
        scope = _scope(j)
        fig = scope.get("figures") or {}
        radius = fig.get("bias_radius_max_over_models") if fig.get("bias_radius_per_model") else None
        if radius is None and getattr(cert, "bias_radius", None):
            radius = cert.bias_radius.get("radius")
        cov = _coverage_by_generator(scope.get("knowledge_coverage") or {})
        rms = max((c["rms_max"] for c in cov.values()), default=None)
        ri = getattr(cert, "range_implied", None)
        rows.append((radius if radius is not None else float("inf"), -float(j.calibration.alpha),
                     rms if rms is not None else float("inf"), name, [
            name, _f(rms, 3), _f(radius, 3), _f(j.calibration.alpha, 3), _f(j.calibration.sigma, 3),
            "—" if ri is None else ("yes" if ri["holds"] else "no"),
            _audit_cell(j),
        ]))
    rows.sort(key=lambda r: (r[0], r[1], r[2], r[3]))
    return [r[4] for r in rows]

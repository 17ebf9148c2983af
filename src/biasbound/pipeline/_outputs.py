"""The files :func:`biasbound.pipeline.certify` writes: certificates, scores, leaderboards, retention
and summary JSON, then the plots and the HTML report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from biasbound.pipeline._results import CertifyResult, jsonable
from biasbound.pipeline._summary import certificate_record
from biasbound.pipeline._settings import _Settings


#: Above this many characters (compact), a JSON file is written one top-level entry per line, each entry compact:
#: json's C encoder serves only unindented output, and the pure-Python indented one takes seconds on the tens of MB
#: a panel of thousands of models writes (certificates.json, summary.json).
BIG_JSON = 1_000_000


def _json_text(obj: Any, ensure_ascii: bool = True) -> str:
    """``obj`` (JSON types only) as text: indented, or, above :data:`BIG_JSON` characters, one top-level list
    element or object entry per line (the same JSON value)."""
    # JSON types only, made by jsonable or Certificate.to_dict (a cycle would have recursed there without end): the
    # encoder's circular-reference bookkeeping is skipped (the same text, ~7% less time)
    kw: dict[str, Any] = dict(allow_nan=False, ensure_ascii=ensure_ascii, check_circular=False)
    if isinstance(obj, list):
        parts, ends = [json.dumps(v, separators=(",", ":"), **kw) for v in obj], "[]"
    elif isinstance(obj, dict):
        parts, ends = [f"{json.dumps(str(k), **kw)}:{json.dumps(v, separators=(',', ':'), **kw)}"
                       for k, v in obj.items()], "{}"
    else:
        parts, ends = [json.dumps(obj, separators=(",", ":"), **kw)], ""
    if sum(len(p) + 1 for p in parts) <= BIG_JSON:  # the compact size
        return json.dumps(obj, indent=2, **kw)
    if not ends:
        return parts[0]
    return ends[0] + "\n" + ",\n".join(parts) + "\n" + ends[1]


def _write_json(path: Path, obj: Any, *, plain: bool = False, ensure_ascii: bool = True) -> Path:
    """Write ``obj`` as JSON (:func:`_json_text`); ``plain=True`` when it already holds JSON types only."""
    path.write_text(_json_text(obj if plain else jsonable(obj), ensure_ascii) + "\n", encoding="utf-8")
    return path


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "judge"


#: leaderboard.csv headers that differ from the in-memory leaderboard's: the unit is in the name.
CSV_COLUMN_NAMES: dict[str, str] = {
    "winrate": "win_rate_pct", "winrate_lo": "win_rate_pct_lo", "winrate_hi": "win_rate_pct_hi",
    "preference": "preference_pct", "preference_lo": "preference_pct_lo", "preference_hi": "preference_pct_hi",
    "bt": "bt_elo", "bt_lo": "bt_elo_lo", "bt_hi": "bt_elo_hi",
}


def leaderboard_table(frame: pd.DataFrame, baseline: str | None = None) -> pd.DataFrame:
    """The leaderboard as written to ``leaderboard.csv``: integer ranks, units in the headers, the baseline marked.

    Ranks are competition ranks (ties share the better rank: 1, 2, 2, 4) of the mean scores, as
    nullable integers (empty for a model without a score); the win rate is in percent
    (``win_rate_pct``), Bradley–Terry on the Elo scale (``bt_elo``); ``is_baseline`` marks the
    model the pairwise verdicts compare against (all false when no baseline is known).
    """
    from scipy.stats import rankdata

    out = frame.copy()
    group = out["judge"] if "judge" in out.columns else pd.Series(0, index=out.index)
    for score, col in (("original", "rank_original"), ("certified", "rank_certified")):
        if score not in out.columns:
            continue
        ranks = pd.Series(pd.NA, index=out.index, dtype="Int64")
        for _, idx in out.groupby(group, sort=False).groups.items():
            x = pd.to_numeric(out.loc[idx, score], errors="coerce")
            ok = x.notna()
            if ok.any():
                ranks.loc[x.index[ok]] = rankdata(-x[ok].to_numpy(), method="min").astype(int)
        out[col] = ranks
    if "model" in out.columns:
        out.insert(out.columns.get_loc("model") + 1, "is_baseline", out["model"].astype(str) == baseline)
    return out.rename(columns=CSV_COLUMN_NAMES)


def named_pairs(leaderboard: pd.DataFrame, retention: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """``retention["pairs_kept_probability"]`` with the two models of each adjacent pair named.

    The probabilities follow the original order of the certified models (best first, ties in name
    order), which is the order of the leaderboard rows with a certified score.
    """
    probs = retention.get("pairs_kept_probability")
    if not isinstance(probs, list):
        return None
    rows = leaderboard[leaderboard["certified"].notna()] if "certified" in leaderboard.columns else leaderboard
    models = [str(m) for m in rows["model"]]
    if len(models) != len(probs) + 1:  # not the rows these probabilities were computed on
        return None
    orig = rows["original"].to_numpy(dtype=float)
    return [{"higher": models[k], "lower": models[k + 1], "original_gap": float(orig[k] - orig[k + 1]),
             "kept_probability": p} for k, p in enumerate(probs)]


def _retention_out(result: CertifyResult) -> dict[str, Any]:
    """retention.json's content per judge, with the adjacent pairs named."""
    out: dict[str, Any] = {}
    for name, ret in result.retention.items():
        ret = dict(ret)
        lb = result.leaderboard
        pairs = named_pairs(lb[lb["judge"] == name] if "judge" in lb.columns else lb, ret)
        if pairs is not None:
            ret["adjacent_pairs"] = pairs
        out[name] = ret
    return out


def _cert_dict(cert: Any) -> dict[str, Any]:
    return cert.to_dict()  # JSON types only (what to_json writes, NaN never: the certificate refuses it)


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
            "violated": j.violated,
            "certificate": certificate_record(j),
        }
    return {"status": result.status, "exit_code": result.exit_code, "certified": sorted(result.judges),
            "violated": result.violated, "settings": result.settings, "seed": result.seed,
            "judges": judges, "failures": result.failures, "coverage": jsonable(getattr(result, "coverage", {})),
            "judge_card": jsonable(getattr(result, "judge_card", None) or None),
            **({"human": jsonable(result.human)} if getattr(result, "human", None) else {})}


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
        # as Certificate.write writes it (indented, UTF-8), one entry per line when large (a panel of many models)
        o[f"certificate:{name}"] = _write_json(out / fname, _cert_dict(j.certificate), plain=True, ensure_ascii=False)
        model_certs += [_cert_dict(c) for c in j.model_certificates.values()]
    if model_certs:
        o["certificates"] = _write_json(out / "certificates.json", model_certs, plain=True)  # parsed JSON
    if result.judges:
        tables = [j.scores for j in result.judges.values()]
        # one judge: its table as it is (the index is not written), no concatenated copy
        scores = tables[0] if len(tables) == 1 else pd.concat(tables, ignore_index=True)
        cols = [c for c in ("judge", "model", "item_id", "original", "shrunk", "certified", "shrunk_model",
                            "certified_model", "in_batch") if c in scores.columns]
        (scores if list(scores.columns) == cols else scores[cols]).to_parquet(out / "scores.parquet", index=False)
        o["scores"] = out / "scores.parquet"
        baseline = getattr(result, "baseline", None)
        from biasbound.native import with_uncertified

        with_uncertified(leaderboard_table(result.leaderboard, baseline),
                         result.uncertified).to_csv(out / "leaderboard.csv", index=False)
        o["leaderboard"] = out / "leaderboard.csv"
        retention = _retention_out(result)
        o["retention"] = _write_json(out / "retention.json", retention if several else next(iter(retention.values())))
        if result.panel is not None:
            leaderboard_table(result.panel, baseline).to_csv(out / "panel_leaderboard.csv", index=False)
            o["panel_leaderboard"] = out / "panel_leaderboard.csv"
    o["summary"] = _write_json(out / "summary.json", _summary(result))


def _write_plots_and_report(result: CertifyResult, out: Path, s: _Settings) -> None:
    from biasbound.report.plots import (pages, plot_bias_radius, plot_frontier, plot_judge_retention, plot_ranking,
                                        plot_score_distribution, plot_sensitivity)

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
        plots[f"score_distribution{sfx}"] = plot_score_distribution(
            orig, cert, out / f"score_distribution{sfx}.png", shrunk=shr, alpha=cal.alpha, sigma=cal.sigma,
            title=f"Scores before and after certification{label}", unit="item" if j.view == "model" else "model")
        for rows, path in pages(len(j.leaderboard), out / f"ranking{sfx}.png"):  # one printed page each
            plots[path.stem] = plot_ranking(j.leaderboard, path, title=f"Leaderboard{label}", rows=rows)
        gens = j.certificate.scope.get("generators_table") if isinstance(j.certificate.scope, Mapping) else None
        scope = j.certificate.scope if isinstance(j.certificate.scope, Mapping) else {}
        rng_ = scope.get("score_range") or (0.0, 1.0)
        plots[f"sensitivity{sfx}"] = plot_sensitivity(
            gens, out / f"sensitivity{sfx}.png", used=j.sensitivity.ucb if j.sensitivity.ucb is not None else j.sensitivity.delta_star,
            max_distance=float(rng_[1]) - float(rng_[0]) if j.view == "model" else None,
            bound_used=cal.bound_used,
            title=f"Sensitivity per generator{label}")
        front = getattr(j.certificate, "frontier", None) or {}
        if front.get("points"):
            plots[f"frontier{sfx}"] = plot_frontier(
                {f"{cal.method} ({cal.bound_used})": front["points"]}, out / f"frontier{sfx}.png",
                point=(cal.sigma, cal.alpha), title=f"Feasible frontier α*(σ) and the point taken{label}")
    curves = {n: j.certificate.bias_radius["curve"] for n, j in result.judges.items()
              if getattr(j.certificate, "bias_radius", None)}
    title = "Bias radius per judge (the certificate's generators)"
    if not several and result.judges:  # one judge: its models compared (each model's own certificate)
        j = next(iter(result.judges.values()))
        per_model = {m: c.bias_radius["curve"] for m, c in j.model_certificates.items()
                     if getattr(c, "bias_radius", None)}
        if len(per_model) > 1:
            curves, title = per_model, f"Bias radius per model (judge {j.judge})"
        else:
            title = "Bias radius of the judge"
    for rows, path in pages(len(curves), out / "bias_radius.png") if curves else []:
        plots[path.stem] = plot_bias_radius(curves, path, title=title, rows=rows)
    from biasbound.report.plots import plot_rank_pairs, rank_pair_pages

    for name, c in ((getattr(result, "judge_card", None) or {}).get("judges") or {}).items():
        rk = c.get("ranks") or {}
        if len(rk.get("matrix") or []) > 1:  # the matrix covers the best rk["matrix_models"] models
            sfx = f"-{_safe_name(name)}" if several else ""
            for rows, cols, path in rank_pair_pages(len(rk["matrix"]), out / f"rank_pairs{sfx}.png"):
                plots[path.stem] = plot_rank_pairs(rk, path, title=f"Which model pairs keep their order ({name})",
                                                   rows=rows, cols=cols)
    if several:
        retained = [{"judge": n, "setting": f"{s.method}/{s.combine}", "spearman": r.get("spearman"),
                     "kendall_tau_b": r.get("kendall_tau_b"), "pearson": r.get("pearson")}
                    for n, r in result.retention.items()]
        plots["judges"] = plot_judge_retention(pd.DataFrame(retained), out / "judges.png",
                                               title="Ranking retained per judge")
        if result.panel is not None:
            for rows, path in pages(len(result.panel), out / "ranking.png"):
                plots[path.stem] = plot_ranking(result.panel, path, title="Panel leaderboard (mean of judges)", rows=rows)
    for k, p in plots.items():
        o[f"plot:{k}"] = p
    write_result_report(result, out)


def write_result_report(result: CertifyResult, out: Path, *, comparison: Mapping[str, Any] | None = None) -> Path:
    """(Re)write ``out/report.html`` from a result whose plots are already in ``result.outputs``."""
    from biasbound.report.html import write_report

    o = result.outputs
    plots = {k.split(":", 1)[1]: p for k, p in o.items() if k.startswith("plot:")}
    st = result.settings
    audit = {}
    for name, j in result.judges.items():
        if j.pooled_audit is not None:
            audit[f"pooled over models ({name})"] = j.pooled_audit.to_dict()
        audit[f"per-model verdicts ({name})"] = j.verdict_counts
    models = sorted({str(m) for j in result.judges.values() for m in j.leaderboard["model"]})
    headline = {
        "judges": ", ".join(result.judges) or "none certified",
        "models": len(models),
        "tolerance τ and failure probability δ": f"{st.get('tau')} and {st.get('delta')}",
        "neighbour generators": ", ".join(st.get("generators") or []),
        "calibration": f"{st.get('method')} (generators combined by {st.get('combine')})",
        "view": st.get("view"), "shrinkage centre": st.get("center"), "master seed": st.get("seed"),
        "judges not certified": "; ".join(f"{k}: {v}" for k, v in result.failures.items()) or "none",
    }
    model_certs = [_cert_dict(c) for j in result.judges.values() for c in j.model_certificates.values()]
    baseline = getattr(result, "baseline", None)
    from biasbound._integrity import rewrite_listed

    # a finished folder's report re-written (the demo): its manifest digest follows; a signed one is refused
    o["report"] = rewrite_listed(Path(out), "report.html", lambda: write_report(
        out, title="biasbound certificate report", summary=headline,
        leaderboard=leaderboard_table(result.leaderboard, baseline),
        certificates=[_cert_dict(j.certificate) for j in result.judges.values()],
        retention=_retention_out(result) if len(result.judges) > 1 else next(iter(_retention_out(result).values()), None),
        plots=plots, load_report=result.load_report, audit=audit or None,
        model_certificates=model_certs, comparison=comparison, baseline=baseline,
        coverage=getattr(result, "coverage", None), judge_card=getattr(result, "judge_card", None),
        human=getattr(result, "human", None),
    ))
    return o["report"]

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

from biasbound.pipeline._results import CertifyResult, _jsonable
from biasbound.pipeline._settings import _Settings


def _write_json(path: Path, obj: Any, *, plain: bool = False) -> Path:
    """Write ``obj`` as indented JSON; ``plain=True`` when it already holds JSON types only."""
    path.write_text(json.dumps(obj if plain else _jsonable(obj), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "judge"


def _cert_dict(cert: Any) -> dict[str, Any]:
    return json.loads(cert.to_json(indent=None))  # same dict; the compact form uses json's C encoder


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

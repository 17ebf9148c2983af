"""Terminal tables of the human report: agreement per judge, anchored scores per model, the anchored release."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from biasbound.human.report import _ci as report_ci
from biasbound.human.report import _f as report_f
from biasbound.human.report import agreement_cells, rule_note

__all__ = ["print_human"]

_NOTES = 8  # notes printed; the rest are in summary.json


def _f(x: Any, digits: int = 3) -> str:
    return report_f(x, digits, missing="-")


def _ci(lo: Any, hi: Any) -> str:
    return report_ci(lo, hi, missing="-")


def print_human(result: Any, console: Console) -> None:
    """Agreement, human-anchored scores and the anchored release's certificate (``certify --human-labels``)."""
    report = result.human or {}
    level = report.get("level", 0.95)
    _print_agreement(report, level, console)
    shown_scores = _print_scores(report, console)
    rel = report.get("release") or (getattr(result, "human_release", None) or {})
    if rel:
        _print_release(report, rel, level, shown_scores, console)


def _print_agreement(report: dict[str, Any], level: float, console: Console) -> None:
    """The judge–human agreement table: accuracy (or |Δ| and r for graded labels), κ, flips per generator."""
    agree = Table(title=f"Judge–human agreement ({level:.0%} intervals)", title_justify="left")
    for col in ("judge", "labelled", "accuracy", "interval", "Cohen's κ", "agree→disagree per generator"):
        agree.add_column(col)
    for judge, h in report.get("judges", {}).items():
        a = h["agreement"]
        flips = ", ".join(f"{g} {_f(v.get('agree_to_disagree'))} of {v['agreed']}" for g, v in h["flips"].items())
        acc, ci = agreement_cells(a, short=True, missing="-")
        agree.add_row(judge, str(a["n"]), acc, ci, _f(a.get("cohen_kappa")), flips or "-")
    console.print(agree)
    for judge, h in report.get("judges", {}).items():
        note = rule_note(judge, h["agreement"])
        if note:
            console.print(note, soft_wrap=True, highlight=False, markup=False)


def _print_scores(report: dict[str, Any], console: Console) -> bool:
    """The human-anchored scores table and its notes; True when it had rows."""
    scores = Table(title="Human-anchored scores (PPI++; normalised scale): judge-only, anchored, labels-only",
                   title_justify="left")
    for col in ("judge", "model", "labels", "judge-only", "anchored", "interval", "labels-only interval", "λ",
                "rank set"):
        scores.add_column(col)
    notes: list[str] = []
    for judge, h in report.get("judges", {}).items():
        for r in h["models"]:
            scores.add_row(judge, r["model"], f"{r['labels']}/{r['items']}", _f(r["judge_only"]), _f(r["anchored"]),
                           _ci(r["anchored_lo"], r["anchored_hi"]), _ci(r["classical_lo"], r["classical_hi"]),
                           _f(r["lambda"], 2), f"{r['rank_lo']}–{r['rank_hi']}")
            for key in ("small_sample", "too_few"):
                if r.get(key):
                    notes.append(f"{judge} / {r['model']}: {r[key]}")
        notes += [f"{judge}: {n}" for n in h.get("notes", [])]
    full = sum(len(h.get("fully_labelled", [])) for h in report.get("judges", {}).values())
    if full:
        console.print(f"{full} (judge, model) group(s) have every judged item labelled: their human mean is known "
                      "exactly (the labels' mean), so nothing is anchored there; the agreement above is the judge's "
                      "accuracy against the labels (to see what the judge adds to a few labels: biasbound demo --labels)",
                      soft_wrap=True, highlight=False, markup=False)
    if scores.row_count:
        console.print(scores)
    for n in notes[:_NOTES]:
        console.print(n, soft_wrap=True, highlight=False, markup=False)
    if len(notes) > _NOTES:
        console.print(f"... and {len(notes) - _NOTES} more notes (summary.json, human.json)", highlight=False)
    return bool(scores.row_count)


def _print_release(report: dict[str, Any], rel: dict[str, Any], level: float, shown_scores: bool,
                   console: Console) -> None:
    """The anchored release's certified scores and what each of its two guarantees covers, or why it is not."""
    if rel.get("certified"):
        span = float(rel["scale_span"])
        table = Table(title=f"The anchored release, certified (anchored/; leaderboard view; τ = "
                            f"{rel['tau_judge_scale']:g}, σ on the judge's normalised scale)", title_justify="left")
        for col in ("judge", "model", "anchored", "released", "α", "σ"):
            table.add_column(col)
        for judge in rel["certified"]:
            for r in report["judges"].get(judge, {}).get("models", []):
                table.add_row(judge, r["model"], _f(r["anchored"]), _f(r.get("anchored_certified")),
                              f"{rel['alpha'][judge]:.4g}", f"{rel['sigma'][judge] * span:.4g}")
        console.print(table)
        console.print(f"Two guarantees, two sources of randomness: each anchored interval covers the model's human "
                      f"mean with probability ≥ {level:.0%} over which items were labelled (a uniform random draw; "
                      f"asymptotic, PPI++), whatever the judge's errors; the certificate bounds how far a "
                      f"perturbation of the judge's answers (its neighbours) moves the released anchored scores, "
                      f"over the mechanism's noise and the judge's answers, given the labelled items and λ "
                      f"(docs/proofs/human_anchored.md).", soft_wrap=True, highlight=False, markup=False)
    elif rel.get("reason") and shown_scores:
        console.print(f"anchored release not certified: {rel['reason']}", soft_wrap=True, highlight=False,
                      markup=False)


"""The report's "Human labels" section: agreement per judge, anchored scores per model, the anchored release."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["agreement_cells", "human_view", "rule_note"]


def _f(x: Any, digits: int = 3, missing: str = "—") -> str:
    return missing if x is None else f"{float(x):.{digits}f}"


def _ci(lo: Any, hi: Any, missing: str = "—") -> str:
    return missing if lo is None or hi is None else f"[{float(lo):.3f}, {float(hi):.3f}]"


def agreement_cells(a: Mapping[str, Any], *, short: bool = False, missing: str = "—") -> tuple[str, str]:
    """(figure, interval) of one judge's agreement: accuracy and its interval for categorical labels, the mean
    |Δ| and Pearson's r for graded ones (``short``: the terminal's labels)."""
    if a.get("kind") == "graded":
        mad, r = _f(a.get("mean_abs_difference"), missing=missing), _f(a.get("pearson"), missing=missing)
        return (f"|Δ| {mad}", f"r {r}") if short else (f"mean |Δ| {mad}", f"Pearson r {r}")
    return _f(a.get("accuracy"), missing=missing), _ci(a.get("accuracy_lo"), a.get("accuracy_hi"), missing=missing)


def rule_note(judge: str, a: Mapping[str, Any]) -> str | None:
    """One sentence when a graded judge was read by side against labels at the scale's two ends; else None."""
    if a.get("rule") != "side of the midpoint":
        return None
    return (f"{judge}: the labels say only which side is better (0 or 1) while the judge grades in between, so a verdict "
            f"agrees when it lies on the label's side of 0.5; its {a.get('ties', 0)} tie(s) at 0.5 count as disagreeing.")


def _confusion(a: Mapping[str, Any]) -> str:
    """``human 0: 40 | 11; human 1: 7 | 42`` (rows: the human's label; columns: the judge's, in category order)."""
    table = (a.get("confusion") or {}).get("counts")
    if not table:
        return "—"
    cats = a.get("categories") or list(range(len(table)))
    return "; ".join(f"human {float(c):g}: " + " | ".join(str(v) for v in row) for c, row in zip(cats, table))


def human_view(report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Headers and rows of the three tables and the notes (``human.json`` in, plain strings out); None without labels."""
    if not report or not report.get("judges"):
        return None
    level = float(report.get("level", 0.95))
    agree_rows, score_rows, notes = [], [], []
    for judge, h in report["judges"].items():
        a = h["agreement"]
        flips = "; ".join(f"{g}: {_f(v.get('agree_to_disagree'))} of {v['agreed']}" for g, v in h["flips"].items())
        acc, ci = agreement_cells(a)
        agree_rows.append([judge, str(a["n"]), acc, ci, _f(a.get("cohen_kappa")), _f(h.get("krippendorff_alpha")),
                           _confusion(a), flips or "—"])
        for r in h["models"]:
            score_rows.append([judge, r["model"], f"{r['labels']} of {r['items']}", _f(r["judge_only"]),
                               _f(r["anchored"]), _ci(r["anchored_lo"], r["anchored_hi"]),
                               _ci(r["classical_lo"], r["classical_hi"]), _f(r["lambda"], 2),
                               f"{r['rank_lo']}–{r['rank_hi']}", _f(r.get("anchored_certified"))])
            notes += [f"{judge} / {r['model']}: {r[k]}" for k in ("small_sample", "too_few") if r.get(k)]
        notes += [f"{judge}: {n}" for n in h.get("notes", [])]
        notes += [n for n in [rule_note(judge, a)] if n]
    full = sum(len(h.get("fully_labelled", [])) for h in report["judges"].values())
    if full:
        notes.insert(0, f"{full} (judge, model) group(s) have every judged item labelled: their human mean is known "
                        "exactly, so nothing is anchored there.")
    rel = report.get("release") or {}
    if rel.get("certified"):
        release = (f"The anchored scores are certified in anchored/ (leaderboard view, τ = {rel['tau_judge_scale']:g} on "
                   f"the judge's normalised scale, the judge's generators, δ and seed; noise σ = "
                   + ", ".join(f"{j} {rel['sigma'][j] * rel['scale_span']:.4g}" for j in rel["certified"])
                   + "). Each interval covers the model's human mean with probability ≥ "
                   f"{level:.0%} over which items were labelled (a uniform random draw), whatever the judge's errors; "
                   "the certificate bounds how far a perturbation of the judge moves the released anchored score, over "
                   "the noise and the judge's answers, given the labelled items and λ (docs/proofs/human_anchored.md).")
    else:
        release = f"The anchored release is not certified: {rel.get('reason', 'no anchored score')}."
    return {
        "level": f"{level:.0%}",
        "agree_headers": ["judge", "labelled", "accuracy", "interval", "Cohen's κ", "Krippendorff's α",
                          "confusion (human → judge counts)", "agreeing verdicts a neighbour turns disagreeing"],
        "agree_rows": agree_rows,
        "score_headers": ["judge", "model", "labels", "judge-only", "anchored (PPI++)", "interval", "labels-only interval",
                          "λ", "rank set", "released (certified)"],
        "score_rows": score_rows,
        "notes": notes[:40] + ([f"… and {len(notes) - 40} more in human.json"] if len(notes) > 40 else []),
        "release": release,
    }

"""``biasbound plan --labels W``: the human labels a ±W interval needs per model, from a pilot (biasbound.human.budget)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["plan_labels"]


def plan_labels(pilot: Path | None, *, demo: bool, half_width: float | None, human_labels: Path | None, level: float,
                seed: int, as_json: bool, out: Path | None) -> None:
    """``biasbound plan --labels W``: the label budget per model from a pilot (or the embedded LLMBar labels)."""
    import json

    from biasbound._exceptions import InputError
    from biasbound.human._certify import load_labels
    from biasbound.human.budget import label_budget
    from biasbound.parameters import validate
    from biasbound.pipeline._coverage import score_scales

    if half_width is None:
        raise InputError("The '--human-labels' option of plan needs '--labels W' (the interval's half-width).")
    if not 0.0 < float(half_width) < 1.0:
        raise InputError(f"The '--labels' option of plan must be a float in (0, 1). Got {half_width!r} instead.")
    level = validate("plan", human_level=level)["human_level"]
    if (pilot is None) == (not demo):
        raise InputError("The plan command needs a pilot (judgments) or '--demo' (one of the two). Got "
                         + ("both." if demo else "neither."))
    if pilot is None:  # with --demo: the embedded LLMBar pilot
        from biasbound.data.embedded import load_llmbar_demo

        loaded, labels_frame = load_llmbar_demo(seed=seed)
        frame, report, given = loaded.frame, None, labels_frame  # no report: the scores are on [0, 1] as given
        source = "the embedded LLMBar judgments with a pilot of 50 gold labels"
    else:
        from biasbound.data.loading import load_inputs

        loaded_inputs = load_inputs([pilot])
        frame, report, given = loaded_inputs.frame, loaded_inputs.report, human_labels
        source = str(pilot)
    labels = load_labels(given, frame, score_scales(frame, report))
    if labels is None:
        raise InputError(f"The pilot {source} holds no human label: pass '--human-labels FILE' (item_id, label).")
    rows = label_budget(frame, labels, half_width=float(half_width), level=level)
    doc = {"pilot": source, "half_width": float(half_width), "level": level, "models": rows}
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps(doc, indent=2, allow_nan=False))
        return
    console = Console()
    table = Table(title=f"Human labels for a ±{float(half_width):g} interval at {level:.0%} (from {source})",
                  title_justify="left")
    for col in ("judge", "model", "pilot labels", "items", "PPI++ labels", "labels-only", "saved"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(r["judge"], r["model"], str(r["pilot_labels"]), str(r["items"]), _n(r.get("labels_ppi")),
                      _n(r.get("labels_classical")), _n(r.get("saved")))
    console.print(table)
    console.print("A pilot estimate (its variances and the judge–human covariance), not a guarantee: the labels must be "
                  "a uniform random draw of the items; check the interval once they are in. A budget equal to the "
                  "items is a census (the labels alone give the mean).", soft_wrap=True, highlight=False, markup=False)


def _n(x: Any) -> str:
    return "-" if x is None else f"{int(x):,}"

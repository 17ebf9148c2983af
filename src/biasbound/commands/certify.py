"""`biasbound certify INPUT... --out DIR`: certify existing judge runs (loaders → pipeline.certify).

Inputs are detected by content: a folder is an Arena-Hard-Auto ``model_judgment`` folder; a
``.jsonl``/``.json`` file whose first record has ``games`` is an Arena-Hard judgment file; a
CSV whose header has ``winner_orig_order`` is LLMBar's both-order table; anything else
(CSV, TSV, JSONL, Parquet, optionally gzipped) is a generic long table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import BiasboundError, InputError
from biasbound.data._io import open_text

__all__ = ["LoadedInputs", "load_inputs", "parse_beta", "parse_scale", "print_summary", "register"]


@dataclass
class LoadedInputs:
    """Several loaded inputs concatenated: ``frame`` and a ``report`` dict keyed by input path."""

    frame: pd.DataFrame
    report: dict[str, Any] = field(default_factory=dict)


def _first_line(path: Path) -> str:
    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def _kind(path: Path) -> str:
    if path.is_dir():
        return "arena-hard"
    name = path.name.lower()
    base = name[:-3] if name.endswith(".gz") else name
    if base.endswith((".jsonl", ".json")):
        try:
            rec = json.loads(_first_line(path))
        except json.JSONDecodeError:
            return "table"
        return "arena-hard" if isinstance(rec, dict) and "games" in rec else "table"
    if base.endswith(".csv"):
        return "llmbar" if "winner_orig_order" in _first_line(path) else "table"
    return "table"


def load_inputs(
    paths: Sequence[str | Path], *, scale: tuple[float, float] | None = None, skip_bad: bool = False
) -> LoadedInputs:
    """Load and concatenate judgment inputs, detecting each one's format.

    Parameters
    ----------
    paths:
        Arena-Hard folders or files, LLMBar CSVs, or generic long tables.
    scale:
        Raw score scale of generic tables (inferred when None).
    skip_bad:
        Skip (and count) bad lines instead of raising.

    Returns
    -------
    LoadedInputs
    """
    from biasbound.data.arena_hard import load_arena_hard
    from biasbound.data.tables import load_llmbar, load_table

    if not paths:
        raise InputError("The 'INPUT' argument of certify must name at least one file or folder. Got none.")
    frames, report = [], {}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"The 'INPUT' argument of certify names {str(p)!r}, which does not exist.")
        kind = _kind(p)
        if kind == "arena-hard":
            js = load_arena_hard(p, skip_bad=skip_bad)
        elif kind == "llmbar":
            js = load_llmbar(p, skip_bad=skip_bad)
        else:
            js = load_table(p, scale=scale, skip_bad=skip_bad)
        frames.append(js.frame)
        rep = js.report.to_dict() if hasattr(js.report, "to_dict") else dict(js.report)
        rep["format"] = kind
        report[str(p)] = rep
    return LoadedInputs(frame=pd.concat(frames, ignore_index=True), report=report)


def parse_beta(text: str | None) -> float | None:
    """``"none"`` → None (point estimate, as the paper); otherwise a float."""
    if text is None or str(text).strip().lower() in ("none", "off", ""):
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"The '--beta' option of certify must be a float in (0, 1) or 'none'. Got {text!r} instead.") from None


def parse_scale(text: str | None) -> tuple[float, float] | None:
    """``"1,10"`` → (1.0, 10.0)."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts)
    except ValueError:
        raise InputError(f"The '--scale' option of certify must be 'lo,hi' with lo < hi. Got {text!r} instead.") from None
    if not lo < hi:
        raise InputError(f"The '--scale' option of certify must be 'lo,hi' with lo < hi. Got {text!r} instead.")
    return lo, hi


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


def print_summary(result: Any, console: Console | None = None, *, top: int = 10) -> None:
    """Print the certificate's key numbers, the audit and the top of the leaderboard."""
    console = console or Console()
    for name, j in result.judges.items():
        cal = j.calibration
        t = Table(title=f"Certificate — judge {name} ({j.view} view)", show_header=False)
        t.add_column("", style="bold")
        t.add_column("")
        t.add_row("τ, δ", f"{_f(cal.tau)}, {_f(cal.delta)}  (δ_B = {_f(cal.delta_B)}, δ_Δ = {_f(cal.delta_Delta)})")
        t.add_row("method / bound", f"{cal.method} / {cal.bound_used} ({cal.radius})")
        t.add_row("sensitivity Δ* (UCB)", f"{_f(j.sensitivity.delta_star)} ({_f(j.sensitivity.ucb)})")
        t.add_row("α (spread kept) / α_max", f"{_f(cal.alpha)} / {_f(cal.alpha_max)}")
        t.add_row("σ / σ_max", f"{_f(cal.sigma)} / {_f(cal.sigma_max)}")
        t.add_row("dim", str(cal.dim))
        r = j.retention
        t.add_row("Spearman / Kendall τ_b", f"{_f(r.get('spearman'))} / {_f(r.get('kendall_tau_b'))}")
        pa = j.pooled_audit
        if pa is not None:
            color = {"holds": "green", "violated": "red"}.get(pa.verdict, "yellow")
            t.add_row("audit (pooled)", f"[{color}]{pa.verdict}[/] — P(exceed) ≈ {_f(pa.exact_probability)}, "
                      f"UCB {_f(pa.exact_ucb)} at {_f(pa.confidence)} on {pa.n_neighbors} held-out neighbours")
        else:
            t.add_row("audit (pooled)", "not run (no held-out neighbours)")
        counts = ", ".join(f"{k} {v}" for k, v in j.verdict_counts.items() if v)
        t.add_row("audit per model", counts or "—")
        console.print(t)
        lb = j.leaderboard.head(top)
        t2 = Table(title=f"Top {len(lb)} of {len(j.leaderboard)} — judge {name}")
        for c in ("rank", "model", "original [95% CI]", "certified [95% CI]", "rank after"):
            t2.add_column(c)
        for row in lb.itertuples():
            t2.add_row(str(int(row.rank_original)), str(row.model),
                       f"{_f(row.original, 3)} [{_f(row.original_lo, 3)}, {_f(row.original_hi, 3)}]",
                       f"{_f(row.certified, 3)} [{_f(row.certified_lo, 3)}, {_f(row.certified_hi, 3)}]",
                       str(int(row.rank_certified)))
        console.print(t2)
    for name, why in result.failures.items():
        console.print(f"[bold red]judge {name} not certified:[/] {why}", soft_wrap=True)
    if result.outputs:
        first = next(iter(result.outputs.values()))
        console.print(f"Outputs written to {Path(first).parent}", soft_wrap=True, highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``certify`` command to ``app``."""

    @app.command("certify")
    def certify_command(
        inputs: list[Path] = typer.Argument(..., help="Arena-Hard judgment files/folders, LLMBar CSVs or long tables."),
        out: Path = typer.Option(..., "--out", help="Output folder."),
        tau: float = typer.Option(0.5, "--tau", help="Tolerance τ > 0 on ||M(D) − M(D')||."),
        delta: float = typer.Option(0.01, "--delta", help="Failure probability δ in (0, 1)."),
        neighbors: str = typer.Option("swap", "--neighbors", help="Generators: swap, rerun, variant:NAME (comma-separated)."),
        method: str = typer.Option("tight", "--method", help="Calibration: tight or paper."),
        combine: str = typer.Option("max", "--combine", help="Combination over generators: max or rms."),
        alpha: float | None = typer.Option(None, "--alpha", help="Shrinkage α in (0, 1]; chosen when omitted."),
        beta: str = typer.Option("0.05", "--beta", help="Confidence of the sensitivity bound, or 'none' (point estimate)."),
        holdout: float = typer.Option(0.3, "--holdout", help="Share of neighbours held out for the audit."),
        center: str = typer.Option("fixed:0.5", "--center", help="fixed:X, ema:X, holdout or batch."),
        view: str = typer.Option("model", "--view", help="model (per-item scores) or leaderboard (model means)."),
        seed: int = typer.Option(0, "--seed", help="Master seed (recorded)."),
        scale: str | None = typer.Option(None, "--scale", help="Raw score scale lo,hi of generic tables."),
        jitter_adjust: bool = typer.Option(False, "--jitter-adjust", help="Fold rerun jitter out of the other generators."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and count bad lines instead of stopping."),
        bootstrap_rounds: int = typer.Option(1000, "--bootstrap-rounds", help="Item-bootstrap rounds for CIs."),
        no_plots: bool = typer.Option(False, "--no-plots", help="Skip plots and report.html."),
    ) -> None:
        """Certify judge scores: measure sensitivity on observed neighbours, shrink, add calibrated noise, audit."""
        from biasbound.pipeline import certify
        from biasbound.pipeline._settings import check_settings

        raw_scale = parse_scale(scale)
        beta_value = parse_beta(beta)
        # certify's own parameter checks, run before any input is read: a bad option fails at once
        check_settings(tau=tau, delta=delta, neighbors=neighbors, method=method, combine=combine, alpha=alpha,
                       beta=beta_value, holdout=holdout, seed=seed, view=view, center=center,
                       jitter_adjust=jitter_adjust, bootstrap_rounds=bootstrap_rounds)
        loaded = load_inputs(inputs, scale=raw_scale, skip_bad=skip_bad)
        console = Console()
        try:
            result = certify(
                loaded, tau=tau, delta=delta, neighbors=neighbors, method=method, combine=combine, alpha=alpha,
                beta=beta_value, holdout=holdout, seed=seed, view=view, center=center,
                jitter_adjust=jitter_adjust, bootstrap_rounds=bootstrap_rounds, out=out, plots=not no_plots,
            )
        except BiasboundError as exc:  # print what was certified before the error propagates
            partial = getattr(exc, "partial_result", None)
            if partial is not None and partial.judges:
                print_summary(partial, console)
            raise
        print_summary(result, console)

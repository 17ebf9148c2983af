"""`biasbound schematic`: schematic adherence (R², S_sch) of a judge's factor and overall scores."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import InputError
from biasbound.parameters import validate_params

__all__ = ["register", "schematic"]


@validate_params
def schematic(
    file: Path = typer.Argument(..., help="CSV or JSONL file with one judged item per row."),
    factors: str = typer.Option(..., "--factors", help="Comma-separated factor columns (dotted paths for JSONL)."),
    overall: str = typer.Option(..., "--overall", help="Overall-score column."),
    mode: str = typer.Option("paper", "--mode", help="'paper' (in-sample R²) or 'cv' (cross-validated R²)."),
    folds: int = typer.Option(5, "--folds", help="Folds for --mode cv."),
    seed: int = typer.Option(0, "--seed", help="Seed of the fold shuffle for --mode cv."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Schematic adherence: R² of the overall score on the factor scores and S_sch = sqrt(1 - R²)."""
    from biasbound.data.factors import load_factor_table
    from biasbound.schematic import schematic_adherence

    names = [f.strip() for f in factors.split(",") if f.strip()]
    if not names:
        raise InputError(f"The '--factors' option of schematic must name at least one column. Got {factors!r} instead.")
    x, y, n_missing = load_factor_table(file, factors=names, overall=overall)
    result = schematic_adherence(x, y, mode=mode, folds=folds, rng=seed)
    result = dataclasses.replace(result, n_dropped=result.n_dropped + n_missing)
    if as_json:
        payload = {"file": str(file), "factors": names, "overall": overall, **result.to_dict()}
        typer.echo(json.dumps(payload, indent=2))
        return
    table = Table(title=f"Schematic adherence ({result.mode} mode): {file}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    table.add_row("R² linear", f"{result.r2_linear:.4f}")
    table.add_row("R² polynomial (degree 2)", f"{result.r2_poly:.4f}")
    table.add_row("R² schematic = max", f"{result.r2:.4f}")
    table.add_row("S_sch = sqrt(1 - R²)", f"{result.s_sch:.4f}")
    table.add_row("rows used", str(result.n_used))
    table.add_row("rows dropped (missing)", str(result.n_dropped))
    if result.mode == "cv":
        table.add_row("folds", str(result.folds))
        table.add_row("seed", str(result.seed))
    Console(soft_wrap=True).print(table)
    if result.note:
        typer.echo(f"Note: {result.note}")
    elif result.mode == "cv" and result.r2 < 0:
        typer.echo("Note: cross-validated R² is negative; S_sch uses max(0, R²).")


def register(app: typer.Typer) -> None:
    """Add the ``schematic`` command to ``app``."""
    app.command("schematic")(schematic)

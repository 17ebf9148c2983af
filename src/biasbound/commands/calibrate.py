"""`biasbound calibrate`: plan the shrinkage and noise a (tau, delta) certificate needs.

A planning tool ("what shrinkage will my judge need?"): prints alpha, alpha_max, sigma_max,
sigma, the bound used, the delta split and feasibility.  Infeasible requests raise
:class:`biasbound.InfeasibleCertificateError`, which ``biasbound.cli.main`` prints as one red
sentence naming ``alpha_max`` (exit code 2).
"""

from __future__ import annotations

import json
import math
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from biasbound._validation import check_in_range, check_int
from biasbound.abb import Calibration, calibrate

__all__ = ["register", "run"]


def run(
    *,
    sensitivity: float | None,
    dim: int,
    tau: float,
    delta: float,
    alpha: float | None = None,
    method: str = "tight",
    score_range: float | None = None,
    hamming: int | None = None,
    beta: float | None = None,
    sensitivity_ucb: float | None = None,
    delta_b: float | None = None,
    tau_split: float = 0.5,
) -> Calibration:
    """Calibrate from CLI options; ``score_range * sqrt(hamming)`` becomes ``max_distance``.

    Parameters mirror :func:`biasbound.abb.calibrate`; ``score_range``/``hamming`` describe
    Hamming-k neighbours on a score range R, whose distance is at most ``R sqrt(k)`` almost surely.
    """
    max_distance = None
    if score_range is not None or hamming is not None:
        r = check_in_range(1.0 if score_range is None else score_range, "range", "calibrate", low=0.0, low_open=True)
        k = check_int(1 if hamming is None else hamming, "hamming", "calibrate", low=1)
        max_distance = r * math.sqrt(k)
        max_distance = math.nextafter(max_distance * (1 + 2**-50), math.inf)  # a.s. bound, rounded up
    return calibrate(
        tau=tau, delta=delta, dim=dim, sensitivity=sensitivity, sensitivity_ucb=sensitivity_ucb, beta=beta,
        max_distance=max_distance, alpha=alpha, tau_split=tau_split, delta_B=delta_b, method=method,
    )


def _summary(cal: Calibration) -> dict[str, object]:
    return {
        "feasible": True,
        "method": cal.method,
        "tau": cal.tau,
        "delta": cal.delta,
        "delta_B": cal.delta_B,
        "delta_Delta": cal.delta_Delta,
        "dim": cal.dim,
        "alpha": cal.alpha,
        "alpha_max": cal.alpha_max,
        "sigma_max": cal.sigma_max,
        "sigma": cal.sigma,
        "bound_used": cal.bound_used,
        "radius": cal.radius,
        "sensitivity": cal.sensitivity,
        "sensitivity_term": cal.sensitivity_term,
        "beta": cal.beta,
        "candidates": [
            {k: c.get(k) for k in ("name", "available", "reason", "alpha", "alpha_max", "sigma_max", "delta_B", "delta_Delta")}
            for c in cal.candidates
        ],
    }


def _print_table(cal: Calibration) -> None:
    console = Console()
    table = Table(title=f"A-BB calibration ({cal.method}): tau={cal.tau:g}, delta={cal.delta:g}, d={cal.dim}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    rows = [
        ("feasible", "yes"),
        ("alpha (shrinkage L)", f"{cal.alpha:.6g}"),
        ("alpha_max", f"{cal.alpha_max:.6g}"),
        ("sigma_max", f"{cal.sigma_max:.6g}"),
        ("sigma", f"{cal.sigma:.6g}"),
        ("bound used", cal.bound_used),
        ("noise radius", cal.radius),
        ("delta_B / delta_Delta", f"{cal.delta_B:.4g} / {cal.delta_Delta:.4g}"),
        ("sensitivity used", f"{cal.sensitivity:.6g}"),
        ("sensitivity term a", f"{cal.sensitivity_term:.6g}"),
        ("confidence", "—" if cal.beta is None else f"{1 - cal.beta:.4g} over the neighbour sample"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    cand = Table(title="bounds tried")
    for col in ("bound", "available", "alpha", "sigma_max", "note"):
        cand.add_column(col)
    for c in cal.candidates:
        cand.add_row(
            str(c["name"]) + (" *" if c.get("selected") else ""),
            "yes" if c["available"] else "no",
            "—" if c.get("alpha") is None else f"{c['alpha']:.4g}",
            "—" if c.get("sigma_max") is None else f"{c['sigma_max']:.4g}",
            c.get("reason") or "",
        )
    console.print(cand)


def register(app: typer.Typer) -> None:
    """Add the ``calibrate`` command to ``app``."""

    @app.command("calibrate")
    def calibrate_cmd(
        tau: float = typer.Option(..., "--tau", help="Tolerance tau > 0 on ||M(D) - M(D')||_2."),
        delta: float = typer.Option(..., "--delta", help="Failure probability in (0, 1)."),
        dim: int = typer.Option(..., "--dim", help="Number of scores d (judged items)."),
        sensitivity: Optional[float] = typer.Option(None, "--sensitivity", help="RMS sensitivity Delta* (point estimate)."),
        sensitivity_ucb: Optional[float] = typer.Option(
            None, "--sensitivity-ucb", help="Upper (1 - beta) confidence bound on Delta* (needs --beta)."),
        alpha: Optional[float] = typer.Option(None, "--alpha", help="Shrinkage in (0, 1]; chosen when omitted."),
        method: str = typer.Option("tight", "--method", help="'tight' (default) or 'paper' (Algorithm 1 exactly)."),
        score_range: Optional[float] = typer.Option(None, "--range", help="Score range R: max distance R*sqrt(hamming)."),
        hamming: Optional[int] = typer.Option(None, "--hamming", help="Items changed per neighbour (Hamming k)."),
        beta: Optional[float] = typer.Option(None, "--beta", help="Confidence parameter of --sensitivity-ucb."),
        delta_b: Optional[float] = typer.Option(None, "--delta-b", help="Noise share delta_B in (0, delta); no search."),
        tau_split: float = typer.Option(0.5, "--tau-split", help="Share of tau for the sensitivity term when alpha is chosen."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    ) -> None:
        """Plan a (tau, delta) certificate: the shrinkage alpha and noise sigma your judge needs."""
        cal = run(sensitivity=sensitivity, dim=dim, tau=tau, delta=delta, alpha=alpha, method=method,
                  score_range=score_range, hamming=hamming, beta=beta, sensitivity_ucb=sensitivity_ucb,
                  delta_b=delta_b, tau_split=tau_split)
        if as_json:
            typer.echo(json.dumps(_summary(cal), indent=2, allow_nan=False))
        else:
            _print_table(cal)

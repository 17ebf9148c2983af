"""`biasbound calibrate`: plan the shrinkage and noise a (tau, delta) certificate needs, from what you know.

What you know about how far a neighbour moves the scores becomes knowledge records
(:mod:`biasbound.bounds`): ``--range R --hamming k`` is the almost-sure bound ``||Delta|| <= R sqrt(k)``;
``--sensitivity U`` a measured RMS sensitivity (a point estimate, as in the paper's Algorithm 1);
``--sensitivity-ucb U --beta b`` an upper confidence bound on it.  ``tight`` takes the best exact bound for
that knowledge, ``paper`` is Corollary 3.2 exactly.  Prints the point, the bound used, every candidate, the
frontier alpha*(sigma), whether the plan follows from the score range alone, and the statement on the
original scale.  Infeasible requests raise :class:`biasbound.InfeasibleCertificateError`, which
``biasbound.cli.main`` prints as one sentence naming ``alpha_max`` (exit code 2).
"""

from __future__ import annotations

import json
import math
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import InputError
from biasbound._rounding import above
from biasbound._validation import check_in_range, check_int, check_param

__all__ = ["register", "run", "summary"]


def run(
    *,
    sensitivity: float | None,
    dim: int,
    tau: float,
    delta: float,
    alpha: float | None = None,
    sigma: float | None = None,
    method: str = "tight",
    score_range: float | None = None,
    hamming: int | None = None,
    beta: float | None = None,
    sensitivity_ucb: float | None = None,
    tau_split: float = 0.5,
    frontier_points: int = 9,
) -> Any:
    """Build the knowledge from CLI options and calibrate (:func:`biasbound.calibration.calibrate`).

    ``score_range * sqrt(hamming)`` (rounded up) becomes an almost-sure bound; a sensitivity becomes a moment
    bound (with that range when given).
    """
    from biasbound.bounds import AlmostSure, Moments
    from biasbound.calibration import calibrate

    where = "calibrate"
    tau = check_param(tau, "tau", where, label="--tau")
    delta = check_param(delta, "delta", where, label="--delta")
    dim = check_param(dim, "dim", where, label="--dim")
    if sensitivity is not None:
        sensitivity = check_param(sensitivity, "sensitivity", where, label="--sensitivity")
    if alpha is not None:
        alpha = check_param(alpha, "alpha", where, label="--alpha")
    if beta is not None:
        beta = check_param(beta, "beta", where, label="--beta")
    A = None
    if score_range is not None or hamming is not None:
        r = check_in_range(1.0 if score_range is None else score_range, "--range", where, low=0.0, low_open=True)
        k = check_int(1 if hamming is None else hamming, "--hamming", where, low=1)
        largest = r * math.sqrt(k)
        # an RMS of distances can never exceed the largest distance: a larger --sensitivity is a typo or a
        # sensitivity measured on another scale; it is refused, never clipped to the range
        if sensitivity is not None and sensitivity > largest:
            raise InputError(
                f"The '--sensitivity' option of calibrate must be at most the largest neighbour distance "
                f"--range x sqrt(--hamming) = {largest:g} (an RMS distance cannot exceed it). Got {sensitivity:g} instead."
            )
        A = above(largest * (1 + 2**-50))  # a.s. bound, rounded up
    records: list[Any] = []
    if sensitivity_ucb is not None:
        if beta is None:
            raise InputError(f"The 'beta' parameter of {where} must be given in (0, 1) with --sensitivity-ucb. Got None instead.")
        u = check_in_range(sensitivity_ucb, "sensitivity_ucb", where, low=0.0)
        b = check_in_range(beta, "beta", where, low=0.0, high=1.0, low_open=True, high_open=True)
        records.append(Moments(min(u * u, A * A) if A is not None else u * u, beta=b, A=A, note="RMS sensitivity UCB"))
    elif sensitivity is not None:
        s = check_in_range(sensitivity, "sensitivity", where, low=0.0)
        records.append(Moments(min(s * s, A * A) if A is not None else s * s, beta=None, A=A,
                               note="measured RMS sensitivity (point estimate)"))
    if A is not None and method == "tight":
        records.append(AlmostSure(A, note=f"score range {score_range or 1:g}, Hamming-{hamming or 1}"))
    if not records:
        raise InputError(f"The {where} options must give --sensitivity, --sensitivity-ucb or --range. Got none of them.")
    return calibrate({"T": records}, tau=tau, delta=delta, dim=dim, alpha=alpha, sigma=sigma, method=method,
                     tau_split=tau_split, frontier_points=frontier_points), A


def summary(cal: Any, A: float | None) -> dict[str, object]:
    """JSON-ready plan: the point, the bound, candidates, frontier, range_implied, original scale."""
    from biasbound.figures import original_scale, range_implied

    out: dict[str, object] = {
        "feasible": True, "method": cal.method, "tau": cal.tau, "delta": cal.delta, "dim": cal.dim,
        "alpha": cal.alpha, "sigma": cal.sigma, "sigma_max": cal.sigma_max, "alpha_max": cal.alpha_max,
        "alpha_at_sigma": cal.alpha_at_sigma, "bound_used": cal.bound_used, "bound_value": cal.bound_value,
        "exact": cal.exact, "beta": cal.beta, "point_estimate": cal.point_estimate, "default_rule": cal.default_rule,
        "knowledge": cal.knowledge.to_dict(), "candidates": [dict(c) for c in cal.candidates],
        "frontier": [dict(p) for p in cal.frontier],
        "range_implied": None if A is None else range_implied(tau=cal.tau, delta=cal.delta, alpha=cal.alpha,
                                                              sigma=cal.sigma, dim=cal.dim, A=A),
        "original_scale": original_scale(tau=cal.tau, alpha=cal.alpha, sigma=cal.sigma),
    }
    if cal.paper_split is not None:
        leg = cal.paper_split
        out["paper"] = {"delta_B": leg.delta_B, "delta_Delta": leg.delta_Delta, "radius": leg.radius,
                        "sensitivity": leg.sensitivity, "sensitivity_term": leg.sensitivity_term}
    return out


def _print_table(cal: Any, A: float | None) -> None:
    s = summary(cal, A)
    console = Console()
    table = Table(title=f"A-BB calibration ({cal.method}): tau={cal.tau:g}, delta={cal.delta:g}, d={cal.dim}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    os_ = s["original_scale"]
    rows = [
        ("alpha (shrinkage)", f"{cal.alpha:.6g}"),
        ("sigma (noise)", f"{cal.sigma:.6g}"),
        ("sigma_max at this alpha", f"{cal.sigma_max:.6g}"),
        ("alpha_max", f"{cal.alpha_max:.6g}"),
        ("alpha*(sigma)", f"{cal.alpha_at_sigma:.6g}"),
        ("bound used", f"{cal.bound_used} ({'the violation probability itself' if cal.exact else 'an upper bound: the worst case over what is known'})"),
        ("bound value (<= delta)", f"{cal.bound_value:.4g}"),
        ("confidence", "—" if cal.beta is None else f"{1 - cal.beta:.4g} over the neighbour sample"),
        ("range_implied", "—" if s["range_implied"] is None else
         ("yes: holds for ANY judge on this range" if s["range_implied"] else "no")),
        ("original scale", f"tau/alpha = {os_['tau']:.4g}, sigma/alpha = {os_['sigma']:.4g}"),  # type: ignore[index]
        ("point chosen", cal.default_rule),
    ]
    if cal.paper_split is not None:
        rows.append(("delta_B / delta_Delta", f"{cal.paper_split.delta_B:.4g} / {cal.paper_split.delta_Delta:.4g}"))
    for k, v in rows:
        table.add_row(k, v)
    console.print(table)
    cand = Table(title="bounds that apply (* = used); the others need knowledge not given (see --json)")
    for col in ("bound", "knowledge", "value at the point", "exact"):
        cand.add_column(col)
    for c in cal.candidates:
        if c["applicable"]:
            cand.add_row(str(c["unit"]) + (" *" if c.get("selected") else ""), str(c["knowledge"]),
                         f"{c['value']:.4g}", "yes" if c["exact"] else "no")
    console.print(cand)
    fr = Table(title="frontier alpha*(sigma)")
    fr.add_column("sigma", justify="right")
    fr.add_column("alpha*", justify="right")
    for p in cal.frontier:
        fr.add_row(f"{p['sigma']:.5g}", f"{p['alpha']:.5g}")
    console.print(fr)


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
        alpha: Optional[float] = typer.Option(None, "--alpha", help="Shrinkage in (0, 1]; then sigma is the largest that works."),
        sigma: Optional[float] = typer.Option(None, "--sigma", help="Noise >= 0; then alpha is the largest that works."),
        method: str = typer.Option("tight", "--method", help="'tight' (default: exact bounds) or 'paper' (Cor. 3.2 exactly)."),
        score_range: Optional[float] = typer.Option(None, "--range", help="Score range R: every neighbour moves <= R*sqrt(hamming)."),
        hamming: Optional[int] = typer.Option(None, "--hamming", help="Items changed per neighbour (Hamming k)."),
        beta: Optional[float] = typer.Option(None, "--beta", help="Confidence parameter of --sensitivity-ucb."),
        tau_split: float = typer.Option(0.5, "--tau-split", help="Default point: alpha = tau_split * alpha*(0)."),
        frontier: int = typer.Option(9, "--frontier", help="Points of the frontier alpha*(sigma) to report (>= 2)."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    ) -> None:
        """Plan a (tau, delta) certificate: the shrinkage alpha and noise sigma your judge needs."""
        cal, A = run(sensitivity=sensitivity, dim=dim, tau=tau, delta=delta, alpha=alpha, sigma=sigma, method=method,
                     score_range=score_range, hamming=hamming, beta=beta, sensitivity_ucb=sensitivity_ucb,
                     tau_split=tau_split, frontier_points=frontier)
        if as_json:
            typer.echo(json.dumps(summary(cal, A), indent=2, allow_nan=False))
        else:
            _print_table(cal, A)

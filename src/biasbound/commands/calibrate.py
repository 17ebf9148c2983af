"""`biasbound calibrate`: plan the shrinkage and noise a (tau, delta) certificate needs, from what you know.

What you know about how far a neighbour moves the scores becomes knowledge records
(:mod:`biasbound.bounds`): ``--score-range R --hamming k`` is the almost-sure bound ``||Delta|| <= R sqrt(k)``
(``--hamming all``: k = d);
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
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import InputError
from biasbound._rounding import above
from biasbound.parameters import old_option, option, renamed, validate, validate_params

__all__ = ["register", "run", "summary"]


@validate_params
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
    hamming: int | str | None = None,
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
    v = validate(where, tau=tau, delta=delta, dim=dim, sensitivity=sensitivity, sensitivity_ucb=sensitivity_ucb,
                 alpha=alpha, sigma=sigma, beta=beta, method=method, score_range=score_range, tau_split=tau_split,
                 frontier_points=frontier_points)
    tau, delta, dim, sensitivity, sensitivity_ucb, alpha, beta = (v[n] for n in ("tau", "delta", "dim", "sensitivity",
                                                                                 "sensitivity_ucb", "alpha", "beta"))
    if beta == "none":
        beta = None
    A = None
    if score_range is not None or hamming is not None:
        r = 1.0 if score_range is None else v["score_range"]
        k = 1 if hamming is None else validate(where, hamming=hamming)["hamming"]
        if k == "all":  # every item changed: k = d
            k = dim
        largest = r * math.sqrt(k)
        # an RMS of distances can never exceed the largest distance: a larger --sensitivity is a typo or a
        # sensitivity measured on another scale; it is refused, never clipped to the range
        if sensitivity is not None and sensitivity > largest:
            raise InputError(
                f"The '--sensitivity' option of calibrate must be at most the largest neighbour distance "
                f"--score-range x sqrt(--hamming) = {largest:g} (an RMS distance cannot exceed it). Got {sensitivity:g} instead."
            )
        A = above(largest * (1 + 2**-50))  # a.s. bound, rounded up
    records: list[Any] = []
    if sensitivity_ucb is not None:
        if beta is None:
            raise InputError(f"The 'beta' parameter of {where} must be given in (0, 1) with --sensitivity-ucb. Got None instead.")
        u, b = sensitivity_ucb, beta
        records.append(Moments(min(u * u, A * A) if A is not None else u * u, beta=b, A=A, note="RMS sensitivity UCB"))
    elif sensitivity is not None:
        s = sensitivity
        records.append(Moments(min(s * s, A * A) if A is not None else s * s, beta=None, A=A,
                               note="measured RMS sensitivity (point estimate)"))
    if A is not None and method == "tight":
        records.append(AlmostSure(A, note=f"score range {score_range or 1:g}, Hamming-{hamming or 1}"))
    if not records:
        raise InputError(f"The {where} options must give --sensitivity, --sensitivity-ucb or --score-range. Got none of them.")
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
        ("bound used", f"{cal.bound_used} ("
                       f"{'the violation probability itself' if cal.exact else 'an upper bound: the worst case over what is known'})"),
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
        tau: float = option("tau", required=True),
        delta: float = option("delta", required=True),
        dim: int = option("dim", required=True),
        sensitivity: float | None = option("sensitivity"),
        sensitivity_ucb: float | None = option("sensitivity_ucb"),
        alpha: float | None = option("alpha", help="Shrinkage in (0, 1]; then sigma is the largest that works"),
        sigma: float | None = option("sigma", help="Noise >= 0; then alpha is the largest that works"),
        method: str = option("method"),
        score_range: float | None = option("score_range"),
        old_range: float | None = old_option("score_range"),
        hamming: str | None = option("hamming", None, help="Items changed per neighbour (Hamming k), or 'all' (k = "
                                        "--dim)"),
        beta: float | None = option("beta", None, help="Confidence parameter of --sensitivity-ucb, in (0, 1)"),
        tau_split: float = option("tau_split"),
        frontier_points: int = option("frontier_points"),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
    ) -> None:
        """Plan a (tau, delta) certificate: the shrinkage alpha and noise sigma your judge needs."""
        score_range = renamed(score_range, old_range, name="score_range", command="calibrate")
        if frontier_points > 1_000:  # refused with its cost, before any of it is spent
            from biasbound._exceptions import InputError

            raise InputError(f"The '--frontier' option of calibrate must be an int in [0, 1000]: each point is a root "
                             f"search of the bound (about 13 ms), so {frontier_points:,} points would take about "
                             f"{frontier_points * 0.013:,.0f} s, and a plotted frontier needs no more than 1,000 (about "
                             f"13 s). Got {frontier_points} instead.")
        cal, A = run(sensitivity=sensitivity, dim=dim, tau=tau, delta=delta, alpha=alpha, sigma=sigma, method=method,
                     score_range=score_range, hamming=hamming, beta=beta, sensitivity_ucb=sensitivity_ucb,
                     tau_split=tau_split, frontier_points=frontier_points)
        if as_json:
            typer.echo(json.dumps(summary(cal, A), indent=2, allow_nan=False))
        else:
            _print_table(cal, A)

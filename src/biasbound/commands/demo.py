"""`biasbound demo [--out DIR]`: certify the embedded Arena-Hard data in paper and tight calibration.

The embedded data (76 models × 500 questions, judge "ensemble", ko-arena-hard-auto) is
certified with position-swap neighbours at the paper's setting τ = 0.5, δ = 0.01, once with
the paper's calibration (Alg. 1 + shrinkage) and once with the tight calibration, and the
cost of each is printed side by side: spread kept (α), σ, the bound used, rank correlations
with the original leaderboard, and the audit verdict. All outputs go to ``DIR/paper`` and
``DIR/tight`` (default ``./biasbound-demo``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

__all__ = ["DEMO_SETTINGS", "register", "run_demo"]

#: The paper's setting used by the demo.
DEMO_SETTINGS: dict[str, Any] = {"tau": 0.5, "delta": 0.01, "neighbors": ("swap",), "seed": 0}


def run_demo(out: str | Path = "biasbound-demo", *, progress: bool = True, plots: bool = True) -> dict[str, Any]:
    """Certify the embedded dataset with the paper and the tight calibration.

    Parameters
    ----------
    out:
        Output folder; results go to ``out/paper`` and ``out/tight``.
    progress:
        Show progress bars.
    plots:
        Write plots and report.html.

    Returns
    -------
    dict
        ``{"paper": CertifyResult, "tight": CertifyResult}``.
    """
    from biasbound._progress import step
    from biasbound.data.embedded import DEMO_BASELINE, load_demo
    from biasbound.pipeline import certify

    with step("loading the embedded Arena-Hard judgments (76 models × 500 questions × 2 orders)", enabled=progress):
        data = load_demo()
    out = Path(out)
    return {
        method: certify(data, method=method, out=out / method, progress=progress, plots=plots,
                        baseline=DEMO_BASELINE, **DEMO_SETTINGS)
        for method in ("paper", "tight")
    }


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    return f"{float(x):.{digits}g}"


def comparison_table(results: dict[str, Any]) -> Table:
    """Side-by-side table of the paper and tight certificates."""
    table = Table(title="Embedded Arena-Hard data (76 models × 500 questions), swap neighbours, τ = 0.5, δ = 0.01")
    table.add_column("")
    for method in results:
        table.add_column(method, justify="right")
    judges = {m: next(iter(r.judges.values())) for m, r in results.items()}

    def row(label: str, fn: Any) -> None:
        table.add_row(label, *[fn(j) for j in judges.values()])

    row("spread kept α", lambda j: _fmt(j.calibration.alpha))
    row("α_max", lambda j: _fmt(j.calibration.alpha_max))
    row("σ (noise std)", lambda j: _fmt(j.calibration.sigma))
    row("bound used", lambda j: f"{j.calibration.bound_used} ({j.calibration.radius})")
    row("δ_B / δ_Δ", lambda j: f"{_fmt(j.calibration.delta_B, 3)} / {_fmt(j.calibration.delta_Delta, 3)}")
    row("sensitivity Δ* (UCB)", lambda j: f"{_fmt(j.sensitivity.delta_star)} ({_fmt(j.sensitivity.ucb)})")
    row("Spearman vs original", lambda j: _fmt(j.retention["spearman"]))
    row("Kendall τ_b vs original", lambda j: _fmt(j.retention["kendall_tau_b"]))
    row("audit (pooled)", lambda j: "—" if j.pooled_audit is None else
        f"{j.pooled_audit.verdict} (UCB {_fmt(j.pooled_audit.exact_ucb, 3)})")
    row("audit per model", lambda j: ", ".join(f"{k} {v}" for k, v in j.verdict_counts.items() if v))
    return table


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to ``app``."""

    @app.command("demo")
    def demo_command(
        out: Path = typer.Option(Path("biasbound-demo"), "--out", help="Output folder (paper/ and tight/ inside)."),
        no_plots: bool = typer.Option(False, "--no-plots", help="Skip plots and report.html."),
    ) -> None:
        """Certify the embedded Arena-Hard data in paper and tight calibration and compare them."""
        results = run_demo(out, plots=not no_plots)
        console = Console()
        console.print(comparison_table(results))
        console.print(f"Outputs written to {out / 'paper'} and {out / 'tight'}", highlight=False, soft_wrap=True)

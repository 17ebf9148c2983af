"""`biasbound run CONFIG.yaml`: judge, perturb, judge the neighbours, certify, report (see biasbound.runner).

Every certify parameter can be set in the config (biasbound.config) or on the command line
(the same options as ``biasbound certify``, from :mod:`biasbound.parameters`); an option given
overrides the config's key. The one entry point is ``biasbound`` (:mod:`biasbound.cli`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from biasbound.parameters import CERTIFY, PARAMETERS, table_options

__all__ = ["judgment_counts", "print_dry_run", "print_run_summary", "register"]

#: The help panel of the certify parameters: each replaces the config's key when given.
_PANEL = "Certify parameters (given: replace the config's key)"
#: The certify parameters a run takes: every one the config holds (the generators come from the config alone).
RUN = tuple(n for n in CERTIFY if PARAMETERS[n].config_key is not None)


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to ``app``."""

    @app.command("run")
    @table_options(RUN, given_only=True, panel=_PANEL, into="given")  # every certify parameter; None: the config's
    def run_command(
        config: Path = typer.Argument(..., help="The YAML run configuration (see biasbound.config)."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress bars."),
        retry_failed: bool = typer.Option(True, "--retry-failed/--no-retry-failed",
                                          help="Call again the judge/rewriter calls an earlier run left failed or "
                                               "missing in the cache (default), or keep them as they are."),
        budget: Path | None = typer.Option(None, "--budget", metavar="PLAN.json",
                                           help="Take the neighbours per model from a 'biasbound plan --out' file: "
                                                "the planned m of the generators this run draws (the last look of a "
                                                "sequential run)."),
        sign_key: Path | None = typer.Option(None, "--sign-key", envvar="BIASBOUND_SIGN_KEY", show_envvar=False,
                                             help="Ed25519 private key (biasbound keygen): sign the outputs manifest, "
                                                  "which lists every file the run wrote."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Render every prompt (all items, both orders) against "
                                     "the data and print one, without calling the judge; exit 2 naming each item a "
                                     "template fails on."),
        given: dict[str, Any] | None = None,
    ) -> None:
        """Judge the original context, generate and judge neighbours, then certify (resumable: re-run to resume)."""
        from biasbound.config import load_config, with_certify_options, with_plan_budget
        from biasbound.runner import run

        cfg = with_certify_options(load_config(config), **(given or {}))
        if budget is not None:
            cfg = with_plan_budget(cfg, budget)
        if dry_run:
            print_dry_run(cfg)
            return
        result = run(cfg, progress=not no_progress, retry_failed=retry_failed, sign_key=sign_key)
        print_run_summary(result, Console())
        if result.certification is not None and result.certification.violated:
            from biasbound.commands.certify import EXIT_VIOLATED

            raise typer.Exit(EXIT_VIOLATED)


def print_dry_run(cfg: Any, shown: int = 20) -> None:
    """``run --dry-run``: every prompt rendered, no judge called; the problems (at most ``shown`` listed) on stderr
    and exit 2 when there are any, one rendered prompt on stdout."""
    from biasbound.commands._dry_run import dry_run

    report = dry_run(cfg)
    for problem in report.problems[:shown]:
        typer.echo(f"error: {problem}", err=True)
    if len(report.problems) > shown:
        typer.echo(f"error: ... and {len(report.problems) - shown} more problems of the same templates.", err=True)
    if report.example is not None:
        typer.echo(f"One rendered prompt ({report.example_of}):")
        for m in report.example:
            typer.echo(f"--- {m['role']}\n{m['content']}")
        typer.echo("---")
    typer.echo(f"dry run: {report.rendered} prompt(s) rendered, {len(report.problems)} problem(s); no judge was called.")
    if report.problems:
        raise typer.Exit(2)


def print_run_summary(result: Any, console: Console) -> None:
    """Print a finished run: the certificate summary, the judge-call counts and where the outputs went."""
    from biasbound.commands.certify import print_summary

    if result.certification is not None:
        print_summary(result.certification, console)
    for line in call_lines(result.summary):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    console.print(f"outputs in {result.config.output}", soft_wrap=True, highlight=False, markup=False)
    judges = result.summary.get("judges") or []
    if len(judges) > 1:  # a panel: calls and cost per judge (stages are keyed '<judge>/<stage>')
        for j in judges:
            parts = [v for k, v in result.summary["stages"].items() if k.startswith(f"{j}/")]
            costs = [p["cost"] for p in parts if p.get("cost") is not None]
            cost = f"cost {sum(costs):.4g}" if costs else "cost not priced"
            n = judgment_counts(result.summary["stages"], j)
            first = f" (+ {n['preflight']} preflight requests)" if n["preflight"] else ""
            console.print(f"  judge {j}: {n['requests']} judgments requested{first}, {n['missing'] + n['failed']} "
                          f"missing or failed, {cost}", soft_wrap=True, highlight=False, markup=False)


def _is_preflight(stage: str) -> bool:
    return stage == "preflight" or stage.endswith("/preflight")


def judgment_counts(stages: dict[str, Any], judge: str | None = None) -> dict[str, int]:
    """The judgments of the run's stages (of one judge of a panel): requested, ok, missing, failed, with the
    preflight's requests apart (``preflight``): the preflight asks the first original judgments before the run,
    and the originals' stage asks them again (from the cache), so they are the same judgments, counted once."""
    parts = [(k, v) for k, v in stages.items() if k != "rewrites" and (judge is None or k.startswith(f"{judge}/"))]
    out = {key: sum(int(v.get(key, 0)) for k, v in parts if not _is_preflight(k))
           for key in ("requests", "ok", "missing", "failed")}
    out["preflight"] = sum(int(v.get("requests", 0)) for k, v in parts if _is_preflight(k))
    return out


def call_lines(summary: dict[str, Any]) -> list[str]:
    """The run's call accounting in words: requested = from the cache + shared + called over HTTP, and why any failed."""
    t = summary["totals"]
    shared, recalled = t.get("shared", 0), t.get("recalled", 0)
    lines = [
        f"judge calls: {t.get('requests', 0)} requested = {t.get('cache_hits', 0)} from the cache + {shared} shared "
        f"+ {t.get('calls', 0)} over HTTP; {t.get('attempts', 0)} HTTP attempts ({t.get('retries', 0)} retries)",
    ]
    if shared:
        lines.append(f"  shared: {shared} requests had the same messages as another of this run (e.g. the baseline "
                     "judged against itself reads the same in both orders) and took its answer")
    if recalled:
        lines.append(f"  {recalled} of the HTTP calls were made again: an earlier run had left them failed or missing")
    n = judgment_counts(summary.get("stages") or {})
    if n["preflight"]:
        lines.append(f"  preflight: {n['preflight']} of these requests, made before the run; the originals asked the "
                     "same judgments again (from the cache)")
    lines.append(f"judgments: {n['ok']} ok, {n['missing']} missing, {n['failed']} failed "
                 "(missing and failed are never scored)")
    reasons = t.get("failure_reasons") or {}
    if reasons:
        top = sorted(reasons.items(), key=lambda kv: -kv[1])
        again = ("a re-run of the same command calls them again" if summary.get("retry_failed", True)
                 else "kept as they were (--no-retry-failed)")
        lines.append(f"  why ({again}):")
        lines += [f"    {n} × {why if len(why) <= 160 else why[:157] + '...'}" for why, n in top[:6]]
        if len(top) > 6:
            lines.append(f"    ... {sum(n for _, n in top[6:])} more with {len(top) - 6} other reasons (run_summary.json)")
    rw = (summary.get("stages") or {}).get("rewrites")
    if rw:
        lines.append(f"rewriter calls: {rw.get('requests', 0)} requested = {rw.get('cache_hits', 0)} from the cache + "
                     f"{rw.get('shared', 0)} shared + {rw.get('calls', 0)} over HTTP; {rw.get('attempts', 0)} HTTP attempts")
    for who, per in (summary.get("endpoint_attempts") or {}).items():
        if len(per) > 1:
            lines.append(f"  {who}: HTTP attempts per endpoint: " + ", ".join(f"{u} {n}" for u, n in per.items()))
    from biasbound.judge.serving import serving_lines

    lines += serving_lines(summary.get("serving") or {})
    seq = summary.get("sequential")
    if seq:  # the counts above are the stopped look's; the looks before it judged prefixes of its draws
        steps = ", ".join(f"m={p['m']}: " + ("not certifiable" if p.get("alpha") is None else f"α {p['alpha']:.4f}")
                          for p in seq["per_look"])
        lines.append(f"sequential: looks {seq['looks']} declared (β/K = {seq['beta_per_look']:.4g}); {steps}; stopped at "
                     f"look {seq['stopped_at_look']} (m = {seq['m']}) by {seq.get('stopped_by', 'the rule')}; "
                     f"{seq.get('neighbour_judgments', '?')} neighbour judgments, {seq.get('calls_spent', '?')} calls over "
                     "HTTP over all looks")
    return lines

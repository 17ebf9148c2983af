"""`biasbound plan PILOT_DIR`: neighbours per model, calls, tokens and money to reach a target α (see biasbound.planning)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import typer
from rich.console import Console
from rich.table import Table

__all__ = ["print_plan", "register"]


def _parse_grid(text: str | None) -> list[int] | None:
    from biasbound._exceptions import InputError

    if text is None:
        return None
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(v < 2 for v in values):
        raise InputError(f"The '--grid' option of plan must be comma-separated integers >= 2, e.g. '10,20,40'. Got {text!r} instead.")
    return values


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""

    @app.command("plan")
    def plan_command(
        pilot: Path | None = typer.Argument(None, help="The output folder of a finished 'biasbound run' (the pilot)."),
        demo: bool = typer.Option(False, "--demo", help="Instead of a pilot: the embedded Arena-Hard set (76 models × 500 "
                                                       "questions, every swap judged), swap neighbours."),
        alpha: float | None = typer.Option(None, "--alpha", help="The α to reach, in (0, 1] (default: the pilot's largest-m α less --within)."),
        within: float | None = typer.Option(None, "--within", help="Relative shortfall allowed below the reference α, in "
                                            "[0, 1) (default 0.05); not with --alpha."),
        grid: str | None = typer.Option(None, "--grid", help="m values to try, e.g. '10,20,40' (default 5, 10, 20, ... and the pilot's m)."),
        generators: str | None = typer.Option(None, "--generators", help="Comma-separated generators to plan (default: the pilot's)."),
        seed: int = typer.Option(0, "--seed", help="Seed of the random item order given to a census generator (swap)."),
        draws: int = typer.Option(1, "--draws", help="With --demo: seeded item orders per m (α = their median; the "
                                                     "chosen m is the smallest whose every draw reaches the target)."),
        looks: str | None = typer.Option(None, "--looks", help="Predict a sequential run with these looks, e.g. '10,20,40' "
                                                              "(default: the pilot's own looks, if it was sequential)."),
        min_gain: float | None = typer.Option(None, "--min-gain", help="The sequential stop rule's relative α gain, in "
                                                                       "[0, 1] (default: the pilot's, else 0.01)."),
        bias_radius: float | None = typer.Option(None, "--bias-radius", help="Also reach a bias radius at δ at most this, "
                                                 "in (0, 1] (the judge card's radius; at 500 items and δ = 0.01 it "
                                                 "often needs a census)."),
        flip_width: float | None = typer.Option(None, "--flip-width", help="Also reach a flip-rate interval at most this "
                                                "wide, in (0, 1]."),
        labels_width: float | None = typer.Option(None, "--labels", help="Instead of neighbours: the human labels for "
                                                  "a ±W interval on each model's (normalised) score, PPI++ and labels-"
                                                  "only, from the pilot's judgments and --human-labels; W in (0, 1)."),
        human_labels: Path | None = typer.Option(None, "--human-labels", help="With --labels: the pilot's human labels "
                                                 "(item_id, label[, model]); default: the judgments' 'human' column."),
        level: float = typer.Option(0.95, "--level", help="With --labels: the interval's level, in (0, 1)."),
        as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON instead of tables."),
        out: Path | None = typer.Option(None, "--out", help="Also write the plan as JSON to this file."),
    ) -> None:
        """Plan a run from a pilot: the neighbours per model, calls, tokens and money that reach a target α, per generator."""
        from biasbound._exceptions import InputError
        from biasbound.planning import plan, plan_judgments

        if labels_width is not None or human_labels is not None:
            from biasbound.commands._plan_labels import plan_labels

            plan_labels(pilot, demo=demo, half_width=labels_width, human_labels=human_labels, level=level, seed=seed,
                        as_json=as_json, out=out)
            return
        if alpha is not None and within is not None:  # --within sets the target only when --alpha does not
            raise InputError("The '--within' option of plan sets the target as the pilot's α less that share, and "
                             f"'--alpha' sets the target itself ({alpha:g}); give one of the two.")
        within = 0.05 if within is None else within
        gens = None if generators is None else [g.strip() for g in generators.split(",") if g.strip()]
        if (pilot is None) == (not demo):
            raise InputError("The plan command needs a pilot folder or '--demo' (one of the two). Got "
                             + ("both." if demo else "neither."))
        if demo:
            from biasbound.data import load_demo

            if gens is not None:
                raise InputError("The '--generators' option of plan needs a pilot folder; '--demo' plans swap.")
            result = plan_judgments(load_demo(), neighbors=["swap"], alpha=alpha, within=within,
                                    grid=_parse_grid(grid), seed=seed, draws=draws, bias_radius=bias_radius,
                                    flip_width=flip_width, label="the embedded Arena-Hard set (every swap judged)")
        else:
            if draws != 1:
                raise InputError("The '--draws' option of plan needs '--demo' (a pilot's draw is the one it recorded).")
            # plan() reads each look as an int and refuses the rest in one sentence
            parsed_looks: Any = None if looks is None else [x.strip() for x in looks.split(",") if x.strip()]
            result = plan(cast(Path, pilot), alpha=alpha, within=within, grid=_parse_grid(grid), generators=gens, seed=seed,
                          looks=parsed_looks, min_gain=min_gain, bias_radius=bias_radius, flip_width=flip_width)
        doc = result.to_dict()
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(doc, indent=2, allow_nan=False) + "\n", encoding="utf-8")
        if as_json:
            typer.echo(json.dumps(doc, indent=2, allow_nan=False))
        else:
            print_plan(result, Console())


def _num(x: Any, fmt: str = "{:,}") -> str:
    return "—" if x is None else fmt.format(x)


def print_plan(result: Any, console: Console) -> None:
    """One table per generator (α and cost per m) and a summary table of the chosen m."""
    s = result.settings
    target = f"α ≥ {s['alpha']}" if s["alpha"] is not None else f"α within {s['within']:.0%} of the largest m's"
    for key, value in (s.get("targets") or {}).items():
        target += f", {key.replace('_', ' ')} ≤ {value:g}"
    source = result.pilot if s["pilot_m"] is None else f"the pilot {result.pilot}"
    console.print(f"Plan from {source}: {result.models} models × {result.items} items, "
                  f"τ = {s['tau']}, δ = {s['delta']}, β = {s['beta']}, {s['method']}; target: {target}",
                  soft_wrap=True, highlight=False, markup=False)
    for g, p in result.generators.items():
        console.print(_generator_table(g, p))
        for r in (r for r in p.rows if r.get("alpha") is None):
            console.print(f"  m = {r['m']}: not certifiable ({r.get('reason')})", soft_wrap=True, highlight=False,
                          markup=False)
    console.print(_summary_table(result))
    for g, p in result.generators.items():
        if p.why_not:
            console.print(f"{g}: {p.why_not}.", soft_wrap=True, highlight=False, markup=False)
    for line in _sequential_lines(result):
        console.print(line, soft_wrap=True, highlight=False, markup=False)
    for note in result.notes:
        console.print(note, soft_wrap=True, highlight=False, markup=False)


def _generator_table(g: str, p: Any) -> Table:
    """One generator's α and cost per m (the chosen m marked)."""
    table = Table(title=f"{g}{' (census in the pilot; items in a seeded random order)' if p.census else ' (the pilot’s seeded draw order)'}")
    several = any("alpha_min" in r for r in p.rows)
    # columns with nothing to say (no rewrites, no tokens or prices known) are left out
    extra = [(col, key, fmt) for col, key, fmt in (("rewrite calls", "rewrite_calls", "{:,}"),
                                                   ("prompt tokens", "prompt_tokens", "{:,}"),
                                                   ("completion tokens", "completion_tokens", "{:,}"),
                                                   ("cost", "cost", "{:.3g}"))
             if any(r.get(key) for r in p.rows)]
    cols = ["m per model", "α (median; min–max)" if several else "α", "vs reference"]
    shown_targets = [(col, key) for col, key in (("bias radius", "bias_radius"), ("flip CI width", "flip_rate_width"))
                     if key in p.targets]
    for col in cols + [c for c, _ in shown_targets] + ["judge calls"] + [c for c, _, _ in extra]:
        table.add_column(col, justify="right")
    for r in p.rows:
        mark = " ←" if r["m"] == p.chosen_m else ""
        a = _num(r.get("alpha"), "{:.4f}")
        if several and r.get("alpha_min") is not None and r.get("draws", 1) > 1:
            a += f" ({r['alpha_min']:.4f}–{r['alpha_max']:.4f})"
        table.add_row(f"{r['m']}{mark}", a, _num(r.get("alpha_vs_reference"), "{:+.1%}"),
                      *(_num(r.get(key), "{:.3g}") for _, key in shown_targets), _num(r["judge_calls"]),
                      *(_num(r.get(key), fmt) for _, key, fmt in extra))
    return table


def _summary_table(result: Any) -> Table:
    """The smallest m per model reaching the target, per generator."""
    summary = Table(title="The plan: the smallest m per model reaching the target")
    chosen = {g: p.chosen() for g, p in result.generators.items()}
    shown = [c for c in chosen.values() if c is not None]
    extra = [(col, key, fmt) for col, key, fmt in (("rewrite calls", "rewrite_calls", "{:,}"), ("tokens", "tokens", "{:,}"),
                                                   ("cost", "cost", "{:.3g}"))
             if any((c.get("prompt_tokens") if key == "tokens" else c.get(key)) for c in shown)]
    for col in ["generator", "target α", "m per model", "α", "judge calls"] + [c for c, _, _ in extra]:
        summary.add_column(col, justify="right")
    for g, p in result.generators.items():
        c = chosen[g]
        if c is None:
            summary.add_row(g, _num(p.target_alpha, "{:.4f}"),
                            "not reached even by a census" if p.why_not and p.why_not.startswith("not reached even")
                            else "not reached: run a larger pilot", "—", "—", *("—" for _ in extra))
            continue
        values = dict(c, tokens=None if c["prompt_tokens"] is None else c["prompt_tokens"] + c["completion_tokens"])
        summary.add_row(g, _num(p.target_alpha, "{:.4f}"), str(c["m"]), _num(c["alpha"], "{:.4f}"),
                        _num(c["judge_calls"]), *(_num(values.get(key), fmt) for _, key, fmt in extra))
    return summary


def _sequential_lines(result: Any) -> list[str]:
    """Per generator with a sequential forecast: the looks, α per look and where the rule stops."""
    lines = []
    for g, p in result.generators.items():
        q = p.sequential
        if q is None:
            continue
        alphas = ", ".join(f"m={r['m']}: {_num(r['alpha'], '{:.4f}')}" for r in q["per_look"])
        if q["stop_m"] is None:
            said = f"undecided: {q['reason']}"
        else:
            said = f"stops at m = {q['stop_m']} per model, {_num(q['judge_calls'])} neighbour judge calls"
        lines.append(f"Sequential run, {g}: looks {q['looks']}, β/K = {_num(q['beta_per_look'], '{:.4g}')}, min gain "
                     f"{q['min_gain']:.0%}; α per look on the pilot's draw: {alphas}; the rule {said}.")
    return lines

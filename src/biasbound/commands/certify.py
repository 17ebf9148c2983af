"""`biasbound certify INPUT... --out DIR`: certify existing judge runs (loaders → pipeline.certify).

Inputs are detected and read by :mod:`biasbound.data.loading` (:func:`~biasbound.data.loading.load_inputs`;
the formats and how each is recognised: :mod:`biasbound.data.detect`).

``--generators auto`` (the default) uses the neighbours the data hold: ``swap`` when there are
game-2 judgments, ``variant:NAME`` for every variant, ``rerun`` when there are reruns; (judge,
model) groups without a neighbour of each of them are left out, and named.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: pandas and numpy load when a command runs
    import pandas as pd

    from biasbound.data.loading import LoadedInputs

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from biasbound._exceptions import BiasboundError, InputError
from biasbound.parameters import CERTIFY, old_option, option, renamed, table_options, validate

__all__ = [
    "EXIT_VIOLATED",
    "natural_neighbors",
    "observed_sensitivity",
    "parse_beta",
    "print_inputs",
    "print_judge_card",
    "print_observed_sensitivity",
    "print_summary",
    "register",
]

#: Exit code of ``certify`` when an audit contradicts a certificate (0 = certified, 2 = bad input or
#: a judge that cannot be certified at (τ, δ); see the README's exit-code table).
EXIT_VIOLATED = 1


#: The options of ``certify`` from the parameter table: every certify parameter, the human labels' two and the engine
#: that reads the inputs.
CERTIFY_OPTIONS = (*CERTIFY, "human_labels", "human_level", "engine")

#: With more judges than this, the terminal shows one compact row per judge instead of each certificate.
_DETAILED_JUDGES = 5


def natural_neighbors(frame: pd.DataFrame) -> tuple[str, ...]:
    """The neighbours a judgment table holds: ``swap`` (game-2 rows), ``variant:NAME``, ``rerun``
    (:func:`biasbound.card.data_generators`)."""
    from biasbound.card import data_generators

    return data_generators(frame)


def print_inputs(loaded: LoadedInputs | Any, console: Console | None = None) -> None:
    """Print, per input, its format, what was read, the score rule or scale, and what was not mapped (``loaded``: the
    :class:`LoadedInputs`, or anything with their ``report``, e.g. a table read in blocks)."""
    console = console or Console()
    for path, rep in loaded.report.items():
        integ = rep.get("integration") or {}
        scale = rep.get("scale")
        head = (f"[bold]{escape(str(path))}[/] — {rep.get('format')}: {rep.get('rows')} judgments, {len(rep.get('judges', []))} judge(s), "
                f"{len(rep.get('models', []))} model(s), {rep.get('items')} items, {rep.get('missing')} missing")
        if rep.get("n_skipped"):
            head += f", {rep['n_skipped']} bad line(s) skipped"
        console.print(head, soft_wrap=True, highlight=False)
        if integ.get("score_rule"):
            console.print(f"  score rule: {integ['score_rule']}", soft_wrap=True, highlight=False, markup=False)
        elif scale is not None:
            how = "inferred from the data — pass --scale lo,hi if it is wrong" if rep.get("scale_inferred") else "given"
            console.print(f"  score scale [{scale[0]:g}, {scale[1]:g}] mapped to [0, 1] ({how})", soft_wrap=True,
                          highlight=False)
        for nat in integ.get("native") or []:
            console.print(f"  native number: {nat.get('rule')}", soft_wrap=True, highlight=False, markup=False)
        for reason, n in (integ.get("not_mapped") or {}).items():
            console.print(f"  not mapped: {n} × {reason}", soft_wrap=True, highlight=False, markup=False)
        for remark in integ.get("remarks") or []:
            console.print(f"  note: {remark}", soft_wrap=True, highlight=False, markup=False)
        if rep.get("judge_from_file"):
            console.print(f"  note: the table has no judge column: its judge is named after the file "
                          f"({rep['judge_from_file']!r}); add a judge column (or --columns judge=COLUMN) to name it",
                          soft_wrap=True, highlight=False, markup=False)
        if rep.get("unicode_nfc"):
            console.print(f"  note: {rep['unicode_nfc']} judge, model or item name(s) written in another Unicode form "
                          "were normalised to NFC, so one name typed two ways is one name", soft_wrap=True,
                          highlight=False, markup=False)


def parse_beta(text: str | None) -> float | None:
    """``"none"`` → None (point estimate, as the paper); otherwise a float."""
    if text is None or str(text).strip().lower() in ("none", "off", ""):
        return None
    try:
        return float(text)
    except ValueError:
        raise InputError(f"The '--beta' option of certify must be a float in (0, 1) or 'none'. Got {text!r} instead.") from None


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


def _rank(x: Any) -> str:
    """A rank as an integer, or "—" for a model without a score."""
    try:
        return str(int(x))
    except (TypeError, ValueError):
        return "—"


def observed_sensitivity(frame: pd.DataFrame, generators: Sequence[str]) -> pd.DataFrame:
    """Per judge and generator: Δ* over EVERY observed neighbour; :func:`biasbound.card.observed_sensitivity`."""
    from biasbound.card import observed_sensitivity as _observed

    return _observed(frame, generators)


def print_observed_sensitivity(frame: pd.DataFrame, generators: Sequence[str], console: Console) -> None:
    """Print :func:`observed_sensitivity` as one line per judge."""
    try:
        table = observed_sensitivity(frame, generators)
    except BiasboundError:  # a neighbour without its canonical judgment: certify reports it with file and line
        return
    for judge, grp in table.groupby("judge", sort=True):
        parts = ", ".join(f"{r.generator} {r.delta_star:.4g} (m={r.m})" for r in grp.itertuples())
        console.print(f"judge {judge}: Δ* over every observed neighbour (no hold-out): {parts}", soft_wrap=True,
                      highlight=False, markup=False)


def print_judge_card(card: Any, console: Console, *, detailed: int = _DETAILED_JUDGES) -> None:
    """Print the judge card (:mod:`biasbound.card`): one table per judge (up to ``detailed`` judges), then the
    judges side by side when there are several."""
    from biasbound.card import PANEL_COLUMNS, card_rows

    judges = (card or {}).get("judges") or {}
    if len(judges) <= detailed:
        for name, c in judges.items():
            t = Table(title=f"Judge card — {escape(str(name))} ({c['models']} model(s) × {c['items']} item(s), "
                            f"{c['judgments']} judgments, {c['missing']} missing; 95% intervals)", show_header=False)
            t.add_column("", style="bold")
            t.add_column("")
            for label, text in card_rows(c):
                t.add_row(label, escape(text))
            console.print(t)
    rows = (card or {}).get("panel") or []
    if len(rows) > 1:
        cols = [(k, h, pct) for k, h, pct in PANEL_COLUMNS if any(r.get(k) is not None for r in rows)]
        t = Table(title=f"Judges side by side ({len(rows)}; full cards in summary.json → judge_card)")
        t.add_column("judge")
        for _, h, _ in cols:
            t.add_column(h, justify="right")
        for r in rows:
            t.add_row(escape(str(r["judge"])), *[("—" if r.get(k) is None else f"{100 * r[k]:.1f}%" if pct
                                                   else _f(r[k], 3)) for k, _, pct in cols])
        console.print(t)


def print_summary(result: Any, console: Console | None = None, *, top: int = 10) -> None:
    """Print the judge card first, then the certificate's key numbers, the audit and the top of the leaderboard."""
    from biasbound.pipeline._summary import certificate_rows, judges_rows

    console = console or Console()
    print_judge_card(getattr(result, "judge_card", None), console)
    if len(result.judges) > _DETAILED_JUDGES:
        t = Table(title=f"{len(result.judges)} judges compared (sorted by bias radius, then α, then RMS ||Δ||); each judge's "
                        "certificate in full: summary.json, certificate-<judge>.json, report.html")
        for c in ("judge", "RMS ||Δ|| (max over generators)", "bias radius at δ", "α", "σ", "range-implied", "audit"):
            t.add_column(c)
        for row in judges_rows(result):
            t.add_row(escape(str(row[0])), *row[1:])
        console.print(t)
    for name, j in (result.judges.items() if len(result.judges) <= _DETAILED_JUDGES else ()):
        judge_shown = escape(str(name))  # judge and model names are the user's data, never rich markup
        t = Table(title=f"Certificate — judge {judge_shown} ({j.view} view)", show_header=False)
        t.add_column("", style="bold")
        t.add_column("")
        scales = ((getattr(result, "coverage", None) or {}).get("score_scale") or {}).get(name) or []
        if scales:
            from biasbound.pipeline._coverage import describe_scale

            shown = sorted({describe_scale(e) for e in scales})
            t.add_row("raw score scale", "; ".join(shown) + " → [0, 1]")
        for label, text in certificate_rows(j):
            t.add_row(label, text)
        console.print(t)
        lb = j.leaderboard.head(top)
        t2 = Table(title=f"Top {len(lb)} of {len(j.leaderboard)} — judge {judge_shown}")
        from biasbound.leaderboard import is_native

        native = [c for c in lb.columns if is_native(c) and lb[c].notna().any()]
        for c in ("rank", "model", "original [95% CI]", "certified [95% CI]", "rank after"):
            t2.add_column(c)
        for c in native:
            t2.add_column(c.replace("_", " "), overflow="fold")
        for row in lb.itertuples():
            t2.add_row(_rank(row.rank_original), escape(str(row.model)),
                       f"{_f(row.original, 3)} [{_f(row.original_lo, 3)}, {_f(row.original_hi, 3)}]",
                       f"{_f(row.certified, 3)} [{_f(row.certified_lo, 3)}, {_f(row.certified_hi, 3)}]",
                       _rank(row.rank_certified), *[_f(getattr(row, c), 4) for c in native])
        pairwise = "original_both_orders" in lb.columns
        t2.caption = escape(
            "original = mean of the certified vector f(D): "
            + ("the judge's scores in the original presentation order (game 1) on [0, 1], missing excluded"
               if pairwise else "the judge's per-item scores on [0, 1], missing excluded")
            + "; certified = mean of the released M(D)"
            + "".join(f"; {c} = the tool's own number by its own rule (the rule is printed with the input)" for c in native))
        console.print(t2)
    from biasbound.native import print_uncertified

    print_uncertified(getattr(result, "uncertified", None), console)
    print_coverage(result, console)
    for name, why in result.failures.items():
        console.print(f"[bold red]judge {escape(str(name))} not certified:[/] {escape(str(why))}", soft_wrap=True)
    for name in result.violated:
        console.print(f"[bold red]VIOLATED: an audit of judge {escape(str(name))}'s certificate contradicts it[/] (the certificate "
                      "is written with its audit; exit code 1).", soft_wrap=True)
    if result.outputs:
        first = next(iter(result.outputs.values()))
        console.print(f"Outputs written to {escape(str(Path(first).parent))}", soft_wrap=True, highlight=False)


def print_coverage(result: Any, console: Console, *, top: int = 12) -> None:
    """Missing judgments and missing neighbours per judge, model and generator (models with gaps first)."""
    judges = (getattr(result, "coverage", None) or {}).get("judges", {})
    for name, cov in judges.items():
        models = cov.get("models", {})
        gens = sorted({g for rec in models.values() for g in rec.get("neighbors", {})})
        gap = {m: rec["missing"] + sum(c["absent"] + c["missing"] + c["unmatched"] for c in rec["neighbors"].values())
               for m, rec in models.items()}
        total = {
            "missing judgments": sum(rec["missing"] for rec in models.values()),
            **{f"{g} missing/absent": sum(rec["neighbors"][g]["missing"] + rec["neighbors"][g]["absent"]
                                          for rec in models.values()) for g in gens},
        }
        name = escape(str(name))
        console.print(f"Coverage — judge {name}: {len(models)} model(s); "
                      + ", ".join(f"{k} {v}" for k, v in total.items()) + ".", soft_wrap=True, highlight=False)
        with_gaps = sorted((m for m in models if gap[m]), key=lambda m: (-gap[m], m))
        if with_gaps:
            t = Table(title=f"Gaps per model — judge {name} (neighbours: observed / missing / absent)")
            for c in ("model", "items", "missing", *gens):
                t.add_column(c)
            for m in with_gaps[:top]:
                rec = models[m]
                t.add_row(escape(str(m)), str(rec["items"]), str(rec["missing"]),
                          *[f"{rec['neighbors'][g]['observed']} / {rec['neighbors'][g]['missing']} / "
                            f"{rec['neighbors'][g]['absent']}" for g in gens])
            if len(with_gaps) > top:
                t.caption = f"… and {len(with_gaps) - top} more model(s) with gaps (all in summary.json)"
            console.print(t)
        for m, why in cov.get("not_certified", {}).items():
            console.print(f"  model {m} not certified: {why}.", soft_wrap=True, highlight=False, markup=False)
        skipped = (getattr(result, "coverage", None) or {}).get("skipped_rows") or []
        mine = [r for r in skipped if any(r[2].startswith(f"{g} ") for g in gens)]
        if mine:
            console.print(f"  {len(mine)} neighbour row(s) without an original judgment left out (--skip-bad), "
                          f"first {mine[0][0]}:{mine[0][1]}; all listed in summary.json.", soft_wrap=True,
                          highlight=False)
        for note in cov.get("notes", []):
            if "different item sets" in note:
                console.print(f"  [yellow]note:[/] {escape(str(note))}", soft_wrap=True, highlight=False)


def _named_baseline(report: dict[str, Any]) -> str | None:
    """The baseline an Arena-Hard checkout's config names, when exactly one input names one."""
    named = {b for rep in report.values() if rep.get("format") == "arena-hard"
             for b in ((rep.get("integration") or {}).get("baselines") or [])}
    return next(iter(named)) if len(named) == 1 else None


def _settle_neighbors(loaded: Any, neighbors: str, *, auto: bool, range_bound: bool,
                      console: Console) -> tuple[Any, str]:
    """The generators certify measures: those found in the data (``--generators auto``, leaving out the groups without
    them, said), or the score range alone (``--range-bound`` on data without neighbours); said in the terminal."""
    from biasbound.data.loading import restrict_to_groups_with
    from biasbound.pipeline._settings import RANGE_GENERATOR, holds_neighbors, parse_neighbors

    if auto:
        found = _found(natural_neighbors(loaded.frame), range_bound)
        if found:
            loaded = restrict_to_groups_with(loaded, found)
            first: dict[str, Any] = next(iter(loaded.report.values()), {})
            neighbors = _say_found(found, first.get("neighbors_auto", {}).get("left_out", {}), range_bound, console)
        else:
            neighbors = RANGE_GENERATOR
    neighbors = _settle_range(neighbors, range_bound=range_bound, auto=auto, console=console,
                              holds=range_bound and holds_neighbors(loaded.frame, parse_neighbors(neighbors)))
    if neighbors != RANGE_GENERATOR:
        print_observed_sensitivity(loaded.frame, parse_neighbors(neighbors), console)
    return loaded, neighbors


def _found(found: tuple[str, ...], range_bound: bool) -> tuple[str, ...]:
    """The generators ``--generators auto`` found; none is an error unless ``--range-bound`` is given."""
    if not found and not range_bound:
        raise InputError("The '--generators auto' option of certify found no neighbours in the data (no game-2 "
                         "judgment, no variant, no rerun); judge neighbours first (biasbound run, or the "
                         "biasbound.inspect scorer), name a generator the data hold, or pass --range-bound to "
                         "certify on the score range alone.")
    return found


def _say_found(found: tuple[str, ...], left_out: dict[str, list[str]], range_bound: bool, console: Console) -> str:
    """Say the generators ``--generators auto`` found and the (judge, model) groups it left out; the generators."""
    neighbors = ",".join(found)
    console.print(f"neighbours found in the data: {escape(neighbors)}", highlight=False)
    for judge, models in left_out.items():
        console.print(f"left out (no {' / '.join(found)} neighbour in the data): judge {judge}, "
                      f"{len(models)} model(s): {', '.join(models)}", soft_wrap=True, highlight=False,
                      markup=False)
    if range_bound:
        n_left = sum(len(m) for m in left_out.values())
        console.print(f"--range-bound is not used: the data hold neighbours ({neighbors}), and one call "
                      "certifies every judge against the same generators"
                      + (f"; the {n_left} (judge, model) group(s) left out above can be certified on the "
                         "score range alone in a separate call naming only their inputs with --range-bound"
                         if n_left else ""), soft_wrap=True, highlight=False, markup=False)
    return neighbors


def _settle_range(neighbors: str, *, range_bound: bool, auto: bool, holds: bool, console: Console) -> str:
    """The range generator alone when ``--range-bound`` is given and the data hold none of the generators
    (``holds``), said; ``--range-bound`` with neighbours in the data is said to be unused."""
    from biasbound.pipeline._settings import RANGE_GENERATOR

    if range_bound and not holds:
        neighbors = RANGE_GENERATOR
    elif range_bound and not auto:  # said, never ignored silently
        console.print(f"--range-bound is not used: the data hold the {neighbors} neighbours, which certify measures; "
                      "the score range alone is for data without neighbours", soft_wrap=True, highlight=False,
                      markup=False)
    if neighbors == RANGE_GENERATOR:
        console.print("no neighbour in the data: certified on the score range alone (--range-bound); a neighbour is "
                      "any change of an item's score within the range, and the certificate holds for ANY judge on "
                      "this range", highlight=False)
    return neighbors


def _certified(run: Any, console: Console) -> Any:
    """``run()`` (a certify call) with its summary printed; an error's partial result is printed before it
    propagates."""
    try:
        result = run()
    except BiasboundError as exc:  # print what was certified before the error propagates
        partial = getattr(exc, "partial_result", None)
        if partial is not None and partial.judges:
            print_summary(partial, console)
        raise
    print_summary(result, console)
    return result


def _certify_blocked(path: Path, v: dict[str, Any], *, neighbors: str, auto: bool, range_bound: bool, out: Any,
                     scale: tuple[float, float] | None, skip_bad: bool, columns: dict[str, str] | None,
                     baseline: str | None, no_progress: bool, sign_key: Path | None, families: Any) -> None:
    """``certify`` of one Parquet table read in blocks (:class:`biasbound.data._blocked_inputs.BlockedInputs`): one
    scan of its key columns settles the generators, the baseline and the scale as the row route settles them, then
    certify reads the blocks; what was read is printed once the blocks are read."""
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from biasbound._assumptions import check_scale_used
    from biasbound._progress import step
    from biasbound.data._blocked_inputs import BlockedInputs, scan
    from biasbound.data.blocked import BLOCKED_ABOVE
    from biasbound.data.loading import check_baseline, groups_with
    from biasbound.pipeline import certify
    from biasbound.pipeline._settings import RANGE_GENERATOR, parse_neighbors

    console = Console()
    console.print(f"{escape(str(path))}: more than {BLOCKED_ABOVE:,} judgments with reruns — read in blocks of whole "
                  "models (the reruns folded block by block; the outputs are those of the rows held at once)",
                  soft_wrap=True, highlight=False)
    with step("scanning the table's keys", enabled=not no_progress):
        sc = scan(path, columns)
    if scale is not None and np.isfinite(sc.score_min):
        lo, hi = scale
        check_scale_used(pd.Series([(sc.score_min - lo) / (hi - lo), (sc.score_max - lo) / (hi - lo)]), scale)
    check_baseline(pd.DataFrame({"model": sc.models}), baseline, "certify")
    exclude: frozenset[tuple[str, str]] = frozenset()
    extra: dict[str, Any] = {}
    if auto:
        found = _found(sc.found(), range_bound)
        if found:
            held = {g: {k for k, gs in sc.groups.items() if g in gs} for g in found}
            have, record = groups_with(held, set(sc.groups), found)
            exclude = frozenset(set(sc.groups) - have)
            extra = {"neighbors_auto": record}
            neighbors = _say_found(found, record["left_out"], range_bound, console)
        else:
            neighbors = RANGE_GENERATOR
    wanted = set(parse_neighbors(neighbors))
    neighbors = _settle_range(neighbors, range_bound=range_bound, auto=auto, console=console,
                              holds=any(wanted & gs for gs in sc.groups.values()))
    with BlockedInputs(path, scale=scale, skip_bad=skip_bad, columns=columns, exclude=exclude) as blocked:
        blocked.extra = extra
        if auto:
            blocked.options["neighbors_auto"] = list(parse_neighbors(neighbors)) if extra else None
        result = _certified(lambda: certify(blocked, **v, neighbors=neighbors, out=out, progress=not no_progress,
                                            baseline=baseline, skip_bad=skip_bad, sign_key=sign_key,
                                            families=families), console)
        print_inputs(SimpleNamespace(report=blocked.report), console)
    if result.violated:
        raise typer.Exit(EXIT_VIOLATED)


def register(app: typer.Typer) -> None:
    """Add the ``certify`` command to ``app``."""

    @app.command("certify")
    @table_options(CERTIFY_OPTIONS, defaults={"neighbors": "auto"})  # every certify parameter, from the table
    def certify_command(
        inputs: list[str] = typer.Argument(..., help="Judgments: Arena-Hard files/folders, LLMBar CSVs, AlpacaEval "
                                           "annotations, MT-Bench judgment files, inspect_ai logs, or long tables "
                                           "(--engine spark: judgment tables, cluster paths such as s3a://... too)."),
        out: str = typer.Option(..., "--out", help="Output folder."),  # str: typer reads "" as Path(".")
        old_neighbors: str | None = old_option("neighbors"),
        scale: str | None = typer.Option(None, "--scale", help="Raw score scale lo,hi of generic tables."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and count bad lines instead of stopping."),
        columns: str | None = typer.Option(None, "--columns",
                                           help="Long tables: NAME=COLUMN pairs, e.g. judge=annotator,item_id=question,score=rating."),
        mt_bench_ties: str = typer.Option("missing", "--mt-bench-ties", help="MT-Bench pairwise ties: missing or half."),
        score_map: str | None = typer.Option(None, "--score-map",
                                             help="inspect_ai score values to [0, 1], e.g. C=1,P=0.5,I=0 (default rule: C/P/I/N)."),
        winner_map: str | None = typer.Option(None, "--winner-map",
                                              help="Battle tables: winner values to outcomes, e.g. 0=model_a,1=model_b,2=tie "
                                                   "(OUTCOME: model_a, model_b, tie or missing)."),
        baseline: str | None = typer.Option(None, "--baseline", help="The model pairwise verdicts compare against "
                                            "(marked in leaderboard.csv; its own win rate is 50, as Arena-Hard pins "
                                            "it; the certified scores do not depend on it)."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress display (stderr)."),
        family: list[str] | None = option("families", None, metavar="NAME=FAMILY"),
        sign_key: Path | None = typer.Option(None, "--sign-key", envvar="BIASBOUND_SIGN_KEY", show_envvar=True,
                                             help="Ed25519 private key (biasbound keygen) to sign the outputs manifest; "
                                                  "never copied into the outputs."),
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Certify judge scores: measure sensitivity on observed neighbours, shrink, add calibrated noise, audit."""
        from biasbound._progress import step
        from biasbound.pipeline import certify
        from biasbound.pipeline._settings import check_settings
        from biasbound.pipeline._staging import check_out

        import inspect

        from biasbound._validation import check_one_of
        from biasbound.data.loading import (check_baseline, check_options_used, load_inputs, parse_columns,
                                            parse_scale, parse_score_map)

        v = dict(settings or {})
        neighbors = renamed(v.pop("neighbors"), old_neighbors, name="neighbors", command="certify", default="auto")
        v["hamming"] = validate("certify", hamming=v["hamming"])["hamming"]  # "2" typed: the int 2 (recorded as such)
        v["human_level"] = validate("certify", human_level=v["human_level"])["human_level"]
        v["beta"] = parse_beta(v["beta"])
        engine = validate("certify", engine=v.pop("engine"))["engine"]  # how the inputs are read: not a setting
        range_bound = v["range_bound"]
        from biasbound.self_preference import parse_families

        families = parse_families(family)  # --family NAME=FAMILY, repeated: the judge card's self-preference
        raw_scale = parse_scale(scale)
        column_map = parse_columns(columns)
        value_map = parse_score_map(score_map)
        from biasbound.data.battles import parse_winner_map

        outcome_map = parse_winner_map(winner_map)
        mt_bench_ties = check_one_of(mt_bench_ties, "--mt-bench-ties", "certify", ("missing", "half"))
        auto = neighbors.strip().lower() == "auto"
        # certify's own parameter checks, run before any input is read: a bad option fails at once
        checked = inspect.signature(check_settings).parameters  # the rest (plots, range_bound...) certify reads itself
        check_settings(**{**{k: x for k, x in v.items() if k in checked}, "neighbors": "swap" if auto else neighbors,
                          "jitter_adjust": v["jitter_adjust"] and not auto})
        out = check_out(out)  # an --out naming a file (or nothing) fails before any input is read
        if sign_key is not None:  # a wrong key file fails before any input is read
            from biasbound._integrity import load_private_key

            load_private_key(sign_key)
        from biasbound.data._blocked_inputs import blocked_input

        if engine == "duckdb" and len(inputs) == 1 and blocked_input(Path(inputs[0]), columns=column_map):
            # one Parquet table with reruns, too large to hold: read in blocks by certify (biasbound.pipeline._folded)
            _certify_blocked(Path(inputs[0]), v, neighbors=neighbors, auto=auto, range_bound=range_bound, out=out,
                             scale=raw_scale, skip_bad=skip_bad, columns=column_map, baseline=baseline,
                             no_progress=no_progress, sign_key=sign_key, families=families)
            return
        with step(f"reading {len(inputs)} input(s)", enabled=not no_progress):
            if engine == "spark":  # judgment tables read on a Spark cluster (biasbound.engine.load_spark)
                from biasbound.engine import load_spark

                loaded = load_spark(inputs, scale=raw_scale, skip_bad=skip_bad, columns=column_map, ties=mt_bench_ties,
                                    score_map=value_map, winner_map=outcome_map)
            else:
                loaded = load_inputs([Path(p) for p in inputs], scale=raw_scale, skip_bad=skip_bad, columns=column_map,
                                     ties=mt_bench_ties, score_map=value_map, baseline=baseline, winner_map=outcome_map)
        check_options_used(loaded.report, "certify", scale=raw_scale, columns=column_map, score_map=value_map,
                            winner_map=outcome_map)
        from biasbound._assumptions import check_scale_used

        check_scale_used(loaded.frame["score"], raw_scale)
        check_baseline(loaded.frame, baseline, "certify", loaded.report)
        if baseline is None:  # an Arena-Hard checkout's config named it (the reader said so): mark and pin it too
            baseline = _named_baseline(loaded.report)
        console = Console()
        print_inputs(loaded, console)
        loaded, neighbors = _settle_neighbors(loaded, neighbors, auto=auto, range_bound=range_bound, console=console)
        result = _certified(lambda: certify(loaded, **v, neighbors=neighbors, out=out, progress=not no_progress,
                                            baseline=baseline, skip_bad=skip_bad, sign_key=sign_key,
                                            families=families), console)
        if result.human:
            from biasbound.human.show import print_human

            print_human(result, console)
        if result.violated:
            raise typer.Exit(EXIT_VIOLATED)

"""`biasbound demo [--out DIR] [--run]`: certify the embedded Arena-Hard data in paper and tight calibration,
or (``--run``) run the judge runner end to end against the local synthetic judge.

The embedded data (76 models × 500 questions, judge "ensemble", ko-arena-hard-auto) is
certified with position-swap neighbours at the paper's setting τ = 0.5, δ = 0.01: with the
paper's calibration (Alg. 1 + shrinkage), with the tight calibration (every swap is judged, so
the probability over one random swap is exact), and in the leaderboard view with every answer
swapped at once (the position bias of the whole leaderboard). Printed side by side: the bound,
α and σ, whether the certificate is range-implied (would hold for any judge), the statement on the
original scale, the bias radius per model, the model pairs reversed between two releases against
those reversed by one neighbour, Spearman over the noise with its band, the audit; then each
run's frontier α*(σ) and the point taken on it. Outputs go to ``DIR/<run>`` (default
``./biasbound-demo``).

``--run`` runs ``examples/run-synthetic.yaml`` instead: it starts the synthetic judge server
(:mod:`biasbound.testing.server`) on a free local port, judges the Arena-Hard v0.1 questions and
answers that ship inside the package (found with :mod:`importlib.resources`, so it works from an
installed package), generates and judges the neighbours, certifies, stops the server and writes
everything to ``DIR/run``. The example's settings live here as :func:`example_run_config` (the
file in ``examples/`` cannot ship with the package); a test keeps the two identical apart from
the paths, the server URL and the API-key variable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from biasbound._exceptions import InputError
from biasbound.parameters import option
from rich.table import Table

__all__ = ["DEMO_MODULES", "DEMO_SETTINGS", "example_data_path", "example_run_config", "print_demo_card", "register", "run_demo",
           "run_example"]

#: The paper's setting used by the demo.
DEMO_SETTINGS: dict[str, Any] = {"tau": 0.5, "delta": 0.01, "neighbors": ("swap",), "seed": 0}


#: The three certifications the demo puts side by side: the paper's calibration, the tight one (same
#: setting: model view, one swapped item), and the leaderboard view with every answer swapped at once
#: (the position bias of the whole leaderboard; a certificate the score range alone does not imply).
DEMO_RUNS: dict[str, dict[str, Any]] = {
    "paper": {"method": "paper"},
    "tight": {"method": "tight"},
    "leaderboard-all-swapped": {"method": "tight", "view": "leaderboard", "hamming": "all"},
}


#: The modules the demo runs on, imported before it starts (see :func:`biasbound._gc.imports_frozen`).
DEMO_MODULES: tuple[str, ...] = (
    "biasbound.data.embedded", "biasbound.pipeline", "biasbound.pipeline._outputs", "biasbound.leaderboard",
    "biasbound.card", "biasbound.report.plots", "biasbound.report.html",
)


def run_demo(out: str | Path = "biasbound-demo", *, progress: bool = True, plots: bool = True) -> dict[str, Any]:
    """Certify the embedded dataset with the paper's and the tight calibration, and the whole leaderboard's
    position bias (every answer swapped at once, leaderboard view).

    Parameters
    ----------
    out:
        Output folder; results go to ``out/paper``, ``out/tight`` and ``out/leaderboard-all-swapped``.
    progress:
        Show progress bars.
    plots:
        Write plots and report.html.

    Returns
    -------
    dict
        ``{"paper": CertifyResult, "tight": CertifyResult, "leaderboard-all-swapped": CertifyResult}``.
    """
    from biasbound._progress import step
    from biasbound.data.embedded import DEMO_BASELINE, load_demo
    from biasbound.pipeline import certify
    from biasbound.pipeline._staging import check_out

    check_out(out, "run_demo")
    check_out(Path(out) / "paper", "run_demo")
    with step("loading the embedded Arena-Hard judgments (76 models × 500 questions × 2 orders)", enabled=progress):
        data = load_demo()
    out = Path(out)
    results = {
        name: certify(data, out=out / name, progress=progress, plots=plots, baseline=DEMO_BASELINE,
                      **{**DEMO_SETTINGS, **kw})
        for name, kw in DEMO_RUNS.items()
    }
    if plots:  # each report also shows the others side by side
        from biasbound.pipeline._outputs import write_result_report

        with step("adding the side-by-side comparison to every report", enabled=progress):
            section = comparison_section(results)
            for name, result in results.items():
                write_result_report(result, out / name, comparison=section)
    return results


#: The generators of the example run, in the example's order.
EXAMPLE_GENERATORS: tuple[str, ...] = ("swap", "format", "paraphrase", "schematic", "agreeable", "rerun")

#: A variable nobody sets: the local synthetic server needs no key, and a real key must never be sent to it.
_EXAMPLE_KEY_ENV = "BIASBOUND_SYNTHETIC_JUDGE_KEY"


def example_data_path() -> Path:
    """The Arena-Hard v0.1 subset shipped in the package (``question.jsonl``, ``model_answer/``)."""
    from importlib.resources import as_file, files

    res = files("biasbound.data") / "embedded" / "arena-hard-v0.1"
    if isinstance(res, Path):
        return res
    ctx = as_file(res)  # pragma: no cover - zip installs only: extracted for the life of the process
    return Path(ctx.__enter__())  # pragma: no cover


def example_run_config(
    base_url: str, output: str | Path, *, data: Path | None = None, n_items: int | None = None,
    generators: Any = None,
) -> dict[str, Any]:
    """The settings of ``examples/run-synthetic.yaml`` as a config mapping for :func:`biasbound.config.parse_config`.

    Parameters
    ----------
    base_url:
        The synthetic judge's OpenAI base URL (it also plays the rewriter).
    output:
        The run's output folder.
    data:
        The Arena-Hard v0.1 folder (default: the subset shipped in the package).
    n_items:
        Questions judged (the example's 80 when None).
    generators:
        Neighbour generators (the example's six when None).
    """
    folder = example_data_path() if data is None else Path(data)
    gens = list(EXAMPLE_GENERATORS if generators is None else generators)
    return {
        "data": {"questions": str(folder / "question.jsonl"), "answers": str(folder / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 80 if n_items is None else n_items, "include_baseline": True},
        "judge": {"name": "synthetic", "base_url": base_url, "model": "biasbound-synthetic-judge",
                  "api_key_env": _EXAMPLE_KEY_ENV, "concurrency": 16, "rpm": None,
                  "sampling": {"temperature": 0.0, "max_tokens": 2048, "seed": 0},
                  "prices": {"prompt_per_million": 0.15, "completion_per_million": 0.60},
                  "retry": {"max_attempts": 6, "max_parse_attempts": 3, "timeout": 60, "backoff_initial": 0.5,
                            "backoff_max": 10, "backoff_jitter": 0.5}},
        "rewriter": {"name": "synthetic-rewriter", "base_url": base_url, "model": "synthetic-rewriter",
                     "api_key_env": _EXAMPLE_KEY_ENV, "concurrency": 16},
        "template": "pairwise",
        "neighbors": {"generators": gens, "neighbors_per_generator": 40, "options": {"schematic": {"mode": "random"}}},
        "tau": 0.5, "delta": 0.01,
        "calibration": {"method": "tight", "combine": "max", "alpha": None, "beta": 0.05, "holdout": 0.3,
                        "center": "fixed:0.5"},
        "view": "model", "seed": 0, "output": str(output),
    }


def write_example_config(path: str | Path, *, base_url: str = "http://127.0.0.1:8011/v1") -> Path:
    """Write :func:`example_run_config` as YAML to ``path``, runnable from any folder.

    The data paths are absolute paths into the installed package (no source checkout needed); the
    output folder is ``biasbound-run`` next to the file (relative paths of a config resolve against
    its folder). An existing file is never overwritten.
    """
    import yaml

    p = Path(path)
    if not str(path).strip() or p.is_dir():
        raise InputError(f"The '--write-config' option of demo must name a YAML file to create. Got {str(path)!r} instead.")
    if p.exists():
        raise InputError(f"The '--write-config' option of demo names {str(p)!r}, which exists; give a new file name "
                         "(an existing config is never overwritten).")
    if not p.parent.is_dir():
        raise InputError(f"The '--write-config' option of demo names {str(p)!r}, but the folder {str(p.parent)!r} does "
                         "not exist.")
    cfg = example_run_config(base_url, "biasbound-run")
    head = ("# biasbound run config, written by `biasbound demo --write-config`. The data paths point into the\n"
            "# installed biasbound package (Arena-Hard v0.1 subset, Apache-2.0); relative paths (output) resolve\n"
            "# against this file's folder. Start a judge at judge.base_url (e.g. `biasbound serve-synthetic-judge\n"
            "# --port 8011`) or point base_url/model/api_key_env (the NAME of the variable) at a real one.\n")
    p.write_text(head + yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return p


def run_example(
    out: str | Path = "biasbound-demo", *, n_items: int | None = None, generators: Any = None, progress: bool = True,
) -> Any:
    """Run the example config end to end against a synthetic judge server started (and stopped) here.

    Parameters
    ----------
    out:
        Output folder; the run's outputs go to ``out/run`` (re-running resumes from its cache).
    n_items, generators:
        See :func:`example_run_config` (the example's 80 questions and six generators by default).
    progress:
        Show progress on stderr.

    Returns
    -------
    biasbound.runner.RunResult
    """
    from biasbound._progress import step
    from biasbound.config import parse_config
    from biasbound.runner import run
    from biasbound.testing.server import SyntheticServerConfig, serve_in_thread

    target = Path(out) / "run"
    with step("starting the synthetic judge server on a free local port", enabled=progress):
        server_cm = serve_in_thread(SyntheticServerConfig())
        server = server_cm.__enter__()
    try:
        raw = example_run_config(server.url, target.resolve(), n_items=n_items, generators=generators)
        cfg = parse_config(raw, base=Path.cwd())
        return run(cfg, progress=progress)
    finally:
        with step("stopping the synthetic judge server", enabled=progress):
            server_cm.__exit__(None, None, None)


def _fmt(x: Any, digits: int = 4) -> str:
    if x is None:
        return "—"
    return f"{float(x):.{digits}g}"


_COMPARISON_TITLE = "Embedded Arena-Hard data (76 models × 500 questions), swap neighbours, τ = 0.5, δ = 0.01"



def comparison_rows(results: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """The certificates side by side: (label, [value per run]), read from each judge's certificate."""
    judges = {m: next(iter(r.judges.values())) for m, r in results.items()}
    rows: list[tuple[str, list[str]]] = []

    def row(label: str, fn: Any) -> None:
        rows.append((label, [fn(j) for j in judges.values()]))

    def nb(j: Any) -> str:
        n = j.certificate.neighborhood or {"kind": "hamming", "k": 1}
        what = "every answer swapped" if n.get("kind") == "all-items" else f"{n.get('k', 1)} item(s) swapped"
        return f"{j.view} view, {what}"

    def implied(j: Any) -> str:
        ri = j.certificate.range_implied
        if ri is None:
            return "—"
        return f"{'YES' if ri['holds'] else 'no'} (range alone: {_fmt(ri['bound'], 3)})"

    def radius(j: Any) -> str:
        fig = (j.certificate.scope or {}).get("figures") or {}
        per = fig.get("bias_radius_per_model")
        if per:
            vals = sorted(r for r in per.values() if r is not None)
            return f"per model {_fmt(vals[0], 3)} – {_fmt(vals[-1], 3)} (median {_fmt(vals[len(vals) // 2], 3)})"
        return _fmt(j.certificate.bias_radius["radius"], 4)

    def cost(j: Any) -> str:
        c = (j.retention or {}).get("cost") or {}
        one = c.get("pairs_reversed_by_one_neighbour") or {}
        return (f"{_fmt(c.get('pairs_reversed_between_two_releases'), 3)} vs "
                + ", ".join(_fmt(v["expected_pairs_reversed"], 3) for v in one.values()))

    def spearman(j: Any) -> str:
        sp = (((j.retention or {}).get("cost") or {}).get("retention_over_noise") or {}).get("spearman") or {}
        if sp.get("mean") is None:
            return "—"
        return f"{_fmt(sp['mean'], 4)} [{_fmt(sp['p05'], 4)}, {_fmt(sp['p95'], 4)}]"

    row("neighbours", nb)
    row("bound used", lambda j: f"{j.calibration.bound_used} ({'exact' if j.calibration.exact else 'upper bound'})")
    row("spread kept α", lambda j: _fmt(j.calibration.alpha))
    row("σ (noise std)", lambda j: _fmt(j.calibration.sigma))
    row("largest α (noiseless), α_max", lambda j: _fmt(j.calibration.alpha_max))
    row("range-implied", implied)
    row("on the original scale (τ/α, σ/α)", lambda j: "—" if not j.certificate.original_scale else
        f"({_fmt(j.certificate.original_scale['tau'], 3)}, {_fmt(j.certificate.original_scale['sigma'], 3)})")
    row(f"bias radius at δ = {DEMO_SETTINGS['delta']} (from the certificate's knowledge)", radius)
    row("model pairs reversed: two releases vs one neighbour", cost)
    row("Spearman over the noise [5–95%]", spearman)
    row("audit", lambda j: "—" if j.pooled_audit is None else
        f"{j.pooled_audit.verdict} (P ≤ {_fmt(j.pooled_audit.exact_ucb, 3)})")
    return rows


def frontier_rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    """The tight frontier α*(σ) of each run, and the point each one took on it (with its reason)."""
    out = []
    for name, r in results.items():
        j = next(iter(r.judges.values()))
        pts = (j.certificate.frontier or {}).get("points") or []
        txt = ", ".join(f"σ={_fmt(p['sigma'], 3)}→α*={_fmt(p['alpha'], 3)}" for p in pts[:: max(1, len(pts) // 5)])
        out.append((name, f"{txt}; taken: α={_fmt(j.calibration.alpha, 4)}, σ={_fmt(j.calibration.sigma, 4)} "
                          f"({(j.certificate.frontier or {}).get('default_rule', '')})"))
    return out


def comparison_table(results: dict[str, Any]) -> Table:
    """Side-by-side table of the demo's certificates."""
    table = Table(title=_COMPARISON_TITLE)
    table.add_column("")
    for method in results:
        table.add_column(method, justify="right")
    for label, values in comparison_rows(results):
        table.add_row(label, *values)
    return table


def comparison_section(results: dict[str, Any]) -> dict[str, Any]:
    """The comparison as a report section (see :func:`biasbound.report.write_report`)."""
    return {
        "title": "Paper calibration, tight calibration, and the whole leaderboard's position bias",
        "note": (f"{_COMPARISON_TITLE}. The same data certified three times: with the paper's calibration "
                 "(Algorithm 1 with shrinkage: Markov bound on the sensitivity, Laurent–Massart radius), with "
                 "biasbound's tight calibration (every item's swap is judged, so the violation probability over "
                 "one random swap is computed exactly), and in the leaderboard view with every answer shown in the "
                 "other order at once (one neighbour: the position bias of the whole leaderboard). "
                 "'Range-implied' marks a certificate that would hold for any judge on this score range."),
        "columns": list(results),
        "rows": comparison_rows(results),
    }


def print_demo_card(results: dict[str, Any], console: Console) -> None:
    """The judge card first: the tight run's (one swapped item, model view), then the all-items relation's
    reading and bias radius from the leaderboard run."""
    from biasbound.commands.certify import print_judge_card

    print_judge_card(results["tight"].judge_card, console)
    lb = results.get("leaderboard-all-swapped")
    if lb is not None and lb.judge_card:
        for c in lb.judge_card["judges"].values():
            nbh, br = c.get("neighbourhood") or {}, c.get("bias_radius") or {}
            console.print(f"The leaderboard-all-swapped run reads the same data with every answer swapped at once — "
                          f"{str(nbh.get('reading')).split(';')[0]}: bias radius {_fmt(br.get('radius'), 3)} at δ = {_fmt(br.get('delta'))} "
                          "on the model-mean scale.", highlight=False, soft_wrap=True, markup=False)


def register(app: typer.Typer) -> None:
    """Add the ``demo`` command to ``app``."""

    @app.command("demo")
    def demo_command(
        out: Path = typer.Option(Path("biasbound-demo"), "--out",
                                 help="Output folder (paper/, tight/ and leaderboard-all-swapped/, or run/, inside)."),
        plots: bool = option("plots"),
        run_: bool = typer.Option(False, "--run", help="Run examples/run-synthetic.yaml end to end against a local "
                                  "synthetic judge (started and stopped here) on the shipped Arena-Hard v0.1 subset."),
        n_items: int | None = typer.Option(None, "--n-items", min=2, max=198,
                                           help="With --run: questions judged (the example's 80 by default)."),
        generators: str | None = typer.Option(None, "--generators", help="With --run: comma-separated neighbour "
                                              "generators (the example's six by default)."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress display."),
        labels: bool = typer.Option(False, "--labels", help="The embedded LLMBar judgments with 50 random gold labels: "
                                    "agreement, human-anchored scores and the anchored release's certificate "
                                    "(labels-demo/ inside --out)."),
        write_config: Path | None = typer.Option(None, "--write-config", help="Write the example run config (the "
                                                 "judge at http://127.0.0.1:8011/v1, the data inside this installed "
                                                 "package, absolute paths) to this YAML file and stop."),
    ) -> None:
        """Certify the embedded Arena-Hard data (paper, tight, and every answer swapped in the leaderboard view) and compare
        them (or --run the judge runner)."""
        from biasbound.commands.certify import EXIT_VIOLATED

        if write_config is not None:
            path = write_example_config(write_config)
            Console().print(f"Example run config written to {path} (data paths point into the installed package); "
                            "change judge.base_url, judge.model and judge.api_key_env, then: biasbound run "
                            f"{path}", highlight=False, soft_wrap=True, markup=False)
            return

        if labels:
            from biasbound.commands._demo_labels import run_labels_demo

            if run_:
                raise InputError("The '--labels' and '--run' options of demo are two demos; give one of the two.")
            res = run_labels_demo(out, progress=not no_progress, plots=plots)
            if res.violated:
                raise typer.Exit(EXIT_VIOLATED)
            return
        if run_:
            from biasbound.commands.run import print_run_summary

            from biasbound.config import GENERATOR_NAMES

            gens = None if generators is None else [g.strip() for g in generators.split(",") if g.strip()]
            bad = [g for g in gens or [] if g not in GENERATOR_NAMES]
            if gens is not None and (bad or not gens):
                raise InputError(f"The '--generators' option of demo must list generators among "
                                 f"{', '.join(GENERATOR_NAMES)} (comma-separated). Got {generators!r} instead.")
            result = run_example(out, n_items=n_items, generators=gens, progress=not no_progress)
            print_run_summary(result, Console())
            if result.certification is not None and result.certification.violated:
                raise typer.Exit(EXIT_VIOLATED)
            return
        if n_items is not None or generators is not None:
            raise InputError("The '--n-items' and '--generators' options of demo need '--run'. Got them without it.")
        from biasbound._gc import imports_frozen

        # the modules' objects kept out of the collector's full passes while the demo runs (about 1 s of CPU)
        with imports_frozen(*DEMO_MODULES):
            results = run_demo(out, plots=plots, progress=not no_progress)
        console = Console()
        print_demo_card(results, console)
        console.print(comparison_table(results))
        ft = Table(title="The feasible frontier α*(σ) (largest shrinkage at each noise scale) and the point taken")
        ft.add_column("")
        ft.add_column("")
        for name, text in frontier_rows(results):
            ft.add_row(name, text)
        console.print(ft)
        console.print("Outputs written to " + ", ".join(str(out / n) for n in results)
                      + (" (each with report.html)" if plots else ""), highlight=False, soft_wrap=True)
        if any(r.violated for r in results.values()):
            raise typer.Exit(EXIT_VIOLATED)

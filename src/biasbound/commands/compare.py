"""`biasbound compare OLD NEW [--fail-if FIGURE>VALUE ...]`: two judge cards side by side, for CI.

OLD and NEW are ``certify`` output folders (or their ``summary.json``); NEW may also be judgment files, whose
card is then computed from the data alone (flip rates, position preference, Δ*; no bias radius, α or rank
statements, which need a certification). Printed per judge present in both: every card figure old → new,
the figures whose 95% intervals are disjoint ("moved"), the models whose new rank lies outside their old 95%
rank interval, and every ``--fail-if`` condition that holds on NEW. When NEW is judgments, every judge certificate
of OLD is also audited on them (``biasbound audit``'s route): "violated" means the new judgments contradict it.
When both sides hold the same (model, item) pairs (judges of the same name, or one judge on each side), the paired
comparison of :mod:`biasbound.paired` is printed too (exact McNemar on verdicts and flips, paired bootstrap
intervals of the differences; ``--fail-if paired_flip_rate_p<0.01``); a paired test that rejects at 5% counts as
a move.

Exit codes: 0 nothing moved, no ``--fail-if`` condition holds and no certificate is contradicted; 1 a condition
holds, a certificate of OLD is contradicted by NEW judgments, or a figure (or a rank) moved beyond its interval
(``--allow-moves`` keeps exit 0 for moves); 2 bad input (unreadable folder, unknown figure, malformed condition).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["EXIT_FAILED", "audit_new_judgments", "compare_cards", "load_side", "match_judges", "register"]

#: Exit code when a --fail-if condition holds or a figure moved beyond its interval.
EXIT_FAILED = 1


def load_side(path: Path, *, what: str) -> dict[str, Any]:
    """The judge card of one side: a certify folder / summary.json, else judgment files (card from the data)."""
    from biasbound._exceptions import InputError
    from biasbound.card import judge_card, read_card

    p = Path(path)
    if not p.exists():
        raise InputError(f"The '{what}' argument of compare names {str(p)!r}, which does not exist.")
    if (p.is_dir() and (p / "summary.json").is_file()) or p.name == "summary.json":
        _check_outputs(p, what)
        return read_card(p)
    if p.is_dir() and not any(p.iterdir()):
        raise InputError(f"The '{what}' argument of compare names the folder {str(p)!r}, which is empty; give a certify "
                         "output folder (with summary.json) or judgment files.")
    from biasbound.data.loading import load_inputs

    loaded = load_inputs([p])
    card = judge_card(loaded.frame)
    stem = p.name.split(".")[0]
    if p.is_file() and stem in (card.get("judges") or {}):
        card["file_named_judge"] = stem  # the table names no judge: the reader named it after the file
    return card


def match_judges(old: dict[str, Any], new: dict[str, Any], match: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """NEW's card with its judges renamed by ``--match OLD=NEW`` pairs, and the renames ``{NEW name: OLD name}``; an
    error when OLD and NEW then share no judge (nothing would be compared, and "every condition passes" would say
    nothing)."""
    from biasbound._exceptions import InputError

    judges_old, judges_new = list(old.get("judges") or {}), list(new.get("judges") or {})
    renames: dict[str, str] = {}
    for pair in match:
        a, sep, b = str(pair).partition("=")
        a, b = a.strip(), b.strip()
        if not sep or a not in judges_old or b not in judges_new or b in renames:
            raise InputError(f"The '--match' option of compare must be OLD_JUDGE=NEW_JUDGE with a judge of OLD "
                             f"({', '.join(judges_old) or 'none'}) and one of NEW ({', '.join(judges_new) or 'none'}), "
                             f"each once. Got {pair!r} instead.")
        renames[b] = a
    if renames:
        new = {**new, "judges": {renames.get(j, j): c for j, c in (new.get("judges") or {}).items()}}
    if not set(old.get("judges") or {}) & set(new.get("judges") or {}):
        why = ""
        for side, card in (("OLD", old), ("NEW", new)):
            if card.get("file_named_judge"):
                why += (f"; {side}'s judge {card['file_named_judge']!r} is named after its file (the table has no "
                        "judge column: add one to name the judge)")
        a = judges_old[0] if judges_old else "OLD_JUDGE"
        b = judges_new[0] if judges_new else "NEW_JUDGE"
        raise InputError(f"OLD and NEW share no judge (OLD: {', '.join(judges_old) or 'none'}; NEW: "
                         f"{', '.join(judges_new) or 'none'}), so nothing can be compared{why}; pair them with "
                         f"--match, e.g. --match {a}={b}.")
    return new, renames


def compare_sides(old: Path, new: Path, fail_if: list[str], *, match: list[str] | None = None, paired: bool = True,
                  rounds: int = 2000, seed: int = 0) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(OLD's card, NEW's card, the comparison)`` of ``compare OLD NEW``: the conditions checked before anything
    is read, the judges matched (``--match``), the cards compared, and the paired tests on the items both sides
    hold (:mod:`biasbound.paired`). The one route of ``biasbound compare`` and
    :func:`biasbound.testing.assert_no_regression`."""
    from biasbound import paired as pr
    from biasbound.card import parse_threshold

    card_conds = [c for c in fail_if if not pr.is_paired_condition(c)]
    paired_conds = [c for c in fail_if if pr.is_paired_condition(c)]
    for cond in card_conds:  # a malformed condition fails before anything is read
        parse_threshold(cond)
    for cond in paired_conds:
        pr.parse_paired(cond)
    card_old = load_side(Path(old), what="OLD")
    card_new, renames = match_judges(card_old, load_side(Path(new), what="NEW"), list(match or []))
    res = compare_cards(card_old, card_new, card_conds)
    res["paired"] = []
    if paired or paired_conds:
        rows_new = side_frame(new)
        if rows_new is not None and renames:
            rows_new = rows_new.assign(judge=rows_new["judge"].astype("str").replace(renames))  # a coded column: its texts
        res["paired"] = pr.compare_paired(side_frame(old), rows_new, list(card_old["judges"]),
                                          list(card_new["judges"]), rounds=rounds, seed=seed)
    res["failed"] += pr.check_paired(res["paired"], paired_conds)
    res["paired_moved"] = [m for r in res["paired"] for m in pr.paired_moves(r)]
    return card_old, card_new, res


def _check_outputs(path: Path, what: str) -> None:
    """A certify folder is read only when its files match its outputs manifest (``biasbound verify``'s file
    check): an edited summary.json, or a folder without a manifest, is refused in one sentence."""
    from biasbound._exceptions import InputError
    from biasbound._integrity import check_manifest
    from biasbound._untrusted import shown
    from biasbound.pipeline._staging import OUTPUT_LIKE

    folder = path if path.is_dir() else path.parent
    problems, _, _ = check_manifest(folder, owned=OUTPUT_LIKE)
    if problems:
        raise InputError(f"The '{what}' argument of compare names {shown(str(path))!r}, whose files do not match "
                         f"their outputs manifest ({shown(problems[0][1])}); run 'biasbound verify' on it, or "
                         "certify again.")


def audit_new_judgments(old: Path, new: Path) -> list[dict[str, Any]]:
    """When NEW is judgments and OLD a certify folder: each judge certificate of OLD audited on NEW
    (``biasbound audit``'s route); ``violated`` = the new judgments contradict the certificate."""
    from biasbound._exceptions import InputError
    from biasbound.commands.audit import audit_on_files

    folder = Path(old) if Path(old).is_dir() else Path(old).parent
    out = []
    for cert in sorted(folder.glob("certificate*.json")):
        if cert.name == "certificates.json":
            continue
        try:
            outcome = audit_on_files(cert, [new])
        except InputError as exc:
            out.append({"certificate": cert.name, "judge": None, "verdict": "not audited", "reason": str(exc)})
            continue
        judge = (outcome.certificate.get("scope") or {}).get("judge")
        if outcome.verification_error:  # an edited certificate is not audited (biasbound audit's rule)
            out.append({"certificate": cert.name, "judge": judge, "verdict": outcome.verdict,
                        "reason": outcome.verification_error})
            continue
        worst = outcome.audit.worst  # the worst (model, generator) part leads: a mean over models could hide one
        res = worst.result
        out.append({"certificate": cert.name, "judge": judge, "verdict": outcome.verdict, "part": worst.label,
                    "probability": res.exact_probability, "lcb": getattr(res, "exact_lcb", None),
                    "ucb": res.exact_ucb, "delta": res.delta})
    return out


def _rank_moves(old: dict[str, Any], new: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    ro, rn = old.get("ranks") or {}, new.get("ranks") or {}
    if not ro or not rn:
        return out
    pos_new = {m: k + 1 for k, m in enumerate(rn["models"])}
    for k, m in enumerate(ro["models"]):
        lo, hi = ro["rank_interval"].get(m, [k + 1, k + 1])
        r = pos_new.get(m)
        if r is not None and not (lo <= r <= hi):
            out.append({"model": m, "old_rank": k + 1, "old_interval": [lo, hi], "new_rank": r})
    return out


def compare_cards(old: dict[str, Any], new: dict[str, Any], fail_if: list[str]) -> dict[str, Any]:
    """Figures moved beyond their intervals, rank moves and failed conditions of NEW against OLD."""
    from biasbound.card import check_card, moved_figures

    failed = check_card(new, fail_if)
    moved = moved_figures(old, new)
    ranks = {j: _rank_moves(old["judges"][j], c) for j, c in new["judges"].items() if j in old["judges"]}
    orders = {}
    for j, c in new["judges"].items():
        mo, mn = ((old["judges"].get(j) or {}).get("ranks") or {}).get("models"), (c.get("ranks") or {}).get("models")
        common = [m for m in (mo or []) if m in set(mn or [])]
        if len(common) > 2:
            from scipy import stats

            pos_n = {m: k for k, m in enumerate(mn or [])}
            rho = stats.spearmanr(range(len(common)), [pos_n[m] for m in common]).statistic
            orders[j] = {"models": len(common), "spearman": float(rho),
                         "changed": sum(1 for k, m in enumerate(common)
                                        if sorted(common, key=pos_n.__getitem__).index(m) != k)}
    return {"failed": failed, "moved": moved, "rank_moves": {j: v for j, v in ranks.items() if v}, "orders": orders,
            "common": [j for j in new["judges"] if j in old["judges"]],
            "only_old": [j for j in old["judges"] if j not in new["judges"]],
            "only_new": [j for j in new["judges"] if j not in old["judges"]]}


def _cell(f: dict[str, Any]) -> str:
    v = f.get("value")
    if v is None:
        return "—"
    if f.get("lo") is None:
        return f"{float(v):.4g}"
    return f"{float(v):.4g} [{float(f['lo']):.4g}, {float(f['hi']):.4g}]"


def print_comparison(old: dict[str, Any], new: dict[str, Any], res: dict[str, Any], console: Console) -> None:
    from biasbound._exceptions import InputError
    from biasbound.card import card_figure

    moved = {(m["judge"], m["figure"]) for m in res["moved"]}
    for judge in res["common"]:
        co, cn = old["judges"][judge], new["judges"][judge]
        t = Table(title=f"Judge card — {escape(judge)}: OLD → NEW (95% intervals)")
        for c in ("figure", "old", "new", ""):
            t.add_column(c)
        gens = [g for g in (cn.get("generators") or {}) if g in (co.get("generators") or {})]
        names = [f"{f}:{g}" for g in gens for f in ("flip_rate", "strict_reversal", "mean_shift", "delta_star")]
        names += ["position_preference", "bias_radius", "alpha", "bootstrap_separability", "bias_robust_separability",
                  "cost_per_1000"]
        for name in names:
            try:
                a, b = card_figure(co, name), card_figure(cn, name)
            except InputError:
                continue
            if a["value"] is None and b["value"] is None:
                continue
            flag = "[bold red]MOVED[/]" if (judge, name) in moved else ""
            t.add_row(name, _cell(a), _cell(b), flag)
        console.print(t)
        o = res.get("orders", {}).get(judge)
        if o:
            console.print(f"  ranks: {o['changed']} of {o['models']} models changed rank; Spearman old vs new "
                          f"{o['spearman']:.4f}", highlight=False)
        for r in res["rank_moves"].get(judge, []):
            console.print(f"  rank moved: {escape(r['model'])} {r['old_rank']} → {r['new_rank']} (old 95% rank interval "
                          f"{r['old_interval'][0]}–{r['old_interval'][1]})", highlight=False)
    for j in res["only_old"]:
        console.print(f"judge {escape(j)}: only in OLD", highlight=False)
    for j in res["only_new"]:
        console.print(f"judge {escape(j)}: only in NEW", highlight=False)
    for a in res.get("audits", []):
        if "probability" not in a:  # not audited: bad input, or a certificate that does not verify
            console.print(f"OLD {escape(a['certificate'])} not audited on NEW ({a['verdict']}): {escape(a['reason'])}",
                          highlight=False)
            continue
        head = "[bold red]CONTRADICTED[/]" if a["verdict"] == "violated" else a["verdict"]
        console.print(f"{head}: OLD {escape(a['certificate'])} (judge {escape(str(a['judge']))}) audited on the new "
                      f"judgments, worst part {escape(a['part'])}: P(||M(D) − M(D')|| > τ) = {a['probability']:.3g} "
                      f"(upper bound {a['ucb']:.3g}; δ = {a['delta']:g})", highlight=False)
    for line in res["failed"]:
        console.print(f"[bold red]FAIL[/] {escape(line)}", highlight=False)


def register(app: typer.Typer) -> None:
    """Add the ``compare`` command to ``app``."""

    @app.command("compare")
    def compare_command(
        old: Path = typer.Argument(..., metavar="OLD", help="A certify output folder (or its summary.json)."),
        new: Path = typer.Argument(..., metavar="NEW", help="A certify output folder, its summary.json, or judgment "
                                   "files (card from the data alone)."),
        fail_if: list[str] = typer.Option([], "--fail-if", help="FIGURE>VALUE (or <, >=, <=) that fails the check on "
                                          "NEW, e.g. flip_rate>0.1, bias_radius>0.5, position_preference>0.6; "
                                          "FIGURE:GENERATOR picks a generator (flip_rate:rerun). Repeatable."),
        allow_moves: bool = typer.Option(False, "--allow-moves", help="Exit 0 when figures moved beyond their "
                                         "intervals (only --fail-if conditions fail the check)."),
        paired: bool = typer.Option(True, "--paired/--no-paired", help="When both sides hold the same items: exact "
                                    "McNemar on verdicts and flips, paired bootstrap of score and flip-rate "
                                    "differences (--fail-if paired_flip_rate_p<0.01, paired_score_diff<-0.02, ...)."),
        rounds: int = typer.Option(2000, "--rounds", min=100, help="Rounds of the paired bootstrap over items."),
        seed: int = typer.Option(0, "--seed", help="Seed of the paired bootstrap."),
        markdown: Path | None = typer.Option(None, "--markdown", help="Append the outcome and NEW's judge card as "
                                             "Markdown to this file (in GitHub Actions: $GITHUB_STEP_SUMMARY)."),
        json_out: Path | None = typer.Option(None, "--json", help="Write the outcome as JSON to this file (exit code, "
                                             "failed conditions, moved figures, paired results) for CI tools."),
        match: list[str] = typer.Option([], "--match", help="OLD_JUDGE=NEW_JUDGE: compare these two judges (when "
                                        "the names differ). Repeatable."),
    ) -> None:
        """Compare two judge cards: figures moved beyond their 95% intervals, rank moves, --fail-if thresholds.
        Exit 0 ok, 1 a threshold failed or a figure moved, 2 bad input."""
        from biasbound import paired as pr

        card_old, card_new, res = compare_sides(old, new, fail_if, match=list(match), paired=paired, rounds=rounds,
                                                seed=seed)
        new_is_judgments = not ((new.is_dir() and (new / "summary.json").is_file()) or new.name == "summary.json")
        res["audits"] = audit_new_judgments(old, new) if new_is_judgments else []
        contradicted = [a for a in res["audits"] if a["verdict"] in ("violated", "does not verify")]
        console = Console()
        print_comparison(card_old, card_new, res, console)
        pr.print_paired(res["paired"], console)
        n_moved = len(res["moved"]) + sum(len(v) for v in res["rank_moves"].values()) + len(res["paired_moved"])
        verdict = []
        if res["failed"]:
            verdict.append(f"{len(res['failed'])} --fail-if condition(s) hold")
        if contradicted:
            verdict.append(f"{len(contradicted)} certificate(s) of OLD contradicted by the new judgments")
        if n_moved:
            verdict.append(f"{n_moved} figure(s)/rank(s) moved beyond their 95% intervals"
                           + (" (allowed)" if allow_moves else ""))
        text = "; ".join(verdict) if verdict else "no figure moved beyond its interval; every condition passes"
        console.print(text, highlight=False)
        failed = bool(res["failed"] or contradicted or (n_moved and not allow_moves))
        if markdown is not None:
            from biasbound.report.markdown import compare_markdown, write_markdown

            write_markdown(markdown, compare_markdown(card_old, card_new, res, verdict=text, failed=failed))
        if json_out is not None:
            from biasbound.report.markdown import write_outcome_json

            write_outcome_json(json_out, res, verdict=text, exit_code=EXIT_FAILED if failed else 0,
                               old=str(old), new=str(new))
        if failed:
            raise typer.Exit(EXIT_FAILED)


def side_frame(path: Any) -> Any:
    """The per-item rows of one side of ``compare``: its judgment table when it is judgment files, a certify folder's
    ``scores.parquet`` read as original judgments (verdicts and scores only, no neighbours), else None."""
    import pandas as pd

    from biasbound.data.loading import load_inputs

    p = Path(path)
    folder = p if p.is_dir() else p.parent if p.name == "summary.json" else None
    if folder is not None and (folder / "summary.json").is_file():
        f = folder / "scores.parquet"
        if not f.is_file():
            return None
        s = pd.read_parquet(f, columns=["judge", "model", "item_id", "original"])
        return pd.DataFrame({"judge": s["judge"].astype(str), "model": s["model"], "item_id": s["item_id"],
                             "score": s["original"].astype(float), "game": 0, "variant": "original", "rerun": 0})
    return load_inputs([p]).frame

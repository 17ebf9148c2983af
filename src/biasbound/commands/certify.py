"""`biasbound certify INPUT... --out DIR`: certify existing judge runs (loaders → pipeline.certify).

Inputs are detected by content (:func:`detect_format`):

- an inspect_ai log (``.eval``, or a ``.json`` log) or a folder of them → :mod:`biasbound.data.inspect_log`;
- an AlpacaEval ``annotations.json`` (a JSON array of records with ``generator_1``/``generator_2``/
  ``preference``) or a folder holding them → :mod:`biasbound.data.alpaca_eval`;
- a FastChat MT-Bench ``*_single.jsonl`` / ``*_pair.jsonl`` or a folder holding them →
  :mod:`biasbound.data.mt_bench`;
- any other folder, or a ``.jsonl``/``.json`` whose first record has ``games``: Arena-Hard-Auto;
- a CSV whose header has ``winner_orig_order``: LLMBar's both-order table;
- a table (CSV, TSV, JSON lines or array) with ``model_a``, ``model_b``, ``winner`` and a question id:
  a pairwise battle table → :mod:`biasbound.data.battles`;
- anything else (CSV, TSV, JSONL, Parquet, optionally gzipped): a generic long table.

``--generators auto`` (the default) uses the neighbours the data hold: ``swap`` when there are
game-2 judgments, ``variant:NAME`` for every variant, ``rerun`` when there are reruns; (judge,
model) groups without a neighbour of each of them are left out, and named.
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: pandas and numpy load when a command runs
    import pandas as pd

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from biasbound._exceptions import BiasboundError, InputError
from biasbound._validation import cli_command
from biasbound.parameters import old_option, option, renamed, validate

__all__ = [
    "EXIT_VIOLATED",
    "LoadedInputs",
    "detect_format",
    "load_inputs",
    "natural_neighbors",
    "observed_sensitivity",
    "parse_beta",
    "parse_columns",
    "parse_scale",
    "parse_score_map",
    "print_inputs",
    "print_judge_card",
    "print_observed_sensitivity",
    "print_summary",
    "register",
    "restrict_to_groups_with",
]

#: Exit code of ``certify`` when an audit contradicts a certificate (0 = certified, 2 = bad input or
#: a judge that cannot be certified at (τ, δ); see the README's exit-code table).
EXIT_VIOLATED = 1


#: With more judges than this, the terminal shows one compact row per judge instead of each certificate.
_DETAILED_JUDGES = 5


@dataclass
class LoadedInputs:
    """Several loaded inputs concatenated: ``frame`` and a ``report`` dict keyed by input path."""

    frame: pd.DataFrame
    report: dict[str, Any] = field(default_factory=dict)
    #: the reading options (and the generators ``--generators auto`` kept), recorded so that
    #: ``biasbound verify --judgments`` reads the inputs the same way
    options: dict[str, Any] = field(default_factory=dict)


def _first_line(path: Path) -> str:
    from biasbound.data._io import open_text

    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def _first_json(path: Path) -> Any:
    try:
        return json.loads(_first_line(path))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, RecursionError):
        return None


def _folder_kind(path: Path) -> str:
    from biasbound.data.alpaca_eval import find_annotation_files
    from biasbound.data.inspect_log import find_logs
    from biasbound.data.mt_bench import find_judgment_files

    if find_logs(path):
        return "inspect"
    if find_annotation_files(path):
        return "alpaca_eval"
    if find_judgment_files(path):
        return "mt_bench"
    if not any(p.name.lower().endswith((".jsonl", ".jsonl.gz")) for p in path.rglob("*") if p.is_file()):
        tables = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                        and p.name.lower().endswith(_TABLE_SUFFIXES))
        if tables:  # a folder of long tables: the folder readers are for the tools' own layouts
            raise InputError(f"{path}: a folder is read as Arena-Hard, AlpacaEval, MT-Bench or inspect_ai output, and "
                             f"this one holds tables ({tables[0].name}{' …' if len(tables) > 1 else ''}); name the table "
                             "files themselves, e.g. " + " ".join(shlex.quote(str(t)) for t in tables[:2]) + ".")
    return "arena-hard"


_TABLE_SUFFIXES = tuple(f".{ext}{c}" for ext in ("csv", "tsv", "json", "parquet", "pq")
                        for c in ("", ".gz", ".bz2", ".xz"))


def detect_format(path: Path, columns: dict[str, str] | None = None) -> str:
    """The reader for ``path``: ``inspect``, ``alpaca_eval``, ``mt_bench``, ``arena-hard``, ``llmbar``, ``battles`` or ``table``.

    A table is a battle table when its columns (after ``columns``, ``--columns``) are a battle table's or hold
    the two sides ``model_a`` and ``model_b`` (Parquet too, from its schema)."""
    from biasbound.data.alpaca_eval import is_annotation_file
    from biasbound.data.inspect_log import is_log_file
    from biasbound.data.battles import looks_like_battles
    from biasbound.data.mt_bench import kind_of_record

    def is_battle_table(cols: list[str]) -> bool:
        return looks_like_battles(cols, columns)

    if path.is_dir():
        return _folder_kind(path)
    name = path.name.lower()
    base = name[:-3] if name.endswith(".gz") else name
    if base.endswith(".eval") or (base.endswith(".json") and is_log_file(path)):
        return "inspect"
    if base.endswith(".json") and is_annotation_file(path):
        return "alpaca_eval"
    if base.endswith((".jsonl", ".json")):
        rec = _first_json(path)
        if isinstance(rec, dict) and "games" in rec:
            return "arena-hard"
        if kind_of_record(rec) is not None:
            return "mt_bench"
        if isinstance(rec, dict) and is_battle_table(list(rec)):
            return "battles"
        if base.endswith(".json"):
            try:
                from biasbound.data._common import iter_json_array

                first = next(iter(iter_json_array(path)), (0, None))[1]
            except (BiasboundError, OSError, UnicodeDecodeError, RecursionError):
                first = None
            if isinstance(first, dict) and is_battle_table(list(first)):
                return "battles"
        return "table"
    if base.endswith((".csv", ".tsv")):
        head = _first_line(path)
        if "winner_orig_order" in head:
            return "llmbar"
        import csv

        fields = next(csv.reader([head], delimiter="\t" if base.endswith(".tsv") else ","), [])
        return "battles" if is_battle_table([f.strip() for f in fields]) else "table"
    if base.endswith((".parquet", ".pq")):
        return "battles" if is_battle_table(_parquet_columns(path)) else "table"
    return "table"


def _parquet_columns(path: Path) -> list[str]:
    """A Parquet file's column names from its schema ([] when it is no readable Parquet: the reader says why)."""
    import pyarrow.parquet as pq

    try:
        return [str(c) for c in pq.read_schema(path).names]
    except Exception:  # noqa: BLE001 - a damaged file is named by the table reader, with its path
        return []


_kind = detect_format


def load_inputs(
    paths: Sequence[str | Path],
    *,
    scale: tuple[float, float] | None = None,
    skip_bad: bool = False,
    columns: dict[str, str] | None = None,
    llmbar_view: str = "output_1",
    ties: str = "missing",
    score_map: dict[str, float] | None = None,
    baseline: str | None = None,
    winner_map: dict[str, str] | None = None,
) -> LoadedInputs:
    """Load and concatenate judgment inputs, detecting each one's format (:func:`detect_format`).

    Parameters
    ----------
    paths:
        Arena-Hard folders or files, LLMBar CSVs, AlpacaEval annotations, MT-Bench judgment
        files, inspect_ai logs or generic long tables.
    scale:
        Raw score scale of generic tables and of numeric inspect_ai scores (inferred, and
        reported as inferred, when None).
    skip_bad:
        Skip (and count) bad lines instead of raising.
    columns:
        Contract name → file column of generic long tables (``{"item_id": "question"}``).
    llmbar_view:
        ``"output_1"``, the one view (see :func:`biasbound.data.load_llmbar`; its gold label is the human label).
    ties:
        MT-Bench pairwise ties: ``"missing"`` or ``"half"``.
    score_map:
        inspect_ai score value → score in [0, 1] (replaces the C/P/I rule).
    baseline:
        Arena-Hard's baseline model (its files do not name it): its own ``arena_hard_score`` is 50.
    winner_map:
        Battle tables: winner value → ``a``, ``b``, ``tie`` or ``""`` (missing), for numeric winners
        (:func:`biasbound.data.battles.parse_winner_map`).

    Returns
    -------
    LoadedInputs
        ``report[path]`` holds the load report, ``format``, and for the tool readers
        ``integration`` (score rule, what could not be mapped).
    """
    import pandas as pd

    from biasbound.data.arena_hard import load_arena_hard
    from biasbound.data.tables import load_llmbar, load_table

    where = cli_command() or "load_inputs"
    what = "'INPUT' argument" if where != "audit" else "'--neighbor-file' option"
    if not paths:
        raise InputError(f"The {what} of {where} must name at least one file or folder. Got none.")
    from biasbound.data._inputs import check_input, content_record, display_names, relabel

    frames, report = [], {}
    kinds = {}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"The {what} of {where} names {str(p)!r}, which does not exist.")
        check_input(p)
        if str(p) in kinds:
            raise InputError(f"The {what} of {where} names {str(p)!r} twice; give each input once.")
        kinds[str(p)] = detect_format(p, columns)
    # AlpacaEval inputs are read together: a model's folder and its _verbose/_concise folders given as
    # separate arguments are one model with its variants
    alpaca = [q for q, k in kinds.items() if k == "alpaca_eval"]
    grouped = [Path(q) for q in kinds if kinds[q] != "alpaca_eval"] + ([alpaca] if len(alpaca) > 1 else
                                                                       [Path(q) for q in alpaca])
    # every input is named in the outputs by a display name (its file name, or as many trailing folders as tell two
    # apart), never by the path as typed; its content (SHA-256, size, format) is recorded with the reading options
    shown_as = display_names(list(kinds))
    for p in grouped:
        if isinstance(p, list):
            from biasbound.data.alpaca_eval import load_alpaca_eval

            js = load_alpaca_eval([Path(q) for q in p], skip_bad=skip_bad)
            frames.append(js.frame)
            rep = js.report.to_dict() if hasattr(js.report, "to_dict") else dict(js.report)
            rep["format"] = "alpaca_eval"
            rep["integration"] = js.frame.attrs.get("integration")
            for q in p:
                rep = relabel(js, rep, str(q), shown_as[str(q)])
            report[" + ".join(shown_as[str(q)] for q in p)] = rep
            continue
        kind = kinds[str(p)]
        if kind == "arena-hard":
            js = load_arena_hard(p, skip_bad=skip_bad, baseline=baseline)
        elif kind == "llmbar":
            js = load_llmbar(p, view=llmbar_view, skip_bad=skip_bad)
        elif kind == "alpaca_eval":
            from biasbound.data.alpaca_eval import load_alpaca_eval

            js = load_alpaca_eval(p, skip_bad=skip_bad)
        elif kind == "mt_bench":
            from biasbound.data.mt_bench import load_mt_bench

            js = load_mt_bench(p, ties=ties, skip_bad=skip_bad)
        elif kind == "battles":
            from biasbound.data.battles import load_battles

            js = load_battles(p, skip_bad=skip_bad, columns=columns, winner_map=winner_map)
        elif kind == "inspect":
            from biasbound.data.inspect_log import load_inspect_log

            js = load_inspect_log(p, score_map=score_map, scale=scale, skip_bad=skip_bad)
        else:
            js = load_table(p, scale=scale, skip_bad=skip_bad, columns=columns)
        frames.append(js.frame)
        rep = js.report.to_dict() if hasattr(js.report, "to_dict") else dict(js.report)
        rep["format"] = kind
        if "integration" in js.frame.attrs:
            rep["integration"] = js.frame.attrs["integration"]
        if js.frame.attrs.get("judge_from_file"):
            rep["judge_from_file"] = js.frame.attrs["judge_from_file"]
        rep = relabel(js, rep, str(p), shown_as[str(p)])
        if shown_as[str(p)] in report:
            raise InputError(f"The {what} of {where} names {str(p)!r} twice; give each input once.")
        report[shown_as[str(p)]] = rep
    frame = pd.concat(frames, ignore_index=True)
    if len(frames) > 1:
        frame = _across_inputs(frame, report, skip_bad)
    options = {"scale": None if scale is None else list(scale), "skip_bad": skip_bad, "columns": columns,
               "llmbar_view": llmbar_view, "ties": ties, "score_map": score_map, "neighbors_auto": None,
               "inputs": [content_record(Path(q), shown_as[q], kinds[q]) for q in kinds]}
    if winner_map is not None:  # (recorded only when given: older records stay as they were)
        options["winner_map"] = winner_map
    return LoadedInputs(frame=frame, report=report, options=options)


def _check_options_used(report: dict[str, Any], where: str, **given: Any) -> None:
    """An option that no input reads is a mistake to say, never to ignore (``--columns`` names columns of
    long tables; ``--scale`` the raw scale of long tables and numeric inspect_ai scores; ``--score-map``
    inspect_ai values): the user would believe it changed the scores."""
    readers = {"columns": ("table", "battles"), "scale": ("table", "inspect"), "score_map": ("inspect",),
               "winner_map": ("battles",)}
    kinds = {path: rep.get("format") for path, rep in report.items()}
    for name, value in given.items():
        if value is None or any(k in readers[name] for k in kinds.values()):
            continue
        path, kind = next(iter(kinds.items()))
        raise InputError(f"The '--{name.replace('_', '-')}' option of {where} applies to "
                         f"{' and '.join(_FORMAT_WORDS[k] for k in readers[name])} only, "
                         f"but {path!r} is read as {_FORMAT_WORDS.get(str(kind), str(kind))}, whose scores the reader "
                         "maps itself; drop it.")


_FORMAT_WORDS = {"table": "long tables", "inspect": "inspect_ai logs", "alpaca_eval": "AlpacaEval annotations",
                 "mt_bench": "MT-Bench judgments", "arena-hard": "Arena-Hard judgments", "llmbar": "LLMBar judgments",
                 "battles": "battle tables"}


def _across_inputs(frame: pd.DataFrame, report: dict[str, Any], skip_bad: bool) -> pd.DataFrame:
    """The same judgment (judge, model, item, variant, rerun, game) in two inputs is an error naming both
    lines; with ``skip_bad`` the first copy is kept and the later one counted in its input's report."""
    from biasbound.data.tables import check_duplicates

    skipped: list[tuple[str, int | None, str]] = []
    kept = check_duplicates(frame, skip_bad, skipped)
    for src, line, why in skipped:
        rep = report.get(src)
        if rep is not None:
            rep.setdefault("skipped", []).append([src, line, why + " (in another input)"])
            rep["n_skipped"] = len(rep["skipped"])
    return kept.reset_index(drop=True) if skipped else frame


def check_baseline(frame: pd.DataFrame, baseline: str | None, where: str, report: dict[str, Any] | None = None) -> None:
    """An unknown ``--baseline`` is a typo to say, never a silent no-op: it must be a judged model or a
    model the readers found the others compared against (MT-Bench's model_2, AlpacaEval's generator_1)."""
    if baseline is None:
        return
    models = sorted(set(frame["model"].astype(str)))
    judged_against = {str(b) for rep in (report or {}).values() if isinstance(rep, dict)
                      for b in ((rep.get("integration") or {}).get("baselines") or [])}
    if baseline not in models and baseline not in judged_against:
        shown = ", ".join(models[:8]) + (f" … ({len(models)} models)" if len(models) > 8 else "")
        raise InputError(f"The '--baseline' option of {where} names {baseline!r}, which is not a model in the judgments "
                         f"({shown}); give one of them, or leave it out.")


def natural_neighbors(frame: pd.DataFrame) -> tuple[str, ...]:
    """The neighbours a judgment table holds: ``swap`` (game-2 rows), ``variant:NAME``, ``rerun``
    (:func:`biasbound.card.data_generators`)."""
    from biasbound.card import data_generators

    return data_generators(frame)


def restrict_to_groups_with(loaded: LoadedInputs, generators: Sequence[str]) -> LoadedInputs:
    """Keep the (judge, model) groups that hold a neighbour of every generator; list the others.

    Used by ``--generators auto``: in AlpacaEval's results, say, only a few models have
    ``_verbose``/``_concise`` runs; the others have no neighbour to certify with. Their rows are
    left out (never scored), and every input's ``report[path]["neighbors_auto"]`` names them.
    """
    import pandas as pd

    frame = loaded.frame
    have: set[tuple[str, str]] | None = None
    by_judge: dict[str, set[str]] = {}
    for g in generators:
        if g == "swap":
            mask = frame["game"] == 2
        elif g == "rerun":
            mask = frame["rerun"] > 0
        else:
            mask = frame["variant"].astype(str) == g.split(":", 1)[1]
        groups = set(map(tuple, frame.loc[mask & frame["score"].notna(), ["judge", "model"]].astype(str).to_numpy().tolist()))
        for j, _ in groups:
            by_judge.setdefault(j, set()).add(g)
        have = groups if have is None else have & groups
    if len({frozenset(v) for v in by_judge.values()}) > 1:
        listing = "; ".join(f"{j}: {', '.join(g for g in generators if g in v)}" for j, v in sorted(by_judge.items()))
        raise InputError(f"The '--generators auto' option of certify found different neighbours per judge ({listing}); "
                         "certify those judges in separate calls, or name the generators with --generators.")
    have = have or set()
    keys = list(zip(frame["judge"].astype(str), frame["model"].astype(str)))
    keep = pd.Series([k in have for k in keys], index=frame.index)
    left: dict[str, list[str]] = {}
    for j, m in sorted(set(keys) - have):
        left.setdefault(j, []).append(m)
    if not have:
        raise InputError(f"The '--generators auto' option of certify found no (judge, model) with a neighbour of every "
                         f"generator found ({', '.join(generators)}); name the generators with --generators.")
    auto = {"generators": list(generators), "left_out": left}
    report = {path: {**rep, "neighbors_auto": auto} for path, rep in loaded.report.items()}  # kept in load_report.json
    return LoadedInputs(frame=frame[keep.to_numpy()].reset_index(drop=True), report=report,
                        options={**loaded.options, "neighbors_auto": list(generators)})


def parse_columns(text: str | None) -> dict[str, str] | None:
    """``"judge=annotator,item_id=question"`` → ``{"judge": "annotator", "item_id": "question"}``."""
    if text is None or not text.strip():
        return None
    allowed = ("judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict",
               "question_id", "model_a", "model_b", "winner", "group")  # the last five: battle tables
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in allowed or not value:
            raise InputError(f"The '--columns' option of certify must be NAME=COLUMN pairs with NAME among "
                             f"{', '.join(allowed)}, separated by commas. Got {part.strip()!r} instead.")
        if key in out:
            raise InputError(f"The '--columns' option of certify maps {key!r} twice ({key}={out[key]} and "
                             f"{key}={value}); give each NAME once.")
        out[key] = value
    return out


def parse_score_map(text: str | None) -> dict[str, float] | None:
    """``"C=1,P=0.5,I=0"`` → ``{"C": 1.0, "P": 0.5, "I": 0.0}`` (each score in [0, 1])."""
    if text is None or not text.strip():
        return None
    out: dict[str, float] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        try:
            v = float(value)
        except ValueError:
            v = float("nan")
        if not sep or not key.strip() or not (0.0 <= v <= 1.0) or key.strip() in out:
            raise InputError(f"The '--score-map' option of certify must be VALUE=SCORE pairs with SCORE in [0, 1], "
                             f"separated by commas. Got {part.strip()!r} instead.")
        out[key.strip()] = v
    return out


def print_inputs(loaded: LoadedInputs, console: Console | None = None) -> None:
    """Print, per input, its format, what was read, the score rule or scale, and what was not mapped."""
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


def parse_scale(text: str | None) -> tuple[float, float] | None:
    """``"1,10"`` → (1.0, 10.0)."""
    if text is None:
        return None
    parts = text.split(",")
    try:
        lo, hi = (float(p) for p in parts)
        if not (math.isfinite(lo) and math.isfinite(hi) and math.isfinite(hi - lo)):
            raise ValueError(text)
    except ValueError:
        raise InputError(f"The '--scale' option of certify must be 'lo,hi' with lo < hi. Got {text!r} instead.") from None
    if not lo < hi:
        raise InputError(f"The '--scale' option of certify must be 'lo,hi' with lo < hi. Got {text!r} instead.")
    return lo, hi


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


def register(app: typer.Typer) -> None:
    """Add the ``certify`` command to ``app``."""

    @app.command("certify")
    def certify_command(
        inputs: list[Path] = typer.Argument(..., help="Judgments: Arena-Hard files/folders, LLMBar CSVs, AlpacaEval "
                                            "annotations, MT-Bench judgment files, inspect_ai logs, or long tables."),
        out: str = typer.Option(..., "--out", help="Output folder."),  # str: typer reads "" as Path(".")
        tau: float = option("tau"),
        delta: float = option("delta"),
        neighbors: str = option("neighbors", "auto"),
        old_neighbors: str | None = old_option("neighbors"),
        method: str = option("method"),
        combine: str = option("combine"),
        alpha: float | None = option("alpha"),
        beta: str = option("beta", "0.05"),
        holdout: float = option("holdout"),
        center: str = option("center"),
        view: str = option("view"),
        seed: int = option("seed"),
        scale: str | None = typer.Option(None, "--scale", help="Raw score scale lo,hi of generic tables."),
        jitter_adjust: bool = option("jitter_adjust"),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and count bad lines instead of stopping."),
        columns: str | None = typer.Option(None, "--columns",
                                           help="Long tables: NAME=COLUMN pairs, e.g. judge=annotator,item_id=question,score=rating."),
        mt_bench_ties: str = typer.Option("missing", "--mt-bench-ties", help="MT-Bench pairwise ties: missing or half."),
        score_map: str | None = typer.Option(None, "--score-map",
                                             help="inspect_ai score values to [0, 1], e.g. C=1,P=0.5,I=0 (default rule: C/P/I/N)."),
        winner_map: str | None = typer.Option(None, "--winner-map",
                                              help="Battle tables: winner values to outcomes, e.g. 0=model_a,1=model_b,2=tie "
                                                   "(OUTCOME: model_a, model_b, tie or missing)."),
        bootstrap_rounds: int = option("bootstrap_rounds"),
        plots: bool = option("plots"),
        baseline: str | None = typer.Option(None, "--baseline", help="The model pairwise verdicts compare against "
                                            "(marked in leaderboard.csv; its own win rate is 50, as Arena-Hard pins "
                                            "it; the certified scores do not depend on it)."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress display (stderr)."),
        hamming: str = option("hamming", "1"),
        sigma: float | None = option("sigma"),
        range_bound: bool = option("range_bound"),
        deterministic_judge: bool = option("deterministic_judge"),
        human_labels: str | None = option("human_labels"),
        human_level: float = option("human_level"),
        sign_key: Path | None = typer.Option(None, "--sign-key", envvar="BIASBOUND_SIGN_KEY", show_envvar=True,
                                             help="Ed25519 private key (biasbound keygen) to sign the outputs manifest; "
                                                  "never copied into the outputs."),
    ) -> None:
        """Certify judge scores: measure sensitivity on observed neighbours, shrink, add calibrated noise, audit."""
        from biasbound._progress import step
        from biasbound.pipeline import certify
        from biasbound.pipeline._settings import RANGE_GENERATOR, check_settings, holds_neighbors
        from biasbound.pipeline._staging import check_out

        from biasbound._validation import check_one_of

        neighbors = renamed(neighbors, old_neighbors, name="neighbors", command="certify", default="auto")
        hamming = validate("certify", hamming=hamming)["hamming"]  # "2" typed: the int 2 (recorded as such)
        human_level = validate("certify", human_level=human_level)["human_level"]
        raw_scale = parse_scale(scale)
        beta_value = parse_beta(beta)
        column_map = parse_columns(columns)
        value_map = parse_score_map(score_map)
        from biasbound.data.battles import parse_winner_map

        outcome_map = parse_winner_map(winner_map)
        mt_bench_ties = check_one_of(mt_bench_ties, "--mt-bench-ties", "certify", ("missing", "half"))
        auto = neighbors.strip().lower() == "auto"
        # certify's own parameter checks, run before any input is read: a bad option fails at once
        check_settings(tau=tau, delta=delta, neighbors="swap" if auto else neighbors, method=method, combine=combine,
                       alpha=alpha, beta=beta_value, holdout=holdout, seed=seed, view=view, center=center,
                       jitter_adjust=jitter_adjust and not auto, bootstrap_rounds=bootstrap_rounds, hamming=hamming,
                       sigma=sigma, deterministic_judge=deterministic_judge)
        out = check_out(out)  # an --out naming a file (or nothing) fails before any input is read
        if sign_key is not None:  # a wrong key file fails before any input is read
            from biasbound._integrity import load_private_key

            load_private_key(sign_key)
        with step(f"reading {len(inputs)} input(s)", enabled=not no_progress):
            loaded = load_inputs(inputs, scale=raw_scale, skip_bad=skip_bad, columns=column_map,
                                 ties=mt_bench_ties, score_map=value_map, baseline=baseline, winner_map=outcome_map)
        _check_options_used(loaded.report, "certify", scale=raw_scale, columns=column_map, score_map=value_map,
                            winner_map=outcome_map)
        from biasbound._assumptions import check_scale_used

        check_scale_used(loaded.frame["score"], raw_scale)
        check_baseline(loaded.frame, baseline, "certify", loaded.report)
        if baseline is None:  # an Arena-Hard checkout's config named it (the reader said so): mark and pin it too
            named = {b for rep in loaded.report.values() if rep.get("format") == "arena-hard"
                     for b in ((rep.get("integration") or {}).get("baselines") or [])}
            baseline = next(iter(named)) if len(named) == 1 else None
        console = Console()
        print_inputs(loaded, console)
        if auto:
            found = natural_neighbors(loaded.frame)
            if not found and not range_bound:
                raise InputError("The '--generators auto' option of certify found no neighbours in the data (no game-2 "
                                 "judgment, no variant, no rerun); judge neighbours first (biasbound run, or the "
                                 "biasbound.inspect scorer), name a generator the data hold, or pass --range-bound to "
                                 "certify on the score range alone.")
            if found:
                neighbors = ",".join(found)
                console.print(f"neighbours found in the data: {escape(neighbors)}", highlight=False)
                loaded = restrict_to_groups_with(loaded, found)
                first: dict[str, Any] = next(iter(loaded.report.values()), {})
                left_out = first.get("neighbors_auto", {}).get("left_out", {})
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
            else:
                neighbors = RANGE_GENERATOR
        from biasbound.pipeline._settings import parse_neighbors

        if range_bound and not holds_neighbors(loaded.frame, parse_neighbors(neighbors)):
            neighbors = RANGE_GENERATOR
        elif range_bound and not auto:  # said, never ignored silently
            console.print(f"--range-bound is not used: the data hold the {neighbors} neighbours, which certify measures; "
                          "the score range alone is for data without neighbours", soft_wrap=True, highlight=False,
                          markup=False)
        if neighbors == RANGE_GENERATOR:
            console.print("no neighbour in the data: certified on the score range alone (--range-bound); a neighbour is "
                          "any change of an item's score within the range, and the certificate holds for ANY judge on "
                          "this range", highlight=False)
        if neighbors != RANGE_GENERATOR:
            print_observed_sensitivity(loaded.frame, parse_neighbors(neighbors), console)
        try:
            result = certify(
                loaded, tau=tau, delta=delta, neighbors=neighbors, method=method, combine=combine, alpha=alpha,
                beta=beta_value, holdout=holdout, seed=seed, view=view, center=center,
                jitter_adjust=jitter_adjust, bootstrap_rounds=bootstrap_rounds, out=out, plots=plots,
                progress=not no_progress, baseline=baseline, skip_bad=skip_bad, hamming=hamming, sigma=sigma,
                range_bound=range_bound, deterministic_judge=deterministic_judge, sign_key=sign_key,
                human_labels=human_labels, human_level=human_level,
            )
        except BiasboundError as exc:  # print what was certified before the error propagates
            partial = getattr(exc, "partial_result", None)
            if partial is not None and partial.judges:
                print_summary(partial, console)
            raise
        print_summary(result, console)
        if result.human:
            from biasbound.human.show import print_human

            print_human(result, console)
        if result.violated:
            raise typer.Exit(EXIT_VIOLATED)

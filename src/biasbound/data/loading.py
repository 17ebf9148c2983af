"""The one door for judgment inputs: reading options, :func:`load_inputs` (what ``certify``, ``audit``,
``compare`` and ``verify --judgments`` read) and :func:`load`, its Python face (``bb.load``).

Each input's format is detected by content (:func:`biasbound.data.detect.detect_format`) and read by its reader:
long tables (CSV, TSV, JSON lines or array, Parquet; :func:`~biasbound.data.tables.load_table`), LLMBar's both-order
table, Arena-Hard-Auto, pairwise battle tables, FastChat MT-Bench, AlpacaEval annotations and inspect_ai logs.
Several inputs are concatenated into one table; every input is named in the outputs by a display name and recorded
by content (:mod:`biasbound.data._inputs`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from biasbound._exceptions import InputError
from biasbound._validation import cli_command
from biasbound.data.detect import FORMATS, detect_format

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "LoadedInputs",
    "check_baseline",
    "check_options_used",
    "detect_format",
    "load",
    "load_inputs",
    "parse_columns",
    "parse_scale",
    "parse_score_map",
    "restrict_to_groups_with",
]


@dataclass
class LoadedInputs:
    """Several loaded inputs concatenated: ``frame`` and a ``report`` dict keyed by input path."""

    frame: pd.DataFrame
    report: dict[str, Any] = field(default_factory=dict)
    #: the reading options (and the generators ``--generators auto`` kept), recorded so that
    #: ``biasbound verify --judgments`` reads the inputs the same way
    options: dict[str, Any] = field(default_factory=dict)


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
    where = cli_command() or "load_inputs"
    what = "'INPUT' argument" if where != "audit" else "'--neighbor-file' option"
    if not paths:
        raise InputError(f"The {what} of {where} must name at least one file or folder. Got none.")
    from biasbound.data._inputs import content_record, display_names, relabel

    kinds = _detect_all(paths, columns, what, where)
    # AlpacaEval inputs are read together: a model's folder and its _verbose/_concise folders given as
    # separate arguments are one model with its variants
    alpaca = [q for q, k in kinds.items() if k == "alpaca_eval"]
    grouped = [Path(q) for q in kinds if kinds[q] != "alpaca_eval"] + ([alpaca] if len(alpaca) > 1 else
                                                                       [Path(q) for q in alpaca])
    # every input is named in the outputs by a display name (its file name, or as many trailing folders as tell two
    # apart), never by the path as typed; its content (SHA-256, size, format) is recorded with the reading options
    shown_as = display_names(list(kinds))
    given = {"scale": scale, "skip_bad": skip_bad, "columns": columns, "llmbar_view": llmbar_view, "ties": ties,
             "score_map": score_map, "baseline": baseline, "winner_map": winner_map}
    frames, report = [], {}
    for p in grouped:
        if isinstance(p, list):
            from biasbound.data.alpaca_eval import load_alpaca_eval

            js = load_alpaca_eval([Path(q) for q in p], skip_bad=skip_bad)
            frames.append(js.frame)
            rep = _report_of(js, "alpaca_eval", together=True)
            for q in p:
                rep = relabel(js, rep, str(q), shown_as[str(q)])
            report[" + ".join(shown_as[str(q)] for q in p)] = rep
            continue
        kind = kinds[str(p)]
        js = _read(kind, p, given)
        frames.append(js.frame)
        rep = relabel(js, _report_of(js, kind), str(p), shown_as[str(p)])
        if shown_as[str(p)] in report:
            raise InputError(f"The {what} of {where} names {str(p)!r} twice; give each input once.")
        report[shown_as[str(p)]] = rep
    from biasbound.data.coded import concat_coded

    frame = concat_coded(frames)  # the inputs' coded columns stay coded (their texts' union as categories)
    if len(frames) > 1:
        frame = _across_inputs(frame, report, skip_bad)
    options = {"scale": None if scale is None else list(scale), "skip_bad": skip_bad, "columns": columns,
               "llmbar_view": llmbar_view, "ties": ties, "score_map": score_map, "neighbors_auto": None,
               "inputs": [content_record(Path(q), shown_as[q], kinds[q]) for q in kinds]}
    if winner_map is not None:  # (recorded only when given: older records stay as they were)
        options["winner_map"] = winner_map
    return LoadedInputs(frame=frame, report=report, options=options)


def _detect_all(paths: Sequence[str | Path], columns: dict[str, str] | None, what: str, where: str) -> dict[str, str]:
    """``{path as typed: format}`` in the order given; a missing, repeated or unreadable input is one sentence."""
    from biasbound.data._inputs import check_input

    kinds: dict[str, str] = {}
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputError(f"The {what} of {where} names {str(p)!r}, which does not exist.")
        check_input(p)
        if str(p) in kinds:
            raise InputError(f"The {what} of {where} names {str(p)!r} twice; give each input once.")
        kinds[str(p)] = detect_format(p, columns)
    return kinds


def _read(kind: str, p: Path, o: Mapping[str, Any]) -> Any:
    """One input read by the reader of its format, with the reading options that reader takes."""
    if kind == "arena-hard":
        from biasbound.data.arena_hard import load_arena_hard

        return load_arena_hard(p, skip_bad=o["skip_bad"], baseline=o["baseline"])
    if kind == "llmbar":
        from biasbound.data.tables import load_llmbar

        return load_llmbar(p, view=o["llmbar_view"], skip_bad=o["skip_bad"])
    if kind == "alpaca_eval":
        from biasbound.data.alpaca_eval import load_alpaca_eval

        return load_alpaca_eval(p, skip_bad=o["skip_bad"])
    if kind == "mt_bench":
        from biasbound.data.mt_bench import load_mt_bench

        return load_mt_bench(p, ties=o["ties"], skip_bad=o["skip_bad"])
    if kind == "battles":
        from biasbound.data.battles import load_battles

        return load_battles(p, skip_bad=o["skip_bad"], columns=o["columns"], winner_map=o["winner_map"])
    if kind == "inspect":
        from biasbound.data.inspect_log import load_inspect_log

        return load_inspect_log(p, score_map=o["score_map"], scale=o["scale"], skip_bad=o["skip_bad"])
    from biasbound.data.tables import load_table

    return load_table(p, scale=o["scale"], skip_bad=o["skip_bad"], columns=o["columns"])


def _report_of(js: Any, kind: str, *, together: bool = False) -> dict[str, Any]:
    """An input's entry in the load report: the reader's report, its format and the reader's notes (AlpacaEval
    inputs read ``together`` carry the reader's notes, and no table-only note)."""
    rep = js.report.to_dict() if hasattr(js.report, "to_dict") else dict(js.report)
    rep["format"] = kind
    if together:
        rep["integration"] = js.frame.attrs.get("integration")
        return rep
    if "integration" in js.frame.attrs:
        rep["integration"] = js.frame.attrs["integration"]
    if js.frame.attrs.get("judge_from_file"):
        rep["judge_from_file"] = js.frame.attrs["judge_from_file"]
    return rep


#: :func:`load`'s options: the keyword arguments of :func:`load_inputs`
_OPTIONS = ("scale", "skip_bad", "columns", "llmbar_view", "ties", "score_map", "baseline", "winner_map")


def load(path: str | Path | Sequence[str | Path], **options: Any) -> LoadedInputs:
    """Read judgments in any format ``biasbound certify`` reads, as certify reads them (``bb.load``).

    ``path`` is one file or folder, or several (concatenated, as certify's INPUT arguments): a long table (CSV, TSV,
    JSON lines or array, Parquet, optionally compressed), a pairwise battle table, LLMBar's both-order CSV, an
    Arena-Hard-Auto folder or judgment file, FastChat MT-Bench judgments, AlpacaEval annotations or inspect_ai logs;
    the format is detected by content (:func:`~biasbound.data.detect.detect_format`).

    ``options`` are :func:`load_inputs`'s reading options: ``scale``, ``skip_bad``, ``columns``, ``llmbar_view``,
    ``ties``, ``score_map``, ``baseline``, ``winner_map``. ``scale``, ``columns``, ``score_map`` and ``winner_map``
    may also be given as certify's options are typed (``scale="1,10"``, ``columns="item_id=question"``,
    ``score_map="C=1,I=0"``, ``winner_map="0=model_a,1=model_b,2=tie"``).

    Returns the :class:`LoadedInputs` that :func:`biasbound.pipeline.certify` takes: ``frame`` (the judgment table),
    ``report`` (per input: what was read, skipped and not mapped) and ``options`` (recorded in the certificate so that
    ``biasbound verify --judgments`` reads the inputs the same way).

    Examples
    --------
    >>> import biasbound as bb
    >>> loaded = bb.load("judgments.csv", scale=(1, 10))  # doctest: +SKIP
    >>> result = bb.certify(loaded, tau=0.05, delta=1e-6)  # doctest: +SKIP
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InputError(f"load takes the reading options {', '.join(_OPTIONS)}. Got {', '.join(map(repr, unknown))} "
                         "instead.")
    texts = {"scale": parse_scale, "columns": parse_columns, "score_map": parse_score_map}
    for name, parse in texts.items():
        if isinstance(options.get(name), str):
            options[name] = parse(options[name])
    if isinstance(options.get("winner_map"), str):
        from biasbound.data.battles import parse_winner_map

        options["winner_map"] = parse_winner_map(options["winner_map"])
    if options.get("scale") is not None:
        from biasbound.data.tables import check_scale

        options["scale"] = check_scale(options["scale"], "load")
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    return load_inputs(paths, **options)


def check_options_used(report: dict[str, Any], where: str, **given: Any) -> None:
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
                         f"{' and '.join(FORMATS[k] for k in readers[name])} only, "
                         f"but {path!r} is read as {FORMATS.get(str(kind), str(kind))}, whose scores the reader "
                         "maps itself; drop it.")


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


def groups_with(held: Mapping[str, set[tuple[str, str]]], every: set[tuple[str, str]],
                generators: Sequence[str]) -> tuple[set[tuple[str, str]], dict[str, Any]]:
    """``(kept groups, report entry)`` of ``--generators auto``: the (judge, model) groups (of ``every``) that hold a
    scored neighbour of each generator (``held[g]``: the groups holding one of ``g``), and the others as
    ``left_out``; judges holding different generators are refused."""
    have: set[tuple[str, str]] | None = None
    by_judge: dict[str, set[str]] = {}
    for g in generators:
        for j, _ in held[g]:
            by_judge.setdefault(j, set()).add(g)
        have = set(held[g]) if have is None else have & held[g]
    if len({frozenset(v) for v in by_judge.values()}) > 1:
        listing = "; ".join(f"{j}: {', '.join(g for g in generators if g in v)}" for j, v in sorted(by_judge.items()))
        raise InputError(f"The '--generators auto' option of certify found different neighbours per judge ({listing}); "
                         "certify those judges in separate calls, or name the generators with --generators.")
    have = have or set()
    left: dict[str, list[str]] = {}
    for j, m in sorted(every - have):
        left.setdefault(j, []).append(m)
    if not have:
        raise InputError(f"The '--generators auto' option of certify found no (judge, model) with a neighbour of every "
                         f"generator found ({', '.join(generators)}); name the generators with --generators.")
    return have, {"generators": list(generators), "left_out": left}


def restrict_to_groups_with(loaded: LoadedInputs, generators: Sequence[str]) -> LoadedInputs:
    """Keep the (judge, model) groups that hold a neighbour of every generator; list the others.

    Used by ``--generators auto``: in AlpacaEval's results, say, only a few models have
    ``_verbose``/``_concise`` runs; the others have no neighbour to certify with. Their rows are
    left out (never scored), and every input's ``report[path]["neighbors_auto"]`` names them.
    """
    import pandas as pd

    frame = loaded.frame
    held: dict[str, set[tuple[str, str]]] = {}
    for g in generators:
        if g == "swap":
            mask = frame["game"] == 2
        elif g == "rerun":
            mask = frame["rerun"] > 0
        else:
            mask = frame["variant"].astype(str) == g.split(":", 1)[1]
        held[g] = set(map(tuple, frame.loc[mask & frame["score"].notna(), ["judge", "model"]].astype(str).to_numpy().tolist()))
    keys = list(zip(frame["judge"].astype(str), frame["model"].astype(str)))
    have, auto = groups_with(held, set(keys), generators)
    keep = pd.Series([k in have for k in keys], index=frame.index)
    report = {path: {**rep, "neighbors_auto": auto} for path, rep in loaded.report.items()}  # kept in load_report.json
    return LoadedInputs(frame=frame[keep.to_numpy()].reset_index(drop=True), report=report,
                        options={**loaded.options, "neighbors_auto": list(generators)})

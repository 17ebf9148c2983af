"""inspect_ai evaluation logs → judgment tables (read through inspect_ai's own log API).

``inspect_ai`` is an optional dependency (``pip install 'biasbound[inspect]'``); this module
imports it only when a log is read.

Mapping onto the judgment table, for every scorer of every sample:

==========  =============================================================================
judge       the scorer's name, with its grader model when the log records one:
            ``model_graded_qa(openai/gpt-4o)`` — from the scorer's ``model`` option, the
            eval's ``grader`` model role, or the model of the grading messages in the
            score's metadata (in that order); a dict-valued score gives one judge per key
            (``scorer/key``)
model       the evaluated model (``eval.model``)
item_id     the sample id (prefixed by the task name when logs of several tasks are read)
rerun       epoch - 1 (epochs are reruns of the whole sample: answer and grading)
game        0 (single-answer grading)
variant     ``original``; neighbours recorded by :func:`biasbound.inspect.bias_bounded` in
            ``Score.metadata["biasbound"]`` (epoch 1) become variant ``<generator>`` rows, and
            its ``rerun`` neighbours reruns numbered after the epochs
score       :data:`LETTER_SCORES` for inspect's letter grades (C, P, I, N); True/False → 1/0;
            numbers mapped from the scale given (``scale=``), else [0, 1] when every value
            of the scorer lies in it, else the smallest common scale holding them
            (:func:`biasbound.data.infer_scale`) — always printed with "inferred";
            a user ``score_map`` replaces the letter rule; a value that is None/NaN
            (``Score.unscored``) or a sample with an error is a missing judgment, counted
            with its reason
==========  =============================================================================
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError
from biasbound.data.tables import JudgmentSet, check_duplicates, check_scale, finish_table, infer_scale
from biasbound.data._common import Native, Notes, attach

__all__ = ["GENERATORS", "LETTER_SCORES", "METADATA_KEY", "find_logs", "is_log_file", "load_inspect_log", "require_inspect"]

#: inspect_ai's letter grades and the score each maps to (the values of ``value_to_float``).
LETTER_SCORES: dict[str, float] = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
#: Key of the neighbour record that :func:`biasbound.inspect.bias_bounded` writes into ``Score.metadata``.
METADATA_KEY = "biasbound"
#: Generators the inspect wrapper (``inspect_scorer.bias_bounded``) can apply (single-answer grading: no
#: position to swap); their metric names are left out of inspect's own numbers when a log is read.
GENERATORS: tuple[str, ...] = ("format", "paraphrase", "schematic", "agreeable", "rerun")


def require_inspect() -> Any:
    """Import ``inspect_ai`` or raise an InputError naming the extra to install."""
    try:
        import inspect_ai
    except ImportError:  # pragma: no cover - the test extra installs it
        raise InputError("Reading inspect_ai logs needs inspect_ai; install it with: pip install 'biasbound[inspect]'.") from None
    return inspect_ai


#: Files inspect_ai writes into a log folder that are not logs (eval-set manifests).
_NOT_LOGS = ("logs.json", "eval-set.json")


def is_log_file(path: Path) -> bool:
    """Whether ``path`` is an inspect_ai log: a ``.eval`` file, or a ``.json`` log (an object whose
    first key is ``"version"`` and that has ``"eval"``; eval-set manifests such as ``logs.json`` are not)."""
    if path.suffix == ".eval":
        return True
    if path.suffix != ".json" or path.name in _NOT_LOGS:
        return False
    try:
        with path.open("r", encoding="utf-8") as fh:
            head = fh.read(4096)
    except (OSError, UnicodeDecodeError):
        return False
    return re.match(r'\s*\{\s*"version"\s*:', head) is not None and '"eval"' in head


def find_logs(path: Path) -> list[Path]:
    """The inspect_ai logs in a folder (recursively), or ``[path]`` for a log file.

    With inspect_ai installed the folder is listed by ``inspect_ai.log.list_eval_logs`` (inspect's
    own notion of a log folder, which skips eval-set manifests); without it, ``.eval`` files and
    ``.json`` logs are found by :func:`is_log_file`.
    """
    if path.is_file():
        return [path] if is_log_file(path) else []
    try:
        from inspect_ai.log import list_eval_logs
    except ImportError:
        return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in (".eval", ".json") and is_log_file(p))
    from urllib.parse import unquote, urlparse

    found = []
    for info in list_eval_logs(str(path), recursive=True):
        u = urlparse(info.name)
        found.append(Path(unquote(u.path)) if u.scheme == "file" else Path(info.name))
    return sorted(found)


def _grader_of(options: Mapping[str, Any] | None) -> str | None:
    m = (options or {}).get("model")
    if isinstance(m, str):
        return m
    if isinstance(m, Mapping) and isinstance(m.get("model"), str):
        return str(m["model"])
    if isinstance(m, (list, tuple)) and m:
        names = [x if isinstance(x, str) else (x.get("model") if isinstance(x, Mapping) else None) for x in m]
        kept = [str(n) for n in names if n]
        return "+".join(kept) if kept else None
    return None


def _grading_model(metadata: Mapping[str, Any] | None) -> str | None:
    grading = (metadata or {}).get("grading")
    if isinstance(grading, list):
        for msg in reversed(grading):
            if isinstance(msg, Mapping) and msg.get("role") == "assistant" and isinstance(msg.get("model"), str):
                return str(msg["model"])
    return None


class _Bad(Exception):
    pass


def raw_score(value: Any, score_map: Mapping[str, float] | None) -> tuple[str, float]:
    """``("letter"|"number"|"missing", x)``: a letter/bool already on [0, 1], or a raw number."""
    if value is None:
        return "missing", math.nan
    if score_map is not None:
        key = value if isinstance(value, str) else str(value)
        if key in score_map:
            return "letter", float(score_map[key])
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _Bad(f"score value {value!r} is not in --score-map ({', '.join(score_map)})")
    if isinstance(value, bool):
        return "letter", 1.0 if value else 0.0
    if isinstance(value, str):
        if value in LETTER_SCORES:
            return "letter", LETTER_SCORES[value]
        try:
            x = float(value)
        except ValueError:
            raise _Bad(f"score value {value!r} is not a letter grade (C, P, I, N), a boolean or a number; "
                       "map it with --score-map VALUE=SCORE") from None
        return ("missing", math.nan) if math.isnan(x) else ("number", x)
    if isinstance(value, (int, float)):
        x = float(value)
        if math.isnan(x):
            return "missing", math.nan
        if math.isinf(x):
            raise _Bad(f"score value {value!r} is not finite")
        return "number", x
    raise _Bad(f"score value of type {type(value).__name__} cannot be mapped to one score")


def load_inspect_log(
    path: str | Path | Sequence[str | Path],
    *,
    score_map: Mapping[str, float] | None = None,
    scale: tuple[float, float] | None = None,
    skip_bad: bool = False,
) -> JudgmentSet:
    """Load inspect_ai evaluation logs (``.eval`` or ``.json``) as a judgment table.

    Parameters
    ----------
    path:
        A log file, a log folder (searched recursively), or a list of them.
    score_map:
        Score value → score in [0, 1], replacing the letter rule (e.g. ``{"A": 1, "B": 0}``).
    scale:
        Raw scale ``(lo, hi)`` of numeric score values; when None it is inferred per judge and
        reported as inferred.
    skip_bad:
        Skip (and list) samples whose score cannot be mapped instead of raising.

    Returns
    -------
    JudgmentSet
        The mapping is in the module docstring; notes (score rule, counts of missing
        judgments by reason, what could not be mapped) in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the log and the sample id (and epoch) of a score that cannot be mapped or lies
        outside the scale; a log inspect_ai cannot read; a folder without logs.
    """
    require_inspect()
    given = None if scale is None else check_scale(scale, "load_inspect_log")
    paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
    notes = Notes("inspect")
    files, logs = _read_logs(paths, notes)
    tasks = {log.eval.task for _, log in logs}
    several_tasks = len(tasks) > 1
    if several_tasks:
        notes.remark(f"logs of {len(tasks)} tasks read: item ids are '<task>/<sample id>'")
    ctx = _Reading(notes=notes, score_map=score_map, skip_bad=skip_bad)
    for f, log in logs:
        _log_rows(ctx, f, log, several_tasks)
    if not ctx.rows:
        raise DataFormatError("holds no scored sample.", path=str(paths[0]))
    frame = pd.DataFrame(ctx.rows)
    # a grader the log does not record (None; NaN once pandas filled the column) adds nothing to the name
    frame["judge"] = [j if not isinstance(g, str) or not g.strip() else f"{j}({g})"
                      for j, g in zip(frame["judge_key"], frame["grader"])]
    notes.native += _native_metrics(logs, frame)
    frame, rules = _scores(frame, ctx, given)
    notes.rule = "; ".join(rules)
    frame["game"] = 0
    frame = frame[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "source", "line"]]
    frame = check_duplicates(frame, skip_bad, ctx.skipped)
    js = finish_table(frame, skipped=ctx.skipped, scale=(0.0, 1.0), scale_inferred=False,
                      sources=[str(f) for f in files])
    return attach(js, notes)


@dataclass
class _Reading:
    """What :func:`load_inspect_log` gathers while it walks the logs."""

    notes: Notes
    score_map: Mapping[str, float] | None
    skip_bad: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, int | None, str]] = field(default_factory=list)
    #: judge key -> the scale bias_bounded(scale=...) recorded
    declared: dict[str, tuple[float, float]] = field(default_factory=dict)


def _read_logs(paths: list[Path], notes: Notes) -> tuple[list[Path], list[tuple[Path, Any]]]:
    """The log files under ``paths`` and each log as inspect_ai reads it (one log per eval)."""
    from inspect_ai.log import read_eval_log

    files: list[Path] = []
    for p in paths:
        if not p.exists():
            raise DataFormatError("no such file or folder.", path=str(p))
        found = find_logs(p)
        if not found:
            raise DataFormatError("holds no inspect_ai log (.eval, or .json with 'eval' and 'version').", path=str(p))
        files.extend(found)
    logs = []
    for f in files:
        try:
            logs.append((f, read_eval_log(str(f))))
        except Exception as exc:  # inspect raises several types for unreadable logs; name the file, keep the reason
            raise DataFormatError(f"inspect_ai cannot read this log ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}).",
                                  path=str(f)) from None
    return files, _one_log_per_eval(logs, notes)


def _log_rows(ctx: _Reading, f: Path, log: Any, several_tasks: bool) -> None:
    """The rows of one log's samples: one per scorer (and score key) and sample, neighbours included."""
    src = str(f)
    if log.status != "success":
        ctx.notes.remark(f"{f.name}: the eval's status is {log.status!r}; only its recorded samples are read")
    model = str(log.eval.model)
    graders = {s.name: _grader_of(s.options) for s in (log.eval.scorers or [])}
    role_grader = None
    roles = getattr(log.eval, "model_roles", None) or {}
    if "grader" in roles:
        g = roles["grader"]
        role_grader = getattr(g, "model", None) if not isinstance(g, Mapping) else g.get("model")
    samples = log.samples or []
    epochs = max([s.epoch for s in samples] or [1])
    if epochs > 1:
        ctx.notes.remark(f"{f.name}: epochs 2-{epochs} read as reruns of epoch 1; an epoch re-runs the solver too, so "
                         "a rerun neighbour measures the answer's and the grading's variation together")
    for pos, sample in enumerate(samples, start=1):
        item = f"{log.eval.task}/{sample.id}" if several_tasks else str(sample.id)
        where = f"sample {sample.id!r} (epoch {sample.epoch})"
        scores = sample.scores or {}
        if sample.error is not None:
            names = list(scores or graders or ["<no scorer>"])  # one missing judgment per scorer of the eval
            ctx.notes.count("sample with an error (no score): missing", len(names))
            for name in names:
                ctx.rows.append(dict(judge_key=name, scorer=name, grader=graders.get(name) or role_grader, model=model,
                                     item_id=item, variant="original", rerun=sample.epoch - 1, kind="missing", x=math.nan,
                                     verdict="sample error", source=src, line=pos, where=where))
            continue
        for name, score in scores.items():
            meta = score.metadata or {}
            grader = graders.get(name) or role_grader or _grading_model(meta)
            bb = meta.get(METADATA_KEY) if isinstance(meta, Mapping) else None
            if isinstance(bb, Mapping) and isinstance(bb.get("judge"), str):
                judge_key, grader = str(bb["judge"]), None
                sc = bb.get("scale")
                if isinstance(sc, (list, tuple)) and len(sc) == 2:
                    ctx.declared[judge_key] = check_scale(tuple(sc), "bias_bounded")
            else:
                judge_key = name
            row = dict(scorer=name, grader=grader, model=model, item_id=item, variant="original",
                       rerun=sample.epoch - 1, source=src, line=pos, where=where)
            _score_rows(ctx, score, judge_key, row)
            if isinstance(bb, Mapping) and not isinstance(score.value, Mapping):
                _neighbor_rows(bb, ctx.rows, ctx.notes, ctx.score_map, sample, epochs, judge_key, model, item, src, pos,
                               where, ctx.skip_bad, ctx.skipped)


def _score_rows(ctx: _Reading, score: Any, judge_key: str, row: dict[str, Any]) -> None:
    """The rows of one score: one per value (a dict-valued score gives one judge per key)."""
    value = score.value
    parts = value.items() if isinstance(value, Mapping) else [(None, value)]
    for key, v in parts:
        jk = judge_key if key is None else f"{judge_key}/{key}"
        if isinstance(v, (list, tuple)):
            ctx.notes.count("list-valued score (not one score per sample): not mapped")
            continue
        try:
            kind, x = raw_score(v, ctx.score_map)
        except _Bad as exc:
            if not ctx.skip_bad:
                raise DataFormatError(f"{row['where']}, scorer {row['scorer']!r}: {exc}.", path=row["source"]) from None
            ctx.skipped.append((row["source"], row["line"], f"{row['where']}: {exc}"))
            continue
        if kind == "missing":
            reason = getattr(score, "reason", None) or "no value"
            ctx.notes.count(f"unscored ({reason}): missing")
        ctx.rows.append(dict(judge_key=jk, scorer=row["scorer"], grader=row["grader"], model=row["model"],
                             item_id=row["item_id"], variant="original", rerun=row["rerun"], kind=kind, x=x,
                             verdict=None if v is None else str(v), source=row["source"], line=row["line"],
                             where=row["where"]))


def _scores(frame: pd.DataFrame, ctx: _Reading, given: tuple[float, float] | None) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with its ``score`` column (letters by the rule, numbers mapped from their scale, per judge) and the
    rules applied, in words."""
    frame["score"] = np.nan
    rules = []
    if ctx.score_map is not None:
        rules.append("values mapped by --score-map " + ", ".join(f"{k}={v:g}" for k, v in ctx.score_map.items()))
    else:
        rules.append("letter grades C=1, P=0.5, I=0, N=0 (inspect_ai's value_to_float); True=1, False=0")
    for judge, idx in frame.groupby("judge").groups.items():
        sub = frame.loc[idx]
        letter = sub["kind"] == "letter"
        frame.loc[sub.index[letter.to_numpy()], "score"] = sub.loc[letter, "x"]
        num = sub[sub["kind"] == "number"]
        if num.empty:
            continue
        lo, hi, how = _scale_of(str(sub["judge_key"].iloc[0]), num, ctx, given)
        out = num[(num["x"] < lo) | (num["x"] > hi)]
        if len(out):
            r = out.iloc[0]
            msg = f"{r['where']}: score {r['x']:g} of judge {judge!r} is outside the scale [{lo:g}, {hi:g}]"
            if not ctx.skip_bad:
                raise DataFormatError(msg + "; pass --scale lo,hi with the scorer's range.", path=str(r["source"]))
            for _, rr in out.iterrows():
                ctx.skipped.append((str(rr["source"]), int(rr["line"]), f"{rr['where']}: outside the scale"))
            frame = frame.drop(index=out.index)
            num = num.drop(index=out.index)
        frame.loc[num.index, "score"] = (num["x"] - lo) / (hi - lo)
        rules.append(f"judge {judge}: numeric values on [{lo:g}, {hi:g}] -> (x - lo) / (hi - lo) ({how})")
    return frame, rules


def _scale_of(key: str, num: pd.DataFrame, ctx: _Reading, given: tuple[float, float] | None) -> tuple[float, float, str]:
    """A judge's numeric scale: given, declared by the scorer, or inferred from its values (and how)."""
    if given is not None:
        return given[0], given[1], "given"
    if key in ctx.declared:
        lo, hi = ctx.declared[key]
        return lo, hi, "declared by bias_bounded(scale=...)"
    vals = num["x"].to_numpy(dtype=float)
    lo, hi = (0.0, 1.0) if ((vals >= 0) & (vals <= 1)).all() else infer_scale(vals)
    return lo, hi, "inferred from the values; pass --scale lo,hi if it is wrong"


def _score_count(log: Any) -> int:
    return sum(len(s.scores or {}) for s in (log.samples or []))


def _one_log_per_eval(logs: list[tuple[Path, Any]], notes: Notes) -> list[tuple[Path, Any]]:
    """One log per eval: ``inspect score`` writes a re-scored copy of a log (same ``eval_id``, same samples) beside
    the original (``--action append`` adds scorers, ``overwrite`` replaces them), so a folder holding both would
    give every judgment twice. The copy holding the most scores is read (``append``: the superset), on a tie the
    file written last (``overwrite``: the re-scoring); the others are left out with a note naming them."""
    by_eval: dict[str, list[tuple[Path, Any]]] = {}
    for f, log in logs:
        key = str(getattr(log.eval, "eval_id", "") or f)
        by_eval.setdefault(key, []).append((f, log))
    if all(len(v) == 1 for v in by_eval.values()):
        return logs
    keep: set[Path] = set()
    for eval_id, group in by_eval.items():
        if len(group) == 1:
            keep.add(group[0][0])
            continue
        best = max(group, key=lambda fl: (_score_count(fl[1]), fl[0].stat().st_mtime_ns, str(fl[0])))
        keep.add(best[0])
        others = ", ".join(f.name for f, _ in group if f != best[0])
        scorers = ", ".join(sorted({k for s in (best[1].samples or []) for k in (s.scores or {})}))
        notes.remark(f"{len(group)} logs of one eval (eval_id {eval_id}; inspect score writes a re-scored copy): "
                     f"read {best[0].name} (scorers {scorers}), left out {others}")
    return [(f, log) for f, log in logs if f in keep]


def _native_metrics(logs: list[tuple[Path, Any]], frame: pd.DataFrame) -> list[Native]:
    """inspect's own metrics per scorer (``log.results``, over the epochs reduced by the scorer's reducer) as
    columns ``inspect_<metric>``; the neighbor_sensitivity figures of bias_bounded are left out (they are
    printed by certify from the data)."""
    judge_of: dict[tuple[str, str], str] = {}
    for src, scorer, judge in zip(frame["source"], frame["scorer"], frame["judge"]):
        if isinstance(scorer, str):
            judge_of.setdefault((str(src), scorer), str(judge))
    out: dict[str, Native] = {}
    for f, log in logs:
        results = getattr(log, "results", None)
        model = str(log.eval.model)
        for es in (getattr(results, "scores", None) or []):
            judge = judge_of.get((str(f), str(es.name))) or judge_of.get((str(f), str(getattr(es, "scorer", ""))))
            if judge is None:
                continue
            reducer = getattr(es, "reducer", None) or "mean"
            for mname, m in (es.metrics or {}).items():
                if mname in GENERATORS or mname.startswith("m_"):
                    continue
                value = getattr(m, "value", None)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                col = f"inspect_{mname}"
                nat = out.setdefault(col, Native(col, f"{col}: inspect_ai's own metric {mname!r} from the log's results, "
                                                      f"per scorer, its epochs reduced by the scorer's reducer"))
                nat.values[(judge, model)] = float(value)
                nat.rule = nat.rule if f"reducer {reducer!r}" in nat.rule else nat.rule + f" (scorer {es.name}: reducer {reducer!r})"
    return list(out.values())


def _neighbor_rows(bb: Mapping[str, Any], rows: list[dict[str, Any]], notes: Notes, score_map: Mapping[str, float] | None,
                    sample: Any, epochs: int, judge_key: str, model: str, item: str, src: str, pos: int, where: str,
                    skip_bad: bool, skipped: list[tuple[str, int | None, str]]) -> None:
    """Rows for the neighbours :func:`biasbound.inspect.bias_bounded` recorded on one score (epoch 1 only)."""
    nbs = bb.get("neighbors")
    if not isinstance(nbs, list):
        raise DataFormatError(f"{where}: Score.metadata['{METADATA_KEY}']['neighbors'] must be a list.", path=src)
    if sample.epoch != 1:
        notes.count("neighbours recorded on an epoch > 1 (the canonical score is epoch 1): not used", len(nbs))
        return
    n_rerun = 0
    for nb in nbs:
        if not isinstance(nb, Mapping) or not isinstance(nb.get("generator"), str):
            raise DataFormatError(f"{where}: a neighbour record in Score.metadata['{METADATA_KEY}'] lacks 'generator'.", path=src)
        gen = str(nb["generator"])
        status = nb.get("status", "applied")
        if status in ("not-applicable", "failed"):
            notes.count(f"{gen} neighbour {status} (no perturbed item to judge): not a neighbour")
            continue
        try:
            kind, x = raw_score(nb.get("value"), score_map)
        except _Bad as exc:
            if not skip_bad:
                raise DataFormatError(f"{where}, {gen} neighbour: {exc}.", path=src) from None
            skipped.append((src, pos, f"{where}, {gen} neighbour: {exc}"))
            continue
        if kind == "missing":
            notes.count(f"{gen} neighbour unscored ({nb.get('reason') or 'no value'}): missing")
        if gen == "rerun":
            rerun, variant = epochs + n_rerun, "original"
            n_rerun += 1
        else:
            rerun, variant = 0, gen
        rows.append(dict(judge_key=judge_key, scorer=None, grader=None, model=model, item_id=item, variant=variant, rerun=rerun,
                         kind=kind, x=x, verdict=None if nb.get("value") is None else str(nb.get("value")), source=src,
                         line=pos, where=f"{where}, {gen} neighbour"))

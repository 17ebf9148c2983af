"""MT-Bench (FastChat ``llm_judge``) judgment files → judgment tables.

FastChat's ``gen_judgment.py`` writes JSON-lines files ``model_judgment/<judge>_single.jsonl``
and ``<judge>_pair.jsonl``.

Single-answer grading (``*_single.jsonl``): ``{question_id, model, judge: [judge model, prompt
name], user_prompt, judgment, score, turn, tstamp}``; ``score`` is the 1-10 rating and -1 when
FastChat could not parse one.

==========  =============================================================================
judge       ``<judge model>/single`` (the prompt name — ``single-v1``, ``single-math-v1``,
            their multi-turn forms — depends on the question category and turn, so it is
            part of one judge's protocol and kept in ``verdict``)
model       ``model``
item_id     ``<question_id>/turn<turn>``
game        0; rerun: 0, or 1, 2, ... for repeated judgments of the same item (file order)
score       ``(score - 1) / 9`` (the 1-10 scale the prompt asks for, stated); -1 → missing (unparsed
            rating). A judge that gave a rating of 0 (FastChat keeps it) is read on the 0-10 scale,
            ``score / 10``: 0 is that scale's end, so nothing is dropped and nothing guessed
==========  =============================================================================

Native number ``mt_bench_score`` (FastChat ``show_result.py --mode single``): the mean of every
rating other than -1 of the (judge, model), both turns and repeated judgments included.

Pairwise grading (``*_pair.jsonl``): ``{question_id, model_1, model_2, g1_winner, g2_winner,
judge, g1_user_prompt, g1_judgment, g2_user_prompt, g2_judgment, turn, tstamp}``. Game 1 shows
``model_1`` as Assistant A, game 2 swaps the positions; FastChat already maps both winners back
to ``model_1`` / ``model_2`` (or ``tie`` / ``error``), so both games are in the same labels.

==========  =============================================================================
judge       ``<judge model>/pair``
model       ``model_1`` when one model is ``model_2`` in every record of the judge (FastChat's
            ``pairwise-baseline`` mode: that model is the baseline); otherwise (``pairwise-all``)
            each record gives a row for ``model_1`` and a mirrored row for ``model_2``
item_id     ``<question_id>/turn<turn>`` (baseline mode) or ``<question_id>/turn<turn>/vs/<opponent>``
game        1 = the original order (g1), 2 = positions swapped (g2) → the ``swap`` neighbour
score       the model's view: 1 when it wins, 0 when the other model wins; ``tie`` → missing by
            default (``ties="half"`` reads it as 0.5); ``error`` → missing; never imputed
==========  =============================================================================

Native number ``fastchat_win_rate_adjusted`` (FastChat ``show_result.py --mode pairwise-baseline``
or ``pairwise-all``): records with ``error`` in either game are dropped; a record whose game 1 is a
tie or whose two games disagree counts as one tie for both models, otherwise one win and one loss;
``(wins + ties / 2) / records`` per model (the baseline's own row left out in baseline mode).

A pairwise file written with a *single-answer* judge prompt holds ``m1_score``/``m2_score`` and
``g1_winner == g2_winner`` derived from them: that is not two presentation orders, so such a
record is read as two single ratings (``model_1`` and ``model_2``, judge ``<judge model>/single``,
turn 1 when the record has none), never as a swap pair; a model rated in several such records
gets reruns.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError
from biasbound._validation import arg, check_one_of
from biasbound.data._io import iter_json_records, open_text
from biasbound.data.tables import JudgmentSet, check_duplicates, finish_table
from biasbound.data._common import Native, Notes, attach

__all__ = ["MT_BENCH_SCORE_RULE", "PAIR_NATIVE_RULE", "SINGLE_RULE", "fastchat_win_rate_adjusted", "find_judgment_files",
           "kind_of_record", "load_mt_bench", "mt_bench_score", "pair_rule"]

SINGLE_RULE = "MT-Bench single rating r on the 1-10 scale -> (r - 1) / 9; r = -1 (FastChat's unparsed rating) -> missing"
SINGLE_RULE_0_10 = ("MT-Bench single rating r of a judge that also gave 0 -> r / 10 (the 0-10 scale: 0 is its bottom); "
                    "r = -1 (FastChat's unparsed rating) -> missing")
MT_BENCH_SCORE_RULE = ("mt_bench_score: FastChat show_result.py --mode single: mean of every rating except -1 (unparsed), "
                       "both turns and repeated judgments included, in raw ratings (FastChat's scale)")
PAIR_NATIVE_RULE = ("fastchat_win_rate_adjusted: FastChat show_result.py pairwise: records with 'error' in either game dropped; "
                    "a tie in game 1 or two games that disagree = one tie, else one win / one loss; "
                    "(wins + ties / 2) / records; in baseline mode the baseline's own row is left out")


def mt_bench_score(ratings: Sequence[float]) -> float:
    """FastChat's single-answer headline: the mean of the ratings other than -1 (NaN when none is left)."""
    kept = [float(r) for r in ratings if float(r) != -1]
    return sum(kept) / len(kept) if kept else math.nan


def fastchat_win_rate_adjusted(records: Sequence[tuple[str, str, str, str]], baseline: str | None = None) -> dict[str, float]:
    """FastChat's pairwise headline per model from ``(model_1, model_2, g1_winner, g2_winner)`` records.

    A record with ``error`` in either game is dropped; game 1 a tie, or the two games disagreeing, is one
    tie for both models; otherwise the agreed winner gets a win and the other a loss.
    ``(wins + ties / 2) / (wins + losses + ties)``; with ``baseline`` (pairwise-baseline mode) only
    records with the baseline count and the baseline's own row is left out.
    """
    tally: dict[str, list[int]] = {}
    for m1, m2, g1, g2 in records:
        if "error" in (g1, g2) or (baseline is not None and baseline not in (m1, m2)):
            continue
        if g1 == "tie" or g1 != g2:
            res = ((m1, 2), (m2, 2))
        else:
            win, lose = (m1, m2) if g1 == "model_1" else (m2, m1)
            res = ((win, 0), (lose, 1))
        for m, k in res:
            tally.setdefault(m, [0, 0, 0])[k] += 1
    return {m: (w + 0.5 * t) / (w + lo + t) for m, (w, lo, t) in sorted(tally.items()) if m != baseline}


def pair_rule(ties: str) -> str:
    """The stated score rule of pairwise judgments for a ``ties`` treatment."""
    tie = "0.5" if ties == "half" else "missing"
    return (f"MT-Bench pairwise winner (g1 = original order, g2 = swapped, both in model labels) -> 1 if the model wins, "
            f"0 if the other model wins, tie -> {tie}, error -> missing")


def kind_of_record(rec: Any) -> str | None:
    """``"pair"`` or ``"single"`` for a FastChat judgment record, None for anything else."""
    if not isinstance(rec, dict):
        return None
    if "g1_winner" in rec and "model_1" in rec:
        return "pair-single" if "m1_score" in rec and "m2_score" in rec else "pair"
    if isinstance(rec.get("judge"), list) and "score" in rec and "turn" in rec and "model" in rec:
        return "single"
    return None


def find_judgment_files(path: Path) -> list[Path]:
    """``*_single.jsonl`` / ``*_pair.jsonl`` (optionally ``.gz``) files under ``path``, or ``[path]``."""
    if path.is_file():
        return [path]
    pats = ("*_single.jsonl", "*_pair.jsonl", "*_single.jsonl.gz", "*_pair.jsonl.gz")
    named = {p for pat in pats for p in path.rglob(pat) if p.is_file()}
    if not named:
        return []
    # FastChat names its outputs <judge>_single.jsonl / <judge>_pair.jsonl, but copies get suffixes
    # (gpt-4_single-origin.jsonl): every other .jsonl of the folder holding judgment records is read too,
    # never skipped unseen
    others = {p for pat in ("*.jsonl", "*.jsonl.gz") for p in path.rglob(pat)
              if p.is_file() and p not in named and not p.name.startswith(".")}
    return sorted(named | {p for p in others if kind_of_record(_first_record(p)) is not None})


def _first_record(path: Path) -> Any:
    import json

    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                try:
                    return json.loads(line)
                except json.JSONDecodeError:
                    return None
    return None


class _Bad(Exception):
    pass


def _judge_name(rec: dict[str, Any], kind: str) -> tuple[str, str]:
    judge = rec.get("judge")
    if not (isinstance(judge, list) and len(judge) >= 2 and all(isinstance(x, str) for x in judge[:2])):
        raise _Bad(f"'judge' must be a list [judge model, prompt name], got {judge!r}")
    return f"{judge[0]}/{kind}", judge[1]


def _turn(rec: dict[str, Any]) -> int:
    t = rec.get("turn")
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise _Bad(f"'turn' must be a positive integer, got {t!r}")
    return t


def _qid(rec: dict[str, Any]) -> str:
    q = rec.get("question_id")
    if q is None or isinstance(q, (dict, list)):
        raise _Bad(f"'question_id' must be a number or string, got {q!r}")
    return str(q)


def _single(rec: dict[str, Any], model_key: str = "model", score_key: str = "score", turn: int | None = None) -> dict[str, Any]:
    judge, prompt = _judge_name(rec, "single")
    model = rec.get(model_key)
    if not isinstance(model, str) or not model:
        raise _Bad(f"{model_key!r} must be a non-empty string")
    s = rec.get(score_key)
    if isinstance(s, bool) or not isinstance(s, (int, float)) or math.isnan(float(s)):
        raise _Bad(f"{score_key!r} must be a number (1-10, or -1 when FastChat could not parse a rating), got {s!r}")
    s = float(s)
    if s != -1 and not 0.0 <= s <= 10.0:
        raise _Bad(f"{score_key!r} {s:g} is outside the 0-10 scale (and is not FastChat's -1 for an unparsed rating)")
    t = _turn(rec) if turn is None else turn
    # mapped to [0, 1] per judge once all its ratings are read (a judge that gave 0 is on the 0-10 scale)
    return {"judge": judge, "model": model, "item_id": f"{_qid(rec)}/turn{t}", "game": 0, "raw": s,
            "verdict": f"{prompt}: {s:g}"}


_WINNERS = ("model_1", "model_2", "tie", "error")


def _pair(rec: dict[str, Any], ties: str) -> list[dict[str, Any]]:
    judge, prompt = _judge_name(rec, "pair")
    m1, m2 = rec.get("model_1"), rec.get("model_2")
    if not (isinstance(m1, str) and m1 and isinstance(m2, str) and m2):
        raise _Bad("'model_1' and 'model_2' must be non-empty strings")
    out = []
    for game, key in ((1, "g1_winner"), (2, "g2_winner")):
        w = rec.get(key)
        if w not in _WINNERS:
            raise _Bad(f"{key!r} must be one of {', '.join(map(repr, _WINNERS))}, got {w!r}")
        if w == "model_1":
            s1 = 1.0
        elif w == "model_2":
            s1 = 0.0
        elif w == "tie" and ties == "half":
            s1 = 0.5
        else:
            s1 = math.nan
        out.append({"judge": judge, "model_1": m1, "model_2": m2, "qt": f"{_qid(rec)}/turn{_turn(rec)}", "game": game,
                    "s1": s1, "verdict": f"{prompt}: {w}", "winner": w})
    return out


def load_mt_bench(path: str | Path | Sequence[str | Path], *, ties: str = "missing", skip_bad: bool = False) -> JudgmentSet:
    """Load MT-Bench / FastChat judgment files (single-answer and pairwise) as a judgment table.

    Parameters
    ----------
    path:
        A ``*_single.jsonl`` or ``*_pair.jsonl`` file, a folder searched recursively for them
        (FastChat's ``data/mt_bench/model_judgment/``), or a list of such paths.
    ties:
        ``"missing"`` (default): a pairwise ``tie`` is a missing judgment, counted;
        ``"half"``: it scores 0.5.
    skip_bad:
        Skip (and list) malformed lines instead of raising.

    Returns
    -------
    JudgmentSet
        The mapping is in the module docstring; notes (score rules, counts of what could not
        be mapped) in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the file and line: invalid JSON, a record that is neither a single nor a pairwise
        judgment, a malformed field, a rating outside 1-10 (other than -1), a winner other than
        model_1 / model_2 / tie / error.
    """
    ties = check_one_of(ties, "ties", "load_mt_bench", ("missing", "half"))
    paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
    files = _judgment_files(paths)
    notes = Notes("mt_bench")
    singles, pairs, pair_records, skipped = _read_records(files, ties, skip_bad, notes)
    parts = []
    rules: list[str] = []
    if singles:
        parts.append(_single_part(singles, notes, rules))
    if pairs:
        parts.append(_pair_part(pairs, pair_records, ties, notes))
        rules.append(pair_rule(ties))
    if not parts:
        raise DataFormatError("holds no judgment record.", path=str(paths[0]))
    notes.rule = "; ".join(rules)
    frame = pd.concat([q[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "source", "line"]]
                       for q in parts], ignore_index=True)
    frame = check_duplicates(frame, skip_bad, skipped)
    js = finish_table(frame, skipped=skipped, scale=(0.0, 1.0), scale_inferred=False, sources=[str(f) for f in files])
    return attach(js, notes)


def _judgment_files(paths: list[Path]) -> list[Path]:
    """The FastChat judgment files under ``paths``; a path without one is one sentence."""
    files: list[Path] = []
    for p in paths:
        if not p.exists():
            raise DataFormatError("no such file or folder.", path=str(p))
        found = find_judgment_files(p)
        if not found:
            raise DataFormatError("holds no FastChat *_single.jsonl or *_pair.jsonl judgment file.", path=str(p))
        files.extend(found)
    return files


def _read_records(files: list[Path], ties: str, skip_bad: bool, notes: Notes) -> tuple[
        list[dict[str, Any]], list[dict[str, Any]], list[tuple[str, str, str, str, str]],
        list[tuple[str, int | None, str]]]:
    """Every record of ``files``: single-answer rows, pairwise rows, the pairwise records as FastChat reads them
    (for its own win rate) and the lines skipped."""
    skipped: list[tuple[str, int | None, str]] = []
    singles: list[dict[str, Any]] = []
    pairs: list[dict[str, Any]] = []
    pair_records: list[tuple[str, str, str, str, str]] = []
    for file in files:
        src = str(file)
        for ln, rec in iter_json_records(file):
            try:
                kind = kind_of_record(rec)
                if kind is None:
                    raise _Bad("the record is neither a FastChat single judgment (model, judge, score, turn) nor a "
                               "pairwise one (model_1, model_2, g1_winner, g2_winner)")
                if kind == "single":
                    row = _single(rec)
                    row.update(source=src, line=ln)
                    singles.append(row)
                elif kind == "pair-single":
                    turn = _turn(rec) if "turn" in rec else 1
                    for mk, sk in (("model_1", "m1_score"), ("model_2", "m2_score")):
                        row = _single(rec, mk, sk, turn)
                        row.update(source=src, line=ln)
                        singles.append(row)
                    notes.count("pairwise record graded by a single-answer prompt (m1_score/m2_score): read as two "
                                "single ratings, not as two presentation orders")
                else:
                    for row in _pair(rec, ties):
                        row.update(source=src, line=ln)
                        pairs.append(row)
                    pair_records.append((pairs[-1]["judge"], rec["model_1"], rec["model_2"], rec["g1_winner"], rec["g2_winner"]))
            except _Bad as exc:
                if not skip_bad:
                    raise DataFormatError(f"{exc}; fix the line or {arg('pass skip_bad=True', 'pass --skip-bad')}.", path=src,
                                          line=ln) from None
                skipped.append((src, ln, str(exc)))
    return singles, pairs, pair_records, skipped


def _single_part(singles: list[dict[str, Any]], notes: Notes, rules: list[str]) -> pd.DataFrame:
    """The single-answer ratings mapped to [0, 1] per judge (1-10, or 0-10 when a judge rated below 1), with
    FastChat's own MT-Bench score as a native number."""
    f = pd.DataFrame(singles)
    native = Native("mt_bench_score", MT_BENCH_SCORE_RULE)
    zero_to_ten_of: dict[str, bool] = {}
    f["score"] = np.nan
    for judge, idx in f.groupby("judge", sort=True).groups.items():
        raw = f.loc[idx, "raw"].to_numpy(dtype=float)
        zero_to_ten = bool(((raw >= 0) & (raw < 1)).any())
        zero_to_ten_of[str(judge)] = zero_to_ten
        f.loc[idx, "score"] = np.where(raw == -1, np.nan, raw / 10.0 if zero_to_ten else (raw - 1.0) / 9.0)
        if zero_to_ten:
            n0 = int(((raw >= 0) & (raw < 1)).sum())
            notes.remark(f"judge {judge}: {n0} rating(s) below 1 (FastChat keeps them), so this judge is read on the "
                         "0-10 scale, r / 10 (0 is its bottom)")
            rules.append(SINGLE_RULE_0_10)
        for model, r in f.loc[idx].groupby("model", sort=True)["raw"]:
            native.values[(str(judge), str(model))] = mt_bench_score(r.tolist())
    notes.native.append(native)
    # repeated judgments of one item are reruns, numbered in file order
    f["rerun"] = f.groupby(["judge", "model", "item_id"]).cumcount()
    n_rep = int((f["rerun"] > 0).sum())
    if n_rep:
        notes.remark(f"{n_rep} repeated single judgment(s) of the same (judge, model, question, turn) read as reruns "
                     "(in file order)")
    notes.count("single rating -1 (FastChat could not parse a rating): missing", int(f["score"].isna().sum()))
    f["variant"] = "original"
    if SINGLE_RULE_0_10 not in rules or not all(zero_to_ten_of.values()):
        rules.insert(0, SINGLE_RULE)
    return f


def _pair_part(pairs: list[dict[str, Any]], pair_records: list[tuple[str, str, str, str, str]], ties: str,
               notes: Notes) -> pd.DataFrame:
    """The pairwise verdicts as rows (baseline mode: one per record and order; pairwise-all: one per model), with
    FastChat's adjusted win rate as a native number."""
    p = pd.DataFrame(pairs)
    winners = Counter(p["winner"])
    notes.count("pairwise verdict 'error': missing", winners.get("error", 0))
    if ties == "missing":
        notes.count(f"pairwise verdict 'tie': missing ({arg('pass ties=' + repr('half'), 'pass --mt-bench-ties half')} "
                    "to score it 0.5)", winners.get("tie", 0))
    rows = []
    native = Native("fastchat_win_rate_adjusted", PAIR_NATIVE_RULE)
    for judge, g in p.groupby("judge", sort=True):
        m2 = set(g["model_2"])
        baseline_mode = len(m2) == 1 and not (m2 & set(g["model_1"]))
        recs = [r[1:] for r in pair_records if r[0] == judge]
        for model, v in fastchat_win_rate_adjusted(recs, next(iter(m2)) if baseline_mode else None).items():
            native.values[(str(judge), model)] = v
        if baseline_mode:
            base = next(iter(m2))
            notes.baselines.append(str(base))
            notes.remark(f"judge {judge}: model_2 is {base!r} in every record, read as the baseline "
                         "(FastChat pairwise-baseline mode)")
            rows.append(g.assign(model=g["model_1"], item_id=g["qt"], score=g["s1"]))
        else:
            notes.remark(f"judge {judge}: no common model_2, read as FastChat pairwise-all mode: each record gives "
                         "one row per model, item '<question>/turn<t>/vs/<opponent>'")
            rows.append(g.assign(model=g["model_1"], item_id=g["qt"] + "/vs/" + g["model_2"], score=g["s1"]))
            rows.append(g.assign(model=g["model_2"], item_id=g["qt"] + "/vs/" + g["model_1"], score=1.0 - g["s1"]))
    notes.native.append(native)
    p = pd.concat(rows, ignore_index=True)
    p["variant"] = "original"
    p["rerun"] = p.groupby(["judge", "model", "item_id", "game"]).cumcount()
    n_rep = int((p["rerun"] > 0).sum())
    if n_rep:
        notes.remark(f"{n_rep} repeated pairwise judgment(s) of the same item and order read as reruns (in file order)")
    return p[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "source", "line"]]

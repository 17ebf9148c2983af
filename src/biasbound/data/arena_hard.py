"""Arena-Hard-Auto judgment files → judgment tables.

A record is ``{question_id, model, judge, games: [{score: verdict, ...}, {...}]}``.
Game 1 shows the baseline as assistant A and the judged model as B; game 2 swaps the
positions. Verdicts map to the model's view on [0, 1]:

==========  ======  ======
verdict     game 1  game 2
==========  ======  ======
``B>>A``    1       0
``B>A``     0.75    0.25
``A=B``     0.5     0.5
``A>B``     0.25    0.75
``A>>B``    0       1
==========  ======  ======

``A<<B`` is ``B>>A``, ``B<<A`` is ``A>>B`` (likewise ``A<B``, ``B<A``, ``B=A``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError
from biasbound._validation import arg
from biasbound.data._io import open_text
from biasbound.data.tables import JudgmentSet, check_duplicates, finish_table

__all__ = ["ARENA_HARD_SCORE_RULE", "FACTORS", "GAME1_SCORES", "VERDICT_ALIASES", "load_arena_hard", "verdict_score"]

#: Canonical verdict → score in the model's view for game 1 (baseline is A).
GAME1_SCORES: dict[str, float] = {"B>>A": 1.0, "B>A": 0.75, "A=B": 0.5, "A>B": 0.25, "A>>B": 0.0}

#: Alternative spellings and the canonical verdict they mean.
VERDICT_ALIASES: dict[str, str] = {"A<<B": "B>>A", "B<<A": "A>>B", "A<B": "B>A", "B<A": "A>B", "B=A": "A=B"}

#: Per-factor verdict fields read from a game when present (column ``factor_<name>``).
FACTORS: tuple[str, ...] = ("correctness", "completeness", "safety", "conciseness", "style")

_LOOKUP: dict[str, float] = {**GAME1_SCORES, **{k: GAME1_SCORES[v] for k, v in VERDICT_ALIASES.items()}}


def verdict_score(verdict: str, game: int) -> float:
    """Return the model's-view score on [0, 1] of an Arena-Hard verdict.

    Parameters
    ----------
    verdict:
        ``A>>B``, ``A>B``, ``A=B``, ``B>A``, ``B>>A`` or an alias (``A<<B`` …); surrounding
        whitespace and ``[[ ]]`` brackets are ignored.
    game:
        1 (baseline is A) or 2 (positions swapped: the score is mirrored, ``1 - s``).

    Raises
    ------
    KeyError
        For an unknown verdict string (the loaders turn it into a DataFormatError).
    """
    v = verdict.strip()
    if v.startswith("[[") and v.endswith("]]"):
        v = v[2:-2].strip()
    s = _LOOKUP[v]
    return s if game == 1 else 1.0 - s


def _open_lines(path: Path) -> Iterator[str]:
    with open_text(path) as fh:
        yield from fh


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise DataFormatError("no such file or folder.", path=str(path))

    def listing(folder: Path) -> list[Path]:
        return sorted(p for p in folder.iterdir() if p.is_file() and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz")))

    files = listing(path)
    if not files:  # a model_judgment/ root with one folder per judge
        for sub in sorted(p for p in path.iterdir() if p.is_dir()):
            files.extend(listing(sub))
    if not files:
        raise DataFormatError("holds no .jsonl or .jsonl.gz judgment file (nor do its sub-folders).", path=str(path))
    return files


class _Bad(Exception):
    pass


def _game_rows(g_idx: int, game: Any) -> tuple[float, str | None, dict[str, float]]:
    """Score, raw verdict and factor scores of one game (NaN when missing)."""
    if game is None:
        return np.nan, None, {}
    if not isinstance(game, dict):
        raise _Bad(f"game {g_idx} must be an object with a 'score' verdict, got {type(game).__name__}")
    verdict = game.get("score")
    factors: dict[str, float] = {}
    for name in FACTORS:
        fv = game.get(f"{name}_score")
        if fv is None:
            continue
        if not isinstance(fv, str):
            raise _Bad(f"game {g_idx} field '{name}_score' must be a verdict string, got {fv!r}")
        try:
            factors[name] = verdict_score(fv, g_idx)
        except KeyError:
            raise _Bad(f"unknown verdict {fv!r} in game {g_idx} field '{name}_score'") from None
    if verdict is None:
        return np.nan, None, factors
    if not isinstance(verdict, str):
        raise _Bad(f"game {g_idx} verdict must be a string such as 'A>B', got {verdict!r}")
    try:
        return verdict_score(verdict, g_idx), verdict, factors
    except KeyError:
        raise _Bad(f"unknown verdict {verdict!r} in game {g_idx}; expected A>>B, A>B, A=B, B>A, B>>A (or A<<B, B<<A)") from None


ARENA_HARD_SCORE_RULE = ("arena_hard_score: Arena-Hard-Auto show_result.py: win rate vs the baseline in percent from its "
                         "Bradley-Terry fit on both games, strong verdicts weighted 3, ties half (with battles against one "
                         "baseline only, the weighted win rate itself); the baseline's own row is 50")


def load_arena_hard(path: str | Path, *, judge: str | None = None, skip_bad: bool = False,
                    baseline: str | None = None, answers: str | Path | None = None) -> JudgmentSet:
    """Load Arena-Hard-Auto judgment files.

    Parameters
    ----------
    path:
        A ``<model>.jsonl`` / ``.jsonl.gz`` file, a ``model_judgment/<judge>/`` folder of
        such files, or a ``model_judgment/`` folder of judge folders.
    judge:
        Judge name for records without a ``judge`` field (default: the file's folder name).
    skip_bad:
        When True, bad lines are skipped and listed in ``report.skipped`` instead of raising
        (and a model file holding no record is counted instead of refused).
    baseline:
        The baseline model (game 1's assistant A), which the files do not name. Its own row of
        ``arena_hard_score`` is 50, as Arena-Hard's ``show_result.py`` pins it. When None, the
        ``baseline_model`` of an Arena-Hard-Auto checkout's ``config/judge_config.yaml`` is used
        if ``path`` lies in its ``data/<bench_name>/`` (said in the notes); otherwise a baseline
        judged against itself shows its data's win rate, with a note saying so.
    answers:
        Arena-Hard-Auto's ``model_answer/`` folder (``<model>.jsonl`` with ``conv_metadata``), for the
        style-controlled score (``arena_hard_style_controlled_score``,
        :mod:`biasbound.integrations.style_control`). Default: the ``model_answer/`` folder beside
        ``model_judgment/`` when ``path`` lies in Arena-Hard's ``data/<bench>/model_judgment/<judge>/`` layout.

    Returns
    -------
    JudgmentSet
        Two rows per record (game 1 and game 2), variant ``"original"``, rerun 0, score on
        [0, 1] in the model's view (game 2 flipped), the raw verdict, factor columns
        ``factor_<name>`` for the per-factor verdicts present. A missing game or a missing
        or null verdict is a row with score NaN, counted in the report. Arena-Hard's own
        headline (``arena_hard_score``, its rule stated) is in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the file and line for: malformed JSON, a record that is not an object or
        lacks ``question_id`` (or ``uid``) or ``model``, ``games`` that is not a list of at
        most two games, an unknown verdict, a duplicated (judge, model, item, game) key
        (naming both lines).
    """
    files = _files(Path(path))
    cols: dict[str, list[Any]] = {k: [] for k in ("judge", "model", "item_id", "game", "score", "verdict", "source", "line")}
    factor_vals: dict[str, list[float]] = {}
    skipped: list[tuple[str, int | None, str]] = []
    n_rows = 0
    empty: list[str] = []
    other_judge: dict[tuple[str, str], int] = {}  # (the judge the folder or judge= names, the record's judge) -> records
    for file in files:
        src = str(file)
        default_judge = judge if judge is not None else file.parent.name
        # model_judgment/<judge>/<model>.jsonl (Arena-Hard's layout) or judge=: the name a record may contradict
        named = judge if judge is not None else (file.parent.name if file.parent.parent.name == "model_judgment" else None)
        n_before = len(skipped) + n_rows
        for ln, text in enumerate(_open_lines(file), start=1):
            if not text.strip():
                continue
            try:
                rec, qid, model, parsed = _parse_record(text)
            except _Bad as exc:
                if not skip_bad:
                    raise DataFormatError(f"{exc}; fix the line or {arg('pass skip_bad=True', 'pass --skip-bad')} to skip and "
                                          "count it.", path=src, line=ln) from None
                skipped.append((src, ln, str(exc)))
                continue
            rec_judge = rec.get("judge")
            jname = str(rec_judge) if rec_judge is not None else default_judge
            if named is not None and rec_judge is not None and jname != named:
                other_judge[(named, jname)] = other_judge.get((named, jname), 0) + 1
            for g, (score, verdict, factors) in zip((1, 2), parsed):
                cols["judge"].append(jname)
                cols["model"].append(str(model))
                cols["item_id"].append(str(qid))
                cols["game"].append(g)
                cols["score"].append(score)
                cols["verdict"].append(verdict)
                cols["source"].append(src)
                cols["line"].append(ln)
                for name in factors:
                    factor_vals.setdefault(name, [np.nan] * n_rows)
                for name, lst in factor_vals.items():
                    lst.append(factors.get(name, np.nan))
                n_rows += 1
        if len(skipped) + n_rows == n_before:
            # an empty model file is an interrupted or failed run: said, never dropped unseen
            if len(files) > 1 and not skip_bad:
                raise DataFormatError(f"the file holds no judgment record (an interrupted run?); remove it or "
                                      f"{arg('pass skip_bad=True', 'pass --skip-bad')} to leave it out and count it.",
                                      path=src, line=1)
            empty.append(src)
    frame = pd.DataFrame(cols)
    frame["variant"] = "original"
    frame["rerun"] = 0
    for name, lst in factor_vals.items():
        frame[f"factor_{name}"] = np.asarray(lst, dtype=float)
    frame = check_duplicates(frame, skip_bad, skipped)
    js = finish_table(frame, skipped=skipped, scale=(0.0, 1.0), scale_inferred=False, sources=[str(f) for f in files])
    found = None if baseline is not None else _baseline_from_config(Path(path))
    remarks = [f"{n} record(s) under the judge name {named!r} (its folder{' or judge=' if judge is not None else ''}) "
               f"name the judge {rec!r}: certified as {rec!r}, as the records say" for (named, rec), n in
               sorted(other_judge.items())]
    js = _with_native(js, baseline if found is None else found[0], empty,
                      None if found is None else f"baseline {found[0]!r} read from {found[1]} (baseline_model)",
                      remarks=remarks)
    return _with_style_control(js, baseline if found is None else found[0], Path(path), answers)


def _parse_record(text: str) -> tuple[dict[str, Any], Any, Any, list[tuple[float, str | None, dict[str, float]]]]:
    """One judgment line: the record, its question id and model, and each game's (score, verdict, factors)."""
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Bad(f"malformed JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(rec, dict):
        raise _Bad(f"a record must be a JSON object, got {type(rec).__name__}")
    qid = rec.get("question_id", rec.get("uid"))
    model = rec.get("model")
    if qid is None or model is None:
        raise _Bad("record lacks 'question_id' (or 'uid') or 'model'")
    games = rec.get("games")
    if games is None:
        games = []
    if not isinstance(games, list) or len(games) > 2:
        raise _Bad("'games' must be a list of at most two games")
    return rec, qid, model, [_game_rows(g, games[g - 1] if g <= len(games) else None) for g in (1, 2)]


def _answers_folder(path: Path) -> Path | None:
    """``data/<bench>/model_answer/`` beside the ``model_judgment/`` folder ``path`` lies in, if it exists."""
    for up in [path, *path.resolve().parents][:4]:
        if up.name == "model_judgment":
            folder = up.parent / "model_answer"
            return folder if folder.is_dir() else None
    return None


def _with_style_control(js: JudgmentSet, baseline: str | None, path: Path, answers: str | Path | None) -> JudgmentSet:
    """Add Arena-Hard's style-controlled score when the model answers' style features are at hand."""
    from biasbound.data._common import Native
    from biasbound.integrations.style_control import (
        STYLE_RULE,
        read_conv_metadata,
        style_controlled_scores,
    )

    folder = Path(answers) if answers is not None else _answers_folder(path)
    if folder is None:
        return js
    integ = js.frame.attrs.get("integration") or {}
    remarks = integ.setdefault("remarks", [])
    if not folder.exists():
        raise DataFormatError("no such model_answer folder (the answers' conv_metadata of style control).",
                              path=str(folder))
    if baseline is None:
        remarks.append("style control needs the baseline (pass --baseline NAME): arena_hard_style_controlled_score "
                       "left out")
        return js
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else [folder]
    try:
        style = read_conv_metadata(files)
    except DataFormatError as exc:
        if answers is not None:  # asked for: the answers must serve
            raise
        remarks.append(f"style control left out: the answers beside the judgments ({folder}) do not hold "
                       f"conv_metadata ({exc}); Arena-Hard-Auto's add_markdown_info.py adds it")
        js.frame.attrs["integration"] = integ
        return js
    values, notes = style_controlled_scores(js.frame, style, baseline)
    remarks.extend(notes)
    if values:
        native = Native("arena_hard_style_controlled_score", STYLE_RULE + f" (answers: {folder})")
        native.values.update(values)
        integ.setdefault("native", []).append(native.to_dict())
    js.frame.attrs["integration"] = integ
    return js


def _baseline_from_config(path: Path) -> tuple[str, str] | None:
    """``(baseline_model, config file)`` from an Arena-Hard-Auto checkout holding ``path``.

    Arena-Hard-Auto keeps judgments in ``data/<bench_name>/model_judgment/<judge>/`` and the baseline in
    ``config/judge_config.yaml`` (``bench_name``, ``baseline_model``). Only a config whose ``bench_name``
    is a folder on ``path`` counts; anything unreadable is ignored (the baseline then stays unnamed).
    """
    import yaml

    here = path.resolve()
    parts = set(here.parts)
    for up in list(here.parents)[:6]:
        cfg = up / "config" / "judge_config.yaml"
        if not cfg.is_file():
            continue
        try:
            data = yaml.safe_load(cfg.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            return None
        if (isinstance(data, dict) and isinstance(data.get("baseline_model"), str) and data.get("baseline") is not False
                and str(data.get("bench_name")) in parts):
            return str(data["baseline_model"]), str(cfg)
        return None
    return None


def _with_native(js: JudgmentSet, baseline: str | None, empty: list[str], source: str | None = None,
                 remarks: list[str] | None = None) -> JudgmentSet:
    """Attach Arena-Hard's own headline (``arena_hard_score``) and the reader's notes to ``js``."""
    from biasbound.data._common import Native, Notes, attach
    from biasbound.leaderboard import arena_hard_winrate

    notes = Notes("arena-hard", rule="Arena-Hard verdict in the model's view: B>>A 1, B>A 0.75, A=B 0.5, A>B 0.25, A>>B 0 "
                                     "(game 2 mirrored); a missing game or verdict -> missing")
    for src in empty:
        notes.count(f"model file with no judgment record left out (--skip-bad): {src}")
    if source is not None:
        notes.remark(source)
        notes.baselines.append(str(baseline))
    for r in remarks or []:
        notes.remark(r)
    f = js.frame
    ok = f["score"].notna().to_numpy()
    if not ok.any():
        return attach(js, notes)
    models = set(f["model"].astype(str))
    if baseline is not None and baseline not in models:
        notes.remark(f"baseline {baseline!r} is not a judged model here, so no row of it is shown")
    elif baseline is None:
        notes.remark("the judgment files do not name the baseline: pass --baseline NAME to pin its own row of "
                     "arena_hard_score at 50 as Arena-Hard's show_result.py does")
    native = Native("arena_hard_score", ARENA_HARD_SCORE_RULE)
    wr = arena_hard_winrate(f[ok], baseline=baseline, rounds=1, rng=0)
    for r in wr.itertuples():
        native.values[(str(r.judge), str(r.model))] = float(r.winrate)
    notes.native.append(native)
    return attach(js, notes)

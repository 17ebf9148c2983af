"""The real cause when a ``biasbound run``'s judgments hold no verdict: the judge answered, but its replies held
no verdict the parser accepts.

``biasbound run`` writes every judgment to ``judgments.parquet`` with its ``status``, ``reason`` and ``raw_reply``;
an unparseable reply is a missing judgment (never a tie) whose reason says ``... unparseable repl...``. When no
judgment has a score and the missing ones are mostly unparseable, ``plan`` on the run's folder and ``certify`` on
its judgments would otherwise fail further on, with a cause that points away from the judge's replies (an α out
of the judge's reach, a score scale to give). :func:`unparseable_cause` says what happened instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["check_parseable", "unparseable_cause"]

_MARK = "unparseable repl"  # what biasbound.judge.client writes into the reason of an unparseable reply


def unparseable_cause(frame: pd.DataFrame, where: Path, *, doing: str) -> str | None:
    """One sentence naming the cause when ``frame`` (a run's judgment table, read from ``where``) holds no
    score and its judgments are missing because the replies were unparseable; None otherwise (a table without
    the run's ``status``/``reason`` columns, or one with a score, is left to the usual checks).

    ``doing`` names what cannot be done (``"plan"``, ``"certify"``)."""
    if "score" not in frame.columns or "reason" not in frame.columns or len(frame) == 0:
        return None
    scores = pd.to_numeric(frame["score"], errors="coerce")
    if scores.notna().any():
        return None
    reasons = frame["reason"].astype("string").fillna("")
    unparsed = reasons.str.contains(_MARK, regex=False)
    n, m = int(unparsed.sum()), len(frame)
    if n == 0 or n * 2 < m:  # mostly failed calls (refused, timeouts): the run's own message names the endpoint
        return None
    example = ""
    if "raw_reply" in frame.columns:
        raws = [str(r) for r in frame.loc[unparsed, "raw_reply"] if isinstance(r, str) and r]
        if raws:
            text = raws[0] if len(raws[0]) <= 120 else raws[0][:117] + "..."
            example = f"; one reply: {text!r}"
    folder = where.parent if where.is_file() else where
    summary = folder / "run_summary.json"
    see = f"see {summary}" if summary.is_file() else "see the run's run_summary.json"
    return (f"Nothing to {doing} in {where}: the judge answered, but its replies held no verdict the parser accepts "
            f"({n} of {m} judgments unparseable{example}); give the judge's own prompt and parser under 'prompt' in "
            f"the run's config (a preset such as llmbar, or a regex/json/number/logprob parser) and run again ({see}; "
            f"the replies are in the 'raw_reply' column of {folder / 'judgments.parquet'}).")


def check_parseable(frame: Any, where: Path, *, doing: str) -> None:
    """Raise :class:`~biasbound._exceptions.InputError` with :func:`unparseable_cause`'s sentence when it has one."""
    from biasbound._exceptions import InputError

    if isinstance(frame, pd.DataFrame):
        cause = unparseable_cause(frame, where, doing=doing)
        if cause is not None:
            raise InputError(cause)

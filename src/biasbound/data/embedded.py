"""The embedded demo dataset: ko-arena-hard-v0.1 (Apache-2.0, see its PROVENANCE.md)."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

import pandas as pd

from biasbound._validation import check_one_of
from biasbound.data.arena_hard import load_arena_hard
from biasbound.data.tables import JudgmentSet

__all__ = ["DEMO_BASELINE", "LEADERBOARD_KINDS", "demo_leaderboard", "demo_path", "load_demo"]

#: The baseline model of the demo's pairwise judgments (game 1 shows it as assistant A).
DEMO_BASELINE = "claude-3.7-sonnet"

#: Published leaderboards shipped with the demo.
LEADERBOARD_KINDS: tuple[str, ...] = ("no_control", "style_control", "markdown_control", "length_control")

_DATASET = "ko-arena-hard-v0.1"


def demo_path() -> Path:
    """Return the folder of the embedded ko-arena-hard-v0.1 dataset.

    Returns
    -------
    pathlib.Path
        Holds ``judgments_ensemble.jsonl.gz``, ``leaderboard_20250423/*.csv``, ``LICENSE``
        and ``PROVENANCE.md``.

    Notes
    -----
    Located with :mod:`importlib.resources`; for an installation that is not on the file
    system (a zip), the resource is extracted to a temporary file that lives as long as
    the process.
    """
    res = files("biasbound.data") / "embedded" / _DATASET
    if isinstance(res, Path):
        return res
    ctx = as_file(res)  # pragma: no cover - zip installs only
    path = ctx.__enter__()  # pragma: no cover
    return Path(path)  # pragma: no cover


def load_demo() -> JudgmentSet:
    """Load the embedded ko-arena-hard-v0.1 judgments (76 models x 500 questions x 2 games).

    Returns
    -------
    JudgmentSet
        76,000 rows, judge ``"ensemble"``; one record lacks game 2, loaded as one
        missing judgment (score NaN) and counted in the report.
    """
    return load_arena_hard(demo_path() / "judgments_ensemble.jsonl.gz", baseline=DEMO_BASELINE)


def demo_leaderboard(kind: str = "no_control") -> pd.DataFrame:
    """Return a published leaderboard of the demo dataset (2025-04-23).

    Parameters
    ----------
    kind:
        ``"no_control"``, ``"style_control"``, ``"markdown_control"`` or ``"length_control"``.

    Returns
    -------
    pandas.DataFrame
        The CSV as published: ``model, score`` (win rate vs the baseline, percent),
        ``rating_q025, rating_q975``, ``avg_tokens``, Elo columns, ``CI``, ``date``.
    """
    kind = check_one_of(kind, "kind", "demo_leaderboard", LEADERBOARD_KINDS)
    return pd.read_csv(demo_path() / "leaderboard_20250423" / f"{kind}.csv")

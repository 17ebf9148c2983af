"""The embedded demo dataset: ko-arena-hard-v0.1 (Apache-2.0, see its PROVENANCE.md)."""

from __future__ import annotations

from importlib.resources import as_file, files
from pathlib import Path

import pandas as pd

from biasbound._validation import check_one_of
from biasbound.data.arena_hard import load_arena_hard
from biasbound.data.tables import JudgmentSet
from biasbound.parameters import validate_params

__all__ = ["DEMO_BASELINE", "LABELS_DEMO_JUDGES", "LEADERBOARD_KINDS", "demo_leaderboard", "demo_path", "llmbar_path",
           "load_demo", "load_llmbar_demo"]

#: The LLMBar judge configurations of ``biasbound demo --labels``: a strong, two middling and a weak judge.
LABELS_DEMO_JUDGES: tuple[str, ...] = ("GPT-4/Vanilla", "ChatGPT/Vanilla", "PaLM2/Vanilla", "Falcon/Vanilla")

#: The baseline model of the demo's pairwise judgments (game 1 shows it as assistant A).
DEMO_BASELINE = "claude-3.7-sonnet"

#: Published leaderboards shipped with the demo.
LEADERBOARD_KINDS: tuple[str, ...] = ("no_control", "style_control", "markdown_control", "length_control")

_DATASET = "ko-arena-hard-v0.1"


def llmbar_path() -> Path:
    """The embedded LLMBar judgments (``judgments.csv.gz``, MIT; see its PROVENANCE.md)."""
    return demo_path().parent / "llmbar" / "judgments.csv.gz"


@validate_params
def load_llmbar_demo(*, n_labels: int = 50, seed: int = 0,
                     judges: tuple[str, ...] = LABELS_DEMO_JUDGES) -> tuple[JudgmentSet, pd.DataFrame]:
    """The embedded LLMBar judgments of ``judges`` and ``n_labels`` gold labels of items drawn uniformly (seeded).

    Returns
    -------
    (JudgmentSet, pandas.DataFrame)
        The judgments without their gold column, and the labels table (``item_id``, ``label``: 1 when the gold
        output is output 1, else 0) of a uniform draw of ``n_labels`` of the items every judge scored — the
        design the human-anchored intervals assume.
    """
    import dataclasses

    import numpy as np

    from biasbound.data.tables import load_llmbar

    js = load_llmbar(llmbar_path())
    frame = js.frame[js.frame["judge"].isin(judges)]
    canon = frame[(frame["game"] == 1) & frame["score"].notna()]
    shared = sorted(set.intersection(*(set(g["item_id"]) for _, g in canon.groupby("judge"))))
    gold = canon.drop_duplicates("item_id").set_index("item_id")["human"]
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(np.array(shared, dtype=object), size=min(n_labels, len(shared)), replace=False))
    labels = pd.DataFrame({"item_id": pick, "label": gold.loc[pick].to_numpy()})
    kept = frame.drop(columns="human").reset_index(drop=True)
    return dataclasses.replace(js, frame=kept), labels


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

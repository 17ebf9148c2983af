"""A replay judge: answers pairwise judge requests with the verdicts a judgment set recorded.

A test and demo tool. :func:`write_replay_inputs` writes an answer table for ``biasbound run``
(``data.table``: ``item_id, question, model, answer, baseline``) whose answer texts are placeholders
holding a *record key*, ``biasbound-replay-record: {"model": ..., "item": ...}`` (the
baseline's answer carries ``"baseline": true``). :class:`ReplayJudge` reads the keys back from the
judge prompt -- which answer is Assistant A tells the game (game 1: the baseline is A) -- and replies
with the recorded verdict of (model, item, game) in the judge protocol's format. A ``run`` against a
server replaying the set (``serve_in_thread(SyntheticServerConfig(replay="demo"))``) therefore reproduces the recorded judgments exactly, e.g. the
census of the embedded set (:func:`biasbound.data.load_demo`: 76 models × 500 questions, both games).

A recorded judgment without a verdict is replayed as a reply without one (the run counts it
missing, as the recording did); a prompt without two record keys, or with a key the set does not
hold, is refused (HTTP 400). The recorded verdict is returned whatever the rubric or wording of the
prompt: a replay judge only answers the swap (game 2) and rerun questions of the set it replays.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biasbound._exceptions import InputError
from biasbound.judge.parsing import task_of

__all__ = ["RECORD_TAG", "ReplayJudge", "record_text", "write_replay_inputs"]

#: The line prefix of the record key inside a placeholder answer.
RECORD_TAG = "biasbound-replay-record: "
_RECORD = re.compile(re.escape(RECORD_TAG) + r"(\{[^{}]*\})")


def record_text(model: str, item_id: str, *, baseline: bool = False) -> str:
    """The placeholder answer text of ``model`` to ``item_id``, with its record key."""
    key = {"model": str(model), "item": str(item_id), **({"baseline": True} if baseline else {})}
    return f"(Recorded answer of {model} to question {item_id}.) {RECORD_TAG}{json.dumps(key, ensure_ascii=False)}"


def _frame_of(judgments: Any) -> Any:
    if isinstance(judgments, str) and judgments == "demo":
        from biasbound.data import load_demo

        judgments = load_demo()
    return judgments.frame if hasattr(judgments, "frame") else judgments


class ReplayJudge:
    """Replies with the recorded verdicts of a pairwise judgment set (see the module docstring).

    Parameters
    ----------
    judgments:
        ``"demo"`` (the embedded set), a :class:`~biasbound.data.JudgmentSet` or its long frame
        (columns ``model, item_id, variant, rerun, game, verdict``; the ``original`` variant at rerun 0
        is replayed, the first judge's when there are several).
    """

    def __init__(self, judgments: Any = "demo") -> None:
        frame = _frame_of(judgments)
        need = {"model", "item_id", "variant", "rerun", "game", "verdict"}
        if not need <= set(frame.columns):
            raise InputError(f"The 'judgments' parameter of ReplayJudge must hold the columns {sorted(need)}. "
                             f"Got {sorted(frame.columns)} instead.")
        if "judge" in frame.columns and len(frame):
            frame = frame[frame["judge"] == frame["judge"].iloc[0]]
        frame = frame[(frame["variant"] == "original") & (frame["rerun"] == 0)]
        self.verdicts: dict[tuple[str, str, int], str | None] = {}
        for model, item, game, verdict in zip(frame["model"], frame["item_id"], frame["game"], frame["verdict"]):
            ok = isinstance(verdict, str) and bool(verdict.strip())
            self.verdicts[(str(model), str(item), int(game))] = verdict.strip() if ok else None

    def lookup(self, messages: Sequence[Mapping[str, Any]]) -> tuple[str, str, int]:
        """The (model, item, game) a pairwise judge prompt asks about, from its two record keys."""
        text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        keys = [json.loads(k) for k in _RECORD.findall(text)]
        if len(keys) != 2 or sum(bool(k.get("baseline")) for k in keys) != 1 or keys[0]["item"] != keys[1]["item"]:
            raise InputError("A replay judge request must hold two record keys of one item, the baseline's and a "
                             f"model's ({RECORD_TAG!r} lines written by write_replay_inputs). Got {len(keys)} key(s).")
        game = 1 if keys[0].get("baseline") else 2  # game 1: the baseline is Assistant A
        model = keys[1 if game == 1 else 0]["model"]
        return model, keys[0]["item"], game

    def reply(self, messages: Sequence[Mapping[str, Any]], seed: int | None = None) -> str:
        """The recorded verdict as judge reply text (``seed`` is ignored: a recording does not vary)."""
        task = task_of(messages)
        if task != "judge-pairwise":
            raise InputError(f"A replay judge answers pairwise judge requests only. Got task {task!r} instead.")
        key = self.lookup(messages)
        if key not in self.verdicts:
            raise InputError(f"The replayed judgments hold no record of model {key[0]!r}, item {key[1]!r}, game {key[2]}.")
        verdict = self.verdicts[key]
        if verdict is None:
            return "Replay judge (biasbound.testing): the recorded judgment has no verdict."
        return f"Replay judge (biasbound.testing): the recorded verdict.\n\nMy final verdict is: [[{verdict}]]"


def write_replay_inputs(path: str | Path, judgments: Any = "demo", *, baseline: str | None = None,
                        models: Sequence[str] | None = None) -> Path:
    """Write the answer table (CSV) a ``run`` against a :class:`ReplayJudge` of ``judgments`` reads.

    One row per (model, item) of the set (``models``: a subset), with the placeholder question and
    answers carrying the record keys; ``baseline`` (default: the set's baseline for ``"demo"``) names the
    baseline in the keys. Returns the path.
    """
    import pandas as pd

    if baseline is None:
        if not (isinstance(judgments, str) and judgments == "demo"):
            raise InputError("The 'baseline' parameter of write_replay_inputs must name the baseline model. Got None instead.")
        from biasbound.data.embedded import DEMO_BASELINE

        baseline = DEMO_BASELINE
    frame = _frame_of(judgments)
    pairs = frame[["model", "item_id"]].drop_duplicates()
    if models is not None:
        pairs = pairs[pairs["model"].isin(list(models))]
    pairs = pairs.sort_values(["model", "item_id"], kind="stable")
    table = pd.DataFrame({
        "item_id": pairs["item_id"].astype(str).to_numpy(),
        "question": [f"(Recorded question {q}.)" for q in pairs["item_id"]],
        "model": pairs["model"].astype(str).to_numpy(),
        "answer": [record_text(m, q) for m, q in zip(pairs["model"], pairs["item_id"])],
        "baseline": [record_text(str(baseline), q, baseline=True) for q in pairs["item_id"]],
    })
    out = Path(path)
    table.to_csv(out, index=False)
    return out

"""certify's human-labels step: agreement on the judge card, anchored columns on the leaderboard, and the
certificate of the anchored release (an ``anchored/`` outputs folder that ``verify`` and ``audit`` read).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from biasbound._exceptions import BiasboundError, InputError
from biasbound.human.anchored import anchored_judgments, human_report
from biasbound.human.labels import labels_from_column, normalise_labels, read_labels

__all__ = ["ANCHORED_COLUMNS", "attach_human", "load_labels", "write_anchored"]

#: the judgment table of the anchored release, written beside human.json
ANCHORED_TABLE = "anchored_judgments.parquet"

#: the leaderboard columns the human labels add (normalised [0, 1] scale, as 'original')
ANCHORED_COLUMNS = ("human_labels", "anchored", "anchored_lo", "anchored_hi", "classical_lo", "classical_hi",
                    "anchored_rank_lo", "anchored_rank_hi")


def _raw_scale(scales: dict[str, list[dict[str, Any]]]) -> tuple[float, float]:
    found = {tuple(float(v) for v in (e.get("scale") or (0.0, 1.0))) for entries in scales.values() for e in entries}
    if len(found) > 1:
        raise InputError(f"human labels need one raw score scale for every judge; the inputs have {sorted(found)}.")
    lo, hi = next(iter(found)) if found else (0.0, 1.0)
    return lo, hi


def load_labels(human_labels: Any, frame: pd.DataFrame, scales: dict[str, list[dict[str, Any]]]) -> pd.DataFrame | None:
    """The labels as ``item_id, model, rater, label`` on the normalised scale, from a file, a frame or a column.

    ``human_labels`` is a path, a DataFrame with ``item_id``, ``label`` (optional ``model``, ``rater``; raw scale), the
    name of a column of the judgments table, or None (then a ``human`` column of the judgments is used when present).
    """
    if human_labels is None:
        raw = labels_from_column(frame)
    elif isinstance(human_labels, (str, Path)) and not Path(human_labels).is_file() and str(human_labels) in frame.columns:
        raw = labels_from_column(frame, str(human_labels))
    elif isinstance(human_labels, (str, Path)):
        raw = read_labels(human_labels)
    elif isinstance(human_labels, pd.DataFrame):
        if "item_id" not in human_labels.columns or "label" not in human_labels.columns:
            raise InputError("The 'human_labels' parameter of certify must be a table with the columns item_id and "
                             f"label; got the columns {list(map(str, human_labels.columns))}.")
        raw = pd.DataFrame({"item_id": human_labels["item_id"].astype(str).to_numpy(),
                            "model": human_labels["model"].astype(str).to_numpy() if "model" in human_labels else None,
                            "rater": human_labels["rater"].astype(str).to_numpy() if "rater" in human_labels else None,
                            "label": pd.to_numeric(human_labels["label"], errors="coerce").to_numpy(dtype=float),
                            "line": range(2, len(human_labels) + 2)})
        raw.attrs["source"] = "the 'human_labels' table"
    else:
        raise TypeError("The 'human_labels' parameter of certify must be a path, a column name, a DataFrame or None. "
                        f"Got {type(human_labels).__name__} instead.")
    if raw is None:
        return None
    return normalise_labels(raw, _raw_scale(scales), frame)


def attach_human(result: Any, frame: pd.DataFrame, labels: pd.DataFrame, generators: tuple[str, ...],
                 level: float = 0.95) -> dict[str, Any]:
    """Compute the human report; put agreement on the judge card and the anchored columns on the leaderboards."""
    report = human_report(frame, labels, level=level, generators=tuple(g for g in generators if g != "range"))
    result.human = report
    cards = (result.judge_card or {}).get("judges", {})
    for judge, h in report["judges"].items():
        if judge in cards:
            cards[judge]["human_agreement"] = {k: h[k] for k in ("agreement", "flips", "krippendorff_alpha")}
    if cards:
        from biasbound.card import panel_rows

        result.judge_card["panel"] = panel_rows(result.judge_card)  # with the accuracy against the humans
    rows = pd.DataFrame([r for h in report["judges"].values() for r in h["models"]])
    if rows.empty:
        return report
    add = rows.rename(columns={"labels": "human_labels", "rank_lo": "anchored_rank_lo", "rank_hi": "anchored_rank_hi"})
    add = add[["judge", "model", *ANCHORED_COLUMNS]]

    def merged(lb: pd.DataFrame) -> pd.DataFrame:
        keys = lb[["judge", "model"]].astype(str)
        return pd.concat([lb.reset_index(drop=True),
                          keys.merge(add, on=["judge", "model"], how="left")[list(ANCHORED_COLUMNS)]], axis=1)

    for j in result.judges.values():
        j.leaderboard = merged(j.leaderboard)
    result.leaderboard = merged(result.leaderboard)
    return report


def write_anchored(result: Any, frame: pd.DataFrame, labels: pd.DataFrame, out: Path | None,
                   certify_kwargs: dict[str, Any], certify: Callable[..., Any]) -> None:
    """Certify the anchored release into ``out/anchored`` and write ``out/human.json`` (the report and the map).

    The anchored table is certified in the leaderboard view with the judge's generators, δ, seed and method; the
    tolerance and a fixed centre are carried into the anchored table's affine scale, so τ means the same distance
    on the judge's normalised scale. A release that cannot be certified is recorded with its reason. ``certify`` is
    :func:`biasbound.pipeline.certify` (passed in: the pipeline imports this module).
    """
    report = dict(result.human)
    table, mapping = anchored_judgments(frame, labels, report)
    span = (mapping["hi"] - mapping["lo"]) if mapping["lo"] is not None else None
    release: dict[str, Any] = {"mapping": mapping, "folder": "anchored", "view": "leaderboard", "certified": []}
    if not span:
        release["reason"] = ("no model has an anchored score (every judged item labelled, or too few labels): there is "
                             "no anchored release to certify")
    if span:
        kw = dict(certify_kwargs)
        kw["tau"] = float(kw.get("tau", 0.5)) / span  # [proof:tau-scaled]
        centre = str(kw.get("center", "fixed:0.5"))
        if centre.startswith("fixed:"):
            kw["center"] = f"fixed:{(float(centre.split(':', 1)[1]) - mapping['lo']) / span!r}"
        kw.update(view="leaderboard", out=None if out is None else out / "anchored", plots=False, progress=False,
                  sign_key=None)
        release.update(tau_judge_scale=float(certify_kwargs.get("tau", 0.5)), tau=kw["tau"], center=kw.get("center"),
                       scale_span=span)
        from biasbound.data.tables import COLUMNS, from_frame

        cols = [c for c in COLUMNS if c in table.columns and c not in ("source", "line")]
        anchored_set = from_frame(table[cols], source=ANCHORED_TABLE, scale=(0.0, 1.0))
        if out is not None:  # the table the anchored certificates are about: verify --judgments and audit re-read it
            from biasbound.data.coded import text_frame

            text_frame(anchored_set.frame[cols]).to_parquet(out / ANCHORED_TABLE, index=False)
            result.outputs["anchored_judgments"] = out / ANCHORED_TABLE
        try:
            anchored = certify(anchored_set, **kw)
            release["certified"] = sorted(anchored.judges)
            release["alpha"] = {n: j.calibration.alpha for n, j in anchored.judges.items()}
            release["sigma"] = {n: j.calibration.sigma for n, j in anchored.judges.items()}
            release["violated"] = bool(anchored.violated)
            _released_scores(result, anchored, mapping)
        except BiasboundError as exc:
            release["certified"] = []
            release["reason"] = str(exc)
    report["release"] = release
    result.human = report
    if out is not None:
        (out / "human.json").write_text(json.dumps(report, indent=2, allow_nan=False, default=str), encoding="utf-8")
        result.outputs["human"] = out / "human.json"


def _released_scores(result: Any, anchored: Any, mapping: dict[str, Any]) -> None:
    """The certified anchored score of each model, back on the judge's normalised scale, in the report and leaderboards."""
    lb = anchored.leaderboard
    if lb is None or lb.empty or "certified" not in lb.columns:
        return
    lo, span = float(mapping["lo"]), float(mapping["hi"]) - float(mapping["lo"])
    back = {(str(j), str(m)): lo + span * float(c) for j, m, c in zip(lb["judge"], lb["model"], lb["certified"])
            if pd.notna(c)}
    for judge, h in result.human["judges"].items():
        for row in h["models"]:
            row["anchored_certified"] = back.get((judge, row["model"]))

    def add(frame: pd.DataFrame) -> pd.DataFrame:
        keys = zip(frame["judge"].astype(str), frame["model"].astype(str))
        return frame.assign(anchored_certified=[back.get(k) for k in keys])

    for j in result.judges.values():
        j.leaderboard = add(j.leaderboard)
    result.leaderboard = add(result.leaderboard)

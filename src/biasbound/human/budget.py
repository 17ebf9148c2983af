"""How many human labels for a ±w interval on each model's score: the PPI++ and the labels-only answer from a pilot."""

from __future__ import annotations

from typing import Any

import pandas as pd

from biasbound._validation import check_in_range
from biasbound.human._ppi import labels_for_width
from biasbound.human.anchored import _canonical, _per_item

__all__ = ["label_budget"]


def label_budget(frame: pd.DataFrame, labels: pd.DataFrame, *, half_width: float, level: float = 0.95,
                 n_items: int | None = None) -> list[dict[str, Any]]:
    """Per judge and model, the labels a PPI++ and a labels-only interval of half-width ``half_width`` need.

    The pilot's labelled items give the human and judge variances and their covariance (``_ppi.labels_for_width``);
    ``n_items`` is the batch size the labels will be drawn from (default: the items the judge scored). A pilot
    estimate, not a guarantee: check the interval once the labels are in.
    """
    half_width = check_in_range(half_width, "half_width", "label_budget", low=0.0, high=1.0, low_open=True,
                                high_open=True)
    joined = _canonical(frame).merge(_per_item(labels), on=["model", "item_id"], how="left")
    rows: list[dict[str, Any]] = []
    for (judge, model), g in joined.groupby(["judge", "model"], sort=True):
        labelled = g["label"].notna().to_numpy()
        n = int(labelled.sum())
        row: dict[str, Any] = {"judge": str(judge), "model": str(model), "pilot_labels": n, "items": len(g),
                               "half_width": half_width, "level": level}
        if n < 2:
            row.update(labels_ppi=None, labels_classical=None, reason="the pilot needs at least 2 labelled items")
        else:
            big_n = int(n_items) if n_items is not None else len(g)
            n_ppi, n_cl = labels_for_width(g["label"].to_numpy(dtype=float)[labelled], g["score"].to_numpy(dtype=float),
                                           labelled, half_width=half_width, level=level, n_total=big_n)
            row.update(labels_ppi=n_ppi, labels_classical=n_cl, saved=n_cl - n_ppi, reason=None)
        rows.append(row)
    return rows

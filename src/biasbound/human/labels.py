"""Human labels: read a labels table (or a column of the judgments table) and check it against the judgments.

A labels table has one row per human judgment of an item:

* ``item_id`` (required): the item, as in the judgments table;
* ``model`` (optional): the model the label is about, where the benchmark has several; a label without a model
  applies to every model judged on that item;
* ``label`` (required; ``human`` is read as well): the human's score or preference on the judge's raw scale
  (normalised with the judgments' scale, as the judge's scores are);
* ``rater`` (optional): who labelled, when several humans did (then the labels' mean per item is the human
  score, and Krippendorff's α is reported).

A judgments table can carry the labels itself in a ``human`` (or ``human_label``) column: the value of an item's
original judgment row is its label.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError

__all__ = ["LABEL_COLUMNS", "labels_from_column", "normalise_labels", "read_labels"]

#: the names a label column may have, in the order they are looked for
LABEL_COLUMNS = ("label", "human", "human_label", "gold_label")


def _label_column(columns: Any) -> str | None:
    return next((c for c in LABEL_COLUMNS if c in columns), None)


def read_labels(path: str | Path) -> pd.DataFrame:
    """Read a labels table (CSV, TSV, JSON lines, JSON array or parquet) as ``item_id, model, rater, label, line``.

    ``model`` and ``rater`` are None where the table has no such column; ``label`` is on the raw scale (float);
    ``line`` is each row's file line. A label that is not a number is one sentence naming its file and line.
    """
    from biasbound.data.tables import file_format, read_rows

    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such labels file.", path=str(path))
    raw, lines = read_rows(path, file_format(path), what="label")
    col = _label_column(raw.columns)
    if "item_id" not in raw.columns or col is None:
        raise DataFormatError(f"a labels table needs the columns item_id and label (or human); the columns are "
                              f"{list(map(str, raw.columns))}.", path=str(path), line=1)
    value = pd.to_numeric(raw[col], errors="coerce")
    bad = value.isna().to_numpy() | ~np.isfinite(value.to_numpy(dtype=float, na_value=np.nan))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise DataFormatError(f"the {col} must be a number on the judge's scale (got {raw[col].iloc[k]!r}).",
                              path=str(path), line=int(lines[k]))
    out = pd.DataFrame({
        "item_id": raw["item_id"].astype(str).to_numpy(),
        "model": raw["model"].astype(str).to_numpy() if "model" in raw.columns else None,
        "rater": raw["rater"].astype(str).to_numpy() if "rater" in raw.columns else None,
        "label": value.to_numpy(dtype=float),
        "line": np.asarray(lines, dtype=np.int64),
    })
    out.attrs["source"] = str(path)
    return out


def labels_from_column(frame: pd.DataFrame, column: str | None = None) -> pd.DataFrame | None:
    """The labels a judgments table carries in a ``human``/``human_label`` column (None when it has none, or no value).

    Read from the original judgment rows (variant ``original``, rerun 0, game 0 or 1), already on the normalised
    scale when the reader normalised them (``label_scale="normalised"`` in ``attrs``).
    """
    col = column or next((c for c in ("human", "human_label") if c in frame.columns), None)
    if col is None or col not in frame.columns:
        return None
    canon = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([0, 1])]
    value = pd.to_numeric(canon[col], errors="coerce")
    keep = value.notna()
    if not keep.any():  # a column with no label in it: no labels (not an error)
        return None
    out = pd.DataFrame({"item_id": canon.loc[keep, "item_id"].astype(str).to_numpy(),
                        "model": canon.loc[keep, "model"].astype(str).to_numpy(), "rater": None,
                        "label": value[keep].to_numpy(dtype=float),
                        "line": canon.loc[keep, "line"].to_numpy(dtype=np.int64)})
    out = out.drop_duplicates(["item_id", "model"])
    out.attrs["source"] = f"the {col!r} column of the judgments"
    out.attrs["normalised"] = True
    return out


def normalise_labels(labels: pd.DataFrame, scale: tuple[float, float], frame: pd.DataFrame) -> pd.DataFrame:
    """Labels on the normalised [0, 1] scale, checked against the judgments.

    A label off the scale, or one whose item (and model) no judgment holds, is one sentence naming the labels'
    file and line. Returns ``item_id, model, rater, label`` with ``model`` filled in (a label without a model is
    repeated for every model judged on its item).
    """
    src = str(labels.attrs.get("source", "the labels"))
    lo, hi = float(scale[0]), float(scale[1])
    y = labels["label"].to_numpy(dtype=float)
    if not labels.attrs.get("normalised"):
        off = (y < lo - 1e-9) | (y > hi + 1e-9)
        if off.any():
            k = int(np.flatnonzero(off)[0])
            raise DataFormatError(f"the label {y[k]:g} is off the judge's scale [{lo:g}, {hi:g}].",
                                  path=src, line=int(labels["line"].iloc[k]))
        y = (y - lo) / (hi - lo) if hi > lo else np.zeros_like(y)
    judged = frame[["model", "item_id"]].astype(str).drop_duplicates()
    items = set(judged["item_id"])
    out = labels.assign(label=y)
    missing = ~out["item_id"].isin(items)
    if missing.any():
        k = int(np.flatnonzero(missing.to_numpy())[0])
        raise DataFormatError(f"the labelled item {out['item_id'].iloc[k]!r} has no judgment; label only judged items "
                              "(the item_id must be spelled as in the judgments).", path=src, line=int(out["line"].iloc[k]))
    if out["model"].isna().all():
        out = out.drop(columns="model").merge(judged, on="item_id", how="inner")
    else:
        pairs = set(zip(judged["model"], judged["item_id"]))
        unknown = np.array([(m, i) not in pairs for m, i in zip(out["model"], out["item_id"])], dtype=bool)
        if unknown.any():
            k = int(np.flatnonzero(unknown)[0])
            raise DataFormatError(f"model {out['model'].iloc[k]!r} was not judged on the labelled item "
                                  f"{out['item_id'].iloc[k]!r}.", path=src, line=int(out["line"].iloc[k]))
    if out.empty:
        raise InputError(f"{src} holds no label of a judged item.")
    return out[["item_id", "model", "rater", "label"]].reset_index(drop=True)

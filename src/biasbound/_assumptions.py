"""Declared assumptions checked against the data before anything is certified.

``--deterministic-judge`` declares every recorded verdict the judge's only possible answer: a
judge asked the same question twice (two reruns of one item, variant and presentation order,
the swapped order included) must have answered the same. Data that show two different answers
refute the declaration, and certify refuses it, naming both rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound._validation import arg

__all__ = ["check_deterministic"]

_SAME = 1e-9  # scores closer than this are one answer (text rounding)


def check_deterministic(frame: pd.DataFrame) -> None:
    """Raise :class:`InputError` when one question (judge, model, item, variant, game) holds two different scores."""
    found = refutations(frame)
    if found is not None:
        raise refutation_error(*found)


def refutations(frame: pd.DataFrame) -> tuple[int, pd.Series, pd.Series, pd.Series] | None:
    """``(questions with two different scores, the first such row, its question's lowest and highest rows)``, or None
    when every question has one answer. A table read in blocks of whole models sums the blocks' counts and names the
    first row of the block whose first row comes first (:func:`refutation_error`)."""
    keys = [c for c in ("judge", "model", "item_id", "variant", "game") if c in frame.columns]
    if "rerun" not in frame.columns or not (frame["rerun"] > 0).any():
        return None
    scored = frame[frame["score"].notna()]
    g = scored.groupby(keys, sort=False, observed=True)["score"]
    spread = (g.transform("max") - g.transform("min")).to_numpy()
    bad = spread > _SAME
    if not bad.any():
        return None
    rows = scored[bad]
    first = rows.iloc[0]
    same = rows[(rows[keys] == first[keys]).all(axis=1)]
    lo, hi = same.loc[same["score"].idxmin()], same.loc[same["score"].idxmax()]
    return int(rows.groupby(keys, sort=False, observed=True).ngroups), first, lo, hi


def refutation_error(n_questions: int, first: pd.Series, lo: pd.Series, hi: pd.Series) -> InputError:
    """The sentence that refuses a deterministic judge's declaration (:func:`refutations`)."""
    def at(r: pd.Series) -> str:
        return f"{r['source']}:{int(r['line'])}" if "source" in r and "line" in r and str(r["source"]) else "a row"

    declared = arg("The judge was declared deterministic (deterministic_judge=True)",
                   "The judge was declared deterministic (--deterministic-judge)")
    return InputError(f"{declared}, but {n_questions} question(s) hold two different answers, e.g. judge "
                      f"{first['judge']}, model {first['model']}, item {first['item_id']}, {first['variant']}, game "
                      f"{int(first['game'])}: {np.float64(lo['score']):g} at {at(lo)} and {np.float64(hi['score']):g} at "
                      f"{at(hi)}; a deterministic judge repeats itself, so certify without the declaration to treat the "
                      "judge as random.")


#: A given scale whose data fill less than this part of it is refused (scores 1e-300 apart are no order).
_MIN_SPAN = 1e-6


def check_scale_used(scores: pd.Series, scale: tuple[float, float] | None, where: str = "certify") -> None:
    """Refuse a ``--scale`` the data occupy a vanishing part of (``--scale 0,1e308`` for 1–10 scores): mapped to
    [0, 1], the scores would differ by less than any noise, and the leaderboard would be noise's order."""
    if scale is None:
        return
    x = scores.to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return
    span = float(x.max() - x.min())
    if span == 0.0 or span >= _MIN_SPAN:
        return
    lo, hi = scale
    raw_lo, raw_hi = lo + float(x.min()) * (hi - lo), lo + float(x.max()) * (hi - lo)
    raise InputError(f"The '--scale' option of {where} gives [{lo:g}, {hi:g}], but the scores run from {raw_lo:g} to "
                     f"{raw_hi:g}, a {span:.2g} part of it: mapped to [0, 1] they differ by less than any noise, so the "
                     f"order would be noise's; give the scale the judge used (e.g. --scale {raw_lo:g},{raw_hi:g} or "
                     "the judge's own range) or drop --scale to infer it.")

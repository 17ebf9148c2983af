"""The tools' own headline numbers of the models a call reads but does not certify.

``certify`` certifies the (judge, model) pairs whose judgments hold neighbours; a model without one (an AlpacaEval
model without ``_verbose``/``_concise`` runs, a judge that could not be certified) still has its tool's own number
(AlpacaEval's win rate, Arena-Hard's score, FastChat's, inspect's metrics), which the readers compute from every
record. Those rows go to ``leaderboard.csv`` (``certified_status`` says why there is no certified score) and to the
terminal, so the native leaderboard a user knows is complete, certified or not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CERTIFIED", "print_uncertified", "uncertified_natives", "with_uncertified"]

#: ``certified_status`` of a row with a certified score.
CERTIFIED = "certified"


def uncertified_natives(natives: Sequence[Mapping[str, Any]], leaderboard: pd.DataFrame,
                        failures: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per (judge, model) holding a native number but no row of ``leaderboard`` (the certified models).

    Returns
    -------
    pandas.DataFrame
        ``judge, model, certified_status`` and one column per native number (NaN where the tool gives none); the
        status is ``"not certified: judge not certified (REASON)"`` for a judge in ``failures``, else ``"not
        certified: no neighbour of this model in the data"``.
    """
    have = set()
    if len(leaderboard) and {"judge", "model"} <= set(leaderboard.columns):
        have = set(zip(leaderboard["judge"].astype(str), leaderboard["model"].astype(str)))
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in natives:
        for v in rec.get("values", []):
            key = (str(v["judge"]), str(v["model"]))
            if key in have:
                continue
            row = rows.setdefault(key, {"judge": key[0], "model": key[1]})
            row[str(rec["column"])] = float(v["value"])
    if not rows:
        return pd.DataFrame(columns=["judge", "model", "certified_status"])
    out = pd.DataFrame(list(rows.values()))
    why = dict(failures or {})
    out.insert(2, "certified_status", [f"not certified: judge not certified ({why[j].rstrip('.')})" if j in why
                                       else "not certified: no neighbour of this model in the data"
                                       for j in out["judge"]])
    return out.sort_values(["judge", "model"], kind="stable").reset_index(drop=True)


def with_uncertified(table: pd.DataFrame, uncertified: pd.DataFrame) -> pd.DataFrame:
    """``leaderboard.csv``'s table with a ``certified_status`` column and the uncertified rows appended (their
    certified and original columns empty)."""
    out = table.copy()
    if "model" in out.columns:
        out.insert(out.columns.get_loc("model") + 1, "certified_status", CERTIFIED)
    if uncertified is None or uncertified.empty:
        return out
    extra = uncertified.copy()
    if "is_baseline" in out.columns:
        extra["is_baseline"] = False
    joined = pd.concat([out, extra], ignore_index=True, sort=False)
    for c in ("rank_original", "rank_certified"):
        if c in joined.columns:
            joined[c] = joined[c].astype("Int64")
    return joined[list(out.columns) + [c for c in extra.columns if c not in out.columns]]


def print_uncertified(uncertified: pd.DataFrame, console: Any, *, top: int = 50) -> None:
    """The uncertified rows as a rich table (native numbers only)."""
    if uncertified is None or uncertified.empty:
        return
    from rich.markup import escape
    from rich.table import Table

    cols = [c for c in uncertified.columns if c not in ("judge", "model", "certified_status")]
    t = Table(title=f"Not certified — {len(uncertified)} model(s) with their tool's own number only")
    for c in ("judge", "model", *[c.replace("_", " ") for c in cols], "why"):
        t.add_column(c, overflow="fold")
    for row in uncertified.head(top).itertuples(index=False):
        d = row._asdict()
        vals = [("" if d[c] is None or (isinstance(d[c], float) and np.isnan(d[c])) else f"{d[c]:.4g}") for c in cols]
        t.add_row(escape(str(d["judge"])), escape(str(d["model"])), *vals,
                  escape(str(d["certified_status"]).removeprefix("not certified: ")))
    console.print(t)
    if len(uncertified) > top:
        console.print(f"  ... {len(uncertified) - top} more in leaderboard.csv", highlight=False)

"""Shared synthetic tables for tests in several folders."""

from __future__ import annotations

import numpy as np
import pandas as pd


def pairwise_table(kind: str, seed: int = 0, n_items: int = 40) -> pd.DataFrame:
    """Three models, both presentation orders, a paraphrase variant and one rerun per item.

    ``kind="grades"``: integer grades 1-10 (the model's view; 10 = strongly preferred);
    ``kind="preferences"``: continuous preferences in [0, 1] with three decimals.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for m, quality in (("mA", 0.8), ("mB", 0.0), ("mC", -0.8)):
        for i in range(n_items):
            base = 0.5 + 0.15 * quality + rng.normal(0, 0.15)
            for variant, game, rerun in (("original", 1, 0), ("original", 2, 0), ("original", 1, 1),
                                         ("paraphrase", 1, 0)):
                p = float(np.clip(base + rng.normal(0, 0.05), 0.0, 1.0))
                score = float(np.round(1 + 9 * p)) if kind == "grades" else round(p, 3)
                rows.append({"judge": "j", "model": m, "item_id": f"q{i}", "variant": variant, "rerun": rerun,
                             "game": game, "score": score})
    df = pd.DataFrame(rows)
    if kind == "grades":  # make sure both ends of the scale occur, as a 1-10 judge's table does
        df.loc[0, "score"], df.loc[1, "score"] = 1.0, 10.0
    return df


def readme_table() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A table in the README's long schema (item_id, model, judge, game, score on 1-10, the model's view): the
    embedded Arena-Hard verdicts of 6 models on 120 items. Returns the table and the embedded rows it came from."""
    from biasbound.data.embedded import load_demo

    f = load_demo().frame
    models = sorted(f["model"].unique())[:6]
    items = sorted(f["item_id"].unique())[:120]
    sub = f[f["model"].isin(models) & f["item_id"].isin(items) & (f["variant"] == "original")]
    table = pd.DataFrame({"item_id": sub["item_id"], "model": sub["model"], "judge": "my-judge",
                          "game": sub["game"], "score": 1 + 9 * sub["score"]})
    return table, sub

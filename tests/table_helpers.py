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


def reference_battle_sums(frame: pd.DataFrame, keep: np.ndarray, weight: float = 3.0) -> dict[str, np.ndarray]:
    """The battle sums of ``frame``'s rows ``keep`` by the plain formulas the fast battle route replaced (np.where
    chains, float-weighted bincounts over compacted model x item cells): ``num``, ``den``, ``ok`` (the game has a
    score), ``m_idx`` (each kept row's compact model index), ``m_codes`` and ``names`` (the sorted model texts)."""
    from biasbound.data.tables import compact_codes, sorted_codes

    s = frame["score"].to_numpy(dtype=float)[keep]
    ok = ~np.isnan(s)
    w = np.where(np.isin(s, (0.0, 1.0)), weight, 1.0) * ok
    win = np.where(s > 0.5, 1.0, np.where(s == 0.5, 0.5, 0.0)) * ok
    m_all, names = sorted_codes(frame["model"])
    i_all, _ = sorted_codes(frame["item_id"])
    m_codes, m_idx = compact_codes(m_all[keep], len(names))
    i_codes, i_idx = compact_codes(i_all[keep], int(i_all.max()) + 1)
    flat, cells = m_idx * len(i_codes) + i_idx, len(m_codes) * len(i_codes)
    shape = (len(m_codes), len(i_codes))
    return {"num": np.bincount(flat, weights=w * win, minlength=cells).reshape(shape),
            "den": np.bincount(flat, weights=w, minlength=cells).reshape(shape),
            "ok": ok, "m_idx": m_idx, "m_codes": m_codes, "names": names}

"""Arena-Hard's style-controlled score, by Arena-Hard-Auto's own rule (``show_result.py --style-control``).

Each judgment record gives two battles, the baseline as assistant A and the judged model as B (game 2 mirrored):
``A>>B``/``B>>A`` count three times (Arena-Hard's ``--weight 3``), ``A>B``/``B>A`` once, ``A=B`` is a tie, a missing
verdict no battle. The Bradley–Terry model is a logistic regression without intercept on

* one column per model: +ln 10 for assistant A, −ln 10 for assistant B (a model judged against itself keeps
  −ln 10, as the assignment order of the native code leaves it);
* four style columns: for answer length (``token_len``), markdown headers (h1–h6), list items (ordered +
  unordered) and bold spans (``**`` + ``__``), the difference A − B divided by (A + B + 1), each standardised over
  the battles (mean 0, population standard deviation 1);

with every battle entered twice: a win of A is two rows of label 1, a win of B two rows of label 0, a tie one of each.
The fit is scikit-learn's ``LogisticRegression`` (L2, C = 1, lbfgs) as the native code calls it, solved to convergence
(:data:`TOL`; the native code stops at scikit-learn's default tolerance, see there); a model's score is its
Bradley–Terry win probability against the baseline with the style columns at 0,
``100 / (1 + 10^((r_baseline − r_model) / 400))`` where ``r = 400 · coefficient``.

The style features come from the model answers' ``conv_metadata`` (``token_len``, ``header_count``, ``list_count``,
``bold_count``), which Arena-Hard-Auto writes into ``data/<bench>/model_answer/<model>.jsonl``; the baseline's
answers are needed too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError

__all__ = ["MAX_ITER", "STYLE_FEATURES", "STYLE_RULE", "TOL", "read_conv_metadata", "style_controlled_scores"]

#: The four style features, in the native column order.
STYLE_FEATURES = ("token_len", "header_count", "list_count", "bold_count")
STYLE_RULE = ("arena_hard_style_controlled_score: Arena-Hard-Auto's show_result.py --style-control: Bradley-Terry "
              "(logistic regression, scikit-learn defaults) on the battles against the baseline (>> weighted 3) with "
              "four standardised style columns (length, headers, lists, bold: (A - B) / (A + B + 1)), win rate "
              "against the baseline at equal style, in percent; features from the answers' conv_metadata")

# model-view score of a game (biasbound's Arena-Hard reader) -> (baseline wins, model wins, ties) battles
_BATTLES = {1.0: (0, 3, 0), 0.75: (0, 1, 0), 0.5: (0, 0, 1), 0.25: (1, 0, 0), 0.0: (3, 0, 0)}


def _total(x: Any) -> float:
    return float(sum(x.values())) if isinstance(x, Mapping) else float(x)


def read_conv_metadata(files: Iterable[str | Path]) -> pd.DataFrame:
    """The style features of Arena-Hard model answers (``model_answer/<model>.jsonl`` with ``conv_metadata``).

    Returns
    -------
    pandas.DataFrame
        ``model, item_id`` (``model_id``/``model``, ``question_id``/``uid``) and :data:`STYLE_FEATURES` (header,
        list and bold counts summed over their kinds).
    """
    rows = []
    for f in files:
        path = Path(f)
        with path.open("r", encoding="utf-8") as fh:
            for ln, text in enumerate(fh, start=1):
                if not text.strip():
                    continue
                try:
                    rec = json.loads(text)
                    meta = rec["conv_metadata"]
                    model = rec.get("model_id", rec.get("model"))
                    qid = rec.get("question_id", rec.get("uid"))
                    if model is None or qid is None:
                        raise KeyError("model_id")
                    rows.append((str(model), str(qid), *(_total(meta[k]) for k in STYLE_FEATURES)))
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
                    raise DataFormatError(f"an Arena-Hard model answer needs model_id, question_id and conv_metadata "
                                          f"with {', '.join(STYLE_FEATURES)} (style control); {type(exc).__name__}: "
                                          f"{exc}.", path=str(path), line=ln) from None
    return pd.DataFrame(rows, columns=["model", "item_id", *STYLE_FEATURES]).drop_duplicates(["model", "item_id"],
                                                                                           keep="last")


#: The solver's stopping rule. Arena-Hard-Auto calls scikit-learn's defaults (tol 1e-4, 100 iterations), which stop
#: lbfgs before the optimum: its output then depends on the order of the battles (the order its files are listed in)
#: by up to 0.3 points on ko-arena-hard-v0.1. biasbound solves the same problem to convergence.
TOL, MAX_ITER = 1e-10, 100_000


def _one_game_records_as_native(frame: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """A record whose game 2 is missing while game 1 holds a verdict is read as Arena-Hard-Auto reads a record with one
    game: game 1's verdict counted again for game 2, mirrored (model-view score 1 − game 1's), with a note."""
    g = frame["game"].to_numpy()
    miss = (g == 2) & frame["score"].isna().to_numpy()
    if not miss.any():
        return frame
    key = ["judge", "model", "item_id"]
    first = frame[(g == 1) & frame["score"].notna().to_numpy()].set_index(key)["score"]
    idx = pd.MultiIndex.from_frame(frame.loc[miss, key])
    fill = first.reindex(idx).to_numpy(dtype=float)
    has = ~np.isnan(fill)
    if not has.any():
        return frame
    out = frame.copy()
    out.loc[out.index[miss][has], "score"] = 1.0 - fill[has]
    notes.append(f"{int(has.sum())} record(s) with game 1 only: game 1's verdict counted again for game 2, mirrored, as "
                 "Arena-Hard-Auto's show_result.py reads a record with one game")
    return out


def style_controlled_scores(frame: pd.DataFrame, style: pd.DataFrame, baseline: str,
                            features: tuple[str, ...] = STYLE_FEATURES, *, tol: float = TOL,
                            max_iter: int = MAX_ITER) -> tuple[dict[tuple[str, str], float], list[str]]:
    """Arena-Hard's style-controlled score of every (judge, model) of an Arena-Hard judgment table.

    Parameters
    ----------
    frame:
        The judgment table of :func:`biasbound.data.arena_hard.load_arena_hard` (model-view scores of games 1 and 2).
    style:
        :func:`read_conv_metadata` of the judged models' and the baseline's answers.
    baseline:
        The baseline model (assistant A of game 1).
    features:
        The style columns (all four: ``--style-control``; ``("token_len",)``: length control only).
    tol, max_iter:
        The lbfgs stopping rule (default: to convergence; ``tol=1e-4, max_iter=100`` is scikit-learn's default,
        which Arena-Hard-Auto uses).

    Returns
    -------
    (dict, list)
        ``{(judge, model): score in percent}`` and notes (battles left out for want of an answer's features).
    """
    from sklearn.linear_model import LogisticRegression

    notes: list[str] = []
    out: dict[tuple[str, str], float] = {}
    feats = style.set_index(["model", "item_id"])[list(features)]
    f = _one_game_records_as_native(frame[frame["game"].isin([1, 2])], notes)
    f = f[f["score"].notna()]
    for judge, fj in f.groupby(f["judge"].astype(str), sort=True):
        model = fj["model"].astype(str).to_numpy()
        item = fj["item_id"].astype(str).to_numpy()
        score = fj["score"].to_numpy(dtype=float)
        counts = np.array([_BATTLES.get(float(s), (0, 0, 0)) for s in score], dtype=float)  # (baseline, model, tie)
        fa = feats.reindex(pd.MultiIndex.from_arrays([np.full(len(item), baseline), item])).to_numpy(dtype=float)
        fb = feats.reindex(pd.MultiIndex.from_arrays([model, item])).to_numpy(dtype=float)
        ok = ~(np.isnan(fa).any(axis=1) | np.isnan(fb).any(axis=1))
        if (~ok).any():
            notes.append(f"judge {judge}: {int((~ok).sum())} game(s) without the style features of an answer (model "
                         f"or baseline) left out of the style-controlled fit")
        keep = ok & (counts.sum(axis=1) > 0)
        model, counts, fa, fb = model[keep], counts[keep], fa[keep], fb[keep]
        n_games = int(keep.sum())
        # each battle enters twice (A wins: label 1 twice; B wins: label 0 twice; a tie: once each), so a game is
        # two rows of the design, labels 1 and 0, weighted by how many battle rows carry that label
        w1 = 2.0 * counts[:, 0] + counts[:, 2]
        w0 = 2.0 * counts[:, 1] + counts[:, 2]
        if n_games == 0 or not (w1.sum() > 0 and w0.sum() > 0):
            notes.append(f"judge {judge}: no decisive battle to fit the style-controlled Bradley-Terry model")
            continue
        names = pd.unique(np.concatenate([np.full(1, baseline), model]))
        col = {m: k for k, m in enumerate(names)}
        p, k = len(names), len(features)
        x = np.zeros((n_games, p + k))
        ln10 = math.log(10.0)
        x[:, col[baseline]] = ln10
        x[np.arange(n_games), [col[m] for m in model]] = -ln10  # B after A: a self-battle keeps -ln 10
        diff = (fa - fb) / (fa + fb + 1.0)
        rows_per_game = 2.0 * counts.sum(axis=1)  # the battle rows the native design holds for each game
        mean = np.average(diff, axis=0, weights=rows_per_game)
        sd = np.sqrt(np.average((diff - mean) ** 2, axis=0, weights=rows_per_game))
        x[:, p:] = (diff - mean) / np.where(sd > 0, sd, 1.0)
        xx = np.vstack([x, x])
        yy = np.concatenate([np.ones(n_games), np.zeros(n_games)])
        ww = np.concatenate([w1, w0])
        use = ww > 0
        lr = LogisticRegression(fit_intercept=False, tol=tol, max_iter=max_iter)
        lr.fit(xx[use], yy[use], sample_weight=ww[use])
        r = 400.0 * lr.coef_[0][:p]
        judged = set(model)
        for m in names:
            if m == baseline and m not in judged:
                continue
            out[(str(judge), str(m))] = 100.0 / (1.0 + 10.0 ** ((r[col[baseline]] - r[col[m]]) / 400.0))
    return out, notes

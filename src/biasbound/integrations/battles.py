"""Pairwise battle tables → judgment tables.

The table people have from Chatbot Arena (``clean_battle``), MT-Bench human judgments and many
in-house pairwise evaluations: one row per battle, ``question_id, model_a, model_b, winner``
and optionally ``judge`` (CSV, TSV, JSON lines, a JSON array or Parquet, optionally compressed).
``model_a`` is the answer shown first.

==========  ============================================================================
winner      ``model_a`` / ``a`` / ``A`` → model_a wins; ``model_b`` / ``b`` / ``B`` → model_b wins;
            ``tie``, ``tie (bothbad)``, ``tie_bothbad``, ``draw``, ``both_bad``, ``both good`` → tie;
            anything else (empty, ``error``) → missing, counted; never a tie
judge       ``judge`` column (a human judge id, a judge model), else the file name
model       baseline mode (one model is in every battle): the other model, item ``<question_id>``;
            otherwise each battle gives a row for each of its two models, item
            ``<question_id>/vs/<opponent>``
game        1 = the first order in which a (question, pair of models) appears in the file, 2 = the
            same pair with the positions swapped → the ``swap`` neighbour; a repeat of the same
            order (another judge's vote without a judge column) is a ``rerun``
score       the model's view: 1 win, 0 loss, 0.5 tie
==========  ============================================================================

Native numbers (the Chatbot Arena rule, both orders counted, every battle once):
``battles_win_rate`` = (wins + ties / 2) / battles per model (against the baseline in baseline
mode), and ``battles_bt_elo`` = the Bradley–Terry maximum-likelihood rating on the Elo scale
(400 · log10 odds; a tie is half a win and half a loss), anchored so the baseline is 1000 (or,
without a baseline, the mean rating is 1000); empty when the wins do not connect every model (no
finite maximum exists).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError
from biasbound._validation import arg
from biasbound.data.tables import JudgmentSet, _check_duplicates, _detect_format, _finish, _read
from biasbound.integrations._common import Native, Notes, attach

__all__ = ["BATTLE_COLUMNS", "WINNER_SPELLINGS", "battles_bt_elo", "is_battle_table", "load_battles"]

#: Columns a battle table must have (``judge`` optional; ``question_id`` may be spelled ``question`` or ``item_id``).
BATTLE_COLUMNS = ("model_a", "model_b", "winner")

#: Winner spellings (case-insensitive, surrounding spaces ignored) → ``a``, ``b`` or ``tie``.
WINNER_SPELLINGS: dict[str, str] = {
    "model_a": "a", "a": "a", "model a": "a",
    "model_b": "b", "b": "b", "model b": "b",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "tie_bothbad": "tie", "tie (both bad)": "tie",
    "bothbad": "tie", "both_bad": "tie", "both bad": "tie", "both good": "tie", "both_good": "tie", "draw": "tie",
}

_QUESTION = ("question_id", "question", "item_id", "prompt_id")

RULE = ("battle winner in the model's view: 1 if the model wins, 0 if the other wins, 0.5 for a tie (any 'tie' "
        "spelling); game 1 = the first order a (question, pair) appears in, game 2 = the swapped order; other "
        "winners -> missing")
WIN_RATE_RULE = ("battles_win_rate: (wins + ties / 2) / battles per model over every battle and both orders "
                 "(against the baseline in baseline mode)")
BT_RULE = ("battles_bt_elo: Bradley-Terry maximum likelihood over every battle (Chatbot Arena's rule: a tie is half a "
           "win and half a loss), 1000 + 400 * log10-odds rating, the baseline at 1000 (else the mean at 1000)")


def is_battle_table(columns: Sequence[str]) -> bool:
    """True when ``columns`` hold ``model_a``, ``model_b``, ``winner`` and a question id."""
    cols = {str(c) for c in columns}
    return set(BATTLE_COLUMNS) <= cols and any(q in cols for q in _QUESTION)


def battles_bt_elo(battles: Sequence[tuple[str, str, float]], baseline: str | None = None) -> dict[str, float]:
    """Bradley–Terry ratings (Elo scale) from ``(model_a, model_b, score of a)`` battles, score in {0, 0.5, 1}.

    Maximum likelihood of P(a beats b) = 1 / (1 + 10^((R_b − R_a) / 400)), a tie counting half a
    win and half a loss (scipy.optimize on the concave log-likelihood, gradient exact). The
    maximum exists only when every model beat (or tied) every other through some chain of battles
    (the win graph is strongly connected, Zermelo's condition); otherwise no rating is finite and
    every model gets NaN — reported, never a clipped or arbitrary number.
    """
    from scipy.optimize import minimize
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    models = sorted({m for a, b, _ in battles for m in (a, b)})
    idx = {m: i for i, m in enumerate(models)}
    ia = np.array([idx[a] for a, _, _ in battles], dtype=int)
    ib = np.array([idx[b] for _, b, _ in battles], dtype=int)
    s = np.array([float(x) for _, _, x in battles])
    k = len(models)
    # edge i -> j when i won (or tied) a battle against j
    src = np.r_[ia[s > 0], ib[s < 1]]
    dst = np.r_[ib[s > 0], ia[s < 1]]
    graph = csr_array((np.ones(len(src)), (src, dst)), shape=(k, k))
    n_comp, _ = connected_components(graph, directed=True, connection="strong")
    if k < 2 or n_comp > 1:
        return {m: math.nan for m in models}

    def obj(beta: np.ndarray) -> tuple[float, np.ndarray]:
        d = beta[ia] - beta[ib]  # natural-log odds of a beating b
        val = float(np.sum(np.logaddexp(0.0, -d) * s + np.logaddexp(0.0, d) * (1 - s)))
        g = s - 1.0 / (1.0 + np.exp(-d))
        grad = -(np.bincount(ia, weights=g, minlength=k) - np.bincount(ib, weights=g, minlength=k))
        m = beta.mean()  # the likelihood ignores a common shift: a penalty on the mean fixes it, no difference moves
        return val + 0.5 * m * m, grad + m / k

    res = minimize(obj, np.zeros(k), jac=True, method="L-BFGS-B", options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 0})
    beta = res.x * 400.0 / math.log(10.0)
    anchor = beta[idx[baseline]] if baseline in idx else float(np.mean(beta))
    return {m: float(beta[idx[m]] - anchor + 1000.0) for m in models}


def load_battles(path: str | Path, *, judge: str | None = None, skip_bad: bool = False) -> JudgmentSet:
    """Load a pairwise battle table (``question_id, model_a, model_b, winner[, judge]``).

    Parameters
    ----------
    path:
        A CSV, TSV, JSON-lines, JSON-array or Parquet file (optionally compressed).
    judge:
        Judge name when the table has no ``judge`` column (default: the file name without suffixes).
    skip_bad:
        Skip (and list) rows with an empty model or question instead of raising.

    Returns
    -------
    JudgmentSet
        The mapping is in the module docstring; notes and the native numbers
        (``battles_win_rate``, ``battles_bt_elo``) in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the file (and line): a missing column, an empty model or question, a battle of a
        model against itself.
    """
    p = Path(path)
    if not p.exists():
        raise DataFormatError("no such file.", path=str(p))
    raw, lines = _read(p, _detect_format(p), what="battle")
    cols = [str(c) for c in raw.columns]
    if not is_battle_table(cols):
        raise DataFormatError(f"a battle table needs columns question_id, model_a, model_b and winner; it has "
                              f"{', '.join(cols[:12])}.", path=str(p), line=1)
    qcol = next(q for q in _QUESTION if q in cols)
    name = judge if judge is not None else p.name.split(".")[0]
    notes = Notes("battles", rule=RULE)
    skipped: list[tuple[str, int | None, str]] = []
    recs = []
    src = str(p)
    for ln, q, a, b, w, j in zip(lines.tolist(), raw[qcol].tolist(), raw["model_a"].tolist(), raw["model_b"].tolist(),
                                 raw["winner"].tolist(), raw["judge"].tolist() if "judge" in cols else [None] * len(raw)):
        why = None
        texts = ["" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v).strip() for v in (q, a, b)]
        if not all(texts):
            why = "an empty question_id, model_a or model_b"
        elif texts[1] == texts[2]:
            why = f"model_a and model_b are both {texts[1]!r}"
        if why is not None:
            if not skip_bad:
                raise DataFormatError(f"{why}; fix the row or {arg('pass skip_bad=True', 'pass --skip-bad')} to skip and "
                                      "count it.", path=src, line=int(ln))
            skipped.append((src, int(ln), why))
            continue
        key = "" if w is None or (isinstance(w, float) and math.isnan(w)) else str(w).strip().lower()
        outcome = WINNER_SPELLINGS.get(key)
        if outcome is None:
            notes.count(f"winner {key or '(empty)'!r}: missing (not a win, a loss or a tie)")
        jname = name if j is None or (isinstance(j, float) and math.isnan(j)) or not str(j).strip() else str(j).strip()
        recs.append((jname, texts[0], texts[1], texts[2], outcome, int(ln)))
    if not recs:
        raise DataFormatError("holds no battle row that could be read.", path=src)
    rows = []
    native_wr = Native("battles_win_rate", WIN_RATE_RULE)
    native_bt = Native("battles_bt_elo", BT_RULE)
    for jname in sorted({r[0] for r in recs}):
        mine = [r for r in recs if r[0] == jname]
        sets = [{r[2], r[3]} for r in mine]
        common = set.intersection(*sets)
        baseline = next(iter(common)) if len(common) == 1 and len({m for s_ in sets for m in s_}) > 2 else None
        if baseline is not None:
            notes.baselines.append(baseline)
            notes.remark(f"judge {jname}: {baseline!r} is in every battle, read as the baseline (items are questions)")
        first: dict[tuple[str, frozenset[str]], str] = {}
        decided: list[tuple[str, str, float]] = []
        for _, q, a, b, outcome, ln in mine:
            pair = (q, frozenset((a, b)))
            game = 1 if first.setdefault(pair, a) == a else 2
            s_a = {"a": 1.0, "b": 0.0, "tie": 0.5}.get(outcome or "", math.nan)
            if not math.isnan(s_a):
                decided.append((a, b, s_a))
            for model, opp, sc in ((a, b, s_a), (b, a, 1.0 - s_a)):
                if baseline is not None and model == baseline:
                    continue
                item = q if baseline is not None else f"{q}/vs/{opp}"
                rows.append({"judge": jname, "model": model, "item_id": item, "game": game, "score": sc,
                             "verdict": f"winner: {outcome or 'missing'} ({a} first)", "source": src, "line": ln})
        tally: dict[str, list[float]] = {}
        for a, b, s_a in decided:
            for m, x in ((a, s_a), (b, 1.0 - s_a)):
                t = tally.setdefault(m, [0.0, 0])
                t[0] += x
                t[1] += 1
        for m, (w, n) in tally.items():
            if m != baseline:
                native_wr.values[(jname, m)] = w / n
        if decided:
            ratings = battles_bt_elo(decided, baseline)
            if any(math.isnan(v) for v in ratings.values()):
                notes.remark(f"judge {jname}: no finite Bradley-Terry rating (some model was never beaten or tied by the "
                             "others through any chain of battles), so battles_bt_elo is empty")
            for m, v in ratings.items():
                if m != baseline or baseline is None:
                    native_bt.values[(jname, m)] = v
    notes.native += [native_wr, native_bt]
    frame = pd.DataFrame(rows)
    frame["variant"] = "original"
    frame["rerun"] = frame.groupby(["judge", "model", "item_id", "game"]).cumcount()
    n_rep = int((frame["rerun"] > 0).sum())
    if n_rep:
        notes.remark(f"{n_rep} repeated battle row(s) of the same question, pair and order read as reruns (in file order)")
    if not (frame["game"] == 2).any():
        notes.remark("no battle appears in both orders, so there is no swap neighbour")
    frame = _check_duplicates(frame, skip_bad, skipped)
    js = _finish(frame, skipped=skipped, scale=(0.0, 1.0), scale_inferred=False, sources=[src])
    return attach(js, notes)

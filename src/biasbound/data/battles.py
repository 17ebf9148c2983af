"""Pairwise battle tables → judgment tables.

The table people have from Chatbot Arena (``clean_battle``), MT-Bench human judgments and many
in-house pairwise evaluations: one row per battle, ``question_id, model_a, model_b, winner`` and
optionally ``judge`` and ``turn`` (CSV, TSV, JSON lines, a JSON array or Parquet, optionally
compressed). ``model_a`` is the answer shown first. Other column names are mapped with
``columns`` (``--columns winner=preferred,question_id=prompt``).

==========  ============================================================================
winner      a position (``model_a`` / ``model_b``, ``a`` / ``b``, any case), a tie (``tie``,
            ``tie (bothbad)``, ``tie_bothbad``, ``draw``, ``both_bad``, ``both good``), or the
            winning model's name (matched to ``model_a`` / ``model_b`` case-insensitively); numbers
            only with a stated ``winner_map`` (``--winner-map 0=model_a,1=model_b,2=tie``); a model
            name that is neither side of its battle is refused (counted as missing with skip_bad);
            anything else (empty, ``error``) → missing, counted; never a tie
judge       ``judge`` column (a human judge id, a judge model), else the file name (said in a note)
turn        a ``turn`` column (or the column mapped as ``group``) is part of the item: turn 2 of a
            question is another item, never a rerun of turn 1
model       baseline mode (one model is in every battle): the other model, item ``<question_id>``;
            otherwise each battle gives a row for each of its two models, item
            ``<question_id>/vs/<opponent>`` (``<question_id>/turn=<t>…`` with a turn column)
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

The reader is vectorised (pandas/numpy over whole columns): 200,000 battles read in about a second.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError
from biasbound._validation import arg
from biasbound.data.tables import JudgmentSet, file_format, finish_table, read_rows
from biasbound.data._common import Native, Notes, attach

__all__ = ["BATTLE_COLUMNS", "BATTLE_NAMES", "WINNER_SPELLINGS", "battles_bt_elo", "is_battle_table", "load_battles",
           "looks_like_battles", "parse_winner_map"]

#: Columns a battle table must have (``judge`` optional; ``question_id`` may be spelled ``question`` or ``item_id``).
BATTLE_COLUMNS = ("model_a", "model_b", "winner")

#: Names ``columns`` (``--columns NAME=COLUMN``) maps onto a battle table's own columns.
BATTLE_NAMES = ("question_id", "model_a", "model_b", "winner", "judge", "group")

#: Winner spellings (case-insensitive, surrounding spaces ignored) → ``a``, ``b`` or ``tie``.
WINNER_SPELLINGS: dict[str, str] = {
    "model_a": "a", "a": "a", "model a": "a",
    "model_b": "b", "b": "b", "model b": "b",
    "tie": "tie", "tie (bothbad)": "tie", "tie(bothbad)": "tie", "tie_bothbad": "tie", "tie (both bad)": "tie",
    "bothbad": "tie", "both_bad": "tie", "both bad": "tie", "both good": "tie", "both_good": "tie", "draw": "tie",
}

#: What a ``winner_map`` value may say (``missing``: not a win, a loss or a tie).
_MAP_OUTCOMES = {"model_a": "a", "a": "a", "model_b": "b", "b": "b", "tie": "tie", "missing": ""}

_QUESTION = ("question_id", "question", "item_id", "prompt_id")
_GROUP_DEFAULT = "turn"
_LAYOUT = ("a battle table has one row per battle with columns question_id (or question, item_id, prompt_id), model_a, "
           "model_b and winner (model_a / model_b / tie, a letter, or the winning model's name), optionally judge and "
           "turn")

RULE = ("battle winner in the model's view: 1 if the model wins, 0 if the other wins, 0.5 for a tie (any 'tie' "
        "spelling); the winner may be a position, a letter or the winning model's name (case-insensitive); game 1 = "
        "the first order a (question, pair) appears in, game 2 = the swapped order; other winners -> missing")
WIN_RATE_RULE = ("battles_win_rate: (wins + ties / 2) / battles per model over every battle and both orders "
                 "(against the baseline in baseline mode)")
BT_RULE = ("battles_bt_elo: Bradley-Terry maximum likelihood over every battle (Chatbot Arena's rule: a tie is half a "
           "win and half a loss), 1000 + 400 * log10-odds rating, the baseline at 1000 (else the mean at 1000)")


def is_battle_table(columns: Sequence[str]) -> bool:
    """True when ``columns`` hold ``model_a``, ``model_b``, ``winner`` and a question id."""
    cols = {str(c) for c in columns}
    return set(BATTLE_COLUMNS) <= cols and any(q in cols for q in _QUESTION)


def looks_like_battles(columns: Sequence[str], mapping: dict[str, str] | None = None) -> bool:
    """True when ``columns`` (after ``mapping``, battle name → file column) are a battle table's, or
    hold the two sides ``model_a`` and ``model_b``: such a table is read, or refused, as a battle table
    (naming the layout and the flag that maps it), never as a long table missing ``item_id``."""
    cols = {str(c) for c in columns}
    for name, col in (mapping or {}).items():
        if col in cols:
            cols.add(name)
    return is_battle_table(list(cols)) or {"model_a", "model_b"} <= cols


def parse_winner_map(text: str | None, where: str = "certify") -> dict[str, str] | None:
    """``"0=model_a,1=model_b,2=tie"`` → ``{"0": "a", "1": "b", "2": "tie"}`` (keys compared case-insensitively;
    ``missing`` maps a value to missing)."""
    if text is None or not text.strip():
        return None
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip().lower(), value.strip().lower()
        if not sep or not key or value not in _MAP_OUTCOMES or key in out:
            raise InputError(f"The '--winner-map' option of {where} must be VALUE=OUTCOME pairs with OUTCOME among "
                                  f"model_a, model_b, tie and missing, each VALUE once, separated by commas, e.g. "
                                  f"0=model_a,1=model_b,2=tie. Got {part.strip()!r} instead.")
        out[key] = _MAP_OUTCOMES[value]
    return out


def _texts(col: pd.Series) -> pd.Series:
    """Ids as stripped text, a missing value as '' (converted once per distinct value)."""
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    texts = np.array([str(u).strip() for u in uniques] + [""], dtype=object)
    return pd.Series(texts[codes], index=col.index, dtype=object)  # code -1 (missing) takes the last: ''


def battles_bt_elo(battles: Sequence[tuple[str, str, float]], baseline: str | None = None) -> dict[str, float]:
    """Bradley–Terry ratings (Elo scale) from ``(model_a, model_b, score of a)`` battles, score in {0, 0.5, 1}.

    Maximum likelihood of P(a beats b) = 1 / (1 + 10^((R_b − R_a) / 400)), a tie counting half a
    win and half a loss (scipy.optimize on the concave log-likelihood, gradient exact). The
    maximum exists only when every model beat (or tied) every other through some chain of battles
    (the win graph is strongly connected, Zermelo's condition); otherwise no rating is finite and
    every model gets NaN — reported, never a clipped or arbitrary number.
    """
    models = sorted({str(m) for x in battles for m in (x[0], x[1])})
    idx = {m: i for i, m in enumerate(models)}
    ia = np.array([idx[str(x[0])] for x in battles], dtype=np.int64)
    ib = np.array([idx[str(x[1])] for x in battles], dtype=np.int64)
    elo = _bt_elo_codes(ia, ib, np.array([float(x[2]) for x in battles]), len(models))
    if elo is None:
        return {m: math.nan for m in models}
    anchor = elo[idx[baseline]] if baseline in idx else float(np.mean(elo))
    return {m: float(elo[i] - anchor + 1000.0) for i, m in enumerate(models)}


def _bt_elo_codes(ia: np.ndarray, ib: np.ndarray, s: np.ndarray, k: int) -> np.ndarray | None:
    """Elo-scale ratings of models ``0..k-1`` (mean 0) from integer codes ``ia``, ``ib`` and the score of
    ``ia``; None when no finite maximum exists."""
    from scipy.optimize import minimize
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    # edge i -> j when i won (or tied) a battle against j
    src = np.r_[ia[s > 0], ib[s < 1]]
    dst = np.r_[ib[s > 0], ia[s < 1]]
    graph = csr_array((np.ones(len(src)), (src, dst)), shape=(k, k))
    n_comp, _ = connected_components(graph, directed=True, connection="strong")
    if k < 2 or n_comp > 1:
        return None

    def obj(beta: np.ndarray) -> tuple[float, np.ndarray]:
        d = beta[ia] - beta[ib]  # natural-log odds of a beating b
        val = float(np.sum(np.logaddexp(0.0, -d) * s + np.logaddexp(0.0, d) * (1 - s)))
        g = s - 1.0 / (1.0 + np.exp(-d))
        grad = -(np.bincount(ia, weights=g, minlength=k) - np.bincount(ib, weights=g, minlength=k))
        m = beta.mean()  # the likelihood ignores a common shift: a penalty on the mean fixes it, no difference moves
        return val + 0.5 * m * m, grad + m / k

    res = minimize(obj, np.zeros(k), jac=True, method="L-BFGS-B", options={"maxiter": 10_000, "gtol": 1e-10, "ftol": 0})
    return np.asarray(res.x * 400.0 / math.log(10.0))


def _winners(raw: pd.DataFrame, a: pd.Series, b: pd.Series, lines: np.ndarray, winner_map: dict[str, str] | None,
             skip_bad: bool, src: str, notes: Notes) -> np.ndarray:
    """Each battle's outcome ``a``, ``b``, ``tie`` or ``''`` (missing; counted in ``notes``)."""
    key = _texts(raw["winner"]).str.lower()
    if bool((key == "").all()):
        raise DataFormatError("the winner column is empty on every row, so no battle has an outcome; fill it (model_a, "
                              "model_b, tie or the winning model's name) or map another column with --columns "
                              "winner=COLUMN.", path=src, line=1)
    if winner_map is not None:
        outcome = key.map(winner_map)
        unmapped = outcome.isna() & (key != "")
        for k, n in key[unmapped].value_counts().items():
            notes.count(f"winner {k!r}: missing (not in --winner-map)", int(n))
        notes.count("winner '(empty)': missing (not a win, a loss or a tie)", int((key == "").sum()))
        stated = ", ".join(f"{k}={v or 'missing'}" for k, v in winner_map.items())
        notes.remark(f"winner read through the stated map {stated}")
        return outcome.fillna("").to_numpy(dtype=object)
    outcome = key.map(WINNER_SPELLINGS)
    la, lb = a.str.lower(), b.str.lower()
    by_name_a = outcome.isna() & (key == la)
    by_name_b = outcome.isna() & (key == lb) & ~by_name_a
    outcome[by_name_a] = "a"
    outcome[by_name_b] = "b"
    n_named = int(by_name_a.sum() + by_name_b.sum())
    if n_named:
        notes.remark(f"winner read as the winning model's name on {n_named} battle(s) (matched to model_a or model_b "
                     "case-insensitively)")
    left = outcome.isna() & (key != "")
    numeric = left & key.str.fullmatch(r"[-+]?\d+(\.\d*)?")
    if bool(numeric.any()):
        i = int(np.flatnonzero(numeric.to_numpy())[0])
        seen = ", ".join(sorted(set(key[numeric].tolist()))[:5])
        raise DataFormatError(f"the winner column holds numbers ({seen}), and a battle table does not say which side a "
                              "number means; state it with --winner-map, e.g. --winner-map 0=model_a,1=model_b,2=tie "
                              "(each VALUE=model_a, model_b, tie or missing).", path=src, line=int(lines[i]))
    names = set(la.tolist()) | set(lb.tolist())
    foreign = left & key.isin(names)
    if bool(foreign.any()):
        i = int(np.flatnonzero(foreign.to_numpy())[0])
        if not skip_bad:
            raise DataFormatError(f"winner {raw['winner'].iloc[i]!s} is neither side of this battle (model_a "
                                  f"{a.iloc[i]}, model_b {b.iloc[i]}); fix the row or pass --skip-bad to count it as "
                                  "missing.", path=src, line=int(lines[i]))
        notes.count("winner names a model that is neither side of its battle: missing", int(foreign.sum()))
        left = left & ~foreign
    for k, n in key[left | (key == "")].replace("", "(empty)").value_counts().items():
        notes.count(f"winner {k!r}: missing (not a win, a loss or a tie)" if k != "(empty)"
                    else "winner '(empty)': missing (not a win, a loss or a tie)", int(n))
    return outcome.fillna("").to_numpy(dtype=object)


def load_battles(path: str | Path, *, judge: str | None = None, skip_bad: bool = False,
                 columns: dict[str, str] | None = None, winner_map: dict[str, str] | None = None) -> JudgmentSet:
    """Load a pairwise battle table (``question_id, model_a, model_b, winner[, judge][, turn]``).

    Parameters
    ----------
    path:
        A CSV, TSV, JSON-lines, JSON-array or Parquet file (optionally compressed).
    judge:
        Judge name when the table has no ``judge`` column (default: the file name without suffixes).
    skip_bad:
        Skip (and list) rows with an empty model or question instead of raising; count a winner
        naming neither side as missing.
    columns:
        Battle name (``question_id``, ``model_a``, ``model_b``, ``winner``, ``judge``, ``group``) →
        the file's column; ``group`` is a grouping column kept as part of the item (default ``turn``).
    winner_map:
        Winner value (lower case) → ``a``, ``b``, ``tie`` or ``""`` (missing), for numeric or coded
        winners (:func:`parse_winner_map`); replaces the spelling rule.

    Returns
    -------
    JudgmentSet
        The mapping is in the module docstring; notes and the native numbers
        (``battles_win_rate``, ``battles_bt_elo``) in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the file (and line): a missing column (with the layout expected and the flag that
        maps it), an empty model or question, a battle of a model against itself, numbers as winners
        with no stated map, a winner naming neither side.
    """
    p = Path(path)
    if not p.exists():
        raise DataFormatError("no such file.", path=str(p))
    raw, lines, group_col, qcol = _read_battle_rows(p, columns)
    src = str(p)
    notes = Notes("battles", rule=RULE)
    q, a, b = _texts(raw[qcol]), _texts(raw["model_a"]), _texts(raw["model_b"])
    raw, lines, q, a, b, skipped = _drop_bad_rows(raw, lines, q, a, b, skip_bad, src)
    if raw.empty:
        raise DataFormatError("holds no battle row that could be read.", path=src)
    name = judge if judge is not None else p.name.split(".")[0]
    jcol = _texts(raw["judge"]) if "judge" in raw.columns else pd.Series("", index=raw.index)
    if bool((jcol == "").any()):
        notes.remark(f"{'some rows have' if 'judge' in raw.columns else 'the table has'} no judge: their judge is named "
                     f"after the file ({name!r}); add a judge column to name it")
    jname = jcol.where(jcol != "", name)
    base = q
    if group_col is not None:
        g = _texts(raw[group_col])
        base = q.where(g == "", q + f"/{group_col}=" + g)
        notes.remark(f"column {group_col!r} is part of the item (each {group_col} its own item, never a rerun)")
    outcome = _winners(raw, a, b, lines, winner_map, skip_bad, src, notes)
    s_a = pd.Series(outcome).map({"a": 1.0, "b": 0.0, "tie": 0.5}).to_numpy(dtype=float)
    # everything below runs on integer codes; texts are built once per distinct value
    n = len(raw)
    mcodes, models = pd.factorize(np.concatenate([a.to_numpy(dtype=object), b.to_numpy(dtype=object)]), sort=True)
    models = np.asarray(models, dtype=object)
    k = len(models)
    ca, cb = mcodes[:n].astype(np.int64), mcodes[n:].astype(np.int64)
    folded: dict[str, list[str]] = {}
    for m in models.tolist():
        folded.setdefault(str(m).casefold(), []).append(str(m))
    for same in (v for v in folded.values() if len(v) > 1):  # 'BASE' and 'base': said, never merged by a guess
        notes.remark(f"model names {', '.join(map(repr, same))} differ only in case and are read as {len(same)} models "
                     "(their battles are not each other's swaps); write them one way if they are one model")
    jc, judges = pd.factorize(jname.to_numpy(dtype=object))
    judges = np.asarray(judges, dtype=object)
    bc, bases = pd.factorize(base.to_numpy(dtype=object))
    bases = np.asarray(bases, dtype=object)
    keys = pd.DataFrame({"j": jc, "q": bc, "lo": np.minimum(ca, cb), "hi": np.maximum(ca, cb), "a": ca})
    first_a = keys.groupby(["j", "q", "lo", "hi"], sort=False)["a"].transform("first").to_numpy()
    game = np.where(ca == first_a, 1, 2)
    base_code = _baselines(judges, models, jc, ca, cb, notes)
    bl = base_code[jc]
    in_base = bl >= 0
    out_code = pd.Series(outcome).map({"a": 0, "b": 1, "tie": 2}).fillna(3).to_numpy(dtype=np.int64)
    vcodes, vkeys = pd.factorize(out_code * k + ca)
    words = np.array(["a", "b", "tie", "missing"], dtype=object)
    vtexts = np.array([f"winner: {words[v // k]} ({models[v % k]} first)" for v in np.asarray(vkeys)], dtype=object)
    order = np.arange(n, dtype=np.int64)
    parts: dict[str, list[np.ndarray]] = {c: [] for c in ("j", "m", "item", "game", "score", "v", "line", "order")}
    for side, (model, opp, sc) in enumerate(((ca, cb, s_a), (cb, ca, 1.0 - s_a))):
        keep = ~(in_base & (model == bl))
        item = bc * (k + 1) + np.where(in_base, 0, opp + 1)
        for c, v in (("j", jc), ("m", model), ("item", item), ("game", game), ("score", sc), ("v", vcodes),
                     ("line", lines), ("order", order * 2 + side)):
            parts[c].append(np.asarray(v)[keep])
    got = {c: np.concatenate(v) for c, v in parts.items()}
    nj = len(judges)
    jrank = np.empty(nj, dtype=np.int64)
    jrank[np.argsort(judges.astype(str), kind="stable")] = np.arange(nj)
    sort = np.lexsort((got["order"], jrank[got["j"]]))  # by judge name, then file order (each battle's a, then b)
    got = {c: v[sort] for c, v in got.items()}
    icodes, ikeys = pd.factorize(got["item"])
    ikeys = np.asarray(ikeys, dtype=np.int64)
    opp_of = ikeys % (k + 1) - 1
    itexts = np.where(opp_of >= 0, bases[ikeys // (k + 1)] + "/vs/" + models[np.maximum(opp_of, 0)],
                      bases[ikeys // (k + 1)])
    frame = pd.DataFrame({"judge": judges[got["j"]], "model": models[got["m"]], "item_id": itexts[icodes],
                          "game": got["game"], "score": got["score"], "verdict": vtexts[got["v"]], "source": src,
                          "line": got["line"]})
    notes.native += _native_numbers(judges, models, jc, ca, cb, s_a, base_code, notes)
    frame["variant"] = "original"
    frame["rerun"] = pd.DataFrame({"j": got["j"], "m": got["m"], "i": icodes, "g": got["game"]}).groupby(
        ["j", "m", "i", "g"], sort=False).cumcount().to_numpy()
    n_rep = int((frame["rerun"] > 0).sum())
    if n_rep:
        notes.remark(f"{n_rep} repeated battle row(s) of the same question, pair and order read as reruns (in file order)")
    if not (frame["game"] == 2).any():
        notes.remark("no battle appears in both orders, so there is no swap neighbour")
    # no duplicate key can arise: rerun numbers the repeats of (judge, model, item, game)
    js = finish_table(frame, skipped=skipped, scale=(0.0, 1.0), scale_inferred=False, sources=[src])
    return attach(js, notes)


def _read_battle_rows(p: Path, columns: dict[str, str] | None) -> tuple[pd.DataFrame, np.ndarray, str | None, str]:
    """The table's rows with the battle names (``--columns`` applied), their lines, the grouping column (or None)
    and the question column; a table without a battle layout is one sentence naming what it lacks."""
    raw, lines = read_rows(p, file_format(p), what="battle")
    src = str(p)
    mapping = dict(columns or {})
    for name, col in mapping.items():
        if name not in BATTLE_NAMES:
            raise InputError(f"The '--columns' option maps {name!r}, which a battle table does not have; a battle "
                                  f"table's names are {', '.join(BATTLE_NAMES)}.")
        if col not in raw.columns:
            raise DataFormatError(f"--columns maps {name}={col}, but the file has no column {col!r}; it has "
                                  f"{', '.join(str(c) for c in raw.columns[:12])}.", path=src, line=1)
    group_col = mapping.pop("group", None)
    raw = raw.rename(columns={col: name for name, col in mapping.items()})
    cols = [str(c) for c in raw.columns]
    if not is_battle_table(cols):
        lacking = [c for c in ("question_id", *BATTLE_COLUMNS) if c not in cols
                   and not (c == "question_id" and any(q in cols for q in _QUESTION))]
        raise DataFormatError(f"{_LAYOUT}; this one has no {' and no '.join(lacking)} (its columns: "
                              f"{', '.join(cols[:12])}); name yours with --columns, e.g. --columns "
                              f"{','.join(f'{c}=COLUMN' for c in lacking)}.", path=src, line=1)
    qcol = next(q for q in _QUESTION if q in cols)
    group_col = group_col or (_GROUP_DEFAULT if _GROUP_DEFAULT in cols else None)
    return raw, lines, group_col, qcol


def _drop_bad_rows(raw: pd.DataFrame, lines: np.ndarray, q: pd.Series, a: pd.Series, b: pd.Series, skip_bad: bool,
                   src: str) -> tuple[pd.DataFrame, np.ndarray, pd.Series, pd.Series, pd.Series,
                                  list[tuple[str, int | None, str]]]:
    """Rows with an empty question or model, or a model against itself: one sentence, or skipped and listed."""
    empty = (q == "") | (a == "") | (b == "")
    same = ~empty & (a == b)
    bad = (empty | same).to_numpy()
    skipped: list[tuple[str, int | None, str]] = []
    if bad.any():
        whys = np.where(empty.to_numpy(), "an empty question_id, model_a or model_b",
                        "model_a and model_b are both " + a.map(repr).to_numpy(dtype=object))
        if not skip_bad:
            i = int(np.flatnonzero(bad)[0])
            raise DataFormatError(f"{whys[i]}; fix the row or {arg('pass skip_bad=True', 'pass --skip-bad')} to skip and "
                                  "count it.", path=src, line=int(lines[i]))
        skipped += [(src, int(ln), str(w)) for ln, w in zip(lines[bad].tolist(), whys[bad].tolist())]
        keep = ~bad
        raw, lines, q, a, b = (raw[keep].reset_index(drop=True), lines[keep], q[keep].reset_index(drop=True),
                               a[keep].reset_index(drop=True), b[keep].reset_index(drop=True))
    return raw, lines, q, a, b, skipped


def _baselines(judges: np.ndarray, models: np.ndarray, jc: np.ndarray, ca: np.ndarray, cb: np.ndarray,
               notes: Notes) -> np.ndarray:
    """Per judge code, the code of its baseline model (-1 for none)."""
    k = len(models)
    # baseline per judge: the one model in every battle of the judge (with more than two models)
    nj = len(judges)
    n_battles = np.bincount(jc, minlength=nj)
    counts = (np.bincount(jc * k + ca, minlength=nj * k) + np.bincount(jc * k + cb, minlength=nj * k)).reshape(nj, k)
    base_code = np.full(nj, -1, dtype=np.int64)
    for j in np.argsort(judges.astype(str), kind="stable"):
        common = np.flatnonzero(counts[j] == n_battles[j])
        if len(common) == 1 and int((counts[j] > 0).sum()) > 2:
            base_code[j] = common[0]
            notes.baselines.append(str(models[common[0]]))
            notes.remark(f"judge {judges[j]}: {models[common[0]]!r} is in every battle, read as the baseline (items are "
                         "questions)")
    return base_code


def _native_numbers(judges: np.ndarray, models: np.ndarray, jc: np.ndarray, ca: np.ndarray, cb: np.ndarray,
                    s_a: np.ndarray, base_code: np.ndarray, notes: Notes) -> list[Native]:
    """The table's own numbers per (judge, model): win rate and Bradley-Terry Elo (the baseline's left out)."""
    k, nj = len(models), len(judges)
    native_wr = Native("battles_win_rate", WIN_RATE_RULE)
    native_bt = Native("battles_bt_elo", BT_RULE)
    dec = ~np.isnan(s_a)
    cell = np.r_[jc[dec] * k + ca[dec], jc[dec] * k + cb[dec]]
    won = np.bincount(cell, weights=np.r_[s_a[dec], 1.0 - s_a[dec]], minlength=nj * k)
    played = np.bincount(cell, minlength=nj * k)
    for at_cell in np.flatnonzero(played):
        j, m = divmod(int(at_cell), k)
        if m != base_code[j]:
            native_wr.values[(str(judges[j]), str(models[m]))] = float(won[at_cell] / played[at_cell])
    for j in np.argsort(judges.astype(str), kind="stable"):
        mine = dec & (jc == j)
        if not mine.any():
            continue
        used, local = np.unique(np.r_[ca[mine], cb[mine]], return_inverse=True)
        elo = _bt_elo_codes(local[: int(mine.sum())], local[int(mine.sum()):], s_a[mine], len(used))
        if elo is None:
            notes.remark(f"judge {judges[j]}: no finite Bradley-Terry rating (some model was never beaten or tied by the "
                         "others through any chain of battles), so battles_bt_elo is empty")
            ratings = np.full(len(used), math.nan)
        else:
            at = np.flatnonzero(used == base_code[j])
            ratings = elo - (elo[at[0]] if len(at) else float(np.mean(elo))) + 1000.0
        for m, v in zip(used.tolist(), ratings.tolist()):
            if m != base_code[j]:
                native_bt.values[(str(judges[j]), str(models[m]))] = float(v)
    return [native_wr, native_bt]

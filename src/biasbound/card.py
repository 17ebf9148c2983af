"""The judge card: the plain figures people look for, per judge and per neighbour generator, and the rank
statements that survive the bias. Computed once here from the judgment table and the certification; the
terminal, ``report.html``, ``summary.json`` (``judge_card``) and ``biasbound compare`` only render or read it.

Per judge and generator (every neighbour the data hold: ``swap``, ``variant:NAME``, ``rerun``), over the
(model, item) pairs whose original and neighbour verdicts are both present (a missing side is counted and
shown, never a tie):

* ``flip_rate`` — share of pairs whose verdict changes (any change of score level; for continuous scores,
  more than 12 distinct values, a change of the side of 0.5), Clopper–Pearson 95% interval and ``n``
  (:func:`scipy.stats.binomtest`; the pairs are treated as independent draws);
* ``strict_reversal`` — pairwise data (or continuous scores): share whose direction changes (one side above
  the tie 0.5, the other below); a move to or from a tie is a flip but not a reversal;
* ``mean_shift`` — mean of (neighbour − original) in the model's view, t interval
  (:func:`scipy.stats.ttest_1samp`): e.g. ``variant:verbose`` +0.08 = verbose answers gain 0.08;
* ``delta_star`` — Δ* over every observed neighbour, max over the judge's models (the figure
  ``certify`` prints before certifying: :func:`observed_sensitivity`).

Per judge: ``position_preference`` — among decisive verdicts of both presentation orders, the share preferring
the answer shown first (a position-consistent judge: 0.5 whatever its accuracy; always-first: 1). It needs
verdicts that say which position won: Arena-Hard letters (``A>B`` = the first shown), LLMBar's labels
(``1``/``2``: output 1 is shown first in game 1, second in game 2) or FastChat's ``model_1``/``model_2``;
otherwise it is reported as unknown.
Also the bias radius and its curve over δ and the α the score range alone allows beside the data's (read
from the certificate), the judging cost (from the runner's usage record, else "unknown"), and the
neighbour relation with its one-line reading.

Rank statements (:func:`rank_statements`): for every model pair, whether its order survives (a) each
generator's all-items neighbour (every item perturbed at once, exact from the data), (b) question resampling
(disjoint 95% item-bootstrap intervals of the leaderboard, as Arena-Hard's separability) and (c) the certified
release's noise (order kept with probability >= 0.95); the bias-robust separability is the share separated
under all three, the plain one under (b) alone; a 95% rank interval per model from the same item bootstrap.
Their size does not grow with the square of the models: the reversed and tied pairs are counted in full and
listed up to :data:`PAIR_LIST_CAP` per generator (the pairs with the largest original margins, in leaderboard
order, ``"... N more"`` stated), the order matrix covers the :data:`MATRIX_MODELS` best models (the counts of
every pair beside it); ``rank_statements(max_pairs=None, matrix_models=None)`` gives everything.

:func:`check_card` evaluates ``--fail-if`` style thresholds (``flip_rate>0.1``) and :func:`moved_figures`
the figures of two cards whose intervals are disjoint: one route for ``biasbound compare`` and
:func:`biasbound.testing.assert_judge_card`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd
from scipy import special, stats

from biasbound._exceptions import InputError
from biasbound.card_fold import DISCRETE_LEVELS, CardFold, cap_scores, fold_pairs, merge_folds
from biasbound.parameters import validate_params

__all__ = [
    "DISCRETE_LEVELS",
    "FIGURES",
    "PANEL_COLUMNS",
    "CardFold",
    "card_figure",
    "card_fold",
    "card_rows",
    "check_card",
    "data_generators",
    "first_shown_choice",
    "judge_card",
    "merge_folds",
    "moved_figures",
    "observed_sensitivity",
    "panel_rows",
    "parse_threshold",
    "rank_statements",
    "read_card",
]

LEVEL = 0.95  # every interval of the card
#: Pairs listed per generator in ``reversed_by`` / ``tied_by`` (the rest counted: ``reversed_count`` / ``tied_count``).
PAIR_LIST_CAP = 100
#: Models (best first) whose pairs the order ``matrix`` holds (every pair is counted in ``pair_counts``).
MATRIX_MODELS = 200

#: Verdict strings that name the winning position (Arena-Hard letters; brackets stripped first).
_FIRST = frozenset({"A>>B", "A>B", "B<<A", "B<A"})
_SECOND = frozenset({"B>>A", "B>A", "A<<B", "A<B"})
_TIE = frozenset({"A=B", "B=A"})

#: The neighbour relation, read in one line.
READINGS = {
    "hamming-1": "one item's verdict: a figure below is the chance that one judged item changes",
    "all-items": "the whole leaderboard's bias: every item perturbed at once (for swaps, the position bias "
                 "of the leaderboard); the flip rates below still count judged items one by one",
}


# ----------------------------------------------------------------------------------------------------
# small statistics
# ----------------------------------------------------------------------------------------------------
def _prop(k: int, n: int, level: float = LEVEL) -> dict[str, Any]:
    """Share k/n with its Clopper–Pearson interval (``None`` values when n = 0)."""
    if n <= 0:
        return {"value": None, "lo": None, "hi": None, "k": 0, "n": 0}
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return {"value": k / n, "lo": float(ci.low), "hi": float(ci.high), "k": int(k), "n": int(n)}


def _mean_ci(x: np.ndarray, level: float = LEVEL) -> dict[str, Any]:
    """Mean with its t interval (degenerate when every value is equal)."""
    x = np.asarray(x, dtype=float)
    n = int(x.size)
    if n == 0:
        return {"value": None, "lo": None, "hi": None, "n": 0}
    m = float(np.mean(x))
    if n < 2 or float(np.std(x)) == 0.0:
        return {"value": m, "lo": m, "hi": m, "n": n}
    ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence_level=level)
    return {"value": m, "lo": float(ci.low), "hi": float(ci.high), "n": n}


# ----------------------------------------------------------------------------------------------------
# neighbours the data hold
# ----------------------------------------------------------------------------------------------------
def data_generators(frame: pd.DataFrame) -> tuple[str, ...]:
    """The neighbours a judgment table holds: ``swap`` (game-2 rows), ``variant:NAME``, ``rerun``."""
    out: list[str] = []
    if "game" in frame.columns and (frame["game"] == 2).any():
        out.append("swap")
    if "variant" in frame.columns:
        # str of the distinct values (a handful), not of every row: the same set of texts
        texts = pd.Series(pd.unique(frame["variant"]), dtype=frame["variant"].dtype).astype(str).unique()
        out.extend(f"variant:{v}" for v in sorted(set(texts)) if v != "original")
    if "rerun" in frame.columns and (frame["rerun"] > 0).any():
        out.append("rerun")
    return tuple(out)


def neighbor_pairs(frame: pd.DataFrame, generator: str) -> pd.DataFrame:
    from biasbound.neighbors.observed import observed_neighbors

    return observed_neighbors(frame, generator, skip_bad=True)


@dataclass(frozen=True)
class _PairRows:
    """One generator's observed neighbour pairs of one judge (:func:`neighbor_pairs`' rows, in its order) as arrays.

    ``m``: the pair's model code (into :class:`_JudgeRows` ``model_names``; -1 where the model id is missing, which
    only the merge path holds: left out of every per-model table, as a pandas group drops a missing key)."""

    m: np.ndarray
    original: np.ndarray
    neighbor: np.ndarray
    rerun: np.ndarray
    missing: int

    def __len__(self) -> int:
        return int(self.m.size)

    def delta_star(self) -> float | None:
        """:func:`_delta_star` of these pairs (a missing model id: no group)."""
        return _delta_star(np.where(self.m >= 0, self.m, np.nan), self.original - self.neighbor)


@dataclass(frozen=True)
class _JudgeRows:
    """One judge's table read once for the card: model and item codes, the original rows and the neighbour pairs.

    Every per-model and per-item table of the card is formed on these integer codes (one hashing of each id column
    per judge) rather than by grouping, selecting or taking the string columns of a million rows again."""

    fj: pd.DataFrame
    m: np.ndarray  # per row: code into model_names (the sorted texts, str of each value); -1 = a missing id
    model_names: np.ndarray
    i: np.ndarray  # the same for the items
    item_names: np.ndarray
    canon: np.ndarray  # positions of the original judgments (variant original, rerun 0, game 0 or 1)
    score: np.ndarray
    pairs: dict[str, _PairRows]
    #: the judge's rerun >= 1 rows that are not in ``fj``, folded (:mod:`biasbound.card_fold`; ``fj`` is then the
    #: table's rerun-0 rows); None: ``fj`` holds every row of the judge
    outside: CardFold | None = None

    def generators(self) -> list[str]:
        """The neighbours of the judge's whole table, in :func:`data_generators`' order (``rerun`` last)."""
        extra = ["rerun"] if self.outside is not None and self.outside.rows and "rerun" not in self.pairs else []
        return list(self.pairs) + extra

    @functools.cached_property
    def rerun_fold(self) -> CardFold:
        """The judge's rerun pairs as one :class:`CardFold` (its own pairs and the outside fold's): every rerun
        figure of the card is read from it, on a whole table as on folded blocks."""
        own = _fold_of(self.pairs["rerun"], self.model_names) if "rerun" in self.pairs else CardFold()
        return own if self.outside is None else merge_folds([own, self.outside])


def _pair_rows(fj: pd.DataFrame, generator: str, m_all: np.ndarray, model_names: np.ndarray,
               key_codes: Mapping[str, np.ndarray], known: Any = None) -> _PairRows:
    """:func:`neighbor_pairs` as arrays: the rows of ``observed_neighbors(fj, generator, skip_bad=True)``, in its order.

    ``known``: the pairing certify made of these rows for this generator (``_match`` without ``skip_bad``, which
    returns only when no neighbour is unmatched, and then returns what ``skip_bad=True`` returns)."""
    from biasbound.neighbors import observed as obs

    kind, name = obs._parse_generator(generator, "observed_neighbors")
    # observed_neighbors' own matching (certify's when it made one)
    matched = known if known is not None else obs._match(fj, kind, name, generator, True, key_codes)
    score = fj["score"].to_numpy(dtype=float)
    if matched is not None:
        nb_pos, canon_pos, _, n_missing, _ = matched
        return _PairRows(m=m_all[nb_pos], original=score[canon_pos], neighbor=score[nb_pos],
                         rerun=fj["rerun"].to_numpy(dtype=np.int64)[nb_pos], missing=int(n_missing))
    nb = neighbor_pairs(fj, generator)  # keys with missing values: the merge path, its model ids looked up by their text
    model = nb["model"]
    text = model.astype(object).to_numpy().astype(str)  # each value's str (as sorted_codes reads them)
    return _PairRows(m=np.where(model.isna().to_numpy(), -1, pd.Index(model_names).get_indexer(text)),
                     original=nb["original"].to_numpy(dtype=float), neighbor=nb["neighbor"].to_numpy(dtype=float),
                     rerun=nb["rerun"].to_numpy(dtype=np.int64), missing=int(nb.attrs.get("missing", 0)))


def _judge_rows(fj: pd.DataFrame, codes: Any = None, generators: Sequence[str] | None = None) -> _JudgeRows:
    """Read one judge's rows once (:class:`_JudgeRows`).

    ``codes``: certify's model and item codes of these very rows (``pipeline._judge._codes``: ``m, model_names, i,
    item_names``, :func:`biasbound.data.tables.sorted_codes` of each column), reused for a column without a
    missing id (where they are the codes read here). ``generators``: pair only these of the table's neighbours."""
    from biasbound.data.tables import sorted_codes
    from biasbound.neighbors import observed as obs
    from biasbound.pipeline._neighbors import neighbor_key_codes

    obs._check_frame(fj, "observed_neighbors")

    def given(col: str, at: int) -> tuple[np.ndarray, np.ndarray] | None:
        if codes is None or fj[col].hasnans:
            return None
        c, names = (codes.m, codes.model_names) if at == 0 else (codes.i, codes.item_names)
        if len(c) != len(fj):
            raise ValueError(f"judge_card: the codes given for {col!r} are not of these rows.")
        return c, names

    m_all, model_names = given("model", 0) or sorted_codes(fj["model"])
    i_all, item_names = given("item_id", 1) or sorted_codes(fj["item_id"])
    key_codes = neighbor_key_codes(fj, m_all, i_all)  # only columns without a missing id: there every code is its value
    # a missing id is no model or item of the card (the text routes grouped and indexed by it dropped it)
    m_all = np.where(fj["model"].isna().to_numpy(), -1, m_all) if fj["model"].hasnans else m_all
    i_all = np.where(fj["item_id"].isna().to_numpy(), -1, i_all) if fj["item_id"].hasnans else i_all
    known = getattr(codes, "matches", None) or {}
    pairs = {g: _pair_rows(fj, g, m_all, model_names, key_codes, known.get(g)) for g in data_generators(fj)
             if generators is None or g in generators}
    return _JudgeRows(fj=fj, m=m_all, model_names=model_names, i=i_all, item_names=item_names,
                      canon=np.flatnonzero(obs.canonical_mask(fj).to_numpy(dtype=bool)),
                      score=fj["score"].to_numpy(dtype=float), pairs=pairs)


def _fold_of(pairs: _PairRows, model_names: np.ndarray) -> CardFold:
    """The rerun pairs of one judge as a :class:`CardFold` (the all-items sums by :func:`_round_sums`)."""
    return fold_pairs(pairs.original, pairs.neighbor, pairs.m, pairs.missing, model_names,
                      _round_sums(pairs, len(model_names) + 1))


def card_fold(fj_block: pd.DataFrame) -> CardFold:
    """One judge's :class:`CardFold` of a block of whole models: ``fj_block`` holds every row of the judge on those
    models (every rerun, rerun 0 included: the rerun pairs join each rerun row to its rerun-0 row), in table order.
    Folds of blocks of disjoint model sets join by :func:`merge_folds`; ``judge_card(frame0, result, folds=...)``
    reads them beside the table's rerun-0 rows (:mod:`biasbound.card_fold`)."""
    later = fj_block["rerun"].to_numpy() >= 1
    score = fj_block["score"].to_numpy(dtype=float)[later]
    present = score[~np.isnan(score)]
    counts = CardFold(rows=int(np.count_nonzero(later)), scored=int(present.size), scores=cap_scores(present))
    if not later.any():
        return counts
    rows = _judge_rows(fj_block, generators=("rerun",))
    return merge_folds([counts, rows.rerun_fold])


def _fold_figures(fold: CardFold, pairwise: bool, continuous: bool, level: float) -> dict[str, Any]:
    """The card's ``generators["rerun"]`` entry from the judge's fold (:func:`_generator_figures`' keys and order)."""
    return {"pairs": fold.pairs, "missing": fold.missing,
            "flip_rate": _prop(fold.flips_side if continuous else fold.flips_level, fold.pairs, level),
            "strict_reversal": _prop(fold.reversals, fold.pairs, level) if pairwise or continuous else None,
            "mean_shift": fold.shift.interval(level), "delta_star": fold.delta_star()}


def _distinct(rows: _JudgeRows, col: str, codes: np.ndarray) -> int:
    """``nunique`` of an id column over the original rows, counted on its codes when they are its values (a string
    or coded column without missing values: equal text is equal value); else pandas' own count."""
    from biasbound.data.coded import is_coded_column

    series = rows.fj[col]
    if (isinstance(series.dtype, pd.StringDtype) or is_coded_column(series)) and not series.hasnans:
        return int(np.count_nonzero(np.bincount(codes[rows.canon], minlength=1)))
    return int(series.iloc[rows.canon].nunique())


def _delta_star(model: Any, difference: np.ndarray) -> float | None:
    """Δ* of one judge: RMS of (original − neighbour) per model, the largest over models.

    ``model`` is any per-pair group key (the model texts, or their integer codes: the per-group means are the same
    numbers either way, each group summed in row order; a missing key is left out, as pandas groups do)."""
    difference = np.asarray(difference, dtype=float)
    if difference.size == 0:
        return None
    per = pd.Series(difference ** 2).groupby(np.asarray(model)).mean()
    return float(np.sqrt(per.max()))


def observed_sensitivity(frame: pd.DataFrame, generators: Sequence[str]) -> pd.DataFrame:
    """Per judge and generator: Δ* over EVERY observed neighbour (no hold-out), max over the judge's models.

    Δ* of one (judge, model) is the RMS of (original − neighbour) over its observed neighbour pairs
    (both sides present); the judge's figure is the largest over its models, as in the certificate.
    The certificate's own estimate uses only the calibration share of the neighbours, so the two
    agree exactly with ``--holdout 0``. This is the figure the :func:`biasbound.inspect.bias_bounded`
    metric records for a log's model, and the card's ``delta_star``.

    Returns
    -------
    pandas.DataFrame
        Columns ``judge, generator, delta_star, m`` (``m`` = neighbour pairs over all models).
    """
    rows = []
    for g in generators:
        nb = neighbor_pairs(frame, g)
        for judge, grp in nb.groupby("judge", sort=True):
            rows.append({"judge": str(judge), "generator": g, "m": int(len(grp)),
                         "delta_star": _delta_star(grp["model"].to_numpy(), grp["difference"].to_numpy(dtype=float))})
    return pd.DataFrame(rows, columns=["judge", "generator", "delta_star", "m"])


def first_shown_choice(frame: pd.DataFrame) -> np.ndarray:
    """Per row: 1 = the verdict prefers the answer shown first, 0 = the second, 0.5 = tie, NaN = unknown.

    Known only for pairwise rows (game 1 or 2) with a score and a verdict naming the position:
    Arena-Hard letters (``A>B`` prefers the first shown), LLMBar's output labels ``1``/``2`` (output 1
    is shown first in game 1 and second in game 2) or FastChat's ``<prompt>: model_1``/``model_2``
    (original labels; model_1 is assistant A in g1).
    """
    out = np.full(len(frame), np.nan)
    if "verdict" not in frame.columns or len(frame) == 0:
        return out
    # the string work on the distinct verdicts (a handful), read back per row
    col = frame["verdict"]
    from biasbound.data.coded import is_coded_column

    if is_coded_column(col):  # a coded verdict (what the readers give): its codes and texts as they are
        codes, uniq = col.array.codes, col.cat.categories
    else:
        if not isinstance(col.dtype, pd.StringDtype):  # other values as their text (1 and 1.0 stay distinct)
            col = col.astype(object).where(col.notna(), "").astype(str)
        codes, uniq = pd.factorize(col)
    codes = np.where(codes < 0, np.intp(len(uniq)), codes)  # a missing verdict reads as ""
    v = pd.Series(list(uniq) + [""], dtype=object).astype(str).str.strip()
    v = v.str.replace(r"^\[\[(.*)\]\]$", r"\1", regex=True).str.replace(" ", "", regex=False)
    game = frame["game"].to_numpy()
    ok = np.isin(game, (1, 2)) & frame["score"].notna().to_numpy()
    vu = v.to_numpy(dtype=object)  # every test below on the distinct verdicts, then read back per row by its code
    first = np.isin(vu, list(_FIRST))[codes]
    second = np.isin(vu, list(_SECOND))[codes]
    tie = np.isin(vu, list(_TIE))[codes]
    out[ok & first] = 1.0
    out[ok & second] = 0.0
    out[ok & tie] = 0.5
    lab1, lab2 = (vu == "1")[codes], (vu == "2")[codes]
    out[ok & lab1] = np.where(game[ok & lab1] == 1, 1.0, 0.0)
    out[ok & lab2] = np.where(game[ok & lab2] == 2, 1.0, 0.0)
    # FastChat / MT-Bench pairwise: "<prompt>: model_1" in original labels; model_1 is assistant A in g1
    tu = v.str.rsplit(":", n=1).str[-1].to_numpy(dtype=object)
    fc1, fc2 = (tu == "model_1")[codes], (tu == "model_2")[codes]
    fct = ((tu == "tie") & v.str.contains(":", regex=False).to_numpy(dtype=bool))[codes]
    out[ok & fc1] = np.where(game[ok & fc1] == 1, 1.0, 0.0)
    out[ok & fc2] = np.where(game[ok & fc2] == 2, 1.0, 0.0)
    out[ok & fct] = 0.5
    return out


# ----------------------------------------------------------------------------------------------------
# the card
# ----------------------------------------------------------------------------------------------------


def _generator_figures(nb: _PairRows, pairwise: bool, continuous: bool, level: float) -> dict[str, Any]:
    o, n_ = nb.original, nb.neighbor
    if continuous:
        flips = int(np.count_nonzero(np.sign(o - 0.5) != np.sign(n_ - 0.5)))
    else:
        flips = int(np.count_nonzero(np.abs(o - n_) > 1e-12))
    out: dict[str, Any] = {
        "pairs": int(len(nb)), "missing": nb.missing,
        "flip_rate": _prop(flips, len(nb), level),
        "strict_reversal": (_prop(int(np.count_nonzero((o - 0.5) * (n_ - 0.5) < 0)), len(nb), level)
                            if pairwise or continuous else None),
        "mean_shift": _mean_ci(n_ - o, level),
        "delta_star": nb.delta_star(),
    }
    return out


def _what_the_data_add(j: Any) -> dict[str, Any] | None:
    """The violation probability and α at the certified σ from the score range alone beside the data's."""
    cert = j.certificate
    ri = getattr(cert, "range_implied", None)
    cal = j.calibration
    if ri is None or not hasattr(cal, "bound_value"):
        return None
    from biasbound._exceptions import InfeasibleCertificateError
    from biasbound.bounds import AlmostSure, Knowledge
    from biasbound.calibration import calibrate

    alpha_range: float | None
    try:
        k = Knowledge.of({"range": [AlmostSure(float(ri["A"]), shift_ratio=ri.get("shift_ratio"))]})
        alpha_range = float(calibrate(k, tau=cal.tau, delta=cal.delta, dim=cal.dim, sigma=cal.sigma).alpha)
    except (InfeasibleCertificateError, InputError):
        alpha_range = None
    p_range, p_data = float(ri["bound"]), float(cal.bound_value)
    return {
        "violation_range_alone": p_range, "violation_data": p_data,
        "violation_ratio": (p_range / p_data) if p_data > 0 else None,
        "alpha_range_alone": alpha_range, "alpha_data": float(cal.alpha),
        "alpha_ratio": (float(cal.alpha) / alpha_range) if alpha_range else None,
        "range_implied": bool(ri["holds"]), "sigma": float(cal.sigma),
    }


def _cost(usage: Mapping[str, Any] | None, n_judgments: int) -> dict[str, Any]:
    if not usage:
        return {"known": False, "judgments": n_judgments,
                "note": "unknown: these judgments were read from files; calls, tokens and prices were not recorded "
                        "(biasbound run records them)"}
    per = 1000.0 / max(n_judgments, 1)
    calls = usage.get("calls")
    tok = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    money = usage.get("cost")
    earlier = int(usage.get("from_earlier_sessions") or 0)
    notes = [] if money is not None else ["money unknown: no prices configured"]
    if earlier:
        notes.append(f"{earlier} of the {calls} calls were made by an earlier session of this run and read from its "
                     "cache (their tokens and cost as recorded then)")
    batch = int(usage.get("batch_calls") or 0)
    if batch:
        notes.append(f"{batch} of the {calls} calls at batch prices")
    return {"known": True, "judgments": n_judgments, "calls": calls, "tokens": tok, "money": money,
            **({"batch_calls": batch} if batch else {}), "calls_per_1000": None if calls is None else calls * per, "tokens_per_1000": tok * per,
            "money_per_1000": None if money is None else money * per, "from_earlier_sessions": earlier,
            "note": "; ".join(notes) or None}


def _model_first_game(rows: pd.DataFrame, choice: np.ndarray) -> int | None:
    """The game (1 or 2) in which the judged model is shown first, read from decisive game-1 verdicts
    (a first-shown win that is the model's win); None when the verdicts do not tell."""
    g1 = (rows["game"].to_numpy() == 1) & ~np.isnan(choice) & (choice != 0.5)
    if not g1.any():
        return None
    agree = float(np.mean((choice[g1] == 1.0) == (rows["score"].to_numpy(dtype=float)[g1] > 0.5)))
    return 1 if agree == 1.0 else 2 if agree == 0.0 else None


def _judge_card(rows: _JudgeRows, j: Any | None, usage: Mapping[str, Any] | None, level: float) -> dict[str, Any]:
    fj = rows.fj
    out = rows.outside if rows.outside is not None else CardFold()  # the judge's rows not in fj (none: a whole table)
    pairwise = bool((fj["game"].to_numpy()[rows.canon] == 1).any())
    if out.scored:  # the distinct scores of fj and of the folded rows (the fold keeps enough of them to decide)
        score = fj["score"].to_numpy(dtype=float)
        n_levels = len(set(np.unique(score[~np.isnan(score)]).tolist()) | set(out.scores))
    else:
        n_levels = int(fj["score"].nunique())  # nunique leaves missing scores out
    continuous = n_levels > DISCRETE_LEVELS
    gens: dict[str, Any] = {}
    for g in rows.generators():
        if g == "rerun":  # from the fold of the judge's rerun pairs (card_fold), on a whole table too
            fold = rows.rerun_fold
            if fold.pairs or fold.missing:
                gens[g] = _fold_figures(fold, pairwise, continuous, level)
        elif len(nb := rows.pairs[g]) or nb.missing:
            gens[g] = _generator_figures(nb, pairwise, continuous, level)
    # the rows of both presentation orders, with the columns first_shown_choice and _model_first_game read
    # (selecting the other, string, columns of a million rows too would only copy them)
    pos_rows = fj.loc[(fj["variant"] == "original") & (fj["rerun"] == 0) & fj["game"].isin([1, 2]),
                      [c for c in ("verdict", "game", "score") if c in fj.columns]]
    choice = first_shown_choice(pos_rows)
    known = choice[~np.isnan(choice)]
    decisive = known[known != 0.5]
    position = None
    if pairwise and (pos_rows["game"] == 2).any():
        position = {**_prop(int(np.count_nonzero(decisive == 1.0)), int(decisive.size), level),
                    "ties": int(np.count_nonzero(known == 0.5)), "unknown": int(len(pos_rows) - known.size),
                    "model_first_in_game": _model_first_game(pos_rows, choice)}
        if known.size == 0:
            position["note"] = ("unknown: the verdicts do not say which position won (Arena-Hard letters, LLMBar or "
                                "FastChat labels do)")
    card: dict[str, Any] = {
        "judgments": int(fj["score"].notna().sum()) + out.scored,
        "missing": int(fj["score"].isna().sum()) + out.rows - out.scored,
        "items": _distinct(rows, "item_id", rows.i), "models": _distinct(rows, "model", rows.m),
        "pairwise": pairwise, "generators": gens,
        "verdict_rule": ("side of 0.5 (continuous scores: a flip = the preferred side changes)" if continuous
                         else "score level (a flip = any change of level)"), "position_preference": position,
        "cost": _cost(usage, int(len(fj)) + out.rows), "level": level,
    }
    if j is not None:
        cert = j.certificate
        scope = cert.scope if isinstance(getattr(cert, "scope", None), Mapping) else {}
        nbh = dict(scope.get("neighborhood") or {"kind": "hamming", "k": 1})
        key = "all-items" if nbh.get("kind") == "all-items" else f"hamming-{nbh.get('k', 1)}"
        card["neighbourhood"] = {**nbh, "view": j.view,
                                 "reading": READINGS.get(key, f"{nbh.get('k')} items' verdicts at once")}
        br = getattr(cert, "bias_radius", None) or {}
        ri = getattr(cert, "range_implied", None) or {}
        card["bias_radius"] = {"delta": br.get("delta"), "radius": br.get("radius"),
                               "per_generator": br.get("per_generator"), "curve": br.get("curve"),
                               # the largest change the score range allows (||Delta|| <= A for every neighbour)
                               "range_max": None if ri.get("A") is None else float(ri["A"])}
        card["alpha"], card["sigma"] = float(j.calibration.alpha), float(j.calibration.sigma)
        card["what_the_data_add"] = _what_the_data_add(j)
    return card


@validate_params
def judge_card(frame: pd.DataFrame, result: Any = None, *, usage: Mapping[str, Mapping[str, Any]] | None = None,
               level: float = LEVEL, rounds: int | None = None, seed: int | None = None,
               max_pairs: int | None = PAIR_LIST_CAP, matrix_models: int | None = MATRIX_MODELS,
               groups: Mapping[str, pd.DataFrame] | None = None, codes: Mapping[str, Any] | None = None,
               families: Mapping[str, str] | None = None, folds: Mapping[str, CardFold] | None = None) -> dict[str, Any]:
    """The judge card of every judge in a judgment table (JSON types).

    Parameters
    ----------
    frame:
        The judgment table (docs/DESIGN.md "Judgment tables").
    result:
        The :class:`biasbound.pipeline.CertifyResult` of this table, or None (then the card holds the
        figures of the data alone: no bias radius, α, rank statements).
    usage:
        ``{judge: {"calls", "prompt_tokens", "completion_tokens", "cost"}}`` (``biasbound run``); else the
        cost is reported as unknown.
    level:
        Level of every interval (0.95).
    rounds, seed:
        Item-bootstrap rounds and seed of the rank intervals (default: the certification's).
    max_pairs, matrix_models:
        The rank statements' caps (:func:`rank_statements`; None: every pair listed, every model in the matrix).
    groups:
        ``{judge: its rows}`` when the table is already split by judge as ``frame.groupby(frame["judge"].astype(str))``
        splits it (``certify`` has it); default: split here.
    codes:
        With ``groups``: ``{judge: certify's model and item codes of its rows}`` (``pipeline._judge._codes``),
        reused rather than made again.
    families:
        ``{judge or model name: family}`` for the self-preference figure (:mod:`biasbound.self_preference`); names
        that say their family (``gpt-4o``, ``claude-3.5``, ``gemini``, ``llama``, ...) need no entry.
    folds:
        ``{judge: CardFold}`` of the table's rerun >= 1 rows when ``frame`` holds only its rerun-0 rows
        (:func:`card_fold` of each judge's rows per block of whole models, joined by :func:`merge_folds`):
        the card is then the whole table's (its rerun mean shift's value and interval to rounding, 1e-12).

    Returns
    -------
    dict
        ``{"level", "judges": {judge: card}, "panel": [row per judge]}``; each card as in the module docstring,
        with ``ranks`` (:func:`rank_statements`) when a certification is given.
    """
    judges: dict[str, Any] = {}
    results = getattr(result, "judges", {}) if result is not None else {}
    settings = getattr(result, "settings", {}) or {}
    rounds = int(rounds if rounds is not None else settings.get("bootstrap_rounds") or 1000)
    seed = int(seed if seed is not None else (getattr(result, "seed", None) or 0))
    if groups is None:  # split here: codes of other rows would not fit them
        from biasbound.data.coded import judge_groups

        groups, codes = judge_groups(frame), None
    for name in sorted(groups):
        fj = groups[name]
        j = results.get(name)
        # read once (codes, original rows, neighbour pairs) by the card and the ranks
        rows = _judge_rows(fj, (codes or {}).get(name))
        if folds is not None:
            if "rerun" in rows.pairs:
                raise ValueError(f"judge_card: judge {name!r} has rerun >= 1 rows in the frame and folds of them; "
                                 "with folds the frame holds the rerun-0 rows only.")
            rows = dataclasses.replace(rows, outside=folds.get(name, CardFold()))
        card = _judge_card(rows, j, (usage or {}).get(name), level)
        from biasbound.self_preference import self_preference

        card["self_preference"] = self_preference(fj, name, families=families, level=level, rounds=min(rounds, 1000),
                                                  seed=seed)
        if j is not None:
            card["ranks"] = rank_statements(fj, j, rounds=rounds, seed=seed, level=level, rows=rows,
                                            max_pairs=max_pairs, matrix_models=matrix_models)
        judges[name] = card
    out = {"level": level, "judges": judges}
    out["panel"] = panel_rows(out)
    return out


# ----------------------------------------------------------------------------------------------------
# rank statements
# ----------------------------------------------------------------------------------------------------
def _model_positions(rows: _JudgeRows, models: list[str]) -> np.ndarray:
    """Per model code: its row in ``models`` (-1 for a model not among them); one more entry, -1, read by code -1."""
    return np.append(pd.Index(models).get_indexer(pd.Index(rows.model_names)), -1)


def _model_matrix(rows: _JudgeRows, models: list[str]) -> np.ndarray:
    """Models × original items (the texts of the original rows' items, sorted) of the original scores."""
    ci = rows.i[rows.canon]
    seen = np.zeros(len(rows.item_names), dtype=bool)
    seen[ci[ci >= 0]] = True
    column = np.cumsum(seen) - 1  # item code -> its column among the original items (codes are in sorted text order)
    mat = np.full((len(models), int(np.count_nonzero(seen))), np.nan)
    r = _model_positions(rows, models)[rows.m[rows.canon]]
    keep = (r >= 0) & (ci >= 0)
    mat[r[keep], column[ci[keep]]] = rows.score[rows.canon][keep]
    return mat


def _bootstrap_rank_intervals(mat: np.ndarray, rounds: int, seed: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of each model's rank (1 = best, ties share the better rank) over item resamples."""
    from biasbound.leaderboard import mean_operands, count_chunks, resampled_sums

    # the means' resampled sums as the leaderboard forms them (scores on quarter levels and the 0/1 presence in one
    # exact float32 product, few missing cells subtracted from the item count, other scores in float64)
    num, den = mean_operands(mat, [])
    ranks = []
    # chunk by chunk (the draws of _draw_counts, never all held at once: 1000 rounds × 25,000 items are 200 MB)
    for s_num, count in resampled_sums(count_chunks(np.random.default_rng(seed), rounds, mat.shape[1]), [num, den]):
        with np.errstate(invalid="ignore", divide="ignore"):
            means = s_num / count
        means = np.where(np.isnan(means), -np.inf, means)
        ranks.append(stats.rankdata(-means, axis=1, method="min"))
    rk = np.vstack(ranks)
    q = 100.0 * (1.0 - level) / 2.0
    return (np.floor(np.percentile(rk, q, axis=0)).astype(int), np.ceil(np.percentile(rk, 100 - q, axis=0)).astype(int))


def _distinct_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` of integers; by one bincount over their range when it is short
    (rerun numbers), without sorting the rows."""
    if values.size and np.issubdtype(values.dtype, np.integer):
        low = int(values.min())
        span = int(values.max()) - low + 1
        if span <= max(1 << 16, values.size):
            seen = np.bincount(values - low, minlength=span) > 0
            return np.flatnonzero(seen) + low, (np.cumsum(seen) - 1)[values - low]
    return np.unique(values, return_inverse=True)


def _all_items_means(rows: _JudgeRows, generator: str, models: list[str], n_items: np.ndarray) -> list[np.ndarray]:
    """Model means of each all-items neighbour round of ``generator`` (an unobserved item keeps its score).

    Sums are formed item by item (neighbour score where observed, else the original) before one division, so
    two models whose neighbour sums are equal get equal means (a tie is not an order kept). Each sum is pandas'
    group sum over the model's rows in table order, grouped by integer codes (the same numbers as grouping by the
    model texts, without hashing them again)."""
    from biasbound.leaderboard import exact_group_sums

    at = _model_positions(rows, models)  # model code -> position in models
    d = len(models)
    total = np.zeros(d)
    n_codes = len(rows.model_names) + 1  # model code + 1: a missing id (-1) is a group of its own, then dropped
    canon_m, canon_score = rows.m[rows.canon], rows.score[rows.canon]
    # pandas' group sums, or np.bincount's where they are exact and so the same numbers (exact_group_sums)
    by_code = exact_group_sums(canon_score, canon_m + 1, n_codes)
    if by_code is not None:
        code = np.flatnonzero(np.bincount(canon_m + 1, minlength=n_codes)) - 1  # the groups pandas forms, sorted
        canon_sum = by_code[code + 1]
    else:
        grouped = pd.Series(canon_score).groupby(canon_m).sum()
        code, canon_sum = grouped.index.to_numpy(), grouped.to_numpy()
    pos = at[code]
    total[pos[pos >= 0]] = canon_sum[pos >= 0]
    out = []
    if generator == "rerun":  # the rounds of the judge's rerun fold (its sums by model name; card_fold)
        where = pd.Index(models)
        for per in rows.rerun_fold.rounds.values():  # in rerun order
            pos = where.get_indexer(pd.Index(list(per)))
            keep = pos >= 0
            sums_by = np.asarray(list(per.values()), dtype=float).reshape(-1, 2)
            sums = total.copy()
            sums[pos[keep]] = (total[pos[keep]] - sums_by[keep, 0]) + sums_by[keep, 1]
            out.append(sums / np.maximum(n_items, 1))
        return out
    nb = rows.pairs[generator]
    if len(nb):
        reruns, key, o_by, n_by = _round_sums(nb, n_codes)
        for r in range(len(reruns)):
            mine = key // n_codes == r
            pos = at[key[mine] % n_codes - 1]
            keep = pos >= 0
            sums = total.copy()
            sums[pos[keep]] = (total[pos[keep]] - o_by[mine][keep]) + n_by[mine][keep]
            out.append(sums / np.maximum(n_items, 1))
    return out


def _round_sums(nb: _PairRows, n_codes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The original and neighbour sums of each (rerun, model) group of the pairs: ``reruns`` (sorted), ``key`` =
    rerun's index × ``n_codes`` + model code + 1 (sorted: the groups pandas forms), and the two sums per key.

    Each sum is pandas' group sum over the group's pairs in table order, grouped by integer codes (or np.bincount's
    where it is exact: :func:`biasbound.leaderboard.exact_group_sums`), so a group's sums are the same numbers
    whichever other pairs are summed beside it (a block of whole models gives its models' sums)."""
    from biasbound.leaderboard import exact_group_sums

    reruns, r_code = _distinct_inverse(nb.rerun)  # rounds in rerun order
    group = r_code.astype(np.int64) * n_codes + (nb.m + 1)  # one group per (rerun, model): rows in table order
    size = len(reruns) * n_codes
    o_sum, n_sum = exact_group_sums(nb.original, group, size), exact_group_sums(nb.neighbor, group, size)
    if o_sum is not None and n_sum is not None:
        key = np.flatnonzero(np.bincount(group, minlength=size))  # the groups pandas forms, sorted
        return reruns, key, o_sum[key], n_sum[key]
    by = pd.DataFrame({"o": nb.original, "n": nb.neighbor}).groupby(group).sum()
    return reruns, by.index.to_numpy(), by["o"].to_numpy(), by["n"].to_numpy()


@validate_params
def rank_statements(fj: pd.DataFrame, j: Any, *, rounds: int = 1000, seed: int = 0,
                    level: float = LEVEL, max_pairs: int | None = PAIR_LIST_CAP,
                    matrix_models: int | None = MATRIX_MODELS, rows: _JudgeRows | None = None) -> dict[str, Any]:
    """Which model pairs of one judge keep their order under the bias, the question sample and the noise.

    Parameters
    ----------
    fj:
        The judge's judgment rows.
    j:
        Its :class:`biasbound.pipeline.JudgeCertification` (leaderboard with 95% item-bootstrap intervals,
        α, σ, certified scores).
    rounds, seed, level:
        Item bootstrap of the rank intervals.
    max_pairs:
        Most pairs listed per generator in ``reversed_by`` and ``tied_by`` (None: every pair); the rest are counted.
    matrix_models:
        The ``matrix`` covers the first (best) this many models (None: all); ``pair_counts`` counts every pair.

    Returns
    -------
    dict
        ``models`` (best first by original mean), ``rank_interval`` {model: [lo, hi]}, ``pairs``,
        ``separability`` {``bootstrap`` (Arena-Hard's: disjoint intervals), ``bias_robust`` (separated under
        all three), ``all_items`` (order kept by every all-items neighbour), ``noise``}, ``reversed_by``
        {generator: [[higher, lower], ...]} (pairs one all-items neighbour strictly reverses: at most ``max_pairs``,
        those with the largest original margins, in leaderboard order), ``reversed_count`` {generator: every such
        pair}, ``tied_by`` / ``tied_count`` (pairs it ties: not reversed, but the order is not kept either),
        ``pairs_listed`` (the cap, None = all), ``reversed_bootstrap_separated`` {generator: how many reversed pairs
        the bootstrap separates}, ``matrix`` (row strings over the first ``matrix_models`` models:
        ``S`` separated under all three, ``B`` by the bootstrap only, ``R`` reversed by an all-items
        neighbour, ``.`` not separated, ``=`` diagonal), ``matrix_models`` (how many models it covers) and
        ``pair_counts`` {code: pairs of every model} (``S``, ``B``, ``R``, ``.``).
    rows:
        ``fj`` read once for the card (internal; default: read here).
    """
    from biasbound._validation import check_int

    max_pairs = None if max_pairs is None else check_int(max_pairs, "max_pairs", "rank_statements", low=0)
    matrix_models = None if matrix_models is None else check_int(matrix_models, "matrix_models", "rank_statements", low=0)
    lb = j.leaderboard.dropna(subset=["original"]).sort_values("original", ascending=False, kind="stable")
    models = [str(m) for m in lb["model"]]
    d = len(models)
    mean = lb["original"].to_numpy(dtype=float)
    lo, hi = lb["original_lo"].to_numpy(dtype=float), lb["original_hi"].to_numpy(dtype=float)
    n_items = lb["n_items"].to_numpy(dtype=float)
    rows = _judge_rows(fj) if rows is None else rows
    # the rank intervals first: their bootstrap's arrays are freed before the arrays over every model pair exist
    r_lo, r_hi = _bootstrap_rank_intervals(_model_matrix(rows, models), rounds, seed, level) if d else ([], [])
    a, b = np.triu_indices(d, k=1)
    ordered = mean[a] > mean[b]
    # (b) question resampling: disjoint intervals (Arena-Hard's separability)
    boot = ordered & (lo[a] > hi[b])
    # (a) every all-items neighbour of every generator keeps the order
    keeps = np.ones(len(a), dtype=bool)
    reversed_by: dict[str, list[list[str]]] = {}
    reversed_separated: dict[str, int] = {}
    tied_by: dict[str, list[list[str]]] = {}
    reversed_count: dict[str, int] = {}
    tied_count: dict[str, int] = {}
    reversed_masks: list[np.ndarray] = []
    names = np.asarray(models, dtype=object)

    gap = mean[a] - mean[b]  # the original margin of each pair (>= 0: best first)

    def named(mask: np.ndarray) -> list[list[str]]:  # [[higher, lower], ...]: at most max_pairs, the largest margins
        sel = np.flatnonzero(mask)
        if max_pairs is not None and sel.size > max_pairs:  # in leaderboard order (a stable sort keeps it among equals)
            sel = np.sort(sel[np.argsort(-gap[sel], kind="stable")[:max_pairs]])
        return np.stack([names[a[sel]], names[b[sel]]], axis=1).tolist()

    for g in rows.generators():
        rev = np.zeros(len(a), dtype=bool)
        tie = np.zeros(len(a), dtype=bool)
        for m2 in _all_items_means(rows, g, models, n_items):
            rev |= m2[a] < m2[b]
            tie |= m2[a] == m2[b]
        rev &= ordered
        tie &= ordered & ~rev
        keeps &= ~rev & ~tie  # a tie is not an order kept
        reversed_masks.append(rev)
        reversed_by[g] = named(rev)
        tied_by[g] = named(tie)
        reversed_count[g] = int(np.count_nonzero(rev))
        tied_count[g] = int(np.count_nonzero(tie))
        reversed_separated[g] = int(np.count_nonzero(rev & boot))
    # (c) the certified release's noise: P(order kept) >= level
    cal = j.calibration
    read = [c for c in ("model", "shrunk", "shrunk_model") if c in j.scores.columns]  # the columns read below:
    sc = j.scores.loc[j.scores["in_batch"], read] if "in_batch" in j.scores.columns else j.scores  # no other text moved
    if j.view == "model":
        g_ = sc.groupby(sc["model"].astype(str))["shrunk"]
        shr = g_.mean().reindex(models).to_numpy(dtype=float)
        sig = cal.sigma / np.sqrt(np.maximum(g_.size().reindex(models).fillna(1).to_numpy(dtype=float), 1))
    else:
        shr = sc.drop_duplicates("model").set_index(sc.drop_duplicates("model")["model"].astype(str))["shrunk_model"]
        shr = shr.reindex(models).to_numpy(dtype=float)
        sig = np.full(d, cal.sigma)
    released_gap = shr[a] - shr[b]
    scale = np.sqrt(sig[a] ** 2 + sig[b] ** 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(scale > 0, released_gap / scale, np.where(released_gap > 0, np.inf, -np.inf))
    del released_gap, scale
    kept = special.ndtr(z)  # norm.cdf's own routine: the same values, without its copies of z
    del z
    noise = ordered & (kept >= level)
    del kept
    robust = boot & keeps & noise
    reversed_any = np.zeros(len(a), dtype=bool)
    for rev in reversed_masks:  # the pairs of reversed_by, as masks over (a, b)
        reversed_any |= rev
    # each pair's code, later codes over earlier ones: "S" (robust) is a subset of "B" (boot); "R" wins
    pair_code = np.full(len(a), ".", dtype="<U1")
    for arr, ch in ((boot, "B"), (robust, "S"), (reversed_any, "R")):
        pair_code[arr] = ch
    pair_counts = {ch: int(np.count_nonzero(pair_code == ch)) for ch in ("S", "B", "R", ".")}
    dm = d if matrix_models is None else min(d, int(matrix_models))
    shown = b < dm  # a < b: both models among the first dm
    code = np.full((dm, dm), ".", dtype="<U1")
    np.fill_diagonal(code, "=")
    code[a[shown], b[shown]] = pair_code[shown]
    code[b[shown], a[shown]] = pair_code[shown]
    n_pairs = int(len(a))

    def share(x: np.ndarray) -> float | None:
        return float(np.count_nonzero(x)) / n_pairs if n_pairs else None

    return {
        "models": models, "pairs": n_pairs, "level": level, "rounds": int(rounds), "seed": int(seed),
        "rank_interval": {m: [int(x), int(y)] for m, x, y in zip(models, cast(Any, r_lo), cast(Any, r_hi))},
        "separability": {"bootstrap": share(boot), "bias_robust": share(robust), "all_items": share(ordered & keeps),
                         "noise": share(noise)},
        "reversed_by": reversed_by, "tied_by": tied_by, "reversed_count": reversed_count, "tied_count": tied_count,
        "pairs_listed": None if max_pairs is None else int(max_pairs),
        "reversed_bootstrap_separated": reversed_separated,
        "matrix": code.view(f"<U{dm}").ravel().tolist() if dm else [],  # each row's characters as one string
        "matrix_models": int(dm), "pair_counts": pair_counts,
    }


# ----------------------------------------------------------------------------------------------------
# rendering helpers (terminal and HTML share these rows)
# ----------------------------------------------------------------------------------------------------
def _pct(p: Mapping[str, Any] | None) -> str:
    if not p or p.get("value") is None:
        return "—"
    return f"{100 * p['value']:.1f}% [{100 * p['lo']:.1f}, {100 * p['hi']:.1f}] (n={p['n']})"


def _signed(p: Mapping[str, Any] | None) -> str:
    if not p or p.get("value") is None:
        return "—"
    return f"{p['value']:+.3f} [{p['lo']:+.3f}, {p['hi']:+.3f}]"


def _g(x: Any, d: int = 3) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{float(x):.{d}g}"


def _shift_text(g: str, p: Mapping[str, Any] | None, first_game: int | None = None) -> str:
    if not p or p.get("value") is None:
        return "—"
    if g == "swap" and first_game in (1, 2):
        # game 2 − game 1 in the model's view: the gain of being shown first when game 2 shows the model first
        v = p["value"] if first_game == 2 else -p["value"]
        lo, hi = (p["lo"], p["hi"]) if first_game == 2 else (-p["hi"], -p["lo"])
        return (f"{v:+.3f} [{lo:+.3f}, {hi:+.3f}]: an answer shown first scores {abs(v):.3f} "
                f"{'more' if v >= 0 else 'less'} than shown second (model's view, 0–1)")
    verb = "gain" if p["value"] >= 0 else "lose"
    if g.startswith("variant:"):
        return f"{_signed(p)}: {g.split(':', 1)[1]} answers {verb} {abs(p['value']):.3f} (model's view, 0–1)"
    what = {"swap": "with the answers swapped (game 2 − game 1)", "rerun": "on a rerun"}.get(g, g)
    return f"{_signed(p)}: answers {verb} {abs(p['value']):.3f} {what} (model's view, 0–1)"


def _self_preference_rows(sp: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The self-preference row of a card: the value with its interval, or the note saying why it is unknown."""
    if sp and sp.get("known"):
        return [("self-preference", f"{_g(sp['value'], 3)} [{_g(sp['lo'], 3)}, {_g(sp['hi'], 3)}]: mean score of "
                 f"its own family's ({sp['judge_family']}) answers {_g(sp['own'], 3)} vs the others' "
                 f"{_g(sp['others'], 3)} ({len(sp['own_models'])} vs {len(sp['other_models'])} models, "
                 f"{'both orders' if sp['both_orders'] else 'one order'}; confounded with the families' quality)")]
    if sp and sp.get("judge_family"):
        return [("self-preference", sp["note"])]
    return []


def card_rows(card: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, text) rows of one judge's card, in the order shown (terminal and report)."""
    rows: list[tuple[str, str]] = []
    nbh = card.get("neighbourhood")
    if nbh:
        rows.append(("neighbour relation", f"{'all items' if nbh.get('kind') == 'all-items' else 'Hamming-' + str(nbh.get('k', 1))}"
                     f" ({nbh.get('view')} view) — {nbh.get('reading')}"))
    if str(card.get("verdict_rule", "")).startswith("side"):
        rows.append(("verdict", "continuous scores: a verdict is the side of 0.5 a score falls on, so a flip is a "
                     "change of the preferred side (to or from exactly 0.5 included)"))
    gens = card.get("generators") or {}
    first_game = (card.get("position_preference") or {}).get("model_first_in_game")
    for g, f in gens.items():
        label = "rerun flip rate" if g == "rerun" else f"flip rate ({g})"
        rows.append((label, _pct(f["flip_rate"]) + (f"; {f['missing']} pair(s) with a side missing, left out"
                                                    if f.get("missing") else "")))
        if f.get("strict_reversal") is not None:
            rows.append((f"strict reversal ({g})", _pct(f["strict_reversal"])))
        rows.append((f"mean signed shift ({g})", _shift_text(g, f.get("mean_shift"), first_game)))
    pos = card.get("position_preference")
    if pos is not None:
        rows.append(("prefers the first-shown answer", pos.get("note") or (
            _pct(pos) + f" of decisive verdicts, both orders; {pos['ties']} tie(s); 50% = position-consistent")))
    rows.extend(_self_preference_rows(card.get("self_preference")))
    if gens:
        rows.append(("Δ* (RMS change, every neighbour)", ", ".join(f"{g} {_g(f['delta_star'], 4)}" for g, f in gens.items())))
    br = card.get("bias_radius")
    if br and br.get("curve"):
        curve = ", ".join(f"δ={_g(p['delta'])}: {_g(p['radius'])}" for p in br["curve"])
        whole = ""
        if br.get("range_max") is not None and br.get("radius") is not None and br["radius"] >= br["range_max"]:
            whole = (f" = the largest change the score range allows ({_g(br['range_max'], 4)}): more than δ of the "
                     "neighbours may move the scores by the whole range, as far as the data show")
        rows.append((f"bias radius at δ = {_g(br['delta'])}", f"{_g(br['radius'], 4)}{whole}  (over δ: {curve})"))
    agree = (card.get("human_agreement") or {}).get("agreement") or {}
    if agree.get("accuracy") is not None:  # biasbound.human: the judge against the human labels
        kappa = "" if agree.get("cohen_kappa") is None else f"; Cohen's κ {_g(agree['cohen_kappa'], 3)}"
        share = {"value": agree["accuracy"], "lo": agree["accuracy_lo"], "hi": agree["accuracy_hi"], "n": agree["n"]}
        rows.append(("agreement with humans", f"{_pct(share)} of the labelled judgments agree{kappa}"))
    wd = card.get("what_the_data_add")
    if wd:
        ratio = "" if wd["alpha_ratio"] is None else f" ({wd['alpha_ratio']:.3g}×)"
        vr = "" if wd["violation_ratio"] is None else f" ({wd['violation_ratio']:.3g}× lower from the data)"
        rows.append(("what the data add", f"α {_g(wd['alpha_data'], 4)} from the data vs {_g(wd['alpha_range_alone'], 4)} "
                     f"from the score range alone at σ = {_g(wd['sigma'], 4)}{ratio}; violation probability at the "
                     f"certified point {_g(wd['violation_data'], 3)} from the data vs {_g(wd['violation_range_alone'], 3)} "
                     f"from the range alone{vr}"))
    rk = card.get("ranks")
    if rk and rk.get("pairs"):
        sep = rk["separability"]
        rows.append(("bias-robust separability", f"{100 * sep['bias_robust']:.1f}% of {rk['pairs']} model pairs separated "
                     f"under the all-items bias, question resampling and the release noise (bootstrap alone, as "
                     f"Arena-Hard reports: {100 * sep['bootstrap']:.1f}%)"))
        for g, pairs in rk["reversed_by"].items():
            shown = "; ".join(f"{x} > {y}" for x, y in pairs[:6]) + (f"; … {len(pairs) - 6} more" if len(pairs) > 6 else "")
            sep_n = (rk.get("reversed_bootstrap_separated") or {}).get(g)
            extra = f" ({sep_n} of them separated by the bootstrap)" if sep_n else ""
            ties = (rk.get("tied_count") or {}).get(g, len((rk.get("tied_by") or {}).get(g) or []))
            tied = f" (and {ties} pair(s) tied, not reversed)" if ties else ""
            n_rev = (rk.get("reversed_count") or {}).get(g, len(pairs))
            if n_rev > len(pairs):  # a capped list: its shown pairs are the largest margins, the rest counted
                shown = ("largest original margins: " + "; ".join(f"{x} > {y}" for x, y in pairs[:6])
                         + f"; … {n_rev - min(len(pairs), 6)} more")
            rows.append((f"pairs reversed by {g} on every item", f"{n_rev}{extra}" + (f": {shown}" if pairs else "")
                         + tied))
    c = card.get("cost") or {}
    if c.get("known"):
        money = "money unknown (no prices)" if c.get("money_per_1000") is None else f"${c['money_per_1000']:.4g}"
        batch = f" ({c['batch_calls']} of {c.get('calls')} calls at batch prices)" if c.get("batch_calls") else ""
        rows.append(("cost per 1,000 judgments", f"{_g(c.get('calls_per_1000'), 4)} calls, {_g(c.get('tokens_per_1000'), 4)} "
                     f"tokens, {money}{batch}"))
    else:
        rows.append(("cost per 1,000 judgments", c.get("note") or "unknown"))
    return rows


#: The columns of the judges-side-by-side table: (figure, header, shown as a percentage).
PANEL_COLUMNS = (("flip_rate", "flip rate (swap, else first neighbour)", True),
                 ("position_preference", "prefers first shown", True), ("strict_reversal", "strict reversal", True),
                 ("rerun_flip_rate", "rerun flip rate", True),
                 ("delta_star", "Δ*", False), ("bias_radius", "bias radius", False), ("alpha", "α", False),
                 ("bias_robust_separability", "bias-robust separability", True),
                 ("cost_per_1000", "$ per 1,000", False), ("human_accuracy", "accuracy vs humans", True))


def panel_rows(card: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per judge: the figures that compare judges side by side."""
    out = []
    for name, c in (card.get("judges") or {}).items():
        row = {"judge": name}
        for fig, _, _ in PANEL_COLUMNS:
            try:
                row[fig] = card_figure(c, fig).get("value")
            except InputError:
                row[fig] = None
        out.append(row)
    return out


# ----------------------------------------------------------------------------------------------------
# figures by name, thresholds, comparison
# ----------------------------------------------------------------------------------------------------
#: Figure names accepted by ``--fail-if`` and :func:`biasbound.testing.assert_judge_card`
#: (``NAME`` or ``NAME:GENERATOR``; the generator defaults to ``swap`` when the data hold swaps).
FIGURES = ("flip_rate", "strict_reversal", "mean_shift", "delta_star", "rerun_flip_rate", "position_preference",
           "bias_radius", "alpha", "bias_robust_separability", "bootstrap_separability", "cost_per_1000",
           "human_accuracy")


def _default_gen(card: Mapping[str, Any]) -> str | None:
    gens = list(card.get("generators") or {})
    return "swap" if "swap" in gens else (gens[0] if gens else None)


def card_figure(card: Mapping[str, Any], name: str) -> dict[str, Any]:
    """One figure of a judge's card as ``{"value", "lo", "hi"}`` (lo/hi None when it has no interval)."""
    base, _, gen = name.partition(":")
    gens = card.get("generators") or {}
    if base in ("flip_rate", "strict_reversal", "mean_shift", "delta_star", "rerun_flip_rate"):
        g = "rerun" if base == "rerun_flip_rate" else (gen or _default_gen(card))
        key = "flip_rate" if base == "rerun_flip_rate" else base
        if g not in gens:
            raise InputError(f"The figure {name!r} needs {g or 'a neighbour'!r} neighbours; the card has "
                             f"{', '.join(gens) or 'none'}.")
        v = gens[g].get(key)
        if isinstance(v, Mapping):
            return {"value": v.get("value"), "lo": v.get("lo"), "hi": v.get("hi")}
        return {"value": v, "lo": None, "hi": None}
    if base == "position_preference":
        p = card.get("position_preference") or {}
        return {"value": p.get("value"), "lo": p.get("lo"), "hi": p.get("hi")}
    if base == "bias_radius":
        return {"value": (card.get("bias_radius") or {}).get("radius"), "lo": None, "hi": None}
    if base == "alpha":
        return {"value": card.get("alpha"), "lo": None, "hi": None}
    if base in ("bias_robust_separability", "bootstrap_separability"):
        sep = ((card.get("ranks") or {}).get("separability") or {})
        return {"value": sep.get("bias_robust" if base.startswith("bias") else "bootstrap"), "lo": None, "hi": None}
    if base == "cost_per_1000":
        return {"value": (card.get("cost") or {}).get("money_per_1000"), "lo": None, "hi": None}
    if base == "human_accuracy":  # the agreement with human labels (biasbound.human; certify with labels)
        a = (card.get("human_agreement") or {}).get("agreement") or {}
        if a.get("accuracy") is None:
            raise InputError(f"The figure {name!r} needs human labels on a categorical scale (certify --human-labels).")
        return {"value": a["accuracy"], "lo": a.get("accuracy_lo"), "hi": a.get("accuracy_hi")}
    raise InputError(f"Unknown judge-card figure {name!r}; the figures are {', '.join(FIGURES)} "
                     "(NAME or NAME:GENERATOR, e.g. flip_rate:rerun).")


_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}
_THRESHOLD = re.compile(r"^\s*([A-Za-z_]+(?::[A-Za-z0-9_.:-]+)?)\s*(>=|<=|>|<)\s*([-+0-9.eE]+|inf)\s*$")


def parse_threshold(text: str) -> tuple[str, str, float]:
    """``"flip_rate>0.1"`` → ``("flip_rate", ">", 0.1)``: the condition that FAILS the check."""
    m = _THRESHOLD.match(str(text))
    if not m and re.fullmatch(r"\s*[A-Za-z_]+(?::[A-Za-z0-9_.:-]+)?\s*", str(text)):  # `--fail-if flip_rate>0.1` unquoted
        raise InputError(f"The '--fail-if' option of compare got {str(text).strip()!r} with no operator and value: the shell "
                         "read the unquoted '>' (or '<') as a redirection (and wrote or read a file named like the "
                         "value, e.g. 0.1; delete it); quote the condition, e.g. --fail-if 'flip_rate>0.1'.")
    if not m:
        raise InputError(f"The '--fail-if' option of compare must read FIGURE>VALUE (or <, >=, <=), e.g. flip_rate>0.1; "
                         f"figures: {', '.join(FIGURES)}. Got {text!r} instead.")
    name, op, raw = m.groups()
    if name.partition(":")[0] not in FIGURES:
        raise InputError(f"The '--fail-if' option of compare names an unknown figure {name!r}; the figures are "
                         f"{', '.join(FIGURES)}. Got {text!r} instead.")
    try:
        value = float(raw)
    except ValueError:
        raise InputError(f"The '--fail-if' option of compare needs a number after {op}. Got {text!r} instead.") from None
    return name, op, value


def check_card(card: Mapping[str, Any], conditions: Sequence[str]) -> list[str]:
    """Evaluate ``--fail-if`` conditions on every judge of a card; one sentence per condition that holds.

    A figure the card lacks (e.g. no reruns) is an :class:`InputError`; a figure without a value (no
    decisive verdict) fails the check, since nothing shows it is within the bound.
    """
    failed = []
    parsed = [parse_threshold(c) for c in conditions]
    for judge, c in (card.get("judges") or {}).items():
        for name, op, bound in parsed:
            v = card_figure(c, name)["value"]
            if v is None or _OPS[op](float(v), bound):
                failed.append(f"judge {judge}: {name} = {_g(v, 4)} {op} {bound:g}" if v is not None
                              else f"judge {judge}: {name} has no value (nothing shows it is within {op} {bound:g})")
    return failed


def moved_figures(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Figures with an interval whose OLD and NEW intervals are disjoint, per judge present in both cards."""
    out = []
    for judge, c_new in (new.get("judges") or {}).items():
        c_old = (old.get("judges") or {}).get(judge)
        if c_old is None:
            continue
        names = [f"{f}:{g}" for g in (c_new.get("generators") or {}) if g in (c_old.get("generators") or {})
                 for f in ("flip_rate", "strict_reversal", "mean_shift")] + ["position_preference"]
        for name in names:
            try:
                a, b = card_figure(c_old, name), card_figure(c_new, name)
            except InputError:
                continue
            if None in (a["lo"], a["hi"], b["lo"], b["hi"]):
                continue
            if b["lo"] > a["hi"] or b["hi"] < a["lo"]:
                out.append({"judge": judge, "figure": name, "old": a, "new": b})
    return out


def read_card(path: Any) -> dict[str, Any]:
    """The judge card of a ``certify`` output folder (its ``summary.json``), of a ``summary.json``, or of a JSON
    file holding a card; an :class:`InputError` naming the file otherwise."""
    from pathlib import Path

    from biasbound._exceptions import DataFormatError

    p = Path(path)
    f = p / "summary.json" if p.is_dir() else p
    if not f.is_file():
        raise InputError(f"{p} is not a certify output folder (no summary.json) nor a summary.json file.")
    from biasbound._untrusted import load_json

    data = load_json(f)  # a regular file, bounded, no duplicate key: one sentence otherwise
    card = data.get("judge_card") if isinstance(data, dict) and "judge_card" in data else data
    if not isinstance(card, dict) or not isinstance(card.get("judges"), dict):
        raise DataFormatError("holds no judge card (a 'judge_card' key with 'judges'); re-run certify with this "
                              "version of biasbound.", path=str(f), line=1)
    return card

"""AlpacaEval 2's length-controlled (LC) win rate, by AlpacaEval's own rule.

AlpacaEval 2 puts the LC win rate at the top of its leaderboard
(``alpaca_eval/metrics/glm_winrate.py``, ``get_length_controlled_winrate``, GLM
``length_controlled_v1``). For one annotator and one model it

1. reads each annotation record ``i`` (its position in the model's annotations, AlpacaEval's
   ``index``): ``preference`` mapped to ``[0, 1]`` (``p - 1``, the draw code 0 as 0.5), and
   ``std_delta_len = (len(output_1) - len(output_2)) / sd`` (``sd`` the sample standard deviation
   over the model's records);
2. looks the instruction difficulty up by that position in ``df_gamed.csv``
   (``df_gamed.drop_duplicates("index")["instruction_difficulty"]``, by row label, as AlpacaEval does);
3. fits ``preference ~ tanh(std_delta_len) + instruction_difficulty + not_gamed_baseline - 1`` on the
   model's rows (weight 1) and the gamed baselines' rows of ``df_gamed.csv`` (weight 0.2 / 2): a
   logistic regression on continuous targets, each row entered twice (label 1 weighted ``p``, label 0
   weighted ``1 - p``), chosen by scikit-learn's ``LogisticRegressionCV`` (L1, liblinear,
   ``random_state=123``, no intercept, ten ``Cs``, five ``GroupKFold`` folds over the records,
   AlpacaEval's weighted log loss);
4. predicts every record's preference at zero length difference (and ``not_gamed_baseline`` = 1);
   the LC win rate is 100 × their mean (50 for the baseline itself).

``df_gamed.csv`` is the one input an annotations file does not hold: alpaca_eval downloads it at run
time from the Hugging Face dataset ``tatsu-lab/alpaca_eval``. It is taken from, in this order, a
``df_gamed.csv`` in a folder read (beside the annotations), then alpaca_eval's own download in the
Hugging Face cache. Without it the LC column stays empty and the reader says why.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError

__all__ = ["GAMED_FILE", "LC_COLUMN", "LC_RULE", "GamedBaselines", "add_length_controlled", "find_gamed",
           "length_controlled_win_rate", "read_gamed"]

GAMED_FILE = "df_gamed.csv"
HUB_DATASET = "tatsu-lab/alpaca_eval"
LC_COLUMN = "alpaca_eval_length_controlled_win_rate"
LC_RULE = ("alpaca_eval_length_controlled_win_rate: AlpacaEval 2 get_length_controlled_winrate (GLM length_controlled_v1): "
           "per annotator and model, logistic GLM preference ~ tanh(std_delta_len) + instruction_difficulty + "
           "not_gamed_baseline - 1 on the model's records and the gamed baselines of df_gamed.csv (weight 0.1), "
           "scikit-learn LogisticRegressionCV (L1, liblinear, 5 group folds, AlpacaEval's log loss), "
           "100 x mean prediction at zero length difference; the original run only")

_REQUIRED = ("index", "preference", "std_delta_len", "instruction_difficulty", "not_gamed_baseline")
_LAMBDA = 0.2  # regularize_to_baseline_lambda of length_controlled_v1
_N_SPLITS = 5


@dataclass(frozen=True)
class GamedBaselines:
    """AlpacaEval's ``df_gamed.csv``: the gamed baselines' GLM rows and each instruction's difficulty.

    ``rows`` holds the five GLM columns (``not_gamed_baseline`` as bool), in file order; ``difficulty``
    is AlpacaEval's lookup table (``drop_duplicates("index")["instruction_difficulty"]`` keyed by the
    row label); ``source`` says where the file came from.
    """

    rows: pd.DataFrame
    difficulty: pd.Series
    source: str


def _hub_caches() -> list[Path]:
    """The Hugging Face hub cache folders huggingface_hub would use, most specific first."""
    out: list[Path] = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            out.append(Path(os.environ[var]))
    if os.environ.get("HF_HOME"):
        out.append(Path(os.environ["HF_HOME"]) / "hub")
    if not out:
        xdg = os.environ.get("XDG_CACHE_HOME")
        out.append((Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    return out


def _from_hub_cache() -> Path | None:
    """``df_gamed.csv`` as alpaca_eval's ``hf_hub_download`` stored it (the revision ``refs/main`` names first)."""
    for cache in _hub_caches():
        repo = cache / ("datasets--" + HUB_DATASET.replace("/", "--"))
        snaps = repo / "snapshots"
        if not snaps.is_dir():
            continue
        ref = repo / "refs" / "main"
        if ref.is_file():
            head = snaps / ref.read_text(encoding="utf-8").strip() / GAMED_FILE
            if head.is_file():
                return head
        found = sorted((p for p in snaps.glob(f"*/{GAMED_FILE}") if p.is_file()), key=lambda p: p.stat().st_mtime)
        if found:
            return found[-1]
    return None


def find_gamed(folders: Iterable[Path]) -> tuple[Path, str] | None:
    """Where ``df_gamed.csv`` is: ``(path, a phrase naming its source)``, or None.

    Looks in each of ``folders`` (the folders the user gave, beside the annotations), then in the
    Hugging Face cache where alpaca_eval's own run downloaded it.
    """
    for folder in folders:
        p = folder / GAMED_FILE
        if p.is_file():
            return p, f"the user's {GAMED_FILE} beside the annotations ({p})"
    hub = _from_hub_cache()
    if hub is not None:
        return hub, f"alpaca_eval's own download of {GAMED_FILE} in the Hugging Face cache ({hub})"
    return None


def read_gamed(path: str | Path, source: str | None = None) -> GamedBaselines:
    """Read AlpacaEval's ``df_gamed.csv``.

    Raises
    ------
    DataFormatError
        Naming the file (and line) when it is not a CSV with the GLM's columns ``index``,
        ``preference``, ``std_delta_len``, ``instruction_difficulty``, ``not_gamed_baseline``, or holds a
        value AlpacaEval's GLM cannot use.
    """
    p = Path(path)
    try:
        frame = pd.read_csv(p)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataFormatError(f"is not a readable CSV ({type(exc).__name__}); AlpacaEval's {GAMED_FILE} is one.",
                              path=str(p)) from None
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise DataFormatError(f"lacks the column(s) {', '.join(missing)} of AlpacaEval's {GAMED_FILE}.", path=str(p))
    if frame.empty:
        raise DataFormatError(f"holds no row; AlpacaEval's {GAMED_FILE} holds the gamed baselines' annotations.",
                              path=str(p))
    flags = frame["not_gamed_baseline"]
    if flags.dtype != bool:
        bad = np.flatnonzero(~flags.astype(str).isin(["True", "False"]).to_numpy())
        raise DataFormatError(f"not_gamed_baseline must be True or False (column read as {flags.dtype}).", path=str(p),
                              line=int(bad[0]) + 2 if len(bad) else None)
    for col in ("index", "std_delta_len", "instruction_difficulty"):
        vals = pd.to_numeric(frame[col], errors="coerce")
        bad_rows = np.flatnonzero(~np.isfinite(vals.to_numpy(dtype=float)))
        if len(bad_rows):
            raise DataFormatError(f"{col} must be a finite number.", path=str(p), line=int(bad_rows[0]) + 2)
        frame[col] = vals
    pref = pd.to_numeric(frame["preference"], errors="coerce")
    bad_rows = np.flatnonzero(((pref < 0) | (pref > 1) | (pref.isna() & frame["preference"].notna())).to_numpy())
    if len(bad_rows):
        raise DataFormatError("preference must be in [0, 1] (AlpacaEval's p - 1) or empty.", path=str(p),
                              line=int(bad_rows[0]) + 2)
    frame["preference"] = pref
    rows = frame[list(_REQUIRED)].copy()
    difficulty = rows.drop_duplicates("index")["instruction_difficulty"]
    return GamedBaselines(rows=rows, difficulty=difficulty, source=source or str(p))


def _logloss_continuous(y_true: np.ndarray, y_pred: np.ndarray, true_prob: np.ndarray,
                        true_sample_weight: np.ndarray | None = None) -> float:
    """AlpacaEval's CV score (``glm_winrate.logloss_continuous``): the mean of the weighted log loss of
    continuous targets, predictions clipped to [1e-15, 1 - 1e-15]."""
    y = np.where(np.asarray(y_true) == 1, true_prob, 1 - np.asarray(true_prob))
    p = np.clip(np.asarray(y_pred, dtype=float), 1e-15, 1 - 1e-15)
    loss = y * np.log(p) + (1 - y) * np.log(1 - p)
    if true_sample_weight is not None:
        loss = loss * np.asarray(true_sample_weight)
    return float(-np.mean(loss))


def _fit_predict(x_train: np.ndarray, y: np.ndarray, weight: np.ndarray, x_test: np.ndarray) -> np.ndarray:
    """AlpacaEval's ``fit_LogisticRegressionCV(..., is_ytrue_proba=True, n_splits=5)`` then ``predict_proba``."""
    import sklearn
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GroupKFold

    n = len(y)
    x = np.vstack([x_train, x_train])
    label = np.r_[np.ones(n), np.zeros(n)]
    true_prob = np.r_[y, 1.0 - y]
    true_weight = np.r_[weight, weight]
    groups = np.r_[np.arange(n), np.arange(n)]
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        # scikit-learn >= 1.8 deprecates penalty= in favour of l1_ratios; AlpacaEval passes penalty="l1"
        warnings.simplefilter("ignore", FutureWarning)
        scorer = make_scorer(_logloss_continuous, response_method="predict_proba", greater_is_better=False)
        scorer = scorer.set_score_request(true_sample_weight=True, true_prob=True)
        model = LogisticRegressionCV(cv=GroupKFold(n_splits=_N_SPLITS), scoring=scorer, random_state=123, dual=False,
                                     penalty="l1", solver="liblinear", n_jobs=None, fit_intercept=False)
        model.set_fit_request(sample_weight=True)
        model.fit(x, label, sample_weight=true_prob * true_weight, groups=groups, true_sample_weight=true_weight,
                  true_prob=true_prob)
        return np.asarray(model.predict_proba(x_test)[:, 1], dtype=float)


def length_controlled_win_rate(len_1: Sequence[float], len_2: Sequence[float], preference: Sequence[Any],
                               gamed: GamedBaselines, *, is_baseline: bool = False) -> float:
    """AlpacaEval 2's LC win rate of one (annotator, model) from its annotation records, in their order.

    Parameters
    ----------
    len_1, len_2:
        ``len(output_1)`` (the baseline's output) and ``len(output_2)`` (the model's), per record.
    preference:
        AlpacaEval's preference per record (in [1, 2], 0 for a draw, None/NaN for none).
    gamed:
        :func:`read_gamed` of ``df_gamed.csv``.
    is_baseline:
        The model is the baseline itself: 50 by construction, as in AlpacaEval.

    Returns
    -------
    float
        The LC win rate in percent.

    Raises
    ------
    ValueError
        When the records cannot be fed to the GLM (fewer than two, equal length differences, a record
        position without an instruction difficulty in ``df_gamed.csv``, no preference at all).
    """
    if is_baseline:
        return 50.0
    l1 = np.asarray(len_1, dtype=float)
    l2 = np.asarray(len_2, dtype=float)
    pref = pd.Series(preference, dtype=float).replace({0.0: 1.5}).to_numpy() - 1.0
    n = len(pref)
    if not (len(l1) == len(l2) == n):
        raise ValueError("len_1, len_2 and preference must have one value per record.")
    if n < 2 or not np.isfinite(l1).all() or not np.isfinite(l2).all():
        raise ValueError("the GLM needs at least two records, each with both output texts.")
    delta = l1 - l2
    sd = float(np.std(delta, ddof=1))
    if not sd > 0:
        raise ValueError("every record has the same length difference, so std_delta_len is undefined.")
    positions = np.arange(n)
    known = positions[np.isin(positions, gamed.difficulty.index.to_numpy())]
    if len(known) < n:
        raise ValueError(f"{GAMED_FILE} holds an instruction difficulty for {len(known)} of the {n} record "
                         "positions (AlpacaEval looks it up by the record's position)")
    difficulty = gamed.difficulty.loc[positions].to_numpy(dtype=float)
    ok = ~np.isnan(pref)
    if not ok.any():
        raise ValueError("no record holds a preference.")
    g = gamed.rows
    g_ok = g["preference"].notna().to_numpy()
    x_model = np.column_stack([np.tanh(delta / sd), difficulty, np.ones(n)])
    x_gamed = np.column_stack([np.tanh(g["std_delta_len"].to_numpy(dtype=float)),
                               g["instruction_difficulty"].to_numpy(dtype=float),
                               g["not_gamed_baseline"].to_numpy(dtype=float)])
    w_gamed = np.where(g["not_gamed_baseline"].to_numpy(dtype=bool), 1.0, _LAMBDA / 2)
    x_train = np.vstack([x_gamed[g_ok], x_model[ok]])
    y_train = np.r_[g["preference"].to_numpy(dtype=float)[g_ok], pref[ok]]
    w_train = np.r_[w_gamed[g_ok], np.ones(int(ok.sum()))]
    x_test = np.column_stack([np.zeros(n), difficulty, np.ones(n)])
    return 100.0 * float(_fit_predict(x_train, y_train, w_train, x_test).mean())


def add_length_controlled(records: pd.DataFrame, folders: Sequence[Path], notes: Any) -> None:
    """Append the ``alpaca_eval_length_controlled_win_rate`` native number to a reader's ``notes``.

    ``records``: one row per annotation record with ``judge``, ``model``, ``variant``, ``generator``,
    ``baseline``, ``source`` (its file), ``position`` (its place in the file), ``len_1``, ``len_2`` and
    ``preference`` (AlpacaEval's raw value). Only the original runs get a number. When
    ``df_gamed.csv`` cannot be found, the notes say why in one sentence and nothing is added.
    """
    from biasbound.data._common import Native

    orig = records[records["variant"] == "original"]
    if orig.empty:
        return
    where = find_gamed(folders)
    if where is None:
        notes.remark(f"{LC_COLUMN} is empty: AlpacaEval's GLM needs its {GAMED_FILE} (each instruction's difficulty and "
                     f"the gamed baselines' annotations, which alpaca_eval downloads from the Hugging Face dataset "
                     f"{HUB_DATASET}); put that file beside the annotations, or run alpaca_eval once so it is in the "
                     "Hugging Face cache")
        return
    gamed = read_gamed(where[0], where[1])
    native = Native(LC_COLUMN, LC_RULE)
    n_instr = int(gamed.rows["index"].nunique())
    for (judge, model), grp in orig.groupby(["judge", "model"], sort=True):
        key = (str(judge), str(model))
        if grp["source"].nunique() > 1:
            notes.remark(f"{LC_COLUMN} of {model!r} ({judge}) is empty: its records come from "
                         f"{grp['source'].nunique()} files, and AlpacaEval's GLM looks instructions up by the position "
                         "of a record in its one annotations file")
            continue
        grp = grp.sort_values("position", kind="stable")
        base = grp["baseline"].dropna()
        is_baseline = bool(len(base)) and str(base.iloc[0]) == str(grp["generator"].iloc[0])
        try:
            native.values[key] = length_controlled_win_rate(grp["len_1"], grp["len_2"], grp["preference"], gamed,
                                                            is_baseline=is_baseline)
        except ValueError as exc:
            notes.remark(f"{LC_COLUMN} of {model!r} ({judge}) is empty: {str(exc).rstrip('.')}")
            continue
        if not is_baseline and len(grp) != n_instr:
            notes.remark(f"{LC_COLUMN} of {model!r} ({judge}): its file holds {len(grp)} records and {GAMED_FILE} "
                         f"{n_instr} instructions; AlpacaEval takes each record's instruction difficulty by its "
                         "position in the file, and so does this number")
    if native.values:
        notes.remark(f"{LC_COLUMN}: instruction difficulty and gamed baselines from {gamed.source}")
        notes.native.append(native)


"""Judgment tables: the loaded-data contract and the generic long-table loader.

A loaded judgment set is a :class:`JudgmentSet`: a ``pandas.DataFrame`` with one row per
judgment (columns :data:`COLUMNS`, plus optional ``factor_<name>`` columns) and a
:class:`LoadReport` that counts everything the loader saw — rows, missing judgments per
model and per source, skipped bad lines with their reasons, the score scale used.

Generic tables (CSV, JSONL, Parquet) are read with pandas and validated with vectorised
operations, so a table of 10^6 rows loads in about a second.
"""

from __future__ import annotations

import csv
import io
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError
from biasbound._validation import arg, check_one_of
from biasbound.data.coded import ColumnCodes, coded_frame, duplicated_keys, is_coded_column, text_categorical
from biasbound.parameters import validate_params

__all__ = [
    "COLUMNS",
    "COMMON_SCALES",
    "JudgmentSet",
    "LoadReport",
    "contract_dtypes",
    "file_format",
    "from_frame",
    "infer_scale",
    "load_llmbar",
    "load_table",
    "read_rows",
]

#: A judgments column holding the human label of each judgment's item, on the normalised scale in the model's view
#: (kept by every reader; read by ``certify`` as the human labels when no labels file is given).
HUMAN_COLUMNS: tuple[str, ...] = ("human",)

#: Columns of every judgment table, in order (``factor_<name>`` columns follow).
COLUMNS: tuple[str, ...] = (
    "judge",
    "model",
    "item_id",
    "variant",
    "rerun",
    "game",
    "score",
    "verdict",
    "source",
    "line",
)

#: Candidate scales for :func:`infer_scale`, in order of preference.
COMMON_SCALES: tuple[tuple[float, float], ...] = (
    (0.0, 1.0),
    (1.0, 5.0),
    (1.0, 7.0),
    (1.0, 10.0),
    (0.0, 10.0),
    (0.0, 100.0),
)

_KEY = ["judge", "model", "item_id", "variant", "rerun", "game"]


@dataclass(frozen=True)
class LoadReport:
    """What a loader saw: counts of rows, missing judgments, skipped bad lines, the scale.

    Attributes
    ----------
    rows:
        Number of judgment rows in the frame (missing judgments included).
    missing:
        Number of rows whose score is NaN (missing game, missing or null verdict, empty cell).
    missing_by_model, missing_by_source:
        ``missing`` split by model and by source file (only non-zero entries).
    skipped:
        One ``(source, line, reason)`` per bad line skipped because ``skip_bad=True``.
    scale:
        The raw score scale ``(lo, hi)`` mapped onto [0, 1].
    scale_inferred:
        True when ``scale`` was inferred from the data rather than given.
    judges, models:
        Sorted names seen.
    items:
        Number of distinct item ids.
    sources:
        The files read, in order.
    """

    rows: int
    missing: int
    missing_by_model: dict[str, int]
    missing_by_source: dict[str, int]
    skipped: tuple[tuple[str, int | None, str], ...]
    scale: tuple[float, float]
    scale_inferred: bool
    judges: tuple[str, ...]
    models: tuple[str, ...]
    items: int
    sources: tuple[str, ...]
    #: judge, model and item names rewritten to Unicode NFC (the same name typed in NFC and NFD is one name)
    unicode_nfc: int = 0

    @property
    def n_skipped(self) -> int:
        """Number of bad lines skipped."""
        return len(self.skipped)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable summary."""
        return {
            "rows": self.rows,
            "missing": self.missing,
            "missing_by_model": dict(self.missing_by_model),
            "missing_by_source": dict(self.missing_by_source),
            "skipped": [list(s) for s in self.skipped],
            "n_skipped": self.n_skipped,
            "scale": list(self.scale),
            "scale_inferred": self.scale_inferred,
            "judges": list(self.judges),
            "models": list(self.models),
            "items": self.items,
            "sources": list(self.sources),
            **({"unicode_nfc": self.unicode_nfc} if self.unicode_nfc else {}),
        }


@dataclass(frozen=True)
class JudgmentSet:
    """A loaded judgment table and the report of its loading.

    Attributes
    ----------
    frame:
        One row per judgment; columns :data:`COLUMNS` then ``factor_<name>`` columns.
    report:
        The :class:`LoadReport`; a compact copy is also in ``frame.attrs["load_report"]``.
    """

    frame: pd.DataFrame
    report: LoadReport = field(repr=False)


# ----------------------------------------------------------------------------------------
# shared helpers (also used by arena_hard.py, neighbors/observed.py, leaderboard.py, pipeline/)


def sorted_codes(values: pd.Series | pd.Index | np.ndarray, narrow: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of the values' text and the sorted distinct texts they index.

    The result equals ``np.unique(np.asarray(values).astype(str), return_inverse=True)``
    (sorted by code point, every value converted with ``str``) but a pandas string column
    is factorised directly (hashing its Arrow data) and only the distinct values are
    converted and sorted, which is ~10x faster on 10^6 rows.

    Parameters
    ----------
    values:
        A column (Series, Index or array) of ids.

    Returns
    -------
    codes, names
        ``codes`` (n,) ``intp`` with ``names[codes]`` equal to the text of each value;
        ``names`` the sorted distinct texts (a numpy ``str`` array).
        With ``narrow``, a coded column's codes keep their categorical dtype (int8/int16/int32: the column's own
        codes, no per-row copy, when every category is present); a caller forming keys from them widens first.
    """
    s = values if isinstance(values, pd.Series) else pd.Series(values)
    if is_coded_column(s) and not s.hasnans:  # a coded column: its codes, renumbered over the texts present
        codes = s.array.codes
        used = np.bincount(codes, minlength=len(s.cat.categories)) > 0
        if used.all():
            return codes if narrow else codes.astype(np.intp), np.asarray(s.cat.categories, dtype=str)
        present, rank = compact_codes(codes, len(s.cat.categories))
        return rank.astype(codes.dtype if narrow else np.intp, copy=False), np.asarray(s.cat.categories, dtype=str)[present]
    if not isinstance(s.dtype, pd.StringDtype) or s.hasnans:
        s = pd.Series(as_texts(s))  # the np.unique conversion: every value through str
    codes, uniques = pd.factorize(s, sort=False)
    names = np.asarray(uniques, dtype=str)
    order = np.argsort(names, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order), dtype=np.intp)
    return rank[codes], names[order]


def as_texts(values: pd.Series | pd.Index | np.ndarray) -> np.ndarray:
    """Every value through ``str`` (a missing one is ``"nan"``), as ``np.asarray(values).astype(str)`` converts.

    Not ``Series.to_numpy(dtype=str)``: for a pandas string column holding a missing value (pandas 3.1) it cuts
    every text to its first character (``["model-4", "model-17", None]`` -> ``["m", "m", "n"]``)."""
    return np.asarray(values.to_numpy(dtype=object) if hasattr(values, "to_numpy") else values, dtype=object).astype(str)


def compact_codes(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for codes in ``[0, size)``, in O(n + size).

    Returns the distinct codes (sorted) and each entry's index into them.
    """
    seen = np.bincount(codes, minlength=size) > 0
    position = np.cumsum(seen) - 1
    return np.flatnonzero(seen), position[codes]


def _missing_coded(index: pd.Index) -> pd.Series:
    """A coded column of missing texts (no category): one byte per row."""
    return pd.Series(pd.Categorical.from_codes(np.full(len(index), -1, dtype=np.int8), categories=pd.Index([], dtype="str")),
                     index=index)


def _const_coded(value: str, index: pd.Index) -> pd.Series:
    """A coded column holding one text: one byte per row."""
    return pd.Series(pd.Categorical.from_codes(np.zeros(len(index), dtype=np.int8),
                                               categories=pd.Index([value], dtype="str")), index=index)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (messages show 0, never np.int64(0))."""
    return value.item() if isinstance(value, np.generic) else value


def check_duplicates(frame: pd.DataFrame, skip_bad: bool, skipped: list[tuple[str, int | None, str]]) -> pd.DataFrame:
    """Raise on duplicated judgment keys (naming both lines) or drop the later copies; the frame comes back coded
    (:func:`biasbound.data.coded.coded_frame`), the keys compared on its integer codes."""
    frame = coded_frame(frame)
    dup = duplicated_keys(ColumnCodes(frame), keep="first")
    if not dup.any():
        return frame
    if not skip_bad:
        later = frame[dup].iloc[0]
        same = frame.iloc[int(np.flatnonzero(_same_key(frame, later))[0])]
        key = ", ".join(f"{k}={_plain(later[k])!r}" for k in _KEY)
        raise DataFormatError(
            f"duplicated judgment ({key}) also at {same['source']}:{int(same['line'])}; "
            f"give each judgment once or {arg('pass skip_bad=True', 'pass --skip-bad')} to keep the first.",
            path=str(later["source"]),
            line=int(later["line"]),
        )
    bad = frame[dup]
    for src, ln in zip(bad["source"].astype(str).tolist(), bad["line"].tolist()):
        skipped.append((str(src), int(ln), "duplicated judgment key (first copy kept)"))
    return frame[~dup]


def _same_key(frame: pd.DataFrame, row: pd.Series) -> np.ndarray:
    """The rows whose judgment key is ``row``'s."""
    same = np.ones(len(frame), dtype=bool)
    for k in _KEY:
        same &= (frame[k] == row[k]).to_numpy(dtype=bool)
    return same


def _normalized(col: pd.Series) -> tuple[pd.Series, int]:
    """A coded id column with its texts in Unicode NFC (equal after NFC: one text) and how many texts changed."""
    cats = np.asarray(col.cat.categories, dtype=object)
    if all(str(x).isascii() for x in cats):
        return col, 0
    norm = np.array([unicodedata.normalize("NFC", str(x)) for x in cats], dtype=object)
    changed = norm != cats
    if not changed.any():
        return col, 0
    return _recoded(col.array.codes, norm, col.index), int(changed.sum())


def _recoded(codes: np.ndarray, texts: np.ndarray, index: pd.Index) -> pd.Series:
    """The coded column of rows ``codes`` (-1 missing) into ``texts`` (possibly repeated, unsorted)."""
    names, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
    dtype = np.int8 if len(names) < 2**7 else np.int16 if len(names) < 2**15 else np.int32
    inverse = np.append(inverse.reshape(-1), -1).astype(dtype)  # a missing row (code -1) takes the last entry, -1
    new = inverse[codes]
    return pd.Series(pd.Categorical.from_codes(new.astype(dtype), categories=pd.Index(names, dtype="str")), index=index)


def _id_texts(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, values)`` of a column: each row's index into its distinct values (-1 for a missing one); a
    categorical's own codes and categories, else one factorisation."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.array.codes, np.asarray(col.cat.categories, dtype=object)
    try:
        codes, uniques = pd.factorize(col, sort=False, use_na_sentinel=True)
    except TypeError:  # an unhashable value (a JSON list or object): by its text, as every id is compared
        codes, uniques = pd.factorize(col.map(_hashable), sort=False, use_na_sentinel=True)
    return codes, np.asarray(uniques, dtype=object)


def _hashable(value: Any) -> Any:
    """``value``, or its text when it cannot be hashed (a list or dict read from JSON)."""
    try:
        hash(value)
    except TypeError:
        return str(value)
    return value


def contract_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """A judgment table's columns in the dtypes every reader hands on: the id columns coded (categories the texts
    some row holds), ``rerun``/``game`` the narrowest signed integer type holding their values (int8 for games
    0-2 and reruns below 128: one byte a row), ``score`` float64, ``verdict`` coded as the ids are (texts as
    categories, a missing verdict missing: one byte a row, not a string offset), ``line`` int32 (int64 past 2^31).
    The one place the readers (this module's and the Spark reader) set them."""
    frame = coded_frame(frame)
    lines = pd.to_numeric(frame["line"]) if len(frame) else frame["line"]
    narrow = len(frame) == 0 or (lines.min() >= -(2**31) and lines.max() < 2**31)
    frame = frame.astype({"rerun": "int64", "game": "int64", "score": "float64",
                          "line": "int32" if narrow else "int64"})  # a line number: 4 bytes a row
    frame = frame.astype({c: _int_dtype(frame[c].to_numpy()) for c in ("rerun", "game")})
    frame["verdict"] = _coded_verdict(frame["verdict"])
    for c in ("judge", "model", "item_id", "variant", "source"):  # the categories: the texts some row holds
        frame[c] = _drop_unused(frame[c])
    return frame


def _coded_verdict(col: pd.Series) -> pd.Series:
    """The verdict column coded: the texts ``astype("str")`` gives (a list or a number as its text, a missing
    verdict missing) as the categories, in pandas strings."""
    verdict = text_categorical(col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("str"))
    if verdict.cat.categories.dtype != "str":  # texts read as Python objects: the same texts, as pandas strings
        verdict = pd.Series(pd.Categorical.from_codes(verdict.array.codes, categories=pd.Index(verdict.cat.categories, dtype="str")),
                            index=col.index)
    return verdict


def _int_dtype(values: np.ndarray) -> str:
    """The narrowest signed integer type holding every one of the (int64) ``values``."""
    low, high = (int(values.min()), int(values.max())) if values.size else (0, 0)
    return next(t for t in ("int8", "int16", "int32", "int64") if np.iinfo(t).min <= low and high <= np.iinfo(t).max)


def _drop_unused(col: pd.Series) -> pd.Series:
    """A coded column without the categories no row holds (O(rows + categories), no sort of the rows)."""
    codes = col.array.codes
    used = np.bincount(codes[codes >= 0], minlength=len(col.cat.categories)) > 0
    if used.all():
        return col
    position = np.cumsum(used) - 1
    new = np.where(codes >= 0, position[np.maximum(codes, 0)], -1).astype(codes.dtype)
    return pd.Series(pd.Categorical.from_codes(new, categories=col.cat.categories[used]), index=col.index,
                     name=col.name)


def finish_table(
    frame: pd.DataFrame,
    *,
    skipped: list[tuple[str, int | None, str]],
    scale: tuple[float, float],
    scale_inferred: bool,
    sources: Sequence[str],
) -> JudgmentSet:
    """Put columns in contract order, set dtypes, count missing values, build the report."""
    factor_cols = sorted(c for c in frame.columns if c.startswith("factor_"))
    label_cols = [c for c in HUMAN_COLUMNS if c in frame.columns]  # human labels ride along (biasbound.human)
    frame = contract_dtypes(frame[list(COLUMNS) + factor_cols + label_cols].reset_index(drop=True))
    for c in factor_cols + label_cols:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype("float64")
    nfc = 0
    for c in ("judge", "model", "item_id"):  # one spelling per name: Unicode NFC (é typed as e + ◌́ is é)
        frame[c], changed = _normalized(frame[c])
        nfc += changed
    miss = frame["score"].isna()
    by_model = frame.loc[miss, "model"].astype("str").value_counts()
    by_source = frame.loc[miss, "source"].astype("str").value_counts()
    report = LoadReport(
        rows=int(len(frame)),
        missing=int(miss.sum()),
        missing_by_model={str(k): int(v) for k, v in by_model.items()},
        missing_by_source={str(k): int(v) for k, v in by_source.items()},
        skipped=tuple(skipped),
        scale=(float(scale[0]), float(scale[1])),
        scale_inferred=bool(scale_inferred),
        judges=tuple(str(x) for x in frame["judge"].cat.categories),
        models=tuple(str(x) for x in frame["model"].cat.categories),
        items=len(frame["item_id"].cat.categories),
        sources=tuple(str(s) for s in sources),
        unicode_nfc=nfc,
    )
    frame.attrs["load_report"] = {
        "rows": report.rows,
        "missing": report.missing,
        "n_skipped": report.n_skipped,
        "scale": list(report.scale),
        "scale_inferred": report.scale_inferred,
    }
    return JudgmentSet(frame=frame, report=report)


# ----------------------------------------------------------------------------------------
# scale


def _outliers_allowed(n: int) -> int:
    """How many scores may lie outside an inferred scale (each then an error naming its line): 1% of
    at least 20 scores. Fewer scores cannot outvote one odd value, so the user is asked for the scale."""
    return n // 100 if n >= 100 else (1 if n >= 20 else 0)


def infer_scale(scores: Any, counts: Any = None) -> tuple[float, float]:
    """Infer the raw score scale from observed scores, or ask for it when the data do not say.

    Parameters
    ----------
    scores:
        Observed raw scores (NaN ignored).
    counts:
        How many times each of ``scores`` was observed (default: once each); the distinct scores of a large table
        and their counts give the scale the whole table gives.

    Returns
    -------
    (lo, hi):
        One of :data:`COMMON_SCALES`:

        * ``[0, 1]`` when the scores lie in [0, 1] and are not all equal (preferences,
          probabilities, binary verdicts);
        * otherwise the common scale both of whose ends the scores reach, provided no wider
          common scale with the same bottom holds them too: ``[1, 10]`` for scores running
          from 1 to 10, but scores from 1 to 7 are asked about — a 1–10 judge that never
          gave 8–10 writes the same table as a 1–7 judge (likewise 1–5, and 0–10 vs 0–100).
          A scale is never guessed from a part of it.

        Up to 1% of the scores (one of 20–199) may lie outside the scale the others
        determine; they are NOT a reason to widen it: the loader reports each as a bad row
        naming its line (or skips and counts it with ``skip_bad``).

    Raises
    ------
    InputError
        When there is no finite score, or the scores fit no common scale in this way
        (e.g. a 1–10 judge that only said 2–4 or 1–7, all scores equal, values outside every
        common scale): give the scale explicitly.

    Notes
    -----
    The scale is never stretched to the observed range: one score of 1.2 in a [0, 1]
    table would otherwise divide every other score by 10. The scale used is reported in
    the load report, the certificate scope and the terminal.
    """
    return _infer_scale(scores, counts)[0]


def _infer_scale(scores: Any, counts: Any = None) -> tuple[tuple[float, float], int]:
    """:func:`infer_scale` and the number of scores outside the scale it returns; ``counts``: how many times each
    score occurs (the Spark reader collects the distinct scores only)."""
    arr = np.asarray(scores, dtype=float)
    weight = np.ones(arr.size, dtype=np.int64) if counts is None else np.asarray(counts, dtype=np.int64)
    arr, weight = arr[np.isfinite(arr)], weight[np.isfinite(arr)]
    total = int(weight.sum())
    give = arg("give scale=(lo, hi)", "give --scale LO,HI")
    if total == 0:
        raise InputError(f"Cannot infer the score scale: no finite score was observed; {give}.")
    allowed = _outliers_allowed(total)
    eligible: list[tuple[int, int, float, tuple[float, float]]] = []
    for a, b in COMMON_SCALES:
        inside = arr[(arr >= a) & (arr <= b)]
        n_out = int(total - weight[(arr >= a) & (arr <= b)].sum())
        if n_out > allowed or inside.size == 0:
            continue
        if (a, b) == (0.0, 1.0):
            fits = inside.min() < inside.max()
        else:
            fits = inside.max() == b  # the bottom is checked below: a stray low value is asked about by name
        if fits:
            reached_bottom = 0 if inside.min() == a else 1
            eligible.append((n_out, reached_bottom, b - a, (a, b)))
    if eligible:
        eligible.sort()
        best = eligible[0][3]
        # The bottom of the chosen scale reached only by a stray value or two (a 1–10 table with one 0): the same
        # scores fit the scale with the same top and a higher bottom, with those values out of it. Choosing the
        # wider scale would re-read every other score because of them, choosing the narrower one would call them
        # bad: the data do not say which, so the user does.
        for n_out, _, _, (a, b) in eligible[1:]:
            stray = int(weight[arr < a].sum())
            if b == best[1] and a > best[0] and 0 < n_out == stray <= allowed and eligible[0][0] == 0:
                which = arg(f"; scale=({best[0]:g}, {b:g}) keeps them, scale=({a:g}, {b:g}) reports them as bad rows",
                            f" (--scale {best[0]:g},{b:g} keeps them, --scale {a:g},{b:g} reports them as bad rows)")
                raise InputError(f"Cannot infer the score scale: the scores fit [{best[0]:g}, {b:g}] only because of "
                                 f"{stray} score(s) below {a:g} (of {total}); without them they fit [{a:g}, {b:g}], "
                                 f"so {give}{which}.")
        a, b = best
        inside = arr[(arr >= a) & (arr <= b)]
        if best != (0.0, 1.0):
            wider = [(a2, b2) for a2, b2 in COMMON_SCALES if a2 == a and b2 > b and inside.max() <= b2]
            if inside.min() != a:
                holding = [f"[{x:g}, {y:g}]" for x, y in COMMON_SCALES if x <= inside.min() and inside.max() <= y]
                raise InputError(f"Cannot infer the score scale: the scores run from {_exact(float(inside.min()))} to "
                                 f"{_exact(float(inside.max()))}, reaching the top of [{a:g}, {b:g}] but not its bottom "
                                 f"(it could be {' or '.join(holding)}); {give}.")
            if wider:
                raise InputError(f"Cannot infer the score scale: the scores run from {a:g} to {b:g}, the ends of "
                                 f"[{a:g}, {b:g}], but a judge on [{wider[-1][0]:g}, {wider[-1][1]:g}] that never gave more "
                                 f"than {b:g} writes the same table; {give}.")
        return eligible[0][3], eligible[0][0]
    lo, hi = float(arr.min()), float(arr.max())
    if lo == hi:
        # One value seen: the scale matters only through the normalised score it gives that value. When every
        # common scale holding it gives the same (a judge that always said 0: 0 on [0, 1], [0, 10], [0, 100]),
        # nothing is ambiguous; otherwise (always 1: 1 on [0, 1] but 0 on [1, 5]) the user must say.
        holding = [(a, b) for a, b in COMMON_SCALES if a <= lo <= b]
        normalised = {(lo - a) / (b - a) for a, b in holding}
        if len(normalised) == 1:
            return holding[0], 0
        raise InputError(f"Cannot infer the score scale: every score equals {lo:g}; {give}.")
    holding = [f"[{a:g}, {b:g}]" for a, b in COMMON_SCALES if a <= lo and hi <= b]
    could = f" (it could be {' or '.join(holding)})" if holding else ""
    raise InputError(
        f"Cannot infer the score scale: the scores run from {_exact(lo)} to {_exact(hi)}, which does not determine the "
        f"scale{could}; {give}."
    )


def _exact(x: float) -> str:
    """``x`` short (``2``, ``0.1``) unless that hides its value (``1.0000001`` is not ``1``)."""
    short = f"{x:g}"
    return short if float(short) == x else repr(float(x))


def _short(text: str, width: int = 60) -> str:
    """``text`` cut to ``width`` characters (a 400-digit number or a pasted paragraph stays one line)."""
    return text if len(text) <= width else f"{text[:width - 14]}… ({len(text)} characters)"


def _to_float(col: pd.Series) -> np.ndarray:
    """``col`` as floats, NaN where a value is not a number; an integer too large for a float (JSON allows
    ``1e400`` written out as digits) is infinite, so it is reported like any other non-finite score."""
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "fiu":  # numbers already: no conversion, no copy
        return col.to_numpy(dtype=float)
    try:
        return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    except OverflowError:
        def one(v: Any) -> float:
            try:
                return float(v)
            except OverflowError:
                return math.inf
            except (TypeError, ValueError):
                return math.nan
        return np.array([one(v) for v in col.to_numpy(dtype=object)], dtype=float)


def check_scale(scale: Any, where: str) -> tuple[float, float]:
    try:
        lo, hi = (float(scale[0]), float(scale[1]))
        ok = len(scale) == 2 and math.isfinite(lo) and math.isfinite(hi) and lo < hi and math.isfinite(hi - lo)
    except (TypeError, ValueError, IndexError):
        ok = False
    if not ok:
        raise InputError(f"The {arg('scale', '--scale')!r} {'option' if arg('p', 'c') == 'c' else 'parameter'} of "
                         f"{where} must be a pair (lo, hi) of finite floats with lo < hi. Got {scale!r} instead.")
    return (lo, hi)


# ----------------------------------------------------------------------------------------
# generic long tables

_READERS = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl", "ndjson": "jsonl", "json": "json", "parquet": "parquet",
            "pq": "parquet"}
_COMPRESSIONS = ("gz", "bz2", "xz")


def file_format(path: Path) -> str:
    suffixes = [s.lstrip(".").lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSIONS:
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in _READERS:
        return _READERS[suffixes[-1]]
    raise DataFormatError(
        "unknown table format; use a .csv, .tsv, .jsonl, .json (an array of records) or .parquet file (optionally .gz, "
        ".bz2 or .xz)"
        + arg(" or pass fmt=.", "."),
        path=str(path),
    )


def _csv_record_lines(text: str, sep: str, strict: bool = False) -> tuple[list[int], int, int | None, int]:
    """Physical 1-based start line of every non-blank CSV record (header first).

    Also returns the header's field count and the first record (line, field count) whose
    field count differs from the header's (``None`` when all agree); with ``strict`` a quote
    that is never closed gives that record's line and field count -1.
    """
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=strict)
    starts: list[int] = []
    prev = 0
    width = 0
    odd_line: int | None = None
    odd_width = 0
    try:
        for row in reader:
            if row:
                starts.append(prev + 1)
                if len(starts) == 1:
                    width = len(row)
                elif odd_line is None and len(row) != width:
                    odd_line, odd_width = prev + 1, len(row)
            prev = reader.line_num
    except csv.Error:  # an unterminated quote: the record runs to the end of the file
        odd_line, odd_width = prev + 1, -1
    return starts, width, odd_line, odd_width


def _line_ends(path: Path, text: str) -> str:
    """``text`` with classic Mac line ends (a bare CR per line) read as lines; a CR inside a line is one sentence."""
    if "\r" in text and "\n" not in text:  # classic Mac line ends (a bare CR per line): one line each, as an editor shows
        text = text.replace("\r", "\n")
    stray = re.search(r"\r(?!\n)", text)
    if stray is not None:  # a CR inside a line: the parsers would end the row there, an editor shows one line
        start = text.rfind("\n", 0, stray.start()) + 1
        end = text.find("\n", stray.start())
        if '"' not in text[start:end if end >= 0 else len(text)]:  # (a quoted field may hold one)
            raise DataFormatError("the line holds a carriage return (CR) that ends no line; remove it or save the file "
                                  "with ordinary line ends (LF or CRLF).", path=str(path),
                                  line=text.count("\n", 0, stray.start()) + 1)
    return text


def _check_header(path: Path, body: str, sep: str, starts: list[int] | None) -> None:
    """A header of one column holding another separator, or with an empty or repeated name: one sentence."""
    try:
        names = next(csv.reader(io.StringIO(body.split("\n", 1)[0].rstrip("\r")), delimiter=sep), [])
    except csv.Error:  # a bare carriage return inside the header line
        raise DataFormatError("the header line holds a carriage return (CR) that ends no line; save the file with "
                              "ordinary line ends (LF or CRLF).", path=str(path), line=1) from None
    if len(names) == 1:
        for other, what in ((";", "semicolons"), ("\t", "tabs"), ("|", "'|' characters"), (",", "commas")):
            if other != sep and names[0].count(other) >= 2:
                fix = "name it .tsv" if other == "\t" else ("name it .csv" if other == "," else
                                                           "save it with commas (or tabs, as .tsv)")
                raise DataFormatError(f"the header is one column holding {what}: the file is separated by {what}, "
                                      f"not {'commas' if sep == ',' else 'tabs'}; {fix}.", path=str(path), line=1)
    if len(names) != len(set(names)) or any(not n.strip() for n in names):
        line = 1 if starts is None else starts[0]
        raise DataFormatError("the header row has an empty or repeated column name; give every column one name.",
                              path=str(path), line=line)


def _read_delimited(path: Path, text: str, fmt: str, numeric: frozenset[str]) -> tuple[pd.DataFrame, np.ndarray]:
    sep = "," if fmt == "csv" else "\t"
    text = _line_ends(path, text)
    # Physical line numbers: one record per line unless the text has quotes (a quoted field may
    # hold a newline) or blank lines (skipped by the parser); then the csv module counts them.
    body = text.lstrip("\r\n")
    simple = '"' not in text and "\n\n" not in body.replace("\r\n", "\n").rstrip("\n")
    starts: list[int] | None = None
    if not simple:
        starts, _, _, _ = _csv_record_lines(text, sep)
    data = io.BytesIO(text.encode("utf-8"))
    try:
        header = pd.read_csv(data, sep=sep, nrows=0).columns
        data.seek(0)
        try:
            dtypes = {c: ("float64" if c in numeric else str) for c in header}
            raw = pd.read_csv(data, sep=sep, dtype=dtypes, engine="pyarrow")
        except ValueError:  # a numeric column holds text: read all as text, checked per row below
            data.seek(0)
            raw = pd.read_csv(data, sep=sep, dtype=str, engine="pyarrow")
        names_read = [c for c in raw.columns if c not in numeric and raw[c].isna().any()]
        if names_read:  # a name column: 'None', 'NA', 'null' are names (a model called NA), only an empty cell is empty
            data.seek(0)
            literal = pd.read_csv(data, sep=sep, dtype=str, engine="pyarrow", keep_default_na=False, na_values=[""],
                                  usecols=names_read)
            for c in names_read:
                raw[c] = literal[c]
    except (ValueError, OSError, TypeError) as exc:
        starts, width, odd_line, odd_width = _csv_record_lines(text, sep, strict=True)
        if odd_line is not None and odd_width < 0:
            raise DataFormatError("a quoted field is never closed or is malformed; check the '\"' characters from "
                                  "this line on.",
                                  path=str(path), line=odd_line) from None
        if odd_line is not None:
            raise DataFormatError(f"the row has {odd_width} fields but the header has {width}; "
                                  f"check the {'commas' if fmt == 'csv' else 'tabs'} and quotes of this row.",
                                  path=str(path), line=odd_line) from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(f"cannot be read as {fmt.upper()} ({first.rstrip('.')}).", path=str(path)) from None
    _check_header(path, body, sep, starts)
    if starts is None:
        first = len(text) - len(body)
        header_line = text.count("\n", 0, first) + 1
        lines = np.arange(len(raw), dtype=np.int64) + header_line + 1
    else:
        if len(starts) - 1 != len(raw):  # the parser and the csv module disagree: give row numbers
            raise DataFormatError(
                f"holds {len(raw)} rows for the table parser but {len(starts) - 1} for Python's csv module; "
                "remove blank-looking lines of only spaces and check the quotes.",
                path=str(path),
            )
        lines = np.asarray(starts[1:], dtype=np.int64)
    return raw, lines


def _read_jsonl(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    from biasbound.data._io import iter_json_records

    lines, records = [], []
    for ln, rec in iter_json_records(path):
        lines.append(ln)
        records.append(rec)
    return pd.DataFrame.from_records(records), np.asarray(lines, dtype=np.int64)


def _read_json_array(path: Path) -> tuple[pd.DataFrame, np.ndarray]:
    """A ``.json`` file holding one array of records, each record's line the line it starts on."""
    from biasbound.data._common import iter_json_array

    lines, records = [], []
    for ln, rec in iter_json_array(path):
        if not isinstance(rec, dict):
            raise DataFormatError(f"each element of the array must be a JSON object {{...}}; got "
                                  f"{type(rec).__name__}.", path=str(path), line=ln)
        lines.append(ln)
        records.append(rec)
    return pd.DataFrame.from_records(records), np.asarray(lines, dtype=np.int64)


def _coded_parquet(data: bytes, numeric: frozenset[str]) -> pd.DataFrame:
    """A Parquet file's rows with its text columns (but the ``numeric`` ones) as categoricals, read ~10^6 rows
    (whole row groups) at a time from Parquet's own dictionaries (pyarrow ``read_dictionary``, the groups' dictionaries
    unified): no per-row string is ever made, and the Arrow memory held at once is one slice of the file (each text
    column costs 4 bytes a row, narrowed by ``from_frame``)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    schema = pq.read_schema(io.BytesIO(data))
    texts = [f.name for f in schema if f.name not in numeric and (pa.types.is_string(f.type) or
                                                                  pa.types.is_large_string(f.type))]
    pf = pq.ParquetFile(io.BytesIO(data), read_dictionary=texts)
    n = pf.metadata.num_rows
    codes = {c: np.empty(n, dtype=np.int32) for c in texts}
    vocab: dict[str, dict[Any, int]] = {c: {} for c in texts}
    others: dict[str, list[Any]] = {f.name: [] for f in schema if f.name not in texts}
    slices: list[list[int]] = [[]]
    rows = 0
    for g in range(pf.num_row_groups):  # whole row groups, about 10^6 rows a slice
        if rows >= 1 << 20:
            slices.append([])
            rows = 0
        slices[-1].append(g)
        rows += pf.metadata.row_group(g).num_rows
    at = 0
    for groups in slices:
        part = pf.read_row_groups(groups, use_threads=True).unify_dictionaries()
        for c in texts:
            seen, start = vocab[c], at
            for chunk in part.column(c).chunks:  # one dictionary for the slice: mapped to the file's codes once
                to_global = np.asarray([seen.setdefault(t, len(seen)) for t in chunk.dictionary.to_pylist()] + [-1],
                                       dtype=np.int32)
                idx = pc.fill_null(chunk.indices, -1).to_numpy(zero_copy_only=False)
                codes[c][start:start + len(idx)] = to_global[idx]  # a missing text (-1) takes the last entry, -1
                start += len(idx)
        for c in others:
            others[c].extend(part.column(c).chunks)
        at += part.num_rows
        del part
    out = pd.DataFrame(index=pd.RangeIndex(n))
    for f in schema:  # one column at a time: no block of several columns is stacked (copied)
        if f.name in codes:
            names = np.asarray(list(vocab[f.name]), dtype=object)
            out[f.name] = pd.Categorical.from_codes(codes.pop(f.name), categories=pd.Index(names, dtype=object))
        else:
            out[f.name] = pa.chunked_array(others.pop(f.name), type=f.type).to_pandas()
    from biasbound._memory import release_free_memory

    release_free_memory()  # the slices' buffers, cached by Arrow's allocator, back to the system
    return out


def _read_parquet(path: Path, numeric: frozenset[str] = frozenset(), coded: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """The file's rows; with ``coded`` its text columns (but the ``numeric`` ones) as categoricals
    (:func:`_coded_parquet`)."""
    from biasbound.data._io import read_bytes

    data = read_bytes(path)
    if not (data[:4] == b"PAR1" and data[-4:] == b"PAR1"):
        raise DataFormatError("is not a Parquet file (no PAR1 marker at its start and end); give a Parquet, CSV, "
                              "TSV or JSONL file with the matching suffix.", path=str(path))
    try:
        raw = _coded_parquet(data, numeric) if coded else pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a damaged file; one sentence for all
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFormatError(f"cannot be read as Parquet ({first.rstrip('.')}).", path=str(path)) from None
    return raw, np.arange(len(raw), dtype=np.int64) + 1


def read_rows(path: Path, fmt: str, numeric: frozenset[str] = frozenset(), what: str = "judgment",
              coded: bool = False) -> tuple[pd.DataFrame, np.ndarray]:
    """Read a table and return it with the physical 1-based file line (row number for parquet) of each row.

    CSV/TSV columns are read as text (ids keep leading zeros) except those named in
    ``numeric``, read as float; when one of them holds a non-number the whole file is
    re-read as text and checked row by row later. Blank lines and newlines inside quoted
    fields are counted, so the line named in an error is the line an editor shows. With ``coded``
    (the judgment loader), a Parquet file's text columns come back as categoricals (:func:`_coded_parquet`).
    """
    from biasbound.data._io import read_text

    if fmt == "parquet":
        raw, lines = _read_parquet(path, numeric, coded)
    elif fmt == "jsonl":
        raw, lines = _read_jsonl(path)
    elif fmt == "json":
        try:
            raw, lines = _read_json_array(path)
        except RecursionError:
            raise DataFormatError("the JSON nests too deeply to read.", path=str(path)) from None
    else:
        text = read_text(path)
        if not text.strip():
            raise DataFormatError(f"is empty; give a table with a header row and at least one {what}.", path=str(path))
        raw, lines = _read_delimited(path, text, fmt, numeric)
    if len(raw) == 0:
        raise DataFormatError(f"holds no {what} rows; give a file with at least one {what}.", path=str(path))
    return raw, lines


def load_table(
    path: str | Path,
    *,
    columns: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
    factors: Sequence[str] = (),
    judge: str | None = None,
    fmt: str | None = None,
    skip_bad: bool = False,
) -> JudgmentSet:
    """Load a generic long judgment table (CSV, TSV, JSONL or Parquet).

    Parameters
    ----------
    path:
        The file. The format comes from the suffix (``.csv``, ``.tsv``, ``.jsonl``,
        ``.parquet``, optionally ``.gz``) unless ``fmt`` is given.
    columns:
        Mapping from contract column name to the file's column name, e.g.
        ``{"item_id": "item", "score": "rating"}``. Required: ``item_id``, ``model``,
        ``score``. Optional: ``judge``, ``variant``, ``rerun``, ``game``, ``verdict``.
    scale:
        Raw score scale ``(lo, hi)``; inferred with :func:`infer_scale` when None.
        Scores (and factor columns) are mapped to [0, 1] by ``(x - lo) / (hi - lo)``.
    factors:
        Names of factor columns to keep (same scale as ``score``); each becomes
        ``factor_<name>`` (a name already starting with ``factor_`` is kept).
    judge:
        Judge name for files without a judge column (default: the file name stem).
    fmt:
        One of ``"csv"``, ``"tsv"``, ``"jsonl"``, ``"parquet"``.
    skip_bad:
        When True, bad rows are skipped and listed in ``report.skipped`` instead of raising.

    Returns
    -------
    JudgmentSet

    Raises
    ------
    DataFormatError
        Naming the file and line for: a missing required column (line 1 = header for
        CSV/TSV), a score or factor that is not a number or lies outside the scale, an
        empty item id or model, a ``game`` outside {0, 1, 2} or a negative ``rerun``,
        a duplicated (judge, model, item_id, variant, rerun, game) key.

    Notes
    -----
    Scores must already be in the model's view (for pairwise tables, game 2 flipped).
    Empty score cells are missing judgments (NaN): kept, counted, never imputed. Line
    numbers assume one record per physical line (no newlines inside quoted CSV fields).
    """
    path = Path(path)
    if fmt is None:
        fmt = file_format(path)
    else:
        fmt = check_one_of(fmt, "fmt", "load_table", ("csv", "tsv", "jsonl", "json", "parquet"))
    if not path.is_file():
        raise DataFormatError("no such file.", path=str(path))
    names = {"score": "score", "rerun": "rerun", "game": "game", **dict(columns or {})}
    numeric = frozenset([names["score"], names["rerun"], names["game"], *factors])
    raw, lines = read_rows(path, fmt, numeric, coded=True)
    from biasbound.data.unparseable import check_parseable

    check_parseable(raw, path, doing="certify")  # a run whose replies held no verdict: said, not a scale to give
    js = from_frame(
        raw,
        source=str(path),
        lines=lines,
        columns=columns,
        scale=scale,
        factors=factors,
        judge=judge if judge is not None else path.name.split(".")[0],
        header_line=1 if fmt in ("csv", "tsv") else None,
        skip_bad=skip_bad,
    )
    if judge is None and dict(columns or {}).get("judge", "judge") not in raw.columns:
        js.frame.attrs["judge_from_file"] = path.name.split(".")[0]  # said by certify: no judge column named it
    del raw
    from biasbound._memory import release_free_memory

    release_free_memory()  # the read's buffers, freed, back to the system (biasbound._memory)
    return js


def from_frame(
    raw: pd.DataFrame,
    *,
    source: str = "<frame>",
    lines: Any = None,
    columns: Mapping[str, str] | None = None,
    scale: tuple[float, float] | None = None,
    factors: Sequence[str] = (),
    judge: str | None = None,
    header_line: int | None = None,
    skip_bad: bool = False,
    scale_inferred: bool = False,
) -> JudgmentSet:
    """Validate an in-memory long table and turn it into a :class:`JudgmentSet`.

    Parameters are those of :func:`load_table`; ``source`` names the origin in errors
    and in the ``source`` column, ``lines`` gives each row's 1-based line (default
    ``1..n``), ``header_line`` is the line named when a column is missing. ``scale_inferred``: the given
    ``scale`` was inferred from the whole table these rows are part of (:mod:`biasbound.data.blocked`), and is said
    and reported so.
    """
    if not isinstance(raw, pd.DataFrame):
        raise TypeError(f"The 'raw' parameter of from_frame must be a pandas DataFrame. Got {type(raw).__name__} instead.")
    scale_given = None if scale is None else check_scale(scale, "load_table")
    mapping = _column_mapping(columns)
    _check_columns(raw, mapping, factors, source, header_line)
    n = len(raw)
    line_arr = np.arange(1, n + 1, dtype=np.int64) if lines is None else np.asarray(lines, dtype=np.int64)
    if line_arr.shape != (n,):
        raise InputError(f"The 'lines' parameter of from_frame must have one entry per row ({n}). Got shape {line_arr.shape} instead.")
    rows = _BadRows(line_arr, source, skip_bad)
    skipped: list[tuple[str, int | None, str]] = []
    out = _key_columns(raw, mapping, rows, judge, source)
    labels = [h for h in HUMAN_COLUMNS if h in raw.columns]  # the human label: on the judge's scale, as the score
    numeric = _numeric_columns(raw, [("score", mapping["score"])] + [(f, f) for f in factors] + [(h, h) for h in labels],
                               rows)
    rows.raise_first()
    if scale is None:
        scale_used, _ = _infer_scale(numeric["score"][~rows.bad])
        inferred = True
        how = f" inferred from the other scores (give {arg('scale=(lo, hi)', '--scale LO,HI')} if it is wrong)"
    else:
        scale_used = scale_given
        inferred = bool(scale_inferred)
        how = (f" inferred from the other scores (give {arg('scale=(lo, hi)', '--scale LO,HI')} if it is wrong)"
               if inferred else "")
    lo, hi = scale_used
    for name, vals in numeric.items():
        outside = np.isfinite(vals) & ((vals < lo) | (vals > hi))
        if outside.any():
            # one reason per value, so the message names the value of the row it points at
            values = np.unique(vals[outside & ~rows.bad])
            for value in values[:50]:
                rows.flag(outside & (vals == value), f"{name} {value:g} is outside the scale [{lo:g}, {hi:g}]{how}")
            rows.flag(outside, f"{name} outside the scale [{lo:g}, {hi:g}]{how}")
    rows.raise_first()
    # numpy results enter the frame as Series (a reference, not the copy a bare array's setitem makes)
    out["score"] = pd.Series((numeric["score"] - lo) / (hi - lo), index=out.index, copy=False)
    for fac in factors:
        col_name = fac if fac.startswith("factor_") else f"factor_{fac}"
        out[col_name] = (numeric[fac] - lo) / (hi - lo)
    for h in labels:
        out[h] = (numeric[h] - lo) / (hi - lo)
    out["source"] = _const_coded(source, out.index)
    out["line"] = pd.Series(line_arr, index=out.index, copy=False)

    bad = rows.bad
    if bad.any():
        for ln, why in zip(line_arr[bad].tolist(), rows.reasons[bad].tolist()):
            skipped.append((source, int(ln), str(why)))
        out = out[~bad]
    out = check_duplicates(out, skip_bad, skipped)
    return finish_table(out, skipped=skipped, scale=scale_used, scale_inferred=inferred, sources=[source])


def _column_mapping(columns: Mapping[str, str] | None) -> dict[str, str]:
    """Contract name -> the table's column, with ``columns`` applied (an unknown contract name: one sentence)."""
    mapping = {k: k for k in ("judge", "model", "item_id", "variant", "rerun", "game", "verdict", "score")}
    if columns:
        unknown = set(columns) - set(mapping)
        if unknown:
            raise InputError(
                "The " + arg("'columns' parameter", "'--columns' option") + " must map contract names "
                f"({', '.join(sorted(mapping))}) to file columns"
                + arg(".", " (question_id, model_a, model_b, winner and group are a battle table's, which needs the "
                           "columns model_a and model_b).")
                + f" Got unknown key(s) {', '.join(sorted(unknown))} instead."
            )
        mapping.update(columns)
    return mapping


def _check_columns(raw: pd.DataFrame, mapping: Mapping[str, str], factors: Sequence[str], source: str,
                   header_line: int | None) -> None:
    """A required or factor column the table lacks: one sentence naming the columns it has."""
    for req in ("item_id", "model", "score"):
        if mapping[req] not in raw.columns:
            raise DataFormatError(
                f"required column {mapping[req]!r} (for {req!r}) is missing; the columns are {list(raw.columns)}; "
                f"map other names with {arg('columns={...}', '--columns')}.",
                path=source,
                line=header_line,
            )
    for fac in factors:
        if fac not in raw.columns:
            raise DataFormatError(f"factor column {fac!r} is missing; the columns are {list(raw.columns)}.", path=source, line=header_line)


class _BadRows:
    """The rows of a table found bad so far, each with its first reason (and the value a message shows)."""

    def __init__(self, lines: np.ndarray, source: str, skip_bad: bool) -> None:
        n = len(lines)
        self.lines, self.source, self.skip_bad = lines, source, skip_bad
        self.bad = np.zeros(n, dtype=bool)
        self.why: list[str] = []  # each reason once; a bad row holds its reason's index (one byte a row at most)
        self.reason_codes: np.ndarray | None = None
        self.shown_values: dict[int, Any] = {}  # row -> the raw value a message shows, where one helps

    @property
    def reasons(self) -> np.ndarray:
        """Each row's first reason ("" for a good row)."""
        texts = np.asarray(["", *self.why], dtype=object)
        return texts[self.reason_codes + 1] if self.reason_codes is not None else np.full(len(self.bad), "", dtype=object)

    def show(self, mask: np.ndarray, values: pd.Series) -> None:
        """Keep the raw value of the rows in ``mask`` not already bad (the value a message shows)."""
        at = np.flatnonzero(np.asarray(mask, dtype=bool) & ~self.bad)
        for row, value in zip(at.tolist(), values.iloc[at].tolist()):
            self.shown_values[row] = value

    def flag(self, mask: np.ndarray, reason: str) -> None:
        mask = np.asarray(mask, dtype=bool) & ~self.bad
        if not mask.any():
            return
        if self.reason_codes is None:
            self.reason_codes = np.full(len(self.bad), -1, dtype=np.int32)
        self.reason_codes[mask] = len(self.why)
        self.why.append(reason)
        self.bad[mask] = True

    def raise_first(self) -> None:
        # the bad row with the smallest line, whatever check found it
        bad = self.bad
        if bad.any() and not self.skip_bad:
            first = int(np.flatnonzero(bad)[np.argmin(self.lines[bad])])
            shown = self.shown_values.get(first)
            got = "" if shown is None else f" (got {_short(repr(_plain(shown)))})"
            codes = self.reason_codes
            if codes is None:  # cannot happen: a row is bad only when flag gave it a reason
                raise RuntimeError("a bad row without a reason")
            raise DataFormatError(f"{self.why[codes[first]]}{got}; fix the row or "
                                  f"{arg('pass skip_bad=True', 'pass --skip-bad')} to skip and count it.",
                                  path=self.source, line=int(self.lines[first]))


def _key_columns(raw: pd.DataFrame, mapping: Mapping[str, str], rows: _BadRows, judge: str | None,
                 source: str) -> pd.DataFrame:
    """The table's item_id, model, judge, variant, rerun, game and verdict columns; bad values flagged."""
    # the checks and the texts on each column's distinct values, the rows only through their codes
    out = pd.DataFrame(index=raw.index)
    for name in ("item_id", "model"):
        codes, values = _id_texts(raw[mapping[name]])
        texts = np.array([str(v).strip() for v in values], dtype=object)
        rows.flag((codes < 0) | (texts == "")[codes] if len(texts) else codes < 0, f"empty {name}")
        out[name] = _recoded(codes, texts, out.index)
    if mapping["judge"] in raw.columns:
        codes, values = _id_texts(raw[mapping["judge"]])
        rows.flag(codes < 0, "empty judge")
        out["judge"] = _recoded(codes, np.array([str(v) for v in values], dtype=object), out.index)
    else:
        out["judge"] = _const_coded(str(judge) if judge is not None else source, out.index)
    if mapping["variant"] in raw.columns:
        codes, values = _id_texts(raw[mapping["variant"]])
        texts = np.array([str(v) for v in values] + ["original"], dtype=object)
        out["variant"] = _recoded(np.where(codes < 0, len(values), codes), texts, out.index)
    else:
        out["variant"] = _const_coded("original", out.index)
    for name, allowed in (("rerun", None), ("game", (0, 1, 2))):
        if mapping[name] in raw.columns:
            col = raw[mapping[name]]
            if pd.api.types.is_integer_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
                vals = col.to_numpy()  # integers: only the range to check, no float copy
                ok = (vals >= 0) if allowed is None else (vals >= 0) & (vals <= 2)
            else:
                vals = _to_float(col)
                ok = np.isfinite(vals) & (vals == np.round(vals))
                ok &= (vals >= 0) if allowed is None else np.isin(vals, allowed)
            rows.flag(~ok, f"{name} must be " + ("a non-negative int" if allowed is None else "0, 1 or 2"))
            out[name] = pd.Series(np.where(ok, vals, 0).astype(np.int64) if not ok.all() else vals.astype(np.int64, copy=False),
                                  index=out.index, copy=False)
        else:
            out[name] = 0
    out["verdict"] = _coded_verdict(raw[mapping["verdict"]]) if mapping["verdict"] in raw.columns else _missing_coded(out.index)
    return out


def _numeric_columns(raw: pd.DataFrame, named: Sequence[tuple[str, str]], rows: _BadRows) -> dict[str, np.ndarray]:
    """Each (name, column) as floats, NaN where empty; a boolean or a value that is no finite number flagged."""
    numeric: dict[str, np.ndarray] = {}
    for name, col_name in named:
        col = raw[col_name]
        if pd.api.types.is_bool_dtype(col.dtype) or (col.dtype == object and pd.api.types.infer_dtype(col, skipna=True)
                                                     in ("boolean", "mixed", "mixed-integer", "mixed-integer-float")):
            is_bool = col.map(lambda v: isinstance(v, (bool, np.bool_))).to_numpy(dtype=bool)
            rows.show(is_bool, col)
            rows.flag(is_bool, f"{name} (column {col_name!r}) is a boolean (true/false), not a score; write the scores as "
                               "numbers (e.g. 1 and 0) so the scale is yours, not a guess")
        vals = _to_float(col)
        present = col.notna().to_numpy().copy()
        if not pd.api.types.is_numeric_dtype(col.dtype):
            present &= ~(col.astype(str).str.strip() == "").to_numpy()
        not_number = present & ~np.isfinite(vals)
        if not_number.any():
            rows.show(not_number, col)
        rows.flag(not_number, f"{name} (column {col_name!r}) is not a finite number")
        numeric[name] = np.where(present & np.isfinite(vals), vals, np.nan)
    return numeric


# ----------------------------------------------------------------------------------------
# LLMBar adapter


@validate_params(exempt={"view": "the LLMBar reading view (output_1)"})
def load_llmbar(path: str | Path, *, view: str = "output_1", skip_bad: bool = False) -> JudgmentSet:
    """Load LLMBar both-order judgments (``judgments.csv.gz``) as a pairwise long table.

    Parameters
    ----------
    path:
        The LLMBar CSV with columns ``subset, item, gold_label, judge, strategy,
        winner_orig_order, winner_swapped_order, score_output_1, score_output_2``.
    view:
        ``"output_1"`` (the one view): model ``"output_1"``, score 1 when the judge prefers output 1. The human
        gold label rides along as the ``human`` column (1 when the gold output is output 1, 0 when it is output 2,
        missing otherwise): ``certify`` reads it as the human labels, so the judge's accuracy against gold is the
        judge card's agreement (``human_agreement``) and the human-anchored scores sit beside the certified ones.
    skip_bad:
        Passed to :func:`from_frame`.

    Returns
    -------
    JudgmentSet
        judge = ``"<judge>/<strategy>"`` (one judging configuration), item_id =
        ``"<subset>#<item>"``, game 1 = original presentation order, game 2 = swapped
        order, score on {0, 1}, verdict = the raw winner (``"1"``/``"2"``), source/line =
        the CSV and its line. A missing winner is a missing judgment (NaN).

    Notes
    -----
    LLMBar reports ``winner_swapped_order`` in the original output labels (1 = output 1,
    whatever its position); checked on the data: GPT-4 Vanilla picks the gold output
    in 95/100 and 96/100 Natural items in the two orders. So both games are already in
    the same view and game 2 needs no flip; the swap neighbour of an item is its
    game-2 score.
    """
    if view == "gold":
        raise InputError(f"{arg('The ' + repr('view') + ' parameter of load_llmbar', 'The ' + repr('--llmbar-view') + ' option of certify')} "
                         "no longer takes 'gold': the gold label is read as the human label of each item, and the "
                         "judge's accuracy against it is on the judge card (human_agreement); load the 'output_1' view.")
    view = check_one_of(view, "view", "load_llmbar", ("output_1",))
    path = Path(path)
    if not path.is_file():
        raise DataFormatError("no such file.", path=str(path))
    raw, lines = read_rows(path, "csv")
    need = ["subset", "item", "gold_label", "judge", "strategy", "winner_orig_order", "winner_swapped_order"]
    for c in need:
        if c not in raw.columns:
            raise DataFormatError(f"LLMBar column {c!r} is missing; the columns are {list(raw.columns)}.", path=str(path), line=1)
    base = pd.DataFrame(
        {
            "judge": raw["judge"].astype(str) + "/" + raw["strategy"].astype(str),
            "item_id": raw["subset"].astype(str) + "#" + raw["item"].astype(str),
            "gold": pd.to_numeric(raw["gold_label"], errors="coerce"),
        }
    )
    checked = [("winner_orig_order", raw["winner_orig_order"].notna()), ("winner_swapped_order", raw["winner_swapped_order"].notna())]
    if not skip_bad:  # name the LLMBar column the bad value is in (from_frame would only know the derived score)
        for col, present in checked:
            bad = present & ~pd.to_numeric(raw[col], errors="coerce").isin([1, 2])
            if bad.any():
                first = int(np.flatnonzero(bad.to_numpy())[0])
                got = raw[col].iloc[first]
                raise DataFormatError(f"{col} must be 1 or 2 (got {'nothing' if pd.isna(got) else repr(_plain(got))}); "
                                      f"fix the row or {arg('pass skip_bad=True', 'pass --skip-bad')} to skip and count it.",
                                      path=str(path), line=int(lines[first]))
    # the human label in the output_1 view; a gold label that is not 1 or 2 labels nothing (the item is unlabelled)
    human = pd.Series(np.where(base["gold"] == 1, 1.0, np.where(base["gold"] == 2, 0.0, np.nan)), index=raw.index)
    parts = []
    for game, col in ((1, "winner_orig_order"), (2, "winner_swapped_order")):
        winner = pd.to_numeric(raw[col], errors="coerce")
        bad_value = raw[col].notna() & ~winner.isin([1, 2])
        score = (winner == 1.0).astype(float).where(winner.notna(), np.nan)
        # a non-1/2 winner must not become a score: keep it as an unparseable string so from_frame flags it
        score = score.astype(object).where(~bad_value, "winner " + raw[col].astype(str))
        part = base.assign(model=view, game=game, score=score, human=human, verdict=raw[col].astype(object).where(raw[col].notna(), None), line=lines)
        parts.append(part)
    long = pd.concat(parts, ignore_index=True)
    return from_frame(
        long.drop(columns="gold"),
        source=str(path),
        lines=long["line"].to_numpy(),
        scale=(0.0, 1.0),
        header_line=1,
        skip_bad=skip_bad,
    )

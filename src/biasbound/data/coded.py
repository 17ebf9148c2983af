"""The coded judgment frame: a judgment table whose id columns are integer codes into their sorted texts.

Every reader ends in :func:`coded_frame` (through ``tables.finish_table``), and ``pipeline.certify`` calls it on a
frame given to it directly, so the pipeline's rows are always coded: ``judge``, ``model``, ``item_id`` and
``variant`` (and the reader's ``source``) are pandas ``Categorical`` columns whose categories are the distinct
texts (``str``) in sorted (code point) order; ``rerun`` and ``game`` integers; ``score`` float64 on [0, 1], NaN =
missing. A row's id costs one 1-, 2- or 4-byte code instead of a string, and the codes are the factorisation every
consumer of the rows (key checks, coverage, canonical scores, neighbours, digests, the card) used to redo.

:class:`ColumnCodes` holds the codes of one frame's id columns and the row keys built from them (mixed radix), and
:func:`duplicated_keys` is the one repeated-key check on them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["ID_COLUMNS", "ColumnCodes", "coded_frame", "duplicated_keys", "is_coded", "is_coded_column",
           "concat_coded", "judge_groups", "text_categorical", "text_frame", "text_values"]

#: The id columns a coded frame holds as categoricals of their sorted distinct texts.
ID_COLUMNS: tuple[str, ...] = ("judge", "model", "item_id", "variant")
#: A judgment's key: one row per key in a judgment table.
KEY: list[str] = ["judge", "model", "item_id", "variant", "rerun", "game"]


def is_coded_column(values: pd.Series) -> bool:
    """A categorical whose categories are distinct texts in sorted order (what :func:`text_categorical` makes)."""
    if not isinstance(values.dtype, pd.CategoricalDtype):
        return False
    cats = values.cat.categories
    if len(cats) == 0:
        return True
    if not (pd.api.types.is_string_dtype(cats.dtype) and pd.api.types.infer_dtype(cats, skipna=False) == "string"):
        return False
    return bool(cats.is_monotonic_increasing)


def text_categorical(values: pd.Series) -> pd.Series:
    """The column as a categorical of its values' texts (``str`` of each value, as ``astype(str)`` gives them), the
    categories sorted by code point; a missing value stays missing (code -1). Cheap on a column already coded.

    Values with equal texts (``1`` and ``"1"`` in one object column) share a category, as they share a text."""
    if is_coded_column(values):
        return values
    if isinstance(values.dtype, pd.CategoricalDtype):  # other categories: recoded through their texts
        codes, uniques = values.array.codes, np.asarray(values.cat.categories, dtype=object)
    else:
        codes, uniques = pd.factorize(values, sort=False, use_na_sentinel=True)
        uniques = np.asarray(uniques, dtype=object)
    texts = np.asarray([str(u) for u in uniques], dtype=object)
    names, inverse = np.unique(texts.astype(str), return_inverse=True)  # sorted, equal texts merged
    cat_codes = np.where(codes >= 0, inverse.reshape(-1)[np.maximum(codes, 0)] if len(inverse) else -1, -1)
    dtype = np.int8 if len(names) < 2**7 else np.int16 if len(names) < 2**15 else np.int32
    return pd.Series(pd.Categorical.from_codes(cat_codes.astype(dtype), categories=pd.Index(names, dtype="str")),
                     index=values.index, name=values.name)


def text_values(values: pd.Series) -> list[str]:
    """The distinct texts of a column (``values.astype(str).unique()``), a coded column's from its categories."""
    if is_coded_column(values) and not values.hasnans:
        present = np.flatnonzero(np.bincount(values.array.codes, minlength=len(values.cat.categories)))
        return [str(values.cat.categories[k]) for k in present]
    return [str(v) for v in values.astype(str).unique()]


def concat_coded(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(frames, ignore_index=True)`` keeping the coded columns coded: each takes the sorted union of the
    inputs' texts as its categories first (pandas would otherwise fall back to one Python object per row)."""
    if len(frames) > 1:
        shared = [c for c in frames[0].columns if all(c in f.columns and is_coded_column(f[c]) for f in frames)]
        if shared:
            union = {c: pd.Index(sorted(set().union(*(f[c].cat.categories.tolist() for f in frames))), dtype="str")
                     for c in shared}
            frames = [f.assign(**{c: f[c].cat.set_categories(union[c]) for c in shared}) for f in frames]
    return pd.concat(frames, ignore_index=True)


def text_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with its coded columns as pandas ``str`` columns again and ``rerun``/``game`` int64: what a file
    written from a judgment table holds (a Parquet file keeps plain strings and 8-byte integers, whatever the frame's
    encoding in memory)."""
    types = {c: "str" for c in frame.columns if is_coded_column(frame[c])}
    types.update({c: "int64" for c in ("rerun", "game") if c in frame.columns and pd.api.types.is_integer_dtype(frame[c].dtype)})
    return frame.astype(types) if types else frame


def judge_groups(frame: pd.DataFrame, names: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Each judge's rows, in sorted order of the judges' texts (``frame.groupby(frame["judge"].astype(str))``);
    a coded judge column grouped on its codes (no text per row). ``names``: the judges, when the caller knows them;
    one judge's group is then the table itself (same rows, order and index, no copy)."""
    if names is not None and len(names) == 1:
        return {names[0]: frame}
    judge = frame["judge"]
    if is_coded_column(judge) and not judge.hasnans:  # (a missing judge is the text 'nan' below)
        return {str(k): g for k, g in frame.groupby(judge, sort=True, observed=True)}
    return {str(k): g for k, g in frame.groupby(judge.astype(str), sort=True)}


def is_coded(frame: pd.DataFrame) -> bool:
    """Whether every id column ``frame`` holds is already a categorical of its sorted texts."""
    return all(is_coded_column(frame[c]) for c in (*ID_COLUMNS, "source") if c in frame.columns)


def coded_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The judgment frame with its id columns (``judge``, ``model``, ``item_id``, ``variant``, ``source``) coded.

    Parameters
    ----------
    frame:
        A judgment table (the contract columns of ``biasbound.data.tables.COLUMNS``, or any subset).

    Returns
    -------
    pandas.DataFrame
        The same rows, index and other columns; each id column a ``Categorical`` whose categories are the column's
        distinct texts (``str``) in sorted order, a missing id missing. ``frame`` itself when it is already coded
        (idempotent, no copy); the caller's frame is never changed.

    Notes
    -----
    A coded frame gives the same numbers everywhere a string frame does: ``frame[c] == text``, ``unique``,
    ``groupby`` (pandas' ``observed=True``) and ``astype(str)`` see the same texts.
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"The 'frame' parameter of coded_frame must be a pandas DataFrame. Got {type(frame).__name__} "
                        "instead.")
    if is_coded(frame):
        return frame
    out = frame.copy(deep=False)
    for c in (*ID_COLUMNS, "source"):
        if c in out.columns:
            out[c] = text_categorical(out[c])
    return out


class ColumnCodes:
    """Integer codes of a frame's id columns, each column coded once and reused by every key built from it."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def column(self, col: str, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, uniques)`` of one column as strings (missing values get the last code, the uniques a NaN); with
        ``sort`` the uniques are in sorted order. A coded column's codes are its categorical codes (sorted already)."""
        key = f"{col}:{sort}"
        if key in self.cols:
            return self.cols[key]
        values = self.frame[col]
        if is_coded_column(values):
            codes = values.array.codes
            uniques = np.asarray(values.cat.categories, dtype=object)
            if (codes < 0).any():  # a missing id is one more value
                codes = np.where(codes < 0, len(uniques), codes.astype(np.int64))
                uniques = np.append(uniques, np.nan)
            self.cols[key] = (codes, uniques)
        elif (not sort and pd.api.types.is_integer_dtype(values.dtype) and len(values)
              and 0 <= values.min() and values.max() < 2**16):
            # small nonnegative integers (rerun, game) are their own codes: distinct integers are distinct strings
            codes = values.to_numpy()
            self.cols[key] = (codes, np.asarray([str(k) for k in range(int(codes.max()) + 1)], dtype=object))
        elif not sort:
            if pd.api.types.is_integer_dtype(values.dtype):  # distinct integers are distinct strings
                codes, uniques = pd.factorize(values, sort=False)
                uniques = np.asarray([str(u) for u in uniques], dtype=object)
            else:
                codes, uniques = pd.factorize(values.astype(str), sort=False)
                uniques = np.asarray(uniques, dtype=object)
            codes = codes.astype(np.int64)
            if (codes < 0).any():  # a missing id is one more value
                codes[codes < 0] = len(uniques)
                uniques = np.append(uniques, np.nan)
            self.cols[key] = (codes, uniques)
        else:  # the unsorted codes renumbered by their names' order (missing stays last)
            codes, uniques = self.column(col)
            named = len(uniques) - int(len(uniques) > 0 and not isinstance(uniques[-1], str))
            order = np.argsort(uniques[:named].astype(str), kind="stable")
            rank = np.empty(len(uniques), dtype=np.int64)
            rank[order] = np.arange(named)
            rank[named:] = np.arange(named, len(uniques))
            self.cols[key] = (rank[codes], np.concatenate([uniques[:named][order], uniques[named:]]))
        return self.cols[key]

    def present(self, cols: list[str]) -> dict[str, np.ndarray] | None:
        """The codes of ``cols`` (equal values <=> equal codes), or None when one holds a missing id (a consumer such
        as ``observed._match`` then takes its own route for missing keys)."""
        out = {}
        for col in cols:
            codes, uniques = self.column(col)
            if len(uniques) and not isinstance(uniques[-1], str):  # the appended missing value
                return None
            out[col] = codes
        return out

    def key(self, cols: list[str]) -> np.ndarray:
        """One int64 code per row for the tuple of ``cols``: equal tuples give equal codes, every code below
        ``max(4 · rows, 2**20)`` (a table index). The mixed-radix code itself when it fits that bound, else
        factorised (codes in order of first appearance of the tuple)."""
        bound = max(4 * len(self.frame), 2**20)
        key: np.ndarray | None = None
        radix = 1  # key < radix: the tuple so far in mixed radix, factorised only when the next digit would overflow
        for col in cols:
            codes, uniques = self.column(col)
            base = max(len(uniques), 1)  # codes lie in [0, len(uniques)) (a missing id is the last unique)
            if base == 1:  # one value: no digit
                continue
            if key is None:  # the first digit: a copy of its codes (never the frame's own array)
                key, radix = codes.astype(np.int64), base
                continue
            if radix * base >= 2**62:
                key, firsts = pd.factorize(key, sort=False)
                key, radix = key.astype(np.int64), max(len(firsts), 1)
            key *= base
            key += codes
            radix *= base
        if key is None:
            return np.zeros(len(self.frame), dtype=np.int64)
        if radix <= bound:
            return key
        key, _ = pd.factorize(key, sort=False)
        return key.astype(np.int64)


def duplicated_keys(ids: ColumnCodes, keep: str | bool = False) -> np.ndarray:
    """Rows whose judgment key (:data:`KEY`) another row also holds: every copy (``keep=False``) or every copy after
    the first (``keep="first"``), as ``DataFrame.duplicated`` marks them, found on the integer codes."""
    codes = ids.key(KEY)  # every code below max(4 · rows, 2**20): a table of one byte per code
    seen = np.zeros(int(codes.max()) + 1 if len(codes) else 0, dtype=bool)
    seen[codes] = True
    if int(np.count_nonzero(seen)) == len(codes):  # as many distinct keys as rows: none repeats
        return np.zeros(len(codes), dtype=bool)
    del seen
    repeated = np.bincount(codes)[codes] > 1
    if keep is False:
        return repeated
    at = np.flatnonzero(repeated)  # the few repeated rows: the first copy of each key kept
    first = pd.Series(codes[at]).duplicated(keep="first").to_numpy()
    out = np.zeros(len(codes), dtype=bool)
    out[at[first]] = True
    return out

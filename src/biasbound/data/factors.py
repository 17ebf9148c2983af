"""Load a factor-score table (CSV or JSONL) for :func:`biasbound.schematic.schematic_adherence`.

A JSONL file holds one JSON object per line; columns are dotted paths into nested objects
(``grade.accuracy`` reads ``{"grade": {"accuracy": 7}}``). A CSV file has flat columns whose
names are used as given. A missing value (an absent key, JSON null, an empty cell, or the
text ``NA``/``NaN``/``null``/``None``) drops its row, counted, never filled; any other value that
is not a finite number (``"ten"``, ``inf``, ``true``, a list) is bad input: an error naming the
file, line and column — it is never quietly treated as missing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biasbound._exceptions import DataFormatError, InputError
from biasbound.data._io import iter_json_records

__all__ = ["load_factor_table"]

_MISSING = object()


def _lookup(record: Mapping[str, Any], dotted: str) -> Any:
    if dotted in record:
        return record[dotted]
    node: Any = record
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


_MISSING_TEXT = frozenset({"", "na", "nan", "null", "none", "n/a"})


class _NotANumber(Exception):
    pass


def _number(value: Any) -> float:
    """A float for numbers and numeric strings, NaN for a missing value; raises _NotANumber otherwise."""
    if value is _MISSING or value is None:
        return math.nan
    if isinstance(value, bool):
        raise _NotANumber(json_text(value))
    if isinstance(value, (int, float)):
        v = float(value)
    elif isinstance(value, str):
        if value.strip().lower() in _MISSING_TEXT:
            return math.nan
        try:
            v = float(value.strip())
        except ValueError:
            raise _NotANumber(repr(value)) from None
    else:
        raise _NotANumber(json_text(value))
    if not math.isfinite(v):
        if math.isnan(v):
            return math.nan
        raise _NotANumber(repr(value))
    return v


def json_text(value: Any) -> str:
    import json

    try:
        return json.dumps(value)[:40]
    except (TypeError, ValueError):
        return type(value).__name__


def _format(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    last = suffixes[-1] if suffixes else ""
    if last in (".jsonl", ".ndjson"):
        return "jsonl"
    if last == ".csv":
        return "csv"
    raise DataFormatError(
        "the file must be .csv or .jsonl (optionally .gz); got suffix " + repr(last or path.name) + ".", path=str(path)
    )


def _read_jsonl(path: Path, columns: Sequence[str]) -> tuple[dict[str, list[Any]], list[int]]:
    out: dict[str, list[Any]] = {c: [] for c in columns}
    lines: list[int] = []
    for ln, record in iter_json_records(path):
        for c in columns:
            out[c].append(_lookup(record, c))
        lines.append(ln)
    return out, lines


def _read_csv(path: Path, columns: Sequence[str]) -> tuple[dict[str, list[Any]], list[int]]:
    from biasbound.data._io import read_text
    from biasbound.data.tables import _read_delimited

    text = read_text(path)
    if not text.strip():
        raise DataFormatError("the file is empty.", path=str(path))
    frame, lines = _read_delimited(path, text, "csv", frozenset())
    out: dict[str, list[Any]] = {}
    for c in columns:
        out[c] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in frame[c].tolist()] \
            if c in frame.columns else [_MISSING] * len(frame)
    return out, [int(v) for v in lines]


def load_factor_table(
    path: str | Path,
    *,
    factors: Sequence[str],
    overall: str,
    filters: Mapping[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Read factor scores and overall scores from a CSV or JSONL file.

    Parameters
    ----------
    path : str or pathlib.Path
        A ``.csv`` or ``.jsonl`` file (optionally gzipped).
    factors : sequence of str
        Factor columns (dotted paths for JSONL), at least one.
    overall : str
        Overall-score column.
    filters : mapping of str to value or list of values, optional
        Keep only rows whose column equals the value (or one of the values), compared as strings.

    Returns
    -------
    factors : numpy.ndarray of shape (n, k)
        Rows with every value present.
    overall : numpy.ndarray of shape (n,)
    n_dropped : int
        Rows (after filtering) dropped because a factor or the overall score was missing or not a number.

    Raises
    ------
    DataFormatError
        Missing file, unsupported suffix, malformed JSON line (with its line number), or a
        column that no row has.
    InputError
        Empty ``factors``.
    """
    p = Path(path)
    factors = list(factors)
    if not factors or not all(isinstance(f, str) and f for f in factors):
        raise InputError(f"The 'factors' parameter of load_factor_table must name at least one column. Got {factors!r} instead.")
    if not isinstance(overall, str) or not overall:
        raise InputError(f"The 'overall' parameter of load_factor_table must name a column. Got {overall!r} instead.")
    repeated = sorted({f for f in factors if factors.count(f) > 1})
    if repeated:
        raise InputError(f"The 'factors' parameter of load_factor_table must name each column once. Got {repeated[0]!r} "
                         "more than once instead.")
    if overall in factors:
        raise InputError(f"The 'overall' parameter of load_factor_table must not be one of the factors (R² would be 1 "
                         f"by construction). Got {overall!r} instead.")
    if not p.is_file():
        raise DataFormatError("the file does not exist; check the path.", path=str(p))
    fmt = _format(p)
    filters = dict(filters or {})
    columns = list(dict.fromkeys([*factors, overall, *filters]))
    raw, lines = _read_jsonl(p, columns) if fmt == "jsonl" else _read_csv(p, columns)
    n = len(lines)
    if n == 0:
        raise DataFormatError("the file holds no rows.", path=str(p))
    for c in columns:
        if all(v is _MISSING for v in raw[c]):
            raise DataFormatError(f"no row has the column {c!r}; check the name (JSONL columns are dotted paths).", path=str(p))
    keep = np.ones(n, dtype=bool)
    for c, wanted in filters.items():
        allowed = {str(w) for w in (wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted])}
        keep &= np.array([v is not _MISSING and str(v) in allowed for v in raw[c]], dtype=bool)
    def numbers(c: str) -> list[float]:
        vals = []
        for ln, v, kept in zip(lines, raw[c], keep):
            if not kept:  # a row the filters leave out is not read
                vals.append(math.nan)
                continue
            try:
                vals.append(_number(v))
            except _NotANumber as exc:
                raise DataFormatError(
                    f"the value {exc} of column {c!r} is not a finite number; fix it, or leave it empty to mark "
                    "it missing (the row is then dropped and counted).", path=str(p), line=ln
                ) from None
        return vals

    x = np.array([numbers(c) for c in factors], dtype=float).T.reshape(n, len(factors))
    y = np.array(numbers(overall), dtype=float)
    x, y = x[keep], y[keep]
    complete = np.isfinite(x).all(axis=1) & np.isfinite(y)
    return x[complete], y[complete], int(np.count_nonzero(~complete))

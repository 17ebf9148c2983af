"""Load a factor-score table (CSV or JSONL) for :func:`biasbound.schematic.schematic_adherence`.

A JSONL file holds one JSON object per line; columns are dotted paths into nested objects
(``grade.accuracy`` reads ``{"grade": {"accuracy": 7}}``). A CSV file has flat columns whose
names are used as given. Missing or non-numeric values are missing: the row is dropped and
counted, never filled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

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


def _number(value: Any) -> float:
    """A float for numbers and numeric strings, NaN for anything else (missing)."""
    if value is _MISSING or value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            v = float(value.strip())
        except ValueError:
            return math.nan
        return v
    return math.nan


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


def _read_jsonl(path: Path, columns: Sequence[str]) -> tuple[dict[str, list[Any]], int]:
    out: dict[str, list[Any]] = {c: [] for c in columns}
    n = 0
    for _, record in iter_json_records(path):
        for c in columns:
            out[c].append(_lookup(record, c))
        n += 1
    return out, n


def _read_csv(path: Path, columns: Sequence[str]) -> tuple[dict[str, list[Any]], int]:
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"the file cannot be parsed as CSV ({exc}).", path=str(path)) from exc
    except pd.errors.EmptyDataError as exc:
        raise DataFormatError("the file is empty.", path=str(path)) from exc
    out: dict[str, list[Any]] = {}
    for c in columns:
        out[c] = list(frame[c]) if c in frame.columns else [_MISSING] * len(frame)
    return out, len(frame)


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
    if not p.is_file():
        raise DataFormatError("the file does not exist; check the path.", path=str(p))
    fmt = _format(p)
    filters = dict(filters or {})
    columns = list(dict.fromkeys([*factors, overall, *filters]))
    raw, n = _read_jsonl(p, columns) if fmt == "jsonl" else _read_csv(p, columns)
    if n == 0:
        raise DataFormatError("the file holds no rows.", path=str(p))
    for c in columns:
        if all(v is _MISSING for v in raw[c]):
            raise DataFormatError(f"no row has the column {c!r}; check the name (JSONL columns are dotted paths).", path=str(p))
    keep = np.ones(n, dtype=bool)
    for c, wanted in filters.items():
        allowed = {str(w) for w in (wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted])}
        keep &= np.array([v is not _MISSING and str(v) in allowed for v in raw[c]], dtype=bool)
    x = np.array([[_number(v) for v in raw[c]] for c in factors], dtype=float).T.reshape(n, len(factors))
    y = np.array([_number(v) for v in raw[overall]], dtype=float)
    x, y = x[keep], y[keep]
    complete = np.isfinite(x).all(axis=1) & np.isfinite(y)
    return x[complete], y[complete], int(np.count_nonzero(~complete))

"""The id columns' integer codes, each column factorised once per certify run (private).

Made by ``_settings._check_frame`` (its repeated-key check) and handed on to ``_coverage.prepare``, the judge's
sorted model/item codes, the judgments digest, the observed neighbours and the judge card; its own module so
that both the settings and the coverage modules can import it without importing each other.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__: list[str] = []


class _ColumnCodes:
    """Integer codes of the id columns, each column factorised once and reused by every key built from it."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame
        self.cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def column(self, col: str, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, uniques)`` of one column as strings; with ``sort`` the uniques are in sorted order
        (missing values get the last code)."""
        key = f"{col}:{sort}"
        if key not in self.cols and not sort:
            values = self.frame[col]
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
        elif key not in self.cols:  # the unsorted codes renumbered by their names' order (missing stays last)
            codes, uniques = self.column(col)
            named = len(uniques) - int(len(uniques) > 0 and not isinstance(uniques[-1], str))
            order = np.argsort(uniques[:named].astype(str), kind="stable")
            rank = np.empty(len(uniques), dtype=np.int64)
            rank[order] = np.arange(named)
            rank[named:] = np.arange(named, len(uniques))
            self.cols[key] = (rank[codes], np.concatenate([uniques[:named][order], uniques[named:]]))
        return self.cols[key]

    def present(self, cols: list[str]) -> dict[str, np.ndarray] | None:
        """The unsorted codes of ``cols`` (equal values <=> equal codes), or None when one holds a missing id
        (a consumer such as ``observed._match`` then takes its own route for missing keys)."""
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
        key = np.zeros(len(self.frame), dtype=np.int64)
        radix = 1  # key < radix: the tuple so far in mixed radix, factorised only when the next digit would overflow
        for col in cols:
            codes, uniques = self.column(col)
            base = len(uniques) + 1
            if radix * base >= 2**62:
                key, firsts = pd.factorize(key, sort=False)
                key, radix = key.astype(np.int64), max(len(firsts), 1)
            key, radix = key * base + codes, radix * base
        if radix <= bound:
            return key
        key, _ = pd.factorize(key, sort=False)
        return key.astype(np.int64)

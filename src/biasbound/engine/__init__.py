"""The reduction of judgment rows to sufficient statistics, run by an engine (DuckDB by default, or Spark).

The reduction is the only step of a certification that touches every row: after it, everything is numpy on
(judge, model, item, generator) cells, so memory grows with models × items, not with rows, reruns or generators.
:func:`reduce` reads Parquet, CSV and JSONL files (or a pandas frame) through the engine, checks the judgment
keys once, and returns :class:`Statistics`:

- ``cells``: per (judge, model, item_id) the canonical judgment (variant ``original``, rerun 0, game 0 or 1):
  ``n`` scores, their ``sum`` and ``sumsq``, ``missing`` (NaN or null scores); and both orders of a pairwise
  item (games 1 and 2): ``n_both``, ``sum_both`` — the items' means;
- ``neighbours``: per (judge, model, item_id, generator) the observed Hamming-1 neighbours of the generators
  ``swap``, ``rerun`` and ``variant:NAME``, paired with their canonical rows as
  :func:`biasbound.neighbors.observed.observed_neighbors` pairs them: ``n`` finite differences
  ``original − neighbour``, their ``sum`` and ``sumsq``, ``missing`` (a NaN on either side), ``unmatched``
  (no canonical row), and ``tail_k``: how many ``|difference| > levels[k]``.

Sums are compensated (DuckDB's ``fsum``, Spark's ``sum`` over exact binary fractions) and agree with numpy's
to within 1e-12 relative; counts are exact.
"""

from __future__ import annotations

from biasbound.engine._duckdb import reduce_duckdb
from biasbound.engine._read import load_spark
from biasbound.engine._reduce import reduce
from biasbound.engine._stats import DEFAULT_LEVELS, Statistics
from biasbound.parameters import ENGINES

__all__ = ["DEFAULT_LEVELS", "ENGINES", "Statistics", "load_spark", "reduce", "reduce_duckdb"]

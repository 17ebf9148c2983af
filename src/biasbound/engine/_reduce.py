"""The one entry of the reduction: :func:`reduce` picks the engine (DuckDB or Spark) and runs it."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from biasbound._exceptions import InputError
from biasbound.parameters import ENGINES, validate_params
from biasbound.engine._stats import DEFAULT_LEVELS, Statistics

__all__ = ["reduce"]


@validate_params
def reduce(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pd.DataFrame,
    *,
    engine: str = "duckdb",
    scale: tuple[float, float] | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    **options: Any,
) -> Statistics:
    """Reduce judgment rows to :class:`Statistics` on ``engine`` (``"duckdb"``, or ``"spark"`` with ``session=``).

    ``source``: Parquet / CSV / JSONL file(s) of one format (by suffix), or a pandas frame (DuckDB only).
    ``scale``: the raw score scale mapped onto [0, 1] (default: scores already on [0, 1]).
    ``options``: ``memory_limit``, ``threads``, ``partitions`` (DuckDB); ``session`` (Spark).
    """
    if engine == "duckdb":
        from biasbound.engine._duckdb import reduce_duckdb

        return reduce_duckdb(source, scale=scale, levels=levels, **options)
    if engine == "spark":
        from biasbound.engine._spark import reduce_spark

        return reduce_spark(source, scale=scale, levels=levels, **options)
    raise InputError(f"The 'engine' parameter of reduce must be one of {list(ENGINES)}. Got {engine!r} instead.")

"""Statistics, the engine-independent SQL of the reduction, and :func:`reduce` (engine dispatch)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError


#: Levels of the tail counts: ``tail_k`` counts the neighbours with ``|difference| > levels[k]``
#: (Arena-Hard's score steps).
DEFAULT_LEVELS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75)

#: Columns of a judgment table the reduction reads; ``variant``, ``rerun`` and ``game`` are optional.
REQUIRED: tuple[str, ...] = ("judge", "model", "item_id", "score")
KEY: tuple[str, ...] = ("judge", "model", "item_id", "variant", "rerun", "game")


@dataclass(frozen=True)
class Statistics:
    """Sufficient statistics of a judgment table (see :mod:`biasbound.engine`).

    ``cells`` and ``neighbours`` hold integer codes (``judge``, ``model``, ``item_id``, ``generator``) into the
    name arrays ``judges``, ``models``, ``items``, ``generators`` (each sorted by text), sorted by their codes;
    no row-sized or cell-sized string ever leaves the engine. ``rows`` counts the rows read.
    """

    cells: pd.DataFrame
    neighbors: pd.DataFrame
    judges: np.ndarray
    models: np.ndarray
    items: np.ndarray
    generators: np.ndarray
    levels: tuple[float, ...]
    rows: int
    engine: str

    def named(self, which: str) -> pd.DataFrame:
        """``cells`` or ``neighbours`` with the codes replaced by their names (for inspection and small tables)."""
        frame = (self.cells if which == "cells" else self.neighbors).copy()
        for col, names in (("judge", self.judges), ("model", self.models), ("item_id", self.items),
                           ("generator", self.generators)):
            if col in frame:
                frame[col] = names[frame[col].to_numpy()]
        return frame


def check_levels(levels: Sequence[float]) -> tuple[float, ...]:
    out = tuple(float(x) for x in levels)
    if not out or any(math.isnan(x) or x < 0 for x in out) or list(out) != sorted(set(out)):
        raise InputError(f"The 'levels' parameter of reduce must be increasing non-negative numbers. Got {list(levels)!r} instead.")
    return out


def check_scale(scale: tuple[float, float] | None) -> tuple[float, float]:
    if scale is None:
        return 0.0, 1.0
    lo, hi = (float(scale[0]), float(scale[1]))
    if not lo < hi:
        raise InputError(f"The 'scale' parameter of reduce must be (lo, hi) with lo < hi. Got {scale!r} instead.")
    return lo, hi


def text_rows(columns: Sequence[str], scale: tuple[float, float]) -> str:
    """SELECT list turning a source's columns into judgment rows (ids as text; ``s``: score on [0, 1], NULL if missing)."""
    have = set(columns)
    missing = [c for c in REQUIRED if c not in have]
    if missing:
        raise InputError(f"The judgment table must have the columns {list(REQUIRED)}; {missing} missing.")
    lo, hi = scale
    variant = "CAST(variant AS STRING)" if "variant" in have else "'original'"
    rerun = "CAST(rerun AS BIGINT)" if "rerun" in have else "CAST(0 AS BIGINT)"
    game = "CAST(game AS BIGINT)" if "game" in have else "CAST(0 AS BIGINT)"
    # NaN and null are both a missing judgment; (x - lo) / (hi - lo) as the table loader maps scores
    s = (f"CASE WHEN score IS NULL OR isnan(CAST(score AS DOUBLE)) THEN NULL "
         f"ELSE (CAST(score AS DOUBLE) - {lo!r}) / ({hi!r} - {lo!r}) END")
    return (f"CAST(judge AS STRING) AS judge, CAST(model AS STRING) AS model, CAST(item_id AS STRING) AS item_id, "
            f"coalesce({variant}, 'original') AS variant, coalesce({rerun}, 0) AS rerun, coalesce({game}, 0) AS game, "
            f"{s} AS s")


#: The dictionaries of the id columns: (name, SELECT over the text rows ``{rows}``), codes by text order.
#: Variant code 0 is ``original``; the generators are swap (0), rerun (1) and variant:NAME (1 + its code).
DICTIONARIES: tuple[tuple[str, str], ...] = tuple(
    (f"bb_{col}", (f"SELECT {col} AS name, CAST(row_number() OVER (ORDER BY {col}) - 1 AS INT) AS code "
                   f"FROM (SELECT DISTINCT {col} FROM {{rows}} WHERE {col} IS NOT NULL) d"))
    for col in ("judge", "model", "item_id")
) + (("bb_variant", ("SELECT variant AS name, CAST(row_number() OVER (ORDER BY variant <> 'original', variant) - 1 "
                     "AS INT) AS code FROM (SELECT DISTINCT variant FROM {rows} UNION SELECT 'original' AS variant) d")),)


def coded_rows(rows: str) -> str:
    """The text rows ``rows`` with their ids replaced by dictionary codes (a row with a null id has no code: dropped
    by the inner joins, as the table loader refuses it)."""
    return (f"SELECT j.code AS judge, m.code AS model, i.code AS item_id, v.code AS variant, r.rerun, r.game, r.s "
            f"FROM {rows} r JOIN bb_judge j ON r.judge = j.name JOIN bb_model m ON r.model = m.name "
            f"JOIN bb_item_id i ON r.item_id = i.name JOIN bb_variant v ON r.variant = v.name")


def reduction_sql(rows: str, levels: tuple[float, ...], fsum: str) -> tuple[str, str, str]:
    """(duplicate-key probe, cells statement, neighbours statement) over the coded rows relation ``rows``.

    The generators pair rows as :func:`biasbound.neighbors.observed.observed_neighbors` does: the canonical row
    is variant ``original`` (code 0), rerun 0, game 0 or 1; ``swap``'s neighbour (generator 0) is game 2 of it
    (paired with game 1), ``rerun``'s (1) the reruns >= 1 and ``variant:NAME``'s (1 + variant code) the rerun-0
    row of variant NAME, each of the same game.
    """
    key = ", ".join(KEY)
    dup = (f"SELECT {key}, count(*) AS copies FROM {rows} GROUP BY {key} HAVING count(*) > 1 "
           f"ORDER BY {key} LIMIT 1")
    canon = "variant = 0 AND rerun = 0 AND game IN (0, 1)"
    both = "variant = 0 AND rerun = 0 AND game IN (1, 2)"
    cells = (f"SELECT judge, model, item_id, "
             f"sum(CASE WHEN {canon} AND s IS NOT NULL THEN 1 ELSE 0 END) AS n, "
             f"coalesce({fsum}(CASE WHEN {canon} THEN s END), 0) AS sum, "
             f"coalesce({fsum}(CASE WHEN {canon} THEN s * s END), 0) AS sumsq, "
             f"sum(CASE WHEN {canon} AND s IS NULL THEN 1 ELSE 0 END) AS missing, "
             f"sum(CASE WHEN {both} AND s IS NOT NULL THEN 1 ELSE 0 END) AS n_both, "
             f"coalesce({fsum}(CASE WHEN {both} THEN s END), 0) AS sum_both "
             f"FROM {rows} WHERE variant = 0 AND rerun = 0 GROUP BY judge, model, item_id")
    tails = ", ".join(f"sum(CASE WHEN abs(d) > {t!r} THEN 1 ELSE 0 END) AS tail_{k}" for k, t in enumerate(levels))
    nb_rows = (f"SELECT judge, model, item_id, 0 AS generator, 1 AS cgame, s FROM {rows} "
               f"WHERE variant = 0 AND rerun = 0 AND game = 2 UNION ALL "
               f"SELECT judge, model, item_id, 1 AS generator, game AS cgame, s FROM {rows} "
               f"WHERE variant = 0 AND rerun >= 1 AND game IN (0, 1) UNION ALL "
               f"SELECT judge, model, item_id, 1 + variant AS generator, game AS cgame, s FROM {rows} "
               f"WHERE variant <> 0 AND rerun = 0 AND game IN (0, 1)")
    nb = (f"SELECT judge, model, item_id, generator, count(d) AS n, coalesce({fsum}(d), 0) AS sum, "
          f"coalesce({fsum}(d * d), 0) AS sumsq, "
          f"sum(CASE WHEN matched AND d IS NULL THEN 1 ELSE 0 END) AS missing, "
          f"sum(CASE WHEN matched THEN 0 ELSE 1 END) AS unmatched, {tails} FROM ("
          f"SELECT x.judge, x.model, x.item_id, x.generator, o.s - x.s AS d, o.judge IS NOT NULL AS matched "
          f"FROM ({nb_rows}) x LEFT JOIN (SELECT judge, model, item_id, game, s FROM {rows} WHERE {canon}) o "
          f"ON x.judge = o.judge AND x.model = o.model AND x.item_id = o.item_id AND o.game = x.cgame) j "
          f"GROUP BY judge, model, item_id, generator")
    return dup, cells, nb


def duplicate_error(row: Sequence[Any], source: str, names: dict[str, np.ndarray]) -> InputError:
    vals = [names[k][int(v)] if k in names else int(v) for k, v in zip(KEY, row)]
    key = ", ".join(f"{k}={v!r}" for k, v in zip(KEY, vals))
    return InputError(f"{source}: the judgment key ({key}) occurs {row[-1]} times; give each judgment once.")


def _columns(parts: Sequence[dict[str, Any]], ints: Sequence[str]) -> dict[str, np.ndarray]:
    """Concatenate the engine's column dicts (no NULL: counts and coalesced sums): codes and counts as int64,
    sums as float64."""
    out: dict[str, np.ndarray] = {}
    for c in list(parts[0]):  # popped as they are copied: one column at a time held twice
        col = np.concatenate([np.asarray(p.pop(c)) for p in parts])
        out[c] = col.astype(np.int64 if c in ints else np.float64, copy=False)
    return out


def finish(cells: Sequence[dict[str, Any]], nb: Sequence[dict[str, Any]], levels: tuple[float, ...],
           names: dict[str, np.ndarray], rows: int, engine: str) -> Statistics:
    """The engine's column parts as frames sorted by their codes (one int64 key, one argsort each)."""
    sizes = [len(names["judge"]), len(names["model"]), len(names["item_id"]), len(names["variant"]) + 1]
    c = _columns(cells, ["judge", "model", "item_id", "n", "missing", "n_both"])
    order = np.argsort((c["judge"] * sizes[1] + c["model"]) * sizes[2] + c["item_id"])  # keys are unique
    cell_frame = pd.DataFrame({k: c.pop(k)[order] for k in list(c)}, copy=False)
    n = _columns(nb, ["judge", "model", "item_id", "generator", "n", "missing", "unmatched",
                      *[f"tail_{k}" for k in range(len(levels))]])
    order = np.argsort(((n["judge"] * sizes[1] + n["model"]) * sizes[2] + n["item_id"]) * sizes[3] + n["generator"])
    nb_frame = pd.DataFrame({k: n.pop(k)[order] for k in list(n)}, copy=False)
    variants = names["variant"]
    generators = np.array(["swap", "rerun", *[f"variant:{v}" for v in variants[1:]]], dtype=object)
    return Statistics(cells=cell_frame, neighbors=nb_frame, judges=names["judge"], models=names["model"],
                      items=names["item_id"], generators=generators, levels=levels, rows=rows, engine=engine)


def file_list(source: Any) -> tuple[list[str], str]:
    """The files of ``source`` and their one format (parquet, csv, tsv, jsonl)."""
    paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
    if not paths:
        raise InputError("The 'source' parameter of reduce must name at least one file. Got none.")
    fmts = set()
    for p in paths:
        path = Path(p)
        if not path.is_file():
            raise InputError(f"The 'source' parameter of reduce names {str(path)!r}, which is not a file.")
        suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
        fmt = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl",
               ".ndjson": "jsonl"}.get(suffixes[-1] if suffixes else "")
        if fmt is None:
            raise InputError(f"{path}: the engine reads .parquet, .csv, .tsv and .jsonl files; give one of those.")
        fmts.add(fmt)
    if len(fmts) > 1:
        raise InputError(f"The 'source' parameter of reduce must name files of one format. Got {sorted(fmts)}.")
    return [str(p) for p in paths], fmts.pop()

"""The reduction on Spark (PySpark, local mode or a cluster, Spark Connect included): the same SQL as DuckDB's.

Only the reduced rows (one per (judge, model, item) and per (judge, model, item, generator)) reach the driver;
everything after them runs in numpy there. Tables partitioned by (judge, model) need no shuffle for the
groupings (each group lies in one partition); see docs/guides/scale.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound.engine._stats import (
    DEFAULT_LEVELS,
    DICTIONARIES,
    Statistics,
    check_levels,
    check_scale,
    coded_rows,
    duplicate_error,
    file_list,
    finish,
    reduction_sql,
    text_rows,
)


def reduce_spark(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | pd.DataFrame | Any,
    *,
    scale: tuple[float, float] | None = None,
    levels: Sequence[float] = DEFAULT_LEVELS,
    session: Any = None,
) -> Statistics:
    """:func:`biasbound.engine.reduce` on Spark.

    ``source``: Parquet / CSV / JSONL file(s) (paths the cluster can read: local, HDFS, S3 with the cluster's
    connectors), a pandas frame, or a Spark DataFrame already holding a judgment table. ``session``: the
    SparkSession to run on (default: ``SparkSession.builder.getOrCreate()``, local mode without a cluster).
    """
    try:
        from pyspark.sql import DataFrame as SparkFrame
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError("The Spark engine needs PySpark: pip install 'biasbound[spark]' (and a Java 17+ runtime).") from None
    lv, sc = check_levels(levels), check_scale(scale)
    spark = session if session is not None else SparkSession.builder.getOrCreate()
    if isinstance(source, SparkFrame):
        raw, what = source, "the Spark frame"
    elif isinstance(source, pd.DataFrame):
        raw, what = spark.createDataFrame(source), "the frame"
    else:
        paths = [source] if isinstance(source, (str, os.PathLike)) else list(source)
        remote = [str(p) for p in paths if "://" in str(p)]
        if remote:  # on the cluster's file system: the reader checks existence and format
            files, fmt = [str(p) for p in paths], str(remote[0]).rsplit(".", 1)[-1].lower()
        else:
            files, fmt = file_list(paths)
        what = ", ".join(files)
        reader = spark.read
        if fmt in ("parquet", "pq"):
            raw = reader.parquet(*files)
        elif fmt in ("csv", "tsv"):
            raw = reader.csv(files, header=True, sep="," if fmt == "csv" else "\t")  # every column as text
        elif fmt in ("jsonl", "ndjson", "json"):
            raw = reader.json(files)
        else:
            raise InputError(f"{what}: the engine reads .parquet, .csv, .tsv and .jsonl files; give one of those.")
    raw.createOrReplaceTempView("bb_raw")
    try:
        spark.sql(f"SELECT {text_rows(raw.columns, sc)} FROM bb_raw").createOrReplaceTempView("bb_text")
        names: dict[str, np.ndarray] = {}
        for table, sql in DICTIONARIES:  # small: broadcast to every executor by the joins below
            spark.sql(sql.format(rows="bb_text")).cache().createOrReplaceTempView(table)
            got = spark.sql(f"SELECT name FROM {table} ORDER BY code").toPandas()["name"]
            names[table[3:]] = np.asarray(got.to_numpy(), dtype=object)
        spark.sql(coded_rows("bb_text")).createOrReplaceTempView("bb_coded")
        dup, cell_sql, nb_sql = reduction_sql("bb_coded", lv, "sum")
        found = spark.sql(dup).collect()
        if found:
            raise duplicate_error(list(found[0]), what, names)
        rows = int(raw.count())
        cells = {c: v.to_numpy(dtype=float) for c, v in spark.sql(cell_sql).toPandas().items()}
        nb = {c: v.to_numpy(dtype=float) for c, v in spark.sql(nb_sql).toPandas().items()}
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - Spark raises its own analysis and runtime errors; one sentence for all
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{what}: cannot be reduced on Spark ({first}).") from None
    return finish([cells], [nb], lv, names, rows, "spark")

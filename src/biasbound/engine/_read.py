"""Judgment tables read on Spark into the coded judgment frame certify takes (``certify --engine spark``).

:func:`load_spark` reads judgment tables in the contract schema (``judge, model, item_id, score`` and optionally
``variant, rerun, game, verdict, human``) from Parquet / CSV / TSV / JSONL paths the cluster can read, or from
Spark DataFrames, and returns the :class:`~biasbound.data.loading.LoadedInputs` that
:func:`biasbound.pipeline.certify` takes. Every check of a row runs on the cluster, as
:func:`biasbound.data.tables.load_table` makes it on one machine: required columns, empty ids, ``rerun`` and
``game`` values, scores that are no finite number or lie outside the scale, judgment keys given twice. The id
dictionaries (judges, models, items, variants, verdicts: the distinct values, few) are collected, turned into
names exactly as the loader turns a value into a name (text, model and item stripped, Unicode NFC), sorted and
sent back as small tables; the scale is the given one or, when none is given, the one the loader's own
:func:`~biasbound.data.tables.infer_scale` rule picks from the distinct score values and their counts. Only
integer codes, raw scores and the row number reach the driver (Arrow), where the id columns become pandas
``Categorical`` columns whose categories are the sorted names: the coded judgment frame.

On local files the frame, the load report and the reading options (each input by its content) are the embedded
route's, so a certificate is the same on either route (tests/engine/test_spark_certify.py compares the output
files byte for byte); the engine is recorded nowhere in it.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError

if TYPE_CHECKING:
    from biasbound.data.loading import LoadedInputs

__all__ = ["SPARK_REFUSED", "load_spark", "spark_session"]

#: Reading options of the embedded route that the Spark reader does not take: (option, the command-line flag).
SPARK_REFUSED: tuple[tuple[str, str], ...] = (("skip_bad", "--skip-bad"), ("columns", "--columns"),
                                              ("score_map", "--score-map"), ("winner_map", "--winner-map"),
                                              ("ties", "--mt-bench-ties"), ("llmbar_view", "--llmbar-view"))
#: Each refused option's value that means "not used" (the embedded route's default).
_NOT_USED: dict[str, Any] = {"skip_bad": False, "columns": None, "score_map": None, "winner_map": None,
                             "ties": "missing", "llmbar_view": "output_1"}

#: Suffix (``.gz`` left out) -> Spark reader.
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "tsv", ".jsonl": "json",
            ".ndjson": "json"}

#: Most distinct score values collected to infer the scale (a judge's scale has a handful).
_MAX_DISTINCT_SCORES = 100_000

_KEY = ("judge", "model", "item_id", "variant", "rerun", "game")


def spark_session(session: Any = None) -> Any:
    """``session``, else ``SparkSession.builder.getOrCreate()`` (local mode without a cluster; Spark Connect when
    ``SPARK_REMOTE`` is set); a missing PySpark or a session that cannot start is one sentence."""
    if session is not None:
        return session
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise InputError("The Spark engine needs PySpark: pip install 'biasbound[spark]' (and a Java 17+ runtime, or "
                         "SPARK_REMOTE=sc://HOST:15002 for a Spark Connect server).") from None
    try:
        return SparkSession.builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - no Java runtime, a cluster out of reach: one sentence, exit code 2
        raise InputError(f"The Spark engine could not start a Spark session ({_first_line(exc)}); install a Java 17+ "
                         "runtime, set SPARK_REMOTE to a Spark Connect server, or use the embedded engine.") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__).rstrip(".")


def _refuse(options: dict[str, Any], where: str, cli: bool) -> None:
    known = dict(SPARK_REFUSED)
    for name, value in options.items():
        if name not in known:
            raise TypeError(f"{where} takes the reading options scale and session. Got {name!r} instead.")
        if value != _NOT_USED[name]:
            shown = known[name] if cli else name
            raise InputError(f"The {shown!r} {'option' if cli else 'parameter'} of {where} is not supported on the "
                             "Spark engine (it reads judgment tables in the contract schema, bad rows refused); drop "
                             "it or use the embedded engine (duckdb).")


class _Input:
    """One input: what Spark reads, its display name and (a local file or folder) its path."""

    def __init__(self, frame: Any, name: str, local: Path | None, fmt: str, stem: str | None) -> None:
        self.frame, self.name, self.local, self.fmt, self.stem = frame, name, local, fmt, stem
        self.inside = False  # every score found within the inferred scale (no row to look up)


def _inputs(sources: Sequence[Any], spark: Any, where: str) -> list[_Input]:
    from biasbound.data._inputs import check_input, display_names

    what = "'INPUT' argument" if where == "certify" else "'sources' parameter"
    for s in sources:
        if isinstance(s, pd.DataFrame):
            raise TypeError(f"The {what} of {where} takes paths or Spark DataFrames; a pandas DataFrame is read on the "
                            "embedded route (bb.certify takes it as it is).")
    texts = [str(s) for s in sources if not hasattr(s, "schema")]
    shown = display_names(texts) if texts else {}
    out: list[_Input] = []
    for k, s in enumerate(sources):
        if hasattr(s, "schema") and hasattr(s, "columns"):  # a Spark DataFrame
            out.append(_Input(s, f"<spark frame {k + 1}>", None, "frame", None))
            continue
        text = str(s)
        remote = "://" in text
        local = None if remote else Path(text)
        if local is not None and not local.exists():
            try:  # a table of the session's catalog (evals.judgments)
                table = spark.table(text) if spark.catalog.tableExists(text) else None
            except Exception:  # noqa: BLE001 - a name the catalog cannot parse is no table
                table = None
            if table is None:
                raise InputError(f"The {what} of {where} names {text!r}, which is neither a file nor a table of the "
                                 "Spark session's catalog.")
            out.append(_Input(table, text, None, "frame", None))
            continue
        if local is not None:
            check_input(local)
        suffixes = [x.lower() for x in Path(text.rstrip("/")).suffixes if x.lower() not in (".gz", ".bz2")]
        fmt = _FORMATS.get(suffixes[-1]) if suffixes else None
        if fmt is None:
            if local is not None and local.is_file():
                raise DataFormatError("the Spark engine reads .parquet, .csv, .tsv and .jsonl judgment tables (or a "
                                      "folder of Parquet files); give one of those or use the embedded engine.",
                                      path=shown[text])
            fmt = "parquet"  # a folder (or a cluster path) of Parquet files
        reader = spark.read
        at = text if local is None else str(local.resolve())  # Spark resolves a relative path in its own folder
        try:
            if fmt == "parquet":
                frame = reader.parquet(at)
            elif fmt in ("csv", "tsv"):  # every column as text (ids keep leading zeros), as the loader reads them
                frame = reader.csv(at, header=True, sep="," if fmt == "csv" else "\t")
            else:
                frame = reader.json(at)
        except Exception as exc:  # noqa: BLE001 - Spark's analysis errors (no such path, not Parquet): one sentence
            raise DataFormatError(f"cannot be read on Spark ({_first_line(exc)}).", path=shown[text]) from None
        out.append(_Input(frame, shown[text], local, fmt, Path(text.rstrip("/")).name.split(".")[0]))
    return out


def _q(col: str) -> str:
    return "`" + col.replace("`", "``") + "`"


def _lit(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _number(raw: Any, kind: str, name: str) -> tuple[str, str]:
    """(value, reason) SQL of a numeric column: the value as a double, NULL when missing (null, an empty text, NaN);
    the reason a row is bad (a text that is no number, an infinite value), NULL when it is not."""
    c = _q(raw)
    if kind == "string":
        present = f"({c} IS NOT NULL AND trim({c}) <> '')"
        value = f"try_cast(trim({c}) AS DOUBLE)"
    else:
        present = f"({c} IS NOT NULL)"
        value = f"try_cast({c} AS DOUBLE)"
    bad = f"{present} AND ({value} IS NULL OR (NOT isnan({value}) AND abs({value}) = double('Infinity')))"
    why = f"CASE WHEN {bad} THEN {_lit(f'{name} (column {raw!r}) is not a finite number')} END"
    return f"CASE WHEN {present} AND NOT ({bad}) AND NOT isnan({value}) THEN {value} END", why


def _rows(inp: _Input, k: int, human: bool, verdict: bool) -> Any:
    """The input's rows on the cluster: ``src`` (its index), ``line`` (the 1-based row of a Parquet file, else 0),
    ``pos`` (where Spark read the row: the order of a file's rows),
    the ids as text (``variant`` 'original' when empty), ``rerun`` and ``game`` as integers, the raw score ``s``
    (NULL = missing), ``h`` (the human label), ``vd`` (the verdict) and ``why``, the first reason a row is bad."""
    df = inp.frame
    types = dict(df.dtypes)
    columns = list(df.columns)
    head = 1 if inp.fmt in ("csv", "tsv") else None
    for req in ("item_id", "model", "score"):
        if req not in types:
            raise DataFormatError(f"required column {req!r} is missing; the columns are {columns} (the Spark engine "
                                  "reads the contract's column names: no --columns mapping).", path=inp.name, line=head)
    if "judge" not in types and inp.stem is None:
        raise DataFormatError(f"required column 'judge' is missing; the columns are {columns}.", path=inp.name)
    for col in ("score", "human"):
        if types.get(col) == "boolean":
            raise DataFormatError(f"{col} (column {col!r}) is a boolean (true/false), not a score; write the scores as "
                                  "numbers (e.g. 1 and 0) so the scale is yours, not a guess.", path=inp.name)
    reasons: list[str] = []
    if "_corrupt_record" in types:  # a JSON line Spark could not parse (its other columns are NULL)
        reasons.append(f"CASE WHEN {_q('_corrupt_record')} IS NOT NULL THEN 'the line is not a JSON object' END")
    judge = f"CAST({_q('judge')} AS STRING)" if "judge" in types else _lit(str(inp.stem))
    if "judge" in types:
        reasons.append(f"CASE WHEN {_q('judge')} IS NULL THEN 'empty judge' END")
    for col in ("item_id", "model"):
        reasons.append(f"CASE WHEN {_q(col)} IS NULL THEN 'empty {col}' END")
    variant = f"coalesce(CAST({_q('variant')} AS STRING), 'original')" if "variant" in types else "'original'"
    ints = {}
    for col, ok in (("rerun", "{v} >= 0"), ("game", "{v} IN (0, 1, 2)")):
        if col in types:
            v = f"try_cast({'trim(' + _q(col) + ')' if types[col] == 'string' else _q(col)} AS DOUBLE)"
            good = f"({v} IS NOT NULL AND NOT isnan({v}) AND abs({v}) <> double('Infinity') AND {v} = floor({v}) AND " \
                   f"{ok.format(v=v)})"
            what = "a non-negative int" if col == "rerun" else "0, 1 or 2"
            reasons.append(f"CASE WHEN NOT {good} THEN '{col} must be {what}' END")
            ints[col] = f"CASE WHEN {good} THEN CAST({v} AS BIGINT) ELSE CAST(0 AS BIGINT) END"
        else:
            ints[col] = "CAST(0 AS BIGINT)"
    score, why_score = _number("score", types["score"], "score")
    reasons.append(why_score)
    h = "CAST(NULL AS DOUBLE)"
    if "human" in types:
        h, why_h = _number("human", types["human"], "human")
        reasons.append(why_h)
    line = "_metadata.row_index + 1" if inp.fmt == "parquet" and inp.stem is not None else "CAST(0 AS BIGINT)"
    select = [f"CAST({k} AS INT) AS src", f"CAST({line} AS BIGINT) AS line",
              "monotonically_increasing_id() AS pos", f"{judge} AS judge",
              f"CAST({_q('model')} AS STRING) AS model", f"CAST({_q('item_id')} AS STRING) AS item_id",
              f"{variant} AS variant", f"{ints['rerun']} AS rerun", f"{ints['game']} AS game", f"{score} AS s"]
    if human:
        select.append(f"{h} AS h")
    if verdict:
        select.append(f"CAST({_q('verdict')} AS STRING) AS vd" if "verdict" in types else "CAST(NULL AS STRING) AS vd")
    select.append(f"coalesce({', '.join(reasons)}) AS why")
    return df.selectExpr(*select)


def _name_of(col: str, raw: str) -> str:
    """A raw id's name, as the table loader makes it: text (model and item stripped), Unicode NFC."""
    text = raw.strip() if col in ("model", "item_id") else raw
    return unicodedata.normalize("NFC", text) if col != "variant" and not text.isascii() else text


def _dictionaries(rows: Any, cols: Sequence[str], spark: Any,
                  inputs: list[_Input]) -> dict[str, tuple[np.ndarray, Any, dict[str, int], dict[str, str]]]:
    """Per id column: its sorted names, a small Spark table ``raw -> code`` (several raw values may share a name:
    ``' m'`` and ``'m'``), the raw values rewritten to NFC (the report counts them) and every raw value's name. The distinct values of every
    column (few) are collected in one job and named on the driver exactly as the loader names a value."""
    from pyspark.sql import functions as F

    got = rows.agg(*[F.collect_set(c).alias(c) for c in cols]).collect()[0]
    out = {}
    for col in cols:
        names = {raw: _name_of(col, raw) for raw in got[col]}  # (collect_set leaves NULL out)
        empty = [raw for raw, name in names.items() if name == ""]
        if empty:  # a model or item of only spaces: the first such row, named
            hit = rows.filter(rows[col].isin(empty)).orderBy("src", "line").select("src", "line").first()
            raise DataFormatError(f"empty {col}; fix the row (the Spark engine reads no bad rows).",
                                  path=inputs[int(hit[0])].name, line=int(hit[1]) or None)
        order = sorted(set(names.values()))
        code = {name: i for i, name in enumerate(order)}
        table = spark.createDataFrame([(raw, code[name]) for raw, name in names.items()],
                                      schema=f"{col} STRING, {col}_code INT")
        plain = {raw: raw.strip() if col in ("model", "item_id") else raw for raw in names}
        changed = {raw: 1 for raw, name in names.items() if col in ("judge", "model", "item_id") and name != plain[raw]}
        out[col] = (np.asarray(order, dtype=object), table, changed, names)
    return out


def _scales(rows: Any, inputs: list[_Input], scale: tuple[float, float] | None) -> list[tuple[float, float]]:
    """Each input's scale: ``scale``, or the one :func:`biasbound.data.tables.infer_scale`'s rule picks from the
    input's distinct finite scores and their counts (collected: a judge's scale has a handful of values). With an
    inferred scale, a score outside it is found among the distinct values first (its row is then looked up)."""
    if scale is not None:
        return [scale] * len(inputs)
    from biasbound.data.tables import infer_scale

    got = rows.filter("s IS NOT NULL").groupBy("src", "s").count().limit(_MAX_DISTINCT_SCORES + 1).collect()
    if len(got) > _MAX_DISTINCT_SCORES:
        raise InputError(f"Cannot infer the score scale: the scores take more than {_MAX_DISTINCT_SCORES:,} distinct "
                         "values; give --scale LO,HI (scale=(lo, hi)).")
    out = []
    for k in range(len(inputs)):
        mine = [(float(r[1]), int(r[2])) for r in got if int(r[0]) == k]
        values = np.array([v for v, _ in mine], dtype=float)
        counts = np.array([c for _, c in mine], dtype=np.int64)
        try:
            out.append(infer_scale(values, counts=counts))
        except InputError as exc:
            raise DataFormatError(str(exc)[0].lower() + str(exc)[1:], path=inputs[k].name) from None
        inputs[k].inside = bool(((values >= out[-1][0]) & (values <= out[-1][1])).all())
    return out


def _first_bad(rows: Any, inputs: list[_Input], condition: str, reason: Any) -> None:
    """Raise naming the first row (by input, then row) that meets ``condition``; ``reason(row)`` says why."""
    hit = rows.filter(condition).orderBy("src", "line").limit(1).collect()
    if hit:
        row = hit[0]
        raise DataFormatError(f"{reason(row)}; fix the row (the Spark engine reads no bad rows; the embedded engine "
                              "skips and counts them with --skip-bad).", path=inputs[int(row["src"])].name,
                              line=int(row["line"]) or None)


def load_spark(
    sources: Any,
    *,
    scale: tuple[float, float] | None = None,
    session: Any = None,
    **options: Any,
) -> LoadedInputs:
    """Read judgment tables on Spark into the coded judgment frame (see :mod:`biasbound.engine._read`).

    Parameters
    ----------
    sources:
        A path or several (Parquet, CSV, TSV, JSONL files; a folder or a cluster path without a suffix is read as
        Parquet; ``s3a://``, ``hdfs://``… as the cluster reads them), or Spark DataFrames holding judgment tables
        (``spark.table("evals.judgments")``).
    scale:
        The raw score scale ``(lo, hi)`` mapped onto [0, 1]; inferred per input as the loader infers it when None.
    session:
        The SparkSession (default: ``SparkSession.builder.getOrCreate()``: local mode without a cluster, Spark
        Connect when ``SPARK_REMOTE`` is set).
    options:
        The embedded route's other reading options (``skip_bad``, ``columns``, ``score_map``, ...) are refused,
        one sentence naming the option, unless left at their defaults.

    Returns
    -------
    LoadedInputs
        ``frame``: ``judge``, ``model``, ``item_id``, ``variant``, ``verdict``, ``source`` as ``Categorical`` (sorted
        names), ``rerun``, ``game``, ``line`` int64, ``score`` (and ``human``) float64 on [0, 1], NaN = missing;
        ``report`` and ``options`` as :func:`biasbound.data.loading.load_inputs` gives them (inputs that are not
        local files are recorded by name only: ``verify --judgments`` needs the files).
    """
    from biasbound._validation import cli_command
    from biasbound.data.loading import LoadedInputs
    from biasbound.data.tables import LoadReport, check_scale

    where = cli_command() or "load_spark"
    _refuse(options, where, cli=where == "certify")
    if scale is not None:
        scale = check_scale(scale, where)
    items = [sources] if isinstance(sources, (str, os.PathLike)) or hasattr(sources, "schema") else list(sources)
    if not items:
        raise InputError(f"The 'sources' parameter of {where} must name at least one table. Got none.")
    spark = spark_session(session)
    inputs = _inputs(items, spark, where)
    human = any("human" in i.frame.columns for i in inputs)
    verdict = any("verdict" in i.frame.columns for i in inputs)
    try:
        rows = _rows(inputs[0], 0, human, verdict)
        for k, inp in enumerate(inputs[1:], start=1):
            rows = rows.unionByName(_rows(inp, k, human, verdict))
        _first_bad(rows, inputs, "why IS NOT NULL", lambda r: r["why"])
        scales = _scales(rows, inputs, scale)
        outside = " OR ".join(f"(src = {k} AND ({c} < {lo!r} OR {c} > {hi!r}))" for k, (lo, hi) in enumerate(scales)
                              for c in (("s", "h") if human else ("s",)) if c == "h" or not inputs[k].inside)
        how = "" if scale is not None else " inferred from the other scores (give --scale LO,HI if it is wrong)"

        def outside_reason(row: Any) -> str:
            lo, hi = scales[int(row["src"])]
            col = "score" if row["s"] is not None and not lo <= float(row["s"]) <= hi else "human"
            return f"{col} {float(row['s' if col == 'score' else 'h']):g} is outside the scale [{lo:g}, {hi:g}]{how}"

        if outside:
            _first_bad(rows, inputs, outside, outside_reason)
        names: dict[str, np.ndarray] = {}
        changed: dict[str, dict[str, int]] = {}
        coded = rows
        cols = ["judge", "model", "item_id", "variant"] + (["vd"] if verdict else [])
        from pyspark.sql import functions as F

        raw_names: dict[str, dict[str, str]] = {}
        for col, (names[col], table, changed[col], raw_names[col]) in _dictionaries(rows, cols, spark, inputs).items():
            coded = coded.join(F.broadcast(table), on=col, how="left")
        _check_keys(rows, coded, raw_names, inputs)
        key = [f"{c}_code" for c in ("judge", "model", "item_id", "variant")] + ["rerun", "game"]
        keep = [F.col(c) for c in ("src", "line", "pos", *key, "s")] + ([F.col("h")] if human else [])
        if verdict:  # a missing verdict: code -1 (pandas' missing category)
            keep.append(F.coalesce(F.col("vd_code"), F.lit(-1)).alias("vd_code"))
        got = _to_pandas(coded.select(*keep), spark)
        nfc = _nfc_counts(rows, changed, len(inputs)) if any(changed.values()) else [0] * len(inputs)
    except (InputError, TypeError):
        raise
    except Exception as exc:  # noqa: BLE001 - Spark's analysis and runtime errors: one sentence naming the inputs
        raise InputError(f"{', '.join(i.name for i in inputs)}: cannot be read on Spark ({_first_line(exc)}).") from None
    return _assemble(got, inputs, names, scales, scale, nfc, human, verdict, LoadReport, LoadedInputs)


def _check_keys(rows: Any, coded: Any, raw_names: dict[str, dict[str, str]], inputs: list[_Input]) -> None:
    """The judgment keys given once, checked on the cluster by one GROUP BY on the key: on the ids as the table holds
    them when each is its own name (a table bucketed by judge and model then needs no shuffle), else on the codes
    (``' m'`` and ``'m'`` are one model)."""
    from pyspark.sql import functions as F

    ids = ("judge", "model", "item_id", "variant")
    own = all(len(set(raw_names[c].values())) == len(raw_names[c]) for c in ids)
    frame, cols = (rows, list(ids)) if own else (coded, [f"{c}_code" for c in ids])
    found = (frame.groupBy(*cols, "rerun", "game").agg(F.count(F.lit(1)).alias("n"), F.min("src").alias("a"),
                                                       F.max("src").alias("b")).filter("n > 1").limit(1).collect())
    if not found:
        return
    d = found[0]
    by_code = {c: sorted(set(raw_names[c].values())) for c in ids}
    shown = [raw_names[c][d[c]] if own else by_code[c][int(d[f"{c}_code"])] for c in ids]
    key = ", ".join(f"{k}={v!r}" for k, v in zip(_KEY, [*shown, int(d["rerun"]), int(d["game"])]))
    where = " and ".join(dict.fromkeys(inputs[int(d[x])].name for x in ("a", "b")))
    raise DataFormatError(f"the judgment ({key}) occurs {int(d['n'])} times; give each judgment once.", path=where)


def _to_pandas(frame: Any, spark: Any) -> pd.DataFrame:
    """The coded rows on the driver through Arrow (integer codes and doubles only)."""
    try:  # classic PySpark: Arrow is opt-in (Spark Connect always uses it)
        spark.conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    except Exception:  # noqa: BLE001 - a session that refuses the setting still answers toPandas
        pass
    return frame.toPandas()


def _nfc_counts(rows: Any, changed: dict[str, dict[str, int]], n: int) -> list[int]:
    """Per input, how many of its distinct judge, model and item names were rewritten to NFC (as the loader counts)."""
    out = [0] * n
    for col, raws in changed.items():
        if raws:
            for r in rows.filter(rows[col].isin(list(raws))).select("src", col).distinct().collect():
                out[int(r[0])] += 1
    return out


def _categorical(codes: np.ndarray, names: Sequence[str] | np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, categories=pd.Index(list(names), dtype="str"))


def _assemble(got: pd.DataFrame, inputs: list[_Input], names: dict[str, np.ndarray],
              scales: list[tuple[float, float]], scale: tuple[float, float] | None, nfc: list[int], human: bool,
              verdict: bool, report_type: Any, loaded_type: Any) -> Any:
    """The coded judgment frame, the load report and the reading options on the driver (numpy on codes)."""
    col = {c: got[c].to_numpy(dtype=np.int64) for c in ("src", "line", "pos", "judge_code", "model_code",
                                                         "item_id_code", "variant_code", "rerun", "game")}
    raw = got["s"].to_numpy(dtype=np.float64)
    # the inputs' row order, as the loader reads them (some sums of the pipeline depend on it in their last bit):
    # a Parquet file's row number, else the position Spark read the row at (a file's splits in order)
    order = np.lexsort((col.pop("pos"), col["line"], col["src"]))
    col = {c: v[order] for c, v in col.items()}
    src = col["src"]
    lo = np.array([s[0] for s in scales], dtype=np.float64)[src]
    hi = np.array([s[1] for s in scales], dtype=np.float64)[src]
    score = (raw[order] - lo) / (hi - lo)  # as the loader maps a score: (x - lo) / (hi - lo)
    shown = [i.name for i in inputs]
    by_name = sorted(set(shown))
    rank = np.array([by_name.index(x) for x in shown], dtype=np.int64)
    frame = pd.DataFrame({
        "judge": _categorical(col["judge_code"], names["judge"]),
        "model": _categorical(col["model_code"], names["model"]),
        "item_id": _categorical(col["item_id_code"], names["item_id"]),
        "variant": _categorical(col["variant_code"], names["variant"]),
        "rerun": col["rerun"], "game": col["game"], "score": score,
        "verdict": (_categorical(got["vd_code"].to_numpy(dtype=np.int64)[order], names["vd"]) if verdict
                    else _categorical(np.full(len(score), -1, dtype=np.int64), [])),
        "source": _categorical(rank[src], by_name),
        "line": col["line"],
    })
    if human:
        frame["human"] = (got["h"].to_numpy(dtype=np.float64)[order] - lo) / (hi - lo)
    from biasbound.data.tables import contract_dtypes

    frame = contract_dtypes(frame)  # the loader's dtypes, set where the loader sets them
    report: dict[str, Any] = {}
    missing = np.isnan(score)
    for k, inp in enumerate(inputs):
        mine = src == k
        gone = mine & missing
        by_model = pd.Series(names["model"][col["model_code"][gone]], dtype=object).value_counts()
        rep = report_type(
            rows=int(mine.sum()), missing=int(gone.sum()),
            missing_by_model={str(a): int(b) for a, b in by_model.items()},
            missing_by_source={inp.name: int(gone.sum())} if gone.any() else {},
            skipped=(), scale=(float(scales[k][0]), float(scales[k][1])), scale_inferred=scale is None,
            judges=tuple(str(x) for x in names["judge"][np.unique(col["judge_code"][mine])]),
            models=tuple(str(x) for x in names["model"][np.unique(col["model_code"][mine])]),
            items=int(np.unique(col["item_id_code"][mine]).size), sources=(inp.name,), unicode_nfc=nfc[k],
        ).to_dict()
        rep["format"] = "table"
        if "judge" not in inp.frame.columns:
            rep["judge_from_file"] = inp.stem
        report[inp.name] = rep
    if len(inputs) == 1:  # the loader's notes on its frame (one input: pandas' concat keeps them)
        rep = report[inputs[0].name]
        frame.attrs["load_report"] = {k: rep[k] for k in ("rows", "missing", "n_skipped", "scale", "scale_inferred")}
        if rep.get("judge_from_file"):
            frame.attrs["judge_from_file"] = rep["judge_from_file"]
    options: dict[str, Any] = {"scale": None if scale is None else list(scale), "skip_bad": False, "columns": None,
                               "llmbar_view": "output_1", "ties": "missing", "score_map": None,
                               "neighbors_auto": None}
    if all(i.local is not None for i in inputs):  # each input by its content, as the embedded route records it
        from biasbound.data._inputs import content_record

        options["inputs"] = [content_record(i.local, i.name, "table") for i in inputs if i.local is not None]
    return loaded_type(frame=frame, report=report, options=options)

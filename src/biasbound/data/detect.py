"""Which reader reads an input: detection by content, never by the name alone.

- an inspect_ai log (``.eval``, or a ``.json`` log) or a folder of them → :mod:`biasbound.data.inspect_log`;
- an AlpacaEval ``annotations.json`` (a JSON array of records with ``generator_1``/``generator_2``/
  ``preference``) or a folder holding them → :mod:`biasbound.data.alpaca_eval`;
- a FastChat MT-Bench ``*_single.jsonl`` / ``*_pair.jsonl`` or a folder holding them →
  :mod:`biasbound.data.mt_bench`;
- any other folder, or a ``.jsonl``/``.json`` whose first record has ``games``: Arena-Hard-Auto
  (:mod:`biasbound.data.arena_hard`);
- a CSV whose header has ``winner_orig_order``: LLMBar's both-order table (:func:`biasbound.data.load_llmbar`);
- a table (CSV, TSV, JSON lines or array, Parquet) with ``model_a``, ``model_b``, ``winner`` and a question id:
  a pairwise battle table → :mod:`biasbound.data.battles`;
- anything else (CSV, TSV, JSONL, Parquet, optionally gzipped): a generic long table (:mod:`biasbound.data.tables`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from biasbound._exceptions import BiasboundError, InputError

__all__ = ["FORMATS", "detect_format"]

#: every format :func:`detect_format` names, each with the words an error sentence uses for it
FORMATS = {"table": "long tables", "inspect": "inspect_ai logs", "alpaca_eval": "AlpacaEval annotations",
           "mt_bench": "MT-Bench judgments", "arena-hard": "Arena-Hard judgments", "llmbar": "LLMBar judgments",
           "battles": "battle tables"}


def _first_line(path: Path) -> str:
    from biasbound.data._io import open_text

    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                return line
    return ""


def _first_json(path: Path) -> Any:
    try:
        return json.loads(_first_line(path))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, RecursionError):
        return None


def _folder_kind(path: Path) -> str:
    from biasbound.data.alpaca_eval import find_annotation_files
    from biasbound.data.inspect_log import find_logs
    from biasbound.data.mt_bench import find_judgment_files

    if find_logs(path):
        return "inspect"
    if find_annotation_files(path):
        return "alpaca_eval"
    if find_judgment_files(path):
        return "mt_bench"
    if not any(p.name.lower().endswith((".jsonl", ".jsonl.gz")) for p in path.rglob("*") if p.is_file()):
        tables = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".")
                        and p.name.lower().endswith(_TABLE_SUFFIXES))
        if tables:  # a folder of long tables: the folder readers are for the tools' own layouts
            raise InputError(f"{path}: a folder is read as Arena-Hard, AlpacaEval, MT-Bench or inspect_ai output, and "
                             f"this one holds tables ({tables[0].name}{' …' if len(tables) > 1 else ''}); name the table "
                             "files themselves, e.g. " + " ".join(shlex.quote(str(t)) for t in tables[:2]) + ".")
    return "arena-hard"


_TABLE_SUFFIXES = tuple(f".{ext}{c}" for ext in ("csv", "tsv", "json", "parquet", "pq")
                        for c in ("", ".gz", ".bz2", ".xz"))


def detect_format(path: Path, columns: dict[str, str] | None = None) -> str:
    """The reader for ``path``: ``inspect``, ``alpaca_eval``, ``mt_bench``, ``arena-hard``, ``llmbar``, ``battles`` or ``table``.

    A table is a battle table when its columns (after ``columns``, ``--columns``) are a battle table's or hold
    the two sides ``model_a`` and ``model_b`` (Parquet too, from its schema)."""
    from biasbound.data.alpaca_eval import is_annotation_file
    from biasbound.data.inspect_log import is_log_file
    from biasbound.data.battles import looks_like_battles
    from biasbound.data.mt_bench import kind_of_record

    def is_battle_table(cols: list[str]) -> bool:
        return looks_like_battles(cols, columns)

    if path.is_dir():
        return _folder_kind(path)
    name = path.name.lower()
    base = name[:-3] if name.endswith(".gz") else name
    if base.endswith(".eval") or (base.endswith(".json") and is_log_file(path)):
        return "inspect"
    if base.endswith(".json") and is_annotation_file(path):
        return "alpaca_eval"
    if base.endswith((".jsonl", ".json")):
        rec = _first_json(path)
        if isinstance(rec, dict) and "games" in rec:
            return "arena-hard"
        if kind_of_record(rec) is not None:
            return "mt_bench"
        if isinstance(rec, dict) and is_battle_table(list(rec)):
            return "battles"
        if base.endswith(".json"):
            try:
                from biasbound.data._common import iter_json_array

                first = next(iter(iter_json_array(path)), (0, None))[1]
            except (BiasboundError, OSError, UnicodeDecodeError, RecursionError):
                first = None
            if isinstance(first, dict) and is_battle_table(list(first)):
                return "battles"
        return "table"
    if base.endswith((".csv", ".tsv")):
        head = _first_line(path)
        if "winner_orig_order" in head:
            return "llmbar"
        import csv

        fields = next(csv.reader([head], delimiter="\t" if base.endswith(".tsv") else ","), [])
        return "battles" if is_battle_table([f.strip() for f in fields]) else "table"
    if base.endswith((".parquet", ".pq")):
        return "battles" if is_battle_table(_parquet_columns(path)) else "table"
    return "table"


def _parquet_columns(path: Path) -> list[str]:
    """A Parquet file's column names from its schema ([] when it is no readable Parquet: the reader says why)."""
    import pyarrow.parquet as pq

    try:
        return [str(c) for c in pq.read_schema(path).names]
    except Exception:  # noqa: BLE001 - a damaged file is named by the table reader, with its path
        return []

"""A Parquet judgment table read block by block: each block every row of a set of whole models, read as
:func:`biasbound.data.tables.load_table` reads those rows.

``certify`` takes such a table (:func:`open_blocked`) when it is too large to hold as rows: per block it folds the
reruns into what it reads from them and keeps the rest (:mod:`biasbound.pipeline._folded`). Three passes, each
holding one slice of about 2^20 rows or one block at a time:

1. the model column (Parquet's own dictionaries, no string a row) and the scores: the rows of every model, and —
   when no scale is given — the score values with their counts, from which :func:`~biasbound.data.tables.infer_scale`
   infers the scale the whole table gives (its ``counts`` argument);
2. every column, each row written to its block's temporary Parquet file with its line (the 1-based row number the
   table loader names), in file order; a block holds whole models (their texts as the loader reads them, Unicode
   NFC), about ``block_rows`` rows (a larger model alone);
3. (:meth:`BlockedTable.blocks`) each block read back and checked by :func:`~biasbound.data.tables.from_frame` with
   the table's scale and the rows' own lines: the same coded frame, the same errors naming the file and line, the
   same rows skipped with ``skip_bad``. A judgment key holds its model, so a key given twice falls in one block.

:attr:`BlockedTable.report` is then the loader's report of the whole table (counts summed, names united, the missing
judgments per model counted over the table's rows in file order as the loader counts them).
"""

from __future__ import annotations

import shutil
import tempfile
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError

__all__ = ["BLOCKED_ABOVE", "BLOCK_ROWS", "BlockedTable", "can_block", "merge_blocks", "open_blocked"]

#: ``biasbound certify`` reads one Parquet table with reruns in blocks above this many rows (below it the rows are
#: held: the blocks cost a second read of the file and, below a block's size, more memory than the rows).
BLOCKED_ABOVE = 30_000_000

#: Rows per block (about; a model with more rows is a block of its own).
BLOCK_ROWS = 1 << 22

_LINE = "__biasbound_line__"
_SLICE = 1 << 20


def _names(columns: Mapping[str, str] | None) -> dict[str, str]:
    return {k: k for k in ("judge", "model", "item_id", "variant", "rerun", "game", "score")} | dict(columns or {})


def can_block(path: str | Path, columns: Mapping[str, str] | None = None) -> bool:
    """Whether ``path`` is a Parquet file whose model column holds text and whose score column holds numbers (what
    :func:`open_blocked` reads; anything else is read whole by the table loader, which says what is wrong)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except Exception:  # noqa: BLE001 - not a Parquet file: the loader's own error
        return False
    names = _names(columns)
    if names["model"] not in schema.names or names["score"] not in schema.names:
        return False
    model, score = schema.field(names["model"]).type, schema.field(names["score"]).type
    return (pa.types.is_string(model) or pa.types.is_large_string(model)) and (
        pa.types.is_integer(score) or pa.types.is_floating(score))


class BlockedTable:
    """A Parquet judgment table read block by block (module docstring). A context manager: :meth:`close` removes the
    temporary block files. ``blocks()`` may be iterated more than once; ``report`` is complete once it has been
    iterated to the end."""

    def __init__(self, path: Path, *, columns: Mapping[str, str] | None, scale: tuple[float, float] | None,
                 judge: str | None, skip_bad: bool, block_rows: int, tmpdir: str | Path | None) -> None:
        import pyarrow.parquet as pq

        from biasbound.data.tables import check_scale

        self.path = Path(path)
        if not self.path.is_file():
            raise DataFormatError("no such file.", path=str(self.path))
        if not can_block(self.path, columns):
            raise DataFormatError("is not a Parquet table with a text model column and a numeric score column, which a "
                                  "table read in blocks needs; read it whole (load_table).", path=str(self.path))
        self.columns = dict(columns) if columns else None
        self.judge = judge
        self.skip_bad = skip_bad
        self.n_rows = int(pq.ParquetFile(self.path).metadata.num_rows)
        self._scale_given = None if scale is None else check_scale(scale, "load_table")
        self._dir = Path(tempfile.mkdtemp(prefix="biasbound-blocks-", dir=tmpdir))
        self._report: Any = None
        try:
            per_model, values, counts = self._first_pass()
            if self._scale_given is None:
                from biasbound.data.tables import _infer_scale

                self.scale, self.scale_inferred = _infer_scale(values, counts)[0], True
            else:
                self.scale, self.scale_inferred = self._scale_given, False
            self._block_of = _plan(per_model, max(int(block_rows), 1))
            self.n_blocks = max(self._block_of.values(), default=0) + 1
            self._files = self._second_pass()
        except BaseException:
            self.close()
            raise

    # -- pass 1: rows per model and the score values
    def _first_pass(self) -> tuple[dict[str, int], np.ndarray, np.ndarray]:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        names = _names(self.columns)
        pf = pq.ParquetFile(self.path, read_dictionary=[names["model"]])
        per_model: dict[str, int] = {}
        values: list[np.ndarray] = []
        counts: list[np.ndarray] = []
        for batch in pf.iter_batches(batch_size=_SLICE, columns=[names["model"], names["score"]]):
            col = batch.column(0)
            idx = pc.fill_null(col.indices, -1).to_numpy(zero_copy_only=False)
            n_per = np.bincount(idx[idx >= 0], minlength=len(col.dictionary))
            for text, n in zip(col.dictionary.to_pylist(), n_per.tolist()):
                if n:
                    key = _model_key(text)
                    per_model[key] = per_model.get(key, 0) + n
            if self._scale_given is None:
                s = pc.fill_null(batch.column(1).cast("float64"), np.nan).to_numpy(zero_copy_only=False)
                v, c = np.unique(s[np.isfinite(s)], return_counts=True)
                values.append(v)
                counts.append(c)
        if not values:
            return per_model, np.zeros(0), np.zeros(0, dtype=np.int64)
        v_all, c_all = np.concatenate(values), np.concatenate(counts)
        v, inv = np.unique(v_all, return_inverse=True)
        return per_model, v, np.bincount(inv.ravel(), weights=c_all, minlength=len(v)).astype(np.int64)

    # -- pass 2: every row to its block's file, with its line
    def _second_pass(self) -> list[Path]:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        names = _names(self.columns)
        schema = pq.read_schema(self.path)
        texts = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        pf = pq.ParquetFile(self.path, read_dictionary=texts)
        files = [self._dir / f"block-{b:05d}.parquet" for b in range(self.n_blocks)]
        writers: dict[int, Any] = {}
        at = 0
        try:
            for batch in pf.iter_batches(batch_size=_SLICE):
                col = batch.column(batch.schema.get_field_index(names["model"]))
                lut = np.asarray([self._block_of.get(_model_key(t), 0) for t in col.dictionary.to_pylist()] + [0],
                                 dtype=np.int32)
                idx = pc.fill_null(col.indices, -1).to_numpy(zero_copy_only=False)
                block = lut[idx]  # a missing model (-1): block 0, where the loader refuses or skips it
                lines = pa.array(np.arange(at + 1, at + batch.num_rows + 1, dtype=np.int64))
                table = pa.Table.from_batches([batch]).append_column(_LINE, lines)
                at += batch.num_rows
                order = np.argsort(block, kind="stable")  # the slice's rows by block, file order within each
                bounds = np.searchsorted(block[order], np.arange(self.n_blocks + 1))
                for b in np.flatnonzero(np.diff(bounds)).tolist():
                    part = table.take(pa.array(order[bounds[b]:bounds[b + 1]]))
                    if b not in writers:
                        writers[b] = pq.ParquetWriter(files[b], part.schema, store_schema=False)
                    writers[b].write_table(part)
        finally:
            for w in writers.values():
                w.close()
        return [f for b, f in enumerate(files) if b in writers]

    # -- pass 3: each block as the loader reads it
    def blocks(self) -> Iterator[Any]:
        """Each block's :class:`~biasbound.data.tables.JudgmentSet` (a coded frame whose categories are the block's own
        texts; ``line`` the table's; rows in file order), the report's counts gathered on the way."""
        from biasbound.data.tables import _read_parquet, from_frame
        from biasbound.data.unparseable import check_parseable

        names = _names(self.columns)
        numeric = frozenset([names["score"], names["rerun"], names["game"], _LINE])
        parts: list[Any] = []
        judge = self.judge if self.judge is not None else self.path.name.split(".")[0]
        failed: list[tuple[int, int, InputError]] = []
        for f in self._files:
            raw, _ = _read_parquet(f, numeric, coded=True)
            lines = raw.pop(_LINE).to_numpy(dtype=np.int64)
            try:
                check_parseable(raw, self.path, doing="certify")
                js = from_frame(raw, source=str(self.path), lines=lines, columns=self.columns, scale=self.scale,
                                judge=judge, skip_bad=self.skip_bad, scale_inferred=self.scale_inferred)
            except InputError as exc:  # the later blocks checked too: the error the loader raises is raised
                failed.append((_stage(exc), int(getattr(exc, "line", None) or 0), exc))
                continue
            del raw
            if failed:  # a block after a bad one: checked, not handed on
                continue
            if self.judge is None and names["judge"] not in _schema_names(f):
                js.frame.attrs["judge_from_file"] = judge
            parts.append(_report_part(js))
            yield js
        if failed:
            raise min(failed, key=lambda e: e[:2])[2]
        self._report = _merged_report(parts, self.scale, self.scale_inferred, str(self.path))

    @property
    def reading(self) -> dict[str, Any]:
        """How ``biasbound verify --judgments`` reads the table again (``_integrity.reading_options``): as the loader
        reads this one source, at this scale."""
        return {"reader": "frame", "source": str(self.path), "scale": [float(self.scale[0]), float(self.scale[1])]}

    @property
    def report(self) -> Any:
        """The loader's :class:`~biasbound.data.tables.LoadReport` of the whole table (after :meth:`blocks`)."""
        if self._report is None:
            raise RuntimeError("the report of a table read in blocks is complete once its blocks were read")
        return self._report

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> BlockedTable:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_blocked(path: str | Path, *, columns: Mapping[str, str] | None = None,
                 scale: tuple[float, float] | None = None, judge: str | None = None, skip_bad: bool = False,
                 block_rows: int = BLOCK_ROWS, tmpdir: str | Path | None = None) -> BlockedTable:
    """A Parquet judgment table to be read in blocks of whole models (module docstring); the options are
    :func:`~biasbound.data.tables.load_table`'s. ``tmpdir``: where the block files go (the system's temporary
    folder by default); they are removed on :meth:`BlockedTable.close`."""
    return BlockedTable(Path(path), columns=columns, scale=scale, judge=judge, skip_bad=skip_bad,
                        block_rows=block_rows, tmpdir=tmpdir)


def merge_blocks(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Block frames as one coded frame in file order (by ``line``): the union of each id column's texts as its
    categories (:func:`biasbound.data.coded.concat_coded`), the rows merged by line, a fresh index."""
    from biasbound.data.coded import concat_coded as concat

    frame = concat(list(frames))
    line = frame["line"].to_numpy()
    if len(line) > 1 and np.any(line[1:] < line[:-1]):
        frame = frame.iloc[np.argsort(line, kind="stable")]
    return frame.reset_index(drop=True)


def _stage(exc: Exception) -> int:
    """The loader's order of its checks: a row's own faults, then scores outside the scale, then a key given twice."""
    text = str(exc)
    return 2 if "duplicated judgment" in text else 1 if "outside the scale" in text else 0


def _model_key(text: Any) -> str:
    return unicodedata.normalize("NFC", str(text))


def _plan(per_model: Mapping[str, int], block_rows: int) -> dict[str, int]:
    """Models (in text order) to blocks of about ``block_rows`` rows."""
    out: dict[str, int] = {}
    block, rows = 0, 0
    for name in sorted(per_model):
        n = per_model[name]
        if rows and rows + n > block_rows:
            block, rows = block + 1, 0
        out[name] = block
        rows += n
    return out


def _schema_names(path: Path) -> list[str]:
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)


def _report_part(js: Any) -> dict[str, Any]:
    """What the whole table's report needs of a block: its report, its names, and its missing judgments' lines."""
    f = js.frame
    miss = f["score"].isna().to_numpy()
    return {"report": js.report, "items": f["item_id"].cat.categories,
            "miss_line": f["line"].to_numpy()[miss], "miss_model": f["model"].to_numpy()[miss],
            "miss_source": f["source"].to_numpy()[miss]}


def _merged_report(parts: list[dict[str, Any]], scale: tuple[float, float], inferred: bool, source: str) -> Any:
    """The loader's report of the whole table from its blocks' (the missing judgments counted per model and source
    over their rows in file order, as the loader's ``value_counts`` counts them)."""
    from biasbound.data.tables import LoadReport

    reps = [p["report"] for p in parts]
    line = np.concatenate([p["miss_line"] for p in parts]) if parts else np.zeros(0, dtype=np.int64)
    order = np.argsort(line, kind="stable")

    def counts(key: str) -> dict[str, int]:
        vals: Any = np.concatenate([np.asarray(p[key], dtype=object) for p in parts])[order] if parts else []
        return {str(k): int(v) for k, v in pd.Series(vals, dtype=object).astype("str").value_counts().items()}

    skipped = sorted((s for r in reps for s in r.skipped), key=lambda s: (s[1] is None, s[1] or 0))
    items = pd.Index([]).append([pd.Index(p["items"]) for p in parts]).unique() if parts else []
    return LoadReport(
        rows=sum(r.rows for r in reps), missing=sum(r.missing for r in reps),
        missing_by_model=counts("miss_model"), missing_by_source=counts("miss_source"), skipped=tuple(skipped),
        scale=(float(scale[0]), float(scale[1])), scale_inferred=bool(inferred),
        judges=tuple(sorted({j for r in reps for j in r.judges})), models=tuple(sorted({m for r in reps for m in r.models})),
        items=len(items), sources=(source,), unicode_nfc=sum(r.unicode_nfc for r in reps))

"""``biasbound certify``'s door for a judgment table too large to hold as rows: one Parquet table with reruns, above
:data:`biasbound.data.blocked.BLOCKED_ABOVE` rows, read by certify block by block (:mod:`biasbound.data.blocked`,
:mod:`biasbound.pipeline._folded`) with the display name, reading options and load report that
:func:`biasbound.data.loading.load_inputs` gives its rows.

Before the blocks, one streamed scan of the id, game, rerun, variant and score columns (:func:`scan`) tells what
``--generators auto``, ``--baseline`` and ``--scale`` need from the whole table: the generators each (judge, model)
holds, the models, the score range.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["BlockedInputs", "Scan", "blocked_input", "scan"]


@dataclass(frozen=True)
class Scan:
    """What one streamed pass over a table's key columns found: per (judge, model) the generators it holds a scored
    neighbour of, the models, and the finite scores' raw range."""

    groups: dict[tuple[str, str], set[str]]
    models: list[str]
    score_min: float
    score_max: float

    def found(self) -> tuple[str, ...]:
        """The generators the table holds (``biasbound.card.data_generators``' order: swap, variants, rerun)."""
        every = set().union(*self.groups.values()) if self.groups else set()
        variants = sorted(g for g in every if g.startswith("variant:"))
        return tuple(["swap"] if "swap" in every else []) + tuple(variants) + (("rerun",) if "rerun" in every else ())


def _column(names: dict[str, str], key: str) -> str:
    return names.get(key, key)


def scan(path: Path, columns: dict[str, str] | None = None) -> Scan:
    """One pass over ``path``'s judge, model, variant, rerun, game and score columns, 2^20 rows at a time."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    names = dict(columns or {})
    schema = pq.read_schema(path)
    have = set(schema.names)
    want = {k: _column(names, k) for k in ("judge", "model", "variant", "rerun", "game", "score")}
    read = [c for c in want.values() if c in have]
    texts_read = [want[k] for k in ("judge", "model", "variant") if want[k] in have
                  and (pa.types.is_string(schema.field(want[k]).type) or pa.types.is_large_string(schema.field(want[k]).type))]
    pf = pq.ParquetFile(path, read_dictionary=texts_read)  # the ids as Parquet's own dictionaries: no string a row
    groups: dict[tuple[str, str], set[str]] = {}
    models: set[str] = set()
    lo, hi = np.inf, -np.inf
    judge_default = path.name.split(".")[0]
    for batch in pf.iter_batches(batch_size=1 << 20, columns=read):
        def texts(key: str, default: str, batch: Any = batch) -> tuple[np.ndarray, np.ndarray]:
            col = want[key]
            if col not in have:
                return np.zeros(batch.num_rows, dtype=np.int64), np.asarray([default], dtype=object)
            arr = batch.column(col)
            enc = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr.cast("string"))
            return (pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64),
                    np.asarray([str(x) for x in enc.dictionary.to_pylist()], dtype=object))

        def ints(key: str, batch: Any = batch) -> np.ndarray:
            col = want[key]
            if col not in have:
                return np.zeros(batch.num_rows, dtype=np.int64)
            return pc.fill_null(batch.column(col).cast("int64"), 0).to_numpy(zero_copy_only=False)

        j, j_names = texts("judge", judge_default)
        m, m_names = texts("model", "")
        v, v_names = texts("variant", "original")
        rerun, game = ints("rerun"), ints("game")
        score = pc.fill_null(batch.column(want["score"]).cast("float64"), np.nan).to_numpy(zero_copy_only=False)
        scored = np.isfinite(score)
        if scored.any():
            lo, hi = min(lo, float(score[scored].min())), max(hi, float(score[scored].max()))
        width = len(m_names) + 1
        size = len(j_names) * width
        ok = (j >= 0) & (m >= 0)
        key = np.where(ok, j * width + m, 0)

        def present(mask: np.ndarray, key: np.ndarray = key, size: int = size) -> list[int]:
            return np.flatnonzero(np.bincount(key[mask], minlength=size)).tolist()  # (judge, model) codes: a table

        marks = [("swap", scored & (game == 2))]
        marks += [(f"variant:{name}", scored & (v == k)) for k, name in enumerate(v_names) if name != "original"]
        marks.append(("rerun", scored & (rerun > 0)))
        every = present(ok)
        models.update(str(m_names[k % width]) for k in every)
        for k in every:  # every group, with or without neighbours
            groups.setdefault((str(j_names[k // width]), str(m_names[k % width])), set())
        for g, mask in marks:
            for k in present(mask & ok):
                groups[(str(j_names[k // width]), str(m_names[k % width]))].add(g)
    return Scan(groups=groups, models=sorted(models), score_min=float(lo), score_max=float(hi))


def blocked_input(path: Path, *, columns: dict[str, str] | None = None) -> bool:
    """Whether certify reads ``path`` in blocks: one Parquet table of more than ``BLOCKED_ABOVE`` rows whose rerun
    column holds a rerun > 0 (by the row groups' statistics, or a scan of that column when they have none)."""
    import pyarrow.parquet as pq

    from biasbound.data.blocked import BLOCKED_ABOVE

    if path.suffix.lower() not in (".parquet", ".pq") or not path.is_file():
        return False
    try:
        pf = pq.ParquetFile(path)
    except Exception:  # noqa: BLE001 - not a readable Parquet file: the reader of load_inputs says why
        return False
    if pf.metadata.num_rows <= BLOCKED_ABOVE:
        return False
    from biasbound.data.blocked import can_block

    if not can_block(path, columns):
        return False
    rerun = _column(dict(columns or {}), "rerun")
    if rerun not in pf.schema_arrow.names:
        return False
    at = pf.schema_arrow.names.index(rerun)
    for g in range(pf.num_row_groups):
        st = pf.metadata.row_group(g).column(at).statistics
        if st is None or not st.has_min_max:
            import pyarrow.compute as pc

            return bool(pc.max(pf.read(columns=[rerun]).column(0)).as_py() or 0) > 0
        if st.max is not None and st.max > 0:
            return True
    return False


class BlockedInputs:
    """A judgment table certify reads block by block, named and reported as :func:`load_inputs` names and reports
    its rows: ``blocks()`` (each block's rows, ``source`` relabelled to the display name, the groups ``exclude``
    names left out), ``report`` (``{display name: load report}``) and ``options`` (for ``verify --judgments``)."""

    def __init__(self, path: Path, *, scale: tuple[float, float] | None, skip_bad: bool,
                 columns: dict[str, str] | None, exclude: frozenset[tuple[str, str]] = frozenset()) -> None:
        from biasbound.data import blocked
        from biasbound.data._inputs import content_record, display_names

        self.path = Path(path)
        self.shown = display_names([str(path)])[str(path)]
        self.table = blocked.open_blocked(self.path, columns=columns, scale=scale, skip_bad=skip_bad,
                                          block_rows=blocked.BLOCK_ROWS)
        self.exclude = exclude
        self.attrs: dict[str, Any] = {}
        self.options: dict[str, Any] = {
            "scale": None if scale is None else list(scale), "skip_bad": skip_bad, "columns": columns,
            "llmbar_view": "output_1", "ties": "missing", "score_map": None, "neighbors_auto": None,
            "inputs": [content_record(self.path, self.shown, "table")]}
        self.extra: dict[str, Any] = {}

    def blocks(self) -> Iterator[Any]:
        from types import SimpleNamespace

        from biasbound.data._inputs import relabel

        for js in self.table.blocks():
            relabel(js, {}, str(self.path), self.shown)
            self.attrs = dict(js.frame.attrs)
            frame = js.frame
            if self.exclude:  # the (judge, model) groups left out, marked in a judges × models table of the codes
                judges, models = frame["judge"].cat.categories, frame["model"].cat.categories
                out = np.zeros((len(judges), len(models)), dtype=bool)
                j_at, m_at = pd.Index(judges), pd.Index(models)
                for j, m in self.exclude:
                    if j in j_at and m in m_at:
                        out[j_at.get_loc(j), m_at.get_loc(m)] = True
                frame = frame[~out[frame["judge"].cat.codes.to_numpy(), frame["model"].cat.codes.to_numpy()]]
            yield SimpleNamespace(frame=frame, report=js.report)

    @property
    def report(self) -> dict[str, Any]:
        from types import SimpleNamespace

        from biasbound.data._inputs import relabel
        from biasbound.data.loading import _report_of

        js = SimpleNamespace(report=self.table.report, frame=SimpleNamespace(attrs=self.attrs, columns=()))
        rep = relabel(js, _report_of(js, "table"), str(self.path), self.shown)
        return {self.shown: {**rep, **self.extra}}

    def close(self) -> None:
        self.table.close()

    def __enter__(self) -> BlockedInputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

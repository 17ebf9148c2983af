"""The blocked route of :func:`biasbound.pipeline.certify`: a judgment table read block by block, its rerun rows
folded into what certify reads from them, so that memory grows with the rerun-0 rows, not with the reruns.

A block (:mod:`biasbound.data.blocked`) holds every row of a set of whole models: every judge, rerun, variant and
game of them. Everything certify computes per (judge, model) from the rows is therefore exact on a block, and the
blocks' results together are the table's. Per block and judge this module runs the row route's own functions:

* ``check_deterministic`` (when the judge is declared deterministic) and ``_check_frame``'s key check;
* ``prepare``: the coverage records of the block's models (every generator), the rows left out with ``skip_bad``
  and the models without an original judgment;
* ``judgments_digest``: the per-model digests of the rows kept (a model's digest reads only its own rows);
* the rerun generator's weighted neighbours (``_judge._generator_entries``) with the line of each entry's first
  neighbour;
* the judge card's fold of the rerun rows (:func:`biasbound.card.card_fold`);

and keeps the block's rerun-0 rows. The kept rows of every block, merged in file order, are the table certify goes
on with (:func:`read_blocked`); the rerun neighbours reach ``_observe`` merged in row order (:meth:`Folded.entries`),
the coverage and the digests as their per-model records, the card as its fold. So the certificates, the scores, the
leaderboard and the card are the row route's (tests/pipeline/test_blocked_route.py compares every output file).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from biasbound.pipeline._settings import RANGE_GENERATOR

__all__ = ["Folded", "read_blocked"]

#: The generator whose neighbour rows are folded: the reruns (rerun > 0), most rows of a table with reruns.
FOLDED = "rerun"



@dataclass
class _BlockEntries:
    """One block's rerun neighbours of one judge: :class:`_judge._Entries` in the block's codes, with the block's
    model and item names and the line of each entry's first neighbour and of each unscored neighbour."""

    entries: Any
    model_names: np.ndarray
    item_names: np.ndarray
    line: np.ndarray
    miss_line: np.ndarray


@dataclass
class _JudgeFold:
    """What one judge's rows outside the kept frame told certify, block by block."""

    digests: dict[str, str] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)  # coverage records, per model
    orphans: dict[str, str] = field(default_factory=dict)  # models without an original judgment: reason
    entries: list[_BlockEntries] = field(default_factory=list)
    cards: list[Any] = field(default_factory=list)


@dataclass
class Folded:
    """The blocks' results (:func:`read_blocked`): per judge its fold, the rows left out with ``skip_bad``, whether the
    table holds reruns and whether it holds a neighbour of the requested generators."""

    judges: dict[str, _JudgeFold]
    skipped: list[tuple[str, int | None, str]]
    reruns: bool
    holds: bool
    generators: tuple[str, ...]

    def digest(self, judge: str) -> tuple[str, dict[str, str]]:
        """The judge's digest and its models' (:func:`biasbound._integrity.judgments_digest` of its whole table)."""
        from biasbound._integrity import digest_root

        per_model = dict(sorted(self.judges[judge].digests.items()))
        return digest_root(per_model), per_model

    def entries(self, judge: str, codes: Any) -> dict[str, Any]:
        """``{"rerun": _Entries}`` of the judge in its kept frame's ``codes`` (``_judge._codes``), in row order (the
        row route's order); the blocks' parts are released as they are merged."""
        from biasbound.pipeline._judge import _Entries

        if FOLDED not in self.generators:
            return {}
        parts: list[_BlockEntries | None] = []
        if judge in self.judges:  # taken from the fold: released below as they are merged
            parts, self.judges[judge].entries = list(self.judges[judge].entries), []
        m_dtype, i_dtype = codes.m.dtype, codes.i.dtype
        at, miss_at = _merged_positions([p.line for p in parts if p]), _merged_positions([p.miss_line for p in parts if p])
        n, n_miss = sum(len(x) for x in at), sum(len(x) for x in miss_at)
        m, i = np.empty(n, dtype=m_dtype), np.empty(n, dtype=i_dtype)
        diff, count = np.empty(n, dtype=float), np.empty(n, dtype=np.int32)
        miss_m, miss_i, miss_line = np.empty(n_miss, dtype=m_dtype), np.empty(n_miss, dtype=i_dtype), np.empty(n_miss, np.int64)
        for b, p in enumerate(parts):  # block codes -> the judge's codes, through the names (each key has its original)
            if p is None:
                continue
            m_map = pd.Index(codes.model_names).get_indexer(pd.Index(p.model_names)).astype(m_dtype)
            i_map = pd.Index(codes.item_names).get_indexer(pd.Index(p.item_names)).astype(i_dtype)
            e, pos, miss_pos = p.entries, at[b], miss_at[b]
            m[pos], i[pos], diff[pos], count[pos] = m_map[e.m], i_map[e.i], e.diff, e.count
            miss_m[miss_pos], miss_i[miss_pos], miss_line[miss_pos] = m_map[e.miss_m], i_map[e.miss_i], p.miss_line
            parts[b] = None  # this block's part merged: released
        return {FOLDED: _Entries(m=m, i=i, diff=diff, count=count, row=None, miss_m=miss_m, miss_i=miss_i,
                                 miss_row=miss_line)}

    def card_folds(self) -> dict[str, Any]:
        """Per judge the judge card's fold of its rerun rows (:func:`biasbound.card.merge_folds`)."""
        from biasbound.card import merge_folds

        return {j: merge_folds(f.cards) for j, f in self.judges.items() if f.cards}

    def coverage(self, coverage0: dict[str, Any]) -> dict[str, Any]:
        """The table's coverage: ``prepare``'s of the kept frame (its item-set notes; ``notes=False``) with every
        model's record and the models not certified from the blocks, in the order ``prepare`` gives them."""
        from biasbound.pipeline._coverage import closing_notes

        out: dict[str, Any] = {}
        with_orphans = sorted(j for j, f in self.judges.items() if f.orphans)
        for judge in with_orphans + sorted(set(self.judges) - set(with_orphans)):
            fold = self.judges[judge]
            if not fold.models and not fold.orphans:
                continue
            entry0 = coverage0.get(judge, {"models": {}, "not_certified": {}, "notes": []})
            missing_all = {m: r for m, r in entry0["not_certified"].items() if m not in fold.orphans}
            entry = dict(entry0, models=dict(sorted(fold.models.items())),
                         not_certified={**dict(sorted(fold.orphans.items())), **missing_all},
                         notes=list(entry0["notes"]))
            out[judge] = entry
        closing_notes(out)
        return out


def read_blocked(table: Any, generators: tuple[str, ...], *, skip_bad: bool,
                 deterministic: bool) -> tuple[pd.DataFrame, Folded]:
    """Read ``table`` (:class:`biasbound.data.blocked.BlockedTable`) block by block: the rerun-0 rows kept (after
    ``prepare``'s checks, in file order) and the :class:`Folded` results of every block."""
    from biasbound._assumptions import refutation_error, refutations
    from biasbound._integrity import judgments_digest
    from biasbound._memory import release_free_memory
    from biasbound.card import card_fold
    from biasbound.data.blocked import merge_blocks
    from biasbound.pipeline._coverage import prepare
    from biasbound.pipeline._judge import _codes, _generator_entries
    from biasbound.pipeline._neighbors import neighbor_key_codes
    from biasbound.pipeline._settings import _check_frame, holds_neighbors

    kept: list[pd.DataFrame] = []
    folds: dict[str, _JudgeFold] = {}
    skipped: list[tuple[str, int | None, str]] = []
    reruns = holds = False
    refuted: list[tuple[int, Any, Any, Any]] = []
    attrs: dict[str, Any] = {}
    for js in table.blocks():
        block = js.frame
        _add_attrs(attrs, block.attrs)
        if deterministic:  # every block read: the count is the table's, the example its first row's
            found = refutations(block)
            if found is not None:
                refuted.append(found)
                continue
        holds = holds or holds_neighbors(block, generators)
        block, ids = _check_frame(block, ())  # the key check; every requested generator's presence is the table's
        reruns = reruns or bool((block["rerun"] > 0).any())
        block, coverage, skipped_b = prepare(block, generators, skip_bad=skip_bad, ids=ids, notes=False)
        skipped += skipped_b
        for judge, entry in coverage.items():
            fold = folds.setdefault(judge, _JudgeFold())
            fold.models.update(entry["models"])
            fold.orphans.update({m: r for m, r in entry["not_certified"].items() if m not in entry["models"]})
        for judge, fj in _by_judge(block).items():
            fold = folds.setdefault(judge, _JudgeFold())
            codes = _codes(fj)
            _, per_model = judgments_digest(fj, {"model": (codes.m, codes.model_names),
                                                 "item_id": (codes.i, codes.item_names)})
            fold.digests.update(per_model)
            if FOLDED in generators:
                ent = _generator_entries(fj, FOLDED, codes, neighbor_key_codes(fj, codes.m, codes.i), with_rows=True)
                lines = fj["line"].to_numpy()
                line, miss_line = lines[ent.row], lines[ent.miss_row]
                fold.entries.append(_BlockEntries(  # the rows' positions in the block are of no use past it
                    entries=dataclasses.replace(ent, row=None, miss_row=np.zeros(0, dtype=np.intp)),
                    model_names=codes.model_names, item_names=codes.item_names, line=line, miss_line=miss_line))
            fold.cards.append(card_fold(fj))
        rerun0 = block["rerun"].to_numpy() == 0
        kept.append(block[rerun0] if not rerun0.all() else block)
        del block, fj, ids
        release_free_memory()
    if refuted:
        first = min(refuted, key=lambda r: int(r[1]["line"]) if "line" in r[1] else 0)
        raise refutation_error(sum(r[0] for r in refuted), *first[1:])
    frame = merge_blocks(kept)
    frame.attrs = attrs  # the reader's notes, its counts the table's
    del kept
    release_free_memory()
    # prepare's order: generator by generator, each in row order
    order = {f"{g} neighbour without an original judgment of its item": k for k, g in enumerate(generators)}
    skipped.sort(key=lambda r: (order.get(r[2], len(order)), r[1] is None, r[1] or 0))
    return frame, Folded(judges=folds, skipped=skipped, reruns=reruns, holds=holds,
                         generators=tuple(g for g in generators if g != RANGE_GENERATOR))


def _add_attrs(into: dict[str, Any], attrs: dict[str, Any]) -> None:
    """A block's frame attributes added to the table's: the load report's counts summed, every other note the first
    block's (the same in every block)."""
    for k, v in attrs.items():
        if k == "load_report" and k in into:
            into[k] = {**into[k], **{c: into[k][c] + v[c] for c in ("rows", "missing", "n_skipped") if c in v}}
        else:
            into.setdefault(k, dict(v) if isinstance(v, dict) else v)


def _merged_positions(lines: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each part's positions in the merge of the parts by line (every part in increasing line order, lines distinct):
    an entry's position is the number of entries of every part before its line."""
    out = []
    for b, lb in enumerate(lines):
        if np.any(lb[1:] < lb[:-1]):  # cannot happen: a block's rows are in file order
            raise RuntimeError("a block's neighbours are not in file order")
        pos = np.arange(len(lb), dtype=np.int64)
        for c, lc in enumerate(lines):
            if c != b and len(lc):
                pos += np.searchsorted(lc, lb)
        out.append(pos)
    return out


def _by_judge(block: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The block's rows of each judge as certify splits a table (one judge: the block itself); a block is coded, so
    its judges are its judge column's categories in use."""
    from biasbound.data.coded import judge_groups

    if len(block) == 0:
        return {}
    return judge_groups(block, [str(j) for j in block["judge"].cat.remove_unused_categories().cat.categories])

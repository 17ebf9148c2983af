"""Certification of one judge as a sequence of stages along the data flow, each a small function
over frozen records:

    canonical scores → certified batch (centre hold-out) → observed neighbours → hold-out split
    → sensitivity per generator → calibration → mechanism → audits → certificates → scores table
    → leaderboard

The model/leaderboard difference lives in the view object (:mod:`biasbound.pipeline._view`).

Seeding (deterministic given the judge's seed, spawned from the master seed): one generator
``rng = default_rng(judge_seed)`` is consumed by the stages in this fixed order — the centre
hold-out split (``center="holdout"`` only), the neighbour hold-out split (paper route; tight
route only when some generator's neighbours are a recorded sample), then the leaderboard
bootstrap seed. The
mechanism's noise seeds are spawned from ``judge_seed`` (one per model, SeedSequence), the
audits' from ``judge_seed + 1``; all are recorded in the outputs.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InfeasibleCertificateError, InputError
from biasbound._memory import release_free_memory
from biasbound._validation import arg
from biasbound._validation import spawn_seeds as _spawn_seeds
from biasbound.pipeline._leaderboard import _judge_leaderboard, _str_column
from biasbound.pipeline._neighbors import (
    _estimates,
    _group_bounds,
    _group_split,
    _jitter_diagnostic,
    _judge_sensitivity,
    neighbor_key_codes,
    _neighbor_codes,
    per_item,
    _Neighbors,
)
from biasbound.pipeline._results import JudgeCertification, _Batch, _Canon, jsonable
from biasbound.pipeline._settings import RANGE_GENERATOR, _WHERE, _Settings, describe_generator
from biasbound.pipeline._view import _BatchScores, _LeaderboardView, _ModelView, make_view


def _sha(values: np.ndarray) -> str:
    from biasbound.certificate import sha256_of_array

    return sha256_of_array(np.asarray(values, dtype=float))


# ----------------------------------------------------------------------------------- records
@dataclass(frozen=True)
class _Observed:
    """Observed neighbours of one judge on its certified batch, weighted: the neighbours of one (model, item,
    generator) with one difference are one entry, ``count`` of them (reruns that agree), so the arrays grow with the
    distinct answers, not with the reruns.

    In generator order, then in the judgment table's row order of each entry's first neighbour. ``diff`` is signed
    (f(D)_i − f(D')_i on the item's own scale [0, 1]); ``generator`` the index into the generators (int8 below
    128 generators); ``count`` (int32, >= 1) the neighbours it stands for; ``missing`` counts, per generator, neighbour judgments
    that produced no score (never imputed).
    """

    model: np.ndarray
    item: np.ndarray
    generator: np.ndarray
    diff: np.ndarray
    missing: dict[str, int]
    # (model codes, item codes) of the batch items whose neighbour judgment is missing, per generator: a
    # drawn item of a sample whose neighbour failed is counted at the range bound, never dropped
    missing_keys: dict[str, tuple[np.ndarray, np.ndarray]] = dataclasses.field(default_factory=dict)
    count: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int32))

    def take(self, mask: np.ndarray, missing_keys: dict[str, tuple[np.ndarray, np.ndarray]]) -> _Observed:
        """The entries selected by a boolean mask (order kept), with these missing keys."""
        return _Observed(model=self.model[mask], item=self.item[mask], generator=self.generator[mask],
                         diff=self.diff[mask], missing=self.missing, missing_keys=missing_keys, count=self.count[mask])


def _weighted(key: np.ndarray, diff: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """``(first, count)``: the neighbours with one ``key`` (>= 0) and one ``diff`` as one entry — positions of each
    group's first neighbour, in row order, and the group's size.  Every key once: ``first`` is None (each row its
    own entry, count 1)."""
    n = len(key)
    lo, hi = (int(key.min()), int(key.max())) if n else (0, 0)
    if lo >= 0 and hi < 8 * n + 2**20:  # a count per key: one pass, no sort
        repeated = n > 1 and int(np.bincount(key).max()) > 1
    else:
        k_s = np.sort(key)
        repeated = bool(np.any(k_s[1:] == k_s[:-1]))
    if not repeated:  # one neighbour per key (swap, variants): nothing to merge
        return None, np.ones(n, dtype=np.int32)
    # one integer per (key, difference): the differences numbered by a hash factorisation (few distinct values);
    # a stable sort of it (the table's row runs — e.g. one per rerun — make it cheap) keeps each group's rows in row
    # order, so a group's first sorted row is its first neighbour
    d_code, d_values = pd.factorize(diff)
    nd = max(len(d_values), 1)
    # keys too large to multiply: numbered densely first (fewer than n codes, so the product fits)
    k = key.astype(np.int64) if hi < 2**62 // nd else pd.factorize(key)[0].astype(np.int64)
    pair = k * nd + d_code
    from biasbound.pipeline._codes import stable_order

    order = stable_order(pair)
    p_s = pair[order]
    start = np.flatnonzero(np.r_[True, p_s[1:] != p_s[:-1]])
    at_row = np.zeros(n, dtype=np.int64)  # each group's size at its first row: the entries in row order, no sort
    at_row[order[start]] = np.diff(np.append(start, n))
    first = np.flatnonzero(at_row)
    return first, at_row[first].astype(np.int32)


@dataclass(frozen=True)
class _Sensitivity:
    """Per (unit, generator) estimates from the calibration share and their combination."""

    estimates: dict[str, dict[str, Any]]
    judge: Any  # CombinedSensitivity over units
    center_shift: float  # S_μ (batch centre)
    per_unit: dict[str, Any]
    jitter: dict[str, Any] | None
    notes: tuple[str, ...]


# ----------------------------------------------------------------------------------- stages
@dataclass(frozen=True)
class _Codes:
    """One factorisation of the judge's table: model and item codes into their sorted names.

    ``m`` and ``i`` are the coded frame's own categorical codes when the table is coded (int8/int16/int32, one per
    row, no copy); a consumer that forms a mixed-radix key from them widens them to int64 first."""

    m: np.ndarray
    model_names: np.ndarray
    i: np.ndarray
    item_names: np.ndarray
    #: per generator, the neighbour-to-original pairing ``neighbors.observed._match`` made for the certificate
    #: (row positions of these very rows; :func:`_card_match`), handed on so the judge card does not pair the rows
    #: again
    matches: dict[str, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)


def _codes(fj: pd.DataFrame, ids: Any = None) -> _Codes:
    """``ids``: the table's ``_ColumnCodes`` when ``fj`` is that very table (one judge, every row kept)."""
    from biasbound.data.tables import sorted_codes

    def column_codes(col: str) -> tuple[np.ndarray, np.ndarray]:
        if ids is not None and ids.frame is fj and isinstance(fj[col].dtype, pd.StringDtype) and not fj[col].hasnans:
            # text without a missing value: the same sorted distinct texts and ranks as sorted_codes gives,
            # from the factorisation made once for the whole table
            codes, names = ids.column(col, sort=True)
            return codes.astype(np.intp, copy=False), names.astype(str)
        return sorted_codes(fj[col], narrow=True)  # a coded column's own codes: no per-row copy is kept

    m_all, model_names = column_codes("model")
    i_all, item_names = column_codes("item_id")
    return _Codes(m=m_all, model_names=model_names, i=i_all, item_names=item_names)


def _canonical(fj: pd.DataFrame, s: _Settings, codes: _Codes) -> tuple[_Canon, pd.Series]:
    """f(D): the canonical scores sorted by (model, item), and the missing count per model."""
    from biasbound.neighbors import observed as obs

    obs._check_frame(fj, "canonical_scores")
    # the range bound's canonical rows are every generator's but swap's: game 0 or 1 (no pairwise game 2 needed)
    kind0 = "rerun" if s.generators[0] == RANGE_GENERATOR else obs._parse_generator(s.generators[0], "canonical_scores")[0]
    m_all, model_names, i_all, item_names = codes.m, codes.model_names, codes.i, codes.item_names
    cpos = np.flatnonzero(obs._canonical_rows(fj, kind0))
    cpos = cpos[np.lexsort((i_all[cpos], m_all[cpos]))]
    # item codes in the codes' own (narrow) dtype: every key formed from them widens first (the model codes stay intp,
    # searched per model with a Python int, which would widen a narrow array at every search)
    canon = _Canon(m=m_all[cpos].astype(np.intp), i=i_all[cpos], score=fj["score"].to_numpy(dtype=float)[cpos],
                   model_names=model_names, item_names=item_names)
    present = ~np.isnan(canon.score)
    n_miss = np.bincount(canon.m, weights=(~present).astype(float), minlength=len(model_names))
    seen = np.unique(canon.m)
    return canon, pd.Series(n_miss[seen].astype(int), index=model_names[seen])


def _certified_batch(canon: _Canon, s: _Settings, judge: str, rng: np.random.Generator) -> tuple[_BatchScores, list[str]]:
    """The certified batch: non-missing canonical rows, minus the seeded centre hold-out."""
    notes: list[str] = []
    v_pos = np.flatnonzero(~np.isnan(canon.score))
    centers: dict[str, float] | None = None
    if s.center_kind == "holdout":
        mask = _group_split(canon.m[v_pos], s.holdout, rng)
        c_pos = v_pos[mask]
        means_c = pd.Series(canon.score[c_pos]).groupby(canon.m[c_pos]).mean()
        centers = {str(canon.model_names[k]): float(v) for k, v in means_c.items()}
        v_pos = v_pos[~mask]
        notes.append(
            f"Holdout centre: a seeded {s.holdout:g} share of each model's items was used only to compute the "
            "centre and is excluded from the certified batch (and from the neighbours)."
        )
    d_codes = np.bincount(canon.m[v_pos], minlength=len(canon.model_names))
    pos = v_pos.astype(np.int32) if len(canon.m) < 2**31 else v_pos  # canonical rows, four bytes each where they fit
    batch = _BatchScores(pos=pos, m=canon.m[v_pos], i=canon.i[v_pos], score=canon.score[v_pos],
                         model_names=canon.model_names, item_names=canon.item_names, d_codes=d_codes,
                         model_codes=np.flatnonzero(d_codes), centers=centers)
    if not batch.models:
        raise InputError(f"{arg(f'The {chr(39)}judgments{chr(39)} parameter of {_WHERE} holds', 'The inputs hold')} no "
                         f"non-missing original score for judge {judge!r} (every judgment of it is missing or a "
                         "neighbour: game 2, a variant or a rerun > 0); give the original judgments too.")
    if centers is not None and set(centers) != set(batch.models):
        raise InputError(f"The 'holdout' parameter of {_WHERE} leaves some model of judge {judge!r} without centre items; raise it.")
    return batch, notes


@dataclass(frozen=True)
class _Entries:
    """One generator's observed neighbours of one judge before the certified batch is known, weighted as
    :func:`_weighted` groups them: per entry the model and item codes, the difference, the neighbours it stands for
    and the table position (``row``) of its first neighbour, in row order; and the neighbour rows without a score
    (``miss_m``, ``miss_i``, ``miss_row``), counted and kept by key, never imputed.

    The blocked route (:mod:`biasbound.pipeline._folded`) makes these per block of whole models and merges them: a
    (model, item) key never spans two blocks, so the merge in row order gives the entries of the whole table."""

    m: np.ndarray
    i: np.ndarray
    diff: np.ndarray
    count: np.ndarray
    row: np.ndarray | None
    miss_m: np.ndarray
    miss_i: np.ndarray
    miss_row: np.ndarray

    def key(self, n_items: int) -> np.ndarray:
        return self.m.astype(np.int64) * n_items + self.i  # m, i: the codes' own (narrow) dtype, widened for the key

    def miss_key(self, n_items: int) -> np.ndarray:
        return self.miss_m.astype(np.int64) * n_items + self.miss_i


def _generator_entries(fj: pd.DataFrame, g: str, codes: _Codes, key_codes: Any, with_rows: bool = False) -> _Entries:
    """:class:`_Entries` of generator ``g`` (not the range generator) in the judge's rows ``fj``; the entries' rows only
    ``with_rows`` (the blocked route orders its blocks' entries by them)."""
    from biasbound.neighbors import observed as obs

    m_all, model_names, i_all, item_names = codes.m, codes.model_names, codes.i, codes.item_names
    kind_g, name_g = obs._parse_generator(g, "observed_neighbors")
    miss_rows = np.flatnonzero(obs._neighbor_mask(fj, kind_g, name_g) & np.isnan(fj["score"].to_numpy(dtype=float)))
    matches: dict[str, Any] = {}
    m, i, diff = _neighbor_codes(fj, g, m_all, i_all, model_names, item_names, key_codes, matches=matches)
    matched = matches.get(g)
    rows = None
    if matched is not None:  # the pairing, handed on to the judge card (codes.matches)
        codes.matches[g] = _card_match(matched, len(fj))
        if with_rows:  # the rows of the pairs _neighbor_codes keeps (a finite difference)
            score = fj["score"].to_numpy(dtype=float)
            rows = matched[0][np.isfinite(score[matched[1]] - score[matched[0]])]
    first, count = _weighted(m.astype(np.int64) * max(len(item_names), 1) + i, diff)
    at = slice(None) if first is None else first
    return _Entries(m=m[at], i=i[at], diff=diff[at], count=count, row=None if rows is None else rows[at],
                    miss_m=m_all[miss_rows], miss_i=i_all[miss_rows], miss_row=miss_rows)


def _observe(fj: pd.DataFrame, s: _Settings, batch: _BatchScores, codes: _Codes,
             folded: dict[str, _Entries] | None = None) -> _Observed:
    """Every generator's observed Hamming-1 neighbours whose item is in the certified batch.

    ``folded``: a generator's :class:`_Entries` made elsewhere (the blocked route's rerun rows, which ``fj`` does not
    hold), in the codes of ``codes``."""
    m_all, model_names, i_all, item_names = codes.m, codes.model_names, codes.i, codes.item_names
    n_items_all = max(len(item_names), 1)
    batch_keys = batch.m.astype(np.int64) * n_items_all + batch.i  # sorted: the batch is sorted by (model, item)
    key_codes = neighbor_key_codes(fj, m_all, i_all)
    n_keys = max(len(model_names), 1) * n_items_all
    in_batch: np.ndarray | None = None
    if n_keys <= 4 * len(fj) + 2**20:  # a table over the (model, item) keys: membership by one lookup, no search
        in_batch = np.zeros(n_keys, dtype=bool)
        in_batch[batch_keys] = True
    parts: list[tuple[np.ndarray, ...]] = []
    gen_dtype = np.int8 if len(s.generators) < 2**7 else np.int64  # a generator's index: one byte a neighbour
    missing: dict[str, int] = {}
    missing_keys: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for gi, g in enumerate(s.generators):
        if g == RANGE_GENERATOR:  # no observed neighbour: the knowledge is the range bound alone
            missing[g] = 0
            continue
        ent = (folded or {}).get(g) or _generator_entries(fj, g, codes, key_codes)
        missing[g] = int(ent.miss_row.size)
        mk = ent.miss_key(n_items_all)
        in_mk = _among(mk, batch_keys, in_batch)
        missing_keys[g] = (ent.miss_m[in_mk].astype(np.intp), ent.miss_i[in_mk].astype(np.intp))
        key = ent.key(n_items_all)
        inside = _among(key, batch_keys, in_batch)
        # the model codes as intp: build_knowledge searches them for each model code (a Python int), which numpy
        # would otherwise widen, the whole array, on every search (1.4 s at 10^7 rows)
        parts.append((ent.m[inside].astype(np.intp), ent.i[inside], np.full(int(np.count_nonzero(inside)), gi,
                                                                            dtype=gen_dtype),
                      ent.diff[inside], ent.count[inside]))
        if s.sampled and g in s.sampled and s.view == "model":
            from biasbound.pipeline._knowledge import drawn_without_row

            seen = np.concatenate([key[inside], mk[in_mk]])
            extra = drawn_without_row(s.sampled[g], g, batch, seen, n_items_all, item_names)
            if len(extra):
                missing_keys[g] = (np.concatenate([missing_keys[g][0], extra // n_items_all]),
                                   np.concatenate([missing_keys[g][1], extra % n_items_all]))
    empty = np.zeros(0, dtype=np.int64)
    cat = [np.concatenate([p[k] for p in parts] or [empty]) for k in range(5)]
    cat[3] = cat[3].astype(float, copy=False)
    return _Observed(model=cat[0], item=cat[1], generator=cat[2], diff=cat[3], missing=missing,
                     missing_keys=missing_keys, count=cat[4].astype(np.int32, copy=False))


def _card_match(match: Any, n_rows: int) -> Any:
    """``observed._match``'s pairing as the judge card reads it (``card._pair_rows``: the row positions and the
    counts): the positions as int32 when the table allows, and without the group dimensions, which the card does not
    read (at 10^7 rows: 38 MiB instead of 113 MiB kept until the card)."""
    nb_pos, canon_pos, _, n_missing, n_unmatched = match
    dtype = np.int32 if n_rows < 2**31 else np.intp
    return nb_pos.astype(dtype), canon_pos.astype(dtype), None, n_missing, n_unmatched


def _among(keys: np.ndarray, sorted_keys: np.ndarray, table: np.ndarray | None) -> np.ndarray:
    """Which ``keys`` are among ``sorted_keys``: a lookup in ``table`` (True at each of them) when given, else a
    binary search."""
    if table is not None and (len(keys) == 0 or (keys.min() >= 0 and keys.max() < len(table))):
        return table[keys]
    at = np.minimum(np.searchsorted(sorted_keys, keys), max(len(sorted_keys) - 1, 0))
    return sorted_keys[at] == keys if len(sorted_keys) else np.zeros(len(keys), dtype=bool)


def _hamming1(observed: _Observed, view: _ModelView | _LeaderboardView) -> _Neighbors:
    """The view's distances of the Hamming-1 neighbours."""
    dist, shift = view.distances(observed.model, np.abs(observed.diff))
    n_items = int(observed.item.max()) + 1 if len(observed.item) else 1
    return _Neighbors(model=view.unit_of(observed.model), generator=observed.generator, dist=dist, shift=shift,
                       item=observed.model.astype(np.int64) * n_items + observed.item, count=observed.count)


def _unjudged(observed: _Observed, view: _ModelView | _LeaderboardView, s: _Settings) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (unit, generator): batch items without any observed neighbour, and the unit's batch size."""
    batch = view.batch
    n_items = max(len(batch.item_names), 1)
    bkey = batch.m.astype(np.int64) * n_items + batch.i
    bunit = view.unit_of(batch.m)
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for gi, g in enumerate(s.generators):
        sel = observed.generator == gi
        seen = np.isin(bkey, observed.model[sel].astype(np.int64) * n_items + observed.item[sel])
        for code in np.unique(bunit).tolist():
            mine = bunit == code
            out[(view.unit_name(code), g)] = (int(np.count_nonzero(mine & ~seen)), int(np.count_nonzero(mine)))
    return out


def _sensitivity(cal_rows: _Neighbors, view: _ModelView | _LeaderboardView, s: _Settings, *,
                 strict: bool = True, unjudged: dict[tuple[str, str], tuple[int, int]] | None = None,
                 by_item: bool = False) -> _Sensitivity:
    """Per (unit, generator) estimates, their combination and the jitter diagnostic.

    ``unjudged`` (the paper route): per (unit, generator) the batch items without an observed neighbour and the
    batch size; their share of the mean square is entered at the range bound (Δ*² and its UCB become
    ``(|O|·x² + |U|·A²)/|B|``), so the paper's bound covers the whole batch, not only the judged items."""
    n_gen = len(s.generators)
    unit_gen = cal_rows.model.astype(np.int64)  # widened once, then in place: one per-entry array
    unit_gen *= n_gen
    unit_gen += cal_rows.generator
    order, keys, bounds = _group_bounds(unit_gen)
    del unit_gen
    groups = {}
    for k, a, b in zip(keys.tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = order[a:b]
        count = None if cal_rows.count is None else cal_rows.count[rows]
        pair: tuple[np.ndarray, ...] = (cal_rows.dist[rows], cal_rows.shift[rows])
        if by_item and cal_rows.item is not None:  # the paper route: one RMS per item over its reruns
            pair = per_item(pair[0], pair[1], cal_rows.item[rows], count)
        elif count is not None:  # each entry weighs the neighbours it stands for
            pair = (*pair, count)
        groups[(view.unit_name(k // n_gen), s.generators[k % n_gen])] = pair
    estimates, notes = _estimates(groups, s, view.units, view.max_distance, strict=strict)
    if unjudged:
        estimates, more = _with_unjudged(estimates, unjudged, view.max_distance)
        notes += more
    judge_sens, s_mu, per_unit = _judge_sensitivity(estimates, s, view.shift_scale)
    jitter, warnings = _jitter_diagnostic(estimates, s)
    if jitter is not None:
        notes.append(
            "Rerun jitter is one of the certificate's generators: the guarantee is about the released scores, which "
            "carry the jitter. The jitter-free sensitivity (scope 'jitter_diagnostic') is reported only and was not "
            "used to calibrate."
        )
    notes += warnings
    return _Sensitivity(estimates=estimates, judge=judge_sens, center_shift=s_mu, per_unit=per_unit, jitter=jitter,
                        notes=tuple(notes))


def _with_unjudged(estimates: dict[str, dict[str, Any]], unjudged: dict[tuple[str, str], tuple[int, int]],
                   A: float) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Estimates over the whole batch: the unjudged items' share at the range bound ``A`` (the judged items' Δ*,
    UCB and S_μ are over the judged ones; mean over B <= (|O| mean_O + |U| A²)/|B|)."""
    out: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for unit, per in estimates.items():
        out[unit] = dict(per)
        for g, e in per.items():
            u, b = unjudged.get((unit, g), (0, 0))
            if u == 0 or b == 0:
                continue
            o = (b - u) / b

            def up(x: float | None, o: float = o) -> float | None:
                return None if x is None else math.sqrt(o * x * x + (1.0 - o) * A * A)

            out[unit][g] = dataclasses.replace(e, delta_star=up(e.delta_star), ucb=up(e.ucb),
                                               center_shift=up(e.center_shift))
            who = "the leaderboard" if unit == "*" else f"model {unit!r}"
            notes.append(f"{who}: {u} of {b} items without an observed {g!r} neighbour enter Δ* at the range bound "
                         f"({A:g}).")
    return out, notes


@dataclass(frozen=True)
class _Audits:
    """Per-unit audits on the held-out neighbours, the pooled audit and the verdict counts."""

    per_model: dict[str, Any]
    pooled: Any
    counts: dict[str, int]

    @property
    def violated(self) -> bool:
        """Whether any audit contradicts the certificate."""
        return (self.pooled is not None and self.pooled.verdict == "violated") or self.counts.get("violated", 0) > 0


def _audits(
    s: _Settings, view: _ModelView | _LeaderboardView, cal: Any, held: _Neighbors, judge_seed: int,
    generators: tuple[str, ...] | None = None,
) -> _Audits:
    """Audit the certificate on the held-out neighbours of exactly its generators.

    Per model (model view) and pooled over the judge's models. Every audit runs at confidence
    ``1 − (1 − confidence)/(number of audits)`` (Bonferroni), so the chance that some audit of a
    valid certificate says "violated" — which makes ``certify`` exit 1 — is at most ``1 − confidence``.
    """
    from biasbound.audit import audit

    audited = s.used if generators is None else generators
    # one distance per neighbour: the weighted entries repeated (the audit's Monte Carlo check draws neighbours by
    # position, so with reruns its draw differs from one over the table's row order, in law the same)
    held = held.take(np.isin(held.generator, [s.generators.index(g) for g in audited])).expanded()
    audit_seeds = _spawn_seeds(judge_seed + 1, len(view.units) + 1)
    per_model: dict[str, Any] = {}
    n_audits = (len(view.units) if isinstance(view, _ModelView) else 0) + 1
    conf = 1.0 - (1.0 - s.confidence) / n_audits
    batch_center = s.center_kind == "batch"
    if isinstance(view, _ModelView):
        order, keys, bounds = _group_bounds(held.model)
        held_by = {view.unit_name(k): order[a:b] for k, a, b in zip(keys.tolist(), bounds[:-1], bounds[1:])}
        for i, m in enumerate(view.units):
            rows = held_by.get(m)
            if rows is None or len(rows) < 2:
                per_model[m] = None
                continue
            per_model[m] = audit(
                tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha, distances=held.dist[rows],
                mean_shifts=held.shift[rows] if batch_center else None, dim=view.unit_dim(m), confidence=conf,
                n_mc=min(s.n_mc, 5000), rng=audit_seeds[i], max_distance=view.max_distance,
            )
    pooled = None
    if len(held) >= 2:
        pooled = audit(
            tau=s.tau, delta=s.delta, sigma=cal.sigma, alpha=cal.alpha, distances=held.dist,
            mean_shifts=held.shift if batch_center else None, dim=view.dim, confidence=conf, n_mc=s.n_mc,
            rng=audit_seeds[-1], max_distance=view.max_distance,
        )
    counts = {"holds": 0, "not contradictable": 0, "violated": 0, "inconclusive": 0, "not audited": 0}
    for a in per_model.values():
        counts["not audited" if a is None else a.verdict] += 1
    return _Audits(per_model=per_model, pooled=pooled, counts=counts)


def _scores_table(
    fj: pd.DataFrame, judge: str, canon: _Canon, view: _ModelView | _LeaderboardView, mech: dict[str, Any],
) -> pd.DataFrame:
    """One row per canonical (model, item), in canonical order: original, shrunk and certified."""
    in_batch = np.zeros(len(canon.m), dtype=bool)
    in_batch[view.batch.pos] = True
    scores = pd.DataFrame({"model": _str_column(canon.model_names, canon.m),
                           "item_id": _str_column(canon.item_names, canon.i), "original": canon.score})
    scores.insert(0, "judge", _str_column(np.asarray([judge]), np.zeros(len(canon.m), dtype=np.intp)))  # taken in Arrow
    for col, vals in view.scores_columns(mech, len(canon.m), canon.m).items():
        scores[col] = vals
    scores["in_batch"] = in_batch
    if isinstance(view, _ModelView):  # the table carries the judgments' attrs (load report), as it always has
        scores.attrs = copy.deepcopy(fj.attrs)
    return scores


# ----------------------------------------------------------------------------------- tight route
@dataclass(frozen=True)
class _Point:
    """The released mechanism at one dimension: what :func:`biasbound.mechanism.release` reads."""

    tau: float
    delta: float
    dim: int
    alpha: float
    sigma: float


def _knowledge_of(knowledge: dict[str, Any], s: _Settings, units: list[str]) -> Any:
    """One :class:`biasbound.bounds.Knowledge` over the given units' generators.

    Generators combine by ``max`` (the bound holds for each generator) or, with ``combine="rms"``,
    as their uniform ``mixture``. With several units the generators are named ``"UNIT | GEN"``: the
    calibration takes the mixture within each unit and the max over units (each model's own claim,
    calibrated as the mixture it states).
    """
    from biasbound.bounds import Knowledge
    from biasbound.calibration import UNIT_SEPARATOR

    gens = {}
    for u in units:
        for g in s.used:
            gens[g if len(units) == 1 else f"{u}{UNIT_SEPARATOR}{g}"] = knowledge[u].records[g]
    how = "mixture" if s.combine == "rms" else "max"
    return Knowledge.of(gens, how=how)


def _tight_calibration(judge: str, s: _Settings, view: Any, knowledge: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The judge's (α, σ) from the knowledge of every unit at the view's calibration dimension, and
    each unit's own check at its own dimension (σ and α shared; the bound re-evaluated there)."""
    from biasbound.calibration import calibrate, check

    K = _knowledge_of(knowledge, s, view.units)
    try:
        bcal = calibrate(K, tau=s.tau, delta=s.delta, dim=view.dim, alpha=s.alpha, sigma=s.sigma,
                                   method="tight")
    except InfeasibleCertificateError as exc:
        raise InfeasibleCertificateError(f"Judge {judge!r}: {exc}", alpha_max=exc.alpha_max) from exc
    per_unit = {}
    for u in view.units:
        Ku = _knowledge_of(knowledge, s, [u])
        ok, value = check(tau=s.tau, delta=s.delta, dim=view.unit_dim(u), alpha=bcal.alpha, sigma=bcal.sigma,
                          knowledge=Ku)
        if not ok:  # cannot happen: the tail grows with d and the unit's records are part of K
            raise RuntimeError(f"unit {u!r}: bound {value!r} > delta at its own dimension")
        per_unit[u] = {"knowledge": Ku, "bound": value}
    return bcal, per_unit


def _tight_audits(
    s: _Settings, view: Any, knowledge: dict[str, Any], per_unit: dict[str, Any], bcal: Any, held: _Neighbors,
    judge_seed: int,
) -> _Audits:
    """Audits of the tight route: held-out audits where a generator's knowledge is a sample, else the
    exact probability ("exact") or the bound from all observed data ("not contradictable")."""
    from biasbound.pipeline._results import ExactAudit

    sampled = tuple(g for g in s.used if any(knowledge[u].coverage[g].kind == "sample" for u in view.units))
    if sampled:  # the generators known from a sample are audited on their held-out share
        return _audits(s, view, bcal, held, judge_seed, generators=sampled)
    per_model: dict[str, Any] = {}
    for u in view.units:
        uk = knowledge[u]
        exact = all(uk.exact[g] for g in s.used)
        value = float(per_unit[u]["bound"])
        n = max(uk.coverage[g].total for g in s.used)
        if value > s.delta:
            verdict, why = "violated", "the bound at the released (alpha, sigma) exceeds delta"
        elif all(uk.coverage[g].kind == "range" for g in s.used):
            verdict, why = "not contradictable", ("the certificate rests on the score range alone (no neighbour was "
                                                  "observed, none is needed): no judgment within the range can "
                                                  "contradict it, and there is nothing to audit")
        elif exact:
            verdict, why = "exact", ("every item's neighbour is observed: the probability over T is computed exactly "
                                     "at the released (alpha, sigma); nothing is estimated")
        elif not s.deterministic_judge:
            verdict, why = "not contradictable", ("a random judge: the bound is a (1 - beta) upper confidence bound from "
                                                  "every recorded neighbour verdict, each one draw of the judge "
                                                  "(unobserved items at the range bound); no held-out data exist to "
                                                  "audit it")
        else:
            verdict, why = "not contradictable", ("the certificate rests on every observed neighbour (unobserved items "
                                                  "at the range bound; k-item subsets: their exact law or moments); no "
                                                  "held-out data exist that could contradict it")
        per_model[u] = ExactAudit(verdict=verdict, exact_probability=value, delta=s.delta, reason=why, n_neighbors=n,
                                  dim=view.unit_dim(u))
    worst = max(per_model.values(), key=lambda a: a.exact_probability)
    verdicts = {a.verdict for a in per_model.values()}
    pooled_verdict = "violated" if "violated" in verdicts else ("exact" if verdicts == {"exact"} else "not contradictable")
    if len(per_model) == 1 or len({a.reason for a in per_model.values()}) == 1:  # e.g. every model on the range alone
        reason = worst.reason if len(per_model) == 1 else f"every one of the judge's {len(per_model)} models: {worst.reason}"
    else:
        tally = ", ".join(f"{sum(a.verdict == v for a in per_model.values())} {v}"
                          for v in ("exact", "not contradictable", "violated") if any(a.verdict == v for a in per_model.values()))
        reason = f"the largest over the judge's {len(per_model)} models ({tally})"
    pooled = ExactAudit(verdict=pooled_verdict, exact_probability=worst.exact_probability, delta=s.delta,
                        reason=reason, n_neighbors=sum(a.n_neighbors for a in per_model.values()), dim=view.dim)
    counts = {"holds": 0, "exact": 0, "not contradictable": 0, "violated": 0, "inconclusive": 0, "not audited": 0}
    if isinstance(view, _ModelView):
        for a in per_model.values():
            counts[a.verdict] += 1
        return _Audits(per_model=per_model, pooled=pooled, counts=counts)
    return _Audits(per_model={}, pooled=pooled, counts=counts)


# ----------------------------------------------------------------------------------- one judge
def _certify_judge(fj: pd.DataFrame, judge: str, s: _Settings, judge_seed: int, extras: Any = None,
                   codes: _Codes | None = None, folded: dict[str, _Entries] | None = None) -> JudgeCertification:
    """Certify one judge: the stages above, in data-flow order (see the module docstring for seeding).

    ``extras`` (:class:`biasbound.pipeline._coverage.CertificateExtras`): coverage, digests and provenance recorded in
    the certificates as they are built. ``codes``: :func:`_codes` of ``fj`` when the caller has made them. ``folded``:
    generators' neighbours made outside ``fj`` (:func:`_observe`)."""
    rng = np.random.default_rng(judge_seed)
    codes = _codes(fj) if codes is None else codes
    canon, n_missing = _canonical(fj, s, codes)
    batch, notes = _certified_batch(canon, s, judge, rng)
    view = make_view(s.view, batch)
    observed = _observe(fj, s, batch, codes, folded)
    if any(observed.missing.values()):
        notes.append(
            "Missing neighbour judgments were excluded (counts per generator in neighbors_missing): the "
            "certificate covers neighbours that produced a judgment; a perturbation that makes the judge "
            "fail is not measured by it."
        )
    if s.method == "paper":
        parts = _paper_route(judge, judge_seed, s, view, observed, notes, n_missing, rng, extras)
    else:
        parts = _tight_route(judge, judge_seed, s, view, observed, notes, n_missing, rng, extras)
    cal, sens, mech, audits, judge_cert, model_certs = parts
    jc = JudgeCertification(
        judge=judge, view=s.view, calibration=cal, sensitivity=sens.judge, estimates=sens.estimates,
        certificate=judge_cert, model_certificates=model_certs, audits=audits.per_model, pooled_audit=audits.pooled,
        verdict_counts=audits.counts, scores=pd.DataFrame(), leaderboard=pd.DataFrame(),
        retention={}, seeds={m: int(r.seed) for m, (r, _, _) in mech.items()}, notes=notes,
        violated=audits.violated,
    )
    values = batch.values()
    lb_batch = _Batch(pos=batch.pos, values=values,
                      means=view.means() if isinstance(view, _LeaderboardView) else None,
                      certified=(np.concatenate([np.asarray(mech[m][0].certified, dtype=float) for m in view.units])
                                 if isinstance(view, _ModelView) else None))
    release_free_memory()  # what the calibration freed, before the bootstraps allocate (biasbound._memory)
    jc.leaderboard, jc.retention = _judge_leaderboard(fj, jc, s, canon, lb_batch, mech, batch.d_m, n_missing, rng,
                                                      (codes.m, codes.model_names, codes.i))
    jc.retention["cost"] = _leaderboard_cost(s, view, observed, mech, cal, judge_seed)
    del observed, lb_batch, values  # the scores table last: its text columns are not alive during the bootstraps
    jc.scores = _scores_table(fj, judge, canon, view, mech)
    return jc


def _leaderboard_cost(s: _Settings, view: Any, observed: _Observed, mech: dict[str, Any], cal: Any,
                      judge_seed: int) -> dict[str, Any] | None:
    """The leaderboard's cost of the certificate beside the bias it bounds (:mod:`biasbound.pipeline._cost`)."""
    from biasbound.pipeline._cost import pairs_reversed_between_releases, pairs_reversed_by_moves, retention_over_noise

    batch = view.batch
    models = batch.models
    if len(models) < 2:
        return None
    d = batch.d_codes[batch.model_codes].astype(float)
    means = np.array([float(np.mean(x)) for x in batch.values().values()])
    if isinstance(view, _ModelView):
        shrunk = np.array([float(np.mean(mech[m][0].shrunk)) for m in models])
        sigma_model = cal.sigma / np.sqrt(d)
    else:
        shrunk = np.asarray(mech["*"][0].shrunk, dtype=float)
        sigma_model = np.full(len(models), float(cal.sigma))
    noise_pairs = pairs_reversed_between_releases(shrunk, sigma_model)
    # observed neighbours of the certificate's generators, as moves of their model's mean
    pos = np.searchsorted(batch.model_codes, observed.model)
    used = np.isin(observed.generator, [s.generators.index(g) for g in s.used])
    per_gen: dict[str, Any] = {}
    for g in s.used:
        sel = used & (observed.generator == s.generators.index(g))
        if not sel.any():
            continue
        move = -observed.diff[sel] / d[pos[sel]]
        count = observed.count[sel]
        if s.hamming is None:  # one neighbour: every observed item moved at once (per round for reruns)
            new = means + np.bincount(pos[sel], weights=move * count, minlength=len(models))
            iu = np.triu_indices(len(models), k=1)
            tie = 1e-12  # means within this are equal: float noise of sums of scores (e.g. 313.75/500 twice)
            gap_b, gap_a = means[iu[0]] - means[iu[1]], new[iu[0]] - new[iu[1]]
            before = np.where(np.abs(gap_b) <= tie, 0.0, np.sign(gap_b))
            after = np.where(np.abs(gap_a) <= tie, 0.0, np.sign(gap_a))
            value = float(np.sum((before != 0) & (after != 0) & (before != after)))
            per_gen[g] = {"expected_pairs_reversed": value, "neighbours": 1, "relation": "all items"}
        else:
            r = pairs_reversed_by_moves(means, pos[sel], move)  # per entry; each weighs its neighbours
            per_gen[g] = {"expected_pairs_reversed": float(np.sum(r * count) / np.sum(count)),
                          "neighbours": int(count.sum()),
                          "relation": "one judged (model, item) pair, uniform over the observed ones"}
    seed = _spawn_seeds(judge_seed + 3, 1)[0]
    return {
        "pairs": int(len(models) * (len(models) - 1) // 2),
        "pairs_reversed_between_two_releases": noise_pairs,
        "pairs_reversed_by_one_neighbour": per_gen,
        "retention_over_noise": retention_over_noise(means, shrunk, sigma_model, seed=seed),
        "notes": ("Between two releases: exact expectation over the mechanism's noise. One neighbour: the original "
                  "leaderboard's model means, expectation over the observed neighbours of the certificate's "
                  "generators (Hamming-k > 1 is reported through its one-item neighbours)."),
    }


def _paper_route(judge: str, judge_seed: int, s: _Settings, view: Any, observed: _Observed, notes: list[str],
                 n_missing: pd.Series, rng: np.random.Generator, extras: Any = None) -> tuple[Any, ...]:
    """The paper's Algorithm 1 (Cor. 3.2), as it was: a seeded hold-out of the neighbours for the
    audit, Δ* (or its UCB) of the rest combined over generators and models (components floored at
    1e-3), Markov + Laurent–Massart at the symmetric split; recorded as one Moments record so the
    certificate (schema 2) recomputes it."""
    from biasbound.bounds import Knowledge, Moments
    from biasbound.calibration import calibrate

    # items, not rows: an item's reruns on one side of the hold-out, and one weight per item in Δ*
    cal_rows, held = _hamming1(observed, view).split(len(s.generators), s.holdout, rng)
    sens = _sensitivity(cal_rows, view, s, unjudged=_unjudged(observed, view, s), by_item=True)
    notes += list(sens.notes)
    use_ucb = s.beta is not None and sens.judge.ucb is not None
    u = float(sens.judge.ucb if use_ucb else sens.judge.delta_star)
    rec = Moments(U2=u * u, beta=s.beta if use_ucb else None,
                  shift_U2=(sens.center_shift**2 if s.center_kind == "batch" else None),
                  note=("upper confidence bound" if use_ucb else "point estimate") + " of the combined RMS sensitivity "
                       f"(max over {'models' if len(view.units) > 1 else 'the unit'}, {s.combine} over generators)")
    K = Knowledge.of({"+".join(s.used): rec})
    try:
        bcal = calibrate(K, tau=s.tau, delta=s.delta, dim=view.dim, alpha=s.alpha, sigma=s.sigma,
                                   method="paper")
    except InfeasibleCertificateError as exc:
        raise InfeasibleCertificateError(f"Judge {judge!r}: {exc}", alpha_max=exc.alpha_max) from exc
    _shared_note(view, notes)
    point = _Point(tau=s.tau, delta=s.delta, dim=view.dim, alpha=bcal.alpha, sigma=bcal.sigma)
    mech = view.apply(s, point, lambda dm: _Point(s.tau, s.delta, dm, bcal.alpha, bcal.sigma), judge_seed)
    audits = _audits(s, view, bcal, held, judge_seed)
    scope_extra = {"neighbors_calibration": cal_rows.total, "neighbors_audit": held.total,
                   "neighbors_missing": observed.missing, "notes": notes, "generators_table": _generators_table(s, view, sens)}
    per_unit = {u_: {"knowledge": K} for u_ in view.units}
    judge_cert, model_certs = _bound_certificates(judge, judge_seed, s, view, bcal, per_unit, {}, sens, mech, audits,
                                                  scope_extra, n_missing, extras=extras)
    return bcal, sens, mech, audits, judge_cert, model_certs


def _generators_table(s: _Settings, view: Any, sens: _Sensitivity) -> dict[str, Any]:
    """Per generator: Δ* and its UCB (max over units) and m (the neighbours of the unit attaining the max)."""
    out = {}
    for g in s.generators:
        ests = [sens.estimates[u][g] for u in view.units]
        top = max(ests, key=lambda e: float(e.delta_star))
        if g == RANGE_GENERATOR:  # nothing observed: Δ* is the range bound itself, from no neighbour
            out[g] = {"delta_star": float(top.delta_star), "m": 0, "m_total": 0, "ucb": None}
            continue
        out[g] = {"delta_star": float(top.delta_star), "m": int(top.m), "m_total": int(sum(e.m for e in ests)),
                  "ucb": None if any(e.ucb is None for e in ests) else max(float(e.ucb) for e in ests)}
    return out


def _shared_note(view: Any, notes: list[str]) -> None:
    if isinstance(view, _ModelView) and len(view.units) > 1:
        notes.append(
            f"All {len(view.units)} models of this judge share one calibration: every model's knowledge enters it, "
            f"at the largest model dimension ({view.dim}); each model's certificate is re-checked at its own "
            "dimension with the same alpha and sigma."
        )


def _tight_route(judge: str, judge_seed: int, s: _Settings, view: Any, observed: _Observed, notes: list[str],
                 n_missing: pd.Series, rng: np.random.Generator, extras: Any = None) -> tuple[Any, ...]:
    """Calibration from what the data say about Δ (:mod:`biasbound.pipeline._knowledge`).

    Only generators whose neighbours are a recorded random draw are split (a hold-out share for
    the audit); a census or partially covered generator uses every observed neighbour."""
    from biasbound.pipeline._knowledge import build_knowledge, coverage_record

    nb = _hamming1(observed, view)
    sampled = [s.generators.index(g) for g in (s.sampled or {})]
    # drawn neighbours without a judgment, per generator (model codes, item codes, generator index)
    mk = [(observed.missing_keys.get(g, (np.zeros(0, np.int64), np.zeros(0, np.int64))), gi)
          for gi, g in enumerate(s.generators)]
    miss_m = np.concatenate([np.asarray(k[0], dtype=np.int64) for k, _ in mk])
    miss_g = np.concatenate([np.full(len(k[0]), gi, dtype=np.int64) for k, gi in mk])
    if sampled:
        # the hold-out is one uniform split of every drawn neighbour, those without a judgment included
        # (they stay in the calibration share at the range bound), so the calibration share is itself a
        # uniform draw; holding out only judged neighbours would keep every failure and skew the share
        keys = np.concatenate([nb.model.astype(np.int64), view.unit_of(miss_m).astype(np.int64)]) * len(s.generators) \
            + np.concatenate([nb.generator, miss_g])
        # split ITEMS, not rows: every recorded verdict of one item (its reruns) falls on the same side, so the
        # calibration share is a uniform draw of the drawn items whatever their numbers of reruns
        all_items = np.concatenate([np.asarray(observed.item, dtype=np.int64),
                                    np.concatenate([np.asarray(k[1], dtype=np.int64) for k, _ in mk])])
        n_items = int(all_items.max()) + 1 if len(all_items) else 1
        item_key = (np.concatenate([np.asarray(observed.model, dtype=np.int64), miss_m]) * n_items + all_items) \
            * len(s.generators) + np.concatenate([nb.generator, miss_g])
        _, first, inv = np.unique(item_key, return_index=True, return_inverse=True)
        held_all = _group_split(keys[first], s.holdout, rng)[inv.ravel()] & np.isin(np.concatenate([nb.generator, miss_g]),
                                                                                    sampled)
        held_mask, held_miss = held_all[: len(nb)], held_all[len(nb):]
    else:
        held_mask, held_miss = np.zeros(len(nb), dtype=bool), np.zeros(len(miss_m), dtype=bool)
    # nothing held out (no generator known from a sample): the calibration share is every neighbour, the very arrays
    # (a masked copy of each would double them: 340 MiB at 10^7 rows)
    held_any = bool(held_mask.any())
    cal_rows, held = (nb.take(~held_mask) if held_any else nb), nb.take(held_mask)
    kept_keys, at0 = {}, 0
    for (k, gi) in mk:
        n_k = len(k[0])
        keep_k = ~held_miss[at0: at0 + n_k]
        kept_keys[s.generators[gi]] = (np.asarray(k[0])[keep_k], np.asarray(k[1])[keep_k])
        at0 += n_k
    kept = observed.take(~held_mask, kept_keys) if held_any else dataclasses.replace(observed, missing_keys=kept_keys)
    knowledge = build_knowledge(view, kept, s)
    sens = _sensitivity(cal_rows, view, s, strict=False)  # reported only: the knowledge calibrates
    notes += list(sens.notes)
    n_general = len(notes)
    for uk in knowledge.values():
        notes += list(uk.notes)
    n_units = len(notes)
    bcal, per_unit = _tight_calibration(judge, s, view, knowledge)
    _shared_note(view, notes)

    def model_notes(m: str) -> list[str]:  # the judge's notes with this model's own knowledge notes only
        return notes[:n_general] + list(knowledge[m].notes) + notes[n_units:]
    point = _Point(tau=s.tau, delta=s.delta, dim=view.dim, alpha=bcal.alpha, sigma=bcal.sigma)
    mech = view.apply(s, point, lambda dm: _Point(s.tau, s.delta, dm, bcal.alpha, bcal.sigma), judge_seed)
    audits = _tight_audits(s, view, knowledge, per_unit, bcal, held, judge_seed)
    scope_extra = {"neighbors_calibration": cal_rows.total, "neighbors_audit": held.total,
                   "neighbors_missing": observed.missing, "notes": notes,
                   "knowledge_coverage": {u: coverage_record(uk) for u, uk in knowledge.items()},
                   "generators_table": _generators_table(s, view, sens)}
    judge_cert, model_certs = _bound_certificates(judge, judge_seed, s, view, bcal, per_unit, knowledge, sens, mech,
                                                  audits, scope_extra, n_missing, model_notes=model_notes, extras=extras)
    return bcal, sens, mech, audits, judge_cert, model_certs


def _range_A(s: _Settings, view: Any, unit: str) -> float:
    """The almost-sure bound on ||Δ|| that the score range alone implies for the neighbour relation."""
    batch = view.batch
    if isinstance(view, _ModelView):
        d = view.unit_dim(unit)
        k = d if s.hamming is None else min(s.hamming, d)
        return math.sqrt(k)  # k coordinates, each moving by at most 1
    inv = np.sort(1.0 / batch.d_codes[batch.m].astype(float))[::-1]  # every (model, item) pair's largest move
    if s.hamming is None:
        return math.sqrt(len(batch.models))  # every model mean moves by at most 1
    return float(np.sum(inv[: min(s.hamming, len(inv))]))  # triangle inequality over the k moves


def _shift_ratio(s: _Settings, view: Any, unit: str) -> float | None:
    """s² <= ρ ||Δ||² for a batch-mean centre (ρ = k/d; Cauchy–Schwarz gives 1 for all items)."""
    if s.center_kind != "batch":
        return None
    if isinstance(view, _ModelView):
        d = view.unit_dim(unit)
        return 1.0 if s.hamming is None else min(1.0, min(s.hamming, d) / d)
    return 1.0


def _describe_pairs(k: int | None) -> str:
    """The leaderboard view's neighbour relation: T perturbs (model, item) pairs, not items of one model."""
    if k is None:
        return "every (model, item) pair perturbed at once"
    if k == 1:
        return "one (model, item) pair, drawn uniformly among every model's judged items, perturbed"
    return f"{k} (model, item) pairs, drawn uniformly without replacement, perturbed at once"


def _bound_certificates(
    judge: str, judge_seed: int, s: _Settings, view: Any, bcal: Any, per_unit: dict[str, Any],
    knowledge: dict[str, Any], sens: _Sensitivity, mech: dict[str, Any], audits: _Audits, scope_extra: dict[str, Any],
    n_missing: pd.Series, model_notes: Any = None, extras: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """Certificates of the tight route: each records its knowledge, the neighbour relation (k), the
    figures and its audit; per model, the judge's (α, σ) re-checked on that model's knowledge and d.

    A per-model certificate's scope holds that model's records only (its knowledge coverage and, through
    ``model_notes(m)``, its own knowledge notes): its size does not grow with the number of models."""
    from biasbound.calibration import recheck
    from biasbound.certificate import make_certificate
    from biasbound.pipeline._knowledge import describe_hamming

    relation = "; ".join(describe_generator(g) for g in s.used)
    if len(s.used) > 1:
        relation += f" (combined by {s.combine})"
    relation = f"{describe_hamming(s.hamming) if isinstance(view, _ModelView) else _describe_pairs(s.hamming)} — {relation}"
    neighborhood = {"kind": "all-items"} if s.hamming is None else {"kind": "hamming", "k": int(s.hamming)}
    base_scope: dict[str, Any] = {
        "judge": judge, "generators": list(s.generators), "generators_in_combination": list(s.used),
        "holdout_share": s.holdout if s.sampled else 0.0, **scope_extra, "score_range": [0.0, 1.0],
        "neighborhood": neighborhood,
        # an assumption when True: each recorded neighbour verdict is the judge's only answer (see README)
        "deterministic_judge": bool(s.deterministic_judge),
    }
    diagnostics = None if sens.jitter is None else {"jitter": jsonable(sens.jitter)}
    pooled = None if audits.pooled is None else jsonable(audits.pooled.to_dict())
    judge_audit = {"pooled": pooled, "verdict_counts": audits.counts,
                   "per_model": {m: (None if a is None else a.verdict) for m, a in audits.per_model.items()}}
    # shared_radii: a model's records come again in the judge's certificate; their bias radii are computed once
    common: dict[str, Any] = dict(center_kind=s.center_kind, neighbor_relation=relation, neighborhood=neighborhood,
                  diagnostics=diagnostics, shared_radii={})
    model_certs: dict[str, Any] = {}
    if isinstance(view, _ModelView):
        import json

        from biasbound.bounds._knowledge import Knowledge

        values = view.batch.values()
        # the recheck is a function of (knowledge, d) at the judge's point: models with equal knowledge records (notes
        # included) and d share one (many do at a few items per model: 831 distinct of 2000 models at 25 items)
        rechecked: dict[str, Any] = {}
        bcal_m = None
        for m in view.units:
            res, c, _ = mech[m]
            k_m = Knowledge.of(per_unit[m]["knowledge"])
            key = json.dumps([k_m.to_dict(), int(view.unit_dim(m))], sort_keys=True, allow_nan=True)
            if key not in rechecked:  # hint: the previous model's alpha_max guides this one's search (same result)
                rechecked[key] = recheck(bcal, knowledge=k_m, dim=view.unit_dim(m), frontier_points=0, hint=bcal_m)
            bcal_m = rechecked[key]
            a = audits.per_model[m]
            scope = dict(base_scope, model=m, n_items=int(len(values[m])), n_missing=int(n_missing.get(m, 0)),
                         model_sensitivity=jsonable(sens.per_unit[m].to_dict()))
            if "knowledge_coverage" in scope:  # this model's record only: a certificate's size does not grow with the panel
                scope["knowledge_coverage"] = {m: scope["knowledge_coverage"][m]}
            if model_notes is not None:
                scope["notes"] = model_notes(m)
            if extras is not None:
                scope = extras.model_scope(m, scope)
            model_certs[m] = make_certificate(
                bcal_m, center_value=float(c), seed=int(res.seed), data_sha256=_sha(values[m]), view="model",
                judgments_sha256=None if extras is None else extras.model_sha256(m), scope=scope,
                audit={"model": None if a is None else jsonable(a.to_dict()), "pooled": pooled,
                                    "verdict_counts": audits.counts},
                range_bound=_range_A(s, view, m), range_shift_ratio=_shift_ratio(s, view, m), **common,
            )
        jscope = dict(base_scope, model="*", models={
            m: {"dim": int(len(values[m])), "seed": int(mech[m][0].seed), "data_sha256": model_certs[m].data_sha256}
            for m in view.units
        }, n_missing=int(n_missing.sum()), figures=_judge_figures(model_certs))
        jscope["centers"] = {m: float(mech[m][1]) for m in view.units}
        if extras is not None:
            jscope = extras.judge_scope(jscope)
        judge_cert = make_certificate(
            bcal, center_value=(float(s.center_value) if s.center_value is not None
                                else float(np.mean([mech[m][1] for m in view.units]))),
            seed=int(judge_seed), data_sha256=_sha(np.concatenate([values[m] for m in view.units])), view="model",
            judgments_sha256=None if extras is None else extras.judgments_sha256, scope=jscope, audit=judge_audit,
            range_bound=_range_A(s, view, view.batch.d_m.idxmax()),
            range_shift_ratio=_shift_ratio(s, view, view.batch.d_m.idxmax()), **common,
            batch_description=(None if len(view.units) == 1 else
                               f"each of this judge's {len(view.units)} models separately (that model's own batch of "
                               f"at most {view.dim} judged items, as in its per-model certificate; not the "
                               "concatenation of all models' scores)"),
        )
        return judge_cert, model_certs
    res, c_arr, _ = mech["*"]
    d_m = view.batch.d_m
    jscope = dict(base_scope, model="*", models=view.batch.models,
                  n_items={m: int(d_m[m]) for m in view.batch.models}, n_missing=int(n_missing.sum()))
    if extras is not None:
        jscope = extras.judge_scope(jscope)
    judge_cert = make_certificate(
        bcal, center_value=float(np.mean(c_arr)), seed=int(res.seed), data_sha256=_sha(view.means()),
        judgments_sha256=None if extras is None else extras.judgments_sha256,
        view="leaderboard", scope=jscope, audit=judge_audit, range_bound=_range_A(s, view, "*"),
        range_shift_ratio=_shift_ratio(s, view, "*"), **common,
        batch_description=(f"this fixed vector of {view.dim} model mean scores (each the mean of that model's "
                           f"{int(d_m.min())} to {int(d_m.max())} judged items)"),
    )
    return judge_cert, model_certs


def _judge_figures(model_certs: dict[str, Any]) -> dict[str, Any]:
    """Judge-level figures of the model view, read from the per-model certificates (so they agree):
    per model the bias radius and whether its certificate is range-implied, and the worst model."""
    radii = {m: c.bias_radius["radius"] for m, c in model_certs.items()}
    implied = {m: bool(c.range_implied and c.range_implied["holds"]) for m, c in model_certs.items()}
    finite = [r for r in radii.values() if r is not None]
    return {
        "bias_radius_per_model": radii,
        "bias_radius_max_over_models": None if len(finite) < len(radii) else max(finite),
        "range_implied_models": sorted(m for m, v in implied.items() if v),
        "range_implied_all": all(implied.values()),
    }

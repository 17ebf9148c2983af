"""The observed neighbours of one judge and its sensitivity: seeded group splits (calibration / audit
hold-out), the neighbour pairs as integer codes, the per-generator estimates
and their combination over generators and models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound.pipeline._settings import _WHERE, _Settings


def _group_bounds(key: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped by an integer key, row order kept within a group.

    Returns ``(order, keys, bounds)``: the rows of group ``keys[g]`` are
    ``order[bounds[g]:bounds[g + 1]]``, in their original order.
    """
    from biasbound.pipeline._codes import stable_order

    order = stable_order(key)
    ordered = key[order]
    # each run's first position in the sorted keys: np.unique(ordered, return_index=True) without its second sort
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return order, ordered[starts], np.append(starts, len(key))


def _order_within(keys: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Rows sorted by non-negative integer key, then by ``u`` in [0, 1), ties by row.

    Equals ``np.lexsort((u, keys))``. One sort of ``key + u`` gives that order whenever the
    sums have no ties (the rounding of ``key + u`` is monotone within a key and cannot pass
    ``key + 1`` without tying it); with a tie, the exact two-sort form is used.
    """
    combined = keys + u
    order = np.argsort(combined)
    if u.size < 2 or not np.any(combined[order[1:]] == combined[order[:-1]]):
        return order
    by_u = np.argsort(u, kind="stable")  # ties: keep them in row order, as lexsort does
    return by_u[np.argsort(keys[by_u], kind="stable")]


def _group_split(keys: np.ndarray, share: float, rng: np.random.Generator) -> np.ndarray:
    """Boolean mask marking a seeded ``floor(share·n_g)`` random rows of each group ``g`` (vectorised).

    ``keys`` are non-negative integer group codes. Each row gets a uniform draw (one
    ``rng.random(n)`` call, in row order); a group's rows with the ``floor(share·n_g)``
    smallest draws are marked (ties by row order, as ``rank(method="first")``).
    """
    n = len(keys)
    if n == 0 or share <= 0:
        return np.zeros(n, dtype=bool)
    u = rng.random(n)
    order = _order_within(keys, u)
    size = np.bincount(keys)
    start = np.cumsum(size) - size
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(1, n + 1) - start[keys[order]]
    return rank <= np.floor(share * size[keys])


@dataclass
class _Neighbors:
    """The observed neighbours of one judge on certified items, weighted: one entry per (unit, item, generator) and
    difference, standing for ``count`` neighbours (``_judge._Observed``).

    Rows are in generator order, then in the judgment table's row order of each entry's first neighbour.
    """

    model: np.ndarray  # model code (index into the judge's sorted model names)
    generator: np.ndarray  # index into the generator tuple
    dist: np.ndarray
    shift: np.ndarray
    item: np.ndarray | None = None  # the member each neighbour perturbs (model code * n_items + item code)
    count: np.ndarray | None = None  # the neighbours each entry stands for (int32); None: one each

    def take(self, mask: np.ndarray) -> _Neighbors:
        """The neighbours selected by a boolean mask (order kept)."""
        return _Neighbors(self.model[mask], self.generator[mask], self.dist[mask], self.shift[mask],
                           None if self.item is None else self.item[mask],
                           None if self.count is None else self.count[mask])

    @property
    def total(self) -> int:
        """The number of neighbours the entries stand for."""
        return len(self.dist) if self.count is None else int(self.count.sum())

    def expanded(self) -> _Neighbors:
        """One entry per neighbour: each entry repeated ``count`` times, next to itself (for the audits, which
        take one distance per neighbour; the held-out share is small)."""
        if self.count is None or bool(np.all(self.count == 1)):
            return _Neighbors(self.model, self.generator, self.dist, self.shift, self.item, None)
        c = self.count
        return _Neighbors(np.repeat(self.model, c), np.repeat(self.generator, c), np.repeat(self.dist, c),
                          np.repeat(self.shift, c), None if self.item is None else np.repeat(self.item, c), None)

    def split(self, n_gen: int, share: float, rng: np.random.Generator) -> tuple[_Neighbors, _Neighbors]:
        """Seeded hold-out of a ``share`` of each (unit, generator) group's items: (calibration, audit).

        Every neighbour of one item (its reruns) falls on the same side.  The items are taken in the row order of
        their first neighbour, so with one neighbour per item this is the row split of :func:`_group_split`."""
        keys = self.model.astype(np.int64) * n_gen + self.generator
        if self.item is None:
            held = _group_split(keys, share, rng)
        else:
            _, first, inv = np.unique(self.item.astype(np.int64) * n_gen + self.generator, return_index=True,
                                      return_inverse=True)
            order = np.argsort(first)  # items in the row order of their first neighbour
            pos = np.empty_like(order)
            pos[order] = np.arange(order.size)
            held = _group_split(keys[first[order]], share, rng)[pos[inv.ravel()]]
        return self.take(~held), self.take(held)

    def __len__(self) -> int:
        """Number of neighbours."""
        return len(self.dist)


def per_item(dist: np.ndarray, shift: np.ndarray, item: np.ndarray,
             count: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the RMS of its neighbours' distances and mean shifts (several = reruns, weights 1/r_i): T draws an
    item uniformly, so each item weighs 1 in Δ*² = mean over items of the mean square of its draws, however many
    reruns it holds.  ``count``: the neighbours each entry stands for (equal ones kept once; None: one each).
    Items in first-seen order; one entry per item returns the input unchanged (the RMS of equal values)."""
    _, first, inv = np.unique(item, return_index=True, return_inverse=True)
    if first.size == item.size:
        return dist, shift
    inv = inv.ravel()
    c = np.ones(len(dist)) if count is None else count.astype(float)
    cnt = np.bincount(inv, weights=c)
    d2 = np.bincount(inv, weights=c * dist * dist) / cnt  # [proof:paper-rerun-weights]
    s2 = np.bincount(inv, weights=c * shift * shift) / cnt
    order = np.argsort(first)
    return np.sqrt(d2[order]), np.sqrt(s2[order])


def neighbor_key_codes(fj: pd.DataFrame, m_all: np.ndarray, i_all: np.ndarray) -> dict[str, np.ndarray]:
    """Codes of the judge's id columns that equal-value matching may reuse.

    Only for string columns without missing values, where equal text means equal value;
    ``fj`` holds one judge, so its judge column is then one value.
    """
    from biasbound.data.coded import is_coded_column

    codes: dict[str, np.ndarray] = {}
    for col, values in (("judge", np.zeros(len(fj), dtype=np.intp)), ("model", m_all), ("item_id", i_all)):
        series = fj[col]
        if (isinstance(series.dtype, pd.StringDtype) or is_coded_column(series)) and not series.hasnans:
            codes[col] = values
    return codes


def _neighbor_codes(
    fj: pd.DataFrame, generator: str, m_all: np.ndarray, i_all: np.ndarray, model_names: np.ndarray,
    item_names: np.ndarray, key_codes: Mapping[str, np.ndarray], matches: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Observed Hamming-1 neighbours of :func:`biasbound.neighbors.observed.observed_neighbors`
    as (model code, item code, difference) arrays; pairs with a non-finite difference dropped. ``matches``: where
    to keep the row pairing made here (by generator), for the judge card."""
    from biasbound.data.tables import as_texts
    from biasbound.neighbors import observed as obs

    obs._check_frame(fj, "observed_neighbors")
    kind, name = obs._parse_generator(generator, "observed_neighbors")
    matched = obs._match(fj, kind, name, generator, False, key_codes)
    if matches is not None:
        matches[generator] = matched
    if matched is not None:
        nb_pos, canon_pos, _, _, _ = matched
        score = fj["score"].to_numpy(dtype=float)
        diff = score[canon_pos] - score[nb_pos]
        m, i = m_all[nb_pos], i_all[nb_pos]
    else:  # keys with missing values: the merge path, its ids looked up by their text
        nb = obs.observed_neighbors(fj, generator)
        diff = nb["difference"].to_numpy(dtype=float)
        m = np.searchsorted(model_names, as_texts(nb["model"]))
        i = np.searchsorted(item_names, as_texts(nb["item_id"]))
    ok = np.isfinite(diff)
    return m[ok], i[ok], diff[ok]


#: The calibration share of the observed neighbours is a random subset, drawn WITHOUT replacement,
#: of the finite set of neighbours the generator T samples from. The KL-Chernoff bound is a Chernoff
#: (moment-generating-function) bound, and Hoeffding (1963, Thm 4) shows those hold for sampling
#: without replacement; the Maurer-Pontil empirical Bernstein bound is proven for i.i.d. draws only.
_UCB_METHOD = "kl"


def _estimates(
    groups: Mapping[tuple[str, str], tuple[np.ndarray, ...]], s: _Settings, units: Sequence[str],
    max_distance: float, *, strict: bool = True,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Per (unit, generator) SensitivityEstimate from the calibration share of the neighbours.

    ``groups`` maps ``(unit, generator)`` to that group's ``(dist, shift)`` arrays (row order), or
    ``(dist, shift, count)`` with the neighbours each entry stands for.
    ``strict`` (the paper route, whose Δ* calibrates): a group with fewer neighbours than its bound
    needs is an error. Otherwise (the tight route, where Δ* is reported only and the knowledge puts
    unobserved items at the range bound) such a group is reported at the range bound, with a note.
    """
    from biasbound.sensitivity import estimate

    notes: list[str] = []
    # Bonferroni over every confidence statement the certificate rests on: one UCB per generator.
    k = len(s.used)
    beta_k = None if s.beta is None else s.beta / k
    out: dict[str, dict[str, Any]] = {}
    for unit in units:
        per: dict[str, Any] = {}
        for g in s.generators:
            grp = groups.get((unit, g))
            weights = grp[2] if grp is not None and len(grp) > 2 else None
            n = 0 if grp is None else (len(grp[0]) if weights is None else int(weights.sum()))
            needs_ucb = beta_k is not None and g in s.used
            if grp is None or n < (2 if needs_ucb else 1):
                who = "the leaderboard" if unit == "*" else f"model {unit!r}"
                if not strict:
                    per[g] = estimate(np.array([max_distance] * 2), name=g, beta=None, max_distance=max_distance,
                                      mean_shifts=(np.array([max_distance] * 2) if s.center_kind == "batch" else None),
                                      ucb_method=_UCB_METHOD)
                    notes.append(f"{who}: {n} observed {g!r} neighbour(s); its Δ* is reported at the range bound "
                                 f"({max_distance:g}) and its unobserved items count at that bound in the certificate.")
                    continue
                raise InputError(
                    f"The 'neighbors' parameter of {_WHERE}: generator {g!r} has {n} observed neighbour(s) for {who} "
                    f"after the {s.holdout:g} hold-out, fewer than the 2 a sensitivity bound needs."
                )
            per[g] = estimate(
                grp[0],
                name=g,
                beta=beta_k if needs_ucb else None,
                max_distance=max_distance,
                mean_shifts=grp[1] if s.center_kind == "batch" else None,
                ucb_method=_UCB_METHOD,
                weights=weights,
            )
        out[unit] = per
    if beta_k is not None and k > 1:
        notes.append(f"Each generator's sensitivity upper bound is at level beta/K = {s.beta:g}/{k} (Bonferroni).")
    return out, notes


def _jitter_diagnostic(estimates: Mapping[str, Mapping[str, Any]], s: _Settings) -> tuple[dict[str, Any] | None, list[str]]:
    """The jitter-free sensitivity of every non-rerun generator: a diagnostic, never used to calibrate.

    Under the additive model (observed score = jitter-free score + independent zero-mean rerun
    noise) a generator's jitter-free RMS change is ``sqrt(Δ*_g² − Δ*_rerun²)``
    (:func:`biasbound.sensitivity.context_adjusted_rms`). The certificate is about the released
    scores, which carry the jitter, so rerun stays a generator of the certificate. A generator
    that moves scores less than reruns do contradicts the additive model; that is warned about.

    Returns ``(record, warnings)``; ``record`` is None without a rerun and another generator.
    """
    from biasbound.sensitivity import context_adjusted_rms

    others = [g for g in s.generators if g != "rerun"]
    if "rerun" not in s.generators or not others:
        return None, []
    per_unit: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    for unit, per in estimates.items():
        r = float(per["rerun"].delta_star)
        rec: dict[str, Any] = {"rerun_delta_star": r}
        for g in others:
            t = float(per[g].delta_star)
            rec[g] = {"delta_star": t, "jitter_free_delta_star": context_adjusted_rms(t, r), "below_rerun": t < r}
            if t < r:
                who = "the leaderboard" if unit == "*" else f"model {unit!r}"
                warnings.append(
                    f"Generator {g!r} moves {who}'s scores less than reruns do (RMS {t:.3g} < rerun RMS {r:.3g}): "
                    "the data contradict the additive-jitter model, so its jitter-free sensitivity is not meaningful."
                )
        per_unit[unit] = rec
    record = {
        "used_to_calibrate": False,
        "model": "observed score = jitter-free score + independent zero-mean rerun noise",
        "formula": "sqrt(max(0, delta_star_g^2 - delta_star_rerun^2))",
        "per_unit": per_unit,
        "warnings": warnings,
    }
    return record, warnings


def _judge_sensitivity(
    estimates: dict[str, dict[str, Any]], s: _Settings, shift_scale: Mapping[str, float] | None = None,
) -> tuple[Any, float, dict[str, Any]]:
    """Per-unit combination, then the judge-level envelope (max over units).

    ``shift_scale`` maps each unit to ``1 / sqrt(d_unit)``: a Hamming-1 neighbour's batch-mean shift
    ``sqrt(d)|mu(D) - mu(D')|`` is exactly its distance times that factor, so with ``beta`` set the
    centre term ``S_mu`` is the unit's combined sensitivity UCB times it (a valid upper bound on the
    same confidence event); without ``beta`` it is the plug-in RMS of the shifts (paper).
    """
    from biasbound.sensitivity import CombinedSensitivity, combine

    per_unit = {u: combine([per[g] for g in s.used], how=s.combine) for u, per in estimates.items()}
    shifts: list[float] = []
    if s.center_kind == "batch":
        for u, per in estimates.items():
            if per_unit[u].ucb is not None:
                if shift_scale is None:
                    raise InputError("A batch centre with beta needs the per-unit shift scale 1/sqrt(d).")
                shifts.append(float(per_unit[u].ucb) * float(shift_scale[u]))
                continue
            vals = np.array([per[g].center_shift or 0.0 for g in s.used], dtype=float)
            shifts.append(float(vals.max() if s.combine == "max" else math.sqrt(float(np.mean(vals**2)))))
    combos = list(per_unit.values())
    ucb = None
    ucb_components = None
    if all(c.ucb is not None for c in combos):
        ucb = max(float(c.ucb) for c in combos)
        ucb_components = {g: max(float(c.ucb_components[g]) for c in combos) for g in s.used}
    judge = CombinedSensitivity(
        how=s.combine,
        delta_star=max(float(c.delta_star) for c in combos),
        ucb=ucb,
        components={g: max(float(c.components[g]) for c in combos) for g in s.used},
        floor=combos[0].floor,
        ucb_components=ucb_components,
    )
    return judge, (max(shifts) if shifts else 0.0), per_unit

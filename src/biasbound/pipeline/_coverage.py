"""What the judgments cover, before any certification: per judge, model and generator.

Counted here (and reported in the certificate scope, ``summary.json`` and the terminal):

* ``items`` / ``missing``: canonical judgments (variant ``original``, rerun 0, game 0 or 1) of
  a model, and how many of them are missing (NaN: an unparseable or absent verdict);
* per generator, ``observed`` neighbour judgments, ``missing`` neighbour judgments (NaN),
  ``absent`` canonical items without any neighbour row of that generator (e.g. no game-2
  row for a swap), ``unmatched`` neighbour rows whose item has no canonical row (left out
  with ``skip_bad``);
* models without any canonical judgment (their other rows cannot be compared with anything:
  reported as not certified, never an abort of the judge), and judges whose models were
  judged on different item sets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError
from biasbound._validation import arg
from biasbound.pipeline._codes import _ColumnCodes
from biasbound.pipeline._settings import RANGE_GENERATOR

__all__ = ["prepare"]


def _in(key: np.ndarray, among: np.ndarray) -> np.ndarray:
    """``np.isin(key, among)`` for small nonnegative codes (``_ColumnCodes.key``): one table lookup, no sort."""
    table = np.zeros(int(key.max()) + 1 if len(key) else 0, dtype=bool)
    table[among] = True
    return table[key]


def _unique_small(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(v, return_inverse=True)`` for nonnegative codes below a small bound (judges × models): a table of
    the values present and their ranks, no sort of the rows."""
    present = np.zeros(int(v.max()) + 1 if len(v) else 0, dtype=bool)
    present[v] = True
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present).astype(v.dtype), rank[v]


def prepare(
    frame: pd.DataFrame, generators: tuple[str, ...], *, skip_bad: bool = False, ids: _ColumnCodes | None = None,
    notes: bool = True,
) -> tuple[pd.DataFrame, dict[str, Any], list[tuple[str, int | None, str]]]:
    """Count what the judgments cover and leave out the rows that cannot be certified.

    Parameters
    ----------
    frame:
        The checked judgment table (``pipeline._settings._check_frame``).
    generators:
        The requested generators (``swap``, ``rerun``, ``variant:NAME``).
    skip_bad:
        Leave out (and count) neighbour rows whose item has no canonical judgment; when False
        such a row is an error naming its file and line.
    ids:
        The :class:`_ColumnCodes` of ``frame`` when the caller has made them (``_check_frame``).
    notes:
        Close each judge's notes with the absent neighbours and the models not certified (:func:`closing_notes`);
        False when the caller completes the per-model records first (the blocked route).

    Returns
    -------
    (frame, coverage, skipped)
        The rows kept; ``{judge: {"models": {model: {...}}, "not_certified": {model: reason},
        "notes": [...]}}``; one ``(source, line, reason)`` per row left out with ``skip_bad``.
    """
    from biasbound.neighbors import observed as obs

    score = frame["score"].to_numpy(dtype=float)
    canon_any = obs.canonical_mask(frame).to_numpy(dtype=bool)
    ids = _ColumnCodes(frame) if ids is None or ids.frame is not frame else ids
    jm = ids.key(["judge", "model"])
    has_canon = np.zeros(int(jm.max()) + 1 if len(jm) else 0, dtype=bool)
    has_canon[jm[canon_any]] = True
    orphan_model = ~has_canon[jm]
    coverage: dict[str, Any] = {}
    for (judge, model), _ in frame[orphan_model].groupby(["judge", "model"], sort=True):
        entry = coverage.setdefault(str(judge), {"models": {}, "not_certified": {}, "notes": []})
        entry["not_certified"][str(model)] = (
            "no original judgment (variant 'original', rerun 0) to compare its other rows with"
        )
    keep = ~orphan_model
    skipped: list[tuple[str, int | None, str]] = []
    per_gen = _match_neighbors(frame, generators, keep, ids, skip_bad, skipped)
    # counts per (judge, model), vectorised by group codes
    # (judge, model) groups in sorted order: sorted codes per column, the pair code sorts as the tuple
    j_codes, j_names = ids.column("judge", sort=True)
    m_codes, m_names = ids.column("model", sort=True)
    pair_keys, jm_codes = _unique_small(j_codes.astype(np.int64) * len(m_names) + m_codes)
    jm_uniques = [(j_names[k // len(m_names)], m_names[k % len(m_names)]) for k in pair_keys.tolist()]
    n_groups = len(jm_uniques)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(jm_codes[mask], minlength=n_groups)

    items = count(canon_any & keep)
    missing = count(canon_any & keep & np.isnan(score))
    gen_counts = {g: {"observed": count(d["nb"] & ~np.isnan(score)), "missing": count(d["nb"] & np.isnan(score)),
                      "absent": count(d["absent"]), "unmatched": count(d["unmatched"])}
                  for g, d in per_gen.items()}
    for k, (judge, model) in enumerate(jm_uniques):
        if items[k] == 0:
            continue
        entry = coverage.setdefault(str(judge), {"models": {}, "not_certified": {}, "notes": []})
        if missing[k] == items[k]:
            entry["not_certified"][str(model)] = f"every one of its {int(items[k])} original judgments is missing"
        entry["models"][str(model)] = {
            "items": int(items[k]), "missing": int(missing[k]),
            "neighbors": {g: {c: int(v[k]) for c, v in gc.items()} for g, gc in gen_counts.items()},
        }
    _item_set_notes(coverage, ids, canon_any & keep & ~np.isnan(score), jm_codes, pair_keys, jm_uniques,
                    j_names, len(m_names))
    if notes:
        closing_notes(coverage)
    # every row kept: the checked table itself (its _ColumnCodes stay valid for the judge's own codes)
    return (frame if keep.all() else frame[keep]), coverage, skipped



def closing_notes(coverage: dict[str, Any]) -> None:
    """Close each judge's notes (in place) with the items without a neighbour of a generator and the models not
    certified, from its per-model records."""
    for entry in coverage.values():
        gaps = [
            f"{m}: {g} {c['absent']} absent" for m, rec in entry["models"].items()
            for g, c in rec["neighbors"].items() if c["absent"]
        ]
        if gaps:
            entry["notes"].append(
                "Items without a neighbour of a generator (absent rows) give no sensitivity measurement: "
                + "; ".join(gaps[:10]) + (f"; and {len(gaps) - 10} more" if len(gaps) > 10 else "") + "."
            )
        if entry["not_certified"]:
            entry["notes"].append(
                f"{len(entry['not_certified'])} model(s) have no usable original judgment and are not certified: "
                + ", ".join(sorted(entry["not_certified"])[:10]) + "."
            )


def _match_neighbors(frame: pd.DataFrame, generators: tuple[str, ...], keep: np.ndarray, ids: _ColumnCodes,
                     skip_bad: bool, skipped: list[tuple[str, int | None, str]]) -> dict[str, dict[str, np.ndarray]]:
    """Each generator's canonical rows, neighbour rows, unmatched and absent rows; a neighbour without an original
    judgment of its item is an error naming its file and line, or (``skip_bad``) left out of ``keep`` (in place)
    and listed in ``skipped``."""
    from biasbound.neighbors import observed as obs

    item_key = ids.key(["judge", "model", "item_id"])
    item_game_key = ids.key(["judge", "model", "item_id", "game"])
    per_gen: dict[str, dict[str, np.ndarray]] = {}
    for g in generators:
        if g == RANGE_GENERATOR:  # no neighbour rows: nothing to match or count
            continue
        kind, name = obs._parse_generator(g, "certify")
        canon = obs._canonical_rows(frame, kind) & keep
        nb = obs._neighbor_mask(frame, kind, name) & keep
        key = item_key if kind == "swap" else item_game_key
        unmatched = nb & ~_in(key, key[canon])
        if unmatched.any() and not skip_bad:
            at = int(np.flatnonzero(unmatched)[0])
            row = frame.iloc[at]
            raise DataFormatError(
                f"{g} neighbour of judge {row['judge']!s}, model {row['model']!s}, item {row['item_id']!s} has no "
                "original judgment (variant 'original', rerun 0) to compare with; add it or "
                f"{arg('pass skip_bad=True', 'pass --skip-bad')} to leave it out and count it.",
                path=str(row["source"]) if "source" in frame.columns else None,
                line=int(row["line"]) if "line" in frame.columns else None,
            )
        if unmatched.any():
            sources = frame["source"].astype(str).to_numpy() if "source" in frame.columns else None
            lines = frame["line"].to_numpy() if "line" in frame.columns else None
            for pos in np.flatnonzero(unmatched):
                skipped.append((str(sources[pos]) if sources is not None else "<frame>",
                                int(lines[pos]) if lines is not None else None,
                                f"{g} neighbour without an original judgment of its item"))
            keep &= ~unmatched
        with_nb = _in(key, key[nb & ~unmatched])
        per_gen[g] = {"canon": canon, "nb": nb & ~unmatched, "unmatched": unmatched,
                      "absent": canon & ~with_nb}
    return per_gen


def _item_set_notes(coverage: dict[str, Any], ids: _ColumnCodes, rows: np.ndarray, jm_codes: np.ndarray,
                    pair_keys: np.ndarray, jm_uniques: list[tuple[Any, Any]], j_names: Any, n_models: int) -> None:
    """Note (in ``coverage``) each judge whose models were judged on different item sets, from the distinct
    (judge, model, item) codes of the ``rows`` that count."""
    n_groups = len(jm_uniques)
    # models of one judge judged on different item sets: from the distinct (judge, model, item) codes
    i_codes, _ = ids.column("item_id")
    n_i = int(i_codes.max()) + 1 if len(i_codes) else 1
    codes = jm_codes[rows].astype(np.int64)  # a new array: scaled and summed in place
    codes *= n_i
    codes += i_codes[rows]
    if n_groups * n_i <= 2**26:  # a table of the (judge, model, item) codes present (sorted, as np.unique gives them)
        table = np.zeros(n_groups * n_i, dtype=bool)
        table[codes] = True
        triple = np.flatnonzero(table).astype(np.int64)
    else:
        triple = np.unique(codes)
    t_group, t_item = np.divmod(triple, n_i)
    t_judge = pair_keys[t_group] // n_models
    set_size = np.bincount(t_group, minlength=n_groups)  # items per (judge, model)
    for jc in np.flatnonzero(np.bincount(t_judge)).tolist():  # the distinct judges and groups, sorted (small codes)
        of_judge = t_judge == jc
        groups = np.flatnonzero(np.bincount(t_group[of_judge], minlength=n_groups))
        if len(groups) < 2:
            continue
        holders = np.bincount(t_item[of_judge], minlength=n_i)  # models holding each item
        n_union, n_common = int(np.count_nonzero(holders)), int(np.count_nonzero(holders == len(groups)))
        if n_common == n_union:  # every model has the same item set
            continue
        fewest = groups[int(np.argmin(set_size[groups]))]  # the first in sorted model order among ties
        judge = str(j_names[jc])
        coverage[judge]["notes"].append(
            f"The models were scored on different item sets: {n_common} of the {n_union} items have a "
            f"judgment for every model (fewest: {jm_uniques[fewest][1]!s} with {int(set_size[fewest])}); model "
            "means and ranks compare different questions."
        )
        coverage[judge]["different_item_sets"] = True


def score_scales(frame: pd.DataFrame, load_report: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """Per judge, the raw score scale of every input its judgments came from (from the load report).

    ``load_report`` is one loader report (keys ``scale``, ``scale_inferred``, ``sources``) or a
    mapping from input path to such reports (the command line's inputs). A bare DataFrame has
    no report: its scores are taken as given on [0, 1].
    """
    by_source: dict[str, dict[str, Any]] = {}
    if isinstance(load_report, dict):
        reports = [load_report] if "scale" in load_report else [r for r in load_report.values() if isinstance(r, dict)]
        for rep in reports:
            for src in rep.get("sources") or []:
                by_source[str(src)] = {"source": str(src), "scale": rep.get("scale"),
                                       "inferred": rep.get("scale_inferred"), "format": rep.get("format")}
    out: dict[str, list[dict[str, Any]]] = {}
    from biasbound.data.coded import ColumnCodes

    # the distinct (judge, source) pairs in order of first appearance, from the columns' codes
    ids = ColumnCodes(frame)
    j_codes, j_names = ids.column("judge")
    if "source" in frame.columns:
        s_codes, s_names = ids.column("source")
        pair = j_codes.astype(np.int64) * len(s_names) + s_codes
    else:
        s_names, pair = np.asarray(["<frame>"], dtype=object), j_codes.astype(np.int64)
    distinct = np.flatnonzero(np.bincount(pair))
    first = (np.sort([int(np.argmax(pair == p)) for p in distinct.tolist()]) if len(distinct) <= 64
             else np.sort(np.unique(pair, return_index=True)[1]))
    srcs = pd.DataFrame({"judge": [str(j_names[j_codes[k]]) for k in first],
                         "source": [str(s_names[pair[k] % len(s_names)]) for k in first]})
    for judge, grp in srcs.groupby("judge", sort=True):
        out[str(judge)] = [
            {k: v for k, v in by_source.get(src, {"source": src, "scale": [0.0, 1.0], "inferred": None}).items()
             if v is not None}
            for src in grp["source"].tolist()
        ]
    return out


def describe_scale(entry: dict[str, Any]) -> str:
    """``[1, 10] (inferred from the data)`` for one :func:`score_scales` entry."""
    scale = entry.get("scale") or [0.0, 1.0]
    inferred: Any = entry.get("inferred")
    how = {True: " (inferred from the data)", False: " (given)"}.get(inferred, "")
    if entry.get("format") == "arena-hard":
        how = " (Arena-Hard verdicts)"
    return f"[{float(scale[0]):g}, {float(scale[1]):g}]{how}"


@dataclass(frozen=True)
class CertificateExtras:
    """What :func:`biasbound.pipeline.certify` records in a judge's certificates beside the certification: the raw
    score scale and the coverage counts (each per-model certificate its model's, the judge's all of them), the
    coverage notes, the judgments' digests and the call that made them (the judge's scope). Handed to the stage
    that builds the certificates, so that each certificate is built and validated once."""

    coverage: dict[str, Any]
    scales: list[dict[str, Any]]
    judgments_sha256: str | None = None
    model_judgments_sha256: dict[str, str] | None = None
    reproduce: dict[str, Any] | None = None
    schedule: dict[str, Any] | None = None  # a sequentially stopped run's schedule (scope.sequential)
    judge_prompt: dict[str, Any] | None = None  # biasbound run's judge prompt and parser (scope.judge_prompt)

    @property
    def notes(self) -> list[str]:
        return list(self.coverage.get("notes", []))

    def _extended(self, scope: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
        from biasbound.pipeline._results import jsonable

        notes = self.notes
        out = dict(scope)
        out.update(extra)
        if self.schedule is not None:
            out["sequential"] = self.schedule
        if self.judge_prompt is not None:
            out["judge_prompt"] = self.judge_prompt
        out["notes"] = list(out.get("notes", [])) + [n for n in notes if n not in out.get("notes", [])]
        return jsonable(out)

    def judge_scope(self, scope: dict[str, Any]) -> dict[str, Any]:
        """The judge certificate's scope with every model's counts, the notes and the call that made it."""
        from biasbound.pipeline._results import jsonable

        # beside the judge's count of missing neighbour judgments (NaN), the neighbours that have no row at all
        absent: dict[str, int] = {}
        for rec in self.coverage.get("models", {}).values():
            for g, c in (rec.get("neighbors") or {}).items():
                absent[g] = absent.get(g, 0) + int(c.get("absent", 0))
        out = self._extended(scope, {"score_scale": self.scales, "coverage": jsonable(self.coverage),
                                     "neighbors_absent": absent})
        if self.reproduce is not None:
            out["reproduce"] = json.loads(json.dumps(self.reproduce, allow_nan=False))
        return out

    def model_scope(self, model: str, scope: dict[str, Any]) -> dict[str, Any]:
        """A per-model certificate's scope with that model's counts and the notes."""
        from biasbound.pipeline._results import jsonable

        rec = self.coverage.get("models", {}).get(model, {})
        return self._extended(scope, {"score_scale": self.scales, "coverage": jsonable(rec),
                                      "neighbors_absent": {g: int(v.get("absent", 0))
                                                           for g, v in (rec.get("neighbors") or {}).items()}})

    def model_sha256(self, model: str) -> str | None:
        return (self.model_judgments_sha256 or {}).get(str(model))

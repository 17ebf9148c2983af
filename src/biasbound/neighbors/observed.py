"""Neighbours observed in data the user already has: position swap, variants, reruns.

For one (judge, model), f(D) is the vector of that model's per-item scores in the
canonical condition: variant ``"original"``, rerun 0, game 1 for pairwise data (game 0
for single-answer data). Each generator yields Hamming-1 neighbours — one item's
judgment replaced — represented sparsely by the changed coordinate:

- ``swap``: the neighbour of item i is its game-2 score (positions swapped, already in
  the model's view — the loaders flip it).
- ``variant:NAME``: the neighbour of item i is its score under variant NAME (rerun 0,
  same game).
- ``rerun``: the neighbour of item i is its score in rerun r >= 1 (same variant
  ``"original"``, same game); every rerun is one neighbour (intrinsic jitter).

With Δ_i = f(D)_i − f(D′)_i and d the number of non-missing canonical items,
‖f(D) − f(D′)‖₂ = |Δ_i| and the batch-mean centre moves by |Δ_i| / d, so
√d · |mean Δ| = |Δ_i| / √d.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError, InputError
from biasbound._validation import arg

__all__ = [
    "ObservedNeighbors",
    "canonical_scores",
    "leaderboard_view_neighbors",
    "observed_neighbors",
    "observed_neighbors_for",
]

_GROUP = ["judge", "model"]
_REQUIRED = ("judge", "model", "item_id", "variant", "rerun", "game", "score", "source", "line")


@dataclass(frozen=True)
class ObservedNeighbors:
    """Hamming-1 neighbours of one (judge, model) score vector, stored sparsely.

    Attributes
    ----------
    generator:
        ``"swap"``, ``"variant:NAME"`` or ``"rerun"``.
    judge, model:
        The group.
    item_ids:
        (m,) item of each neighbour (repeats for several reruns of one item).
    original:
        (m,) f(D)_i.
    neighbor:
        (m,) f(D′)_i.
    differences:
        (m,) original − neighbor.
    dim:
        d, the number of non-missing canonical items (the length of f(D)).
    missing:
        Pairs excluded because either side is missing (NaN).
    unmatched:
        Neighbour rows skipped (``skip_bad=True``) because their item has no canonical row.
    """

    generator: str
    judge: str
    model: str
    item_ids: np.ndarray
    original: np.ndarray
    neighbor: np.ndarray
    differences: np.ndarray
    dim: int
    missing: int
    unmatched: int = 0

    @property
    def distances(self) -> np.ndarray:
        """‖f(D) − f(D′)‖₂ per neighbour; for Hamming-1 neighbours this is |Δ_i|."""
        return np.abs(self.differences)

    @property
    def mean_shifts(self) -> np.ndarray:
        """√d · |mean(f(D) − f(D′))| = |Δ_i| / √d per neighbour (batch-mean centre)."""
        return np.abs(self.differences) / np.sqrt(self.dim) if self.dim else np.abs(self.differences) * np.nan


def _check_frame(frame: object, where: str) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"The 'frame' parameter of {where} must be a pandas DataFrame. Got {type(frame).__name__} instead.")
    missing = [c for c in _REQUIRED if c not in frame.columns]
    if missing:
        raise InputError(f"The 'frame' parameter of {where} must have the judgment-table columns; missing {missing}.")
    return frame


def _parse_generator(generator: object, where: str) -> tuple[str, str | None]:
    if generator == "swap" or generator == "rerun":
        return str(generator), None
    if isinstance(generator, str) and generator.startswith("variant:") and len(generator) > len("variant:"):
        name = generator[len("variant:"):]
        if name == "original":
            raise InputError(f"The 'generator' parameter of {where} must name a variant other than 'original'. Got {generator!r} instead.")
        return "variant", name
    raise InputError(f"The 'generator' parameter of {where} must be 'swap', 'rerun' or 'variant:NAME'. Got {generator!r} instead.")


def canonical_mask(frame: pd.DataFrame) -> pd.Series:
    return (frame["variant"] == "original") & (frame["rerun"] == 0) & _game_0_or_1(frame)


def _game_0_or_1(frame: pd.DataFrame) -> pd.Series:
    """``frame["game"].isin([0, 1])``: for integer games two comparisons (no hash table of the rows)."""
    game = frame["game"]
    if isinstance(game.dtype, np.dtype) and game.dtype.kind in "iu":
        g = game.to_numpy()
        return pd.Series((g == 0) | (g == 1), index=frame.index)
    return game.isin([0, 1])


def canonical_scores(frame: pd.DataFrame, generator: str = "swap") -> pd.DataFrame:
    """Return f(D): the canonical score of every (judge, model, item).

    Parameters
    ----------
    frame:
        A judgment table (see ``docs/DESIGN.md``, "Judgment tables").
    generator:
        ``"swap"``, ``"rerun"`` or ``"variant:NAME"``. Every generator shares the same
        canonical condition — variant ``"original"``, rerun 0, game 1 (pairwise) or 0
        (single) — so that sensitivities of several generators describe one f(D);
        ``"swap"`` additionally requires pairwise rows (game 1).

    Returns
    -------
    pandas.DataFrame
        Columns ``judge, model, item_id, score, source, line`` (score NaN = missing).
    """
    frame = _check_frame(frame, "canonical_scores")
    kind, _ = _parse_generator(generator, "canonical_scores")
    mask = _canonical_rows(frame, kind)
    return frame.loc[mask, ["judge", "model", "item_id", "score", "source", "line"]].reset_index(drop=True)


def _canonical_rows(frame: pd.DataFrame, kind: str) -> np.ndarray:
    """Boolean mask of the canonical rows of a generator kind (game 1 only for ``swap``)."""
    mask = canonical_mask(frame).to_numpy(dtype=bool)
    if kind == "swap":
        mask = mask & (frame["game"] == 1).to_numpy(dtype=bool)
    return mask


def _neighbor_rows(frame: pd.DataFrame, kind: str, name: str | None) -> pd.DataFrame:
    mask = _neighbor_mask(frame, kind, name)
    return frame.loc[mask, ["judge", "model", "item_id", "game", "rerun", "score", "source", "line"]]


def observed_neighbors(
    frame: pd.DataFrame, generator: str, *, skip_bad: bool = False
) -> pd.DataFrame:
    """Observed Hamming-1 neighbours of every (judge, model) group at once (vectorised).

    Parameters
    ----------
    frame:
        A judgment table.
    generator:
        ``"swap"``, ``"rerun"`` or ``"variant:NAME"``.
    skip_bad:
        When False, a neighbour row whose (judge, model, item) has no canonical row raises;
        when True it is skipped and counted in ``attrs["unmatched"]``.
    Returns
    -------
    pandas.DataFrame
        One row per neighbour with both sides present: ``judge, model, item_id, original,
        neighbor, difference`` (= original − neighbor), ``rerun`` (the neighbour's rerun),
        ``dim`` (d of the group: its non-missing canonical items). ``attrs`` holds
        ``generator``, ``missing`` (pairs excluded because a side is NaN) and ``unmatched``.

    Raises
    ------
    DataFormatError
        Naming the neighbour row's file and line when its item has no canonical row.
    """
    frame = _check_frame(frame, "observed_neighbors")
    kind, name = _parse_generator(generator, "observed_neighbors")
    matched = _match(frame, kind, name, str(generator), skip_bad)
    if matched is None:
        return _observed_neighbors_merge(frame, kind, name, str(generator), skip_bad)
    nb_pos, canon_pos, dims, n_missing, n_unmatched = matched
    cols: dict[str, object] = {}
    for col in ("judge", "model", "item_id"):
        series = frame[col]
        # a string column keeps its dtype, a coded one gives its texts as one; any other goes through numpy as the
        # merge path does
        cols[col] = (series.array.take(nb_pos) if isinstance(series.dtype, pd.StringDtype)
                     else series.iloc[nb_pos].astype("str").array if isinstance(series.dtype, pd.CategoricalDtype)
                     else series.to_numpy()[nb_pos])
    score = frame["score"].to_numpy(dtype=float)
    cols["original"] = score[canon_pos]
    cols["neighbor"] = score[nb_pos]
    cols["rerun"] = frame["rerun"].to_numpy(dtype=np.int64)[nb_pos]
    out = pd.DataFrame(cols)
    out["difference"] = out["original"] - out["neighbor"]
    out["dim"] = dims
    out = out[["judge", "model", "item_id", "original", "neighbor", "difference", "rerun", "dim"]]
    out.attrs.update({"generator": str(generator), "missing": n_missing, "unmatched": n_unmatched})
    return out


_KEY_LIMIT = 2**62
_TABLE_LIMIT = 2**20  # key ranges up to this (plus 4 per row) are matched through a direct table


def _row_key(
    frame: pd.DataFrame, columns: list[str], codes: Mapping[str, np.ndarray] | None = None
) -> tuple[np.ndarray, int] | None:
    """One int64 code per row for the tuple of ``columns`` (equal tuples ⇔ equal codes).

    Returns the codes and their range ``size`` (all codes lie in ``[0, size)``). ``codes``
    may hold ready integer codes of some columns (equal values ⇔ equal codes). None when a
    column holds a missing value (merges match missing keys; the merge path reproduces that).
    """
    key: np.ndarray | None = None  # None: no column with two values yet (every code 0); never written in place
    size = 1
    for col in columns:
        if codes is not None and col in codes:
            col_codes = np.asarray(codes[col], dtype=np.int64)
            n = int(col_codes.max()) + 1 if col_codes.size else 1
        else:
            col_codes, uniques = pd.factorize(frame[col], sort=False)
            if col_codes.size and col_codes.min() < 0:
                return None
            n = max(len(uniques), 1)
        if n == 1:  # one value (a one-judge table's judge): no digit
            continue
        if key is None:  # the first digit: the column's codes themselves (no copy; read only below)
            key, size = col_codes, n
            continue
        if size * n >= _KEY_LIMIT:  # re-number the tuples seen so far before widening
            key, seen = pd.factorize(key, sort=False)
            key, size = key.astype(np.int64), max(len(seen), 1)
        key = key * n  # a new array: the codes given are never changed
        key += col_codes
        size *= n
    return (np.zeros(len(frame), dtype=np.int64) if key is None else key), size


def _match(
    frame: pd.DataFrame, kind: str, name: str | None, generator: str, skip_bad: bool,
    codes: Mapping[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int] | None:
    """Pair every neighbour row with its canonical row, on integer row keys.

    Returns
    -------
    (nb_pos, canon_pos, dims, missing, unmatched) or None
        Row positions in ``frame`` of each neighbour with both sides present (frame order)
        and of its canonical row, the group dimension ``d`` of each, and the counts of
        :func:`observed_neighbors`. None when the keys hold missing values or the canonical
        keys repeat: the caller then uses the merge path (same result, same errors).

    ``codes`` optionally gives integer codes of key columns that the caller has already
    factorised (equal values ⇔ equal codes), to skip hashing them again.
    """
    canon_mask = _canonical_rows(frame, kind)
    if kind == "swap":
        nb_mask = ((frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == 2)).to_numpy(dtype=bool)
        on = ["judge", "model", "item_id"]
    else:
        nb_mask = _neighbor_mask(frame, kind, name)
        on = ["judge", "model", "item_id", "game"]
    codes = dict(codes or {})
    for col in _GROUP:  # judge and model enter both keys below: each factorised once for the two
        if col not in codes:
            col_codes, _ = pd.factorize(frame[col], sort=False)
            if col_codes.size and col_codes.min() < 0:  # a missing value: the merge path (see _row_key)
                return None
            codes[col] = col_codes
    group_key = _row_key(frame, _GROUP, codes)
    row_key = _row_key(frame, on, codes)
    if group_key is None or row_key is None:
        return None
    (group, group_size), (key, size) = group_key, row_key
    canon_pos = np.flatnonzero(canon_mask)
    nb_pos = np.flatnonzero(nb_mask)
    if size <= _TABLE_LIMIT + 4 * len(frame):  # a direct lookup table over the key range
        index = np.int32 if len(canon_pos) < 2**31 else np.int64  # half the memory when the positions fit
        table = np.full(size, -1, dtype=index)
        table[key[canon_pos]] = np.arange(len(canon_pos), dtype=index)
        if np.count_nonzero(table >= 0) < len(canon_pos):  # a canonical key repeats: the merge path
            return None
        found = table[key[nb_pos]]
        del table
    else:
        canon_index = pd.Index(key[canon_pos])
        if not canon_index.is_unique:
            return None
        found = canon_index.get_indexer(key[nb_pos])
    del key  # the row keys end with the lookup (10^7 rows: 76 MiB freed before the steps below)
    unmatched = found < 0
    n_unmatched = int(unmatched.sum())
    if n_unmatched and not skip_bad:
        row = frame.iloc[int(nb_pos[np.argmax(unmatched)])]
        raise DataFormatError(
            f"{generator} neighbour of judge {row['judge']!r}, model {row['model']!r}, item {row['item_id']!r} has no "
            "canonical judgment (variant 'original', rerun 0) to compare with; add it or "
            f"{arg('pass skip_bad=True', 'pass --skip-bad')} to leave it out and count it.",
            path=str(row["source"]),
            line=int(row["line"]),
        )
    nb_pos, match_pos = nb_pos[~unmatched], canon_pos[found[~unmatched]]
    del found, unmatched
    score = frame["score"].to_numpy(dtype=float)
    ok = ~np.isnan(score[match_pos]) & ~np.isnan(score[nb_pos])
    n_missing = int((~ok).sum())
    nb_pos, match_pos = nb_pos[ok], match_pos[ok]
    # d of a (judge, model) group: its non-missing canonical scores for this generator
    present = canon_pos[~np.isnan(score[canon_pos])]
    if group_size > _TABLE_LIMIT + 4 * len(frame):
        group, seen = pd.factorize(group, sort=False)
        group_size = len(seen)
    dims = np.bincount(group[present], minlength=group_size).astype(np.int64)[group[nb_pos]]
    return nb_pos, match_pos, dims, n_missing, n_unmatched


def _neighbor_mask(frame: pd.DataFrame, kind: str, name: str | None) -> np.ndarray:
    """Boolean mask of the neighbour rows of a generator kind (:func:`_neighbor_rows` selects by it)."""
    if kind == "swap":
        mask = (frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == 2)
    elif kind == "variant":
        mask = (frame["variant"] == name) & (frame["rerun"] == 0) & _game_0_or_1(frame)
    else:
        mask = (frame["variant"] == "original") & (frame["rerun"] >= 1) & _game_0_or_1(frame)
    return mask.to_numpy(dtype=bool)


def _observed_neighbors_merge(frame: pd.DataFrame, kind: str, name: str | None, generator: str, skip_bad: bool) -> pd.DataFrame:
    """:func:`observed_neighbors` by pandas merges: the path for keys with missing values or repeats."""
    canon = canonical_scores(frame, generator)
    if kind == "swap":
        canon_key = canon[["judge", "model", "item_id", "score"]]
    else:
        canon_key = frame.loc[canonical_mask(frame), ["judge", "model", "item_id", "game", "score"]]
    nb = _neighbor_rows(frame, kind, name)
    on = ["judge", "model", "item_id"] if kind == "swap" else ["judge", "model", "item_id", "game"]
    merged = nb.merge(canon_key.rename(columns={"score": "original"}), on=on, how="left", indicator=True, validate="many_to_one")
    unmatched_mask = (merged["_merge"] == "left_only").to_numpy()
    n_unmatched = int(unmatched_mask.sum())
    if n_unmatched and not skip_bad:
        row = merged[unmatched_mask].iloc[0]
        raise DataFormatError(
            f"{generator} neighbour of judge {row['judge']!r}, model {row['model']!r}, item {row['item_id']!r} has no "
            "canonical judgment (variant 'original', rerun 0) to compare with; add it or "
            f"{arg('pass skip_bad=True', 'pass --skip-bad')} to leave it out and count it.",
            path=str(row["source"]),
            line=int(row["line"]),
        )
    merged = merged[~unmatched_mask]
    ok = merged["original"].notna() & merged["score"].notna()
    n_missing = int((~ok).sum())
    merged = merged[ok]
    dims = canon[canon["score"].notna()].groupby(_GROUP, sort=False).size().rename("dim").reset_index()
    out = pd.DataFrame(
        {
            "judge": merged["judge"].to_numpy(),
            "model": merged["model"].to_numpy(),
            "item_id": merged["item_id"].to_numpy(),
            "original": merged["original"].to_numpy(dtype=float),
            "neighbor": merged["score"].to_numpy(dtype=float),
            "rerun": merged["rerun"].to_numpy(dtype=np.int64),
        }
    )
    out["difference"] = out["original"] - out["neighbor"]
    out = out.merge(dims, on=_GROUP, how="left")
    out["dim"] = out["dim"].fillna(0).astype(np.int64)
    for c in ("judge", "model", "item_id"):  # a coded column's texts, as the row-key path gives them
        if isinstance(frame[c].dtype, pd.CategoricalDtype):
            out[c] = out[c].astype("str")
    out = out[["judge", "model", "item_id", "original", "neighbor", "difference", "rerun", "dim"]]
    out.attrs.update({"generator": str(generator), "missing": n_missing, "unmatched": n_unmatched})
    return out


def observed_neighbors_for(
    frame: pd.DataFrame, *, judge: str, model: str, generator: str, skip_bad: bool = False
) -> ObservedNeighbors:
    """Observed Hamming-1 neighbours of one (judge, model) score vector.

    Parameters
    ----------
    frame:
        A judgment table.
    judge, model:
        The group; an InputError names the available ones when absent.
    generator:
        ``"swap"``, ``"rerun"`` or ``"variant:NAME"``.
    skip_bad:
        See :func:`observed_neighbors`.

    Returns
    -------
    ObservedNeighbors
    """
    frame = _check_frame(frame, "observed_neighbors_for")
    _parse_generator(generator, "observed_neighbors_for")
    sub = frame[(frame["judge"] == judge) & (frame["model"] == model)]
    if sub.empty:
        raise InputError(
            f"The 'judge'/'model' parameters of observed_neighbors_for must name a group in the frame. "
            f"Got ({judge!r}, {model!r}) instead; judges: {sorted(frame['judge'].unique().tolist())[:10]}."
        )
    nb = observed_neighbors(sub, generator, skip_bad=skip_bad)
    canon = canonical_scores(sub, generator)
    return ObservedNeighbors(
        generator=str(generator),
        judge=str(judge),
        model=str(model),
        item_ids=nb["item_id"].to_numpy(dtype=object),
        original=nb["original"].to_numpy(dtype=float),
        neighbor=nb["neighbor"].to_numpy(dtype=float),
        differences=nb["difference"].to_numpy(dtype=float),
        dim=int(canon["score"].notna().sum()),
        missing=int(nb.attrs["missing"]),
        unmatched=int(nb.attrs["unmatched"]),
    )


def leaderboard_view_neighbors(frame: pd.DataFrame, generator: str, *, skip_bad: bool = False) -> pd.DataFrame:
    """Neighbour distances in the leaderboard view: f(D) = the vector of model means.

    For each judge, f(D) has one coordinate per model (its mean canonical score over its
    n_items(model) non-missing items; d = number of models of that judge). Changing one
    model-item judgment by Δ_i moves that model's coordinate by Δ_i / n_items(model) and
    no other, so ‖f(D) − f(D′)‖₂ = |Δ_i| / n_items(model).

    Parameters
    ----------
    frame, generator, skip_bad:
        As in :func:`observed_neighbors`.

    Returns
    -------
    pandas.DataFrame
        ``judge, model, item_id, difference`` (Δ_i / n_items, signed), ``distance``
        (its absolute value), ``n_items``, ``dim`` (models of the judge), ``mean_shift``
        (√d · |mean change| = distance / √d, for a batch-mean centre over models).
        ``attrs`` as in :func:`observed_neighbors`.
    """
    frame = _check_frame(frame, "leaderboard_view_neighbors")
    nb = observed_neighbors(frame, generator, skip_bad=skip_bad)
    canon = canonical_scores(frame, generator)
    canon = canon[canon["score"].notna()]
    n_items = canon.groupby(_GROUP, sort=False).size().rename("n_items").reset_index()
    n_models = n_items.groupby("judge", sort=False).size().rename("dim_models").reset_index()
    out = nb[["judge", "model", "item_id", "difference"]].merge(n_items, on=_GROUP, how="left").merge(n_models, on="judge", how="left")
    out["difference"] = out["difference"] / out["n_items"]
    out["distance"] = out["difference"].abs()
    out = out.rename(columns={"dim_models": "dim"})
    out["mean_shift"] = out["distance"] / np.sqrt(out["dim"])
    out = out[["judge", "model", "item_id", "difference", "distance", "n_items", "dim", "mean_shift"]]
    out.attrs.update(nb.attrs)
    return out

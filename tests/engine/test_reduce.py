"""The engine's reduction equals the current route's statistics on random tables, through every format.

The reference is the library's own row route: :func:`biasbound.neighbors.observed.observed_neighbors` per generator
on the loaded judgment table, its differences summed per (judge, model, item) in numpy; the items' canonical and
both-order scores from the frame by pandas. Counts must be equal; sums (compensated in the engine, pairwise in
numpy) equal to 1e-12 relative. No statistical test (false-failure rate 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import InputError
from biasbound.data import from_frame
from biasbound.engine import DEFAULT_LEVELS, reduce
from biasbound.neighbors.observed import observed_neighbors

GENERATORS = ("swap", "rerun", "variant:short")


def _raw(seed: int, models: int = 7, items: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for j in ("judge-a", "judge-b"):
        for m in range(models):
            for i in range(items):
                for variant, rerun, game in (("original", 0, 1), ("original", 0, 2), ("original", 1, 1),
                                             ("original", 2, 1), ("short", 0, 1)):
                    if variant == "short" and i % 4 == 0:
                        continue  # items without a variant neighbour
                    rows.append((j, f"model-{m}", f"q{i:03d}", variant, rerun, game))
    raw = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game"])
    raw["score"] = rng.integers(1, 11, len(raw)).astype(float)  # a 1-10 scale, mapped to [0, 1]
    raw.loc[rng.random(len(raw)) < 0.06, "score"] = np.nan  # missing verdicts on both sides of pairs
    return raw


def _reference(raw: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, pd.DataFrame], dict[str, int]]:
    frame = from_frame(raw, scale=(1, 10)).frame
    key = ["judge", "model", "item_id"]
    canon = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([0, 1])]
    both = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([1, 2])]
    cells = pd.DataFrame({
        "n": canon.groupby(key)["score"].count(), "sum": canon.groupby(key)["score"].sum(),
        "n_both": both.groupby(key)["score"].count(), "sum_both": both.groupby(key)["score"].sum(),
    }).fillna(0)
    nbs, missing = {}, {}
    for g in GENERATORS:
        nb = observed_neighbors(frame, g)
        d = nb["difference"].to_numpy(dtype=float)
        nbs[g] = pd.DataFrame({"n": nb.groupby(key).size(), "sum": pd.Series(d, index=nb.index).groupby([nb[k] for k in key]).sum(),
                               "sumsq": pd.Series(d * d, index=nb.index).groupby([nb[k] for k in key]).sum(),
                               **{f"tail_{k}": pd.Series(np.abs(d) > t, index=nb.index).groupby([nb[k] for k in key]).sum()
                                  for k, t in enumerate(DEFAULT_LEVELS)}})
        missing[g] = int(nb.attrs["missing"])
    return cells, nbs, missing


def _write(raw: pd.DataFrame, fmt: str, path) -> object:
    if fmt == "frame":
        return raw
    out = path / f"t.{fmt}"
    if fmt == "parquet":
        raw.to_parquet(out)  # pyarrow writes NaN: the row-group statistics leave it out (can_have_nan)
    elif fmt == "csv":
        raw.to_csv(out, index=False)  # NaN: an empty cell
    else:
        raw.to_json(out, orient="records", lines=True)  # NaN: null
    return out


@pytest.mark.parametrize(("fmt", "partitions"), [("parquet", 1), ("parquet", 3), ("csv", 1), ("jsonl", 2), ("frame", 1)])
def test_reduction_equals_the_row_route(fmt: str, partitions: int, tmp_path) -> None:
    raw = _raw(len(fmt) + partitions)
    st = reduce(_write(raw, fmt, tmp_path), scale=(1, 10), partitions=partitions)
    cells, nbs, missing = _reference(raw)
    assert st.rows == len(raw) and st.engine == "duckdb"
    got = st.named("cells").set_index(["judge", "model", "item_id"])
    assert got.index.equals(cells.index)  # sorted by text, every canonical item
    for c in ("n", "n_both"):
        assert np.array_equal(got[c].to_numpy(), cells[c].to_numpy())
    for c in ("sum", "sum_both"):
        np.testing.assert_allclose(got[c].to_numpy(), cells[c].to_numpy(), rtol=1e-12, atol=0)
    assert int(got["missing"].sum()) == int(raw.loc[(raw["variant"] == "original") & (raw["rerun"] == 0)
                                                   & (raw["game"] == 1), "score"].isna().sum())
    for g in GENERATORS:
        nbs_named = st.named("neighbours")
        mine = nbs_named[nbs_named["generator"] == g].set_index(["judge", "model", "item_id"])
        assert int(mine["missing"].sum()) == missing[g] and int(mine["unmatched"].sum()) == 0
        mine = mine[mine["n"] > 0]  # groups whose every pair has a NaN side hold no neighbour
        want = nbs[g]
        assert mine.index.equals(want.index)
        for c in ("n", *[f"tail_{k}" for k in range(len(DEFAULT_LEVELS))]):
            assert np.array_equal(mine[c].to_numpy(), want[c].to_numpy()), c
        for c in ("sum", "sumsq"):
            np.testing.assert_allclose(mine[c].to_numpy(), want[c].to_numpy(), rtol=1e-12, atol=1e-15)


def test_a_duplicated_key_is_named_once(tmp_path) -> None:
    raw = _raw(5, models=2, items=4)
    raw = pd.concat([raw, raw.iloc[[3]]], ignore_index=True)
    path = _write(raw, "parquet", tmp_path)
    with pytest.raises(InputError, match=r"t\.parquet: the judgment key \(judge='judge-a', model='model-0', "
                                         r"item_id='q000', variant='original', rerun=2, game=1\) occurs 2 times"):
        reduce(path, scale=(1, 10))


def test_bad_inputs_are_one_sentence(tmp_path) -> None:
    bad = tmp_path / "t.csv"
    bad.write_text("judge,model,item_id,score\nj,m,q1,0.5\nj,m,q2,high\n")
    with pytest.raises(InputError, match=r"t\.csv: cannot be reduced"):
        reduce(bad)
    with pytest.raises(InputError, match=r"columns \['judge', 'model', 'item_id', 'score'\]"):
        reduce(pd.DataFrame({"model": ["m"], "item_id": ["q"], "score": [0.5]}))
    with pytest.raises(InputError, match="engine"):
        reduce(bad, engine="polars")
    with pytest.raises(InputError, match="not a file"):
        reduce(tmp_path / "none.parquet")

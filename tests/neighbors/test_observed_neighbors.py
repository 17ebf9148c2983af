"""Observed neighbours (swap, variant, rerun) and the leaderboard view."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound import DataFormatError, InputError
from biasbound.data import from_frame
from biasbound.neighbors import (
    canonical_scores,
    leaderboard_view_neighbors,
    observed_neighbors,
    observed_neighbors_for,
)


def table(rows: list[tuple]) -> pd.DataFrame:
    """(model, item, variant, rerun, game, score) rows → a validated judgment frame."""
    raw = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    return from_frame(raw, source="t.csv", lines=np.arange(2, len(raw) + 2), judge="j", scale=(0, 1)).frame


PAIRWISE = table(
    [
        ("a", "q1", "original", 0, 1, 1.0),
        ("a", "q1", "original", 0, 2, 0.25),
        ("a", "q2", "original", 0, 1, 0.5),
        ("a", "q2", "original", 0, 2, 0.5),
        ("a", "q3", "original", 0, 1, 0.75),
        ("a", "q3", "original", 0, 2, np.nan),  # missing swap side
        ("b", "q1", "original", 0, 1, 0.0),
        ("b", "q1", "original", 0, 2, 1.0),
    ]
)


def test_swap_by_hand() -> None:
    nb = observed_neighbors_for(PAIRWISE, judge="j", model="a", generator="swap")
    assert nb.item_ids.tolist() == ["q1", "q2"]
    np.testing.assert_array_equal(nb.original, [1.0, 0.5])
    np.testing.assert_array_equal(nb.neighbor, [0.25, 0.5])
    np.testing.assert_array_equal(nb.differences, [0.75, 0.0])
    assert nb.dim == 3 and nb.missing == 1
    np.testing.assert_allclose(nb.distances, [0.75, 0.0])
    np.testing.assert_allclose(nb.mean_shifts, [0.75 / np.sqrt(3), 0.0])
    # f(D) and one neighbour written out in full: ||f(D) - f(D')||_2 = |Δ_i|
    f = np.array([1.0, 0.5, 0.75])
    f_prime = f.copy()
    f_prime[0] = 0.25
    assert np.linalg.norm(f - f_prime) == pytest.approx(nb.distances[0])
    assert np.sqrt(3) * abs(np.mean(f - f_prime)) == pytest.approx(nb.mean_shifts[0])


def test_all_groups_at_once() -> None:
    out = observed_neighbors(PAIRWISE, "swap")
    assert out.attrs["missing"] == 1 and out.attrs["unmatched"] == 0
    got = {(m, i): d for m, i, d in zip(out["model"], out["item_id"], out["difference"])}
    assert got == {("a", "q1"): 0.75, ("a", "q2"): 0.0, ("b", "q1"): -1.0}
    assert dict(zip(out["model"], out["dim"])) == {"a": 3, "b": 1}


def test_variant_and_rerun_by_hand() -> None:
    f = table(
        [
            ("a", "q1", "original", 0, 0, 0.8),
            ("a", "q2", "original", 0, 0, 0.4),
            ("a", "q1", "verbose", 0, 0, 1.0),
            ("a", "q2", "verbose", 0, 0, np.nan),
            ("a", "q1", "original", 1, 0, 0.7),
            ("a", "q1", "original", 2, 0, 0.8),
            ("a", "q2", "original", 1, 0, 0.1),
        ]
    )
    v = observed_neighbors_for(f, judge="j", model="a", generator="variant:verbose")
    assert v.item_ids.tolist() == ["q1"] and v.differences == pytest.approx([-0.2]) and v.missing == 1 and v.dim == 2
    r = observed_neighbors(f, "rerun")
    assert sorted(zip(r["item_id"], r["rerun"], np.round(r["difference"], 12))) == [("q1", 1, 0.1), ("q1", 2, 0.0), ("q2", 1, 0.3)]
    c = canonical_scores(f, "rerun")
    assert c["score"].tolist() == [0.8, 0.4]


def test_misaligned_variant_names_file_and_line() -> None:
    f = table(
        [
            ("a", "q1", "original", 0, 0, 0.8),
            ("a", "q1", "verbose", 0, 0, 1.0),
            ("a", "q9", "verbose", 0, 0, 1.0),  # line 4: no original judgment of q9
        ]
    )
    with pytest.raises(DataFormatError, match="q9") as err:
        observed_neighbors(f, "variant:verbose")
    assert (err.value.path, err.value.line) == ("t.csv", 4)
    out = observed_neighbors(f, "variant:verbose", skip_bad=True)
    assert len(out) == 1 and out.attrs["unmatched"] == 1
    assert observed_neighbors_for(f, judge="j", model="a", generator="variant:verbose", skip_bad=True).unmatched == 1


def test_bad_generator_and_group() -> None:
    with pytest.raises(InputError, match="'generator'"):
        observed_neighbors(PAIRWISE, "paraphrase")
    with pytest.raises(InputError, match="'generator'"):
        observed_neighbors(PAIRWISE, "variant:original")
    with pytest.raises(InputError, match="'judge'/'model'"):
        observed_neighbors_for(PAIRWISE, judge="j", model="zzz", generator="swap")


def test_demo_swap_matches_a_naive_reading_of_the_file(demo_set, shared_data: Path) -> None:
    """Reference: read the JSON records directly and flip game 2 by the stated table."""
    g1 = {"B>>A": 1.0, "B>A": 0.75, "A=B": 0.5, "A>B": 0.25, "A>>B": 0.0}
    expected: dict[tuple[str, str], float] = {}
    n_missing = 0
    with gzip.open(shared_data / "ko-arena-hard-v0.1" / "judgments_ensemble.jsonl.gz", "rt", encoding="utf-8") as fh:
        for text in fh:
            r = json.loads(text)
            if len(r["games"]) < 2:
                n_missing += 1
                continue
            s1 = g1[r["games"][0]["score"]]
            s2 = 1.0 - g1[r["games"][1]["score"]]
            expected[(r["model"], r["question_id"])] = s1 - s2
    out = observed_neighbors(demo_set.frame, "swap")
    got = dict(zip(zip(out["model"], out["item_id"]), out["difference"]))
    assert got == expected
    assert out.attrs["missing"] == n_missing == 1
    assert set(out["dim"]) == {500}


def test_leaderboard_view_against_brute_force(demo_set) -> None:
    f = demo_set.frame
    lv = leaderboard_view_neighbors(f, "swap")
    canon = canonical_scores(f, "swap").dropna(subset=["score"])
    wide = canon.pivot(index="model", columns="item_id", values="score")
    means = wide.mean(axis=1)
    swapped = f[f["game"] == 2].set_index(["model", "item_id"])["score"]
    rng = np.random.default_rng(0)
    for k in rng.choice(len(lv), size=25, replace=False):
        row = lv.iloc[k]
        w2 = wide.copy()
        w2.loc[row["model"], row["item_id"]] = swapped[(row["model"], row["item_id"])]
        diff = (means - w2.mean(axis=1)).to_numpy()
        assert np.linalg.norm(diff) == pytest.approx(row["distance"], abs=1e-12)
        assert np.sqrt(len(diff)) * abs(diff.mean()) == pytest.approx(row["mean_shift"], abs=1e-12)
    assert set(lv["dim"]) == {76}
    assert lv.loc[lv["model"] == "o4-mini-high", "n_items"].iloc[0] == 500


def _shuffled_table(seed: int = 11) -> pd.DataFrame:
    """Two judges, swap + a 'bold' variant + two reruns, ~5% missing scores, rows in random order."""
    rng = np.random.default_rng(seed)
    grid = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    rows = []
    for judge in ("jB", "jA"):
        for model in ("m-10", "m-2", "modèle"):
            for item in [f"q{i}" for i in range(30)]:
                for variant, rerun, game in (("original", 0, 1), ("original", 0, 2), ("original", 1, 1),
                                             ("original", 2, 1), ("bold", 0, 1)):
                    score = np.nan if rng.random() < 0.05 else grid[rng.integers(0, 5)]
                    rows.append((judge, model, item, variant, rerun, game, score))
    raw = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    raw = raw.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return from_frame(raw, source="s.csv", lines=np.arange(2, len(raw) + 2), scale=(0, 1)).frame


@pytest.mark.parametrize("generator", ["swap", "rerun", "variant:bold"])
def test_row_key_matching_equals_the_merge_reference(generator: str) -> None:
    """The integer row-key path of observed_neighbors gives the pandas-merge result exactly (rows, order, dtypes)."""
    from biasbound.neighbors.observed import _observed_neighbors_merge, _parse_generator

    f = _shuffled_table()
    kind, name = _parse_generator(generator, "test")
    fast = observed_neighbors(f, generator)
    ref = _observed_neighbors_merge(f, kind, name, generator, False)
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)
    assert fast.attrs == ref.attrs and fast.attrs["missing"] > 0
    # unmatched neighbours: dropped and counted with skip_bad, else the first one (in row order) is named
    cut = f.drop(index=f.index[(f["variant"] == "original") & (f["rerun"] == 0) & f["game"].isin([0, 1])][:7])
    fast = observed_neighbors(cut, generator, skip_bad=True)
    ref = _observed_neighbors_merge(cut, kind, name, generator, True)
    pd.testing.assert_frame_equal(fast, ref, check_exact=True)
    assert fast.attrs == ref.attrs and fast.attrs["unmatched"] > 0
    with pytest.raises(DataFormatError) as fast_err:
        observed_neighbors(cut, generator)
    with pytest.raises(DataFormatError) as ref_err:
        _observed_neighbors_merge(cut, kind, name, generator, False)
    assert str(fast_err.value) == str(ref_err.value)


def test_missing_key_values_take_the_merge_path() -> None:
    """A missing model id cannot be an integer key; the merge path matches it as pandas does."""
    f = _shuffled_table().head(400).copy()
    f["model"] = f["model"].astype(object)
    f.loc[f["model"] == "m-2", "model"] = None
    out = observed_neighbors(f, "swap", skip_bad=True)
    assert out["model"].isna().any()


def test_row_key_is_the_tuple_code_and_leaves_given_codes_unchanged() -> None:
    """``_row_key`` reuses a given column's codes as the key's first digit without copying them: the key still
    gives equal codes exactly to equal (judge, model, item, game) tuples, and the codes handed in are not written."""
    from biasbound.neighbors.observed import _row_key

    f = _shuffled_table()
    on = ["judge", "model", "item_id", "game"]
    model_codes = pd.factorize(f["model"], sort=True)[0].astype(np.int64)
    given = {"model": model_codes.copy()}
    for codes in (None, given):
        res = _row_key(f, on, codes)
        assert res is not None
        key, size = res
        assert key.dtype == np.int64 and key.min() >= 0 and key.max() < size
        tuples = pd.factorize(pd.MultiIndex.from_frame(f[on].astype(str)))[0]
        # equal tuples <=> equal keys: each key names one tuple and each tuple one key
        pairs = pd.DataFrame({"t": tuples, "k": key}).drop_duplicates()
        assert pairs["t"].is_unique and pairs["k"].is_unique
    np.testing.assert_array_equal(given["model"], model_codes)
    one = _row_key(f, ["model"], given)  # one column: its codes are the key, shared and unchanged
    assert one is not None and np.array_equal(one[0], model_codes) and one[1] == 3

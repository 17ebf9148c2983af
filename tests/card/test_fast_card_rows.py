"""The judge card's tables formed on integer codes (``card._JudgeRows``) equal a plain reference copy of the routes
they replaced (grouping, selecting and indexing the id columns' text), exactly, on random judgment tables: reruns,
variants, swaps, missing scores, continuous and discrete scores, string and object id columns, models the
leaderboard lacks and leaderboard models without rows. Deterministic (fixed seeds): no false-failure rate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound import card


# ---------------------------------------------------------------- reference: the routes before the codes (verbatim)
def _ref_canonical_rows(fj: pd.DataFrame) -> pd.DataFrame:
    return fj[(fj["variant"] == "original") & (fj["rerun"] == 0) & fj["game"].isin([0, 1])]


def _ref_positions(index: pd.Index, values: pd.Series) -> np.ndarray:
    codes, uniq = pd.factorize(values)
    pos = index.get_indexer(pd.Index(uniq))
    return np.where(codes < 0, -1, pos[codes] if len(pos) else -1)


def _ref_model_matrix(fj: pd.DataFrame, models: list[str]) -> np.ndarray:
    canon = _ref_canonical_rows(fj)
    items = pd.Index(sorted(set(canon["item_id"].astype(str).unique())))
    mat = np.full((len(models), len(items)), np.nan)
    r = _ref_positions(pd.Index(models), canon["model"].astype(str))
    c = _ref_positions(items, canon["item_id"].astype(str))
    keep = r >= 0
    mat[r[keep], c[keep]] = canon["score"].to_numpy(dtype=float)[keep]
    return mat


def _ref_all_items_means(fj: pd.DataFrame, generator: str, models: list[str], n_items: np.ndarray) -> list[np.ndarray]:
    canon = _ref_canonical_rows(fj)
    total = canon.groupby(canon["model"].astype(str))["score"].sum().reindex(models).fillna(0.0).to_numpy()
    nb = card.neighbor_pairs(fj, generator)
    rounds = []
    idx = pd.Index(models)
    for _, grp in (nb.groupby("rerun", sort=True) if len(nb) else []):
        by = grp.groupby(grp["model"].astype(str))
        orig, new = by["original"].sum(), by["neighbor"].sum()
        pos = idx.get_indexer(orig.index)
        sums = total.copy()
        keep = pos >= 0
        sums[pos[keep]] = (total[pos[keep]] - orig.to_numpy()[keep]) + new.to_numpy()[keep]
        rounds.append(sums / np.maximum(n_items, 1))
    return rounds


def _ref_delta_star(nb: pd.DataFrame) -> float | None:
    if nb.empty:
        return None
    per = nb.assign(sq=nb["difference"].to_numpy(dtype=float) ** 2).groupby("model")["sq"].mean()
    return float(np.sqrt(per.max()))


# ---------------------------------------------------------------- random tables
def _table(seed: int, *, continuous: bool, dtype: object) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_models, n_items = int(rng.integers(2, 9)), int(rng.integers(3, 15))
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            def score() -> float:
                if rng.random() < 0.08:
                    return float("nan")  # a missing verdict
                return float(rng.random()) if continuous else float(rng.integers(0, 5)) / 4
            base = {"judge": "j", "model": f"m{m}", "item_id": f"q{i:02d}" if i % 3 else f"Q{i}", "source": "t.csv",
                    "line": 0, "verdict": str(rng.choice(["A>B", "B>A", "A=B", "x"]))}
            if rng.random() < 0.9:  # some items have no original row
                rows.append({**base, "variant": "original", "rerun": 0, "game": 1, "score": score()})
            if rng.random() < 0.8:
                rows.append({**base, "variant": "original", "rerun": 0, "game": 2, "score": score()})
            for r in range(1, int(rng.integers(0, 3)) + 1):
                rows.append({**base, "variant": "original", "rerun": r, "game": 1, "score": score()})
            if rng.random() < 0.6:
                rows.append({**base, "variant": "bold", "rerun": 0, "game": 1, "score": score()})
    frame = pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows in no order
    for col in ("judge", "model", "item_id", "variant"):
        frame[col] = frame[col].astype(dtype)
    return frame


@pytest.mark.parametrize("seed", range(12))
def test_card_tables_on_codes_equal_the_text_routes(seed: int) -> None:
    fj = _table(seed, continuous=seed % 2 == 1, dtype="str" if seed % 3 or seed == 6 else object)
    if seed in (0, 6):  # missing ids: observed_neighbors' merge path, its model ids looked up by their text
        orig = (fj["variant"] == "original") & (fj["rerun"] == 0)
        fj.loc[fj["model"] == "m1", "model"] = None  # every row of one model: a missing model id
        fj.loc[fj.index[orig & (fj["game"] == 2) & fj["model"].notna()][0], "item_id"] = None  # a neighbour's item
    rows = card._judge_rows(fj)
    assert (seed in (0, 6)) == any((pr.m < 0).any() for pr in rows.pairs.values())  # the missing ids are in pairs
    assert set(rows.pairs) == set(card.data_generators(fj))
    names = sorted(set(fj["model"].dropna().astype(str)))
    rng = np.random.default_rng(100 + seed)
    # a leaderboard order that misses one model of the rows and holds one model without rows
    models = [str(m) for m in rng.permutation(names)[1:]] + ["zz-no-rows"]
    n_items = rng.integers(1, 20, len(models)).astype(float)
    assert np.array_equal(card._model_matrix(rows, models), _ref_model_matrix(fj, models), equal_nan=True)
    canon = _ref_canonical_rows(fj)
    assert card._distinct(rows, "model", rows.m) == canon["model"].nunique()
    assert card._distinct(rows, "item_id", rows.i) == canon["item_id"].nunique()
    for g, pr in rows.pairs.items():
        nb = card.neighbor_pairs(fj, g)
        assert pr.missing == nb.attrs["missing"]
        assert [None if k < 0 else rows.model_names[k] for k in pr.m] == [
            None if pd.isna(x) else str(x) for x in nb["model"]]
        assert np.array_equal(pr.original, nb["original"].to_numpy(dtype=float))
        assert np.array_equal(pr.neighbor, nb["neighbor"].to_numpy(dtype=float))
        assert np.array_equal(pr.rerun, nb["rerun"].to_numpy())
        assert pr.delta_star() == _ref_delta_star(nb)  # exactly, not approx
        got, want = card._all_items_means(rows, g, models, n_items), _ref_all_items_means(fj, g, models, n_items)
        assert len(got) == len(want) and all(np.array_equal(x, y) for x, y in zip(got, want))


def test_the_rank_statements_of_one_reading_equal_those_read_again() -> None:
    """``rank_statements`` on the card's one reading of the rows equals the same call reading them itself; the
    card of a table split by judge and coded beforehand (as certify passes them) equals the card reading it."""
    from biasbound.pipeline import certify

    fj = _table(3, continuous=False, dtype="str")
    res = certify(fj, out=None, plots=False, progress=False, seed=0, skip_bad=True)
    j = res.judges["j"]
    own = card.rank_statements(fj, j, rounds=40, seed=2)
    shared = card.rank_statements(fj, j, rounds=40, seed=2, rows=card._judge_rows(fj))
    assert own == shared and own["pairs"] > 0
    # certify's split of the table by judge and its id codes, passed in, give the card judge_card's own reading gives
    from biasbound.pipeline._judge import _codes

    own = card.judge_card(fj, res, rounds=40)
    assert own == card.judge_card(fj, res, rounds=40, groups={"j": fj}) == card.judge_card(
        fj, res, rounds=40, groups={"j": fj}, codes={"j": _codes(fj)})
    assert own["judges"]["j"]["ranks"]["pairs"] > 0


def test_the_card_reuses_certifys_pairing_of_the_neighbours_and_gets_the_same_card() -> None:
    """The pairing of neighbours to originals that the certificate made (``_Codes.matches``, per generator) is what
    the card's own ``_match`` gives on these rows, and the card built on it equals the card that pairs them again."""
    from biasbound.neighbors import observed as obs
    from biasbound.pipeline._judge import _codes
    from biasbound.pipeline._neighbors import _neighbor_codes, neighbor_key_codes

    rng = np.random.default_rng(5)
    rows = [{"judge": "j", "model": f"m{m}", "item_id": f"q{i}", "variant": v, "rerun": r, "game": g,
             "score": float("nan") if rng.random() < 0.08 else float(rng.integers(0, 5)) / 4, "source": "t.csv",
             "line": 0, "verdict": ""}
            for m in range(4) for i in range(9) for v, r, g in (("original", 0, 1), ("original", 0, 2),
                                                                 ("original", 1, 1), ("terse", 0, 1))]
    fj = pd.DataFrame(rows).sample(frac=1.0, random_state=1).reset_index(drop=True)  # every neighbour has its original
    codes = _codes(fj)
    keys = neighbor_key_codes(fj, codes.m, codes.i)
    for g in card.data_generators(fj):
        _neighbor_codes(fj, g, codes.m, codes.i, codes.model_names, codes.item_names, keys, matches=codes.matches)
    assert sorted(codes.matches) == ["rerun", "swap", "variant:terse"]
    for g, matched in codes.matches.items():
        kind, name = obs._parse_generator(g, "observed_neighbors")
        again = obs._match(fj, kind, name, g, True, keys)
        assert (matched is None) == (again is None)
        if matched is not None:
            assert all(np.array_equal(a, b) for a, b in zip(matched[:3], again[:3])) and matched[3:] == again[3:]
    fresh = _codes(fj)  # the same codes without a pairing: the card pairs the rows itself
    from biasbound.pipeline import certify

    res = certify(fj, out=None, plots=False, progress=False, seed=0, neighbors="swap,rerun,variant:terse")
    assert card.judge_card(fj, res, rounds=40, groups={"j": fj}, codes={"j": codes}) == card.judge_card(
        fj, res, rounds=40, groups={"j": fj}, codes={"j": fresh})

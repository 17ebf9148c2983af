"""certify factorises its id columns once and shares the codes: each sharing site equals its plain route.

The repeated-key check of ``_check_frame`` (codes from ``_ColumnCodes``) against ``DataFrame.duplicated``, the
judge's sorted codes taken from those codes against ``data.tables.sorted_codes``, ``judgments_digest`` with
given codes against its own factorisation, the judge card with certify's split and codes against its own, and the
leaderboard's mean over both orders against a plain groupby. Seeded random tables, exact comparisons (no statistical test: false-failure rate 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import InputError
from biasbound._integrity import judgments_digest
from biasbound.data.tables import sorted_codes
from biasbound.pipeline._codes import _ColumnCodes
from biasbound.pipeline._judge import _codes
from biasbound.pipeline._settings import _check_frame


def _table(seed: int, missing_ids: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    frame = pd.DataFrame({
        "judge": rng.choice(["j", "k"], n),
        "model": rng.choice([f"m{k}" for k in range(int(rng.integers(1, 9)))] + ["Mé", "m10"], n),
        "item_id": rng.choice([f"q{k}" for k in range(int(rng.integers(1, 30)))], n),
        "variant": rng.choice(["original", "format:md", "paraphrase"], n),
        "rerun": rng.integers(0, 2, n), "game": rng.integers(1, 3, n),
        "score": np.where(rng.random(n) < 0.1, np.nan, np.round(rng.random(n), 2)),
    })
    if missing_ids:
        for col in ("model", "item_id"):
            frame.loc[rng.random(n) < 0.1, col] = np.nan
    return frame


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("object_ids", [False, True])
def test_repeated_key_check_equals_duplicated(seed: int, object_ids: bool) -> None:
    frame = _table(seed, missing_ids=seed % 2 == 1)
    if seed % 4 == 0:  # most tables have keys given twice; some are cut down to one row per key
        frame = frame.drop_duplicates(["judge", "model", "item_id", "variant", "rerun", "game"])
    if object_ids:  # not text or integer ids: the pandas route
        frame["model"] = frame["model"].astype(object)
    repeated = bool(frame.duplicated(["judge", "model", "item_id", "variant", "rerun", "game"]).any())
    if repeated:
        with pytest.raises(InputError, match="more than once"):
            _check_frame(frame, ())
    else:
        checked, ids = _check_frame(frame, ())
        assert ids.frame is checked


@pytest.mark.parametrize("seed", range(20))
def test_judge_codes_from_the_shared_factorisation_equal_sorted_codes(seed: int) -> None:
    frame = _table(seed, missing_ids=seed % 3 == 0)
    for col in ("model", "item_id"):
        frame[col] = frame[col].astype("str")
    got, want = _codes(frame, _ColumnCodes(frame)), _codes(frame)
    for f in ("m", "model_names", "i", "item_names"):
        a, b = getattr(got, f), getattr(want, f)
        assert a.dtype == b.dtype and np.array_equal(a, b)
    plain_m, plain_names = sorted_codes(frame["model"])
    assert np.array_equal(got.m, plain_m) and np.array_equal(got.model_names, plain_names)


@pytest.mark.parametrize("seed", range(20))
def test_judgments_digest_with_given_codes_equals_its_own(seed: int) -> None:
    frame = _table(seed, missing_ids=seed % 3 == 0)
    ids = _ColumnCodes(frame)
    codes = _codes(frame)
    given = {"model": (codes.m, codes.model_names), "item_id": (codes.i, codes.item_names),
             "variant": ids.column("variant", sort=True)}
    assert judgments_digest(frame, given) == judgments_digest(frame)


@pytest.mark.parametrize("seed", range(3))
def test_leaderboard_mean_over_both_orders_equals_groupby(seed: int) -> None:
    from biasbound.pipeline import certify

    rng = np.random.default_rng(seed)
    models, items = [f"m{k}" for k in range(5)], [f"q{k}" for k in range(40)]
    rows = [{"judge": "j", "model": m, "item_id": q, "variant": "original", "rerun": 0, "game": g,
             "score": float(rng.integers(0, 5)) / 4}
            for m in models for q in items for g in (1, 2)]
    frame = pd.DataFrame(rows).assign(source="t.jsonl", line=lambda f: np.arange(1, len(f) + 1))
    lb = certify(frame, neighbors="swap", progress=False, plots=False, seed=0).leaderboard
    want = frame.groupby("model")["score"].mean()
    assert np.array_equal(lb["original_both_orders"].to_numpy(), want.reindex(lb["model"]).to_numpy())


def _pairwise_table(seed: int, judges: int = 1, drop: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [{"judge": f"j{k}", "model": m, "item_id": q, "variant": "original", "rerun": 0, "game": g,
             "score": np.nan if rng.random() < 0.05 else float(rng.integers(0, 5)) / 4, "verdict": "A>B"}
            for k in range(judges) for m in ("m0", "m1", "Mé", "m3") for q in (f"q{i}" for i in range(30))
            for g in (1, 2) if rng.random() >= drop]
    return pd.DataFrame(rows).assign(source="t.jsonl", line=lambda f: np.arange(1, len(f) + 1))


@pytest.mark.parametrize("seed", range(3))
def test_judge_card_with_certify_codes_equals_its_own(seed: int) -> None:
    import json

    from biasbound.card import judge_card
    from biasbound.pipeline import certify
    from biasbound.pipeline._coverage import prepare

    frame = _pairwise_table(seed)
    checked, ids = _check_frame(frame, ("swap",))
    kept, _, _ = prepare(checked, ("swap",), ids=ids)
    assert kept is checked  # every row kept: the one-judge route of the card is taken
    result = certify(frame, neighbors="swap", progress=False, plots=False, seed=0)
    got = judge_card(kept, result, groups={"j0": kept}, codes={"j0": _codes(kept, ids)})  # as certify passes them
    want = judge_card(kept, result)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)

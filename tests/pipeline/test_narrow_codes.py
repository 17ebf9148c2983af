"""certify keeps per-row codes narrow (issue 24's memory at 10^7 rows); each narrowing equals the wide route.

``sorted_codes(narrow=True)`` at the int8/int16/int32 edges of a coded column, the judge's codes as the frame's own
array, the pairing kept for the judge card (int32 positions), the freed-memory release, and a whole certify whose
(model, item) keys overflow int16 (models × items > 2^15) run with narrow codes against the same run with every
code widened to intp. Exact comparisons of deterministic, seeded computations (no statistical test: false-failure
rate 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound.data.coded import text_categorical
from biasbound.data.tables import sorted_codes


# pandas' own choice of a categorical's code dtype: int8 below 127 categories, int16 below 32767, else int32
@pytest.mark.parametrize(("n_names", "dtype"), [(126, np.int8), (127, np.int16), (2**15 - 2, np.int16),
                                                (2**15 - 1, np.int32)])
@pytest.mark.parametrize("all_present", [True, False])
def test_narrow_sorted_codes_at_the_dtype_edges(n_names: int, dtype: type, all_present: bool) -> None:
    rng = np.random.default_rng(n_names)
    names = np.array([f"n{k}" for k in range(n_names)])
    values = np.concatenate([names, rng.choice(names, 500)])  # every name once, then a random draw
    col = text_categorical(pd.Series(values))
    if not all_present:  # the last (sorted) name never occurs: the codes are renumbered over the names present
        col = col[col != col.cat.categories[-1]]
    assert col.array.codes.dtype == dtype
    wide, wide_names = sorted_codes(col)
    narrow, narrow_names = sorted_codes(col, narrow=True)
    assert wide.dtype == np.intp and narrow.dtype == dtype
    assert np.array_equal(wide, narrow) and np.array_equal(wide_names, narrow_names)
    assert narrow.max() == len(narrow_names) - 1  # the top code of the dtype's range reached, not wrapped
    if all_present:  # the column's own codes: no per-row copy
        assert np.shares_memory(narrow, col.array.codes)


def test_judge_codes_are_the_frames_own() -> None:
    from biasbound.pipeline._judge import _codes

    frame = pd.DataFrame({"model": text_categorical(pd.Series([f"m{k % 200}" for k in range(1000)])),
                          "item_id": text_categorical(pd.Series([f"q{k % 7}" for k in range(1000)]))})
    codes = _codes(frame)
    assert codes.m.dtype == np.int16 and codes.i.dtype == np.int8
    assert np.shares_memory(codes.m, frame["model"].array.codes)
    assert np.array_equal(codes.model_names[codes.m], frame["model"].astype(str).to_numpy())


def test_card_match_keeps_what_the_card_reads() -> None:
    from biasbound.pipeline._judge import _card_match

    nb_pos, canon_pos = np.array([5, 7, 9], dtype=np.intp), np.array([0, 1, 2], dtype=np.intp)
    kept = _card_match((nb_pos, canon_pos, np.array([3, 3, 3]), 4, 1), 10)
    assert kept[0].dtype == np.int32 and kept[1].dtype == np.int32 and kept[2] is None
    assert np.array_equal(kept[0], nb_pos) and np.array_equal(kept[1], canon_pos) and kept[3:] == (4, 1)


def _wide_table(models: int = 140, items: int = 250, seed: int = 3) -> pd.DataFrame:
    """Both games of every (model, item): 140 × 250 = 35,000 keys > 2^15, so an int16 key would wrap."""
    rng = np.random.default_rng(seed)
    n = models * items
    base = pd.DataFrame({"judge": "j", "model": np.repeat([f"m{k:03d}" for k in range(models)], items),
                         "item_id": np.tile([f"q{k:03d}" for k in range(items)], models), "variant": "original",
                         "rerun": 0})
    games = []
    for game in (1, 2):
        score = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], n)
        score[rng.random(n) < 0.02] = np.nan
        games.append(base.assign(game=game, score=score))
    return pd.concat(games, ignore_index=True)


def _outputs(result) -> tuple:  # type: ignore[no-untyped-def]
    j = next(iter(result.judges.values()))
    cert = j.certificate.to_dict()
    cert.pop("created", None)
    models = {m: {k: v for k, v in c.to_dict().items() if k != "created"} for m, c in j.model_certificates.items()}
    return j.scores, j.leaderboard, cert, models, result.judge_card


def test_certify_with_narrow_codes_equals_wide_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's int16 model and item codes (every consumer widens before forming a key) against the same run with
    every code widened to intp, as certify made them before: the same scores, leaderboard, certificates and card."""
    import biasbound.data.tables as tables
    from biasbound.data.tables import from_frame
    from biasbound.pipeline import certify

    table = from_frame(_wide_table(), scale=(0.0, 1.0))
    assert table.frame["model"].array.codes.dtype == np.int16
    narrow = _outputs(certify(table, plots=False, progress=False, seed=5, bootstrap_rounds=50))
    plain = tables.sorted_codes
    monkeypatch.setattr(tables, "sorted_codes", lambda values, narrow=False: plain(values))
    wide = _outputs(certify(table, plots=False, progress=False, seed=5, bootstrap_rounds=50))
    pd.testing.assert_frame_equal(narrow[0], wide[0])
    pd.testing.assert_frame_equal(narrow[1], wide[1])
    assert narrow[2] == wide[2] and narrow[3] == wide[3]
    assert repr(narrow[4]) == repr(wide[4])


def test_release_free_memory_changes_no_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """Returning freed memory (Arrow's pool, glibc's heap) between steps leaves every number as it was."""
    import biasbound._memory as memory
    from biasbound.data.tables import from_frame
    from biasbound.pipeline import certify

    memory.release_free_memory()  # callable at any point, with or without pyarrow loaded
    table = from_frame(_wide_table(models=6, items=40), scale=(0.0, 1.0))
    released = _outputs(certify(table, plots=False, progress=False, seed=1, bootstrap_rounds=50))
    monkeypatch.setattr(memory, "release_free_memory", lambda: None)
    monkeypatch.setattr("biasbound.pipeline._judge.release_free_memory", lambda: None)
    kept = _outputs(certify(table, plots=False, progress=False, seed=1, bootstrap_rounds=50))
    pd.testing.assert_frame_equal(released[0], kept[0])
    pd.testing.assert_frame_equal(released[1], kept[1])
    assert released[2] == kept[2] and released[3] == kept[3]

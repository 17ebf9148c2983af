"""Models a call reads but does not certify keep their tools' own numbers (biasbound.native). Deterministic."""

from __future__ import annotations

import pandas as pd

from biasbound.native import CERTIFIED, uncertified_natives, with_uncertified

NATIVES = [
    {"column": "arena_hard_score", "values": [{"judge": "j", "model": "a", "value": 61.0},
                                              {"judge": "j", "model": "b", "value": 40.0},
                                              {"judge": "k", "model": "a", "value": 55.0}]},
    {"column": "inspect_accuracy", "values": [{"judge": "j", "model": "b", "value": 0.5}]},
]


def test_rows_without_a_certificate_are_listed_with_the_reason():
    lb = pd.DataFrame({"judge": ["j"], "model": ["a"], "certified": [0.6]})
    out = uncertified_natives(NATIVES, lb, {"k": "No model of judge 'k' has an original judgment."})
    assert out[["judge", "model"]].values.tolist() == [["j", "b"], ["k", "a"]]
    assert out.loc[0, "certified_status"] == "not certified: no neighbour of this model in the data"
    assert out.loc[1, "certified_status"].startswith("not certified: judge not certified (No model of judge 'k'")
    assert out.loc[0, "arena_hard_score"] == 40.0 and out.loc[0, "inspect_accuracy"] == 0.5
    assert pd.isna(out.loc[1, "inspect_accuracy"])


def test_the_csv_table_marks_every_row():
    table = pd.DataFrame({"judge": ["j"], "model": ["a"], "is_baseline": [False], "certified": [0.6],
                          "rank_certified": pd.array([1], dtype="Int64"), "arena_hard_score": [61.0]})
    out = with_uncertified(table, uncertified_natives(NATIVES, table))
    assert list(out.columns[:3]) == ["judge", "model", "certified_status"]
    assert out["certified_status"].tolist() == [CERTIFIED, "not certified: no neighbour of this model in the data",
                                                "not certified: no neighbour of this model in the data"]
    assert out["certified"].isna().tolist() == [False, True, True] and out["rank_certified"].dtype == "Int64"
    assert out["arena_hard_score"].tolist() == [61.0, 40.0, 55.0] and not out["is_baseline"].any()
    assert uncertified_natives([], table).empty and len(with_uncertified(table, uncertified_natives([], table))) == 1

"""Users' own long tables through `biasbound certify`: any pairwise or single scale, the scale shown,
odd values never re-scaling a table, and coverage (missing judgments and neighbours) counted and shown."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from biasbound.cli import main
from table_helpers import pairwise_table

GENERATORS = "swap,variant:paraphrase,rerun"


def certify_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["certify", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("kind", "scale"), [("grades", [1.0, 10.0]), ("preferences", [0.0, 1.0])])
def test_pairwise_table_on_its_own_scale_certifies_with_all_neighbors(tmp_path, capsys, kind, scale) -> None:
    path = tmp_path / f"{kind}.csv"
    pairwise_table(kind).to_csv(path, index=False)
    out = tmp_path / "out"
    code, text, err = certify_cli(capsys, str(path), "--out", str(out), "--generators", GENERATORS, "--no-plots",
                                  "--bootstrap-rounds", "200")
    assert code == 0, err
    assert "Traceback" not in err
    assert f"score scale [{scale[0]:g}, {scale[1]:g}] mapped to [0, 1] (inferred from the data" in " ".join(text.split())
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["scope"]["score_scale"][0]["scale"] == scale and cert["scope"]["score_scale"][0]["inferred"] is True
    assert set(cert["scope"]["generators"]) == {"swap", "variant:paraphrase", "rerun"}
    lb = pd.read_csv(out / "leaderboard.csv")
    # Arena-Hard's win rate only exists on its five levels; the mean preference and Bradley-Terry do here
    assert lb["win_rate_pct"].isna().all()
    assert lb["preference_pct"].notna().all() and lb["bt_elo"].notna().all()
    # the mean preference over both orders is the plain mean of the normalised scores
    df = pairwise_table(kind)
    lo, hi = scale
    df["p"] = (df["score"] - lo) / (hi - lo)
    both = df[(df.variant == "original") & (df.rerun == 0)].groupby("model")["p"].mean() * 100
    np.testing.assert_allclose(lb.set_index("model")["preference_pct"].sort_index(), both.sort_index(), rtol=1e-12)
    # the better model stays ahead in Bradley-Terry
    assert lb.set_index("model")["bt_elo"].idxmax() == "mA"
    retention = json.loads((out / "retention.json").read_text())
    assert "Arena-Hard win rate is omitted" in retention["leaderboard_note"]


def test_one_out_of_range_score_stops_with_its_line_or_is_skipped(tmp_path, capsys) -> None:
    df = pairwise_table("preferences")
    df.loc[57, "score"] = 1.2  # data row 57 = file line 59 (header is line 1)
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, _, err = certify_cli(capsys, str(path), "--out", str(tmp_path / "a"), "--no-plots")
    assert code == 2 and "Traceback" not in err
    assert "t.csv:59: score 1.2 is outside the scale [0, 1]" in " ".join(err.split())
    assert "--skip-bad" in err and "skip_bad" not in err
    out = tmp_path / "b"
    code, text, err = certify_cli(capsys, str(path), "--out", str(out), "--no-plots", "--skip-bad",
                                  "--bootstrap-rounds", "200")
    assert code == 0, err
    rep = json.loads((out / "load_report.json").read_text())[path.name]  # inputs are named by file name, never the path typed
    assert rep["scale"] == [0.0, 1.0] and rep["n_skipped"] == 1 and rep["skipped"][0][1] == 59
    scores = pd.read_parquet(out / "scores.parquet")
    kept = df[(df.variant == "original") & (df.rerun == 0) & (df.game == 1)].drop(index=57, errors="ignore")
    merged = scores.merge(kept, on=["model", "item_id"])
    np.testing.assert_array_equal(merged["original"], merged["score"])  # no other score was re-scaled


def test_ambiguous_scale_asks_for_scale(tmp_path, capsys) -> None:
    path = tmp_path / "t.csv"
    pd.DataFrame({"item_id": [f"q{i}" for i in range(30)], "model": "m",
                  "score": [2, 3, 4] * 10}).to_csv(path, index=False)
    code, _, err = certify_cli(capsys, str(path), "--out", str(tmp_path / "o"))
    assert code == 2 and "Traceback" not in err
    assert "run from 2 to 4" in err and "--scale LO,HI" in " ".join(err.split())


def test_gaps_are_counted_per_model_and_generator_and_shown(tmp_path, capsys) -> None:
    df = pairwise_table("preferences")
    # mB: half of the game-2 rows absent; mD: paraphrase rows but no original judgment at all
    absent = (df.model == "mB") & (df.game == 2) & (df.item_id.str[1:].astype(int) % 2 == 0)
    orphan = df[(df.model == "mA") & (df.variant == "paraphrase")].assign(model="mD")
    df = pd.concat([df[~absent], orphan], ignore_index=True)
    df.loc[(df.model == "mC") & (df.item_id == "q7") & (df.game == 2), "score"] = np.nan
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    code, text, err = certify_cli(capsys, str(path), "--out", str(out), "--generators", GENERATORS, "--no-plots",
                                  "--bootstrap-rounds", "200")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    cov = summary["coverage"]["judges"]["j"]
    assert cov["models"]["mB"]["neighbors"]["swap"] == {"observed": 20, "missing": 0, "absent": 20, "unmatched": 0}
    assert cov["models"]["mC"]["neighbors"]["swap"] == {"observed": 39, "missing": 1, "absent": 0, "unmatched": 0}
    assert cov["models"]["mA"]["neighbors"]["swap"]["absent"] == 0
    assert "mD" in cov["not_certified"] and "mD" not in cov["models"]
    certs = {c["scope"]["model"]: c for c in json.loads((out / "certificates.json").read_text())}
    assert certs["mB"]["scope"]["coverage"]["neighbors"]["swap"]["absent"] == 20
    assert certs["mB"]["scope"]["neighbors_absent"]["swap"] == 20
    judge_cert = json.loads((out / "certificate.json").read_text())
    assert judge_cert["scope"]["neighbors_absent"]["swap"] == 20  # beside neighbors_missing (1 NaN, for mC)
    flat = " ".join(text.split())
    assert "swap missing/absent 21" in flat and "model mD not certified" in flat


def test_neighbor_without_original_is_an_error_or_skipped_and_counted(tmp_path, capsys) -> None:
    df = pairwise_table("preferences")
    drop = (df.model == "mA") & (df.item_id == "q3") & (df.variant == "original")
    df = df[~drop].reset_index(drop=True)
    line = int(np.flatnonzero((df.model == "mA") & (df.item_id == "q3"))[0]) + 2
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, _, err = certify_cli(capsys, str(path), "--out", str(tmp_path / "a"), "--generators", "variant:paraphrase")
    assert code == 2 and f"t.csv:{line}:" in err and "--skip-bad" in err and "skip_bad" not in err
    out = tmp_path / "b"
    code, text, err = certify_cli(capsys, str(path), "--out", str(out), "--generators", "variant:paraphrase",
                                  "--skip-bad", "--no-plots", "--bootstrap-rounds", "200")
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["coverage"]["judges"]["j"]["models"]["mA"]["neighbors"]["variant:paraphrase"]["unmatched"] == 1
    assert summary["coverage"]["skipped_rows"][0][1] == line
    assert "1 neighbour row(s) without an original judgment left out" in " ".join(text.split())


def test_models_on_different_item_sets_are_flagged(tmp_path, capsys) -> None:
    df = pairwise_table("preferences")
    df = df[~((df.model == "mC") & (df.item_id.isin(["q0", "q1", "q2"])))]
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    code, text, err = certify_cli(capsys, str(path), "--out", str(tmp_path / "o"), "--no-plots",
                                  "--bootstrap-rounds", "200")
    assert code == 0, err
    assert "scored on different item sets: 37 of the 40 items" in " ".join(text.split())


def test_a_model_with_every_judgment_missing_is_reported_not_a_traceback(tmp_path, capsys) -> None:
    df = pairwise_table("preferences")
    df.loc[df.model == "mB", "score"] = np.nan
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    out = tmp_path / "out"
    code, text, err = certify_cli(capsys, str(path), "--out", str(out), "--generators", "swap", "--no-plots",
                                  "--bootstrap-rounds", "200")
    assert code == 0, err
    assert "Traceback" not in err
    flat = " ".join(text.split())
    assert "model mB not certified: every one of its 40 original judgments is missing" in flat
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model")
    assert np.isnan(lb.loc["mB", "certified"]) and lb.loc["mB", "n_missing"] == 40
    assert {c["scope"]["model"] for c in json.loads((out / "certificates.json").read_text())} == {"mA", "mC"}


def test_a_json_array_of_records_loads_like_the_csv(tmp_path) -> None:
    from biasbound.data import load_table

    df = pairwise_table("preferences", n_items=10)
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_json(tmp_path / "t.json", orient="records", indent=1)
    a, b = load_table(tmp_path / "t.csv").frame, load_table(tmp_path / "t.json").frame
    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    text = (tmp_path / "t.json").read_text().split("\n")
    # each record's line is the line its '{' is on
    assert all(text[ln - 1].strip() == "{" for ln in b["line"])

"""The README's long-table recipe, followed as written: a 1–10 table of your own, `certify --scale 1,10 --generators auto`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from table_helpers import readme_table

from biasbound.certificate import Certificate
from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: the README recipe through the CLI (~6 s on a loaded machine)


def test_readme_long_table_recipe_certifies_a_table_of_your_own(tmp_path, capsys):
    # A table in the README's schema: item_id, model, score (1–10, the model's view), game 1/2, judge.
    # The scores are the embedded Arena-Hard verdicts of 6 models on 120 items, written on a 1–10 scale.
    table, sub = readme_table()
    path = tmp_path / "my_judgments.csv"
    table.to_csv(path, index=False)
    out = tmp_path / "my-cert"
    code = main(["certify", str(path), "--scale", "1,10", "--generators", "auto", "--out", str(out), "--no-progress"])
    assert code in (0, 1)  # certified; 1 would mean an audit contradicts it (reported, not hidden)
    printed = capsys.readouterr().out
    assert "neighbours found in the data: swap" in printed
    for name in ("report.html", "certificate.json", "leaderboard.csv", "load_report.json"):
        assert (out / name).is_file()
    assert Certificate.read(out / "certificate.json").verify()["holds"] is True
    # the certified f(D) is the game-1 score mapped back from [1, 10] onto [0, 1], as the README says
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model")
    g1 = sub[sub["game"] == 1].groupby("model")["score"].mean()
    np.testing.assert_allclose(lb.loc[g1.index, "original"], g1, atol=1e-12)
    assert lb["rank_original"].dtype.kind == "i" and not lb["is_baseline"].any()
    report = json.loads((out / "load_report.json").read_text())[path.name]  # inputs are named by file name, never the path typed
    assert report["scale"] == [1.0, 10.0] and report["scale_inferred"] is False

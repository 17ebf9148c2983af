"""`biasbound plan --labels` (label budgets from a pilot) and `biasbound demo --labels` (the embedded LLMBar labels)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.cli import main
from biasbound.data.embedded import LABELS_DEMO_JUDGES, load_llmbar_demo
from biasbound.human._ppi import labels_for_width
from biasbound.human.budget import label_budget


def test_llmbar_demo_labels_are_a_seeded_uniform_draw_of_gold() -> None:
    js, labels = load_llmbar_demo(n_labels=50, seed=3)
    again = load_llmbar_demo(n_labels=50, seed=3)[1]
    assert labels.equals(again) and len(labels) == 50 and labels["item_id"].is_unique
    assert set(js.frame["judge"]) == set(LABELS_DEMO_JUDGES) and "human" not in js.frame.columns
    raw = pd.read_csv(Path(__file__).resolve().parents[1] / "data" / "llmbar" / "judgments.csv.gz")
    gold = dict(zip(raw["subset"] + "#" + raw["item"].astype(str), (raw["gold_label"] == 1).astype(float)))
    assert all(gold[i] == v for i, v in zip(labels["item_id"], labels["label"]))


def test_label_budget_equals_the_estimator_budget() -> None:
    js, labels = load_llmbar_demo(n_labels=60, seed=1)
    rows = {r["judge"]: r for r in label_budget(js.frame, labels.assign(model="output_1", rater=None),
                                                half_width=0.08)}
    canon = js.frame[(js.frame["judge"] == "GPT-4/Vanilla") & (js.frame["game"] == 1) & js.frame["score"].notna()]
    lab = canon["item_id"].isin(labels["item_id"]).to_numpy()
    y = canon[["item_id"]].merge(labels, on="item_id", how="left")["label"].to_numpy()[lab]
    assert (rows["GPT-4/Vanilla"]["labels_ppi"], rows["GPT-4/Vanilla"]["labels_classical"]) == \
        labels_for_width(y, canon["score"].to_numpy(), lab, half_width=0.08)
    assert rows["GPT-4/Vanilla"]["labels_ppi"] < rows["GPT-4/Vanilla"]["labels_classical"]  # the strong judge helps
    assert rows["Falcon/Vanilla"]["saved"] <= rows["GPT-4/Vanilla"]["saved"]


def test_cli_plan_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan.json"
    assert main(["plan", "--demo", "--labels", "0.1", "--json", "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["half_width"] == 0.1 and len(doc["models"]) == len(LABELS_DEMO_JUDGES)
    assert all(r["labels_ppi"] <= r["labels_classical"] + 2 for r in doc["models"])
    assert main(["plan", "--demo", "--labels", "1.5"]) == 2
    assert "'--labels' option of plan must be a float in (0, 1)" in capsys.readouterr().err


def test_cli_plan_labels_from_a_pilot_file(tmp_path: Path) -> None:
    js, labels = load_llmbar_demo(n_labels=40, seed=2)
    pilot = tmp_path / "pilot.parquet"
    js.frame[["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]].to_parquet(pilot)
    lab = tmp_path / "labels.csv"
    labels.to_csv(lab, index=False)
    out = tmp_path / "plan.json"
    assert main(["plan", str(pilot), "--labels", "0.1", "--human-labels", str(lab), "--out", str(out)]) == 0
    assert {r["pilot_labels"] for r in json.loads(out.read_text())["models"]} == {40}
    assert main(["plan", str(pilot), "--labels", "0.1"]) == 2  # a pilot without labels: one sentence


@pytest.mark.slow
def test_cli_demo_labels_prints_and_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--labels", "--out", str(tmp_path), "--no-progress", "--no-plots"]) == 0
    text = capsys.readouterr().out
    for words in ("Judge–human agreement", "Human-anchored scores", "The anchored release, certified",
                  "too few for the judge to help"):
        assert words in text
    root = tmp_path / "labels-demo"
    assert main(["verify", str(root / "out"), "--judgments", str(root / "inputs" / "judgments.parquet"),
                 "--judgments", str(root / "inputs" / "labels.csv")]) == 0
    human = json.loads((root / "out" / "human.json").read_text())
    gpt4 = next(r for r in human["judges"]["GPT-4/Vanilla"]["models"])
    assert gpt4["helps"] and np.isfinite(gpt4["anchored_certified"])

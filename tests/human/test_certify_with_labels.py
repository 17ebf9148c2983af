"""certify with human labels on real LLMBar judgments: agreement on the card, anchored columns, the anchored release
certified, re-derived by verify and audited; a handful of LLMBar configurations' coverage of the all-gold value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.certificate import Certificate
from biasbound.data import load_llmbar
from biasbound.human import anchored_mean
from biasbound.testing.human import label_draw

JUDGES = ("GPT-4/Vanilla", "Falcon/Vanilla")


@pytest.fixture(scope="module")
def llmbar(shared_data: Path) -> pd.DataFrame:
    frame = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz").frame
    return frame[frame["judge"].isin(JUDGES)].reset_index(drop=True)


def _labels(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """n gold labels of items drawn uniformly (the design PPI assumes), as a labels table."""
    items = frame.loc[frame["game"] == 1, ["item_id", "human"]].drop_duplicates("item_id").sort_values("item_id")
    pick = items.sample(n, random_state=seed)
    return pd.DataFrame({"item_id": pick["item_id"].to_numpy(), "label": pick["human"].to_numpy()})


@pytest.fixture(scope="module")
def certified(llmbar: pd.DataFrame, tmp_path_factory: pytest.TempPathFactory):
    from biasbound.pipeline import certify

    out = tmp_path_factory.mktemp("anchored") / "out"
    labels = _labels(llmbar, 80, 0)
    table = llmbar.drop(columns="human")  # the labels come from the table given, not the gold column
    result = certify(table, human_labels=labels, out=out, plots=False, progress=False, bootstrap_rounds=50)
    return result, out, labels, table


def test_agreement_and_anchored_columns(certified) -> None:
    result, out, labels, table = certified
    lb = pd.read_csv(out / "leaderboard.csv")
    for col in ("anchored", "anchored_lo", "anchored_hi", "classical_lo", "classical_hi", "anchored_rank_lo",
                "anchored_certified", "human_labels"):
        assert col in lb.columns
    assert (lb["human_labels"] == 80).all()
    card = result.judge_card["judges"]["GPT-4/Vanilla"]["human_agreement"]["agreement"]
    canon = table[(table["judge"] == "GPT-4/Vanilla") & (table["game"] == 1)].merge(labels, on="item_id")
    canon = canon[canon["score"].notna()]
    assert card["n"] == len(canon) and card["accuracy"] == pytest.approx((canon["score"] == canon["label"]).mean())
    summary = json.loads((out / "summary.json").read_text())
    rows = {r["judge"]: r for j in summary["human"]["judges"].values() for r in j["models"]}
    # the anchored estimate is the PPI++ estimate of the judge's canonical scores and the labels
    f = canon_all = table[(table["judge"] == "GPT-4/Vanilla") & (table["game"] == 1) & table["score"].notna()]
    lab = canon_all["item_id"].isin(labels["item_id"]).to_numpy()
    y = canon_all[["item_id"]].merge(labels, on="item_id", how="left")["label"].to_numpy()[lab]
    ref = anchored_mean(y, f["score"].to_numpy(), lab)
    assert rows["GPT-4/Vanilla"]["anchored"] == pytest.approx(ref.estimate, rel=1e-12)
    assert rows["GPT-4/Vanilla"]["lambda"] == pytest.approx(ref.lam, rel=1e-12)
    # a strong judge helps, a weak one (Falcon) does not: said plainly
    assert rows["GPT-4/Vanilla"]["helps"] and rows["GPT-4/Vanilla"]["too_few"] is None
    assert not rows["Falcon/Vanilla"]["helps"] and "too few for the judge to help" in rows["Falcon/Vanilla"]["too_few"]
    assert rows["GPT-4/Vanilla"]["small_sample"] is None  # 80 labels; below 50 the sentence says the CLT under-covers


def test_anchored_release_is_certified_and_its_certificates_verify(certified) -> None:
    result, out, _labels, _table = certified
    rel = result.human["release"]
    assert rel["certified"] == sorted(JUDGES)
    anchored = pd.read_parquet(out / "anchored_judgments.parquet")
    for judge in JUDGES:
        cert = Certificate.read(out / "anchored" / f"certificate-{judge.replace('/', '_')}.json")
        cert.verify()
        m = rel["mapping"]["models"][judge]["output_1"]
        rows = anchored[(anchored["judge"] == judge) & (anchored["game"] == 1)]
        # the anchored table's mean is the anchored estimate (on the judge's normalised scale)
        back = rel["mapping"]["lo"] + (rel["mapping"]["hi"] - rel["mapping"]["lo"]) * rows["score"].mean()
        row = next(r for r in result.human["judges"][judge]["models"])
        assert back == pytest.approx(row["anchored"], abs=1e-12)
        assert m["lambda"] == row["lambda"] and len(m["labelled"]) == 80


@pytest.mark.slow
def test_cli_certify_verify_audit(llmbar: pd.DataFrame, tmp_path: Path) -> None:
    from biasbound.cli import main

    judgments = tmp_path / "j.parquet"
    llmbar.drop(columns="human").to_parquet(judgments, index=False)  # read back as a long table
    labels = tmp_path / "labels.csv"
    _labels(llmbar, 60, 1).to_csv(labels, index=False)
    out = tmp_path / "out"
    assert main(["certify", str(judgments), "--out", str(out), "--human-labels", str(labels), "--no-plots",
                 "--bootstrap-rounds", "50"]) == 0
    assert (out / "human.json").is_file() and (out / "anchored").is_dir()
    # the labels are recorded by content: verify finds them among the files it is given, whatever their name
    assert main(["verify", str(out), "--judgments", str(judgments)]) == 1  # the labels file is not given
    moved = tmp_path / "renamed-labels.csv"
    moved.write_bytes(labels.read_bytes())
    assert main(["verify", str(out), "--judgments", str(judgments), "--judgments", str(moved)]) == 0
    cert = next((out / "anchored").glob("certificate-*.json"))
    assert main(["audit", str(cert), "--neighbor-file", str(out / "anchored_judgments.parquet")]) == 0
    # a changed label is caught by the re-derivation
    changed = pd.read_csv(labels)
    changed.loc[0, "label"] = 1 - changed.loc[0, "label"]
    changed.to_csv(labels, index=False)
    assert main(["verify", str(out), "--judgments", str(judgments), "--judgments", str(labels)]) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,label\nnot-an-item,1\n", encoding="utf-8")
    assert main(["certify", str(judgments), "--out", str(tmp_path / "o2"), "--human-labels", str(bad)]) == 2


@pytest.mark.parametrize("judge", ["GPT-4/Vanilla", "ChatGPT/Vanilla", "LLaMA2/Vanilla"])
def test_llmbar_coverage_of_the_gold_preference(shared_data: Path, judge: str) -> None:
    """200 random label draws of n = 50 items; 90% PPI++ intervals for the share of items whose gold output is output 1.

    The all-gold value is the mean of every item's gold label (finite population). The covered count is
    Binomial(200, p); the test fails below 166, which for p ≥ 0.89 (the nominal 0.90 less one point of CLT slack)
    happens with probability < 1e-3 (z = −3.4). benchmarks/bench_ppi_llmbar.py runs all 65 configurations.
    """
    frame = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz").frame
    canon = frame[(frame["judge"] == judge) & (frame["game"] == 1) & frame["score"].notna()]
    f, y = canon["score"].to_numpy(), canon["human"].to_numpy()
    truth = float(y.mean())
    rng = np.random.default_rng(23)
    covered = 0
    for _ in range(200):
        lab = label_draw(f.size, 50, rng)
        a = anchored_mean(y[lab], f, lab, level=0.9)
        covered += a.lo <= truth <= a.hi
    assert covered >= 166


def test_report_section(certified) -> None:
    from biasbound.human.report import human_view

    result = certified[0]
    view = human_view(result.human)
    assert view is not None and [r[0] for r in view["agree_rows"]] == sorted(JUDGES)
    gpt4 = next(r for r in view["score_rows"] if r[0] == "GPT-4/Vanilla")
    row = result.human["judges"]["GPT-4/Vanilla"]["models"][0]
    assert gpt4[4] == f"{row['anchored']:.3f}" and gpt4[2] == f"80 of {row['items']}"
    assert "certified in anchored/" in view["release"]
    counts = result.human["judges"]["GPT-4/Vanilla"]["agreement"]["confusion"]["counts"]
    gpt4_agree = next(r for r in view["agree_rows"] if r[0] == "GPT-4/Vanilla")
    assert gpt4_agree[6] == f"human 0: {counts[0][0]} | {counts[0][1]}; human 1: {counts[1][0]} | {counts[1][1]}"
    assert any("too few for the judge to help" in n for n in view["notes"])
    assert human_view(None) is None


def test_agreement_flips_counted_from_the_raw_csv(shared_data: Path, llmbar: pd.DataFrame) -> None:
    """The swap flips of agreement equal a count on LLMBar's own columns (winner in both orders, gold label)."""
    from biasbound.human import human_report
    from biasbound.human.labels import labels_from_column

    report = human_report(llmbar, labels_from_column(llmbar), generators=("swap",))
    raw = pd.read_csv(shared_data / "llmbar" / "judgments.csv.gz")
    raw = raw[(raw["judge"] == "GPT-4") & (raw["strategy"] == "Vanilla")].dropna(
        subset=["winner_orig_order", "winner_swapped_order"])
    agreed = raw["winner_orig_order"] == raw["gold_label"]
    flips = report["judges"]["GPT-4/Vanilla"]["flips"]["swap"]
    assert flips["agreed"] == int(agreed.sum())
    assert flips["agree_to_disagree"] == pytest.approx((agreed & (raw["winner_swapped_order"] != raw["gold_label"])).sum()
                                                       / agreed.sum())
    assert report["judges"]["GPT-4/Vanilla"]["fully_labelled"] == ["output_1"]  # gold labels every item


def test_judge_card_shows_the_agreement(certified) -> None:
    from biasbound.card import card_figure, card_rows

    result = certified[0]
    card = result.judge_card["judges"]["GPT-4/Vanilla"]
    agree = card["human_agreement"]["agreement"]
    assert card_figure(card, "human_accuracy") == {"value": agree["accuracy"], "lo": agree["accuracy_lo"],
                                                   "hi": agree["accuracy_hi"]}
    _label, text = next(r for r in card_rows(card) if r[0] == "agreement with humans")
    assert f"{100 * agree['accuracy']:.1f}%" in text and f"(n={agree['n']})" in text
    panel = {r["judge"]: r for r in result.judge_card["panel"]}
    assert panel["GPT-4/Vanilla"]["human_accuracy"] == agree["accuracy"]

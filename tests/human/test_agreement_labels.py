"""Agreement figures (exact values) and the labels input (one sentence per bad label)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import DataFormatError
from biasbound.human import (
    agreement,
    flip_to_disagree,
    krippendorff_alpha,
    normalise_labels,
    read_labels,
)


def test_agreement_binary_exact() -> None:
    from sklearn.metrics import cohen_kappa_score

    judge = np.array([1, 1, 0, 0, 1, 0, 1, 1], dtype=float)
    human = np.array([1, 0, 0, 0, 1, 1, 1, 1], dtype=float)
    a = agreement(judge, human, level=0.95)
    assert a["kind"] == "categorical" and a["n"] == 8 and a["accuracy"] == 6 / 8
    assert a["cohen_kappa"] == pytest.approx(cohen_kappa_score(human, judge))
    # rows: human 0, 1; columns: judge 0, 1
    assert a["confusion"]["counts"] == [[2, 1], [1, 4]]
    # the Wilson interval of 6 of 8 at 95%
    z = 1.959963984540054
    p, n = 6 / 8, 8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (a["accuracy_lo"], a["accuracy_hi"]) == pytest.approx((centre - half, centre + half), rel=1e-9)


def test_agreement_on_a_grid_of_fractions() -> None:
    """Arena-Hard's grid (0, .25, .5, .75, 1) is categorical: quadratic-weighted κ over the grid's categories."""
    from sklearn.metrics import cohen_kappa_score

    judge = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.75, 0.25])
    human = np.array([0.0, 0.5, 0.5, 1.0, 1.0, 0.75, 0.75, 0.0])
    a = agreement(judge, human)
    assert a["kind"] == "categorical" and a["accuracy"] == 4 / 8 and a["kappa_weights"] == "quadratic"
    code = {v: k for k, v in enumerate([0.0, 0.25, 0.5, 0.75, 1.0])}
    ref = cohen_kappa_score([code[v] for v in human], [code[v] for v in judge], weights="quadratic")
    assert a["cohen_kappa"] == pytest.approx(ref)
    assert np.array(a["confusion"]["counts"]).sum() == 8 and np.trace(np.array(a["confusion"]["counts"])) == 4


def test_agreement_graded_scale() -> None:
    rng = np.random.default_rng(0)
    human = rng.random(50)
    judge = np.clip(human + rng.normal(0, 0.1, 50), 0, 1)
    a = agreement(judge, human)
    assert a["kind"] == "graded" and "accuracy" not in a
    assert a["mean_abs_difference"] == pytest.approx(np.abs(np.round(judge, 9) - np.round(human, 9)).mean())
    assert a["pearson"] > 0.8


def test_flips_exact() -> None:
    original = np.array([1, 1, 1, 0, 0, 1], dtype=float)
    neighbor = np.array([1, 0, 0, 1, 0, 0], dtype=float)
    human = np.array([1, 1, 0, 0, 1, 1], dtype=float)
    f = flip_to_disagree(original, neighbor, human)
    # agreed: items 0, 1, 3, 5 -> the neighbour disagrees on 1, 3, 5
    assert (f["agreed"], f["agree_to_disagree"]) == (4, 3 / 4)
    # disagreed: items 2, 4 -> the neighbour agrees on item 2 only
    assert (f["disagreed"], f["disagree_to_agree"]) == (2, 1 / 2)


def test_krippendorff_two_raters() -> None:
    import krippendorff

    data = np.array([[1, 0, 1, 1, np.nan], [1, 0, 0, 1, 1]], dtype=float)
    assert krippendorff_alpha(data, categorical=True) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    assert krippendorff_alpha(data[:1], categorical=True) is None  # one rater: undefined


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"judge": "j", "model": ["a", "a", "b"], "item_id": ["q1", "q2", "q1"], "variant": "original",
                         "rerun": 0, "game": 0, "score": [0.0, 1.0, 0.5], "source": "t.csv", "line": [2, 3, 4]})


def test_labels_column_of_the_judgments() -> None:
    from biasbound.human import labels_from_column

    frame = _frame().assign(human=[1.0, np.nan, 0.0])
    got = labels_from_column(frame)
    assert got is not None and sorted(zip(got["model"], got["item_id"], got["label"])) == [("a", "q1", 1.0), ("b", "q1", 0.0)]
    assert labels_from_column(_frame().assign(human=np.nan)) is None  # an empty column is no labels, not an error
    assert labels_from_column(_frame()) is None


def test_labels_file_read_and_normalised(tmp_path: Path) -> None:
    p = tmp_path / "labels.csv"
    p.write_text("item_id,label\nq1,1\nq2,10\n", encoding="utf-8")
    out = normalise_labels(read_labels(p), (1.0, 10.0), _frame())
    got = sorted(zip(out["model"], out["item_id"], out["label"]))
    assert got == [("a", "q1", 0.0), ("a", "q2", 1.0), ("b", "q1", 0.0)]  # a label without a model: every model


@pytest.mark.parametrize("text, words", [
    ("item_id,label\nq1,1\nq9,5\n", ("labels.csv:3", "'q9' has no judgment")),
    ("item_id,label\nq1,1\nq2,11\n", ("labels.csv:3", "off the judge's scale [1, 10]")),
    ("item_id,label\nq1,yes\n", ("labels.csv:2", "must be a number")),
    ("item,label\nq1,1\n", ("labels.csv:1", "needs the columns item_id and label")),
    ("item_id,model,label\nq2,b,1\n", ("labels.csv:2", "model 'b' was not judged on the labelled item 'q2'")),
])
def test_bad_labels_one_sentence(tmp_path: Path, text: str, words: tuple[str, ...]) -> None:
    p = tmp_path / "labels.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError) as err:
        normalise_labels(read_labels(p), (1.0, 10.0), _frame())
    msg = str(err.value)
    assert all(w in msg for w in words), msg
    assert "\n" not in msg


def _three_models(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for m, p in (("strong", 0.8), ("mid", 0.5), ("weak", 0.2)):
        for i in range(120):
            rows.append({"judge": "j", "model": m, "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": 0,
                         "score": float(rng.random() < p), "source": "t", "line": i + 2})
    return pd.DataFrame(rows)


def test_report_rank_sets_are_simultaneous_and_raters_give_krippendorff() -> None:
    import krippendorff

    from biasbound.human import anchored_mean, human_report

    frame = _three_models()
    canon = frame.set_index(["model", "item_id"])["score"]
    labelled = [f"q{i}" for i in range(0, 120, 3)]  # 40 of 120 items, two raters each
    rows = []
    for m in ("strong", "mid", "weak"):
        for k, q in enumerate(labelled):
            truth = canon[(m, q)]
            rows += [{"item_id": q, "model": m, "rater": "r1", "label": truth},
                     {"item_id": q, "model": m, "rater": "r2", "label": truth if k % 5 else 1.0 - truth}]
    labels = pd.DataFrame(rows)
    report = human_report(frame, labels, level=0.9)
    card = report["judges"]["j"]
    # Krippendorff's alpha over (model, item) units and the two raters, nominal
    table = labels.assign(u=labels["model"] + "\x1f" + labels["item_id"]).pivot_table(
        index="rater", columns="u", values="label", aggfunc="first")
    assert card["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=table.to_numpy(dtype=float), level_of_measurement="nominal"))
    # each model's simultaneous interval is its anchored interval at level 1 - 0.1/3, with the same lambda
    by = {r["model"]: r for r in card["models"]}
    f = frame[frame["model"] == "strong"]["score"].to_numpy()
    lab = frame[frame["model"] == "strong"]["item_id"].isin(labelled).to_numpy()
    y = labels[labels["model"] == "strong"].groupby("item_id")["label"].mean().reindex(
        frame[frame["model"] == "strong"]["item_id"][lab]).to_numpy()
    ref = anchored_mean(y, f, lab, level=1 - 0.1 / 3, lam=by["strong"]["lambda"])
    assert (by["strong"]["simultaneous_lo"], by["strong"]["simultaneous_hi"]) == pytest.approx((ref.lo, ref.hi))
    assert by["strong"]["simultaneous_hi"] - by["strong"]["simultaneous_lo"] > by["strong"]["anchored_hi"] - by["strong"]["anchored_lo"]
    # strong (~0.8) and weak (~0.2) are told apart: strong ranks 1, weak 3
    assert (by["strong"]["rank_lo"], by["weak"]["rank_hi"]) == (1, 3)


def test_a_graded_judge_against_labels_at_the_ends_is_read_by_side() -> None:
    """Arena-Hard's five levels against 0/1 labels: 0.75 agrees with 1, 0.25 with 0, a tie (0.5) never agrees; exact
    matching would have counted only the verdicts 0 and 1 (2 of 8 here)."""
    from sklearn.metrics import cohen_kappa_score

    from biasbound.human import SIDE_RULE, comparison_rule

    judge = np.array([0.75, 1.0, 0.5, 0.25, 0.0, 0.75, 0.25, 0.5])
    human = np.array([1.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    a = agreement(judge, human)
    assert a["rule"] == SIDE_RULE == comparison_rule(judge, human) and a["ties"] == 2
    assert a["kind"] == "categorical" and a["accuracy"] == 4 / 8  # items 0, 1, 3, 6
    assert a["judge_mean"] == pytest.approx(judge.mean())  # the mean is of the judge's own scores, not the sides
    sides = [2, 2, 1, 0, 0, 2, 0, 1]  # the judge's side codes: 0 below, 1 the tie, 2 above 0.5
    assert a["cohen_kappa"] == pytest.approx(cohen_kappa_score([2 * h for h in human.astype(int)], sides,
                                                               labels=[0, 1, 2]))
    # rows: human 0, (0.5: never a label), 1; columns: the judge's side
    assert a["categories"] == [0.0, 0.5, 1.0] and a["confusion"]["counts"] == [[2, 1, 1], [0, 0, 0], [1, 1, 2]]
    # a continuous preference (log-probabilities) against 0/1 gold is an accuracy too, no longer a correlation
    rng = np.random.default_rng(3)
    gold = (rng.random(40) < 0.5).astype(float)
    pref = np.clip(np.where(gold == 1, 0.7, 0.3) + rng.normal(0, 0.15, 40), 0.001, 0.999)
    c = agreement(pref, gold)
    assert c["kind"] == "categorical" and c["accuracy"] == pytest.approx(np.mean((pref > 0.5) == (gold == 1)))
    # a binary judge, or labels between the ends, keep the exact rule
    assert comparison_rule(np.array([0.0, 1.0]), np.array([1.0, 1.0])) == "exact"
    assert comparison_rule(judge, np.array([0.0, 0.25, 0.5, 0.75, 1.0, 1.0, 0.0, 0.5])) == "exact"


def test_flips_read_by_side_like_the_agreement() -> None:
    original = np.array([0.75, 0.75, 0.25, 0.5])
    neighbor = np.array([1.0, 0.5, 0.75, 0.25])
    human = np.array([1.0, 1.0, 0.0, 0.0])
    f = flip_to_disagree(original, neighbor, human, rule="side of the midpoint")
    # agreed: items 0, 1, 2 (by side); the neighbour leaves the label's side on 1 (a tie) and 2
    assert (f["agreed"], f["agree_to_disagree"]) == (3, 2 / 3)
    # disagreed: item 3 (a tie); its neighbour 0.25 is on the label's side
    assert (f["disagreed"], f["disagree_to_agree"]) == (1, 1.0)
    # exact matching would have found no agreeing verdict at all
    assert flip_to_disagree(original, neighbor, human)["agreed"] == 0

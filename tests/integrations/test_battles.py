"""Pairwise battle tables (question_id, model_a, model_b, winner[, judge]) read natively.

Property tests are derandomized hypothesis runs (the same examples every run: no false-failure rate).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biasbound.cli import main
from biasbound.integrations.battles import load_battles

PROPERTY = settings(derandomize=True, max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)", "error"]


def native(js, column):
    rec = next(r for r in js.frame.attrs["integration"]["native"] if r["column"] == column)
    return {v["model"]: v["value"] for v in rec["values"]}


def chatbot_arena_plain(df: pd.DataFrame, baseline: str | None) -> dict[str, float]:
    """Chatbot Arena's compute_mle_elo rule written out: battles duplicated, a tie = one A win in the first
    copy and one B win in the second, unpenalised logistic regression on +-ln 10 features, 400 scale."""
    from sklearn.linear_model import LogisticRegression

    df = df[df["winner"].isin(["model_a", "model_b", "tie", "tie (bothbad)"])]
    models = sorted(set(df["model_a"]) | set(df["model_b"]))
    idx = {m: i for i, m in enumerate(models)}
    both = pd.concat([df, df], ignore_index=True)
    x = np.zeros((len(both), len(models)))
    x[np.arange(len(both)), [idx[m] for m in both["model_a"]]] = math.log(10)
    x[np.arange(len(both)), [idx[m] for m in both["model_b"]]] = -math.log(10)
    y = np.array(both["winner"] == "model_a", dtype=float)
    tie = np.array(both["winner"].str.startswith("tie"), dtype=bool)
    tie[len(df):] = False
    y[tie] = 1.0
    # each row also mirrored (-x, 1 - y): the same likelihood term again, so the optimum is unchanged, and
    # both classes are present even when every battle was won by the model shown second
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-12, max_iter=100000)
    lr.fit(np.vstack([x, -x]), np.r_[y, 1.0 - y])
    elo = 400 * lr.coef_[0]
    shift = 1000 - (elo[idx[baseline]] if baseline is not None else elo.mean())
    return {m: float(elo[idx[m]] + shift) for m in models}


@pytest.mark.slow  # real battle tables, every rule recomputed (~5 s on a loaded machine)
@PROPERTY
@given(data=st.data(), with_baseline=st.booleans())
def test_native_win_rate_and_bradley_terry_equal_the_plain_rules(tmp_path_factory, data, with_baseline):
    models = ["a", "b", "c", "d"]
    rows = []
    for q in range(data.draw(st.integers(3, 12))):
        if with_baseline:
            pair = ["base", data.draw(st.sampled_from(models))]
        else:
            pair = data.draw(st.permutations(models))[:2]
        orders = data.draw(st.sampled_from([[0], [1], [0, 1]]))
        for o in orders:
            a, b = (pair[0], pair[1]) if o == 0 else (pair[1], pair[0])
            rows.append({"question_id": q, "model_a": a, "model_b": b, "winner": data.draw(st.sampled_from(WINNERS))})
    df = pd.DataFrame(rows)
    path = tmp_path_factory.mktemp("b") / "battles.csv"
    df.to_csv(path, index=False)
    js = load_battles(path)
    base = js.frame.attrs["integration"]["baselines"]
    baseline = base[0] if base else None
    decided = df[df["winner"] != "error"]
    # win rate: (wins + ties / 2) / battles, every battle and both orders
    exp_wr = {}
    for m in sorted(set(decided["model_a"]) | set(decided["model_b"])):
        if m == baseline:
            continue
        w = ((decided["model_a"] == m) & (decided["winner"] == "model_a")).sum() + \
            ((decided["model_b"] == m) & (decided["winner"] == "model_b")).sum()
        t = (((decided["model_a"] == m) | (decided["model_b"] == m)) & decided["winner"].str.startswith("tie")).sum()
        n = ((decided["model_a"] == m) | (decided["model_b"] == m)).sum()
        exp_wr[m] = (w + t / 2) / n
    assert native(js, "battles_win_rate") == pytest.approx(exp_wr, abs=1e-12)
    if decided.empty:
        return
    bt = native(js, "battles_bt_elo")
    if all(math.isfinite(v) for v in bt.values()):
        # both are numerical optima of the same concave likelihood: equal to 0.01 Elo points
        plain = chatbot_arena_plain(df, baseline)
        assert bt == pytest.approx({m: plain[m] for m in bt}, abs=0.01)
    else:  # no finite maximum: some model is not reached from another by a chain of wins or ties
        assert all(math.isnan(v) for v in bt.values())
        beats: dict[str, set[str]] = {}
        for r in decided.itertuples():
            if r.winner != "model_b":
                beats.setdefault(r.model_a, set()).add(r.model_b)
            if r.winner != "model_a":
                beats.setdefault(r.model_b, set()).add(r.model_a)
        everyone = set(decided["model_a"]) | set(decided["model_b"])

        def reach(m: str) -> set[str]:
            seen, todo = {m}, [m]
            while todo:
                for o in beats.get(todo.pop(), ()):
                    if o not in seen:
                        seen.add(o)
                        todo.append(o)
            return seen

        assert any(reach(m) != everyone for m in everyone)

def test_both_orders_are_swaps_and_spellings_are_read(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("question_id,model_a,model_b,winner,judge\n"
                    "1,x,y,model_a,h\n1,y,x,model_b,h\n"      # same verdict in both orders
                    "2,x,y,A,h\n2,y,x,Tie (bothbad),h\n"     # spellings
                    "3,x,y,error,h\n")
    js = load_battles(path)
    f = js.frame.set_index(["model", "item_id", "game"])["score"]
    assert f[("x", "1/vs/y", 1)] == 1.0 and f[("x", "1/vs/y", 2)] == 1.0
    assert f[("y", "1/vs/x", 1)] == 0.0
    assert f[("x", "2/vs/y", 1)] == 1.0 and f[("x", "2/vs/y", 2)] == 0.5
    assert math.isnan(f[("x", "3/vs/y", 1)])  # an error is missing, never a tie
    assert any("'error'" in k for k in js.frame.attrs["integration"]["not_mapped"])


def test_cli_certifies_a_battle_table_with_native_columns(tmp_path, capsys):
    rng = np.random.default_rng(3)
    rows = []
    for q in range(60):
        for m in ("m1", "m2", "m3"):
            p = {"m1": 0.7, "m2": 0.5, "m3": 0.3}[m]
            for first in (True, False):
                win = rng.random() < p
                a, b = (m, "base") if first else ("base", m)
                rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b,
                             "winner": ("model_a" if first else "model_b") if win else ("model_b" if first else "model_a")})
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    code = main(["certify", str(path), "--out", str(out), "--no-plots", "--no-progress", "--bootstrap-rounds", "50",
                 "--baseline", "base"])
    text, err = capsys.readouterr()
    assert code == 0, err
    assert "battles" in text and "native number: battles_win_rate" in text and "neighbours found in the data: swap" in text
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model")
    assert set(lb.index) == {"m1", "m2", "m3"}
    df = pd.DataFrame(rows)
    for m in ("m1", "m2", "m3"):
        mine = df[(df["model_a"] == m) | (df["model_b"] == m)]
        won = ((mine["model_a"] == m) & (mine["winner"] == "model_a")) | ((mine["model_b"] == m) & (mine["winner"] == "model_b"))
        assert lb.loc[m, "battles_win_rate"] == pytest.approx(won.mean())
    assert lb.loc["m1", "battles_bt_elo"] > lb.loc["m3", "battles_bt_elo"]

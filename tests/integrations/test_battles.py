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
from biasbound.data.battles import load_battles

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


# -- battle tables as people export them (issue: winner names, numbers, turns, Parquet) ---------------------------

FAST = ["--no-plots", "--no-progress", "--bootstrap-rounds", "30"]


def _positions(seed: int = 3, questions: int = 40) -> pd.DataFrame:
    """Three models against a baseline, every battle in both orders, winner as a position, a judge column."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(questions):
        for m, p in (("m1", 0.7), ("m2", 0.5), ("m3", 0.3)):
            for first in (True, False):
                u = rng.random()
                a, b = (m, "base") if first else ("base", m)
                if u < 0.1:
                    w = "tie"
                else:
                    win = u < p
                    w = ("model_a" if first else "model_b") if win else ("model_b" if first else "model_a")
                rows.append({"question_id": f"q{q}", "model_a": a, "model_b": b, "winner": w, "judge": "human"})
    return pd.DataFrame(rows)


def _certify(tmp_path, name: str, write, *extra: str) -> tuple[pd.DataFrame, list[dict], str]:
    path = tmp_path / name
    write(path)
    out = tmp_path / f"out-{name}"
    code = main(["certify", str(path), "--out", str(out), *FAST, *extra])
    assert code == 0, name
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model").sort_index()
    certs = json.loads((out / "certificates.json").read_text())
    return lb, certs, str(out)


def _numbers(certs: list[dict]) -> list:
    keep = ("model", "judge", "score", "certified_score", "sensitivity", "sigma", "epsilon")
    return sorted([{k: c.get(k) for k in keep} for c in certs], key=lambda c: str(c["model"]))


@pytest.mark.slow  # four certify runs through the command line (~6 s)
def test_winner_as_model_names_numbers_or_parquet_certifies_with_the_numbers_of_positions(tmp_path, capsys):
    df = _positions()
    lb, certs, _ = _certify(tmp_path, "pos.csv", lambda p: df.to_csv(p, index=False))
    names = df.copy()
    names["winner"] = np.where(df["winner"] == "model_a", df["model_a"],
                               np.where(df["winner"] == "model_b", df["model_b"], "tie"))
    names["winner"] = [w.upper() if i % 2 else w for i, w in enumerate(names["winner"])]  # any case
    lb_n, certs_n, _ = _certify(tmp_path, "names.csv", lambda p: names.to_csv(p, index=False))
    assert "winner read as the winning model's name" in capsys.readouterr().out
    num = df.copy()
    num["winner"] = df["winner"].map({"model_a": 0, "model_b": 1, "tie": 2})
    lb_x, certs_x, _ = _certify(tmp_path, "num.csv", lambda p: num.to_csv(p, index=False),
                                "--winner-map", "0=model_a,1=model_b,2=tie")
    lb_p, certs_p, _ = _certify(tmp_path, "pos.parquet", lambda p: df.to_parquet(p))
    assert set(lb.index) == {"m1", "m2", "m3"}
    for other, other_certs in ((lb_n, certs_n), (lb_x, certs_x), (lb_p, certs_p)):
        pd.testing.assert_frame_equal(lb, other)
        assert _numbers(certs) == _numbers(other_certs)


def test_a_winner_naming_neither_side_is_refused_with_its_line(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("question_id,model_a,model_b,winner\n1,x,y,x\n1,y,x,X\n2,x,z,y\n2,z,x,z\n3,y,z,y\n")
    with pytest.raises(Exception, match=r"b\.csv:4.*winner y is neither side of this battle \(model_a x, model_b z\)"):
        load_battles(path)
    js = load_battles(path, skip_bad=True)
    assert math.isnan(js.frame.set_index(["model", "item_id", "game"]).loc[("x", "2/vs/z", 1), "score"])
    assert "winner names a model that is neither side of its battle: missing" in js.frame.attrs["integration"]["not_mapped"]


def test_a_turn_column_is_part_of_the_item_never_a_rerun(tmp_path):
    path = tmp_path / "human.csv"
    path.write_text("question_id,model_a,model_b,winner,judge,turn\n"
                    "81,x,y,model_a,expert_1,1\n81,x,y,model_b,expert_1,2\n81,y,x,model_b,expert_1,1\n")
    f = load_battles(path).frame
    assert (f["rerun"] == 0).all()
    assert set(f["item_id"]) == {"81/turn=1/vs/y", "81/turn=2/vs/y", "81/turn=1/vs/x", "81/turn=2/vs/x"}
    s = f.set_index(["model", "item_id", "game"])["score"]
    assert s[("x", "81/turn=1/vs/y", 1)] == 1.0 and s[("x", "81/turn=2/vs/y", 1)] == 0.0
    assert s[("x", "81/turn=1/vs/y", 2)] == 1.0  # the swapped order of turn 1
    # a stated grouping column does the same
    path.write_text(path.read_text().replace(",turn\n", ",round\n", 1))
    g = load_battles(path, columns={"group": "round"}).frame
    assert sorted(g["item_id"].str.replace("round=", "turn=")) == sorted(f["item_id"])


@pytest.mark.parametrize(("body", "words"), [
    ("question_id,model_a,model_b,winner\n1,x,y,1\n1,y,x,0\n", ("b.csv:2", "holds numbers (0, 1)", "--winner-map 0=model_a")),
    ("question_id,model_a,model_b,winner\n1,x,y,\n1,y,x,\n", ("b.csv:1", "empty on every row")),
    ("question_id,model_a,model_b,preferred\n1,x,y,x\n", ("b.csv:1", "has no winner", "--columns winner=COLUMN")),
    ("prompt,model_a,model_b,winner\n1,x,y,x\n", ("b.csv:1", "question_id (or question", "--columns question_id=COLUMN")),
])
def test_a_layout_not_read_is_refused_naming_the_layout_and_the_flag(tmp_path, body, words):
    path = tmp_path / "b.csv"
    path.write_text(body)
    with pytest.raises(Exception) as info:
        load_battles(path)
    for w in words:
        assert w in str(info.value)


def test_columns_map_a_battle_table_and_winner_map_reads_coded_winners(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("prompt,left,right,preferred\n1,x,y,L\n1,y,x,R\n2,x,y,=\n2,y,x,?\n")
    js = load_battles(path, columns={"question_id": "prompt", "model_a": "left", "model_b": "right", "winner": "preferred"},
                      winner_map={"l": "a", "r": "b", "=": "tie"})
    s = js.frame.set_index(["model", "item_id", "game"])["score"]
    assert s[("x", "1/vs/y", 1)] == 1.0 and s[("x", "1/vs/y", 2)] == 1.0 and s[("x", "2/vs/y", 1)] == 0.5
    assert math.isnan(s[("x", "2/vs/y", 2)])
    assert js.frame.attrs["integration"]["not_mapped"] == {"winner '?': missing (not in --winner-map)": 1}


def test_model_names_differing_only_in_case_are_said(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("question_id,model_a,model_b,winner\n1,x,BASE,model_a\n1,base,x,model_b\n")
    js = load_battles(path)
    assert any("'BASE', 'base' differ only in case" in r for r in js.frame.attrs["integration"]["remarks"])
    assert {"BASE", "base"} <= set(js.frame["model"])  # two models (x, in every battle, is the baseline)


@pytest.mark.slow  # certify, then verify re-certifies (~5 s)
def test_verify_rereads_a_battle_table_with_the_winner_map_it_was_certified_with(tmp_path, capsys):
    df = _positions(questions=15)
    path = tmp_path / "num.csv"
    df.assign(winner=df["winner"].map({"model_a": 0, "model_b": 1, "tie": 2})).to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["certify", str(path), "--out", str(out), *FAST, "--winner-map", "0=model_a,1=model_b,2=tie"]) == 0
    capsys.readouterr()
    assert main(["verify", str(out), "--judgments", str(path)]) == 0
    assert "reproduced" in capsys.readouterr().out

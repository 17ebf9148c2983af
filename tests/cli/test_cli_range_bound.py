"""`certify --range-bound`: data without any neighbour certified on the score range alone.

The guarantee is known exactly here: with no neighbour observed, the only knowledge is that a
one-item (Hamming-1) change moves the [0, 1] scores by at most 1, i.e. ``AlmostSure(1.0)``; the
certificate's (α, σ) must be exactly what :func:`biasbound.calibrate` gives on that
knowledge at the batch's dimension, computed here independently of the pipeline. Nothing is random
in these tests except the mechanism's noise, under a fixed seed, which no assertion depends on.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import SHARED_DATA

from biasbound.bounds import AlmostSure
from biasbound.calibration import calibrate
from biasbound.certificate import Certificate
from biasbound.cli import main

MT_SINGLE = SHARED_DATA / "mt_bench/phi-3/model_judgment/gpt-4_single.jsonl"  # 24 questions, one rating each


@pytest.fixture(scope="module")
def game1_table(tmp_path_factory):
    """A long table of 3 models × 12 items with only game-1 rows (no swap, variant or rerun)."""
    path = tmp_path_factory.mktemp("range-bound") / "game1.csv"
    rows = ["judge,model,item_id,game,score"]
    for m, model in enumerate(["a", "b", "c"]):
        rows += [f"j1,{model},q{i},1,{((i + m) % 5) / 4}" for i in range(12)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("which, dim", [("mt_single", 24), ("game1", 12)])
def test_range_bound_certifies_on_the_range_alone(which, dim, game1_table, tmp_path, capsys):
    src = MT_SINGLE if which == "mt_single" else game1_table
    assert MT_SINGLE.is_file()
    out = tmp_path / "out"
    code, text = _run(["certify", str(src), "--out", str(out), "--range-bound", "--tau", "0.5", "--delta", "0.01",
                       "--no-plots", "--no-progress", "--bootstrap-rounds", "50"], capsys)
    assert code == 0, text
    flat = " ".join(re.sub(r"[│┃]", " ", text).split())  # the terminal's table cells, unwrapped
    assert "certified on the score range alone (--range-bound)" in flat
    assert "any change of one item's score within the score range" in flat
    assert "no judgment within the range can contradict it" in flat

    cert = Certificate.read(out / "certificate.json")
    assert cert.verify()["holds"] is True
    assert cert.range_implied is not None and cert.range_implied["holds"] is True
    assert cert.range_implied["A"] == pytest.approx(1.0)
    assert "follows from the score range alone" in cert.guarantee
    assert "any change of one item's score" in cert.guarantee
    gens = cert.to_dict()["knowledge"]["generators"]  # "range", or "MODEL | range" with several models
    assert all(g.endswith("range") for g in gens) and len(gens) == (1 if which == "mt_single" else 3)
    assert [(r["kind"], r["A"]) for recs in gens.values() for r in recs] == [("almost-sure", 1.0)] * len(gens)

    expected = calibrate(AlmostSure(1.0), tau=0.5, delta=0.01, dim=dim)
    assert cert.dim == dim
    assert cert.alpha == pytest.approx(expected.alpha, rel=1e-12)
    assert cert.sigma == pytest.approx(expected.sigma, rel=1e-12)

    assert cert.scope["generators_table"]["range"]["m"] == 0  # no neighbour observed, none claimed
    summary = json.loads((out / "summary.json").read_text())
    (judge,) = summary["judges"].values()
    assert judge["certificate"]["range_only"] is True
    assert judge["certificate"]["range_implied"]["holds"] is True
    assert judge["audit_pooled"]["verdict"] == "not contradictable"
    assert summary["settings"]["generators"] == ["range"]
    per_model = json.loads((out / "certificates.json").read_text())
    assert len(per_model) == (1 if which == "mt_single" else 3)
    for d in per_model:
        c = Certificate.from_dict(d)
        assert c.verify()["holds"] is True and c.range_implied["holds"] is True


@pytest.mark.parametrize("extra", [[], ["--generators", "swap"]])
def test_without_the_flag_the_error_names_it(extra, game1_table, tmp_path, capsys):
    for src in (MT_SINGLE, game1_table):
        code, text = _run(["certify", str(src), "--out", str(tmp_path / "o"), "--no-plots", "--no-progress", *extra],
                          capsys)
        assert code == 2
        assert "Traceback" not in text
        assert "--range-bound" in text and "range_bound=True" not in text
        assert not (tmp_path / "o" / "certificate.json").exists()


def test_the_range_bound_is_not_used_when_neighbors_exist(tmp_path, capsys):
    pair = SHARED_DATA / "mt_bench/phi-3/model_judgment/gpt-4_pair.jsonl"
    out = tmp_path / "out"
    code, text = _run(["certify", str(pair), "--out", str(out), "--range-bound", "--no-plots", "--no-progress",
                       "--bootstrap-rounds", "50"], capsys)
    assert code == 0, text
    summary = json.loads((out / "summary.json").read_text())
    assert "range" not in summary["settings"]["generators"]
    assert "certified on the score range alone" not in " ".join(text.split())
    assert "--range-bound is not used: the data hold neighbours (swap)" in " ".join(text.split())
    # with the neighbours named, the unused flag is said too
    code, text = _run(["certify", str(pair), "--out", str(tmp_path / "named"), "--range-bound", "--neighbors", "swap",
                       "--no-plots", "--no-progress", "--bootstrap-rounds", "50"], capsys)
    assert code == 0, text
    assert "--range-bound is not used: the data hold the swap neighbours" in " ".join(text.split())


def _frame(game1_table):
    import pandas as pd

    df = pd.read_csv(game1_table)
    df["variant"], df["rerun"], df["source"], df["line"] = "original", 0, str(game1_table), range(2, 2 + len(df))
    return df


def test_python_api_range_bound(game1_table):
    import biasbound
    from biasbound._exceptions import InputError

    df = _frame(game1_table)
    with pytest.raises(InputError, match=r"pass range_bound=True to certify on the score range alone"):
        biasbound.certify(df, neighbors="swap", progress=False, plots=False)
    with pytest.raises(InputError, match=r"'method' parameter of certify must be 'tight'"):
        biasbound.certify(df, neighbors="swap", progress=False, plots=False, range_bound=True, method="paper")
    # every item at once, leaderboard view: each of the 3 model means moves by at most 1 → A = √3
    r = biasbound.certify(df, neighbors="swap", progress=False, plots=False, range_bound=True, view="leaderboard",
                          hamming="all", bootstrap_rounds=20)
    (j,) = r.judges.values()
    expected = calibrate(AlmostSure(3 ** 0.5), tau=0.5, delta=0.01, dim=3)
    assert j.certificate.range_implied["holds"] is True and j.certificate.range_implied["A"] == pytest.approx(3 ** 0.5)
    assert j.calibration.alpha == pytest.approx(expected.alpha, rel=1e-12)
    assert j.calibration.sigma == pytest.approx(expected.sigma, rel=1e-12)
    assert j.certificate.verify()["holds"] is True

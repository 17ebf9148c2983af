"""End-to-end tests of `biasbound schematic` through biasbound.cli.main on the real judgment-to-noise data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import KFold

from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound.cli import main

DATA = SHARED_DATA / "judgment-to-noise" / "outputs"
FACTORS = ["helpfulness", "relevance", "accuracy", "depth", "creativity", "detail"]
FACTOR_ARG = ",".join(f"grade.{f}" for f in FACTORS)


def design(x: np.ndarray, poly: bool = False) -> np.ndarray:
    """Intercept, linear terms and (poly) all squares and pairwise products, built by hand."""
    cols = [np.ones(len(x))] + [x[:, j] for j in range(x.shape[1])]
    if poly:
        cols += [x[:, i] * x[:, j] for i in range(x.shape[1]) for j in range(i, x.shape[1])]
    return np.column_stack(cols)


def lstsq_r2(x: np.ndarray, y: np.ndarray, poly: bool = False) -> float:
    a = design(x, poly)
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    return 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())


def read_rows(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Factor matrix and overall score of a judgment-to-noise file, read with json only."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    x = np.array([[r["grade"][f] for f in FACTORS] for r in rows], dtype=float)
    y = np.array([r["grade"]["score"] for r in rows], dtype=float)
    return x, y


def table_value(out: str, label: str) -> str:
    """The value cell of the row whose quantity starts with ``label`` in the rich table."""
    (row,) = [line for line in out.splitlines() if line.strip("│┃ ").startswith(label)]
    return row.strip("│ ").split("│")[-1].strip()


def test_cli_json_on_real_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "gpt-4o-mini_nationality.jsonl"
    code = main(["schematic", str(path), "--factors", FACTOR_ARG, "--overall", "grade.score", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    x, y = read_rows(path)
    assert out["r2_linear"] == pytest.approx(lstsq_r2(x, y), abs=1e-9)
    assert out["r2_poly"] == pytest.approx(lstsq_r2(x, y, poly=True), abs=1e-9)
    assert out["r2"] == max(out["r2_linear"], out["r2_poly"])
    assert out["s_sch"] == pytest.approx(np.sqrt(1 - min(1.0, max(0.0, out["r2"]))))
    assert (out["n_used"], out["n_dropped"], out["mode"], out["factors"]) == (60, 0, "paper", [f"grade.{f}" for f in FACTORS])


def test_cli_cv_table(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "gpt-5-mini_baseline.jsonl"
    code = main(["schematic", str(path), "--factors", FACTOR_ARG, "--overall", "grade.score", "--mode", "cv", "--folds", "4", "--seed", "7"])
    out = capsys.readouterr().out
    assert code == 0
    assert "cv mode" in out
    # the same call with --json: the table shows those numbers at 4 decimals
    argv = ["schematic", str(path), "--factors", FACTOR_ARG, "--overall", "grade.score", "--mode", "cv", "--folds", "4",
            "--seed", "7", "--json"]
    assert main(argv) == 0
    js = json.loads(capsys.readouterr().out)
    assert (js["mode"], js["folds"], js["seed"], js["n_used"], js["n_dropped"]) == ("cv", 4, 7, 60, 0)
    for label, key in (("R² linear", "r2_linear"), ("R² polynomial", "r2_poly"), ("R² schematic", "r2"),
                       ("S_sch", "s_sch")):
        assert table_value(out, label) == f"{js[key]:.4f}", label
    for label, want in (("rows used", "60"), ("rows dropped", "0"), ("folds", "4"), ("seed", "7")):
        assert table_value(out, label) == want, label
    # linear CV R² recomputed here: shuffled 4-fold split (sklearn KFold seeded from the run's seed 7 as the
    # package derives it), OLS by lstsq on each training split, predictions pooled into one R²
    x, y = read_rows(path)
    pred = np.empty_like(y)
    split = KFold(4, shuffle=True, random_state=int(np.random.default_rng(7).integers(2**32))).split(x)
    for train, test in split:
        coef, *_ = np.linalg.lstsq(design(x[train]), y[train], rcond=None)
        pred[test] = design(x[test]) @ coef
    assert js["r2_linear"] == pytest.approx(1 - ((y - pred) ** 2).sum() / ((y - y.mean()) ** 2).sum(), abs=1e-9)
    assert js["r2"] == max(js["r2_linear"], js["r2_poly"])
    assert js["s_sch"] == pytest.approx(np.sqrt(1 - min(1.0, max(0.0, js["r2"]))), abs=1e-12)


def test_cli_counts_dropped_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = np.random.default_rng(0)
    lines = []
    for i in range(40):
        f = gen.integers(1, 11, size=2)
        rec = {"g": {"a": int(f[0]), "b": int(f[1]), "s": float(f.mean() + gen.normal())}}
        if i % 10 == 0:
            rec["g"]["b"] = None
        lines.append(json.dumps(rec))
    p = tmp_path / "t.jsonl"
    p.write_text("\n".join(lines))
    assert main(["schematic", str(p), "--factors", "g.a,g.b", "--overall", "g.s", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_used"], out["n_dropped"]) == (36, 4)


def test_cli_errors_are_one_sentence_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["schematic", str(tmp_path / "missing.jsonl"), "--factors", "a", "--overall", "b"])
    err = capsys.readouterr().err
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    code = main(["schematic", str(DATA / "gpt-5-mini_taboo.jsonl"), "--factors", "grade.nope", "--overall", "grade.score"])
    err = capsys.readouterr().err
    assert code == 2 and "grade.nope" in err
    code = main(["schematic", str(DATA / "gpt-5-mini_taboo.jsonl"), "--factors", FACTOR_ARG, "--overall", "grade.score", "--mode", "x"])
    err = capsys.readouterr().err
    assert code == 2 and "'--mode' option of schematic" in err

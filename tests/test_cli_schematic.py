"""End-to-end tests of `biasbound schematic` through biasbound.cli.main on the real judgment-to-noise data."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from biasbound.cli import main

DATA = Path("/work/shared/data/judgment-to-noise/outputs")
FACTORS = ["helpfulness", "relevance", "accuracy", "depth", "creativity", "detail"]
FACTOR_ARG = ",".join(f"grade.{f}" for f in FACTORS)


def lstsq_r2(x: np.ndarray, y: np.ndarray) -> float:
    a = np.column_stack([np.ones(len(y)), x])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    return 1 - float(resid @ resid) / float(((y - y.mean()) ** 2).sum())


def test_cli_json_on_real_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "gpt-4o-mini_nationality.jsonl"
    code = main(["schematic", str(path), "--factors", FACTOR_ARG, "--overall", "grade.score", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    x = np.array([[r["grade"][f] for f in FACTORS] for r in rows], dtype=float)
    y = np.array([r["grade"]["score"] for r in rows], dtype=float)
    assert out["r2_linear"] == pytest.approx(lstsq_r2(x, y), abs=1e-9)
    assert out["r2"] == max(out["r2_linear"], out["r2_poly"])
    assert out["s_sch"] == pytest.approx(np.sqrt(1 - min(1.0, max(0.0, out["r2"]))))
    assert (out["n_used"], out["n_dropped"], out["mode"], out["factors"]) == (60, 0, "paper", [f"grade.{f}" for f in FACTORS])


def test_cli_cv_table(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "gpt-5-mini_baseline.jsonl"
    code = main(["schematic", str(path), "--factors", FACTOR_ARG, "--overall", "grade.score", "--mode", "cv", "--folds", "4", "--seed", "7"])
    out = capsys.readouterr().out
    assert code == 0
    for label in ("R² linear", "R² polynomial", "S_sch", "rows used", "rows dropped", "folds", "seed"):
        assert label in out
    assert "cv mode" in out


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
    assert code == 2 and "'mode'" in err

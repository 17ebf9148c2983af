"""`biasbound certify` and `biasbound audit` return their documented exit codes (README table)
through the installed entry point, run as a subprocess as a user would.

The violating data set is built against the certificate's own hold-out split: the neighbours
that calibrate show no change, the held-out ones flip from 0 to 1. The paper route with the point
estimate (``--beta none``) then certifies α = 1 with the floored sensitivity 1e-3, and the audit
sees every held-out neighbour exceed τ — a certificate its audit contradicts, deterministically
(no statistical test; false-failure rate 0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.slow  # end to end: certify and audit as subprocesses (~50 s on a loaded machine)

# the installed entry point: on PATH, or beside the running interpreter (a venv used without activating it)
BIASBOUND = shutil.which("biasbound") or shutil.which("biasbound", path=str(Path(sys.executable).parent))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    assert BIASBOUND is not None, "the biasbound entry point is not on PATH"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([BIASBOUND, *args], capture_output=True, text=True, env=env, timeout=300)


def _table(n: int, changed: np.ndarray) -> pd.DataFrame:
    """One judge, one model, ``n`` items scored 0; variant 'x' scores 1 exactly on ``changed``."""
    rows = [("j", "m", f"q{i:04d}", "original", 0, 0, 0.0) for i in range(n)]
    rows += [("j", "m", f"q{i:04d}", "x", 0, 0, 1.0 if changed[i] else 0.0) for i in range(n)]
    return pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])


def _held_out_items(n: int, seed: int, holdout: float) -> np.ndarray:
    """The items whose variant neighbour the pipeline holds out for the audit (same seeds, same split)."""
    from biasbound.pipeline._neighbors import _group_split
    from biasbound._validation import spawn_seeds as _spawn_seeds

    judge_seed = _spawn_seeds(seed, 1)[0]
    rng = np.random.default_rng(judge_seed)  # the neighbour split is its first draw (fixed centre)
    return _group_split(np.zeros(n, dtype=np.int64), holdout, rng)


@pytest.fixture(scope="module")
def violating(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("exit")
    n = 400
    changed = _held_out_items(n, seed=0, holdout=0.3)
    assert 0 < changed.sum() < n
    path = tmp / "judgments.csv"
    _table(n, changed).to_csv(path, index=False)
    return tmp, path


def test_certify_exits_1_when_its_audit_contradicts_the_certificate(violating):
    tmp, path = violating
    out = tmp / "out"
    r = _run("certify", str(path), "--out", str(out), "--generators", "variant:x", "--method", "paper",
             "--beta", "none", "--no-plots", "--bootstrap-rounds", "50")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "VIOLATED" in r.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "violated" and summary["violated"] == ["j"]
    cert = json.loads((out / "certificate.json").read_text())
    assert cert["audit"]["pooled"]["verdict"] == "violated"  # written, and it says so


def test_audit_exits_1_on_violated_3_on_inconclusive_0_when_not_contradicted_2_on_bad_input(violating, tmp_path):
    tmp, path = violating
    out = tmp / "out"
    if not (out / "certificate.json").exists():
        r = _run("certify", str(path), "--out", str(out), "--generators", "variant:x", "--method", "paper",
                 "--beta", "none", "--no-plots", "--bootstrap-rounds", "50")
        assert r.returncode == 1, r.stdout + r.stderr
    r = _run("audit", str(out / "certificate.json"), "--neighbor-file", str(path))
    assert r.returncode == 1, r.stdout + r.stderr
    assert "violated" in r.stdout

    # two unchanged neighbours: every p_i ~ 0, but two draws cannot push the 99% bound below δ
    few = tmp_path / "few.csv"
    _table(2, np.zeros(2, dtype=bool)).to_csv(few, index=False)
    r = _run("audit", str(out / "certificate.json"), "--neighbor-file", str(few))
    assert r.returncode == 3, r.stdout + r.stderr
    assert "inconclusive" in r.stdout

    # a certificate whose range bound alone implies it (tiny noise, alpha = 0.25): not contradictable, exit 0
    clean = tmp_path / "clean.csv"
    _table(400, np.zeros(400, dtype=bool)).to_csv(clean, index=False)
    out2 = tmp_path / "out2"
    r = _run("certify", str(clean), "--out", str(out2), "--generators", "variant:x", "--no-plots",
             "--bootstrap-rounds", "50", "--alpha", "0.25", "--sigma", "0.001")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads((out2 / "summary.json").read_text())["status"] == "certified"
    assert json.loads((out2 / "certificate.json").read_text())["range_implied"]["holds"] is True
    r = _run("audit", str(out2 / "certificate.json"), "--neighbor-file", str(clean))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not contradictable" in r.stdout

    # the paper's certificate on 1000 unchanged items: the 99% bound falls below δ ("holds"), exit 0
    many = tmp_path / "many.csv"
    _table(1000, np.zeros(1000, dtype=bool)).to_csv(many, index=False)
    out3 = tmp_path / "out3"
    r = _run("certify", str(many), "--out", str(out3), "--generators", "variant:x", "--method", "paper", "--beta", "none",
             "--no-plots", "--bootstrap-rounds", "50")
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run("audit", str(out3 / "certificate.json"), "--neighbor-file", str(many))
    assert r.returncode == 0, r.stdout + r.stderr
    # its own batch with a neighbour for every item (data hash): the probability over T computed exactly
    assert "exact" in r.stdout and "census" in r.stdout
    fresh = tmp_path / "fresh.csv"  # the same judge on 1000 other items: an independent audit
    t = _table(1000, np.zeros(1000, dtype=bool))
    t["item_id"] = "r" + t["item_id"]
    t.loc[t["item_id"] == "rq0000", "score"] = 1.0  # another batch (original and neighbour agree: distance 0)
    t.to_csv(fresh, index=False)
    r = _run("audit", str(out3 / "certificate.json"), "--neighbor-file", str(fresh))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "holds" in r.stdout

    r = _run("audit", str(tmp_path / "missing.json"), "--neighbor-file", str(clean))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    r = _run("certify", str(clean), "--out", str(tmp_path / "o3"), "--tau", "-1")
    assert r.returncode == 2 and "'--tau'" in r.stderr and "Traceback" not in r.stderr

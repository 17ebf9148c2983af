"""End-to-end tests of `biasbound calibrate` through biasbound.cli.main and once via a subprocess."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

import pytest
from scipy import stats

from biasbound.cli import main

BASE = ["calibrate", "--sensitivity", "0.306", "--dim", "500", "--tau", "0.5", "--delta", "0.01"]


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv + ["--json", "--frontier", "3"]) == 0
    return json.loads(capsys.readouterr().out)


def test_paper_json_matches_hand_formula(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, BASE + ["--alpha", "0.05", "--method", "paper"])
    lt = math.log(200)
    hand = (0.5 - 0.05 * 0.306 / math.sqrt(0.005)) / math.sqrt(2 * (500 + 2 * math.sqrt(500 * lt) + 2 * lt))
    assert out["sigma_max"] == pytest.approx(hand, rel=1e-12) and out["sigma"] <= out["sigma_max"]
    assert out["alpha"] == 0.05 and out["bound_used"] == "paper" and out["paper"]["radius"] == "laurent-massart"
    assert out["paper"]["delta_B"] == 0.005 and out["paper"]["delta_Delta"] == 0.005 and out["feasible"] is True
    assert out["alpha_max"] == pytest.approx(0.5 * math.sqrt(0.005) / 0.306, rel=1e-12)
    assert out["point_estimate"] is True and out["beta"] is None


def test_range_gives_the_exact_almost_sure_bound(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["calibrate", "--dim", "500", "--tau", "0.5", "--delta", "0.01", "--score-range", "1", "--hamming", "4",
                         "--alpha", "0.1"])
    # a.s. bound A = R sqrt(k) = 2: sigma_max is where the noncentral chi-square tail at alpha A reaches delta
    s = out["sigma_max"]
    p = stats.ncx2.sf(0.25 / (2 * s * s), 500, (0.1 * 2.0) ** 2 / (2 * s * s))
    assert p <= 0.01 and p == pytest.approx(0.01, rel=1e-6)
    triangle = (0.5 - 0.1 * 2.0) / (math.sqrt(2) * math.sqrt(stats.chi2.isf(0.01, 500)))
    assert s > triangle  # the exact tail beats the triangle inequality it replaces
    # an almost-sure bound is the worst case over every judge within the range: an upper bound, not "exact"
    assert out["bound_used"] == "almost-sure" and out["exact"] is False and out["range_implied"] is True


def test_sigma_given_returns_alpha_star_and_the_frontier(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, ["calibrate", "--dim", "500", "--tau", "0.5", "--delta", "0.01", "--score-range", "1", "--sigma", "0.00736"])
    assert out["alpha"] >= 0.41 and out["sigma"] == 0.00736
    assert [p["sigma"] for p in out["frontier"]][0] == 0.0 and len(out["frontier"]) == 4  # 3 grid points + the point
    assert {"sigma": 0.00736, "alpha": out["alpha_at_sigma"]} in out["frontier"]


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(BASE + ["--frontier", "2"]) == 0
    out = capsys.readouterr().out
    assert "alpha_max" in out and "sigma_max" in out and "moments *" in out and "frontier" in out
    assert "default rule" in out


def test_infeasible_red_sentence_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(BASE + ["--alpha", "0.9", "--method", "paper"]) == 2
    err = capsys.readouterr().err
    assert "alpha < 0.115 (alpha_max)" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "name"),
    [(["--tau", "0"], "--tau"), (["--delta", "1.5"], "--delta"), (["--delta", "1e-300"], "--delta"),
     (["--alpha", "0"], "--alpha"), (["--dim", "0"], "--dim"), (["--method", "exact"], "--method"),
     (["--hamming", "0", "--score-range", "1"], "--hamming"), (["--score-range", "1", "--sensitivity", "1.5"], "--sensitivity"),
     (["--sigma", "-1"], "--sigma")],
)
def test_bad_input_exit_2(capsys: pytest.CaptureFixture[str], args: list[str], name: str) -> None:
    argv = list(BASE)
    for flag, value in zip(args[::2], args[1::2]):
        if flag in argv:
            argv[argv.index(flag) + 1] = value
        else:
            argv += [flag, value]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"'{name}'" in err and "Traceback" not in err


@pytest.mark.slow  # end to end: CLI subprocesses (~6 s on a loaded machine)
def test_subprocess_no_traceback_on_bad_input() -> None:
    exe = shutil.which("biasbound")
    cmd = [exe] if exe else [sys.executable, "-m", "biasbound.cli"]
    for bad in (["--tau", "-0.5", "--delta", "0.01"], ["--tau", "0.5", "--delta", "1.0"]):
        proc = subprocess.run(cmd + ["calibrate", "--sensitivity", "0.3", "--dim", "100", *bad],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "must be a float in" in proc.stderr

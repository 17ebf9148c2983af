"""`biasbound demo` (run as a user would, through the installed executable) reproduces the paper's
setting and flags it range-implied, and beside it shows the exact frontier point, the bias radius
per model, and certificates on the embedded data that the score range alone does not imply.
Deterministic (seeded; no statistical test)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from biasbound.certificate import Certificate

pytestmark = pytest.mark.slow  # end to end: the installed `biasbound demo` executable


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2] / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env["COLUMNS"] = "300"  # a wide terminal: no label is wrapped inside its table cell
    exe = shutil.which("biasbound") or shutil.which("biasbound", path=str(Path(sys.executable).parent))
    assert exe is not None, "the biasbound entry point is not installed"
    r = subprocess.run([exe, "demo", "--out", str(out), "--no-plots", "--no-progress"],
                       capture_output=True, text=True, env=env, timeout=600)
    return r, out


def test_demo_flags_the_paper_setting_and_shows_certificates_that_rest_on_the_data(demo):
    r, out = demo
    assert r.returncode == 0, r.stdout + r.stderr
    text = " ".join(r.stdout.split())
    for label in ("range-implied", "bias radius", "two releases", "Spearman over the noise", "frontier"):
        assert label in text, label
    paper = Certificate.read(out / "paper" / "certificate.json")
    tight = Certificate.read(out / "tight" / "certificate.json")
    allswap = Certificate.read(out / "leaderboard-all-swapped" / "certificate.json")
    # the paper's setting, reproduced: Cor. 3.2 at τ = 0.5, δ = 0.01 (α ≈ 0.040), and it follows from the range alone
    assert paper.method == "paper" and paper.tau == 0.5 and paper.delta == 0.01
    assert paper.alpha == pytest.approx(0.03997, abs=1e-4)
    assert paper.range_implied["holds"] is True
    # every swap is judged (one of 38 000 is missing and counts at the range bound), each verdict one draw of a
    # random judge (the default): tail bounds from every item, not range-implied
    assert tight.bound_used == "random-judge" and tight.range_implied["holds"] is False
    assert tight.scope["deterministic_judge"] is False and "random judge" in tight.guarantee
    assert tight.frontier["points"] and tight.frontier["default_rule"]
    per_model = tight.scope["figures"]["bias_radius_per_model"]
    assert len(per_model) == 76 and all(r is not None and 0 <= r <= 1 for r in per_model.values())
    models = json.loads((out / "tight" / "certificates.json").read_text())
    assert {c["scope"]["model"]: c["bias_radius"]["radius"] for c in models} == per_model
    # the whole leaderboard's position bias (every answer swapped at once, a random judge), not range-implied
    assert allswap.view == "leaderboard" and allswap.neighborhood == {"kind": "all-items"}
    assert allswap.range_implied["holds"] is False and 0 < allswap.alpha < 1
    for c in (paper, tight, allswap):
        assert c.verify()["holds"] is True

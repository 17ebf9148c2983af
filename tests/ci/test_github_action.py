"""The GitHub Action (action.yml at the repository root) run as CI runs it: its ``run:`` steps, in order, with
the inputs substituted into their ``env`` (steps that ``uses:`` another action are set-up only and skipped; the
install step is given ``package: ''`` so the biasbound under test is the one on PATH). On LLMBar's real judgments
(ChatGPT, Vanilla prompt, 419 items) and a copy whose swap flip rate is doctored up by 5 points: the gate passes on
the same judgments, fails on the doctored ones (paired McNemar p = 2^-20 < 0.01), and in certify mode fails when a
--fail-if condition holds on the certified card. Deterministic (fixed seeds; no statistical test).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow  # the action's shell steps run biasbound as subprocesses (~15 s)

ACTION = Path(__file__).resolve().parents[2] / "action.yml"
_EXPR = re.compile(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}")


def run_action(inputs: dict[str, str], workdir: Path) -> tuple[int, str, str, str]:
    """Run action.yml's shell steps; return (exit code, stdout, job summary, GITHUB_OUTPUT)."""
    spec = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert spec["runs"]["using"] == "composite"
    unknown = set(inputs) - set(spec["inputs"])
    assert not unknown, f"inputs the action does not declare: {unknown}"
    values = {k: str(v.get("default", "")) for k, v in spec["inputs"].items()} | inputs
    summary, output = workdir / "summary.md", workdir / "github_output"
    summary.write_text(""), output.write_text("")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output)}
    out = []
    for step in spec["runs"]["steps"]:
        if "run" not in step:
            assert "uses" in step  # set-up steps only (actions/setup-python)
            continue
        assert step["shell"] == "bash"
        step_env = {k: _EXPR.sub(lambda m: values[m.group(1)], str(v)) for k, v in (step.get("env") or {}).items()}
        assert "${{" not in step["run"], "inputs reach the script through env only (no expression injection)"
        proc = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=workdir, env={**env, **step_env},
                              capture_output=True, text=True, timeout=600, check=False)
        out.append(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            return proc.returncode, "\n".join(out), summary.read_text(), output.read_text()
    return 0, "\n".join(out), summary.read_text(), output.read_text()


@pytest.fixture(scope="module")
def llmbar(shared_data, tmp_path_factory):
    raw = pd.read_csv(shared_data / "llmbar" / "judgments.csv.gz")
    root = tmp_path_factory.mktemp("action")
    chat = raw[(raw["judge"] == "ChatGPT") & (raw["strategy"] == "Vanilla")]
    doctored = chat.copy()
    same = doctored.index[doctored["winner_orig_order"] == doctored["winner_swapped_order"]]
    pick = np.random.default_rng(0).choice(same, 21, replace=False)
    doctored.loc[pick, "winner_swapped_order"] = 3 - doctored.loc[pick, "winner_orig_order"]
    chat.to_csv(root / "main.csv", index=False)
    doctored.to_csv(root / "candidate.csv", index=False)
    return root


def test_compare_passes_on_the_same_judgments(llmbar, tmp_path):
    rc, out, summary, gh_out = run_action({"old": str(llmbar / "main.csv"), "new": str(llmbar / "main.csv"),
                                           "package": "", "fail-if": "paired_flip_rate_p<0.01\nflip_rate>0.5"},
                                          tmp_path)
    assert rc == 0, out
    assert "biasbound gate passed" in summary and "Judge card — ChatGPT/Vanilla" in summary
    assert "exit-code=0" in gh_out


def test_compare_fails_on_the_doctored_judge(llmbar, tmp_path):
    rc, out, summary, gh_out = run_action({"old": str(llmbar / "main.csv"), "new": str(llmbar / "candidate.csv"),
                                           "package": "", "fail-if": "paired_flip_rate_p < 0.01",
                                           "allow-moves": "true"}, tmp_path)
    assert rc == 1, out
    assert "biasbound gate failed" in summary and "paired_flip_rate_p = 9.537e-07 < 0.01" in summary
    assert "| flip_rate:swap | 0.3413 → 0.3914 |" in summary and "exit-code=1" in gh_out


def test_certify_mode_checks_the_conditions_on_the_certified_card(llmbar, tmp_path):
    common = {"command": "certify", "inputs": str(llmbar / "main.csv"), "package": "", "out": str(tmp_path / "out"),
              "certify-args": "--tau 1 --delta 0.05 --seed 0 --no-plots"}
    rc, out, summary, _ = run_action({**common, "fail-if": "flip_rate>0.5"}, tmp_path)
    assert rc == 0, out
    assert (tmp_path / "out" / "summary.json").is_file() and "flip rate (swap) | 34.1%" in summary
    rc, out, summary, _ = run_action({**common, "fail-if": "flip_rate>0.3"}, tmp_path)
    assert rc == 1 and "flip_rate = 0.3413 > 0.3" in summary, out


def test_bad_command_is_exit_2(tmp_path):
    rc, out, _, gh_out = run_action({"command": "judge", "package": ""}, tmp_path)
    assert rc == 2 and "must be compare or certify" in out and "exit-code=2" in gh_out


def test_the_example_workflow_uses_only_declared_inputs():
    spec = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    flow = yaml.safe_load((ACTION.parent / "examples" / "github-judge-gate.yml").read_text(encoding="utf-8"))
    steps = [s for job in flow["jobs"].values() for s in job["steps"] if "biasbound" in str(s.get("uses", ""))]
    assert len(steps) == 1 and set(steps[0]["with"]) <= set(spec["inputs"])
    assert "exit-code" in spec["outputs"]

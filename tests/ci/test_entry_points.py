"""biasbound as found by other tools after install: pytest's plugin entry point (``pytest -p biasbound``) and
inspect_ai's extension entry point (its registry finds ``biasbound/bias_bounded``). Deterministic."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pandas as pd
import pytest


def test_entry_points_are_declared():
    pt = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    ins = {ep.name: ep.value for ep in entry_points(group="inspect_ai")}
    assert pt.get("biasbound") == "biasbound.testing.pytest_plugin"
    assert ins.get("biasbound") == "biasbound._inspect_registry"


@pytest.mark.slow  # a fresh interpreter (inspect's registry is per process)
def test_inspect_registry_finds_bias_bounded_through_the_entry_point():
    code = textwrap.dedent("""
        import sys
        from inspect_ai._util.registry import registry_info, registry_lookup
        assert "biasbound.inspect" not in sys.modules  # only the entry point can bring it in
        s = registry_lookup("scorer", "biasbound/bias_bounded")
        m = registry_lookup("metric", "biasbound/neighbor_sensitivity")
        print(registry_info(s).name, registry_info(m).name, "biasbound.inspect" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["biasbound/bias_bounded", "biasbound/neighbor_sensitivity", "True"]


@pytest.mark.slow  # runs pytest in a subprocess
def test_pytest_p_biasbound_finds_the_plugin(tmp_path, shared_data):
    from biasbound.card import judge_card
    from biasbound.data.tables import load_llmbar

    raw = pd.read_csv(shared_data / "llmbar" / "judgments.csv.gz")
    chat = raw[(raw["judge"] == "ChatGPT") & (raw["strategy"] == "Vanilla")]
    chat.to_csv(tmp_path / "chat.csv", index=False)
    card = judge_card(load_llmbar(tmp_path / "chat.csv").frame)  # flip rate 34.1%
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"judge_card": card}))
    (tmp_path / "test_judge.py").write_text(textwrap.dedent(f"""
        import pytest
        RUN = {str(tmp_path / "run")!r}
        CHAT = {str(tmp_path / "chat.csv")!r}

        @pytest.mark.judge_card(RUN, "flip_rate>0.5")
        def test_passes():
            pass

        @pytest.mark.judge_card(RUN, "flip_rate>0.3")
        def test_fails_on_the_card():
            pass

        def test_fixtures(assert_judge_card, assert_no_regression, judge_card_of):
            assert judge_card_of(CHAT)["judges"]["ChatGPT/Vanilla"]["generators"]["swap"]["flip_rate"]["k"] == 143
            assert_no_regression(CHAT, CHAT, "paired_flip_rate_p<0.01")
            with pytest.raises(AssertionError, match="flip_rate"):
                assert_judge_card(RUN, "flip_rate>0.3")
    """))
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    base = [sys.executable, "-m", "pytest", "-q", "--strict-markers", "-p", "no:cacheprovider", "--rootdir",
            str(tmp_path), str(tmp_path / "test_judge.py")]
    with_plugin = subprocess.run(base[:3] + ["-p", "biasbound"] + base[3:], capture_output=True, text=True, check=False,
                                 cwd=tmp_path, env=env, timeout=300)
    assert "2 passed" in with_plugin.stdout and "1 failed" in with_plugin.stdout, with_plugin.stdout
    assert "flip_rate = 0.3413 > 0.3" in with_plugin.stdout
    without = subprocess.run(base, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300, check=False)
    assert without.returncode != 0 and "judge_card" in without.stdout + without.stderr  # unknown marker, no fixture

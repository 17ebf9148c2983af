"""The README's Python example runs and says what the README claims."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_block() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert len(blocks) == 1, "the README has exactly one Python example"
    return blocks[0]


def test_readme_example_runs_and_certifies(capsys):
    code = _python_block()
    assert len([line for line in code.splitlines() if line.strip()]) <= 16
    namespace: dict = {}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 - our own README
    printed = capsys.readouterr().out
    cal, cert = namespace["cal"], namespace["cert"]
    assert cal.bound_used == "full-population" and cal.exact and cal.beta is None  # as the README says
    assert 0 < cal.sigma <= cal.sigma_max
    assert cert.range_implied["holds"] is False and cert.bias_radius["radius"] == 1.0
    assert cert.verify()["holds"] is True
    assert "True" in printed and "local" in cert.guarantee


def test_readme_names_two_setup_commands_that_ci_runs():
    text = README.read_text(encoding="utf-8")
    assert "pip install . && biasbound demo" in text
    test_cmd = "pip install '.[test]' && python -m pytest -q"
    assert test_cmd in text
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci


def test_readme_is_a_front_page_of_at_most_150_lines():
    """The README is the front door (what it is, the guarantee, install, the demo, your own table, the card's
    numbers, links); the manual is the documentation site under docs/."""
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines; move the detail to a page under docs/"

"""CITATION.cff, CHANGELOG.md and the version policy agree with the package (deterministic)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _version() -> str:
    m = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert m is not None
    return m.group(1)


def test_citation_cff_cites_the_software_and_the_paper():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for key in ("cff-version", "message", "title", "authors", "version", "license", "preferred-citation"):
        assert key in cff, key
    assert str(cff["version"]) == _version()
    paper = cff["preferred-citation"]
    assert paper["title"] == "Towards Provably Unbiased LLM Judges via Bias-Bounded Evaluation"
    assert [a["family-names"] for a in paper["authors"]] == ["Feuer", "Rosenblatt", "Elachqar"]


def test_changelog_keeps_a_changelog_and_names_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    heads = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert heads[0] == "Unreleased" and _version() in heads
    sections = set(re.findall(r"^### (\w+)", text, flags=re.MULTILINE))
    assert sections <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_version_policy_is_written_where_the_changelog_points():
    guide = (ROOT / "docs" / "guides" / "ci-gate.md").read_text(encoding="utf-8")
    assert "## Version policy" in guide
    assert "docs/guides/ci-gate.md#version-policy" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")

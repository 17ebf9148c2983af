"""Every bound unit has its proof note, every label a note cites exists in the code it names, and every
labelled code line is cited by a note (fails when a note or a cited label is missing)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from biasbound.bounds import UNITS

ROOT = Path(__file__).resolve().parents[2]
PROOFS = ROOT / "docs" / "proofs"
NOTES = ["knowledge", "almost_sure", "moments", "full_population", "sampled_population", "paper", "figures", "calibration",
         "knowledge-from-data", "random_judge", "high_probability", "human_anchored", "concentration"]
LABEL = re.compile(r"\[proof:([a-z0-9-]+)\]")


def _code_files(note: str) -> list[Path]:
    text = (PROOFS / f"{note}.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("Code:"))
    return [ROOT / p for p in re.findall(r"`([^`]+\.py)`", line)]


def test_every_unit_has_a_note() -> None:
    for u in UNITS:
        name = u.__name__.rsplit(".", 1)[1]
        assert (PROOFS / f"{name}.md").is_file(), f"docs/proofs/{name}.md is missing for bound unit {u.NAME}"


@pytest.mark.parametrize("note", NOTES)
def test_cited_labels_exist_and_labelled_lines_are_cited(note: str) -> None:
    text = (PROOFS / f"{note}.md").read_text(encoding="utf-8")
    cited = set(LABEL.findall(text))
    files = _code_files(note)
    assert files and all(f.is_file() for f in files), f"{note}.md names a code file that does not exist"
    in_code = set()
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if "#" in line:
                in_code |= set(LABEL.findall(line.split("#", 1)[1]))
    assert cited, f"{note}.md cites no code line"
    assert cited <= in_code, f"{note}.md cites labels missing from its code: {sorted(cited - in_code)}"
    assert in_code <= cited, f"labelled lines not cited by {note}.md: {sorted(in_code - cited)}"


def test_every_labelled_line_in_the_package_belongs_to_a_note() -> None:
    covered = {f for n in NOTES for f in _code_files(n)}
    for f in (ROOT / "src" / "biasbound").rglob("*.py"):
        if LABEL.search(f.read_text(encoding="utf-8")):
            assert f in covered, f"{f.relative_to(ROOT)} has [proof:...] labels but no note names it"

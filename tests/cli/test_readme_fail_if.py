"""The documented `--fail-if` commands work when pasted into a shell: every condition is quoted.

`--fail-if flip_rate>0.1` unquoted is a redirection: the shell passes `flip_rate` and writes the
output to a file named `0.1`. The test splits each shell line of the bash blocks (and the `run:`
lines of the YAML blocks) of the README and every page of the documentation site the way the shell
does (shlex with punctuation characters) and parses every `--fail-if` value as compare does.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from biasbound.card import parse_threshold
from biasbound.paired import is_paired_condition, parse_paired

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _shell_lines(text: str) -> list[str]:
    out = []
    for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.DOTALL):
        for line in body.splitlines():
            if "--fail-if" not in line or "biasbound" not in line:  # a command line, not prose in a diagram block
                continue
            if lang in ("bash", "sh", "shell", "console", ""):
                out.append(line.lstrip("$ "))
            elif lang in ("yaml", "yml"):
                m = re.match(r"\s*-?\s*run:\s*(.*)$", line)
                if m:
                    out.append(m.group(1))
    return out


def _fail_if_values(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    tokens = list(lexer)
    return [tokens[i + 1] if i + 1 < len(tokens) else "" for i, t in enumerate(tokens) if t == "--fail-if"]


def test_the_shell_split_sees_an_unquoted_condition_as_a_redirection() -> None:
    assert _fail_if_values("biasbound compare a b --fail-if flip_rate>0.1") == ["flip_rate"]
    assert _fail_if_values("biasbound compare a b --fail-if 'flip_rate>0.1'") == ["flip_rate>0.1"]
    assert _fail_if_values('biasbound compare a b --fail-if "bias_radius>=0.5"  # a comment') == ["bias_radius>=0.5"]


def test_every_documented_fail_if_is_quoted_for_the_shell() -> None:
    lines = [(doc, line) for doc in DOCUMENTS for line in _shell_lines(doc.read_text(encoding="utf-8"))]
    assert len({doc for doc, _ in lines}) >= 2, "the README and the CI guide show compare --fail-if in a bash block"
    for doc, line in lines:
        for value in _fail_if_values(line):
            try:
                (parse_paired if is_paired_condition(value) else parse_threshold)(value)
            except Exception as exc:  # noqa: BLE001 - the message is the finding
                pytest.fail(f"{doc.relative_to(ROOT)} line pasted into a shell: {line!r} -> --fail-if {value!r}: {exc}")

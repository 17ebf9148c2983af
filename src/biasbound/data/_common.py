"""Shared pieces of the readers for other tools' files: JSON arrays with line numbers, notes.

Every reader returns a :class:`~biasbound.data.JudgmentSet` built by the long-table
``finish_table``; what it could not map onto the judgment table (fields it ignores, records it
counts as missing, conventions it cannot see in the file) is a list of :class:`Note`, kept in
``frame.attrs["integration"]`` with the score rule the reader applied, and printed by the
``certify`` command.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biasbound._exceptions import DataFormatError
from biasbound.data._io import open_text

__all__ = ["Native", "Notes", "attach", "iter_json_array", "native_tables"]


def iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(1-based line, element)`` for each element of a file holding one JSON array.

    The line is where the element starts, so an error can name it.

    Raises
    ------
    DataFormatError
        Naming the file and line when the text is not a JSON array.
    """
    with open_text(path) as fh:
        text = fh.read()
    decoder = json.JSONDecoder()
    n = len(text)

    def skip(i: int) -> int:
        while i < n and text[i] in " \t\r\n":
            i += 1
        return i

    def line_of(i: int) -> int:
        return text.count("\n", 0, i) + 1

    i = skip(0)
    if i >= n or text[i] != "[":
        raise DataFormatError("the file must hold one JSON array of records (it does not start with '[').",
                              path=str(path), line=line_of(i) if i < n else 1)
    i = skip(i + 1)
    if i < n and text[i] == "]":
        return
    line, last = 1, 0
    while True:
        line += text.count("\n", last, i)
        last = i
        try:
            value, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"the record is not valid JSON ({exc.msg}).", path=str(path), line=line_of(exc.pos)) from None
        yield line, value
        i = skip(end)
        if i < n and text[i] == ",":
            i = skip(i + 1)
            continue
        if i < n and text[i] == "]":
            return
        raise DataFormatError("the JSON array is not closed or a ',' is missing between records.",
                              path=str(path), line=line_of(min(i, n - 1)))


@dataclass
class Native:
    """A tool's own headline number per (judge, model), computed by that tool's own rule.

    ``column`` is the leaderboard column it is shown in (named after the tool, e.g.
    ``fastchat_win_rate_adjusted``), ``rule`` the sentence stating how the tool computes it,
    ``values`` maps ``(judge, model)`` to the number (on the tool's own scale).
    """

    column: str
    rule: str
    values: dict[tuple[str, str], float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``column``, ``rule``, ``values`` as ``[{judge, model, value}]``."""
        return {"column": self.column, "rule": self.rule,
                "values": [{"judge": j, "model": m, "value": float(v)} for (j, m), v in sorted(self.values.items())]}


def native_tables(*sources: Any) -> list[dict[str, Any]]:
    """Every native-number record (``Native.to_dict()``) found in load reports or frame attrs.

    ``sources``: dicts shaped like ``frame.attrs`` (``{"integration": {"native": [...]}}``) or a
    ``LoadedInputs.report`` (path → report holding ``integration``); anything else is ignored.
    Records with the same column are merged (their values concatenated).
    """
    found: dict[str, dict[str, Any]] = {}

    def take(integ: Any) -> None:
        if not isinstance(integ, dict):
            return
        for rec in integ.get("native") or []:
            if isinstance(rec, dict) and "column" in rec:
                have = found.setdefault(rec["column"], {"column": rec["column"], "rule": rec.get("rule", ""), "values": []})
                have["values"] = have["values"] + list(rec.get("values") or [])

    for src in sources:
        if not isinstance(src, dict):
            continue
        if "integration" in src:
            take(src["integration"])
        else:
            for rep in src.values():
                if isinstance(rep, dict):
                    take(rep.get("integration"))
    return list(found.values())


@dataclass
class Notes:
    """What a reader could not map, counted by reason, plus the score rule it applied and the
    tool's own headline numbers (:class:`Native`)."""

    fmt: str
    rule: str = ""
    counts: Counter[str] = field(default_factory=Counter)
    remarks: list[str] = field(default_factory=list)
    native: list[Native] = field(default_factory=list)
    baselines: list[str] = field(default_factory=list)

    def count(self, reason: str, n: int = 1) -> None:
        """Count ``n`` records (or judgments) that hit ``reason``."""
        if n:
            self.counts[reason] += n

    def remark(self, text: str) -> None:
        """Record a sentence about a convention the file does not carry (printed once)."""
        if text not in self.remarks:
            self.remarks.append(text)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``format``, ``score_rule``, ``not_mapped`` (reason → count), ``remarks``, ``native``."""
        return {"format": self.fmt, "score_rule": self.rule, "not_mapped": dict(self.counts), "remarks": list(self.remarks),
                "native": [n.to_dict() for n in self.native], "baselines": sorted(set(self.baselines))}


def attach(js: Any, notes: Notes) -> Any:
    """Store ``notes`` in the judgment set's ``frame.attrs["integration"]`` and return the set."""
    js.frame.attrs["integration"] = notes.to_dict()
    return js

"""report.html shows each tool's own headline number beside the certified column, with its rule.

Deterministic (a fixed real file, fixed seed): false-failure rate 0. The truth is FastChat's printed
win_rate_adjusted for phi-3 on the vendored pair file, 0.486301 (tests/data/mt_bench_full/PROVENANCE.md).
"""

from __future__ import annotations

import html as htmllib
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from biasbound.cli import main

PAIR = Path(__file__).resolve().parents[1] / "data" / "mt_bench_full" / "phi-3" / "gpt-4_pair.jsonl.gz"


class _Table(HTMLParser):
    """The leaderboard table's header cells and rows (cell text, inner spans included)."""

    def __init__(self) -> None:
        super().__init__()
        self.inside, self.cell, self.headers, self.rows, self.row = False, None, [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == "leaderboard-table":
            self.inside = True
        elif self.inside and tag == "tr":
            self.row = []
        elif self.inside and tag in ("th", "td"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table" and self.inside:
            self.inside = False
        elif self.inside and tag == "th" and self.cell is not None:
            self.headers.append(self.cell.strip())
            self.cell = None
        elif self.inside and tag == "td" and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif self.inside and tag == "tr" and self.row:
            self.rows.append(self.row)
            self.row = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


@pytest.mark.slow
def test_report_shows_fastchat_win_rate_adjusted_beside_the_certified_column_with_its_rule(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["certify", str(PAIR), "--out", str(out), "--tau", "0.5", "--delta", "0.05", "--no-progress",
                 "--bootstrap-rounds", "50", "--range-bound"])
    capsys.readouterr()
    assert code == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    table = _Table()
    table.feed(html)
    assert "fastchat_win_rate_adjusted" in table.headers and "certified" in " ".join(table.headers)
    col = table.headers.index("fastchat_win_rate_adjusted")
    phi = [r for r in table.rows if r and r[table.headers.index("model")].startswith("phi-3")]
    assert len(phi) == 1 and float(phi[0][col]) == pytest.approx(0.486301, abs=5e-4)
    rules = json.loads((out / "load_report.json").read_text())
    rule = next(n["rule"] for r in rules.values() if isinstance(r, dict)
                for n in (r.get("integration") or {}).get("native") or [] if n["column"] == "fastchat_win_rate_adjusted")
    text = htmllib.unescape(html)
    assert "“fastchat_win_rate_adjusted” is the tool's own number by its own rule" in text and rule in text

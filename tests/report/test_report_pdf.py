"""The demo report printed to PDF by a real browser (headless Chromium) holds every leaderboard row and column.

Chromium comes from Debian's ``chromium`` package (``.ci/run`` installs it with apt where it is
absent). Without it this test fails, naming the package: it never skips.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from biasbound.certificate import Certificate
from biasbound.commands.demo import run_demo
from biasbound.data.embedded import DEMO_BASELINE
from biasbound.report.html import format_number

pytestmark = pytest.mark.slow  # end to end: a headless browser prints the demo report

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--no-pdf-header-footer")


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    if Path("/usr/bin/chromium").is_file():
        return "/usr/bin/chromium"
    pytest.fail("headless Chromium is needed to print the report: install Debian's 'chromium' package "
                "(apt-get install chromium; .ci/run does this).")


def print_to_pdf(html: Path, pdf: Path, profile: Path) -> None:
    cmd = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--print-to-pdf={pdf}", html.resolve().as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env={**os.environ, "HOME": str(profile)})
    assert proc.returncode == 0 and pdf.is_file() and pdf.stat().st_size > 0, proc.stderr[-2000:]


class _Table(HTMLParser):
    """Rows of one of the report's tables (by its ``id``) as lists of cell texts."""

    def __init__(self, table_id: str = "leaderboard-table") -> None:
        super().__init__()
        self.table_id = table_id
        self.inside = False
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "tr":
            self._row = []
        elif self.inside and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if not self.inside:
            return
        if tag in ("td", "th") and self._cell is not None:
            self._row.append(" ".join(x.strip() for x in self._cell if x.strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            (self.rows if self.headers else self.headers).extend([self._row] if self.headers else self._row)
            self._row = None
        elif tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def normalise(text: str) -> str:
    """NFKC (the PDF's ﬁ/ﬂ ligatures become fi/fl) and single spaces."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    from pypdf import PdfReader

    out = tmp_path_factory.mktemp("demo")
    run_demo(out, progress=False)
    html = out / "tight" / "report.html"
    pdf = out / "report.pdf"
    print_to_pdf(html, pdf, tmp_path_factory.mktemp("chromium-profile"))
    text = normalise(" ".join(page.extract_text() for page in PdfReader(pdf).pages))
    table, per_model = _Table(), _Table("per-model-table")
    table.feed(html.read_text(encoding="utf-8"))
    per_model.feed(html.read_text(encoding="utf-8"))
    return out, text, table, per_model


def test_every_leaderboard_row_and_column_is_in_the_printed_report(printed):
    out, text, table, _ = printed
    lb = pd.read_csv(out / "tight" / "leaderboard.csv")
    assert len(lb) == 76
    # the HTML table holds every model once, with every column of the output
    assert sorted(row[1].removesuffix(" baseline") for row in table.rows) == sorted(lb["model"])
    assert table.headers == ["rank", "model", "items", "missing", "original (95% CI)", "both orders",
                             "certified (95% CI)", "rank after", "change", "win rate % (95% CI)",
                             "Bradley–Terry Elo (95% CI)", "arena_hard_score"]
    # Arena-Hard's own number beside the certified column, the baseline pinned at 50 as show_result.py does
    col = table.headers.index("arena_hard_score")
    base = [row for row in table.rows if row[1].endswith(" baseline")]
    assert len(base) == 1 and float(base[0][col]) == 50.0
    # the PDF: every header, and every row with all its cells, in order (nothing cut off or hidden)
    assert normalise(" ".join(table.headers)) in text
    missing = [row[1] for row in table.rows if normalise(" ".join(row)) not in text]
    assert not missing, f"{len(missing)} leaderboard rows not complete in the PDF, e.g. {missing[:3]}"


def test_printed_report_states_the_mechanism_the_scores_and_the_comparison(printed):
    out, text, _, per_model = printed
    lb = pd.read_csv(out / "tight" / "leaderboard.csv").set_index("model")
    cert = Certificate.read(out / "tight" / "certificate.json")
    formula = (f"M(D) = {format_number(cert.alpha)} · f(D) + {format_number(1 - cert.alpha)} · "
               f"{format_number(cert.center['value'])} + N(0, {format_number(cert.sigma)}² · I_{cert.dim})")
    assert normalise(formula) in text
    top = lb["original"].idxmax()
    assert (f"for {top}, {lb.loc[top, 'original']:.4g} in the original order only against "
            f"{lb.loc[top, 'original_both_orders']:.4g} over both") in text
    assert f"The baseline {DEMO_BASELINE}" in text and lb.loc[DEMO_BASELINE, "is_baseline"]
    assert "Paper calibration, tight calibration, and the whole leaderboard" in text and "Per-model certificates" in text
    # every per-model certificate's row, with its audit verdict as written in certificates.json
    certs = {c["scope"]["model"]: c for c in json.loads((out / "tight" / "certificates.json").read_text())}
    assert sorted(row[0] for row in per_model.rows) == sorted(certs) and len(certs) == 76
    for row in per_model.rows:
        assert row[-1] == certs[row[0]]["audit"]["model"]["verdict"]
        assert normalise(" ".join(row)) in text, row[0]

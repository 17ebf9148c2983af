"""The report read on a phone: headless Chromium lays it out at 390 px and measures it.

At 390 px wide (an iPhone's CSS width): the page itself never scrolls sideways; every table sits
inside the screen and, when wider, scrolls inside its own box; no word of any table cell is broken
letter by letter (each word, or each hyphen-joined part, fits on one line of its cell); every figure
keeps a legible width (its own printed width or 36rem, whichever is smaller) and scrolls in its box.
The measuring script is added to a copy of the report (the report itself has no script), shown in
a 390 px wide frame (headless Chromium keeps its window at least 500 px wide; the frame is the
phone's viewport, media queries included). A screenshot is written beside it for a person to look
at. Chromium as in test_report_pdf.py (it never skips).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.cli import main

pytestmark = pytest.mark.slow  # a certify run with plots, then a headless browser (~15 s)

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars")

MEASURE = r"""
<script>
window.addEventListener('load', function () {
  const vw = document.documentElement.clientWidth;
  const out = {viewport: vw, page: document.documentElement.scrollWidth, tables: 0, cut: [], broken: [], thumbs: [],
               figures: 0};
  const name = (el) => el.id || (el.closest('[id]') || {}).id || el.className || el.tagName;
  for (const t of document.querySelectorAll('table')) {
    out.tables++;
    const r = t.getBoundingClientRect();
    const ox = getComputedStyle(t).overflowX;
    if (r.right > vw + 1) out.cut.push(name(t) + ': box ends at ' + Math.round(r.right) + ' px');
    if (t.scrollWidth > t.clientWidth + 1 && !(ox === 'auto' || ox === 'scroll'))
      out.cut.push(name(t) + ': content ' + t.scrollWidth + ' px in a ' + t.clientWidth + ' px box that does not scroll');
  }
  const probe = document.createElement('span');
  probe.style.cssText = 'position:absolute;visibility:hidden;white-space:nowrap;left:0;top:0';
  document.body.appendChild(probe);
  for (const c of document.querySelectorAll('td, th')) {
    const cs = getComputedStyle(c);
    const inner = c.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    probe.style.font = cs.font;
    probe.style.letterSpacing = cs.letterSpacing;
    for (const word of c.innerText.split(/\s+/).filter(Boolean)) {
      for (const part of word.split(/(?<=[-\u2013\u2014/])/)) {
        probe.textContent = part;
        if (probe.getBoundingClientRect().width > inner + 1) {
          out.broken.push(name(c) + ': ' + JSON.stringify(part) + ' in a ' + Math.round(inner) + ' px cell');
          break;
        }
      }
    }
  }
  const rem = parseFloat(getComputedStyle(document.documentElement).fontSize);
  for (const img of document.querySelectorAll('figure img')) {
    out.figures++;
    const own = document.createElement('div');
    own.style.cssText = 'position:absolute;visibility:hidden;width:' + (img.style.width || (img.naturalWidth + 'px'));
    document.body.appendChild(own);
    const want = Math.min(own.getBoundingClientRect().width, 36 * rem);
    const got = img.getBoundingClientRect().width;
    if (got + 1 < want) out.thumbs.push(name(img) + ': ' + Math.round(got) + ' px wide, legible needs ' + Math.round(want));
    const fig = img.closest('figure');
    if (fig.getBoundingClientRect().right > vw + 1) out.thumbs.push(name(img) + ': its box leaves the screen');
  }
  const pre = parent.document.createElement('pre');
  pre.id = 'phone-check';
  pre.textContent = JSON.stringify(out);
  parent.document.body.appendChild(pre);
});
</script>
"""


def _chromium() -> str:
    from test_report_pdf import chromium

    return chromium()


def _run(args: list[str], profile: Path) -> str:
    proc = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True, check=False,
                          timeout=180, env={**os.environ, "HOME": str(profile)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """A certify report with long model and judge names (names that used to break letter by letter)."""
    d = tmp_path_factory.mktemp("phone")
    rng = np.random.default_rng(0)
    rows = []
    models = ["a-very-long-model-name-that-breaks-layouts-2026-preview", "gpt-4o-mini-2024-07-18",
              "claude-3-5-sonnet-20241022", "m4", "m5", "m6"]
    for m in models:
        q = rng.uniform(0.2, 0.8)
        for i in range(30):
            s = round(float(np.clip(q + rng.normal(0, 0.2), 0, 1)), 2)
            rows += [{"judge": "judge-with-a-long-name", "model": m, "item_id": f"q{i}", "game": g,
                      "score": s if g == 1 else round(float(np.clip(s + rng.normal(0, 0.05), 0, 1)), 2)} for g in (1, 2)]
    pd.DataFrame(rows).to_csv(d / "t.csv", index=False)
    assert main(["certify", str(d / "t.csv"), "--out", str(d / "out"), "--no-progress", "--bootstrap-rounds", "50"]) == 0
    return d / "out" / "report.html"


def _phone(inner: str, height: int) -> str:
    """A page showing ``inner`` in a 390 px wide frame (srcdoc: the frame shares the page's origin)."""
    return ('<!DOCTYPE html><html><body style="margin:0"><iframe style="border:0;width:390px;height:'
            f'{height}px" srcdoc="{html_escape(inner, quote=True)}"></iframe></body></html>')


def test_the_report_reads_on_a_390_px_screen(report, tmp_path):
    html = report.read_text(encoding="utf-8")
    measured = tmp_path / "report-measured.html"
    measured.write_text(_phone(html.replace("</body>", MEASURE + "</body>"), 844), encoding="utf-8")
    dom = _run(["--window-size=500,900", "--virtual-time-budget=5000", "--dump-dom", measured.as_uri()],
               tmp_path / "profile")
    m = re.search(r'<pre id="phone-check">(.*?)</pre>', dom, flags=re.DOTALL)
    assert m, "the measuring script did not run"
    got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    shot = tmp_path / "phone.html"
    shot.write_text(_phone(html, 6000), encoding="utf-8")
    _run(["--window-size=500,6000", f"--screenshot={tmp_path / 'report-390px.png'}", shot.as_uri()],
         tmp_path / "profile2")  # for a person to look at
    assert got["viewport"] <= 390 and got["tables"] >= 5 and got["figures"] >= 3, got
    assert got["page"] <= got["viewport"], f"the page scrolls sideways: {got['page']} px on a {got['viewport']} px screen"
    assert got["cut"] == [], got["cut"]
    assert got["broken"] == [], got["broken"]
    assert got["thumbs"] == [], got["thumbs"]

"""The demo's three reports printed by a real browser (headless Chromium, A4 landscape): every label of every
plot is at least 7 pt on paper, captions say what is plotted, and the figures and the audit wording agree with
their own folder's certificate.

The size of a label on paper is measured, not assumed: while the demo runs, every string matplotlib's Agg
renderer draws into a PNG is recorded with its font size in points on the figure; the printed PDF gives the
width at which Chromium placed each image (its transformation matrix at the ``Do`` operator, read with pypdf);
printed size = size on the figure x printed width / figure width. Deterministic (seeded demo; no statistical test).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from biasbound.commands.demo import run_demo
from biasbound.report import plots
from biasbound.report.html import format_number
from test_report_pdf import print_to_pdf

MIN_PT = 7.0
FOLDERS = ("paper", "tight", "leaderboard-all-swapped")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class _Figures(HTMLParser):
    """The report's figures in document order: (plot name from ``id="plot-…"``, caption text)."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: list[list[str]] = []
        self._in_caption = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "figure" and (a.get("id") or "").startswith("plot-"):
            self.figures.append([a["id"][len("plot-"):], ""])
        elif tag == "figcaption":
            self._in_caption = True

    def handle_endtag(self, tag):
        if tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data):
        if self._in_caption and self.figures:
            self.figures[-1][1] += data


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    from pypdf import PdfReader

    drawn: dict[str, tuple[float, list[tuple[str, float]]]] = {}
    current: list[tuple[str, float]] = []
    draw_text, save = plots._Renderer.draw_text, plots._save  # the Agg renderer the plots draw with

    def recording_draw_text(self, gc, x, y, s, prop, *args, **kwargs):
        current.append((s, float(prop.get_size_in_points())))
        return draw_text(self, gc, x, y, s, prop, *args, **kwargs)

    def recording_save(fig, path, **kwargs):
        current.clear()
        width_in = float(fig.get_figwidth())
        written = save(fig, path, **kwargs)
        drawn[_sha(Path(written))] = (width_in, list(current))  # keyed by content: outputs are staged, then moved
        return written

    out = tmp_path_factory.mktemp("demo")
    mp = pytest.MonkeyPatch()
    mp.setattr(plots._Renderer, "draw_text", recording_draw_text)
    mp.setattr(plots, "_save", recording_save)
    try:
        run_demo(out, progress=False)
    finally:
        mp.undo()
    reports = {}
    for folder in FOLDERS:
        html = out / folder / "report.html"
        pdf = out / f"{folder}.pdf"
        print_to_pdf(html, pdf, tmp_path_factory.mktemp(f"chromium-{folder}"))
        images = []  # (pixel width, pixel height, printed width in pt, page text), in page order
        for page in PdfReader(pdf).pages:
            page_text = " ".join(unicodedata.normalize("NFKC", page.extract_text()).split())
            xobjects = page["/Resources"].get("/XObject")
            xobjects = xobjects.get_object() if xobjects is not None else {}
            placed: list[tuple[str, list[float]]] = []
            page.extract_text(visitor_operand_before=lambda op, args, cm, tm, placed=placed:
                              placed.append((args[0], list(cm))) if op == b"Do" else None)
            for name, cm in placed:
                obj = xobjects[name].get_object()
                if obj.get("/Subtype") == "/Image":
                    images.append((int(obj["/Width"]), int(obj["/Height"]), math.hypot(cm[0], cm[1]), page_text))
        parser = _Figures()
        parser.feed(html.read_text(encoding="utf-8"))
        reports[folder] = {"figures": parser.figures, "images": images, "html": html.read_text(encoding="utf-8")}
    return out, drawn, reports


@pytest.mark.slow
def test_every_plot_label_prints_at_7pt_or_more(printed):
    out, drawn, reports = printed
    for folder in FOLDERS:
        figures, images = reports[folder]["figures"], reports[folder]["images"]
        names = [n for n, _ in figures]
        # the long plots are split into pages, and every figure of the HTML is an image of the PDF, in order
        assert {"ranking", "ranking_p2", "ranking_p3", "bias_radius", "rank_pairs"} <= set(names), names
        assert len(images) == len(figures), (folder, names)
        for (name, caption), (w_px, h_px, printed_pt, page_text) in zip(figures, images):
            # the caption is printed on the image's page, whole (figure and caption are never split)
            assert " ".join(unicodedata.normalize("NFKC", caption).split()) in page_text, (folder, name)
            width_in, texts = drawn[_sha(out / folder / f"{name}.png")]
            assert w_px == round(width_in * plots.DPI), (folder, name)  # the recorded figure is the printed image
            assert w_px / plots.DPI <= plots.PRINT_SIZE_IN[0] and h_px / plots.DPI <= plots.PRINT_SIZE_IN[1], (folder, name)
            scale = printed_pt / (72.0 * width_in)
            labels = [(t, size * scale) for t, size in texts if t.strip()]
            assert len(labels) >= 5, (folder, name, labels)  # a title, axis labels, ticks at least
            small = [(t, round(pt, 2)) for t, pt in labels if pt < MIN_PT]
            assert not small, f"{folder}/{name}: {len(small)} labels below {MIN_PT} pt printed, e.g. {small[:5]}"
        # every model name is drawn on one of the leaderboard pages (no page loses a row)
        models = [t for n, _ in figures if n.startswith("ranking")
                  for t, _ in drawn[_sha(out / folder / f"{n}.png")][1]]
        board = pd.read_csv(out / folder / "leaderboard.csv")["model"]
        assert all(plots._label(m) in models for m in board), folder


@pytest.mark.slow
def test_captions_say_what_is_plotted_and_agree_with_the_certificate(printed):
    out, _, reports = printed
    for folder in FOLDERS:
        for name, caption in reports[folder]["figures"]:
            caption = " ".join(caption.split())
            # a sentence, not a file name
            assert len(caption.split()) >= 10 and not caption.startswith(("Plot ", name)), (folder, name, caption)
    # the leaderboard view's f(D) is one mean per model: its score plot says models, not items
    lv = dict(reports["leaderboard-all-swapped"]["figures"])
    assert "one mean score per model" in lv["score_distribution"] and "share of items" not in lv["score_distribution"]
    # the paper route's bias radius: Markov on its moment bound, capped at the range, numbers from its certificate
    cert = json.loads((out / "paper" / "certificate.json").read_text())
    u2 = max(r["U2"] for recs in cert["knowledge"]["generators"].values() for r in recs)
    caption = " ".join(dict(reports["paper"]["figures"])["bias_radius"].split())
    for d in (0.01, 0.05, 0.1):
        assert f"{format_number(math.sqrt(u2 / d))} at δ = {format_number(d)}" in caption
    assert all(math.sqrt(u2 / d) >= cert["range"]["A"] for d in (0.01, 0.05, 0.1))
    assert "every radius is 1" in caption
    per_model = json.loads((out / "paper" / "certificates.json").read_text())
    assert {c["bias_radius"]["radius"] for c in per_model} == {1.0}  # what the figure shows, every model at the cap
    # the tight route holds no neighbour out: its audit box says so and never claims held-out neighbours
    for folder in FOLDERS:
        scope = json.loads((out / folder / "certificate.json").read_text())["scope"]
        section = re.search(r'<section id="audit">(.*?)</section>', reports[folder]["html"], re.S).group(1)
        audit = " ".join(unescape(re.sub(r"<[^>]+>", " ", section)).split())
        if scope["neighbors_audit"] == 0:
            assert "held-out neighbours" not in audit.replace("No neighbour was held out", "")
            assert "No neighbour was held out" in audit
        else:
            assert f"On {scope['neighbors_audit']} held-out neighbours" in audit

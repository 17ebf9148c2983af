"""The plots' renderer shares plain-text metrics, font heights and shaped strings between figures (:class:`plots._Renderer`) and
draws the same pixels as matplotlib's own Agg renderer, which measures every string again in each figure.

Deterministic (no randomness): the figures are drawn twice, once per renderer, and compared byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties

from biasbound.report import plots
from biasbound.report.plots import DPI

_NAMES = ["gpt-4-0314", "claude-3-opus-20240229", "Llama-3-70b-instruct (q4)", "모델-ko", "x"]


_CURVES = {name: [{"delta": 0.01, "radius": 0.3 * (k + 1)}, {"delta": 0.05, "radius": 0.2 * (k + 1)},
                  {"delta": 0.1, "radius": None if k == 2 else 0.1 * (k + 1)}] for k, name in enumerate(_NAMES)}


def _own_canvas_figure(width: float, height: float) -> Figure:
    """plots._new_figure on matplotlib's own Agg canvas (a renderer measuring each string again per figure)."""
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def test_shared_metrics_draw_the_same_bytes_as_matplotlibs_renderer(tmp_path: Path, monkeypatch: Any) -> None:
    plots._TEXT_METRICS.clear()
    plots._FONT_HEIGHTS.clear()
    plots._SHAPED.clear()
    first = plots.plot_bias_radius(_CURVES, tmp_path / "shared1.png").read_bytes()  # fills the shared metrics
    assert plots._TEXT_METRICS, "the plots' canvas did not measure through the shared metrics"
    assert plots._FONT_HEIGHTS, "matplotlib's Text did not read the font heights from the plots' renderer"
    assert plots._SHAPED or not plots._SHAPED_ROUTE, "the plots' renderer did not keep the shaped strings"
    second = plots.plot_bias_radius(_CURVES, tmp_path / "shared2.png").read_bytes()  # a new figure reading them
    monkeypatch.setattr(plots, "_new_figure", _own_canvas_figure)
    own = plots.plot_bias_radius(_CURVES, tmp_path / "own.png").read_bytes()
    assert first == own
    assert second == own


def test_metrics_equal_agg_and_follow_font_size_and_hinting() -> None:
    plots._TEXT_METRICS.clear()
    shared, own = plots._Renderer(200, 100, DPI), RendererAgg(200, 100, DPI)
    for size in (7.0, 9.0):
        prop = FontProperties(family="DejaVu Sans", size=size)
        for text in map(plots.drawable, _NAMES):  # as the plots draw them (no CJK font: escaped)
            assert shared.get_text_width_height_descent(text, prop, False) == \
                own.get_text_width_height_descent(text, prop, False)
    assert len(plots._TEXT_METRICS) == 2 * len(_NAMES)  # a key per string and size, none shared between sizes
    prop = FontProperties(family="DejaVu Sans", size=7.0)
    with matplotlib.rc_context({"text.hinting": "no_hinting"}):  # shapes differently: its own entry
        fresh = RendererAgg(200, 100, DPI).get_text_width_height_descent("Llama-3 wvWV", prop, False)
        assert plots._Renderer(200, 100, DPI).get_text_width_height_descent("Llama-3 wvWV", prop, False) == fresh
    assert len(plots._TEXT_METRICS) == 2 * len(_NAMES) + 1


def test_font_heights_are_the_ones_text_reads_from_the_font_tables() -> None:
    """The renderer's font heights equal the OS/2 table's scaled numbers Text otherwise reads itself, for each size."""
    from matplotlib.font_manager import fontManager, get_font

    plots._FONT_HEIGHTS.clear()
    renderer = plots._Renderer(200, 100, DPI)
    for size in (7.0, 8.0, 12.0):
        prop = FontProperties(family="DejaVu Sans", size=size)
        font = get_font(fontManager._find_fonts_by_props(prop))
        os2, head = font.get_sfnt_table("OS/2"), font.get_sfnt_table("head")
        assert os2 is not None and head is not None
        scale = 1 / head["unitsPerEm"] * size * DPI / 72
        want = (os2["sTypoAscender"] * scale, -os2["sTypoDescender"] * scale, os2["sTypoLineGap"] * scale)
        assert renderer._get_font_height_metrics(prop) == want
        assert renderer._get_font_height_metrics(prop) == want  # read from the cache
    assert len(plots._FONT_HEIGHTS) == 3


def test_tables_stay_bounded(monkeypatch: Any) -> None:
    """A process measuring more strings than a table holds starts that table again empty: memory stays bounded."""
    monkeypatch.setattr(plots, "_TABLE_ENTRIES", 3)
    plots._TEXT_METRICS.clear()
    renderer = plots._Renderer(200, 100, DPI)
    prop = FontProperties(family="DejaVu Sans", size=7.0)
    sizes = []
    for text in ("a", "bb", "ccc", "dddd", "eeeee"):
        renderer.get_text_width_height_descent(text, prop, False)
        sizes.append(len(plots._TEXT_METRICS))
    assert sizes == [1, 2, 3, 1, 2]

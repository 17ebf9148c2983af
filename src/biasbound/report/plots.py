"""Figures that show what a bias-bounded certificate cost.

Every function draws one PNG with matplotlib's object-oriented API on an Agg
canvas (``matplotlib.figure.Figure`` + ``FigureCanvasAgg``): no pyplot, no window,
no change to the caller's backend and no figure left registered anywhere, so the
functions are safe in servers, notebooks and threads. Each returns the path it wrote.

Text is drawn with a font fallback chain: DejaVu Sans, then the first installed fonts of
:data:`FALLBACK_FONTS` (CJK fonts such as Debian's ``fonts-noto-cjk``), so Korean, Japanese and
Chinese model names render. A character no installed font covers is written as a ``\\uXXXX``
escape (:func:`drawable`) instead of an empty box.

The figures follow the paper's Section 4:

- :func:`plot_score_distribution` -- Figure 1, per-item scores before and after as bars (discrete
  levels) and histograms (the certified scores); :func:`plot_score_kde` draws densities instead,
  for continuous scores only;
- :func:`plot_ranking` -- Figure 2, the leaderboard before and after with 95% CIs;
- :func:`plot_sensitivity` -- the measured RMS sensitivity per neighbour generator;
- :func:`plot_judge_retention` -- Figure 4, rank correlation kept, per judge and setting;
- :func:`plot_calibration_tradeoff` -- α and σ as the tolerance τ varies (planning).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import numbers
import os
import textwrap
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from scipy.stats import gaussian_kde, norm

from biasbound._exceptions import InputError
from biasbound._validation import check_finite_array, check_in_range, check_int, check_one_of
from biasbound.parameters import AT_A_POINT, bounds, validate_params

__all__ = [
    "DISCRETE_LEVELS",
    "DPI",
    "FALLBACK_FONTS",
    "LEADERBOARD_COLUMNS",
    "PAGE_ROWS",
    "PRINT_SIZE_IN",
    "RETENTION_METRICS",
    "drawable",
    "pages",
    "plot_bias_radius",
    "plot_calibration_tradeoff",
    "plot_frontier",
    "plot_judge_retention",
    "plot_rank_pairs",
    "plot_ranking",
    "plot_score_distribution",
    "plot_score_kde",
    "plot_sensitivity",
    "rank_pair_pages",
]

DPI: int = 150
"""Resolution of every PNG written by this module."""

LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "model",
    "original",
    "original_lo",
    "original_hi",
    "certified",
    "certified_lo",
    "certified_hi",
    "rank_original",
    "rank_certified",
)
"""Columns :func:`plot_ranking` needs (a subset of ``leaderboard.csv``)."""

RETENTION_METRICS: dict[str, str] = {
    "spearman": "Spearman ρ",
    "kendall_tau_b": "Kendall τ_b",
    "pearson": "Pearson r",
}
"""Retention metrics :func:`plot_judge_retention` knows, with their axis labels."""

# Colour-blind-safe pair (Okabe-Ito) used consistently: original = blue, certified = vermilion.
_ORIGINAL = "#0072B2"
_CERTIFIED = "#D55E00"
_SHRUNK = "#009E73"
_GREY = "#7f7f7f"
_SETTING_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
_MAX_LABEL = 42

#: Rows (models, judges) one printed page of a long plot holds: at this count a plot's height stays within an
#: A4 landscape page at its natural size, so its 7-8 pt labels print at 7-8 pt (``report.html`` prints figures 1:1).
PAGE_ROWS: int = 26

#: The largest figure (width, height) in inches that prints at its natural size on A4 landscape with the
#: report's margins and a caption (``report.html`` sets each figure's printed width to its width in inches).
PRINT_SIZE_IN: tuple[float, float] = (10.8, 6.0)


# ----------------------------------------------------------------------------- helpers


#: Fonts tried, in order, for glyphs DejaVu Sans (matplotlib's own font) lacks: Korean, Japanese and
#: Chinese model names. The first installed ones join the fallback chain.
FALLBACK_FONTS: tuple[str, ...] = (
    "Noto Sans CJK KR", "Noto Sans CJK JP", "Noto Sans CJK SC", "Noto Sans CJK TC", "Noto Sans KR", "Noto Sans JP",
    "Noto Sans SC", "Source Han Sans", "NanumGothic", "Malgun Gothic", "Apple SD Gothic Neo", "AppleGothic",
    "Hiragino Sans", "Yu Gothic", "Microsoft YaHei", "WenQuanYi Zen Hei", "Droid Sans Fallback", "Arial Unicode MS",
)


@functools.lru_cache(maxsize=1)
def _font_chain() -> tuple[tuple[str, ...], frozenset[int]]:
    """The font families drawn with (DejaVu Sans, then the installed fallbacks) and every code point they cover."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    by_name: dict[str, str] = {}
    for entry in font_manager.fontManager.ttflist:
        by_name.setdefault(entry.name, entry.fname)
    chain = ["DejaVu Sans", *[f for f in FALLBACK_FONTS if f in by_name]]
    covered: set[int] = set()
    for family in chain:
        path = by_name.get(family) or font_manager.findfont(family, fallback_to_default=True)
        try:
            covered.update(FT2Font(path).get_charmap())
        except (OSError, RuntimeError):  # an unreadable font file covers nothing
            continue
    return tuple(chain), frozenset(covered)


@contextlib.contextmanager
def _fonts() -> Iterator[None]:
    """Draw with the fallback chain: glyphs missing from DejaVu Sans come from the next installed font."""
    import matplotlib

    chain, _ = _font_chain()
    with matplotlib.rc_context({"font.family": list(chain)}):  # a list of families: per-glyph fallback
        yield


def drawable(text: str) -> str:
    """``text`` with every character no installed font can draw written as a ``\\uXXXX`` escape.

    With a CJK font installed (Debian: ``fonts-noto-cjk``) Korean, Japanese and Chinese names are
    drawn as they are; without one, "모델" becomes ``\\ubaa8\\ub378`` rather than two empty boxes.
    Whitespace and control characters are kept.
    """
    _, covered = _font_chain()
    return "".join(
        ch if (ord(ch) in covered or ch.isspace() or ord(ch) < 32) else
        (f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        for ch in text
    )


def _with_fonts(fn: Any) -> Any:
    """Run a plotting function inside :func:`_fonts` (text is laid out and drawn with the fallback chain)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _fonts():
            return fn(*args, **kwargs)

    return wrapper


def _plain(text: Any) -> str:
    """Return ``text`` as a string matplotlib draws literally (``$`` would start mathtext), every glyph drawable."""
    return drawable(str(text)).replace("$", r"\$")


def _label(text: Any, limit: int = _MAX_LABEL) -> str:
    """Shorten a (model) name for an axis label, keeping its start and end."""
    s = str(text)
    if len(s) > limit:
        keep = limit - 1
        s = s[: keep - keep // 3] + "…" + s[-(keep // 3) :]
    return _plain(s)


def _wrap(text: str, width_in: float, fontsize: float = 12.0) -> str:
    """Wrap a title so that it fits a figure ``width_in`` inches wide (about 0.55 em per character)."""
    per_line = max(20, int(width_in * 72.0 / (0.55 * fontsize)))
    return "\n".join(textwrap.fill(part, per_line, break_on_hyphens=False) for part in text.split("\n"))


def _tick_rotation(labels: Sequence[str], slots: int) -> tuple[float, str]:
    """Rotate x tick labels when they are many or long, so that they never overlap."""
    longest = max((len(x) for x in labels), default=0)
    if slots > 4 or longest * slots > 40:
        return 25.0, "right"
    return 0.0, "center"


def pages(n: int, path: str | os.PathLike[str], per_page: int = PAGE_ROWS) -> list[tuple[tuple[int, int], Path]]:
    """Split ``n`` rows into printed pages of at most ``per_page`` rows (as even as possible), one PNG each.

    Returns ``[((start, stop), path_k), ...]``: the first page keeps ``path``, page k >= 2 is written to
    ``<stem>_p<k>.png`` beside it. Pass ``rows=(start, stop)`` to :func:`plot_ranking` or
    :func:`plot_bias_radius` (or ``rows`` to :func:`plot_rank_pairs`) to draw one page.
    """
    n = check_int(n, "n", "pages", low=0)
    per_page = check_int(per_page, "per_page", "pages", low=1)
    p = Path(path)
    k = max(1, math.ceil(n / per_page))
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [((bounds[i], bounds[i + 1]), p if i == 0 else p.with_name(f"{p.stem}_p{i + 1}{p.suffix}")) for i in range(k)]


def _check_rows(rows: Any, n: int, where: str) -> tuple[int, int]:
    """``rows`` = (start, stop) with 0 <= start < stop <= n, or None for all ``n`` rows."""
    if rows is None:
        return 0, n
    if not (isinstance(rows, (tuple, list)) and len(rows) == 2):
        raise TypeError(f"The 'rows' parameter of {where} must be a (start, stop) pair or None. Got {rows!r} instead.")
    start = check_int(rows[0], "rows[0]", where, low=0)
    stop = check_int(rows[1], "rows[1]", where, low=start + 1)
    if stop > n:
        raise InputError(f"The 'rows' parameter of {where} must end at most at the number of rows {n}. Got {stop} instead.")
    return start, stop


def _part(start: int, stop: int, n: int, noun: str) -> str:
    """`` (models 27–52 of 76)`` for a page of a long plot; empty when the page holds every row."""
    return "" if (start, stop) == (0, n) else f" ({noun + ' ' if noun else ''}{start + 1}–{stop} of {n})"


def _check_path(path: Any, where: str) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"The 'path' parameter of {where} must be a str or os.PathLike. Got {type(path).__name__} instead.")
    p = Path(path)
    if p.suffix.lower() != ".png":
        raise InputError(f"The 'path' parameter of {where} must name a .png file. Got {str(p)!r} instead.")
    return p


def _check_title(title: Any, where: str) -> str | None:
    if title is not None and not isinstance(title, str):
        raise TypeError(f"The 'title' parameter of {where} must be a str or None. Got {type(title).__name__} instead.")
    return title


# the text-metrics cache Text's layout reads (private to matplotlib, in it since 3.5): see _text_metrics
_METRICS_CACHE: Any = getattr(importlib.import_module("matplotlib.text"), "_get_text_metrics_with_cache", None)

#: zlib level of the PNG files (Pillow's default is 6). The level changes the file's bytes, never its pixels.
PNG_COMPRESS_LEVEL: int = 3


#: Entries each of the renderer's tables holds before it starts again empty (a process drawing many figures of many
#: names, a server, keeps its memory bounded; the demo's figures need about 650).
_TABLE_ENTRIES: int = 4096


def _kept(table: dict[Any, Any], key: Any, value: Any) -> Any:
    """Store ``value`` under ``key`` in one of the renderer's tables (emptied when full) and return it."""
    if len(table) >= _TABLE_ENTRIES:
        table.clear()
    table[key] = value
    return value


#: Plain-text metrics measured so far, shared by every figure's renderer (see :class:`_Renderer`).
_TEXT_METRICS: dict[tuple[Any, ...], tuple[float, float, float]] = {}

#: Each drawn string's shaped glyphs (font, size, glyph, slant, extent, x, y), see :meth:`_Renderer.draw_text`.
_SHAPED: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

#: Whether Agg draws plain text by shaping it (``FT2Font._layout``, matplotlib 3.11) then rendering the glyphs.
_SHAPED_ROUTE: bool = (hasattr(importlib.import_module("matplotlib.ft2font").FT2Font, "_layout")
                       and hasattr(RendererAgg, "_draw_text_glyphs_and_boxes"))

#: Each font file and size's ascent, descent and line gap in pixels (see :meth:`_Renderer._get_font_height_metrics`).
_FONT_HEIGHTS: dict[tuple[Any, ...], tuple[float | None, float | None, float | None]] = {}


class _Renderer(RendererAgg):
    """An Agg renderer whose plain-text metrics (width, height, descent) are shared by every figure.

    matplotlib caches a string's metrics per renderer, and every figure has its own, so each figure shaped its
    model names again to measure them (FreeType's ``set_text``: most of the measuring, the same names in the
    ranking, the rank pairs and the bias radius of each run). The metrics are a function of the string, the font
    files and size, the dpi and the rc settings that shape text, all in the key here, so a figure gets the numbers
    its own renderer would compute: the same layout and the same pixels. Drawing is Agg's own."""

    def get_text_width_height_descent(self, s: str, prop: Any, ismath: Any) -> tuple[float, float, float]:
        if ismath is not False:
            return cast(tuple[float, float, float], super().get_text_width_height_descent(s, prop, ismath))
        from matplotlib import font_manager

        rc: Any = matplotlib.rcParams
        fonts = font_manager.fontManager._find_fonts_by_props(prop)
        key = (s, tuple(str(f) for f in fonts), prop.get_size_in_points(), self.dpi, rc["text.hinting"],
               rc["text.hinting_factor"], rc["text.kerning_factor"], rc["font.enable_last_resort"])
        hit = _TEXT_METRICS.get(key)
        if hit is None:
            hit = _kept(_TEXT_METRICS, key, cast(tuple[float, float, float],
                                                 super().get_text_width_height_descent(s, prop, ismath)))
        return hit

    def _get_font_height_metrics(self, prop: Any) -> tuple[float | None, float | None, float | None]:
        """The font's ascent, descent and line gap in pixels, from its OS/2 table (else hhea), as ``Text`` reads them
        for every layout of every text (matplotlib 3.11 asks the renderer first, its own code reads the tables);
        read once per font file and size here. ``(None, None, None)`` when the font has neither table."""
        from matplotlib import font_manager

        fonts = font_manager.fontManager._find_fonts_by_props(prop)
        size = prop.get_size_in_points()
        key = (tuple(str(f) for f in fonts), size, self.dpi, matplotlib.rcParams["font.enable_last_resort"])
        hit = _FONT_HEIGHTS.get(key)
        if hit is None:
            font: Any = font_manager.get_font(fonts)
            hit = (None, None, None)
            for table_name, gap, ascent, descent in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                                     ("hhea", "lineGap", "ascent", "descent")):
                table = font.get_sfnt_table(table_name)
                if table is None:
                    continue
                scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * size * self.dpi / 72
                hit = (table[ascent] * scale, -table[descent] * scale, table[gap] * scale)
                break
            _kept(_FONT_HEIGHTS, key, hit)
        return hit

    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False,
                  mtext: Any = None) -> None:
        """Agg's ``draw_text`` (matplotlib 3.11: shape the string, then render each glyph where the shaping put it),
        with the shaping kept for the next figure drawing the same string in the same font, size, dpi, hinting,
        features and language: the same glyphs at the same offsets, rendered as Agg renders them. Other matplotlib
        versions, and mathtext, take Agg's own route."""
        if ismath or not _SHAPED_ROUTE:
            super().draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)
            return
        from matplotlib import font_manager
        from matplotlib.backends.backend_agg import get_hinting_flag

        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        fonts = font_manager.fontManager._find_fonts_by_props(prop)
        size = prop.get_size_in_points()
        rc: Any = matplotlib.rcParams
        key = (s, tuple(str(f) for f in fonts), size, self.dpi, get_hinting_flag(), features, language,
               rc["text.hinting_factor"], rc["text.kerning_factor"], rc["font.enable_last_resort"],
               threading.get_ident())  # matplotlib keeps a thread's fonts to that thread
        items = _SHAPED.get(key)
        if items is None:
            font = self._prepare_font(prop)
            items = _kept(_SHAPED, key, [(item.ft_object, size, item.glyph_index, 0, 1, item.x, item.y)
                                         for item in font._layout(s, flags=get_hinting_flag(), features=features,
                                                                  language=language)])
        self._draw_text_glyphs_and_boxes(gc, x, y, angle, items, [])


class _Canvas(FigureCanvasAgg):
    """An Agg canvas drawing with :class:`_Renderer` (otherwise ``FigureCanvasAgg.get_renderer``)."""

    def get_renderer(self) -> RendererAgg:
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key:
            self.renderer = _Renderer(w, h, self.figure.dpi)
            self._lastKey = key  # type: ignore[assignment]  # matplotlib types it as its initial None
        return self.renderer


def _new_figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    _Canvas(fig)
    return fig


def _text_metrics(renderer: Any, text: str, font: Any, dpi: float) -> tuple[float, float, float]:
    """Width, height and descent of a plain ``text`` in pixels, through the cache ``Text`` reads when it lays itself
    out and draws (matplotlib's ``_get_text_metrics_with_cache``, keyed by renderer, string, font and dpi): a label
    measured here is not shaped again at the layout or the draw. Without that cache (a private name), the
    renderer measures."""
    if _METRICS_CACHE is not None:
        w, h, d = _METRICS_CACHE(renderer, text, font, False, dpi)
    else:  # pragma: no cover - matplotlib without the private cache
        w, h, d = renderer.get_text_width_height_descent(text, font, ismath=False)
    return float(w), float(h), float(d)


def _bounding(texts: Sequence[Text], fig: Figure) -> set[int]:
    """The positions in ``texts`` (one column or row of labels, same place and alignment, in order) whose boxes
    bound the union of all their boxes: the first, the last, the widest, the tallest and the deepest.

    Measured from the strings and fonts alone (cached glyph metrics, no layout of the artists)."""
    if len(texts) <= 5:
        return set(range(len(texts)))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    sizes = [_text_metrics(renderer, t.get_text().replace(r"\$", "$"), t.get_fontproperties(), fig.dpi)
             for t in texts]
    extremes = {int(np.argmax([size[j] for size in sizes])) for j in range(3)}  # width, height, descent
    return {0, len(texts) - 1, *extremes}


def _axis_labels(ax: Axes, axis: str, labels: Sequence[str], *, fontsize: float, rotation: float = 0.0,
                 positions: Sequence[float] | np.ndarray | None = None, marks: bool = False) -> list[Text]:
    """Label ``positions`` (default 0, 1, ...) of ``axis`` ("x" or "y", data coordinates) with ``labels`` as plain
    texts, each where and as matplotlib draws a tick's label, with the ticks' marks (``marks``; else zero-length
    ticks) drawn as one line of tick markers, and put the axis label beside them where matplotlib would
    (``labelpad`` beyond the farthest label). Returns the texts; all but the ones bounding their union sit the
    layout out, as a column given to :func:`_save` does.

    The same pixels as ``set_xticks(positions, labels)`` (with ``tick_params(length=0)`` when not ``marks``),
    without the tick objects: each tick builds two marks, a grid line and two texts with their transforms, and the
    axis measures every label on each layout and draw to place its label. Call after the axis label's text and
    font are set; the axis itself gets no ticks, so no tick grid lines either.

    The axis label's offset from the axes is fixed here from the labels' extents, which do not depend on where the
    layout puts the axes: the farthest label's (the widest one's, rotated or not) plus the tick's pad and length.
    """
    import matplotlib as mpl
    from matplotlib.lines import Line2D
    from matplotlib.markers import TICKDOWN, TICKLEFT, TICKRIGHT, TICKUP
    from matplotlib.transforms import ScaledTranslation

    rc: Any = mpl.rcParams
    at = list(range(len(labels))) if positions is None else [float(v) for v in positions]
    size = float(rc[f"{axis}tick.major.size"]) if marks else 0.0
    outside = {"in": 0.0, "inout": 0.5, "out": 1.0}[rc[f"{axis}tick.direction"]]
    pad = float(rc[f"{axis}tick.major.pad"]) + size * outside  # where a tick puts its label
    transform, va, ha = (ax.get_xaxis_text1_transform if axis == "x" else ax.get_yaxis_text1_transform)(pad)
    colour = rc[f"{axis}tick.labelcolor"]
    if colour == "inherit":
        colour = rc[f"{axis}tick.color"]
    (ax.set_xticks if axis == "x" else ax.set_yticks)([])
    texts = [ax.text(k if axis == "x" else 0, 0 if axis == "x" else k, text, fontsize=fontsize, color=colour,
                     rotation=rotation, verticalalignment=va, horizontalalignment=ha, transform=transform,
                     clip_on=False)
             for k, text in zip(at, labels)]
    if marks and at and rc[f"{axis}tick.{'bottom' if axis == 'x' else 'left'}"]:
        marker: Any = {"x": {"out": TICKDOWN, "in": TICKUP, "inout": "|"},  # matplotlib's tick1 markers
                  "y": {"out": TICKLEFT, "in": TICKRIGHT, "inout": "_"}}[axis][rc[f"{axis}tick.direction"]]
        xy = (at, [0.0] * len(at)) if axis == "x" else ([0.0] * len(at), at)
        ax.add_artist(Line2D(*xy, linestyle="none", marker=marker, markersize=size,
                             markeredgewidth=float(rc[f"{axis}tick.major.width"]), color=rc[f"{axis}tick.color"],
                             markeredgecolor=rc[f"{axis}tick.color"], zorder=Line2D.zorder + 0.01, clip_on=False,
                             transform=ax.get_xaxis_transform("tick1") if axis == "x"
                             else ax.get_yaxis_transform("tick1")))
    fig = cast(Figure, ax.get_figure(root=True))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    bounding = _bounding(texts, fig)
    for k in set(range(len(texts))) - bounding:  # the layout and the axis need only the union (see _save)
        texts[k].set_in_layout(False)
    extents = [texts[k].get_window_extent(renderer) for k in bounding]
    far = max((b.height if axis == "x" else b.width for b in extents), default=0.0) / fig.dpi  # inches
    label = ax.xaxis if axis == "x" else ax.yaxis
    gap = -(pad / 72 + far + label.labelpad / 72)
    label.set_label_coords(0.5 if axis == "x" else 0.0, 0.0 if axis == "x" else 0.5,
                           transform=ax.transAxes + ScaledTranslation(0.0 if axis == "x" else gap,
                                                                      gap if axis == "x" else 0.0,
                                                                      fig.dpi_scale_trans))
    return texts


def _save(fig: Figure, path: Path, *, columns: Sequence[Sequence[Text]] = ()) -> Path:
    """Lay ``fig`` out once and write it as a PNG.

    ``columns`` are columns (or rows) of labels that share their alignment: the constrained layout needs only the
    union of each one's boxes, so it measures just the labels that bound it (:func:`_bounding`) and the others sit
    the layout out. The union, hence every position, is the same as with every label measured. They stay out for
    the draw too, where an axis places its label (and offset text) below or beside the union of its tick labels'
    boxes: the same union again, measured from the bounding labels alone. Being out of the layout changes nothing
    else about a label (it is drawn as before)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = fig.get_layout_engine()
    if engine is not None:
        resting = [t for col in columns for k in sorted(set(range(len(col))) - _bounding(col, fig)) for t in [col[k]]]
        for t in resting:
            t.set_in_layout(False)
        # Lay the figure out once here, then save it without an engine: savefig would otherwise draw it twice
        # (a draw with rendering disabled to run the layout, then the real one). Same positions, same pixels.
        engine.execute(fig)
        fig.set_layout_engine(None)
    # zlib level 3 instead of Pillow's 6: the same pixels, about a third less encoding time, files ~2.5% larger
    fig.savefig(path, dpi=DPI, format="png", facecolor="white", pil_kwargs={"compress_level": PNG_COMPRESS_LEVEL})
    return path


def _scores(value: Any, name: str, where: str) -> tuple[np.ndarray, int]:
    """Return the finite values of a 1-D score array and the number of NaN (missing) ones dropped."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"The {name!r} parameter of {where} must be a 1-D array of numbers. Got {type(value).__name__} instead."
        ) from exc
    if arr.ndim != 1:
        raise InputError(f"The {name!r} parameter of {where} must be a 1-D array. Got shape {arr.shape} instead.")
    if np.isinf(arr).any():
        raise InputError(f"The {name!r} parameter of {where} must not hold infinite values. Got {int(np.isinf(arr).sum())} instead.")
    finite = arr[np.isfinite(arr)]
    if finite.size == 0:
        raise InputError(
            f"The {name!r} parameter of {where} must hold at least one non-missing score. Got {arr.size} value(s), none finite, instead."
        )
    return finite, int(arr.size - finite.size)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# ----------------------------------------------------------------------------- Figure 1

_KDE_EXACT_MAX = 20_000


def _kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Gaussian KDE with Scott's bandwidth evaluated on ``grid``.

    Up to 20,000 values this is :class:`scipy.stats.gaussian_kde`. Above, the kernel
    sum runs over the distinct values weighted by their counts (exact), or, when there
    are more than 4,096 distinct values, over the centres of 4,096 equal bins (each
    value moves at most half a bin), always with the bandwidth scipy uses for the raw
    data, ``h = sd(values, ddof=1) * n**(-1/5)``, so the cost stops growing with ``n``.
    """
    if values.size <= _KDE_EXACT_MAX:
        return gaussian_kde(values)(grid)
    h = float(np.std(values, ddof=1)) * float(values.size) ** (-0.2)
    centres, counts = np.unique(values, return_counts=True)
    if centres.size > 4096:
        counts, edges = np.histogram(values, bins=4096)
        keep = counts > 0
        centres, counts = 0.5 * (edges[:-1] + edges[1:])[keep], counts[keep]
    weights = counts / values.size
    return (norm.pdf((grid[:, None] - centres[None, :]) / h) @ weights) / h


@_with_fonts
@validate_params(exempt=AT_A_POINT)
def plot_score_kde(
    original: Any,
    certified: Any,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    shrunk: Any | None = None,
    alpha: float | None = None,
    sigma: float | None = None,
) -> Path:
    """Draw the densities of per-item scores before and after the transformation (paper Figure 1).

    Each score vector gets a Gaussian kernel density estimate
    (:class:`scipy.stats.gaussian_kde`, Scott's bandwidth) on one common x-range.
    A vector whose finite values are all equal (or that has a single value) has no
    density estimate; it is drawn as a vertical line at that value and the legend says so.

    Parameters
    ----------
    original : array_like, shape (n,)
        Per-item scores before the mechanism, ``f(D)``. NaN marks a missing judgment:
        it is dropped and its count shown in the legend.
    certified : array_like, shape (n,)
        Per-item certified scores ``M(D) = g(f(D)) + Z``.
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    title : str, optional
        Figure title; a default is used when omitted.
    shrunk : array_like, shape (n,), optional
        Scores after the Lipschitz shrinkage and before the noise, ``g(f(D))``.
    alpha, sigma : float, optional
        Shrinkage factor α in [0, 1] and noise standard deviation σ >= 0, appended to the title.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If a score vector is not 1-D, has no finite value or holds an infinity, or
        ``alpha``/``sigma`` is out of range.
    """
    where = "plot_score_kde"
    out = _check_path(path, where)
    title = _check_title(title, where)
    series: list[tuple[str, str, np.ndarray, int]] = []
    orig, orig_missing = _scores(original, "original", where)
    series.append(("original", _ORIGINAL, orig, orig_missing))
    if shrunk is not None:
        shr, shr_missing = _scores(shrunk, "shrunk", where)
        series.append(("shrunk (before noise)", _SHRUNK, shr, shr_missing))
    cert, cert_missing = _scores(certified, "certified", where)
    series.append(("certified", _CERTIFIED, cert, cert_missing))
    if alpha is not None:
        alpha = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)
    if sigma is not None:
        sigma = check_in_range(sigma, "sigma", where, **bounds("sigma"))

    lo = min(float(s.min()) for _, _, s, _ in series)
    hi = max(float(s.max()) for _, _, s, _ in series)
    span = hi - lo if hi > lo else 1.0
    grid = np.linspace(lo - 0.12 * span, hi + 0.12 * span, 600)

    # When the transformed scores occupy a small part of the range (strong shrinkage),
    # a second panel zooms on them so that their shape stays visible.
    after = [v for name, _, v, _ in series if name != "original"]
    a_lo = min(float(v.min()) for v in after)
    a_hi = max(float(v.max()) for v in after)
    zoom = hi > lo and 0.0 < a_hi - a_lo < 0.25 * (hi - lo)

    fig = _new_figure(8.0, 5.8 if zoom else 4.8)
    if zoom:
        ax, ax_zoom = fig.subplots(2, 1, height_ratios=[1.0, 0.8])
    else:
        ax, ax_zoom = fig.add_subplot(), None
    a_span = a_hi - a_lo
    zoom_grid = np.linspace(a_lo - 0.12 * a_span, a_hi + 0.12 * a_span, 600)
    for k, (name, colour, values, missing) in enumerate(series):
        label = f"{name} (n = {values.size}, mean {_fmt(float(values.mean()))}"
        label += f", {missing} missing)" if missing else ")"
        for axis, g in ((ax, grid), (ax_zoom, zoom_grid)):
            if axis is None or (axis is ax_zoom and name == "original"):
                continue
            if values.size < 2 or float(np.ptp(values)) == 0.0:
                # No density exists; draw the point mass. Widths and dashes differ so coinciding lines stay visible.
                axis.axvline(
                    float(values[0]), color=colour, lw=5.0 - 1.5 * k, ls=("-", "--", ":")[k], alpha=0.8,
                    label=f"{label}: all equal, no density",
                )
                continue
            density = _kde(values, g)
            axis.fill_between(g, density, color=colour, alpha=0.22, lw=0)
            axis.plot(g, density, color=colour, lw=2.0, label=label)
    ax.set_xlim(grid[0], grid[-1])
    ax.set_ylim(bottom=0.0)
    ax.set_xlabel("per-item score")
    ax.set_ylabel("density (Gaussian KDE)")
    if ax_zoom is not None:
        ax.axvspan(zoom_grid[0], zoom_grid[-1], color=_GREY, alpha=0.12, lw=0)
        ax_zoom.set_xlim(zoom_grid[0], zoom_grid[-1])
        ax_zoom.set_ylim(bottom=0.0)
        ax_zoom.set_xlabel("per-item score (zoom on the transformed scores, grey band above)")
        ax_zoom.set_ylabel("density (Gaussian KDE)")
        ax_zoom.grid(axis="x", alpha=0.3)
        ax_zoom.spines[["top", "right"]].set_visible(False)
    heading = _wrap(_plain(title), 8.0) if title else "Judge scores before and after the bias-bounded transformation"
    params = []
    if alpha is not None:
        params.append(f"α = {_fmt(alpha)}")
    if sigma is not None:
        params.append(f"σ = {_fmt(sigma)}")
    if params:
        heading += "\n" + ", ".join(params)
    ax.set_title(heading)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, frameon=False, ncols=1)
    ax.grid(axis="x", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return _save(fig, out)


#: At most this many distinct values make a score vector discrete (drawn as bars, one per level).
DISCRETE_LEVELS: int = 12


def _share_bars(axis: Axes, values: np.ndarray, colour: str, label: str, *, width: float | None = None,
                annotate: bool = True, outline: bool = False) -> None:
    """Bars at each distinct value, height = share of items (%), labelled with the share."""
    levels, counts = np.unique(values, return_counts=True)
    share = 100.0 * counts / values.size
    if width is None:
        width = 0.8 * float(np.diff(levels).min()) if levels.size > 1 else 0.05 * max(abs(float(levels[0])), 1.0)
    if outline:
        bars = axis.bar(levels, share, width=width, fill=False, edgecolor=colour, lw=1.6, label=label)
    else:
        bars = axis.bar(levels, share, width=width, color=colour, alpha=0.75, edgecolor=colour, label=label)
    if annotate:
        axis.bar_label(bars, labels=[f"{x:.1f}%" for x in share], fontsize=7.5, padding=2)


def _share_hist(axis: Axes, values: np.ndarray, colour: str, label: str) -> None:
    """A histogram whose bar heights are the share of items (%) in each bin."""
    if float(np.ptp(values)) == 0.0:
        _share_bars(axis, values, colour, f"{label}: all equal")
        return
    edges = np.histogram_bin_edges(values, bins="auto")
    if edges.size > 61:
        edges = np.linspace(float(values.min()), float(values.max()), 61)
    counts, edges = np.histogram(values, bins=edges)
    label = f"{label}; bins of width {_fmt(float(edges[1] - edges[0]))}"
    axis.stairs(100.0 * counts / values.size, edges, fill=True, color=colour, alpha=0.35, label=label)
    axis.stairs(100.0 * counts / values.size, edges, color=colour, lw=1.2)


@validate_params(exempt=AT_A_POINT)
def plot_score_distribution(
    original: Any,
    certified: Any,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    shrunk: Any | None = None,
    alpha: float | None = None,
    sigma: float | None = None,
    unit: str = "item",
) -> Path:
    """Draw the per-item scores before and after the transformation as bars and histograms (paper Figure 1).

    Judge scores take few values (Arena-Hard's five verdict levels), so a density estimate
    would draw bumps that do not exist. The top panel shows the original scores: one bar per
    level with its share of items when there are at most :data:`DISCRETE_LEVELS` distinct values,
    else a histogram. The bottom panel zooms on the transformed scores: the shrunk scores (before
    noise, again discrete) as bars and the certified scores (continuous, the noise added) as a
    histogram. Every height is a share of items in percent.

    Parameters
    ----------
    original : array_like, shape (n,)
        Per-item scores before the mechanism, ``f(D)``. NaN marks a missing judgment: it is
        dropped and its count shown in the legend.
    certified : array_like, shape (n,)
        Per-item certified scores ``M(D)``.
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    title : str, optional
        Figure title; a default is used when omitted.
    shrunk : array_like, shape (n,), optional
        Scores after the shrinkage and before the noise, ``α f(D) + (1 − α)c``.
    alpha, sigma : float, optional
        Shrinkage factor α in [0, 1] and noise standard deviation σ >= 0, appended to the title.
    unit : {"item", "model"}
        What one score is: a per-item score (the model view), or a model's mean score (the leaderboard
        view, whose f(D) holds one mean per model); axis labels and shares say so.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If a score vector is not 1-D, has no finite value or holds an infinity, or
        ``alpha``/``sigma`` is out of range.
    """
    where = "plot_score_distribution"
    out = _check_path(path, where)
    title = _check_title(title, where)
    orig, orig_missing = _scores(original, "original", where)
    cert, cert_missing = _scores(certified, "certified", where)
    shr, shr_missing = (None, 0) if shrunk is None else _scores(shrunk, "shrunk", where)
    check_one_of(unit, "unit", where, ("item", "model"))
    score_txt = "per-item score" if unit == "item" else "model mean score"
    share_txt = "share of items (%)" if unit == "item" else "share of models (%)"
    if alpha is not None:
        alpha = check_in_range(alpha, "alpha", where, low=0.0, high=1.0)
    if sigma is not None:
        sigma = check_in_range(sigma, "sigma", where, **bounds("sigma"))

    def legend(name: str, values: np.ndarray, missing: int) -> str:
        text = f"{name} (n = {values.size}, mean {_fmt(float(values.mean()))}"
        return text + (f", {missing} missing)" if missing else ")")

    fig = _new_figure(8.0, 5.8)
    with _fonts():
        ax, ax2 = fig.subplots(2, 1)
        n_levels = np.unique(orig).size
        if n_levels <= DISCRETE_LEVELS:
            _share_bars(ax, orig, _ORIGINAL, legend(f"original, {n_levels} score levels", orig, orig_missing))
            ax.set_xticks(np.unique(orig), [_fmt(float(v)) for v in np.unique(orig)])
        else:
            _share_hist(ax, orig, _ORIGINAL, legend("original", orig, orig_missing))
        ax.set_xlabel(f"{score_txt} f(D)")
        ax.set_ylabel(share_txt)
        if shr is not None:
            if np.unique(shr).size <= DISCRETE_LEVELS:
                _share_bars(ax2, shr, _SHRUNK, legend("shrunk, before noise", shr, shr_missing), annotate=False,
                            outline=True)
            else:
                _share_hist(ax2, shr, _SHRUNK, legend("shrunk, before noise", shr, shr_missing))
        _share_hist(ax2, cert, _CERTIFIED, legend("certified, noise added", cert, cert_missing))
        ax2.set_xlabel(f"{score_txt} after the transformation (zoomed on its range)")
        ax2.set_ylabel(share_txt)
        for axis in (ax, ax2):
            axis.set_ylim(0.0, axis.get_ylim()[1] * 1.3)  # headroom for the legend
            axis.grid(axis="y", alpha=0.3)
            axis.spines[["top", "right"]].set_visible(False)
            axis.legend(loc="upper left", fontsize=8, frameon=False)
        heading = _wrap(_plain(title), 8.0) if title else "Judge scores before and after the bias-bounded transformation"
        params = [f"α = {_fmt(alpha)}" if alpha is not None else "", f"σ = {_fmt(sigma)}" if sigma is not None else ""]
        params = [p for p in params if p]
        if params:
            heading += "\n" + ", ".join(params)
        ax.set_title(heading)
        return _save(fig, out)


# ----------------------------------------------------------------------------- Figure 2


def _check_leaderboard(leaderboard: Any, where: str) -> pd.DataFrame:
    if not isinstance(leaderboard, pd.DataFrame):
        raise TypeError(f"The 'leaderboard' parameter of {where} must be a pandas DataFrame. Got {type(leaderboard).__name__} instead.")
    missing = [c for c in LEADERBOARD_COLUMNS if c not in leaderboard.columns]
    if missing:
        raise InputError(
            f"The 'leaderboard' parameter of {where} must have the columns {', '.join(LEADERBOARD_COLUMNS)}. "
            f"Got it without {', '.join(missing)} instead."
        )
    if len(leaderboard) == 0:
        raise InputError(f"The 'leaderboard' parameter of {where} must hold at least one model. Got 0 rows instead.")
    if "judge" in leaderboard.columns and leaderboard["judge"].nunique(dropna=False) > 1:
        raise InputError(
            f"The 'leaderboard' parameter of {where} must hold one judge's rows. "
            f"Got {leaderboard['judge'].nunique(dropna=False)} judges instead; filter on the 'judge' column first."
        )
    frame = leaderboard.loc[:, list(LEADERBOARD_COLUMNS)].copy()
    for col in LEADERBOARD_COLUMNS[1:]:
        try:
            frame[col] = pd.to_numeric(frame[col], errors="raise").astype(float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"The 'leaderboard' parameter of {where} must have numeric values in column {col!r}.") from exc
    if np.isinf(frame[list(LEADERBOARD_COLUMNS[1:])].to_numpy()).any():
        raise InputError(f"The 'leaderboard' parameter of {where} must not hold infinite values. Got some instead.")
    frame["model"] = frame["model"].astype(str)
    return frame


def _rank_text(rank: float) -> str:
    return "–" if math.isnan(rank) else f"{rank:g}"


@_with_fonts
def plot_ranking(
    leaderboard: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    top: int | None = None,
    rows: tuple[int, int] | None = None,
) -> Path:
    """Draw the leaderboard before and after the transformation with 95% CIs (paper Figure 2).

    Models are rows, ordered by their original score (best at the top). The left
    panel shows the original mean score and its CI (blue), the right panel the
    certified mean score and its CI (vermilion) on its own x-range (shrinkage
    compresses the certified scores, which would look flat on the original's scale),
    so a rank change shows as a zigzag on the right; the right margin gives the rank
    before → after, coloured by the direction of the change. The figure height grows
    with the number of models (0.175 in per model); a long leaderboard is drawn one page at a
    time (``rows``, see :func:`pages`) so that each page prints at its natural size and its
    labels at 7.5-8 pt. Every page uses the x-ranges of the whole leaderboard, so pages compare.

    Parameters
    ----------
    leaderboard : pandas.DataFrame
        One judge's rows of ``leaderboard.csv``; needs :data:`LEADERBOARD_COLUMNS`.
        NaN scores, CIs or ranks are allowed: the missing part is not drawn and a
        missing rank shows as "–".
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    title : str, optional
        Figure title; a default is used when omitted.
    top : int, optional
        Draw only the ``top`` best models by original score (>= 1).
    rows : (int, int), optional
        Draw the models ranked ``start + 1`` to ``stop`` by original score (after ``top``), titled
        "models start+1–stop of n"; the axes keep the ranges of all models.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If a column is missing or non-numeric, there are no rows, rows of several
        judges are mixed, or ``top`` < 1.
    """
    where = "plot_ranking"
    out = _check_path(path, where)
    title = _check_title(title, where)
    frame = _check_leaderboard(leaderboard, where)
    if top is not None:
        top = check_int(top, "top", where, low=1)
    frame = frame.sort_values(["original", "rank_original"], ascending=[False, True], na_position="last", kind="stable")
    n_total = len(frame)
    if top is not None:
        frame = frame.head(top)
    start, stop = _check_rows(rows, len(frame), where)
    limits = {kind: frame[[kind, f"{kind}_lo", f"{kind}_hi"]].to_numpy().ravel() for kind in ("original", "certified")}
    n_shown = len(frame)
    frame = frame.iloc[start:stop]
    n = len(frame)
    y = np.arange(n, dtype=float)[::-1]  # best model at the top

    height = 1.3 + 0.175 * n
    fig = _new_figure(10.0, height)
    # not sharey: the right panel needs no y ticks at all (shared, it would build and lay out a hidden copy of each)
    ax_o, ax_c = fig.subplots(1, 2, gridspec_kw={"wspace": 0.04})
    for ax, kind, colour, marker in ((ax_o, "original", _ORIGINAL, "o"), (ax_c, "certified", _CERTIFIED, "D")):
        v = frame[kind].to_numpy()
        clo = frame[f"{kind}_lo"].to_numpy()
        chi = frame[f"{kind}_hi"].to_numpy()
        ok = np.isfinite(clo) & np.isfinite(chi)
        ax.hlines(y[ok], clo[ok], chi[ok], color=colour, lw=1.8, alpha=0.7)
        fin = np.isfinite(v)
        ax.plot(v[fin], y[fin], ls="none", marker=marker, ms=4.5, color=colour)
        # Each panel has its own x-range: the certified scores are shrunk toward the
        # center, and on the original's scale their spread and CIs would be invisible.
        vals = limits[kind]  # every page of a long leaderboard on the same scale
        vals = vals[np.isfinite(vals)]
        lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)
        span = hi - lo if hi > lo else max(abs(lo) * 0.1, 0.05)
        ax.set_xlim(lo - 0.06 * span, hi + 0.06 * span)
        # y=1.0 (where it goes anyway: no ticks on top, no y offset text) spares measuring every y tick label
        ax.set_title(f"{kind} mean score (95% CI)", fontsize=10, color=colour, loc="left", y=1.0)
        ax.set_xlabel("mean per-item score")
        ax.grid(axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(axis="x", labelsize=8)
    # the model names as texts beside tick marks (no tick objects: they were a large part of the page's CPU)
    _axis_labels(ax_o, "y", [_label(m) for m in frame["model"]], fontsize=8, positions=y, marks=True)
    ax_o.set_ylim(-0.7, n - 0.3)
    ax_c.set_ylim(-0.7, n - 0.3)
    ax_c.set_yticks([])

    # Rank before -> after in the right margin, coloured by the direction of the change.
    width = max(len(_rank_text(r)) for r in frame["rank_original"].to_numpy())
    rank_texts = []
    for yi, r0, r1 in zip(y, frame["rank_original"].to_numpy(), frame["rank_certified"].to_numpy()):
        if math.isnan(r0) or math.isnan(r1):
            colour = _GREY
        else:
            colour = "#1a9641" if r1 < r0 else ("#c0392b" if r1 > r0 else "#333333")
        rank_texts.append(ax_c.annotate(
            f"{_rank_text(r0):>{width}} → {_rank_text(r1)}",
            xy=(1.0, yi),
            xycoords=("axes fraction", "data"),
            xytext=(6, 0),
            textcoords="offset points",
            va="center",
            ha="left",
            fontsize=7.5,
            color=colour,
            family="monospace",
        ))
    ax_c.annotate(
        "rank\nbefore → after",
        xy=(1.0, 1.0),
        xycoords="axes fraction",
        xytext=(6, 4),
        textcoords="offset points",
        va="bottom",
        ha="left",
        fontsize=7.5,
    )
    heading = _plain(title) if title else "Leaderboard before and after the bias-bounded transformation"
    if n_shown < n_total:
        heading += f" (top {n_shown} of {n_total})"
    heading += _part(start, stop, n_shown, "models")
    fig.suptitle(_wrap(heading, 10.0), x=0.02, ha="left")
    return _save(fig, out, columns=[rank_texts])


# ----------------------------------------------------------------------------- sensitivity


def _optional_float(entry: Mapping[str, Any], key: str, name: str, where: str) -> float:
    value = entry.get(key)
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"The 'generators' parameter of {where} must give {name}[{key!r}] as a number. Got {type(value).__name__} instead.")
    value = float(value)
    if math.isinf(value) or value < 0:
        raise InputError(f"The 'generators' parameter of {where} must give {name}[{key!r}] in [0, inf). Got {value!r} instead.")
    return value


@_with_fonts
def plot_sensitivity(
    generators: Mapping[str, Mapping[str, Any]],
    path: str | os.PathLike[str],
    *,
    used: float | None = None,
    max_distance: float | None = None,
    bound_used: str | None = None,
    title: str | None = None,
) -> Path:
    """Draw the RMS sensitivity Δ* measured for each neighbour generator.

    One bar per generator at its point estimate Δ* (Definition 3.4); when an upper
    confidence bound is present a black whisker runs from Δ* up to the UCB. Δ*, the
    UCB and the number of neighbours ``m`` are written under each bar. The reference lines are
    quantities on the same axis: ``used``, the sensitivity the calibration used (the combined
    upper bound), and ``max_distance``, the largest distance one neighbour can move the scores
    (R√k for a Hamming-k neighbour on a score range R). The tolerance τ is deliberately not
    drawn: it bounds ‖M(D) − M(D′)‖ of the *certified* scores, not Δ*, which may exceed it.

    Parameters
    ----------
    generators : Mapping[str, Mapping[str, float]]
        Generator name → ``{"delta_star": float, "ucb": float | None, "m": int | None}``
        (the certificate's ``generators`` field). A NaN/None ``delta_star`` is drawn as "n/a".
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    used : float, optional
        The sensitivity the calibration used (>= 0).
    max_distance : float, optional
        The deterministic bound on ‖f(D) − f(D′)‖₂ for one neighbour (> 0).
    bound_used : str, optional
        The certificate's ``bound_used``; with ``"deterministic"`` the legend says the calibration
        rests on ``max_distance`` (and ``used`` is only the measured bound), otherwise on ``used``.
    title : str, optional
        Figure title; a default is used when omitted.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If ``generators`` is empty or a value is negative or infinite.
    """
    where = "plot_sensitivity"
    out = _check_path(path, where)
    title = _check_title(title, where)
    if not isinstance(generators, Mapping):
        raise TypeError(f"The 'generators' parameter of {where} must be a mapping of name to dict. Got {type(generators).__name__} instead.")
    if len(generators) == 0:
        raise InputError(f"The 'generators' parameter of {where} must hold at least one generator. Got 0 instead.")
    if used is not None:
        used = check_in_range(used, "used", where, low=0.0)
    if max_distance is not None:
        max_distance = check_in_range(max_distance, "max_distance", where, low=0.0, low_open=True)
    names: list[str] = []
    deltas: list[float] = []
    ucbs: list[float] = []
    ms: list[int | None] = []
    for name, entry in generators.items():
        if not isinstance(entry, Mapping):
            raise TypeError(f"The 'generators' parameter of {where} must map {name!r} to a dict. Got {type(entry).__name__} instead.")
        names.append(str(name))
        deltas.append(_optional_float(entry, "delta_star", str(name), where))
        ucbs.append(_optional_float(entry, "ucb", str(name), where))
        m = entry.get("m")
        ms.append(None if m is None else check_int(m, f"generators[{name!r}]['m']", where, low=0))

    d = np.asarray(deltas)
    u = np.asarray(ucbs)
    x = np.arange(len(names), dtype=float)
    tops = np.fmax(d, u)
    candidates = [v for v in [*tops[np.isfinite(tops)], used, max_distance] if v is not None]
    ymax = max(candidates) if candidates else 1.0
    ymax = ymax if ymax > 0 else 1.0

    # Labels stay horizontal (name, Δ*, UCB, m on separate lines); each bar gets room for its longest line.
    tick_labels = [_label(nm, 24) for nm in names]
    longest = max(len(t) for t in tick_labels)
    # At most the printable width (PRINT_SIZE_IN): the figure then prints at its natural size, labels at 8-8.5 pt.
    fig_w = min(PRINT_SIZE_IN[0], max(5.0, 1.4 + len(names) * max(1.3, 0.07 * max(longest, 22))))
    fig = _new_figure(fig_w, 4.8)
    ax = fig.add_subplot()
    fin = np.isfinite(d)
    ax.bar(x[fin], d[fin], width=0.6, color=_ORIGINAL, alpha=0.85, label="Δ* (RMS sensitivity, point estimate)")
    has_ucb = np.isfinite(u)
    if has_ucb.any():
        base = np.where(fin, d, 0.0)
        ax.vlines(x[has_ucb], base[has_ucb], u[has_ucb], color="black", lw=1.5)
        ax.plot(x[has_ucb], u[has_ucb], ls="none", marker="_", ms=18, mew=2, color="black", label="upper confidence bound")
    for xi, di in zip(x, d):
        if not math.isfinite(di):
            ax.annotate("Δ* n/a", xy=(xi, 0.0), xytext=(0, 4), textcoords="offset points", ha="center", va="bottom", fontsize=8)
    deterministic = bound_used == "deterministic"
    if used is not None:
        ax.axhline(used, color=_CERTIFIED, ls="--", lw=1.4,
                   label=(f"combined Δ* bound: {used:.3g}" + ("" if deterministic else " (used by the calibration)")))
    if max_distance is not None:
        ax.axhline(max_distance, color=_GREY, ls=":", lw=1.4,
                   label=(f"largest move of one neighbour, R√k: {max_distance:.3g}"
                          + (" (used by the deterministic bound)" if deterministic else "")))
    details = []
    for di, ui, m in zip(d, u, ms):
        line = f"Δ* {di:.3g}" if math.isfinite(di) else "Δ* n/a"
        if math.isfinite(ui):
            line += f", UCB {ui:.3g}"
        details.append(line + ("" if m is None else f"\nm = {m}"))
    ax.set_xticks(x, [f"{t}\n{dt}" for t, dt in zip(tick_labels, details)], fontsize=8.5)
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(0.0, ymax * 1.3)
    ax.set_ylabel("‖f(D) − f(D′)‖₂, RMS over neighbours")
    fig.suptitle(_wrap(_plain(title) if title else "Measured judge sensitivity per neighbour generator", fig_w))
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, frameon=False, ncols=1)
    ax.grid(axis="y", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)
    return _save(fig, out)


# ----------------------------------------------------------------------------- Figure 4


def _retention_frame(table: Any, metrics: Sequence[str] | None, where: str) -> tuple[pd.DataFrame, list[str]]:
    """The checked (judge, setting, metrics...) frame of :func:`plot_judge_retention` and the metrics drawn."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"The 'table' parameter of {where} must be a pandas DataFrame. Got {type(table).__name__} instead.")
    for col in ("judge", "setting"):
        if col not in table.columns:
            raise InputError(f"The 'table' parameter of {where} must have a {col!r} column. Got columns {list(table.columns)} instead.")
    if len(table) == 0:
        raise InputError(f"The 'table' parameter of {where} must hold at least one row. Got 0 rows instead.")
    metrics = _retention_metrics(table, metrics, where)
    if table.duplicated(["judge", "setting"]).any():
        raise InputError(f"The 'table' parameter of {where} must have unique (judge, setting) pairs. Got repeated pairs instead.")
    frame = table.loc[:, ["judge", "setting", *metrics]].copy()
    frame["judge"] = frame["judge"].astype(str)
    frame["setting"] = frame["setting"].astype(str)
    for m in metrics:
        try:
            frame[m] = pd.to_numeric(frame[m], errors="raise").astype(float)
        except (TypeError, ValueError) as exc:
            raise InputError(f"The 'table' parameter of {where} must have numeric values in column {m!r}.") from exc
        v = frame[m].to_numpy()
        bad = np.isinf(v) | (np.abs(np.nan_to_num(v)) > 1.0 + 1e-9)
        if bad.any():
            raise InputError(f"The 'table' parameter of {where} must have {m!r} values in [-1, 1] (or NaN). Got {v[bad][0]!r} instead.")
    return frame, metrics


def _retention_metrics(table: pd.DataFrame, metrics: Sequence[str] | None, where: str) -> list[str]:
    """The metrics :func:`plot_judge_retention` draws: the ones asked for, or every metric column present."""
    if metrics is None:
        found = [m for m in RETENTION_METRICS if m in table.columns]
        if not found:
            raise InputError(
                f"The 'table' parameter of {where} must have at least one of the columns {', '.join(RETENTION_METRICS)}. "
                f"Got columns {list(table.columns)} instead."
            )
        return found
    chosen = list(metrics)
    for m in chosen:
        check_one_of(m, "metrics", where, tuple(RETENTION_METRICS))
        if m not in table.columns:
            raise InputError(f"The 'table' parameter of {where} must have a {m!r} column. Got columns {list(table.columns)} instead.")
    if not chosen:
        raise InputError(f"The 'metrics' parameter of {where} must name at least one metric. Got none instead.")
    return chosen


def _retention_panel(ax: Axes, lookup: pd.DataFrame, metric: str, judges: list[str], settings: list[str],
                     ymin: float) -> None:
    """One metric's panel of :func:`plot_judge_retention`: a bar per (judge, setting), each labelled with its value."""
    values = lookup[metric]
    width = 0.8 / len(settings)
    x = np.arange(len(judges), dtype=float)
    small = len(settings) * len(judges)
    for k, setting in enumerate(settings):
        xs = x - 0.4 + width * (k + 0.5)
        vals = np.array([values.get((j, setting), math.nan) for j in judges], dtype=float)
        fin = np.isfinite(vals)
        ax.bar(xs[fin], vals[fin], width=width * 0.92, color=_SETTING_COLOURS[k % len(_SETTING_COLOURS)], label=_plain(setting))
        for xi, vi, pair_present in zip(xs, vals, [(j, setting) in values.index for j in judges]):
            if not pair_present:
                continue
            ypos = vi if math.isfinite(vi) else 0.0
            ax.annotate(
                "n/a" if not math.isfinite(vi) else f"{vi:.2f}",
                xy=(xi, ypos),
                xytext=(0, 2 if ypos >= 0 else -2),
                textcoords="offset points",
                ha="center",
                va="bottom" if ypos >= 0 else "top",
                fontsize=7 if small > 8 else 8,
                rotation=90 if small > 12 else 0,
            )
    ax.axhline(0.0, color="black", lw=0.8)
    tick_labels = [_label(j, 20) for j in judges]
    rotation, ha = _tick_rotation(tick_labels, len(judges) * max(1, len(settings) // 2))
    ax.set_xticks(x, tick_labels, rotation=rotation, ha=ha)
    ax.set_title(RETENTION_METRICS[metric])
    ax.set_ylim(ymin, 1.15)
    ax.grid(axis="y", alpha=0.3)
    ax.spines[["top", "right"]].set_visible(False)


@_with_fonts
def plot_judge_retention(
    table: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    metrics: Sequence[str] | None = None,
) -> Path:
    """Draw how much of the original ranking each judge keeps (paper Figure 4).

    One panel per retention metric (Spearman ρ, Kendall τ_b, Pearson r between the
    original and the certified model scores), judges on the x-axis and one bar per
    setting (e.g. calibration ``paper``/``tight`` or combination ``max``/``rms``),
    each bar labelled with its value. A NaN value is written "n/a" with no bar.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``judge``, ``setting`` and at least one of :data:`RETENTION_METRICS`.
        (judge, setting) pairs must be unique.
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    title : str, optional
        Figure title; a default is used when omitted.
    metrics : Sequence[str], optional
        Which metrics to draw, in order; default every metric column present.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If a column is missing, a metric is unknown or outside [-1, 1], or a
        (judge, setting) pair repeats.
    """
    where = "plot_judge_retention"
    out = _check_path(path, where)
    title = _check_title(title, where)
    frame, metrics = _retention_frame(table, metrics, where)
    judges = list(dict.fromkeys(frame["judge"]))
    settings = list(dict.fromkeys(frame["setting"]))
    allv = frame[metrics].to_numpy()
    ymin = min(0.0, float(np.nanmin(allv)) - 0.1) if np.isfinite(allv).any() else 0.0

    panel_w = max(3.2, 0.9 + 0.55 * len(judges) * len(settings))
    fig_w = min(PRINT_SIZE_IN[0], panel_w * len(metrics))  # prints at its natural size: labels stay >= 7 pt
    fig = _new_figure(fig_w, 4.6)
    axes: list[Axes] = list(np.atleast_1d(fig.subplots(1, len(metrics), sharey=True, squeeze=False)[0]))
    lookup = frame.set_index(["judge", "setting"])
    for ax, metric in zip(axes, metrics):
        _retention_panel(ax, lookup, metric, judges, settings, ymin)
    axes[0].set_ylabel("correlation with the original model scores")
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncols=min(len(settings), 6), fontsize=8, frameon=False,
                   title="setting", title_fontsize=8)
    fig.suptitle(_wrap(_plain(title) if title else "Ranking retained after the bias-bounded transformation, per judge", fig_w))
    return _save(fig, out)


# ----------------------------------------------------------------------------- planning


@_with_fonts
def plot_calibration_tradeoff(
    taus: Any,
    alphas: Any,
    sigmas: Any,
    path: str | os.PathLike[str],
    *,
    tau_marked: float | None = None,
    title: str | None = None,
) -> Path:
    """Draw the shrinkage α and the noise σ a calibration gives as the tolerance τ varies.

    A planning plot: the caller runs the calibration over a grid of τ values (keeping
    δ, the sensitivity and the dimension fixed) and passes the results here. α (spread
    kept) is on the left axis, σ (noise per item) on the right axis.

    Parameters
    ----------
    taus : array_like, shape (k,)
        Tolerances τ > 0, strictly increasing.
    alphas : array_like, shape (k,)
        The α in [0, 1] for each τ (NaN where the calibration was infeasible: not drawn).
    sigmas : array_like, shape (k,)
        The σ >= 0 for each τ (NaN where infeasible).
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    tau_marked : float, optional
        A τ to mark with a vertical line (e.g. the certified one).
    title : str, optional
        Figure title; a default is used when omitted.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InputError
        If the arrays differ in length, ``taus`` is not positive and increasing, or a
        value is out of range.
    """
    where = "plot_calibration_tradeoff"
    out = _check_path(path, where)
    title = _check_title(title, where)
    t = check_finite_array(taus, "taus", where, ndim=1, min_size=2)
    if (t <= 0).any() or (np.diff(t) <= 0).any():
        raise InputError(f"The 'taus' parameter of {where} must be positive and strictly increasing. Got {t.tolist()!r} instead.")
    a = np.asarray(alphas, dtype=float)
    s = np.asarray(sigmas, dtype=float)
    for name, arr in (("alphas", a), ("sigmas", s)):
        if arr.shape != t.shape:
            raise InputError(f"The {name!r} parameter of {where} must have the shape of 'taus' {t.shape}. Got {arr.shape} instead.")
        if np.isinf(arr).any() or (np.nan_to_num(arr) < 0).any():
            raise InputError(f"The {name!r} parameter of {where} must hold values in [0, inf) or NaN. Got {arr.tolist()!r} instead.")
    if (np.nan_to_num(a) > 1).any():
        raise InputError(f"The 'alphas' parameter of {where} must hold values in [0, 1] or NaN. Got {a.tolist()!r} instead.")
    if tau_marked is not None:
        tau_marked = check_in_range(tau_marked, "tau_marked", where, low=0.0, low_open=True)

    fig = _new_figure(7.0, 4.2)
    ax = fig.add_subplot()
    ax2 = ax.twinx()
    ax.plot(t, a, color=_ORIGINAL, marker="o", ms=3, lw=2, label="α (spread kept)")
    ax2.plot(t, s, color=_CERTIFIED, marker="s", ms=3, lw=2, label="σ (noise std per item)")
    if tau_marked is not None:
        ax.axvline(tau_marked, color=_GREY, ls="--", lw=1, label=f"τ = {tau_marked:.3g}")
    ax.set_xlabel("tolerance τ")
    ax.set_ylabel("α (spread kept)", color=_ORIGINAL)
    ax2.set_ylabel("σ (noise std per item)", color=_CERTIFIED)
    ax.set_ylim(0.0, 1.05)
    ax2.set_ylim(bottom=0.0)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="upper left", fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    ax.set_title(_wrap(_plain(title), 7.0) if title else "What each tolerance τ costs: shrinkage and noise")
    return _save(fig, out)


@_with_fonts
def plot_frontier(
    frontiers: Mapping[str, Sequence[Mapping[str, float]]],
    path: str | os.PathLike[str],
    *,
    point: tuple[float, float] | None = None,
    title: str | None = None,
) -> Path:
    """Draw feasible frontiers ``alpha*(sigma)``: the largest shrinkage that certifies ``(tau, delta)`` at each noise.

    Every point on or below a curve is certified by that bound; the area between two curves is what the
    better bound (more knowledge, or the exact worst case instead of Cor. 3.2) buys.

    Parameters
    ----------
    frontiers : Mapping[str, Sequence[Mapping[str, float]]]
        Label → ``[{"sigma": s, "alpha": a}, ...]`` (``BoundCalibration.frontier`` or
        :func:`biasbound.calibration.frontier`); ``alpha = 0`` where nothing is feasible.
    path : str or os.PathLike
        Where to write the PNG (parent folders are created).
    point : (sigma, alpha), optional
        The point the calibration chose, marked.
    title : str, optional
        Figure title; a default is used when omitted.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    where = "plot_frontier"
    out = _check_path(path, where)
    title = _check_title(title, where)
    if not isinstance(frontiers, Mapping) or len(frontiers) == 0:
        raise InputError(f"The 'frontiers' parameter of {where} must map at least one label to frontier points. Got none instead.")
    fig = _new_figure(6.4, 4.4)
    ax = fig.add_subplot()
    for i, (label, pts) in enumerate(frontiers.items()):
        s = check_finite_array([float(p["sigma"]) for p in pts], f"frontiers[{label!r}].sigma", where, ndim=1)
        a = check_finite_array([float(p["alpha"]) for p in pts], f"frontiers[{label!r}].alpha", where, ndim=1)
        ax.plot(s, a, marker="o", ms=3, lw=1.6, color=_SETTING_COLOURS[i % len(_SETTING_COLOURS)], label=_label(label))
    if point is not None:
        ax.plot([point[0]], [point[1]], ls="none", marker="*", ms=13, color="black", label="chosen point")
    ax.set_xlabel("noise σ per score")
    ax.set_ylabel("largest certified shrinkage α*(σ)")
    ax.set_ylim(0.0, 1.05)
    ax.set_xlim(left=0.0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(_wrap(_plain(title), 6.4) if title else "Feasible frontier: shrinkage α against noise σ")
    return _save(fig, out)


@_with_fonts
def plot_bias_radius(
    judges: Mapping[str, Sequence[Mapping[str, Any]]],
    path: str | os.PathLike[str],
    *,
    deltas: Sequence[float] = (0.01, 0.05, 0.1),
    title: str | None = None,
    rows: tuple[int, int] | None = None,
) -> Path:
    """Compare judges by their bias radius: one row per judge, the radius at a few δ.

    The bias radius at δ is the smallest τ for which the unshrunk, noiseless judge is
    (τ, δ)-bias-bounded under the certificate's neighbours (exact for a census, an upper
    confidence bound for a sample; ``None`` = unbounded, drawn at the right edge as ">").
    Judges are sorted by their radius at the first δ, then at the others.

    Parameters
    ----------
    judges : Mapping[str, Sequence[Mapping]]
        Judge → its radius curve ``[{"delta": d, "radius": r or None}, ...]`` (the certificate's
        ``bias_radius["curve"]``).
    path : str or os.PathLike
        Where to write the PNG.
    deltas : sequence of float
        The δ values shown (each must be on every curve).
    title : str, optional
        Figure title; a default is used when omitted.
    rows : (int, int), optional
        Draw rows ``start + 1`` to ``stop`` of the sorted order (one printed page, see :func:`pages`),
        titled "start+1–stop of n"; the x-axis keeps the range of all rows.

    Returns
    -------
    pathlib.Path
    """
    where = "plot_bias_radius"
    out = _check_path(path, where)
    title = _check_title(title, where)
    if not isinstance(judges, Mapping) or len(judges) == 0:
        raise InputError(f"The 'judges' parameter of {where} must map at least one judge to a radius curve. Got none instead.")
    table: dict[str, list[float]] = {}
    for name, curve in judges.items():
        by: dict[float, Any] = {float(p["delta"]): p.get("radius") for p in curve}
        missing = [d for d in deltas if float(d) not in by]
        if missing:
            raise InputError(f"The 'judges' parameter of {where} must give a radius at every delta {list(deltas)}; "
                             f"judge {name!r} lacks {missing}.")
        table[str(name)] = [float("inf") if by[float(d)] is None else float(by[float(d)]) for d in deltas]
    order = sorted(table, key=lambda n: (table[n], n))
    start, stop = _check_rows(rows, len(order), where)
    n_all, order = len(order), order[start:stop]
    finite = [v for vals in table.values() for v in vals if np.isfinite(v)]
    right = max(finite + [1e-12]) * 1.08
    fig = _new_figure(7.4, max(2.4, 0.17 * len(order) + 1.3))
    ax = fig.add_subplot()
    y = np.arange(len(order))
    markers = ("o", "s", "^", "D", "v")
    for k, d in enumerate(deltas):
        xs = np.array([table[n][k] for n in order])
        shown = np.where(np.isfinite(xs), xs, right)
        ax.plot(shown, y + (k - (len(deltas) - 1) / 2) * 0.18, ls="none", marker=markers[k % len(markers)], ms=4,
                color=_SETTING_COLOURS[k % len(_SETTING_COLOURS)], label=f"δ = {d:g}")
        for yy, x in zip(y, xs):
            if not np.isfinite(x):
                ax.annotate(">", (right, yy), fontsize=8, ha="left", va="center")
    _axis_labels(ax, "y", [_label(n) for n in order], fontsize=7 if len(order) > 30 else 9, marks=True)
    ax.invert_yaxis()
    ax.set_xlim(left=-0.03 * right, right=right * 1.04)
    ax.set_xlabel("bias radius: smallest τ with Pr[‖f(D) − f(D′)‖ > τ] ≤ δ")
    ax.grid(axis="x", alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=len(deltas), fontsize=8,
               frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    heading = (_plain(title) if title else "Judges compared by bias radius") + _part(start, stop, n_all, "")
    ax.set_title(_wrap(heading, 7.4), y=1.0)  # where it goes anyway; set, the y tick labels are not measured for it
    return _save(fig, out)


#: Colours of the pairwise order matrix (rank statements of the judge card).
_PAIR_CODES = (("S", "#2e7d32", "separated under the bias, question resampling and the noise"),
               ("B", "#9ccc65", "separated by the bootstrap only (Arena-Hard's separability)"),
               ("R", "#d32f2f", "order reversed when every item is perturbed (a bias alone)"),
               (".", "#eeeeee", "not separated"),
               ("=", "#ffffff", ""))


#: Most model columns one page of :func:`plot_rank_pairs` holds with 7 pt labels on A4 landscape.
_PAIR_COLUMNS = 76


def rank_pair_pages(n_models: int, path: str | os.PathLike[str]) -> list[tuple[tuple[int, int], tuple[int, int], Path]]:
    """The pages of :func:`plot_rank_pairs` for ``n_models`` models: ``[(rows, cols, path_k), ...]``.

    Rows are split into pages of :data:`PAGE_ROWS` models; up to 76 models every page shows every column,
    beyond that the columns are split the same way and only the blocks on or above the diagonal are drawn
    (the matrix is symmetric). The first page keeps ``path``, page k >= 2 is ``<stem>_p<k>.png``.
    """
    n_models = check_int(n_models, "n_models", "rank_pair_pages", low=2)
    p = Path(path)
    row_pages = [r for r, _ in pages(n_models, p)]
    col_pages = [(0, n_models)] if n_models <= _PAIR_COLUMNS else [c for c, _ in pages(n_models, p, _PAIR_COLUMNS // 2)]
    blocks = [(r, c) for r in row_pages for c in col_pages if c[1] > r[0]]
    return [(r, c, p if k == 0 else p.with_name(f"{p.stem}_p{k + 1}{p.suffix}")) for k, (r, c) in enumerate(blocks)]


@_with_fonts
def plot_rank_pairs(ranks: Mapping[str, Any], path: str | os.PathLike[str], *, title: str | None = None,
                    rows: tuple[int, int] | None = None, cols: tuple[int, int] | None = None) -> Path:
    """The judge card's pairwise order matrix: for every model pair, whether its order survives.

    Rows are labelled "rank. model", columns by rank (models best first). A matrix of many models is
    drawn one page at a time (``rows``, ``cols``; see :func:`rank_pair_pages`) so that its 7 pt labels
    print at 7 pt on A4 landscape.

    Parameters
    ----------
    ranks : Mapping
        The card's ``ranks`` (:func:`biasbound.card.rank_statements`): ``models`` (best first) and ``matrix``
        (row strings of ``S`` / ``B`` / ``R`` / ``.`` / ``=``) over the first ``matrix_models`` models (all when
        absent); ``pair_counts``, when present, counts every pair for the legend (the title then says so).
    path : str or os.PathLike
        Where to write the PNG.
    title : str, optional
        Figure title.
    rows, cols : (int, int), optional
        The models (positions ``start`` to ``stop - 1``, best first) drawn as rows and as columns; default all.
        The legend's pair counts are over the whole matrix (every pair, given ``pair_counts``).

    Returns
    -------
    pathlib.Path
    """
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    where = "plot_rank_pairs"
    out = _check_path(path, where)
    title = _check_title(title, where)
    all_models = list(ranks.get("models") or [])
    rows_ = list(ranks.get("matrix") or [])
    # a matrix capped at the best models (rank_statements' matrix_models): drawn for those, counted over every pair
    models = all_models[:int(ranks.get("matrix_models") or len(all_models))]
    if len(models) < 2 or len(rows_) != len(models) or any(len(r) != len(models) for r in rows_):
        raise InputError(f"The 'ranks' parameter of {where} must hold at least two models and a square 'matrix'. "
                         f"Got {len(models)} model(s) and {len(rows_)} row(s) instead.")
    index = {c: k for k, (c, _, _) in enumerate(_PAIR_CODES)}
    full = np.array([[index.get(ch, 3) for ch in r] for r in rows_])
    d = len(models)
    r0, r1 = _check_rows(rows, d, where)
    c0, c1 = _check_rows(cols, d, where)
    grid = full[r0:r1, c0:c1]
    cell = min(0.16, 7.9 / (c1 - c0))  # inches per model: 76 columns fill the printable width
    fs = 7.0
    label_w = 2.6
    fig = _new_figure(max(5.0, label_w + cell * (c1 - c0) + 0.3), 1.9 + max(cell * (r1 - r0), 1.2))
    ax = fig.add_subplot()
    ax.imshow(grid, cmap=ListedColormap([c for _, c, _ in _PAIR_CODES]), vmin=0, vmax=len(_PAIR_CODES) - 1,
              interpolation="nearest", aspect="auto")
    ax.set_xlabel("model (rank, best first)", fontsize=8)
    # labels without tick marks, as texts: a tick per label (two marks, a grid line, two texts) was most of the CPU
    _axis_labels(ax, "x", [str(k + 1) for k in range(c0, c1)], fontsize=fs, rotation=90.0)
    _axis_labels(ax, "y", [f"{k + 1}. {_label(models[k], 36)}" for k in range(r0, r1)], fontsize=fs)
    counts = {c: int(np.sum(full == k)) // 2 for c, k in index.items()}
    counts.update({c: int(n) for c, n in (ranks.get("pair_counts") or {}).items() if c in counts})  # every pair's
    handles = [Patch(facecolor=col, edgecolor="#999999", label=f"{lab} ({counts[c]} pairs)")
               for c, col, lab in _PAIR_CODES if lab]
    fig.legend(handles=handles, loc="outside lower center", ncol=2, fontsize=8, frameon=False)
    part = "" if (r0, r1, c0, c1) == (0, d, 0, d) else (
        f" (rows {r0 + 1}–{r1}" + ("" if (c0, c1) == (0, d) else f", columns {c0 + 1}–{c1}") + f" of {d})")
    if d < len(all_models):  # the legend counts every pair, the grid the best d models' pairs
        part += f"\nthe {d} best of {len(all_models)} models; legend: all {len(all_models) * (len(all_models) - 1) // 2} pairs"
    side = label_w + cell * (c1 - c0)
    heading = (_plain(title) if title else "Which model pairs keep their order (models best first)") + part
    # y=1.0 is where the title goes anyway (no ticks on top); set, it spares the search for top ticks, which with
    # the tick marks off (tick position "unknown") measures every x tick label three times per draw
    ax.set_title(_wrap(heading, side, 10.0), fontsize=10, y=1.0)
    return _save(fig, out)

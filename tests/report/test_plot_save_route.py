"""The plots' save route (layout once, one draw, zlib level 3) writes the same pixels as savefig's own two-draw route.

The PNG bytes differ from the old route's only by the compression level (:data:`plots.PNG_COMPRESS_LEVEL`), so
the tests compare the decoded images (size, mode and every pixel) and check the level separately."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from biasbound.report import plots
from biasbound.report.plots import (_CERTIFIED, _GREY, _ORIGINAL, _PAIR_CODES, DPI, _check_leaderboard, _check_path,
                                    _check_rows, _check_title, _label, _new_figure, _part, _plain, _rank_text, _save,
                                    _wrap)
from biasbound._exceptions import InputError


def _pixels(path: Path) -> tuple[tuple[int, int], str, bytes]:
    """A PNG's size, mode and decoded pixels: equal for two files that draw the same image."""
    with Image.open(path) as im:
        im.load()
        return im.size, im.mode, im.tobytes()


def _old_save(fig, path: Path, **_ignored) -> Path:
    """A plain copy of the route before: savefig lays out in a draw with rendering disabled, then draws again
    (measuring every label; the new route's ``columns`` are ignored)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png", facecolor="white")
    fig.clear()
    return path


@plots._with_fonts
def _old_plot_ranking(leaderboard, path, *, title=None, top=None, rows=None):
    """A plain copy of plot_ranking before: two panels sharing y (the right one's hidden ticks built and laid out)."""
    where = "plot_ranking"
    out = _check_path(path, where)
    title = _check_title(title, where)
    frame = _check_leaderboard(leaderboard, where)
    if top is not None:
        top = plots.check_int(top, "top", where, low=1)
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
    ax_o, ax_c = fig.subplots(1, 2, sharey=True, gridspec_kw={"wspace": 0.04})
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
        ax.set_title(f"{kind} mean score (95% CI)", fontsize=10, color=colour, loc="left")
        ax.set_xlabel("mean per-item score")
        ax.grid(axis="x", alpha=0.3)
        ax.spines[["top", "right"]].set_visible(False)
        ax.tick_params(axis="x", labelsize=8)
    ax_o.set_yticks(y, [_label(m) for m in frame["model"]], fontsize=8)
    ax_o.set_ylim(-0.7, n - 0.3)
    ax_c.tick_params(axis="y", left=False)

    # Rank before -> after in the right margin, coloured by the direction of the change.
    width = max(len(_rank_text(r)) for r in frame["rank_original"].to_numpy())
    for yi, r0, r1 in zip(y, frame["rank_original"].to_numpy(), frame["rank_certified"].to_numpy()):
        if math.isnan(r0) or math.isnan(r1):
            colour = _GREY
        else:
            colour = "#1a9641" if r1 < r0 else ("#c0392b" if r1 > r0 else "#333333")
        ax_c.annotate(
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
        )
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
    return _old_save(fig, out)


@plots._with_fonts
def _old_plot_rank_pairs(ranks, path, *, title=None, rows=None, cols=None):
    """A plain copy of plot_rank_pairs before: zero-length tick marks drawn."""
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
    ax.set_xticks(range(c1 - c0))
    ax.set_yticks(range(r1 - r0))
    ax.set_xticklabels([str(k + 1) for k in range(c0, c1)], rotation=90, fontsize=fs)
    ax.set_yticklabels([f"{k + 1}. {_label(models[k], 36)}" for k in range(r0, r1)], fontsize=fs)
    ax.set_xlabel("model (rank, best first)", fontsize=8)
    ax.tick_params(length=0)
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
    ax.set_title(_wrap(heading, side, 10.0), fontsize=10)
    return _old_save(fig, out)


def _random_figure(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 12))
    fig = _new_figure(6.0, 1.3 + 0.2 * n)
    ax_a, ax_b = fig.subplots(1, 2, sharey=True)
    y = np.arange(n, dtype=float)
    for ax in (ax_a, ax_b):
        v = rng.normal(size=n)
        ax.hlines(y, v - 0.3, v + 0.3)
        ax.plot(v, y, ls="none", marker="o")
        ax.set_xlabel("a label")
    ax_a.set_yticks(y, [f"model-{k}-{'x' * int(rng.integers(1, 20))}" for k in range(n)], fontsize=8)
    ax_b.annotate("rank", xy=(1.0, 1.0), xycoords="axes fraction", xytext=(6, 4), textcoords="offset points")
    fig.suptitle("a title " * int(rng.integers(1, 6)), x=0.02, ha="left")
    return fig


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_save_writes_the_bytes_of_the_two_draw_route(tmp_path: Path, seed: int) -> None:
    new = _save(_random_figure(seed), tmp_path / "new.png")
    old = _old_save(_random_figure(seed), tmp_path / "old.png")
    assert _pixels(new) == _pixels(old)


def test_plot_ranking_bytes_match_the_two_draw_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    n = 9
    orig = rng.uniform(0.2, 0.8, n)
    cert = 0.5 + 0.1 * (orig - 0.5)
    frame = pd.DataFrame({"model": [f"m{k}" for k in range(n)], "original": orig, "original_lo": orig - 0.02,
                          "original_hi": orig + 0.02, "certified": cert, "certified_lo": cert - 0.01,
                          "certified_hi": cert + 0.01, "rank_original": (-orig).argsort().argsort() + 1.0,
                          "rank_certified": (-cert).argsort().argsort() + 1.0})
    new = plots.plot_ranking(frame, tmp_path / "new.png")
    monkeypatch.setattr(plots, "_save", _old_save)
    old = plots.plot_ranking(frame, tmp_path / "old.png")
    assert _pixels(new) == _pixels(old)


@pytest.mark.parametrize("seed", [0, 1])
def test_plot_ranking_bytes_match_the_shared_axes_route(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 30))
    orig = np.round(rng.uniform(0.2, 0.8, n), 2)
    cert = 0.5 + 0.1 * (orig - 0.5)
    frame = pd.DataFrame({"model": [f"model-{k}" for k in range(n)], "original": orig, "original_lo": orig - 0.02,
                          "original_hi": orig + 0.02, "certified": cert, "certified_lo": cert - 0.01,
                          "certified_hi": cert + 0.01, "rank_original": (-orig).argsort().argsort() + 1.0,
                          "rank_certified": (-cert).argsort().argsort() + 1.0})
    frame.loc[frame.index[-1], ["certified", "certified_lo", "rank_certified"]] = np.nan  # a model not certified
    for rows in (None, (0, n // 2), (n // 2, n)):
        new = plots.plot_ranking(frame, tmp_path / "new.png", title="t", rows=rows)
        old = _old_plot_ranking(frame, tmp_path / "old.png", title="t", rows=rows)
        assert _pixels(new) == _pixels(old)


def test_plot_rank_pairs_bytes_match_the_tick_mark_route(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    d = 12
    m = np.triu(rng.integers(0, 4, (d, d)), 1)
    m = m + m.T
    ranks = {"models": [f"model-{k}" for k in range(d)],
             "matrix": ["".join("=" if i == j else "SBR."[m[i, j]] for j in range(d)) for i in range(d)]}
    for rows, cols in ((None, None), ((0, 6), (3, 12))):
        new = plots.plot_rank_pairs(ranks, tmp_path / "new.png", title="t", rows=rows, cols=cols)
        old = _old_plot_rank_pairs(ranks, tmp_path / "old.png", title="t", rows=rows, cols=cols)
        assert _pixels(new) == _pixels(old)


def test_save_compresses_at_the_stated_level(tmp_path: Path) -> None:
    """The file is the figure's pixels at PNG_COMPRESS_LEVEL: re-encoding the old route's image at that level gives it."""
    new = _save(_random_figure(4), tmp_path / "new.png")
    old = _old_save(_random_figure(4), tmp_path / "old.png")
    with Image.open(old) as im:
        again = tmp_path / "again.png"
        im.save(again, format="png", compress_level=plots.PNG_COMPRESS_LEVEL, dpi=im.info["dpi"])
    assert _pixels(new) == _pixels(old)
    assert new.read_bytes() != old.read_bytes()  # level 6 (Pillow's default) and level 3 write different streams
    assert len(new.read_bytes()) == pytest.approx(len(again.read_bytes()), rel=0.02)


@pytest.mark.parametrize("seed", [5, 6])
def test_layout_on_the_bounding_labels_places_every_label_as_with_all_measured(tmp_path: Path, seed: int) -> None:
    """Labels of random lengths, heights and descenders (the widest one anywhere in the column): the layout that
    measures only the bounding labels puts the axes where the one measuring all of them does, pixel for pixel."""
    rng = np.random.default_rng(seed)
    n = 30
    alphabet = list("abcdefghijklmnopqrstuvwxyzWMgjpqy()[]|_-.0123456789")
    names = ["".join(rng.choice(alphabet, int(rng.integers(1, 40)))) for _ in range(n)]
    d = 12
    m = np.triu(rng.integers(0, 4, (n, n)), 1)
    m = m + m.T
    ranks = {"models": names, "matrix": ["".join("=" if i == j else "SBR."[m[i, j]] for j in range(n)) for i in range(n)]}
    for rows, cols in ((None, None), ((3, 3 + d), (0, n))):
        new = plots.plot_rank_pairs(ranks, tmp_path / "new.png", title="t", rows=rows, cols=cols)
        old = _old_plot_rank_pairs(ranks, tmp_path / "old.png", title="t", rows=rows, cols=cols)
        assert _pixels(new) == _pixels(old)
    frame = pd.DataFrame({"model": names, "original": rng.uniform(0.2, 0.8, n)})
    for col in ("original_lo", "original_hi", "certified", "certified_lo", "certified_hi"):
        frame[col] = frame["original"] + rng.normal(0, 0.02, n)
    frame["rank_original"] = (-frame["original"]).argsort().argsort() + 1.0
    frame["rank_certified"] = rng.permutation(n) + 1.0
    frame.loc[3, "rank_certified"] = np.nan  # a "–" among the rank texts
    for rows in (None, (0, 15)):
        new = plots.plot_ranking(frame, tmp_path / "new.png", rows=rows)
        old = _old_plot_ranking(frame, tmp_path / "old.png", rows=rows)
        assert _pixels(new) == _pixels(old)


def test_bounding_picks_the_extremes() -> None:
    fig = _new_figure(3.0, 3.0)
    texts = [fig.text(0.5, 0.5, s, fontsize=8) for s in ("ab", "a", "WWWWWW", "ac", "l", "xg", "bb", "zz")]
    picked = plots._bounding(texts, fig)
    assert {0, 7, 2} <= picked  # first, last, widest
    assert 5 in picked  # the only label with a descender is the deepest
    assert len(picked) <= 5


@pytest.mark.parametrize("d", [3, 40])
def test_plot_rank_pairs_labels_as_texts_match_the_tick_route(tmp_path: Path, d: int) -> None:
    """The matrix's labels drawn as plain texts (no tick objects), with the axis label placed from their extents:
    the same pixels as ticks with zero-length marks, on a matrix narrower than its axis label (2-3 models), on one
    of many columns and with a name that runs below the baseline and above the cap height."""
    rng = np.random.default_rng(d)
    m = np.triu(rng.integers(0, 4, (d, d)), 1)
    m = m + m.T
    names = [f"model-{k}" + ("-gjpqy(ÅÉ)" if k == d // 2 else "") for k in range(d)]
    ranks = {"models": names, "matrix": ["".join("=" if i == j else "SBR."[m[i, j]] for j in range(d)) for i in range(d)]}
    for rows, cols in ((None, None), ((0, min(d, 7)), (d // 2, d))):
        new = plots.plot_rank_pairs(ranks, tmp_path / "new.png", title="t", rows=rows, cols=cols)
        old = _old_plot_rank_pairs(ranks, tmp_path / "old.png", title="t", rows=rows, cols=cols)
        assert _pixels(new) == _pixels(old)


def _tick_route(ax, axis, labels, *, fontsize, rotation=0.0, positions=None, marks=False):
    """The route `_axis_labels` replaces: matplotlib's ticks with these labels (zero-length unless ``marks``)."""
    at = list(range(len(labels))) if positions is None else list(positions)
    (ax.set_xticks if axis == "x" else ax.set_yticks)(at, labels, fontsize=fontsize, rotation=rotation)
    if not marks:
        ax.tick_params(axis=axis, length=0)
    return [t.label1 for t in (ax.xaxis if axis == "x" else ax.yaxis).get_major_ticks()]


@pytest.mark.parametrize("direction", ["out", "in", "inout"])
def test_labels_as_texts_match_the_tick_route_in_every_figure_that_uses_them(tmp_path: Path, direction: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaderboard page, bias-radius page (tick marks drawn as one line of markers, in each tick direction) and
    pairwise matrix: the same pixels as with matplotlib's tick objects."""
    import matplotlib

    rng = np.random.default_rng(11)
    n = 34  # > 30: the bias radius's small-label branch
    alphabet = list("abcdefghijklmnopqrstuvwxyzWMgjpqy()[]|_-.0123456789")
    names = ["".join(rng.choice(alphabet, int(rng.integers(1, 30)))) + f"{k}" for k in range(n)]
    frame = pd.DataFrame({"model": names, "original": rng.uniform(0.2, 0.8, n)})
    for col in ("original_lo", "original_hi", "certified", "certified_lo", "certified_hi"):
        frame[col] = frame["original"] + rng.normal(0, 0.02, n)
    frame["rank_original"] = (-frame["original"]).argsort().argsort() + 1.0
    frame["rank_certified"] = rng.permutation(n) + 1.0
    curves = {m: [{"delta": d, "radius": None if k % 7 == 0 else float(rng.uniform(0.01, 0.5))}
                  for d in (0.01, 0.05, 0.1)] for k, m in enumerate(names)}
    m = np.triu(rng.integers(0, 4, (n, n)), 1)
    m = m + m.T
    ranks = {"models": names, "matrix": ["".join("=" if i == j else "SBR."[m[i, j]] for j in range(n)) for i in range(n)]}
    draw = {"ranking": lambda p: plots.plot_ranking(frame, p, rows=(0, 20)),
            "radius": lambda p: plots.plot_bias_radius(curves, p),
            "pairs": lambda p: plots.plot_rank_pairs(ranks, p, rows=(5, 17), cols=(0, n))}
    with matplotlib.rc_context({"xtick.direction": direction, "ytick.direction": direction}):
        new = {k: f(tmp_path / f"new-{k}.png") for k, f in draw.items()}
        monkeypatch.setattr(plots, "_axis_labels", _tick_route)
        old = {k: f(tmp_path / f"old-{k}.png") for k, f in draw.items()}
    for k in draw:
        assert _pixels(new[k]) == _pixels(old[k]), k

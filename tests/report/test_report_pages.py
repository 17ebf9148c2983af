"""Long plots drawn one printed page at a time: the page split, the rows each page draws, the shared scale,
and bad ``rows`` refused with one sentence. Exact values; no randomness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound import InputError
from biasbound.report import plots
from biasbound.report.plots import pages, plot_bias_radius, plot_rank_pairs, plot_ranking, rank_pair_pages


def test_pages_split_evenly_and_name_the_files(tmp_path):
    got = pages(76, tmp_path / "ranking.png")
    assert [r for r, _ in got] == [(0, 25), (25, 51), (51, 76)]
    assert [p.name for _, p in got] == ["ranking.png", "ranking_p2.png", "ranking_p3.png"]
    assert pages(26, tmp_path / "r.png") == [((0, 26), tmp_path / "r.png")]
    assert [r for r, _ in pages(27, tmp_path / "r.png")] == [(0, 14), (14, 27)]
    assert [r for r, _ in pages(5, tmp_path / "r.png", per_page=2)] == [(0, 2), (2, 3), (3, 5)]


def test_rank_pair_pages_split_columns_only_beyond_76_models(tmp_path):
    assert [(r, c) for r, c, _ in rank_pair_pages(76, tmp_path / "p.png")] == [((0, 25), (0, 76)), ((25, 51), (0, 76)),
                                                                              ((51, 76), (0, 76))]
    blocks = [(r, c) for r, c, _ in rank_pair_pages(100, tmp_path / "p.png")]
    # 100 rows in 4 pages, columns in 3 groups of <= 38; only blocks reaching the diagonal or above
    assert blocks[0] == ((0, 25), (0, 33)) and ((75, 100), (0, 33)) not in blocks and ((75, 100), (67, 100)) in blocks
    covered = {(i, j) for (r0, r1), (c0, c1) in blocks for i in range(r0, r1) for j in range(c0, c1)}
    assert all((i, j) in covered for i in range(100) for j in range(i, 100))  # every pair once at least


@pytest.fixture
def saved(monkeypatch):
    """Each figure's axes limits and drawn texts, captured as it is saved."""
    figs: list[dict] = []
    save = plots._save

    def capture(fig, path, **kwargs):
        figs.append({"xlim": [ax.get_xlim() for ax in fig.axes],
                     # the row labels: texts left of the axes (right-aligned), where tick labels would be
                     "texts": [t.get_text() for ax in fig.axes for t in ax.texts if t.get_horizontalalignment() == "right"],
                     "title": fig._suptitle.get_text() if fig._suptitle else fig.axes[0].get_title()})
        return save(fig, path, **kwargs)

    monkeypatch.setattr(plots, "_save", capture)
    return figs


def _board(n: int) -> pd.DataFrame:
    orig = np.linspace(0.9, 0.1, n)
    cert = 0.5 + 0.1 * (orig - 0.5)
    return pd.DataFrame({"model": [f"m{k:02d}" for k in range(n)], "original": orig, "original_lo": orig - 0.02,
                         "original_hi": orig + 0.02, "certified": cert, "certified_lo": cert - 0.01,
                         "certified_hi": cert + 0.01, "rank_original": np.arange(1, n + 1),
                         "rank_certified": np.arange(1, n + 1)})


def test_ranking_pages_draw_their_rows_on_one_scale(tmp_path, saved):
    lb = _board(30)
    for rows, path in pages(len(lb), tmp_path / "ranking.png"):
        plot_ranking(lb, path, rows=rows)
    first, second = saved
    assert first["texts"] == [f"m{k:02d}" for k in range(15)] and second["texts"] == [f"m{k:02d}" for k in range(15, 30)]
    assert first["xlim"] == second["xlim"]  # the whole leaderboard's ranges on every page
    assert "(models 1–15 of 30)" in first["title"] and "(models 16–30 of 30)" in second["title"]
    plot_ranking(lb, tmp_path / "all.png")
    assert "of 30)" not in saved[-1]["title"]


def test_bias_radius_pages_keep_the_sorted_order(tmp_path, saved):
    curves = {f"m{k:02d}": [{"delta": d, "radius": 1.0 - k / 40} for d in (0.01, 0.05, 0.1)] for k in range(30)}
    for rows, path in pages(len(curves), tmp_path / "r.png"):
        plot_bias_radius(curves, path, rows=rows)
    # sorted by radius, smallest first: m29 has the smallest radius
    assert saved[0]["texts"] == [f"m{k:02d}" for k in range(29, 14, -1)]
    assert saved[1]["texts"] == [f"m{k:02d}" for k in range(14, -1, -1)]
    assert saved[0]["xlim"] == saved[1]["xlim"]


def test_rank_pairs_page_labels_rows_with_their_rank(tmp_path, saved):
    ranks = {"models": ["a", "b", "c"], "matrix": ["=SS", "S=.", "S.="]}
    plot_rank_pairs(ranks, tmp_path / "p.png", rows=(1, 3))
    assert saved[0]["texts"] == ["2. b", "3. c"] and "(rows 2–3 of 3)" in saved[0]["title"]


@pytest.mark.parametrize("rows", [(3, 2), (0, 31), (-1, 4)])
def test_bad_rows_are_one_sentence(tmp_path, rows):
    with pytest.raises(InputError, match="'rows"):
        plot_ranking(_board(30), tmp_path / "r.png", rows=rows)
    with pytest.raises(TypeError, match="'rows' parameter of plot_ranking must be a"):
        plot_ranking(_board(30), tmp_path / "r.png", rows=5)


@pytest.mark.slow  # end to end: every page of the demo's plots drawn (~8 s on a loaded machine)
def test_every_page_fits_the_printable_area(tmp_path):
    """Pages of long plots and wide bar charts stay within PRINT_SIZE_IN, so the report prints them 1:1."""
    from matplotlib import image

    d = 76
    ranks = {"models": [f"model-with-a-long-name-{k:02d}" for k in range(d)],
             "matrix": ["".join("=" if i == j else "S" for j in range(d)) for i in range(d)]}
    curves = {m: [{"delta": x, "radius": 0.5} for x in (0.01, 0.05, 0.1)] for m in ranks["models"]}
    gens = {n: {"delta_star": 0.1234, "ucb": 0.4567, "m": 1200}
            for n in ("swap", "format", "paraphrase", "schematic", "agreeable", "rerun")}
    table = pd.DataFrame([{"judge": f"judge-{j}", "setting": s, "spearman": 0.9, "kendall_tau_b": 0.8, "pearson": 0.9}
                          for j in range(8) for s in ("paper/max", "tight/max")])
    written = [plot_ranking(_board(d), p, rows=r) for r, p in pages(d, tmp_path / "ranking.png")]
    written += [plot_bias_radius(curves, p, rows=r) for r, p in pages(d, tmp_path / "radius.png")]
    written += [plot_rank_pairs(ranks, p, rows=r, cols=c) for r, c, p in rank_pair_pages(d, tmp_path / "pairs.png")]
    written += [plots.plot_sensitivity(gens, tmp_path / "sens.png", used=0.45, max_distance=1.0),
                plots.plot_judge_retention(table, tmp_path / "ret.png")]
    for path in written:
        h, w = image.imread(path).shape[:2]
        assert w / plots.DPI <= plots.PRINT_SIZE_IN[0] and h / plots.DPI <= plots.PRINT_SIZE_IN[1], (path.name, w, h)

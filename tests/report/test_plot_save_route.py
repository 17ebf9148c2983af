"""The plots' save route (layout once, one draw) writes the same bytes as savefig's own two-draw route."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.report import plots
from biasbound.report.plots import DPI, _new_figure, _save


def _old_save(fig, path: Path) -> Path:
    """A plain copy of the route before: savefig lays out in a draw with rendering disabled, then draws again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, format="png", facecolor="white")
    fig.clear()
    return path


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
    assert new.read_bytes() == old.read_bytes()


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
    assert new.read_bytes() == old.read_bytes()

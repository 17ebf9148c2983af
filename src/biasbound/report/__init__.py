"""Plots and the self-contained HTML report of a certification run.

The functions take plain numpy arrays, pandas DataFrames and dicts, so they do not
depend on the loaders or the leaderboard module.
"""

from __future__ import annotations

from biasbound.report.html import PNG_SIGNATURE, format_number, write_report
from biasbound.report.plots import (
    DISCRETE_LEVELS,
    DPI,
    FALLBACK_FONTS,
    LEADERBOARD_COLUMNS,
    RETENTION_METRICS,
    drawable,
    plot_calibration_tradeoff,
    plot_judge_retention,
    plot_ranking,
    plot_score_distribution,
    plot_score_kde,
    plot_sensitivity,
)

__all__ = [
    "DISCRETE_LEVELS",
    "DPI",
    "FALLBACK_FONTS",
    "LEADERBOARD_COLUMNS",
    "PNG_SIGNATURE",
    "RETENTION_METRICS",
    "drawable",
    "format_number",
    "plot_calibration_tradeoff",
    "plot_judge_retention",
    "plot_ranking",
    "plot_score_distribution",
    "plot_score_kde",
    "plot_sensitivity",
    "write_report",
]

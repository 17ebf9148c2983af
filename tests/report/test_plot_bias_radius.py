"""report.plots.plot_bias_radius: one row per judge, the radius at a few δ; bad input is one sentence."""

from __future__ import annotations

import pytest
from matplotlib import image

from biasbound import InputError
from biasbound.report.plots import plot_bias_radius


def test_writes_a_png_with_an_unbounded_radius_marked(tmp_path):
    curves = {"steady": [{"delta": 0.01, "radius": 0.0}, {"delta": 0.05, "radius": 0.0}, {"delta": 0.1, "radius": 0.0}],
              "flippy": [{"delta": 0.01, "radius": 1.0}, {"delta": 0.05, "radius": 1.0}, {"delta": 0.1, "radius": 0.5}],
              "sampled": [{"delta": 0.01, "radius": None}, {"delta": 0.05, "radius": 0.8}, {"delta": 0.1, "radius": 0.4}]}
    path = plot_bias_radius(curves, tmp_path / "r.png")
    img = image.imread(path)
    assert img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100


def test_a_curve_without_a_requested_delta_is_refused(tmp_path):
    with pytest.raises(InputError, match="lacks"):
        plot_bias_radius({"j": [{"delta": 0.01, "radius": 0.1}]}, tmp_path / "r.png")
    with pytest.raises(InputError, match="at least one judge"):
        plot_bias_radius({}, tmp_path / "r.png")

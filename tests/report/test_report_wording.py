"""report.html says what its folder's records say: the audit box from the audit record actually made (held out
or a recheck of the bound), the bias-radius caption from the certificate's knowledge, plot captions that are
sentences, and the printed width of each figure from its PNG. Exact values; no randomness."""

from __future__ import annotations

import math
import re
from html import unescape

import pandas as pd
from matplotlib import image

from biasbound.report.html import format_number, write_report
from biasbound.report.plots import DPI, plot_bias_radius, plot_frontier

LB = pd.DataFrame({"model": ["a", "b"], "original": [0.6, 0.4], "certified": [0.52, 0.48]})


def _text(path) -> str:
    html = re.sub(r"base64,[A-Za-z0-9+/=]+", "", path.read_text(encoding="utf-8"))
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _cert(**extra):
    return {"method": "paper", "tau": 0.5, "delta": 0.01, "alpha": 0.04, "sigma": 0.007, "dim": 500,
            "scope": {"judge": "j", "model": "*", "neighbors_audit": 0}, **extra}


def test_a_recheck_is_never_called_held_out(tmp_path):
    audit = {"pooled": {"verdict": "not contradictable", "exact_probability": 0.00998, "delta": 0.01, "kind": "bound",
                        "n_neighbors": 38000}}
    text = _text(write_report(tmp_path, title="t", summary={}, leaderboard=LB, certificates=[_cert()], retention=None,
                              plots={}, load_report=None, audit=audit))
    assert "Audit: the certificate's bound rechecked" in text and "Audit on held-out neighbours" not in text
    assert "recomputed from the 38000 recorded neighbours" in text and "On 38000 held-out" not in text
    assert "more than τ = 0.5 by 0.00998, against δ = 0.01" in text  # τ from the certificate: the record omits it
    audit["pooled"].pop("kind")  # the same numbers from held-out neighbours
    audit["pooled"]["tau"] = 0.5
    text = _text(write_report(tmp_path, title="t", summary={}, leaderboard=LB, certificates=[_cert()], retention=None,
                              plots={}, load_report=None, audit=audit))
    assert "Audit on held-out neighbours" in text and "On 38000 held-out neighbours" in text


def test_bias_radius_caption_states_the_moment_bound_and_its_cap(tmp_path):
    u2 = 0.1956
    cert = _cert(knowledge={"how": "max", "generators": {"swap": [{"kind": "moments", "U2": u2, "note": "max over models"}]}},
                 range={"A": 1.0}, bias_radius={"delta": 0.01, "radius": 1.0, "curve": []})
    curves = {m: [{"delta": d, "radius": 1.0} for d in (0.01, 0.05, 0.1)] for m in ("a", "b")}
    plots = {"bias_radius": plot_bias_radius(curves, tmp_path / "bias_radius.png"),
             "frontier": plot_frontier({"paper": [{"sigma": 0.0, "alpha": 0.08}, {"sigma": 0.01, "alpha": 0.0}]},
                                       tmp_path / "frontier.png")}
    models = [{"scope": {"model": m}} for m in ("a", "b")]
    path = write_report(tmp_path, title="t", summary={}, leaderboard=LB, certificates=[cert], retention=None,
                        plots=plots, load_report=None, audit=None, model_certificates=models)
    captions = [" ".join(unescape(c).split()) for c in
                re.findall(r"<figcaption>(.*?)</figcaption>", path.read_text(encoding="utf-8"), re.S)]
    radius, frontier = captions[0], captions[1]
    assert "one row per model" in radius
    for d in (0.01, 0.05, 0.1):  # √(U2/δ) = 4.423, 1.978, 1.399: each above A = 1, so every radius is 1
        assert f"{format_number(math.sqrt(u2 / d))} at δ = {format_number(d)}" in radius
    assert "every radius is 1" in radius and "(max over models)" in radius
    assert frontier.startswith("The feasible frontier α*(σ)") and "frontier" != frontier
    # each figure prints at its own width in inches (PNG width / DPI), so its labels keep their point size
    widths = re.findall(r'style="width: ([0-9.]+)in[;"]', path.read_text(encoding="utf-8"))
    assert [float(w) for w in widths] == [image.imread(plots[k]).shape[1] / DPI for k in ("bias_radius", "frontier")]
    assert [float(w) for w in widths] == [7.4, 6.4]


def test_no_moment_bound_no_markov_sentence(tmp_path):
    cert = _cert(knowledge={"how": "max", "generators": {"swap": [{"kind": "random-judge", "levels": [1.0]}]}},
                 range={"A": 1.0}, bias_radius={"delta": 0.01, "radius": 0.75, "curve": []})
    curves = {"j": [{"delta": d, "radius": 0.75} for d in (0.01, 0.05, 0.1)]}
    path = write_report(tmp_path, title="t", summary={}, leaderboard=LB, certificates=[cert], retention=None,
                        plots={"bias_radius": plot_bias_radius(curves, tmp_path / "bias_radius.png")},
                        load_report=None, audit=None)
    text = _text(path)
    assert "Markov" not in text and "one row per judge" in text

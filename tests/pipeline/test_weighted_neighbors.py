"""Weighted observed neighbours: equal differences of one (model, item, generator) are one entry with a count.

The reference is the definition: the same certify with every weighted entry repeated its count's times (each
neighbour its own entry, count 1 — the unweighted arrays), compared figure by figure to 1e-12 (relative) on seeded
tables with reruns; plus the merge, the weighted estimate and the random judge's per-level sums by hand.
Deterministic (fixed seeds, no statistical assertion): false-failure rate 0.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import biasbound.pipeline._judge as judge_stages
from biasbound._exceptions import InputError
from biasbound.pipeline import certify
from biasbound.pipeline._neighbors import per_item
from biasbound.sensitivity import estimate


def _judgments(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    f = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    f["verdict"], f["source"], f["line"] = None, "synthetic", np.arange(len(f)) + 1
    return f


def _expanded(observed: Any) -> Any:
    """The unweighted observed neighbours: each entry repeated its count's times, next to itself, count 1."""
    c = observed.count
    return dataclasses.replace(observed, model=np.repeat(observed.model, c), item=np.repeat(observed.item, c),
                               generator=np.repeat(observed.generator, c), diff=np.repeat(observed.diff, c),
                               count=np.ones(int(c.sum()), dtype=np.int64))


def _table(kind: str, seed: int, models: int = 4, items: int = 40, reruns: int = 4,
           drawn: dict[str, list[int]] | None = None) -> pd.DataFrame:
    """Two games, ``reruns`` reruns (most agreeing with rerun 0), a variant of game 1; ``drawn``: per model the items
    holding reruns (a recorded draw), else every item."""
    rng = np.random.default_rng(seed)
    strength = rng.normal(0, 1, models)
    rows = []
    for m in range(models):
        for i in range(items):
            base = 1 / (1 + math.exp(-(strength[m] + rng.normal())))
            for game in (1, 2):
                for r in range(reruns):
                    if r > 0 and drawn is not None and i not in drawn[f"m{m}"]:
                        continue
                    for variant in ("original", "terse"):
                        if variant == "terse" and (r > 0 or game == 2):
                            continue
                        z = base + 0.1 * (game == 2) + 0.05 * (variant == "terse")
                        if r > 0 and rng.random() >= 0.6:  # 40% of reruns disagree
                            z += rng.normal(0, 0.15)
                        z = min(max(z, 0.0), 1.0)
                        s = {"binary": float(z > 0.5), "levels": round(z * 4) / 4,
                             "continuous": round(z, 2) if r > 0 else z}[kind]
                        if rng.random() < 0.01:
                            s = float("nan")
                        rows.append(("j", f"m{m}", f"q{i}", variant, r, game, s))
    return _judgments(rows)


def _numbers(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON documents differ: floats beyond 1e-12 (relative), anything else unequal."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys {sorted(set(a) ^ set(b))}"]
        return [d for k in a if k != "created" and not k.endswith("sha256") for d in _numbers(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _numbers(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float):
        return [] if a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b)) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def _certify_both(tmp_path: Path, frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> list[str]:
    """certify weighted and expanded; the differences of their JSON outputs and scores."""
    seen: list[Any] = []
    weighted = judge_stages._observe

    def observe(*a: Any, **k: Any) -> Any:
        o = weighted(*a, **k)
        seen.append(o)
        return o

    monkeypatch.setattr(judge_stages, "_observe", observe)
    certify(frame, out=tmp_path / "weighted", progress=False, plots=False, seed=3, bootstrap_rounds=20, **kw)
    monkeypatch.setattr(judge_stages, "_observe", lambda *a, **k: _expanded(weighted(*a, **k)))
    certify(frame, out=tmp_path / "expanded", progress=False, plots=False, seed=3, bootstrap_rounds=20, **kw)
    o = seen[0]
    assert o.count.max() > 1 and len(o.diff) < o.count.sum()  # reruns merged: the case under test
    diffs = []
    for f in sorted((tmp_path / "weighted").glob("[a-z]*.json")):
        diffs += _numbers(json.loads(f.read_text()), json.loads((tmp_path / "expanded" / f.name).read_text()), f.name)
    sw, se = (pd.read_parquet(tmp_path / d / "scores.parquet") for d in ("weighted", "expanded"))
    pd.testing.assert_frame_equal(sw, se, check_exact=False, rtol=1e-12, atol=0.0)
    return diffs


CASES = [
    ("levels", dict(neighbors=["swap", "rerun"], method="tight")),
    ("binary", dict(neighbors=["rerun", "variant:terse"], method="tight", view="leaderboard")),
    ("continuous", dict(neighbors=["swap", "rerun"], method="paper", center="batch", tau=2.0, delta=0.05)),
    ("levels", dict(neighbors=["rerun"], method="paper", view="leaderboard", combine="rms")),
    ("continuous", dict(neighbors=["rerun", "swap"], method="tight", hamming=3)),
    ("binary", dict(neighbors=["rerun"], method="tight", hamming="all", view="leaderboard")),  # 8 models: see below
]


@pytest.mark.parametrize(("kind", "kw"), CASES, ids=[f"{k}-{'-'.join(map(str, v.values()))}" for k, v in CASES])
def test_weighted_certificates_equal_the_unweighted_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
                                                         kw: dict[str, Any]) -> None:
    """Every certificate figure (α, σ, bounds, Δ*, UCB, audits, cost, knowledge coverage) of the weighted route
    equals the one from the same neighbours unweighted, to 1e-12."""
    # every item at once, leaderboard: 8 models, so that the all-items move of the model means (every rerun's
    # difference summed) reverses pairs a count-blind sum would not
    every = kw.get("hamming") == "all"
    frame = _table(kind, seed=0 if every else len(kind) + len(kw), models=8 if every else 4, items=30 if every else 40)
    assert _certify_both(tmp_path, frame, monkeypatch, **kw) == []


def test_a_recorded_draw_of_reruns_audits_its_held_out_share_weighted(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Reruns of a recorded draw of items (a sample): the hold-out split keeps an item's reruns together and the
    audits read the held-out entries repeated; the same figures (the Monte Carlo audit included) as unweighted."""
    rng = np.random.default_rng(11)
    drawn = {f"m{m}": sorted(rng.choice(40, size=25, replace=False).tolist()) for m in range(4)}
    frame = _table("levels", seed=5, drawn=drawn)
    sampled = {"rerun": {"seed": 11, "per_model": {m: {"seed": 11, "m": 25, "n": 40, "items": [f"q{i}" for i in its]}
                                                   for m, its in drawn.items()}}}
    assert _certify_both(tmp_path, frame, monkeypatch, neighbors=["rerun"], method="tight", sampled=sampled) == []
    cert = json.loads((tmp_path / "weighted" / "certificate.json").read_text())
    assert cert["scope"]["neighbors_audit"] > 0  # the held-out share was audited


def test_equal_differences_of_one_key_are_merged_in_row_order() -> None:
    """By hand: keys 5, 5, 3, 5, 3 with differences .25, .25, .5, 0, .5 → entries at rows 0, 2, 3 standing for
    2, 2 and 1 neighbours; keys all distinct → every row its own entry."""
    first, count = judge_stages._weighted(np.array([5, 5, 3, 5, 3]), np.array([0.25, 0.25, 0.5, 0.0, 0.5]))
    assert first is not None and first.tolist() == [0, 2, 3] and count.tolist() == [2, 2, 1]
    # far keys (no count per key; then keys too large to multiply by the number of differences): the same merge
    for scale in (10**12, 2**60):
        first, count = judge_stages._weighted(np.array([5, 5, 3, 5, 3], dtype=np.int64) * scale,
                                              np.array([0.25, 0.25, 0.5, 0.0, 0.5]))
        assert first is not None and first.tolist() == [0, 2, 3] and count.tolist() == [2, 2, 1]
    first, count = judge_stages._weighted(np.array([7, 1, 4]), np.array([0.25, 0.25, 0.25]))
    assert first is None and count.tolist() == [1, 1, 1]


def test_the_weighted_estimate_is_the_estimate_of_the_repeated_distances() -> None:
    rng = np.random.default_rng(4)
    d = rng.uniform(0, 1, 30)
    w = rng.integers(1, 6, 30)
    for method in ("kl", "bernstein", "best"):
        a = estimate(d, name="g", beta=0.05, max_distance=1.0, mean_shifts=d / 3, ucb_method=method, weights=w)
        b = estimate(np.repeat(d, w), name="g", beta=0.05, max_distance=1.0, mean_shifts=np.repeat(d / 3, w),
                     ucb_method=method)
        assert a.m == b.m == int(w.sum())
        for f in ("delta_star", "ucb", "center_shift"):
            assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12)
    ones = estimate(d, name="g", beta=0.05, max_distance=1.0, weights=np.ones(30, dtype=np.int64))
    assert ones == estimate(d, name="g", beta=0.05, max_distance=1.0)  # count 1 everywhere: the same floats
    with pytest.raises(InputError, match="'weights' parameter of estimate"):
        estimate(d, name="g", weights=np.full(30, 0.5))


def test_per_item_rms_weighs_each_verdict_once() -> None:
    """By hand: item 0 holds .5 twice and 0 once (RMS² = .5/3), item 1 holds .25 three times (RMS .25)."""
    dist, shift = per_item(np.array([0.5, 0.25, 0.0]), np.array([0.5, 0.25, 0.0]), np.array([0, 1, 0]),
                           np.array([2, 3, 1]))
    assert dist.tolist() == pytest.approx([math.sqrt(0.5 / 3), 0.25], rel=1e-15)
    assert shift.tolist() == pytest.approx(dist.tolist(), rel=1e-15)


def test_the_random_judges_level_sums_count_every_verdict(tmp_path: Path) -> None:
    """By hand, one model, three items on the quarter grid, reruns against the original: item a's three reruns
    all move by .25 (one entry, count 3), item b's by 0 and .5, item c's one by .5.  Each item weighs 1, split over
    its verdicts: S_1 = 1 + 1/2 + 1 = 2.5 items at |Δ| >= .25, S_2 = 1/2 + 1 = 1.5 at >= .5, none above; 6 draws."""
    rows = [("j", "m", it, "original", r, 1, s) for it, scores in
            (("a", [0.5, 0.75, 0.75, 0.75]), ("b", [0.25, 0.25, 0.75]), ("c", [1.0, 0.5]), ("d", [0.0]))
            for r, s in enumerate(scores)]
    frame = _judgments(rows)
    res = certify(frame, neighbors="rerun", out=None, progress=False, plots=False, seed=0, bootstrap_rounds=20,
                  tau=1.0, delta=0.5)
    rec = res.judges["j"].certificate.knowledge["generators"]["rerun"][0]
    assert rec["kind"] == "random-judge" and rec["levels"] == pytest.approx([1 / 16, 1 / 4, 9 / 16, 1])
    assert rec["draws"] == 6 and rec["n"] == 4 and rec["filled"] == 1  # item d: no rerun, at the range bound
    assert rec["sums"] == pytest.approx([2.5 + 1, 1.5 + 1, 1, 1], rel=1e-15)  # + item d at every level

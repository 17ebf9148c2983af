"""Hamming-k over a fully judged batch of a judge declared deterministic: the exact law of ||Δ_S||².

T draws k distinct items uniformly and replaces each by its recorded neighbour; in the model view
||Δ_S||² = Σ_{i∈S} Δ_i². The pipeline computes that law by dynamic programming over value classes
(pipeline._knowledge.subset_sum_law); here it is enumerated k-subset by k-subset (exact values, no
statistics, no seeds needed beyond fixing the data).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2, ncx2

import biasbound.pipeline._knowledge as K
from biasbound.bounds import FullPopulation, Moments, full_population
from biasbound._exceptions import InputError
from biasbound.bounds._knowledge import record_from_dict
from biasbound.calibration import calibrate
from biasbound.pipeline import certify

TAU, DELTA = 0.5, 0.01


def _enumerate(x: np.ndarray, k: int) -> dict[float, float]:
    """Pr[Σ_{i∈S} x_i = s] over every k-subset S, by enumeration."""
    law: dict[float, float] = {}
    total = math.comb(len(x), k)
    for sub in itertools.combinations(range(len(x)), k):
        s = float(sum(x[list(sub)]))
        law[s] = law.get(s, 0.0) + 1.0 / total
    return law


def _tail(sq: np.ndarray, alpha: float, sigma: float, dim: int) -> np.ndarray:
    """Exact Pr[||αΔ + B − B'|| > τ] per value of ||Δ||² (B, B' ~ N(0, σ² I_d))."""
    s2 = 2 * sigma * sigma
    lam = alpha * alpha * sq / s2
    return np.where(lam > 0, ncx2.sf(TAU * TAU / s2, dim, np.maximum(lam, 1e-300)), chi2.sf(TAU * TAU / s2, dim))


@pytest.mark.parametrize("n,k,fill", [(8, 3, 0), (10, 5, 0), (9, 1, 0), (9, 9, 0), (12, 4, 0), (10, 4, 2), (9, 3, 9)])
def test_subset_sum_law_equals_enumeration(n, k, fill):
    rng = np.random.default_rng(n * 100 + k * 10 + fill)
    obs = rng.integers(0, 5, n - fill) ** 2
    sums, _, p, holds = K.subset_sum_law(obs, k, K._MAX_STATES, fill=fill, fill_value=16)
    want = _enumerate(np.concatenate([obs, np.full(fill, 16)]).astype(float), k)
    got: dict[float, float] = {}
    for s, q in zip(sums.tolist(), p.tolist()):
        got[float(s)] = got.get(float(s), 0.0) + q
    assert sorted(got) == sorted(want)
    assert max(abs(got[s] - want[s]) for s in want) < 1e-12
    # holds_fill: an entry's subsets hold a fill item exactly when its mass is that of subsets meeting the fill
    p_fill = 1.0 - (math.comb(n - fill, k) / math.comb(n, k) if k <= n - fill else 0.0)
    assert float(p[holds].sum()) == pytest.approx(p_fill, abs=1e-12)


def test_subset_sum_law_with_signed_sums_equals_enumeration():
    """The joint law of (Σ n_i², Σ n_i) over k-subsets (the batch-mean centre's shift needs the signed sum)."""
    rng = np.random.default_rng(21)
    n, k = 10, 4
    v = rng.integers(-4, 5, n)
    sums, tots, p, holds = K.subset_sum_law(v * v, k, K._MAX_STATES, signed=v)
    want: dict[tuple[int, int], float] = {}
    for sub in itertools.combinations(range(n), k):
        key = (int(np.sum(v[list(sub)] ** 2)), int(np.sum(v[list(sub)])))
        want[key] = want.get(key, 0.0) + 1.0 / math.comb(n, k)
    got = {(int(a), int(b)): q for a, b, q in zip(sums, tots, p)}
    assert sorted(got) == sorted(want) and not holds.any()
    assert max(abs(got[key] - want[key]) for key in want) < 1e-12


def test_subset_sum_law_refuses_above_the_work_cap():
    assert K.subset_sum_law(np.arange(50) ** 2, 10, max_states=100) is None


def test_batch_centre_shift_equals_enumeration_and_covers_unobserved():
    """Batch-mean centre: each subset's shift s² = (Σ_{i∈S} Δ_i)²/d enters exactly; with unobserved items (at the
    range bound, worst sign) the bound is >= the probability for every way they could have moved on the grid."""
    rng = np.random.default_rng(8)
    n, k = 9, 3
    moved = rng.integers(-4, 5, n) / 4.0
    rec, _ = K._hamming_exact(k, n, np.arange(n), moved, np.zeros(n, dtype=bool), dim=n)
    assert rec.shift_sq is not None and rec.filled == 0
    subs = [list(c) for c in itertools.combinations(range(n), k)]
    every = FullPopulation(sq_norms=[float(np.sum(moved[c] ** 2)) for c in subs],
                           shift_sq=[float(np.sum(moved[c])) ** 2 / n for c in subs])
    for alpha, sigma in [(0.5, 0.1), (0.8, 0.05), (0.3, 0.12)]:
        assert (full_population.violation_bound(TAU, alpha, sigma, n, rec)
                == pytest.approx(full_population.violation_bound(TAU, alpha, sigma, n, every), rel=1e-12))
    fill = np.zeros(n, dtype=bool)
    fill[[1, 4]] = True
    at = np.flatnonzero(~fill)
    rec, _ = K._hamming_exact(k, n, at, moved[at], fill, dim=n)
    assert rec.filled > 0
    got = full_population.violation_bound(TAU, 0.5, 0.1, n, rec)
    worst = 0.0
    for a, b in itertools.product(np.arange(-4, 5) / 4.0, repeat=2):
        tm = moved.copy()
        tm[1], tm[4] = a, b
        pop = FullPopulation(sq_norms=[float(np.sum(tm[c] ** 2)) for c in subs],
                             shift_sq=[float(np.sum(tm[c])) ** 2 / n for c in subs])
        worst = max(worst, full_population.violation_bound(TAU, 0.5, 0.1, n, pop))
    assert got >= worst * (1 - 1e-12)


def _hk(k, moved, fill=None, view_model=True):
    n = len(moved)
    fill = np.zeros(n, dtype=bool) if fill is None else fill
    at = np.flatnonzero(~fill)
    coord = None if view_model else np.repeat(np.arange(2), n // 2)
    A = np.ones(n) if view_model else np.full(n, 2.0 / n)
    return K._hamming_k(k, n, at, np.asarray(moved, dtype=float)[~fill] * A[~fill], fill, A, coord, view_model)


def test_violation_probability_equals_enumeration_over_subsets():
    """The full-population unit on the exact law gives the enumerated probability (to float rounding)."""
    rng = np.random.default_rng(3)
    n, k = 11, 4
    moved = rng.integers(-4, 5, n) / 4.0  # a 5-level score scale: differences on the grid j/4
    rec, rms = _hk(k, moved)
    assert isinstance(rec, FullPopulation) and rec.weights is not None and rec.filled == 0
    subsets = list(itertools.combinations(range(n), k))
    sq = np.array([float(np.sum(moved[list(s)] ** 2)) for s in subsets])
    assert rms == pytest.approx(math.sqrt(sq.mean()), rel=1e-12)
    every = FullPopulation(sq_norms=sq)  # one equally likely value per subset: T written out in full
    for alpha, sigma in [(1.0, 0.2), (0.4, 0.1), (0.7, 0.05), (0.3, 0.08)]:
        got = full_population.violation_bound(TAU, alpha, sigma, n, rec)
        assert got == pytest.approx(full_population.violation_bound(TAU, alpha, sigma, n, every), rel=1e-12)
        # and scipy's ncx2 directly (its series differ from the unit's by ~1e-7 near probability 1)
        assert got == pytest.approx(float(np.mean(_tail(sq, alpha, sigma, n))), rel=1e-6)


def test_unobserved_items_at_the_range_bound_cover_every_truth():
    """Items without a neighbour verdict enter at |Δ| = 1: the bound is >= the probability for every way their
    moves could have turned out on the grid (enumerated), equal when they all move by 1, and marked filled."""
    rng = np.random.default_rng(5)
    n, k = 9, 3
    moved = rng.integers(-4, 5, n) / 4.0
    fill = np.zeros(n, dtype=bool)
    fill[[2, 6]] = True
    rec, _ = _hk(k, moved, fill)
    assert isinstance(rec, FullPopulation) and rec.filled > 0 and "2 unobserved items" in rec.note
    alpha, sigma = 0.5, 0.1
    got = full_population.violation_bound(TAU, alpha, sigma, n, rec)
    worst = 0.0
    for a, b in itertools.product(np.arange(-4, 5) / 4.0, repeat=2):
        truth_moves = moved.copy()
        truth_moves[2], truth_moves[6] = a, b
        sq = np.array([float(np.sum(truth_moves[list(s)] ** 2)) for s in itertools.combinations(range(n), k)])
        worst = max(worst, float(np.mean(_tail(sq, alpha, sigma, n))))
    assert got >= worst * (1 - 1e-6)  # scipy's ncx2 and the unit's agree to ~1e-7
    assert got == pytest.approx(worst, rel=1e-6)  # the worst truth puts both at the range bound


def test_record_round_trips_through_its_dict():
    rng = np.random.default_rng(9)
    rec, _ = _hk(3, rng.integers(-4, 5, 10) / 4.0)
    back = record_from_dict(rec.to_dict())
    assert np.array_equal(back.sq_norms, rec.sq_norms) and np.allclose(back.weights, rec.weights, rtol=1e-15, atol=0)
    assert (full_population.violation_bound(TAU, 0.6, 0.1, 10, back)
            == full_population.violation_bound(TAU, 0.6, 0.1, 10, rec))


@pytest.mark.parametrize("case", ["no-grid", "leaderboard", "cap"])
def test_falls_back_to_the_mean_and_maximum_bound_saying_why(case, monkeypatch):
    rng = np.random.default_rng(4)
    if case == "cap":
        monkeypatch.setattr(K, "_MAX_STATES", 10)
    moved = rng.uniform(-1, 1, 10) if case == "no-grid" else rng.integers(-4, 5, 10) / 4.0
    rec, _ = _hk(3, moved, view_model=case != "leaderboard")
    assert isinstance(rec, Moments) and rec.beta == 0.0
    assert {"no-grid": "no grid", "leaderboard": "leaderboard view", "cap": "work cap"}[case] in rec.note


@pytest.mark.slow  # end to end: certify on the embedded set (~8 s on a loaded machine)
def test_exact_law_improves_alpha_over_the_mean_and_maximum(monkeypatch):
    """Same batch, same σ: the exact law's α is larger than the mean+max (Moments) record's, and both hold."""
    rng = np.random.default_rng(1)
    n, k = 40, 5
    moved = np.where(rng.random(n) < 0.15, rng.choice([-1.0, -0.75, 0.75, 1.0], n), rng.integers(-1, 2, n) / 4.0)
    exact, _ = _hk(k, moved)
    monkeypatch.setattr(K, "_MAX_STATES", 0)
    loose, _ = _hk(k, moved)
    assert isinstance(exact, FullPopulation) and isinstance(loose, Moments)
    sigma = 0.02  # below the noise-only limit (0.044 at d = 40)
    a_exact = calibrate(exact, tau=TAU, delta=DELTA, dim=n, sigma=sigma).alpha
    a_loose = calibrate(loose, tau=TAU, delta=DELTA, dim=n, sigma=sigma).alpha
    assert a_exact > 1.2 * a_loose, (a_exact, a_loose)
    # the exact α holds with equality against enumeration: Pr ≤ δ at it
    sq = np.array([float(np.sum(moved[list(s)] ** 2)) for s in itertools.combinations(range(n), k)])
    assert float(np.mean(_tail(sq, a_exact, sigma, n))) <= DELTA * (1 + 1e-9)


def _table(n_items: int, seed: int, missing: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 5, n_items) / 4.0
    nb = np.clip(base + np.where(rng.random(n_items) < 0.2, rng.choice([-0.5, 0.5, 0.75], n_items), 0.0), 0, 1)
    nb = np.round(nb * 4) / 4
    rows = [("a", f"q{i}", "original", 0, 0, b) for i, b in enumerate(base)]
    rows += [("a", f"q{i}", "x", 0, 0, v) for i, v in enumerate(nb) if i >= missing]
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    return f


@pytest.mark.parametrize("center", ["fixed:0.5", "batch"])
def test_certify_batch_centre_uses_the_exact_law_or_refuses(center, monkeypatch):
    kw = dict(neighbors="variant:x", tau=TAU, delta=DELTA, seed=0, bootstrap_rounds=20, out=None, progress=False,
              plots=False, hamming=3, deterministic_judge=True, center=center)
    j = certify(_table(30, 2, 2), **kw).judges["j"]
    rec = j.certificate.knowledge["generators"]["variant:x"][0]
    assert rec["kind"] == "full-population" and ("shift_values" in rec) == (center == "batch")
    assert j.certificate.verify()["holds"] is True
    monkeypatch.setattr(K, "_MAX_STATES", 0)
    if center == "batch":
        with pytest.raises(InputError, match="center.*work cap.*Got 'batch' instead"):
            certify(_table(30, 2, 2), **kw)


@pytest.mark.slow  # end to end: certify and verify
@pytest.mark.parametrize("missing", [0, 2])
def test_certify_uses_the_exact_law_and_it_verifies(missing, monkeypatch):
    kw = dict(neighbors="variant:x", tau=TAU, delta=DELTA, seed=0, bootstrap_rounds=20, out=None, progress=False,
              plots=False, hamming=3, deterministic_judge=True)
    res = certify(_table(30, 2, missing), **kw)
    j = res.judges["j"]
    rec = j.certificate.knowledge["generators"]["variant:x"][0]
    assert rec["kind"] == "full-population" and "weights" in rec
    assert (rec.get("filled", 0) > 0) == (missing > 0)
    assert j.certificate.verify()["holds"] is True
    monkeypatch.setattr(K, "_MAX_STATES", 0)
    old = certify(_table(30, 2, missing), **kw).judges["j"]
    assert old.certificate.knowledge["generators"]["variant:x"][0]["kind"] == "moments"
    assert j.calibration.sigma == pytest.approx(old.calibration.sigma, rel=1e-12)
    assert j.calibration.alpha > old.calibration.alpha
    if missing:
        assert "not judged" in j.certificate.guarantee and "subsets of items" in j.certificate.guarantee


# --------------------------------------------------------------------------- the paper route with reruns
from biasbound.pipeline._neighbors import _group_split, _Neighbors, per_item  # noqa: E402


def test_per_item_weighs_each_item_once_whatever_its_reruns():
    """Item 0 has 4 draws, items 1 and 2 one each: Δ*² is the mean over the 3 items of each one's mean square."""
    item = np.array([0, 1, 0, 2, 0, 0])
    dist = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 0.0])
    d, s = per_item(dist, dist / 2, item)
    assert d.tolist() == pytest.approx([math.sqrt(0.5), 0.0, 0.5])  # items in first-seen order
    assert float(np.mean(d**2)) == pytest.approx((0.5 + 0.0 + 0.25) / 3)  # rows would give 2.25/6
    assert np.array_equal(per_item(dist[[1, 3]], dist[[1, 3]], item[[1, 3]])[0], dist[[1, 3]])  # one each: unchanged


def test_item_split_keeps_reruns_together_and_equals_the_row_split_without_reruns():
    rng = np.random.default_rng(0)
    n = 60
    model = np.repeat([0, 1], n // 2)
    gen = np.zeros(n, dtype=np.int64)
    one = _Neighbors(model, gen, rng.random(n), np.zeros(n), item=np.arange(n))
    cal, held = one.split(1, 0.3, np.random.default_rng(5))
    old = _group_split(model.astype(np.int64), 0.3, np.random.default_rng(5))
    assert np.array_equal(np.sort(held.item), np.flatnonzero(old)) and len(cal) + len(held) == n
    reps = rng.integers(1, 5, n)  # unequal rerun counts
    rows = np.repeat(np.arange(n), reps)
    many = _Neighbors(model[rows], gen[rows], rng.random(rows.size), np.zeros(rows.size), item=rows)
    cal, held = many.split(1, 0.3, np.random.default_rng(5))
    assert not set(cal.item.tolist()) & set(held.item.tolist())  # no item on both sides
    assert len(set(held.item.tolist())) == 2 * math.floor(0.3 * n / 2)  # the share counts items, not rows


def _rerun_table(seed: int) -> tuple[pd.DataFrame, float]:
    """One model, 40 items, 1–4 reruns each (unequal); returns the table and the item-weighted RMS of Δ."""
    rng = np.random.default_rng(seed)
    rows, per = [], []
    for i in range(40):
        base = float(rng.integers(0, 5)) / 4
        rows.append(("a", f"q{i}", "original", 0, 0, base))
        r = int(rng.integers(1, 5))
        moves = []
        for j in range(1, r + 1):
            v = float(np.clip(base + (0.25 if (i % 3 == 0 and j % 2) else 0.0), 0, 1))
            rows.append(("a", f"q{i}", "original", j, 0, v))
            moves.append((base - v) ** 2)
        per.append(float(np.mean(moves)))
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    return f, math.sqrt(float(np.mean(per)))


def test_paper_route_delta_star_is_the_rms_over_items():
    """With every item in the calibration share (no hold-out) the paper route's Δ* equals the item-weighted RMS
    computed by hand, not the RMS over rerun rows."""
    f, want = _rerun_table(3)
    res = certify(f, neighbors="rerun", method="paper", tau=2.0, delta=0.1, beta=None, holdout=0.0, seed=0,
                  bootstrap_rounds=20, out=None, progress=False, plots=False)
    est = res.judges["j"].estimates["a"]["rerun"]
    assert est.delta_star == pytest.approx(want, rel=1e-12)
    assert est.m == 40  # items, not rerun rows
    rows = f[f["rerun"] > 0]
    base = f[f["rerun"] == 0].set_index("item_id")["score"]
    row_rms = math.sqrt(float(np.mean((rows["score"].to_numpy() - base[rows["item_id"]].to_numpy()) ** 2)))
    assert abs(row_rms - want) > 1e-3  # the data make the two differ: the test can tell them apart

"""The optimised routes of `certify` give the values of the plain computations they replaced.

Each fast path (bias radius by one sort per record, α at σ = 0 in closed form, ...) is compared with a
verbatim copy of the plain reference on seeded random inputs; the comparisons are exact (==), so a
failure means a changed value, never noise. No statistical test here (false-failure rate 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from biasbound.bounds._knowledge import AlmostSure, FullPopulation, Knowledge, Moments, Sample
from biasbound.figures import DEFAULT_DELTAS, bias_radius, bias_radius_curve, bias_radii, survival


# ------------------------------------------------------------------ bias radius: the plain reference (as it was)
def _reference_record_survival(r, t: float) -> float:
    from biasbound.bounds.sampled_population import band

    t2 = t * t
    if isinstance(r, AlmostSure):
        return 1.0 if r.A > t else 0.0
    if isinstance(r, Moments):
        if r.A is not None and r.A <= t:
            return 0.0
        if t == 0:
            return 1.0 if r.U2 > 0 else 0.0
        return min(1.0, r.U2 / t2)
    if isinstance(r, FullPopulation):
        return float(np.count_nonzero(r.sq_norms > t2)) / r.m
    if r.A is not None and r.A <= t:
        return 0.0
    kup = band(r.population_size, r.m, r.beta)
    return min(1.0, int(kup[int(np.count_nonzero(r.sq_norms > t2))]) / r.population_size)


def _reference_survival(k, t: float) -> float:
    per = [min(_reference_record_survival(r, t) for r in recs) for _, recs in k.generators]
    return max(per) if k.how == "max" else math.fsum(per) / len(per)


def _reference_bias_radius(delta: float, knowledge) -> float:
    survival = _reference_survival
    k = Knowledge.of(knowledge)
    pts = [0.0]
    for r in k.records:
        if isinstance(r, (FullPopulation, Sample)):
            pts.extend(np.sqrt(np.unique(r.sq_norms)).tolist())
        if getattr(r, "A", None) is not None:
            pts.append(float(r.A))
    cands = np.unique(np.array(pts, dtype=float))
    ok = [survival(k, float(t)) <= delta for t in cands]
    if not any(ok):
        hi = None
        lo = float(cands[-1])
    else:
        i = ok.index(True)
        hi = float(cands[i])
        lo = float(cands[i - 1]) if i > 0 else 0.0
        if i == 0:
            return hi
    if hi is None:
        hi = max(lo, 1.0) * 2.0
        while survival(k, hi) > delta:
            if hi > 1e12:
                return math.inf
            hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= 1e-12 * hi:
            break
        if survival(k, mid) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def _random_record(rng: np.random.Generator):
    kind = rng.integers(4)
    n = int(rng.integers(1, 60))
    # a coarse grid makes ties (several neighbours at one norm), as judge scores on a 5-point scale do
    x = np.round(rng.gamma(0.5, 0.3, n), int(rng.integers(1, 4))) ** 2
    if rng.random() < 0.2:
        x[:] = 0.0
    if kind == 0:
        return AlmostSure(float(rng.uniform(0.0, 2.0)))
    if kind == 1:
        u2 = float(rng.uniform(0.0, 0.5))
        return Moments(U2=u2, beta=0.05, A=None if rng.random() < 0.5 else float(math.sqrt(u2) * rng.uniform(1.0, 3.0)))
    if kind == 2:
        return FullPopulation(sq_norms=x)
    a = None if rng.random() < 0.5 else float(math.sqrt(x.max()) * rng.uniform(1.0, 2.0) + 1e-9)
    return Sample(sq_norms=x, population_size=int(n + rng.integers(0, 200)), beta=0.05, A=a)


@pytest.mark.parametrize("seed", range(40))
def test_bias_radius_equals_the_plain_scan(seed: int) -> None:
    rng = np.random.default_rng(seed)
    gens = {f"g{j}": [_random_record(rng) for _ in range(int(rng.integers(1, 4)))] for j in range(int(rng.integers(1, 4)))}
    for how in ("max", "mixture"):
        k = Knowledge.of(gens, how=how)
        deltas = DEFAULT_DELTAS + (float(rng.uniform(0.001, 0.999)),)
        want = [_reference_bias_radius(d, k) for d in deltas]
        assert bias_radii(deltas, k) == want
        assert [bias_radius(d, k) for d in deltas] == want
        assert [c["radius"] for c in bias_radius_curve(k, deltas)] == want


# ------------------------------------------------------------------ retention over noise: one vectorised Pearson on ranks
def test_retention_spearman_equals_the_per_draw_loop() -> None:
    from scipy import stats

    from biasbound.pipeline._cost import retention_over_noise

    rng = np.random.default_rng(7)
    original = np.round(rng.uniform(0, 1, 60), 2)  # ties among the original means
    shrunk = 0.4 * original + 0.3
    sigma = np.where(np.arange(60) % 7 == 0, 0.0, 0.01)
    got = retention_over_noise(original, shrunk, sigma, seed=11, draws=300)
    # the plain computation it replaced: one pearsonr on ranks per draw (NaN for a draw with every rank tied)
    z = shrunk[None, :] + np.random.default_rng(11).normal(size=(300, 60)) * sigma[None, :]
    ro, rz = stats.rankdata(original), stats.rankdata(z, axis=1)
    rho = np.array([stats.pearsonr(ro, r).statistic if np.std(r) > 0 else np.nan for r in rz])
    assert got["spearman"] == {"mean": float(np.mean(rho)), "p05": float(np.quantile(rho, 0.05)),
                               "p95": float(np.quantile(rho, 0.95))}


def test_retention_of_a_draw_with_every_rank_tied_is_missing() -> None:
    from biasbound.pipeline._cost import retention_over_noise

    got = retention_over_noise(np.array([0.1, 0.2, 0.3]), np.full(3, 0.5), np.zeros(3), seed=0, draws=5)
    assert got["spearman"] == {"mean": None, "p05": None, "p95": None}


# ------------------------------------------------------------------ the noise-only tail: chi2.sf's own routine
def test_noise_only_tail_equals_scipy_chi2_sf() -> None:
    from scipy import stats

    from biasbound.bounds._tail import SCIPY_REL_ERR, tail

    rng = np.random.default_rng(3)
    for _ in range(200):
        dim, tau, sigma = int(rng.integers(1, 3000)), float(rng.uniform(0.01, 3)), float(rng.uniform(1e-3, 1))
        x = tau * tau / (2 * sigma * sigma)
        if x > 1e7:
            continue
        p = float(stats.chi2.sf(x, dim))
        assert tail(np.zeros(3), tau=tau, sigma=sigma, dim=dim).tolist() == [
            min(1.0, p * (1 + SCIPY_REL_ERR) + (1e-300 if p > 0 else 0.0))] * 3


# ------------------------------------------------------------------ coverage: item sets compared through integer codes
def _reference_item_set_notes(frame, kept) -> dict[str, str]:
    """The plain computation it replaced: one frozenset of item ids per (judge, model)."""
    out = {}
    canon = kept[(kept["variant"] == "original") & (kept["rerun"] == 0) & kept["game"].isin([0, 1]) & kept["score"].notna()]
    for judge, grp in canon.groupby(canon["judge"].astype(str), sort=True):
        sets = grp.groupby(grp["model"].astype(str))["item_id"].agg(lambda s: frozenset(s.astype(str)))
        if len(sets) > 1 and len(set(sets.tolist())) > 1:
            union, common = frozenset().union(*sets.tolist()), frozenset.intersection(*sets.tolist())
            fewest = sets.map(len).idxmin()
            out[str(judge)] = (f"The models were scored on different item sets: {len(common)} of the {len(union)} items "
                               f"have a judgment for every model (fewest: {fewest!s} with {len(sets[fewest])}); model "
                               "means and ranks compare different questions.")
    return out


@pytest.mark.parametrize("seed", range(30))
def test_coverage_item_set_notes_equal_the_frozenset_comparison(seed: int) -> None:
    import pandas as pd

    from biasbound.pipeline._coverage import prepare

    rng = np.random.default_rng(seed)
    rows = []
    for j in range(int(rng.integers(1, 4))):
        for m in range(int(rng.integers(1, 6))):
            for i in rng.choice(12, size=int(rng.integers(1, 12)), replace=False).tolist():
                for game in (1, 2):
                    if rng.random() < 0.15:
                        continue
                    rows.append({"judge": f"j{j}", "model": f"m{m}é" if m % 2 else f"M{m}", "item_id": f"q{i}",
                                 "variant": "original", "rerun": 0, "game": game,
                                 "score": np.nan if rng.random() < 0.1 else float(rng.integers(0, 5)) / 4})
    frame = pd.DataFrame(rows)
    kept, coverage, _ = prepare(frame, ("swap",), skip_bad=True)
    got = {j: [n for n in c["notes"] if n.startswith("The models were scored")] for j, c in coverage.items()}
    want = _reference_item_set_notes(frame, kept)
    assert {j: n for j, n in got.items() if n} == {j: [n] for j, n in want.items()}
    assert {j for j, c in coverage.items() if c.get("different_item_sets")} == set(want)


# ------------------------------------------------------------------ the tail without a sort: small and sorted arrays
@pytest.mark.parametrize("n", [1, 5, 64, 65, 3000])
def test_tail_equals_the_elementwise_noncentral_chi_square(n: int) -> None:
    from scipy import stats

    from biasbound.bounds._tail import _up_prob, tail

    rng = np.random.default_rng(n)
    for q in (np.sort(np.round(rng.uniform(0, 0.3, n), 2)), np.round(rng.uniform(0, 0.3, n), 2), np.zeros(n)):
        tau, sigma, dim = 0.5, 0.1, 25
        x, lam = tau * tau / (2 * sigma * sigma), q / (2 * sigma * sigma)
        want = _up_prob(np.where(lam == 0, stats.chi2.sf(x, dim), stats.ncx2.sf(x, dim, np.where(lam == 0, 1.0, lam))))
        assert np.array_equal(tail(q, tau=tau, sigma=sigma, dim=dim), want)


# ------------------------------------------------------------------ a per-model certificate holds its own model's records only
def test_per_model_certificates_hold_their_own_model_only(tmp_path) -> None:
    import pandas as pd

    from biasbound.pipeline import certify

    rng = np.random.default_rng(0)
    rows = [{"judge": "j", "model": f"m{m}", "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": g,
             "score": float(rng.integers(0, 5)) / 4, "source": "t.csv", "line": 0}
            for m in range(6) for i in range(30) for g in (1, 2)]
    res = certify(pd.DataFrame(rows), out=None, plots=False, progress=False, seed=0)
    j = res.judges["j"]
    assert set(j.certificate.scope["knowledge_coverage"]) == {f"m{m}" for m in range(6)}
    for m, cert in j.model_certificates.items():
        assert set(cert.scope["knowledge_coverage"]) == {m}
        assert cert.scope["knowledge_coverage"][m] == j.certificate.scope["knowledge_coverage"][m]
        assert cert.verify()["holds"] is True


# ------------------------------------------------------------------ the weighted sum over distinct terms: fsum's value
@pytest.mark.parametrize("seed", range(30))
def test_grouped_weighted_sum_equals_fsum_over_every_term(seed: int) -> None:
    from biasbound.bounds._tail import weighted_sum

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    values = rng.uniform(0, 1, int(rng.integers(1, 300))) ** float(rng.uniform(1, 40))  # tiny and large terms
    groups = rng.integers(0, values.size, n)
    p = values[groups]
    w = np.full(n, 1.0 / n)
    for const in (0.0, 0.3 / n):
        assert weighted_sum(w, p, const, groups=groups) == weighted_sum(w, p, const)
    unequal = w * rng.uniform(0.5, 1, n)  # unequal weights: the plain fsum route
    assert weighted_sum(unequal, p, 0.0, groups=groups) == weighted_sum(unequal, p, 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_survival_equals_the_plain_count(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    gens = {f"g{j}": [_random_record(rng) for _ in range(int(rng.integers(1, 4)))] for j in range(int(rng.integers(1, 4)))}
    for how in ("max", "mixture"):
        k = Knowledge.of(gens, how=how)
        for t in [0.0, *rng.uniform(0, 2, 20).tolist(), *np.sqrt(np.concatenate(
                [np.asarray(r.sq_norms) for r in k.records if hasattr(r, "sq_norms")] or [np.zeros(1)])).tolist()]:
            assert survival(k, t) == _reference_survival(k, t)


# ------------------------------------------------------------------ searches skip random-judge records another one dominates
def _random_judge(rng: np.random.Generator, levels: np.ndarray):
    from biasbound.bounds._knowledge import RandomJudge

    n = int(rng.integers(3, 40))
    sums = np.sort(rng.integers(0, n + 1, levels.size))[::-1].astype(float)  # nonincreasing in the level
    return RandomJudge(levels=levels, sums=sums, n=n, beta=float(rng.uniform(1e-4, 0.05)))


@pytest.mark.parametrize("seed", range(12))
def test_random_judge_dominance_never_drops_the_maximum(seed: int) -> None:
    """A judge's models as generators (``"MODEL | swap"``): the search evaluates only the records no other record
    dominates (same levels, every tail bound no larger); its value must be the maximum over every record."""
    from biasbound.bounds._combined import Plan as _Plan

    rng = np.random.default_rng(seed)
    grids = [(np.arange(1, 5) / 4) ** 2, (np.arange(1, 3) / 2) ** 2]  # two level sets: only equal levels compare
    k = Knowledge.of({f"m{i} | swap": _random_judge(rng, grids[int(rng.integers(2))]) for i in range(60)}, how="max")
    plan = _Plan(k, "tight")
    assert len(plan.active) < len(plan.gens)  # some record is dominated (else the test checks nothing)
    for _ in range(40):
        a, s, d = float(rng.uniform(0, 1)), float(rng.choice([0.0, *rng.uniform(1e-3, 0.3, 3)])), int(rng.integers(1, 50))
        assert plan.evaluate(0.5, a, s, d)[0] == plan.evaluate(0.5, a, s, d, every=True)[0]


# ------------------------------------------------------------------ the judge card's position reading: string work per distinct verdict
def _reference_first_shown_choice(frame):
    """The plain computation it replaced (string operations on every row)."""
    from biasbound.card import _FIRST, _SECOND, _TIE

    out = np.full(len(frame), np.nan)
    v = frame["verdict"].astype(object).where(frame["verdict"].notna(), "").astype(str).str.strip()
    v = v.str.replace(r"^\[\[(.*)\]\]$", r"\1", regex=True).str.replace(" ", "", regex=False)
    game = frame["game"].to_numpy()
    ok = np.isin(game, (1, 2)) & frame["score"].notna().to_numpy()
    vv = v.to_numpy(dtype=object)
    out[ok & np.isin(vv, list(_FIRST))] = 1.0
    out[ok & np.isin(vv, list(_SECOND))] = 0.0
    out[ok & np.isin(vv, list(_TIE))] = 0.5
    lab1, lab2 = vv == "1", vv == "2"
    out[ok & lab1] = np.where(game[ok & lab1] == 1, 1.0, 0.0)
    out[ok & lab2] = np.where(game[ok & lab2] == 2, 1.0, 0.0)
    tail = v.str.rsplit(":", n=1).str[-1].to_numpy(dtype=object)
    fc1, fc2, fct = tail == "model_1", tail == "model_2", (tail == "tie") & v.str.contains(":", regex=False).to_numpy()
    out[ok & fc1] = np.where(game[ok & fc1] == 1, 1.0, 0.0)
    out[ok & fc2] = np.where(game[ok & fc2] == 2, 1.0, 0.0)
    out[ok & fct] = 0.5
    return out


@pytest.mark.parametrize("seed", range(6))
def test_first_shown_choice_equals_the_per_row_reading(seed: int) -> None:
    import pandas as pd

    from biasbound.card import first_shown_choice

    rng = np.random.default_rng(seed)
    pool = ["A>B", "[[B>A]]", " A>>B ", "A=B", "B > A", "1", "2", "q1: model_1", "q2:model_2", "q3: tie", "tie", "",
            "none", None, np.nan, 1, 2.0, 1.0, True]
    n = 400
    picks = [pool[i] for i in rng.integers(0, len(pool), n)]
    base = {"game": rng.integers(0, 3, n), "score": np.where(rng.random(n) < 0.1, np.nan, rng.random(n))}
    frames = [pd.DataFrame({**base, "verdict": pd.Series(picks, dtype=object)})]
    strings = [p if isinstance(p, str) or p is None else None for p in picks]
    frames.append(pd.DataFrame({**base, "verdict": pd.Series(strings, dtype="str")}))  # pandas' string dtype
    for f in frames:
        np.testing.assert_array_equal(first_shown_choice(f), _reference_first_shown_choice(f))


# ------------------------------------------------------------------ large JSON files: one entry per line, the same value
def test_big_json_is_one_entry_per_line_with_the_same_value(tmp_path, monkeypatch) -> None:
    import json

    from biasbound.pipeline import _outputs

    obj = {"a": [1, 2.5, "é"], "b": {"c": None, "d": [{"e": 1e-300}]}, "f": "x"}
    small = _outputs._write_json(tmp_path / "small.json", obj, plain=True).read_text()
    assert small == json.dumps(obj, indent=2) + "\n"  # below the threshold: indented as always
    monkeypatch.setattr(_outputs, "BIG_JSON", 10)
    for value in (obj, [obj, obj, 3]):
        text = _outputs._write_json(tmp_path / "big.json", value, plain=True).read_text()
        assert json.loads(text) == value
        assert len(text.splitlines()) == len(value) + 2


# ------------------------------------------------------------------ bias radius of step-function knowledge: one survival call per curve
@pytest.mark.parametrize("seed", range(20))
def test_bias_radii_of_step_records_equal_the_per_delta_scan(seed: int) -> None:
    """Without moment records the survival between two jump points is one constant: bias_radii takes it for every
    delta in one call; each radius must be what the per-delta scan (_survival_between at the first midpoint) gives."""
    from biasbound.figures import _jumps, _radius_from, _survivals

    rng = np.random.default_rng(300 + seed)
    levels = [(np.arange(1, 5) / 4) ** 2, np.sort(rng.uniform(0.01, 2, 3)) ** 2]
    gens = {}
    for j in range(int(rng.integers(1, 4))):
        recs = [_random_judge(rng, levels[int(rng.integers(2))])]
        while rng.random() < 0.5:
            r = _random_record(rng)
            if not isinstance(r, Moments):
                recs.append(r)
        gens[f"g{j}"] = recs
    deltas = DEFAULT_DELTAS + tuple(rng.uniform(0.001, 0.999, 5).tolist())
    for how in ("max", "mixture"):
        k = Knowledge.of(gens, how=how)
        cands = _jumps(k)
        surv = _survivals(k, cands)
        assert bias_radii(deltas, k) == [_radius_from(k, cands, surv, d) for d in deltas]


# ------------------------------------------------------------------ coverage: tuple codes in mixed radix, factorised once
@pytest.mark.parametrize("seed", range(10))
def test_tuple_codes_equal_the_column_by_column_factorisation(seed: int) -> None:
    import pandas as pd

    from biasbound.pipeline._codes import _ColumnCodes

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    frame = pd.DataFrame({"judge": rng.choice(["j1", "j2", None], n), "model": rng.choice([f"m{i}" for i in range(40)], n),
                          "item_id": rng.integers(0, 500, n).astype(str), "game": rng.integers(0, 3, n),
                          "line": rng.permutation(n).astype(str)})
    ids = _ColumnCodes(frame)
    bound = max(4 * n, 2**20)
    # the last tuple's mixed radix exceeds the bound once n > 51: the factorised route
    for cols in (["judge"], ["judge", "model"], ["judge", "model", "item_id", "game"], ["item_id", "judge"],
                 ["item_id", "model", "line"]):
        want = np.zeros(n, dtype=np.int64)  # the plain computation it replaced: one factorisation per column
        for col in cols:
            codes, uniques = ids.column(col)
            want, _ = pd.factorize(want * (len(uniques) + 1) + codes, sort=False)
            want = want.astype(np.int64)
        got = ids.key(cols)  # the same partition of the rows into tuples, as table indices below the bound
        assert got.dtype == np.int64 and (got.min() >= 0 and got.max() < bound)
        assert np.array_equal(pd.factorize(got, sort=False)[0], want)


@pytest.mark.parametrize("seed", range(10))
def test_coverage_lookups_equal_isin_and_unique(seed: int) -> None:
    from biasbound.pipeline._coverage import _in, _unique_small

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 5000))
    key = rng.integers(0, int(rng.integers(1, 800)), n)
    among = key[rng.random(n) < 0.3]
    assert np.array_equal(_in(key, among), np.isin(key, among))
    if n:
        u, inv = np.unique(key, return_inverse=True)
        got_u, got_inv = _unique_small(key)
        assert np.array_equal(got_u, u) and np.array_equal(got_inv, inv)


# ------------------------------------------------------------------ the tail of a handful of shifts: per value in Python floats
@pytest.mark.parametrize("seed", range(10))
def test_tail_of_a_few_shifts_equals_the_array_route(seed: int) -> None:
    """Up to 8 shifts (a random judge's levels) are evaluated one by one; the values must be those of the array
    route (the elementwise noncentral chi-square, zero shifts by chi2.sf's routine, then _up_prob)."""
    from scipy import special

    from biasbound.bounds._tail import _NCX2_SF, _up_prob, tail

    rng = np.random.default_rng(500 + seed)
    for _ in range(50):
        n = int(rng.integers(0, 9))
        q = np.round(rng.uniform(0, 0.6, n), int(rng.integers(1, 4)))
        q[rng.random(n) < 0.3] = 0.0
        tau, sigma, dim = float(rng.uniform(0.05, 2)), float(rng.uniform(1e-3, 0.5)), int(rng.integers(1, 5000))
        x, lam = tau * tau / (2 * sigma * sigma), q / (2 * sigma * sigma)
        if x > 1e7:
            continue
        ref = np.where(lam == 0, special.chdtrc(float(dim), x), _NCX2_SF(x, float(dim), np.where(lam == 0, 1.0, lam)))
        want = _up_prob(np.where(np.isnan(ref), 1.0, ref))
        assert np.array_equal(tail(q, tau=tau, sigma=sigma, dim=dim), want)
        assert np.array_equal(tail(q.reshape(1, -1), tau=tau, sigma=sigma, dim=dim), want.reshape(1, -1))


def test_random_judge_worst_distribution_is_kept_read_only() -> None:
    """Computed once per record (the searches read it at every point) and never changed in place."""
    from biasbound.bounds.random_judge import worst_distribution

    rng = np.random.default_rng(1)
    r = _random_judge(rng, (np.arange(1, 5) / 4) ** 2)
    x, w = worst_distribution(r)
    up = r.upper
    assert np.array_equal(x, np.concatenate([[0.0], r.levels]))
    assert np.array_equal(w, np.maximum(np.concatenate([[1.0 - up[0]], up[:-1] - up[1:], [up[-1]]]), 0.0))
    assert worst_distribution(r)[0] is x
    with pytest.raises(ValueError):
        w[0] = 0.5


# ------------------------------------------------------------------ the judge card's pair lists and order matrix
def test_rank_statements_pairs_and_matrix_equal_the_plain_loops() -> None:
    import pandas as pd

    from biasbound.card import rank_statements
    from biasbound.pipeline import certify

    rng = np.random.default_rng(4)
    rows = [{"judge": "j", "model": f"m{m}", "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": g,
             "score": float(rng.integers(0, 5)) / 4, "source": "t.csv", "line": 0}
            for m in range(9) for i in range(12) for g in (1, 2)]
    frame = pd.DataFrame(rows)
    res = certify(frame, out=None, plots=False, progress=False, seed=0)
    got = rank_statements(frame, res.judges["j"], rounds=50, seed=1)
    models = got["models"]
    a, b = np.triu_indices(len(models), k=1)
    pos = {m: k for k, m in enumerate(models)}
    for key in ("reversed_by", "tied_by"):  # the plain loop: [[models[x], models[y]] for each pair in the mask]
        for pairs in got[key].values():
            assert all(isinstance(x, str) and isinstance(y, str) and pos[x] < pos[y] for x, y in pairs)
            assert len({(x, y) for x, y in pairs}) == len(pairs)
    assert any(got["reversed_by"].values()) or any(got["tied_by"].values())  # something to compare
    rev = {(x, y) for pairs in got["reversed_by"].values() for x, y in pairs}
    assert all(len(row) == len(models) and isinstance(row, str) for row in got["matrix"])
    for x, y in zip(a, b):  # the matrix marks exactly the reversed pairs with R
        assert (got["matrix"][x][y] == "R") == ((models[x], models[y]) in rev)
    assert all(got["matrix"][k][k] == "=" for k in range(len(models)))


# ------------------------------------------------------------------ certificate trees: _plain and the finite check
def _reference_plain(value):  # verbatim: the isinstance chain before the exact-type fast path
    if isinstance(value, np.ndarray):
        return _reference_plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _reference_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_reference_plain(v) for v in value]
    return value


def _random_tree(rng, depth: int = 0):
    leaves = [lambda: float(rng.normal()), lambda: int(rng.integers(-5, 5)), lambda: bool(rng.integers(2)), lambda: None,
              lambda: "s", lambda: np.float64(rng.normal()), lambda: np.int64(rng.integers(9)), lambda: np.bool_(True),
              lambda: float("nan"), lambda: np.float64("inf"), lambda: np.arange(3.0), lambda: -math.inf,
              lambda: {1, 2}, lambda: 1e308 * 10]
    if depth < 3 and rng.random() < 0.6:
        n = int(rng.integers(0, 4))
        kind = rng.integers(3)
        kids = [_random_tree(rng, depth + 1) for _ in range(n)]
        if kind == 0:
            return {(f"k{i}" if rng.random() < 0.8 else i): v for i, v in enumerate(kids)}
        return kids if kind == 1 else tuple(kids)
    return leaves[int(rng.integers(len(leaves)))]()


@pytest.mark.parametrize("seed", range(3))
def test_plain_and_finite_check_equal_the_plain_walks(seed: int) -> None:
    from biasbound._exceptions import InputError
    from biasbound.certificate import _check_finite_tree, _finite_json, _plain

    rng = np.random.default_rng(seed)
    outcomes = set()
    for _ in range(400):
        tree = _random_tree(rng)
        try:
            ref = _reference_plain(tree)
        except Exception as exc:  # noqa: BLE001  (the same exception type from both)
            with pytest.raises(type(exc)):
                _plain(tree)
        else:
            got = _plain(tree)
            assert repr(got) == repr(ref)  # repr: NaN == NaN and int vs float told apart
            assert [type(x) for x in _leaves(got)] == [type(x) for x in _leaves(ref)]
        try:
            _check_finite_tree(tree, "f")
            walk = "ok"
        except (InputError, TypeError) as exc:
            walk = type(exc).__name__
        outcomes.add(walk)
        if _finite_json(tree):  # the fast check passes only what the walk passes
            assert walk == "ok"
    assert outcomes == {"ok", "InputError", "TypeError"}  # every outcome was exercised


def _leaves(x):
    if isinstance(x, dict):
        return [y for v in x.values() for y in _leaves(v)]
    if isinstance(x, list):
        return [y for v in x for y in _leaves(v)]
    return [x]


# ------------------------------------------------------------------ alpha*(sigma) guided by Brent's method
def _plain_alpha_star(F, delta, hi=1.0, rtol=1e-12):  # verbatim: the bisection before the guide
    if F(hi) <= delta:
        return hi
    lo = 0.0
    if F(lo) > delta:
        return 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= rtol * hi:
            break
        if F(mid) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("seed", range(4))
def test_guided_alpha_star_equals_the_plain_bisection(seed: int) -> None:
    from scipy import stats

    from biasbound.bounds import RandomJudge
    from biasbound.bounds._combined import Plan
    from biasbound.calibration import _alpha_star

    rng = np.random.default_rng(seed)
    for _ in range(40):  # the random-judge bound itself (the per-model recheck's F), at random records and points
        levels = np.sort(rng.choice(np.arange(1, 17) / 16, size=int(rng.integers(1, 6)), replace=False))
        n = int(rng.integers(5, 60))
        sums = np.sort(rng.integers(0, n + 1, size=levels.size))[::-1].astype(float)
        rec = RandomJudge(levels=levels, sums=sums, n=n, beta=1e-3,
                          shift_ratio=None if rng.random() < 0.5 else float(rng.uniform(0, 0.2)))
        plan = Plan(Knowledge.of(rec), "tight")
        tau, dim, delta = float(rng.uniform(0.2, 1.5)), int(rng.integers(2, 60)), float(rng.choice([0.01, 0.05, 0.1]))
        sigma = float(rng.uniform(0.001, 0.3)) * tau / math.sqrt(2 * stats.chi2.isf(delta, dim))
        F = lambda a: plan.evaluate(tau, a, sigma, dim)[0]  # noqa: E731, B023 (called within this iteration)
        for rtol in (1e-6, 1e-9):
            for floor in (0.0, float(rng.uniform(0, 1))):  # a floor that may be infeasible: the guide then gives up
                assert _alpha_star(F, delta, rtol=rtol, guided=True, floor=floor) == _plain_alpha_star(F, delta, rtol=rtol)
    for _ in range(200):  # smooth nondecreasing functions with flat and steep parts, and steps (the guide then fails)
        c, w, step = float(rng.uniform(-0.2, 1.2)), float(10 ** rng.uniform(-9, 0)), rng.random() < 0.3
        F = (lambda a: float(a > c)) if step else (lambda a: 0.5 * (1 + math.tanh((a - c) / w)))  # noqa: E731, B023 (called within this iteration)
        delta = float(rng.uniform(0.05, 0.95))
        for rtol in (1e-6, 1e-12):
            assert _alpha_star(F, delta, rtol=rtol, guided=True) == _plain_alpha_star(F, delta, rtol=rtol)


def _plain_sigma_star(G, delta, hi, lo=0.0, rtol=1e-12, grid=12):  # verbatim: the search before the guide
    pts = [lo + (hi - lo) * i / grid for i in range(grid + 1)]
    ok = [i for i, s in enumerate(pts) if G(s) <= delta]
    if not ok:
        return None
    i = ok[-1]
    if i == grid:
        return hi
    lo, hi = pts[i], pts[i + 1]
    floor = pts[-1] * 1e-9
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi or hi - lo <= rtol * hi or hi <= floor:
            break
        if G(mid) <= delta:
            lo = mid
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("seed", range(4))
def test_guided_sigma_star_equals_the_plain_search(seed: int) -> None:
    from biasbound.bounds import RandomJudge
    from biasbound.bounds._combined import Plan
    from biasbound.bounds._tail import noise_only_sigma
    from biasbound.calibration import _sigma_star

    rng = np.random.default_rng(100 + seed)
    seen = 0
    for _ in range(40):  # the per-model recheck's sigma_max search: the random-judge bound at the judge's alpha
        levels = np.sort(rng.choice(np.arange(1, 17) / 16, size=int(rng.integers(1, 6)), replace=False))
        n = int(rng.integers(5, 60))
        sums = np.sort(rng.integers(0, n + 1, size=levels.size))[::-1].astype(float)
        rec = RandomJudge(levels=levels, sums=sums, n=n, beta=1e-3,
                          shift_ratio=None if rng.random() < 0.5 else float(rng.uniform(0, 0.2)))
        plan = Plan(Knowledge.of(rec), "tight")
        tau, dim, delta = float(rng.uniform(0.2, 1.5)), int(rng.integers(2, 60)), float(rng.choice([0.01, 0.05, 0.1]))
        alpha = float(rng.uniform(0.05, 1.0))
        s_hi = noise_only_sigma(tau, delta, dim)
        G = lambda s: plan.evaluate(tau, alpha, s, dim)[0]  # noqa: E731, B023 (called within this iteration)
        for lo in (0.0, float(rng.uniform(0, 0.5)) * s_hi):
            for rtol in (1e-6, 1e-12):
                got = _sigma_star(G, delta, s_hi, lo=lo, rtol=rtol, grid=8, guided=True)
                assert got == _plain_sigma_star(G, delta, s_hi, lo=lo, rtol=rtol, grid=8)
                seen += got is not None and 0 < got < s_hi
    assert seen > 20  # most searches ended inside a bracket (the guided part ran)


# ------------------------------------------------------------------ per-model rechecks shared by equal knowledge
def test_models_with_equal_knowledge_share_a_recheck_that_verify_recomputes() -> None:
    import json

    import pandas as pd

    from biasbound.pipeline import certify

    rng = np.random.default_rng(7)
    pattern = [(float(rng.integers(0, 5)) / 4, float(rng.integers(0, 5)) / 4) for _ in range(6)]
    rows = []
    for m in range(10):  # models 0-5 judged alike (equal knowledge), the others at random
        for i in range(6):
            g1, g2 = pattern[i] if m < 6 else (float(rng.integers(0, 5)) / 4, float(rng.integers(0, 5)) / 4)
            for g, sc in ((1, g1), (2, g2)):
                rows.append({"judge": "j", "model": f"m{m}", "item_id": f"q{i}", "variant": "original", "rerun": 0,
                             "game": g, "score": sc, "source": "t.csv", "line": 0})
    res = certify(pd.DataFrame(rows), out=None, plots=False, progress=False, seed=0)
    certs = res.judges["j"].model_certificates
    keys = [json.dumps([c.knowledge, c.dim], sort_keys=True) for c in certs.values()]
    assert len(set(keys)) < len(keys)  # some models shared a recheck
    for c in certs.values():  # each one's derived fields are what verify() recomputes from its own inputs alone
        assert c.verify()["holds"]


# ------------------------------------------------------------------ the judgments digest's row order
@pytest.mark.parametrize("seed", range(4))
def test_lex_order_equals_lexsort_and_its_tie_check(seed: int) -> None:
    from biasbound._integrity import _lex_order

    rng = np.random.default_rng(seed)
    for _ in range(60):
        n = int(rng.integers(0, 300))
        huge = rng.random() < 0.2  # spans whose product overflows int64: the lexsort route
        keys = tuple(rng.integers(-1, 4 if not huge else 2**40, size=n).astype(np.int64) if j != 4 else
                     rng.integers(-1, 30, size=n).astype(np.int64) for j in range(5))
        order, tied = _lex_order(keys)
        ref = np.lexsort(keys)
        assert np.array_equal(order, ref)
        ref_tied = n > 1 and bool(np.logical_and.reduce([k[ref][1:] == k[ref][:-1] for k in keys]).any())
        assert tied == ref_tied


# ------------------------------------------------------------------ judgments digest: per-model item/variant indices
def _reference_judgments_digest(frame):
    """The per-model loop as it was (np.unique and searchsorted per model), verbatim apart from names."""
    import hashlib

    import pandas as pd

    from biasbound._integrity import _lex_order, canonical_json, sha256_text

    n = len(frame)

    def column(c, default):
        return frame[c] if c in frame.columns else pd.Series([default] * n, index=frame.index)

    judges = sorted(set(map(str, pd.unique(column("judge", "").astype(str)))))
    m_codes, models = pd.factorize(column("model", "").astype(str), sort=True)
    i_codes, items = pd.factorize(column("item_id", "").astype(str), sort=True)
    v_codes, variants = pd.factorize(column("variant", "original").astype(str), sort=True)
    rerun = column("rerun", 0).to_numpy(dtype="<i8")
    game = column("game", 0).to_numpy(dtype="<i8")
    score = column("score", np.nan).to_numpy(dtype="<f8") + 0.0
    score[np.isnan(score)] = np.nan
    models, items, variants = (np.asarray(list(x), dtype=object) for x in (models, items, variants))
    keys = (game, rerun, v_codes, i_codes, m_codes)
    order, tied = _lex_order(keys)
    if n > 1 and tied:
        order = np.lexsort((score, *keys))
    per_model = {}
    sm = m_codes[order]
    cuts = [0, *(np.flatnonzero(sm[1:] != sm[:-1]) + 1).tolist(), n] if n else [0]
    for a, b in zip(cuts[:-1], cuts[1:]):
        idx = order[a:b]
        it, vt = np.unique(i_codes[idx]), np.unique(v_codes[idx])
        head = {"judge": judges[0] if len(judges) == 1 else judges, "model": str(models[sm[a]]),
                "item_ids": items[it].tolist(), "variants": variants[vt].tolist()}
        h = hashlib.sha256((canonical_json(head) + "\n").encode("utf-8"))
        for arr in (np.searchsorted(it, i_codes[idx]), np.searchsorted(vt, v_codes[idx]), rerun[idx], game[idx]):
            h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(score[idx], dtype="<f8").tobytes())
        per_model[str(models[sm[a]])] = h.hexdigest()
    return sha256_text(canonical_json(per_model)), per_model


@pytest.mark.parametrize("seed", range(12))
def test_judgments_digest_equals_the_per_model_unique_route(seed: int) -> None:
    import pandas as pd

    from biasbound._integrity import judgments_digest

    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400)) if seed else 0
    frame = pd.DataFrame({
        "judge": "j",
        "model": rng.choice([f"m{k}" for k in range(int(rng.integers(1, 9)))], n),
        "item_id": rng.choice([f"q{k}" for k in range(int(rng.integers(1, 40)))], n),
        # some models lack some variants, and a variant may sort between two others of a model
        "variant": rng.choice(["original", "swap", "format:md", "paraphrase", "rerun"], n),
        "rerun": rng.integers(0, 3, n), "game": rng.integers(1, 3, n),
        "score": np.where(rng.random(n) < 0.1, np.nan, np.round(rng.random(n), 1) * rng.choice([1.0, -1.0], n)),
    })
    if seed % 3 == 0 and n:  # keys given twice: the score-breaking lexsort route
        frame = pd.concat([frame, frame.iloc[: n // 4]], ignore_index=True)
    assert judgments_digest(frame) == _reference_judgments_digest(frame)


# ------------------------------------------------------------------ judge card: rank-interval bootstrap denominators
def _reference_rank_intervals(mat, rounds, seed, level):
    """The card's rank bootstrap as it was: both resampled sums as dense products."""
    from scipy import stats

    from biasbound.leaderboard import _draw_counts

    present = ~np.isnan(mat)
    x = np.where(present, mat, 0.0)
    ranks = []
    for chunk in _draw_counts(seed, rounds, mat.shape[1]):
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.asarray(chunk @ x.T) / np.asarray(chunk @ present.T.astype(float))
        means = np.where(np.isnan(means), -np.inf, means)
        ranks.append(stats.rankdata(-means, axis=1, method="min"))
    rk = np.vstack(ranks)
    q = 100.0 * (1.0 - level) / 2.0
    return (np.floor(np.percentile(rk, q, axis=0)).astype(int), np.ceil(np.percentile(rk, 100 - q, axis=0)).astype(int))


@pytest.mark.parametrize("seed", range(8))
def test_rank_intervals_equal_the_dense_denominator_route(seed: int) -> None:
    from biasbound.card import _bootstrap_rank_intervals

    rng = np.random.default_rng(seed)
    mat = np.round(rng.random((int(rng.integers(1, 30)), int(rng.integers(1, 80)))), 1)
    # none, few (the sparse route) or many missing (the dense route); a model with every item missing too
    mat[rng.random(mat.shape) < [0.0, 0.03, 0.4][seed % 3]] = np.nan
    if seed == 7:
        mat[0] = np.nan
    got = _bootstrap_rank_intervals(mat, 300, seed, 0.95)
    want = _reference_rank_intervals(mat, 300, seed, 0.95)
    assert all(np.array_equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("seed", range(10))
def test_column_codes_equal_factorising_the_strings(seed: int) -> None:
    import pandas as pd

    from biasbound.pipeline._codes import _ColumnCodes

    def plain(values, sort):  # the route it replaced: every column as strings, factorised (sorted) per call
        codes, uniques = pd.factorize(values.astype(str), sort=sort)
        codes, uniques = codes.astype(np.int64), np.asarray(uniques, dtype=object)
        if (codes < 0).any():
            codes[codes < 0] = len(uniques)
            uniques = np.append(uniques, np.nan)
        return codes, uniques

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 2000))
    names = [f"m{i}" for i in range(int(rng.integers(1, 30)))] + ["Z", "a", "é", "10", "9"]
    frame = pd.DataFrame({"model": pd.Series(rng.choice(names, n), dtype="str"),
                          "game": rng.integers(-2, 12, n), "rerun": rng.integers(0, 3, n).astype(float)})
    if seed % 2:  # missing ids: one more value, last in either order
        frame.loc[rng.random(n) < 0.1, "model"] = None
    ids = _ColumnCodes(frame)
    for col in ("model", "game", "rerun"):
        for sort in (True, False):
            got, want = ids.column(col, sort=sort), plain(frame[col], sort)
            assert np.array_equal(got[0], want[0])
            assert got[1].tolist() == want[1].tolist() or (
                pd.isna(got[1][-1]) and pd.isna(want[1][-1]) and got[1][:-1].tolist() == want[1][:-1].tolist())

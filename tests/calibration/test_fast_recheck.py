"""The per-model recheck's fast routes equal plain reference copies (no statistics: exact equality of floats)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biasbound.bounds._knowledge import Knowledge


def _plain_alpha_star(F, delta, hi=1.0, rtol=1e-12):  # verbatim: the bisection before any guide
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


def _random_judge(rng: np.random.Generator):
    from biasbound.bounds import RandomJudge

    levels = np.sort(rng.choice(np.arange(1, 17) / 16, size=int(rng.integers(1, 6)), replace=False))
    n = int(rng.integers(5, 60))
    sums = np.sort(rng.integers(0, n + 1, size=levels.size))[::-1].astype(float)
    return RandomJudge(levels=levels, sums=sums, n=n, beta=1e-3,
                       shift_ratio=None if rng.random() < 0.5 else float(rng.uniform(0, 0.2)))


@pytest.mark.parametrize("seed", range(4))
def test_alpha_star_with_a_guess_equals_the_plain_bisection(seed: int) -> None:
    from biasbound.bounds._combined import Plan
    from biasbound.calibration import _alpha_star

    rng = np.random.default_rng(300 + seed)
    hits = 0
    for _ in range(40):  # the random-judge bound at sigma = 0 (steps): the per-model alpha_max search
        plan = Plan(Knowledge.of(_random_judge(rng)), "tight")
        tau, dim, delta = float(rng.uniform(0.2, 1.5)), int(rng.integers(2, 60)), float(rng.choice([0.01, 0.05, 0.1]))
        for sigma in (0.0, float(rng.uniform(0.001, 0.05)) * tau):
            F = lambda a: plan.evaluate(tau, a, sigma, dim)[0]  # noqa: E731, B023 (called within this iteration)
            for rtol in (1e-6, 1e-12):
                plain = _plain_alpha_star(F, delta, rtol=rtol)
                # the right value, a value off by less than the last step, a wrong one, and out-of-range guesses
                for guess in (plain, plain * (1 + 0.1 * rtol), float(rng.uniform(0, 1)), -1.0, 2.0, math.nan):
                    calls = []
                    got = _alpha_star(lambda a: calls.append(a) or F(a), delta, rtol=rtol, guess=guess)  # noqa: B023 (called within this iteration)
                    assert got == plain
                    hits += guess == plain and 0 < plain < 1 and len(calls) <= 6
    assert hits > 40  # the right guess was found in a few evaluations (the guided route ran)
    for _ in range(200):  # steps and smooth functions with any guess
        c, w, step = float(rng.uniform(-0.2, 1.2)), float(10 ** rng.uniform(-9, 0)), rng.random() < 0.5
        F = (lambda a: float(a > c)) if step else (lambda a: 0.5 * (1 + math.tanh((a - c) / w)))  # noqa: E731, B023 (called within this iteration)
        delta = float(rng.uniform(0.05, 0.95))
        for rtol in (1e-6, 1e-12):
            plain = _plain_alpha_star(F, delta, rtol=rtol)
            for guess in (plain, c, float(rng.uniform(0, 1))):
                assert _alpha_star(F, delta, rtol=rtol, guess=guess) == plain


def test_recheck_with_any_hint_equals_the_recheck_without() -> None:
    from biasbound._exceptions import InfeasibleCertificateError
    from biasbound.calibration import calibrate, recheck

    rng = np.random.default_rng(11)
    recs = [_random_judge(rng) for _ in range(12)]
    judge = calibrate({f"m{i} | g": r for i, r in enumerate(recs)}, tau=0.8, delta=0.05, dim=40)
    prev, seen = None, 0
    for r in recs:
        dim = int(rng.integers(20, 41))
        try:  # the recheck's body with no guess: the plain searches
            plain = calibrate(r, tau=judge.tau, delta=judge.delta, dim=dim, method=judge.method,
                              tau_split=judge.tau_split, frontier_points=0, alpha=judge.alpha, sigma=judge.sigma,
                              _rule=judge.default_rule)
        except InfeasibleCertificateError:  # an infeasible model: the hinted recheck refuses it alike
            with pytest.raises(InfeasibleCertificateError):
                recheck(judge, knowledge=r, dim=dim, frontier_points=0, hint=prev)
            continue
        for hint in (None, prev, judge, plain):
            got = recheck(judge, knowledge=r, dim=dim, frontier_points=0, hint=hint)
            assert json.dumps(got.to_dict(), default=repr) == json.dumps(plain.to_dict(), default=repr)
        prev = plain
        seen += 1
    assert seen > 6  # most models were feasible (compared)
    with pytest.raises(TypeError):
        recheck(judge, hint=0.5)


def test_remembered_few_tails_equal_the_array_route_and_are_fresh_arrays() -> None:
    from biasbound.bounds._tail import _few_tails, tail

    rng = np.random.default_rng(5)
    for _ in range(50):
        tau, sigma, dim = float(rng.uniform(0.2, 2)), float(rng.uniform(0.01, 0.5)), int(rng.integers(1, 3000))
        q = np.concatenate([[0.0], np.sort(rng.uniform(0, 4, size=int(rng.integers(1, 8))))])
        # more than 64 values take the array route (no memo): the few values must equal it, also when remembered
        ref = tail(np.concatenate([q, np.full(70, 9.0)]), tau=tau, sigma=sigma, dim=dim)[: q.size]
        first = tail(q, tau=tau, sigma=sigma, dim=dim)
        first[:] = -1.0  # a caller writing into its result changes nothing remembered
        again = tail(q, tau=tau, sigma=sigma, dim=dim)
        assert np.array_equal(again, ref)
    assert _few_tails.cache_info().hits >= 50

"""The knowledge build's fast routes equal plain reference copies (no statistics: exact equality of floats)."""

from __future__ import annotations

import math

import numpy as np
import pytest


def _plain_kl(p: float, q: float) -> float:  # verbatim: the ufunc route before the Cython one
    from scipy.special import rel_entr

    return float(rel_entr(p, q) + rel_entr(1.0 - p, 1.0 - q))


@pytest.mark.parametrize("seed", range(3))
def test_kl_equals_the_ufunc_route(seed: int) -> None:
    from biasbound.sensitivity import _kl

    rng = np.random.default_rng(900 + seed)
    for _ in range(20000):
        p = float(rng.choice([rng.random(), 0.0, 1.0, rng.random() ** 8, 1 - rng.random() ** 8]))
        q = float(rng.choice([rng.random(), p + (1 - p) * rng.random(), 1 - 1e-16, p, 1.0, 0.0, p * (1 + 1e-12)]))
        want, got = _plain_kl(p, q), _kl(p, q)
        assert type(got) is float
        assert got == want or (math.isnan(got) and math.isnan(want))


@pytest.mark.parametrize("seed", range(3))
def test_kl_bounds_equal_the_ufunc_route(seed: int, monkeypatch) -> None:
    import biasbound.sensitivity as sen

    rng = np.random.default_rng(950 + seed)
    cases = [(float(rng.integers(0, n + 1)) / n, n, float(10 ** rng.uniform(-8, -0.5)))
             for n in rng.integers(1, 5000, size=150).tolist()]
    got = [(sen.kl_upper_bound(m, n, b), sen.kl_lower_bound(m, n, b)) for m, n, b in cases]
    monkeypatch.setattr(sen, "_kl", _plain_kl)
    want = [(sen.kl_upper_bound(m, n, b), sen.kl_lower_bound(m, n, b)) for m, n, b in cases]
    assert got == want


@pytest.mark.parametrize("seed", range(3))
def test_rows_by_code_equal_the_stable_argsort(seed: int) -> None:
    from biasbound.pipeline._knowledge import _by_code

    rng = np.random.default_rng(990 + seed)
    for _ in range(50):
        codes = rng.integers(0, int(rng.integers(1, 20)), size=int(rng.integers(0, 200)))
        if rng.random() < 0.5:
            codes = np.sort(codes)  # grouped rows: the arrays themselves
        col, other = rng.random(codes.size), rng.integers(0, 9, size=codes.size)
        order = np.argsort(codes, kind="stable")
        got = _by_code(codes, col, other)
        for g, want in zip(got, (codes[order], col[order], other[order])):
            assert np.array_equal(g, want) and g.dtype == want.dtype

"""``pipeline._codes.stable_order``: the stable argsort of integer keys through a narrow dtype is the same permutation
as numpy's stable argsort of the keys as given (deterministic; no false-failure rate)."""

from __future__ import annotations

import numpy as np
import pytest

from biasbound.pipeline._codes import stable_order


@pytest.mark.parametrize("lo, hi", [(0, 5), (-128, 127), (-129, 128), (0, 2**15 - 1), (-(2**15), 2**15), (0, 2**40)])
def test_stable_order_is_numpys_stable_argsort(lo: int, hi: int) -> None:
    rng = np.random.default_rng(lo & 0xFFFF)
    key = rng.integers(lo, hi, 20_000, endpoint=True, dtype=np.int64)
    key[:2] = lo, hi  # both ends present: the narrow dtype is chosen from them
    got = stable_order(key)
    assert np.array_equal(got, np.argsort(key, kind="stable"))
    same = np.diff(key[got]) == 0  # equal keys keep their row order
    assert np.array_equal(key[got], np.sort(key)) and np.all(np.diff(got)[same] > 0)


def test_stable_order_of_nothing_and_of_floats() -> None:
    assert stable_order(np.zeros(0, dtype=np.int64)).size == 0
    x = np.array([0.5, 0.25, 0.5, 0.0])
    assert np.array_equal(stable_order(x), [3, 1, 0, 2])  # not integers: sorted as given

"""The Spark engine (PySpark in local mode, one session for the module) gives the embedded engine's statistics.

Compared on the demo's judgments (76 models x 500 questions x 2 games, one missing game) and on a random
table with reruns, a variant and NaN scores, read from Parquet. Counts equal; sums (Spark's plain double sums,
DuckDB's compensated ones) equal to 1e-12 relative. No statistical test (false-failure rate 0).
The 10^6-row comparison is in benchmarks/scale.py (--spark), too slow for CI on 2 cores.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from biasbound.engine import reduce

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::DeprecationWarning")
pyspark = pytest.importorskip("pyspark", reason="pyspark is in the test extra: pip install -e '.[test]'")
if shutil.which("java") is None:  # .ci/run installs a Java runtime; without one Spark cannot start
    pytest.fail("the Spark engine test needs a Java runtime (17+) on PATH", pytrace=False)



def _same(a, b) -> None:
    assert a.rows == b.rows and a.levels == b.levels
    for x, y in ((a.judges, b.judges), (a.models, b.models), (a.items, b.items), (a.generators, b.generators)):
        assert list(x) == list(y)
    for x, y in ((a.cells, b.cells), (a.neighbors, b.neighbors)):
        assert list(x.columns) == list(y.columns) and len(x) == len(y)
        for c in x.columns:
            if x[c].dtype == np.float64:
                np.testing.assert_allclose(x[c].to_numpy(), y[c].to_numpy(), rtol=1e-12, atol=1e-15)
            else:
                assert np.array_equal(x[c].to_numpy(), y[c].to_numpy()), c


@pytest.mark.slow
def test_spark_equals_duckdb_on_the_demo(spark) -> None:
    from biasbound.data.embedded import load_demo

    frame = load_demo().frame[["judge", "model", "item_id", "variant", "rerun", "game", "score"]]
    got = reduce(frame, engine="spark", session=spark)
    assert got.engine == "spark" and got.rows == 76_000
    assert int(got.neighbors["missing"].sum()) == 1  # the record lacking game 2
    _same(got, reduce(frame))


@pytest.mark.slow
def test_spark_equals_duckdb_on_a_random_parquet_table(spark, tmp_path) -> None:
    rng = np.random.default_rng(7)
    n = 20_000
    raw = pd.DataFrame({"judge": rng.choice(["a", "b"], n), "model": [f"m{k}" for k in rng.integers(0, 40, n)],
                        "item_id": [f"q{k}" for k in rng.integers(0, 300, n)], "variant": rng.choice(["original", "v"], n, p=[0.8, 0.2]),
                        "rerun": rng.integers(0, 3, n), "game": rng.integers(0, 3, n), "score": rng.uniform(1, 7, n)})
    raw = raw.drop_duplicates(["judge", "model", "item_id", "variant", "rerun", "game"], ignore_index=True)
    raw.loc[rng.random(len(raw)) < 0.05, "score"] = np.nan
    path = tmp_path / "t.parquet"
    raw.to_parquet(path)
    got = reduce(path, engine="spark", session=spark, scale=(1, 7))
    assert got.neighbors["missing"].sum() > 0 and got.neighbors["unmatched"].sum() > 0
    _same(got, reduce(path, scale=(1, 7)))

"""Shared test fixtures: the real third-party data folder and the embedded demo set."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The real third-party data the tests use, vendored with licences and provenance under
#: tests/data/ (see its README); a fresh clone needs no other folder.
SHARED_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of the vendored real-data folder (tests/data)."""
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_set():
    """The embedded ko-arena-hard-v0.1 JudgmentSet, loaded once per session (do not mutate)."""
    from biasbound.data import load_demo

    return load_demo()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local Spark session for every Spark test of a test process (tests/engine: one JVM start, not one per
    module); pyspark is imported only by a test that asks for it."""
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("biasbound-test")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()

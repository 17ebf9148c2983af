"""One local Spark session for every Spark test of a test process (one JVM start, not one per module)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("biasbound-test")
               .config("spark.sql.shuffle.partitions", "2").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "1g").getOrCreate())
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()

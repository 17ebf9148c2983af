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

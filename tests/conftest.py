"""Shared test fixtures: the real third-party data folder and the embedded demo set."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: The project's real third-party data (``shared/data`` beside the repository checkout);
#: override with the BIASBOUND_SHARED_DATA environment variable.
SHARED_DATA = Path(os.environ.get("BIASBOUND_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of the shared real-data folder; a missing folder fails the test loudly (no skip)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(
            f"The shared data folder {SHARED_DATA} does not exist; set BIASBOUND_SHARED_DATA to the folder "
            "holding ko-arena-hard-v0.1/, llmbar/, arena-hard-v0.1/ and judgment-to-noise/."
        )
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_set():
    """The embedded ko-arena-hard-v0.1 JudgmentSet, loaded once per session (do not mutate)."""
    from biasbound.data import load_demo

    return load_demo()

"""biasbound's pytest plugin: fixtures and a marker over the judge card, for judge checks in a test suite.

Installed with biasbound (entry point ``pytest11``), so pytest loads it by itself; with plugin autoloading off
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``) load it with ``pytest -p biasbound``. It adds:

* the marker ``@pytest.mark.judge_card(SOURCE, *CONDITIONS, judge=None)``: when the test runs, the judge card of
  SOURCE (a certify output folder or its ``summary.json``) is checked against the ``--fail-if`` conditions
  (``"flip_rate>0.1"``) and the test fails, naming each condition that holds;
* the fixture ``assert_judge_card`` (:func:`biasbound.testing.assert_judge_card`) and the fixture
  ``assert_no_regression`` (:func:`biasbound.testing.assert_no_regression`: ``biasbound compare OLD NEW`` as an
  assertion, paired tests included);
* the fixture ``judge_card_of``: the card of a folder, a ``summary.json`` or judgment files (a dict).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["pytest_configure", "pytest_report_header", "pytest_runtest_call"]

MARKER = "judge_card"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(source, *fail_if, judge=None): fail the test when a condition holds "
                            "on the judge card of source (a certify output folder or its summary.json); biasbound")


def pytest_report_header(config: pytest.Config) -> str:
    from biasbound import __version__

    return f"biasbound: {__version__} (judge_card marker, assert_judge_card / assert_no_regression fixtures)"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Check the marked cards in the test's call phase (a condition that holds is a test failure, not an error)."""
    from biasbound.testing.card import assert_judge_card

    for mark in item.iter_markers(name=MARKER):
        if not mark.args:
            raise pytest.UsageError(f"{item.nodeid}: the judge_card marker needs a source (a certify output folder).")
        source, *conds = mark.args
        assert_judge_card(source, *conds, judge=mark.kwargs.get("judge"))


@pytest.fixture
def assert_judge_card() -> Callable[..., dict[str, Any]]:
    """:func:`biasbound.testing.assert_judge_card`."""
    from biasbound.testing.card import assert_judge_card as check

    return check


@pytest.fixture
def assert_no_regression() -> Callable[..., dict[str, Any]]:
    """:func:`biasbound.testing.assert_no_regression`."""
    from biasbound.testing.regression import assert_no_regression as check

    return check


@pytest.fixture
def judge_card_of() -> Callable[[Any], dict[str, Any]]:
    """The judge card of a certify output folder, its ``summary.json`` or judgment files."""
    from pathlib import Path

    from biasbound.commands.compare import load_side

    return lambda source: load_side(Path(source), what="source")

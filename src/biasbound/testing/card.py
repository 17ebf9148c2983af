"""A pytest helper on the judge card: fail a test when a judge's figures cross a bound."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["assert_judge_card"]


def assert_judge_card(source: Any, *fail_if: str, judge: str | None = None) -> dict[str, Any]:
    """Raise ``AssertionError`` when a ``--fail-if`` condition holds on the judge card.

    Parameters
    ----------
    source:
        A ``certify`` output folder or its ``summary.json`` (path), a card dict
        (:func:`biasbound.card.judge_card`), or a :class:`biasbound.pipeline.CertifyResult`.
    fail_if:
        Conditions that FAIL the test, as ``biasbound compare --fail-if`` reads them: ``"flip_rate>0.1"``,
        ``"position_preference>0.6"``, ``"bias_radius>0.5"``, ``"flip_rate:rerun>=0.05"``.
    judge:
        Check this judge only (default: every judge of the card).

    Returns
    -------
    dict
        The card, for further checks.

    Examples
    --------
    >>> from biasbound.testing import assert_judge_card
    >>> assert_judge_card("biasbound-out", "flip_rate>0.1", "position_preference>0.6")  # doctest: +SKIP
    """
    from biasbound.card import check_card, read_card

    card: Any
    if isinstance(source, (str, Path)):
        card = read_card(source)
    elif isinstance(source, Mapping):
        card = dict(source)
    else:
        card = getattr(source, "judge_card", None)
        if not card:
            raise TypeError(f"assert_judge_card needs a path, a card dict or a CertifyResult. Got {type(source).__name__}.")
    if judge is not None:
        if judge not in card["judges"]:
            raise AssertionError(f"judge {judge!r} is not on the card (judges: {', '.join(card['judges'])})")
        card = {**card, "judges": {judge: card["judges"][judge]}}
    failed = check_card(card, list(fail_if))
    if failed:
        raise AssertionError("judge card check failed: " + "; ".join(failed))
    return card

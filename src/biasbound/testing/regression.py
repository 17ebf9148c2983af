"""A pytest helper on two judge runs: fail a test when the candidate judge regressed against the reference."""

from __future__ import annotations

from biasbound.parameters import validate_params
from pathlib import Path
from typing import Any

__all__ = ["assert_no_regression"]


@validate_params
def assert_no_regression(old: str | Path, new: str | Path, *fail_if: str, allow_moves: bool = False,
                         paired: bool = True, rounds: int = 2000, seed: int = 0,
                         match: tuple[str, ...] = ()) -> dict[str, Any]:
    """Raise ``AssertionError`` when ``biasbound compare OLD NEW`` would exit 1.

    Parameters
    ----------
    old, new:
        ``compare``'s two sides: certify output folders (or their ``summary.json``) or judgment files.
    fail_if:
        Conditions that FAIL the test, as ``compare --fail-if`` reads them: card figures on NEW
        (``"flip_rate>0.1"``) and paired figures when both sides hold the same items (``"paired_flip_rate_p<0.01"``).
    allow_moves:
        Figures that moved beyond their 95% intervals (or whose paired test rejects at 5%) do not fail the test.
    paired, rounds, seed:
        The paired comparison (:mod:`biasbound.paired`) and its bootstrap.
    match:
        ``"OLD_JUDGE=NEW_JUDGE"`` pairs, as ``compare --match``: two judges of different names compared.

    Returns
    -------
    dict
        The comparison (``failed``, ``moved``, ``rank_moves``, ``paired``, ``paired_moved``), for further checks.

    Examples
    --------
    >>> from biasbound.testing import assert_no_regression
    >>> assert_no_regression("runs/main", "runs/candidate", "paired_flip_rate_p<0.01")  # doctest: +SKIP
    """
    from biasbound.commands.compare import compare_sides

    _, _, res = compare_sides(Path(old), Path(new), list(fail_if), match=list(match), paired=paired, rounds=rounds,
                              seed=seed)
    problems = list(res["failed"])
    if not allow_moves:
        problems += [f"judge {m['judge']}: {m['figure']} moved beyond its 95% interval" for m in res["moved"]]
        problems += [f"judge {j}: rank of {r['model']} moved {r['old_rank']} → {r['new_rank']}"
                     for j, rs in res["rank_moves"].items() for r in rs]
        problems += [f"paired: {m} moved" for m in res["paired_moved"]]
    if problems:
        raise AssertionError("judge regression: " + "; ".join(problems))
    return res

"""The preflight: a few judge calls before the run spends its budget.

The first ``calls`` original items are judged (through the run's cache, so the main stage reuses
every reply); the share of replies holding a verdict the parser accepts is printed with one raw
reply, and the run stops with a sentence naming the cause when the judge answered but that share is below
``min_parse_rate`` (calls that got no reply are left to the run's own handling of failed calls).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from biasbound._exceptions import JudgeError

__all__ = ["PreflightConfig", "PreflightReport", "check_replies", "preflight_from_config"]


@dataclass(frozen=True)
class PreflightConfig:
    """``preflight: {calls: 4, min_parse_rate: 0.5}``; ``calls: 0`` turns it off."""

    calls: int = 4
    min_parse_rate: float = 0.5


@dataclass(frozen=True)
class PreflightReport:
    """What the preflight saw."""

    calls: int
    answered: int
    parsed: int
    raw: str | None

    @property
    def parse_rate(self) -> float:
        """Parsed replies over answered calls (0 when none answered)."""
        return self.parsed / self.answered if self.answered else 0.0

    def line(self) -> str:
        """The one line printed before the run."""
        reply = "" if self.raw is None else f"; one raw reply: {_short(self.raw)!r}"
        return f"preflight: {self.parsed} of {self.answered} replies parsed ({self.parse_rate:.0%}){reply}"


def _short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + "..."


def preflight_from_config(raw: Any, *, fail: Any) -> PreflightConfig:
    """Validate the config's ``preflight`` block (one sentence per mistake)."""
    if raw is None:
        return PreflightConfig()
    if not isinstance(raw, dict):
        raise fail("preflight", "a mapping {calls, min_parse_rate}", raw)
    extra = sorted(set(raw) - {"calls", "min_parse_rate"})
    if extra:
        raise fail(f"preflight.{extra[0]}", "absent (preflight takes calls and min_parse_rate)", raw[extra[0]])
    calls = raw.get("calls", 4)
    if isinstance(calls, bool) or not isinstance(calls, int) or not 0 <= calls <= 100:
        raise fail("preflight.calls", "an integer in [0, 100]", calls)
    rate = raw.get("min_parse_rate", 0.5)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
        raise fail("preflight.min_parse_rate", "a number in [0, 1]", rate)
    return PreflightConfig(calls=calls, min_parse_rate=float(rate))


def check_replies(results: Sequence[Any], config: PreflightConfig) -> PreflightReport:
    """Count the answered and parsed replies; raise :class:`JudgeError` naming the cause when too few parsed."""
    answered = [r for r in results if r.raw is not None]
    parsed = [r for r in answered if r.status == "ok"]
    unparsed = [r for r in answered if r.status != "ok"]
    example = (unparsed or answered or [None])[0]
    report = PreflightReport(calls=len(results), answered=len(answered), parsed=len(parsed),
                             raw=None if example is None else example.raw)
    if not results or not answered or report.parse_rate >= config.min_parse_rate:
        # no reply at all is the endpoint's failure, not the parser's: the run's own handling of failed calls
        # names it (refused connections, HTTP errors, timeouts) and still writes what the run did
        return report
    raise JudgeError(f"The judge answered {len(answered)} of the preflight's {len(results)} calls, but only {len(parsed)} "
                     f"repl{'y' if len(parsed) == 1 else 'ies'} held a verdict the parser accepts (below the "
                     f"min_parse_rate {config.min_parse_rate:g}); here is one: {_short(str(report.raw))!r} "
                     f"({unparsed[0].reason if unparsed else 'parsed'}); give the judge's own prompt and parser "
                     "under 'prompt' (a preset such as llmbar, or a regex/json/number/logprob parser).")

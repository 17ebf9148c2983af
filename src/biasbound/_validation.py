"""Parameter validation shared by every public entry point.

Each check raises one sentence in the house format::

    The 'delta' parameter of calibrate must be a float in (0, 1). Got 1.5 instead.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from biasbound._exceptions import InputError

__all__ = [
    "Range",
    "arg",
    "check_finite_array",
    "check_in_range",
    "check_int",
    "check_one_of",
    "cli_command",
    "resolve_rng",
    "spawn_seeds",
    "speaking_cli",
]

#: The command-line command being run (``"certify"``, ``"audit"``, ...), or None for Python callers.
#: Messages that suggest a fix name the command-line flag to a command-line user (``--skip-bad``)
#: and the Python argument to a Python caller (``skip_bad=True``); see :func:`arg`.
_CLI_COMMAND: ContextVar[str | None] = ContextVar("biasbound_cli_command", default=None)


@contextmanager
def speaking_cli(command: str) -> Iterator[None]:
    """Within this block, messages speak to a user of the ``biasbound COMMAND`` command line."""
    token = _CLI_COMMAND.set(command)
    try:
        yield
    finally:
        _CLI_COMMAND.reset(token)


def cli_command() -> str | None:
    """The command-line command being run, or None when biasbound is called from Python."""
    return _CLI_COMMAND.get()


def arg(python: str, cli: str) -> str:
    """The words naming a fix: ``cli`` (e.g. ``"--skip-bad"``) on the command line, else ``python``."""
    return cli if _CLI_COMMAND.get() is not None else python


def _interval(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    lo = "-inf" if low is None else f"{low:g}"
    hi = "inf" if high is None else f"{high:g}"
    return f"{'(' if low_open or low is None else '['}{lo}, {hi}{')' if high_open or high is None else ']'}"


@dataclass(frozen=True)
class Range:
    """The allowed interval of one parameter, declared once in :data:`biasbound.parameters.PARAMETERS` and
    read by the Python checks, the YAML config reader and the command-line options alike."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    integer: bool = False
    why: str = ""

    def bounds(self) -> dict[str, Any]:
        """The keyword arguments of :func:`check_in_range` (or :func:`check_int`)."""
        if self.integer:
            return {"low": self.low, "high": self.high}
        return {"low": self.low, "high": self.high, "low_open": self.low_open, "high_open": self.high_open}

    def text(self) -> str:
        """The interval as written in messages, e.g. ``[1e-12, 1)``."""
        return _interval(self.low, self.high, self.low_open, self.high_open)


def _kind(name: str) -> str:
    return "option" if name.startswith("--") else "parameter"


def check_in_range(
    value: Any,
    name: str,
    where: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is a finite real in the interval.

    Raises ``TypeError`` for non-numbers and ``InputError`` (a ``ValueError``) for
    values outside the interval, NaN or infinity.
    """
    interval = _interval(low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"The {name!r} {_kind(name)} of {where} must be a float in {interval}. "
            f"Got {type(value).__name__} instead."
        )
    v = float(value)
    bad = math.isnan(v) or math.isinf(v)
    if not bad and low is not None:
        bad = v <= low if low_open else v < low
    if not bad and high is not None:
        bad = v >= high if high_open else v > high
    if bad:
        raise InputError(f"The {name!r} {_kind(name)} of {where} must be a float in {interval}. Got {value!r} instead.")
    return v


def check_int(value: Any, name: str, where: str, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int after checking it is an integer in ``[low, high]``."""
    interval = _interval(low, high, False, False)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"The {name!r} {_kind(name)} of {where} must be an int in {interval}. Got {type(value).__name__} instead."
        )
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        raise InputError(f"The {name!r} {_kind(name)} of {where} must be an int in {interval}. Got {v!r} instead.")
    return v


def check_one_of(value: Any, name: str, where: str, options: tuple[str, ...]) -> str:
    """Return ``value`` after checking it is one of ``options``."""
    if value not in options:
        allowed = ", ".join(repr(o) for o in options)
        raise InputError(f"The {name!r} {_kind(name)} of {where} must be one of {allowed}. Got {value!r} instead.")
    return value


def check_finite_array(value: Any, name: str, where: str, *, ndim: int | None = None, min_size: int = 1) -> np.ndarray:
    """Return ``value`` as a float array after checking it is non-empty, finite and of ``ndim``."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"The {name!r} parameter of {where} must be an array of numbers. Got {type(value).__name__} instead.") from exc
    if ndim is not None and arr.ndim != ndim:
        raise InputError(f"The {name!r} parameter of {where} must be a {ndim}-D array. Got shape {arr.shape} instead.")
    if arr.size < min_size:
        raise InputError(f"The {name!r} parameter of {where} must hold at least {min_size} value(s). Got {arr.size} instead.")
    n_bad = int(np.count_nonzero(~np.isfinite(arr)))
    if n_bad:
        raise InputError(
            f"The {name!r} parameter of {where} must be finite. Got {n_bad} NaN or infinite value(s) instead; "
            "drop missing judgments before this step."
        )
    return arr


def resolve_rng(rng: np.random.Generator | int | None) -> tuple[np.random.Generator, int]:
    """Turn ``rng`` into ``(generator, seed)`` so that every seed used can be recorded.

    An int is the seed; ``None`` draws a fresh seed from the OS; a Generator yields
    a derived seed ``rng.integers(2**63)`` and a new Generator built from it.
    """
    if rng is None:
        seed = int(cast(int, np.random.SeedSequence().entropy) % (2**63))  # a fresh SeedSequence's entropy is an int
    elif isinstance(rng, np.random.Generator):
        seed = int(rng.integers(2**63))
    elif isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        seed = int(rng)
        if seed < 0:
            raise InputError(f"The 'rng' seed must be a non-negative int. Got {seed} instead.")
    else:
        raise TypeError(f"The 'rng' parameter must be a numpy Generator, an int seed or None. Got {type(rng).__name__} instead.")
    return np.random.default_rng(seed), seed


def spawn_seeds(master: int, n: int) -> list[int]:
    """``n`` independent seeds spawned from the master seed with numpy's SeedSequence (the pipeline's per-judge and
    per-model seeds; ``Certificate.verify`` re-derives the models' seeds with it)."""
    children = np.random.SeedSequence(master).spawn(n)
    return [int(c.generate_state(1, dtype=np.uint64)[0] % (2**63)) for c in children]

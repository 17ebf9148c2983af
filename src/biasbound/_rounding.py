"""The rounding helpers (private): every computed bound is rounded against us, with one set of helpers.

* :func:`up` / :func:`down` move a computed quantity past the float error of a chain of a few IEEE operations
  (relative ``16 eps``, then one float) in the safe direction: radii, sensitivity terms and bounds up;
  ``tau - a``, ``sigma_max`` and a chosen ``alpha`` down;
* :func:`above` / :func:`below` move one float (towards ``+inf`` / towards 0): a value already exact up to its
  last rounding (a mean, a sum of failure probabilities, a noise scale strictly below its maximum);
* :func:`pad` widens a bound evaluated through a longer chain (special functions, sums of many terms) by a relative
  ``1e-12``;
* :func:`split` the float-safe split ``delta = delta_B + delta_Delta``;
* :func:`floor_sig` prints a value with a few significant digits rounded towards 0 (a printed ``alpha_max`` is safe).

stdlib only.
"""

from __future__ import annotations

import math

__all__ = ["PAD", "above", "below", "down", "floor_sig", "pad", "split", "up"]

EPS = 2.0**-52
SLACK = 16 * EPS  # relative float error allowance for a chain of a few IEEE operations
PAD = 1e-12  # relative allowance for a bound evaluated through special functions or long sums


def up(x: float) -> float:
    """Round a computed non-negative quantity up past its float error (bounds we must not undershoot)."""
    if x == 0.0 or math.isinf(x):
        return x
    y = x * (1.0 + SLACK) if x > 0 else x * (1.0 - SLACK)
    return math.nextafter(y, math.inf)


def down(x: float) -> float:
    """Round a computed quantity down past its float error (quantities we must not overshoot)."""
    if x == 0.0 or math.isinf(x):
        return x
    y = x * (1.0 - SLACK) if x > 0 else x * (1.0 + SLACK)
    return math.nextafter(y, -math.inf)


def above(x: float) -> float:
    """The next float above ``x``."""
    return math.nextafter(x, math.inf)


def below(x: float) -> float:
    """The next float towards 0 for ``x > 0`` (``x`` itself otherwise)."""
    return math.nextafter(x, 0.0) if x > 0 else x


def pad(x):  # float or numpy array
    """``x`` widened by the relative ``PAD`` (away from 0 for a positive bound)."""
    return x * (1.0 + PAD)


def split(delta: float, delta_B: float) -> tuple[float, float]:
    """Return ``(delta_B, delta_Delta)`` with ``delta_Delta = delta - delta_B`` and a float sum ``<= delta``."""
    dd = delta - delta_B
    while dd > 0 and delta_B + dd > delta:
        dd = math.nextafter(dd, 0.0)
    return delta_B, max(dd, 0.0)


def floor_sig(x: float, digits: int = 3) -> str:
    """Format ``x`` with ``digits`` significant digits, rounded toward 0 (so a printed alpha_max is safe)."""
    if x <= 0 or not math.isfinite(x):
        return f"{x:g}"
    e = math.floor(math.log10(x)) - digits + 1
    v = math.floor(x / 10.0**e) * 10.0**e
    while v > x:  # float representation of the floored value
        v = math.nextafter(v, 0.0)
    return f"{v:.{digits}g}"

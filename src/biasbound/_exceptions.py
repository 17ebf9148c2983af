"""The biasbound error tree.

::

    BiasboundError                      root of every error biasbound raises on purpose
    ├── InputError (ValueError)         a parameter or input value outside its allowed range
    │   └── DataFormatError             a file that cannot be read as promised (has .path, .line)
    ├── InfeasibleCertificateError (ValueError)
    │                                   (tau, delta) cannot be certified at the requested alpha
    └── JudgeError (RuntimeError)       a judge endpoint failed beyond the retry budget

Type errors for wrong argument types are plain ``TypeError``. Every message is one
sentence that names the parameter (or file and line) and what would be accepted.
"""

from __future__ import annotations

__all__ = [
    "BiasboundError",
    "DataFormatError",
    "InfeasibleCertificateError",
    "InputError",
    "JudgeError",
]


class BiasboundError(Exception):
    """Root of the biasbound error tree."""


class InputError(BiasboundError, ValueError):
    """A parameter or an input value is outside its allowed range."""


class DataFormatError(InputError):
    """A file could not be read as promised.

    Parameters
    ----------
    message:
        The sentence explaining what is wrong and how to fix it.
    path:
        The file that was being read.
    line:
        The 1-based line number (``None`` when the problem is not tied to a line).
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        from biasbound._names import shown

        self.path = None if path is None else str(path)
        self.line = line or None  # 0: the row's line is not known (a row read on a Spark cluster from CSV or JSONL)
        self.reason = message
        where = ""
        if self.path is not None:  # a file's name is shown with its control characters escaped
            where = f"{shown(self.path)}:{self.line}: " if self.line is not None else f"{shown(self.path)}: "
        super().__init__(where + message)


class InfeasibleCertificateError(BiasboundError, ValueError):
    """The requested (tau, delta) guarantee cannot be met at the requested shrinkage.

    ``alpha_max`` holds the largest Lipschitz constant that would make it feasible
    (0.0 when none does).
    """

    def __init__(self, message: str, *, alpha_max: float | None = None) -> None:
        self.alpha_max = alpha_max
        super().__init__(message)


class JudgeError(BiasboundError, RuntimeError):
    """A judge endpoint failed beyond the retry budget or returned something unusable."""

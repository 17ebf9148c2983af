"""biasbound: provably bias-bounded LLM-as-a-judge scores."""

from __future__ import annotations

__version__ = "0.1.0"

from biasbound._exceptions import (
    BiasboundError,
    DataFormatError,
    InfeasibleCertificateError,
    InputError,
    JudgeError,
)

__all__ = [
    "BiasboundError",
    "DataFormatError",
    "InfeasibleCertificateError",
    "InputError",
    "JudgeError",
    "__version__",
]

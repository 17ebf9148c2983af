"""biasbound: provably bias-bounded LLM-as-a-judge scores.

Every public name but the exceptions is loaded on first use (the math needs numpy and scipy, the
data and pipeline entry points pandas too), so ``import biasbound`` and the command line's start-up
(``biasbound --help``) stay light.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from biasbound._version import __version__

from biasbound._exceptions import (
    BiasboundError,
    DataFormatError,
    InfeasibleCertificateError,
    InputError,
    JudgeError,
)

#: Public names loaded on first access: name -> module (``import biasbound`` and the command line's start-up
#: load neither scipy.stats nor pandas; the first use of a name imports its module).
_LAZY = {
    "AlmostSure": "biasbound.bounds",
    "AuditResult": "biasbound.audit",
    "CertificateAudit": "biasbound.audit",
    "HighProbability": "biasbound.bounds",
    "RandomJudge": "biasbound.bounds",
    "audit_certificate_parts": "biasbound.audit",
    "BoundCalibration": "biasbound.calibration",
    "Certificate": "biasbound.certificate",
    "CertifyResult": "biasbound.pipeline",
    "CombinedSensitivity": "biasbound.sensitivity",
    "FullPopulation": "biasbound.bounds",
    "JudgmentSet": "biasbound.data",
    "LoadedInputs": "biasbound.data",
    "Knowledge": "biasbound.bounds",
    "MechanismResult": "biasbound.mechanism",
    "Moments": "biasbound.bounds",
    "Sample": "biasbound.bounds",
    "SchematicResult": "biasbound.schematic",
    "SensitivityEstimate": "biasbound.sensitivity",
    "apply_mechanism": "biasbound.mechanism",
    "audit_certificate": "biasbound.audit",
    "bias_radius": "biasbound.figures",
    "calibrate": "biasbound.calibration",
    "certify": "biasbound.pipeline",
    "combine": "biasbound.sensitivity",
    "context_adjusted_rms": "biasbound.sensitivity",
    "estimate": "biasbound.sensitivity",
    "load": "biasbound.data",
    "load_arena_hard": "biasbound.data",
    "load_demo": "biasbound.data",
    "load_table": "biasbound.data",
    "make_certificate": "biasbound.certificate",
    "range_implied": "biasbound.figures",
    "schematic_adherence": "biasbound.schematic",
    "sensitivity_lcb": "biasbound.sensitivity",
    "sensitivity_ucb": "biasbound.sensitivity",
    "shrink": "biasbound.mechanism",
}

__all__ = [
    "AlmostSure",
    "AuditResult",
    "BiasboundError",
    "BoundCalibration",
    "Certificate",
    "CertificateAudit",
    "CertifyResult",
    "CombinedSensitivity",
    "DataFormatError",
    "FullPopulation",
    "HighProbability",
    "InfeasibleCertificateError",
    "InputError",
    "JudgeError",
    "JudgmentSet",
    "Knowledge",
    "LoadedInputs",
    "MechanismResult",
    "Moments",
    "RandomJudge",
    "Sample",
    "SchematicResult",
    "SensitivityEstimate",
    "__version__",
    "apply_mechanism",
    "audit_certificate",
    "audit_certificate_parts",
    "bias_radius",
    "calibrate",
    "certify",
    "combine",
    "context_adjusted_rms",
    "estimate",
    "load",
    "load_arena_hard",
    "load_demo",
    "load_table",
    "make_certificate",
    "range_implied",
    "schematic_adherence",
    "sensitivity_lcb",
    "sensitivity_ucb",
    "shrink",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        if not name.startswith("_") and importlib.util.find_spec(f"biasbound.{name}") is not None:
            return importlib.import_module(f"biasbound.{name}")  # a submodule, e.g. biasbound.mechanism
        raise AttributeError(f"module 'biasbound' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

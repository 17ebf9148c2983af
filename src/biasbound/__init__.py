"""biasbound: provably bias-bounded LLM-as-a-judge scores.

The math (calibration, mechanism, sensitivity, audit, certificate) is imported eagerly and
needs only numpy and scipy. The data, pipeline and schematic entry points are loaded on first
use, so ``import biasbound`` stays light for users who only plan a calibration.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from biasbound._exceptions import (
    BiasboundError,
    DataFormatError,
    InfeasibleCertificateError,
    InputError,
    JudgeError,
)
from biasbound.abb import Calibration, MechanismResult, apply_mechanism, calibrate, shrink
from biasbound.audit import AuditResult, CertificateAudit, audit_certificate, audit_certificate_parts
from biasbound.bounds import AlmostSure, FullPopulation, HighProbability, Knowledge, Moments, RandomJudge, Sample
from biasbound.calibration import BoundCalibration, calibrate_knowledge
from biasbound.certificate import Certificate, make_certificate
from biasbound.figures import bias_radius, range_implied
from biasbound.sensitivity import (
    CombinedSensitivity,
    SensitivityEstimate,
    combine,
    context_adjusted_rms,
    estimate,
    sensitivity_lcb,
    sensitivity_ucb,
)

#: Public names loaded on first access: name -> module.
_LAZY = {
    "CertifyResult": "biasbound.pipeline",
    "JudgmentSet": "biasbound.data",
    "SchematicResult": "biasbound.schematic",
    "certify": "biasbound.pipeline",
    "load_arena_hard": "biasbound.data",
    "load_demo": "biasbound.data",
    "load_table": "biasbound.data",
    "schematic_adherence": "biasbound.schematic",
}

__all__ = [
    "AlmostSure",
    "AuditResult",
    "BiasboundError",
    "BoundCalibration",
    "Calibration",
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
    "calibrate_knowledge",
    "certify",
    "combine",
    "context_adjusted_rms",
    "estimate",
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
        raise AttributeError(f"module 'biasbound' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

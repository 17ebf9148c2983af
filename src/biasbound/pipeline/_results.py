"""What :func:`biasbound.pipeline.certify` returns (the result records), the per-judge records passed
between its steps, and their conversion to JSON types.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["CertifyResult", "ExactAudit", "JudgeCertification"]


@dataclass
class JudgeCertification:
    """Everything certified for one judge.

    Attributes
    ----------
    judge, view:
        The judge name and the view (``"model"`` or ``"leaderboard"``).
    calibration:
        The judge-level :class:`biasbound.calibration.BoundCalibration` (shared α and σ).
    sensitivity:
        The judge-level combined sensitivity (max over models of the per-model combination).
    estimates:
        ``{model: {generator: SensitivityEstimate}}`` (``"*"`` as model in the leaderboard view).
    certificate:
        The judge-level certificate (``dim`` = the largest model dimension in the model view).
    model_certificates:
        ``{model: Certificate}`` in the model view (empty in the leaderboard view).
    audits, pooled_audit, verdict_counts:
        Per-model audits, the audit pooled over the judge's models, and the per-model verdict counts.
    scores, leaderboard, retention:
        Per-item scores, the judge's leaderboard rows and its retention figures.
    seeds:
        ``{model: seed}`` of the mechanism noise draws.
    notes:
        Plain sentences recorded in the certificate scope.
    violated:
        Whether an audit contradicts a certificate of this judge (``certify`` then exits 1).
    """

    judge: str
    view: str
    calibration: Any
    sensitivity: Any
    estimates: dict[str, dict[str, Any]]
    certificate: Any
    model_certificates: dict[str, Any]
    audits: dict[str, Any]
    pooled_audit: Any
    verdict_counts: dict[str, int]
    scores: pd.DataFrame
    leaderboard: pd.DataFrame
    retention: dict[str, Any]
    seeds: dict[str, int]
    notes: list[str] = field(default_factory=list)
    violated: bool = False


@dataclass
class CertifyResult:
    """The result of :func:`certify`.

    Attributes
    ----------
    judges:
        ``{judge: JudgeCertification}`` for every judge that could be certified.
    failures:
        ``{judge: reason}`` for judges that could not be certified (e.g. infeasible).
    leaderboard:
        All judges' leaderboard rows (columns of docs/DESIGN.md "Pipeline outputs").
    panel:
        The panel leaderboard (mean of the judges' certified scores) when several judges.
    retention:
        ``{judge: retention dict}``.
    outputs:
        ``{name: path}`` of every file written.
    seed:
        The master seed.
    load_report:
        The loader's report as a dict (``None`` for a bare DataFrame).
    coverage:
        What the judgments cover (``pipeline._coverage``): per judge and model the items, missing
        judgments and, per generator, neighbours observed / missing / absent / unmatched; the raw
        score scale of each judge's inputs; rows left out with ``skip_bad``.
    settings:
        The checked settings as JSON types.
    baseline:
        The model pairwise verdicts compare against, when known (marked in ``leaderboard.csv``).
    judge_card:
        The judge card (:func:`biasbound.card.judge_card`): flip rates, position preference, rank
        statements per judge; ``summary.json``'s ``judge_card``.
    """

    judges: dict[str, JudgeCertification]
    failures: dict[str, str]
    leaderboard: pd.DataFrame
    panel: pd.DataFrame | None
    retention: dict[str, Any]
    outputs: dict[str, Path]
    seed: int
    load_report: dict[str, Any] | None
    settings: dict[str, Any] = field(default_factory=dict)
    coverage: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None
    judge_card: dict[str, Any] = field(default_factory=dict)
    #: models read but not certified, with their tools' own numbers (``biasbound.native``; leaderboard.csv)
    uncertified: Any = None
    human: dict[str, Any] | None = None  # biasbound.human.human_report (agreement, anchored scores) when labels given

    @property
    def violated(self) -> list[str]:
        """Judges with a certificate that its audit contradicts (``certify`` then exits 1)."""
        return [name for name, j in self.judges.items() if j.violated]

    #: ``{judge: "infeasible" | "bad input"}``: why each judge in ``failures`` could not be certified.
    failure_kinds: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """The exit code of ``certify`` (README table): 2 when a judge could not be certified (the error is
        raised after the other judges' outputs are written), else 1 when an audit contradicts a
        certificate, else 0."""
        return 2 if self.failures else (1 if self.violated else 0)

    @property
    def status(self) -> str:
        """What the exit code means, in words (``summary.json``'s ``status``).

        ``"certified"`` (exit 0): every judge certified, no audit contradicts its certificate;
        ``"violated"`` (1): an audit contradicts a certificate; ``"not certified"`` (2): a judge cannot be
        certified at (τ, δ) (the others, if any, are in ``judges``); ``"bad input"`` (2): every judge that
        could not be certified failed on its data (e.g. no original judgment).
        """
        if self.failures:
            kinds = {self.failure_kinds.get(n, "infeasible") for n in self.failures}
            return "bad input" if kinds == {"bad input"} else "not certified"
        return "violated" if self.violated else "certified"


def jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays, dataclasses, paths and objects with to_dict() to JSON types."""
    kind = type(obj)  # exact built-in types first (the bulk of every record), same results as below
    if obj is None or kind is str or kind is int or kind is bool:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is dict:
        return {str(k): jsonable(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [jsonable(v) for v in obj]
    if hasattr(obj, "to_dict") and not isinstance(obj, (pd.DataFrame, pd.Series)):
        return jsonable(obj.to_dict())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(dataclasses.asdict(obj))
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


@dataclass(frozen=True)
class ExactAudit:
    """The audit of a certificate that rests on all the observed data (nothing held out).

    ``verdict`` is ``"exact"`` when the certificate's knowledge describes T exactly (every item's
    neighbour observed): ``exact_probability`` is then Pr[||M(D) − M(D')|| > τ] itself, computed at
    the released (α, σ); ``"not contradictable"`` when the knowledge is a valid upper bound built
    from every observed neighbour (unobserved items at the range bound, or exact moments for
    Hamming-k): no held-out data exist that could contradict it, and ``exact_probability`` is the
    bound. ``"violated"`` would mean the bound exceeds δ (a defect; never expected).
    """

    verdict: str
    exact_probability: float
    delta: float
    reason: str
    n_neighbors: int
    dim: int

    @property
    def exact_ucb(self) -> float:
        """Nothing is estimated: the upper bound is the value itself."""
        return self.exact_probability

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "exact_probability": self.exact_probability, "exact_ucb": self.exact_probability,
                "delta": self.delta, "reason": self.reason, "n_neighbors": self.n_neighbors, "dim": self.dim,
                "kind": "exact" if self.verdict == "exact" else "bound"}


@dataclass
class _Canon:
    """f(D) of one judge: the canonical rows sorted by (model, item), as codes into sorted names."""

    m: np.ndarray
    i: np.ndarray
    score: np.ndarray  # NaN = missing
    model_names: np.ndarray
    item_names: np.ndarray


@dataclass
class _Batch:
    """The certified batch: canon rows ``pos`` (non-missing, centre hold-out removed)."""

    pos: np.ndarray
    values: dict[str, np.ndarray]  # {model: scores in item order}
    means: np.ndarray | None  # model means (leaderboard view)
    certified: np.ndarray | None  # per-row certified scores (model view)

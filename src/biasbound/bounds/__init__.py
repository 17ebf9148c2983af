"""Bounds on the violation probability of the shrunk Gaussian mechanism, one unit per module.

Every unit answers one question for the calibrator (``violation_bound``)::

    given tau, alpha, sigma, d and what is known about Delta,
    an upper bound on Pr[||M(D) - M(D')||_2 > tau]      (and whether it is exact)

with ``M(D) = alpha f(D) + (1 - alpha) mu + Z``, ``Z ~ N(0, sigma^2 I_d)`` independent on both sides.

========================  =========================  ======  ============================================
unit (module)             knowledge                  exact   proof note
========================  =========================  ======  ============================================
``almost_sure``           AlmostSure (or any A)      yes     docs/proofs/almost_sure.md
``moments``               Moments                    yes     docs/proofs/moments.md
``full_population``       FullPopulation             yes     docs/proofs/full_population.md
``sampled_population``    Sample                     no      docs/proofs/sampled_population.md
``paper``                 Moments                    no      docs/proofs/paper.md (Cor. 3.2)
``random_judge``          RandomJudge                no      docs/proofs/random_judge.md
``high_probability``      HighProbability            no      docs/proofs/high_probability.md
========================  =========================  ======  ============================================

"Exact" means the value is the supremum of the violation probability over every neighbour
distribution consistent with the knowledge (for a full population: the probability itself).

Each knowledge kind answers for itself what the rest of the package asks (:class:`KnowledgeKind`: its survival
curve, its facts in the guarantee sentence, its role in an audit, domination, ...); no module outside ``bounds/``
tests a record's type (docs/DESIGN.md, "Knowledge kinds answer for themselves").
numpy/scipy only.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from biasbound.bounds import (
    almost_sure,
    full_population,
    high_probability,
    moments,
    paper,
    random_judge,
    sampled_population,
)
from biasbound.bounds._combined import UNITS, Plan
from biasbound.parameters import AT_A_POINT, validate_params
from biasbound.bounds._knowledge import (
    KINDS,
    AlmostSure,
    AuditRole,
    FullPopulation,
    HighProbability,
    Knowledge,
    KnowledgeKind,
    Moments,
    RandomJudge,
    Record,
    Sample,
    Wording,
    knowledge_from_dict,
    record_from_dict,
)

__all__ = [
    "KINDS",
    "UNITS",
    "AlmostSure",
    "AuditRole",
    "FullPopulation",
    "HighProbability",
    "Knowledge",
    "KnowledgeKind",
    "Moments",
    "RandomJudge",
    "Record",
    "Sample",
    "Wording",
    "applicable_units",
    "evaluate",
    "knowledge_from_dict",
    "record_from_dict",
    "unit",
    "violation_bound",
]

_BY_NAME = {u.NAME: u for u in UNITS}


def unit(name: str) -> ModuleType:
    """The bound unit called ``name`` (``"almost-sure"``, ``"moments"``, ``"full-population"``, ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"The 'name' parameter of unit must be one of {sorted(_BY_NAME)}. Got {name!r} instead.") from None


@validate_params
def applicable_units(record: Record, *, method: str = "tight") -> list[tuple[ModuleType, str | None]]:
    """Every unit with the reason it does not apply to ``record`` (None when it applies)."""
    out = []
    for u in UNITS:
        reason = u.applies(record)
        if method == "paper" and u is not paper:
            reason = reason or "method='paper' uses Corollary 3.2 only"
        out.append((u, reason))
    return out


@validate_params(exempt=AT_A_POINT)
def violation_bound(tau: float, alpha: float, sigma: float, dim: int, knowledge: Any, *, method: str = "tight") -> float:
    """The best (smallest) valid bound for what is known, combined over generators.

    Parameters
    ----------
    tau, alpha, sigma, dim : float, float, float, int
        Tolerance ``> 0``, shrinkage in [0, 1], noise ``>= 0``, dimension ``>= 1``.
    knowledge : record, list of records, mapping generator -> records, or Knowledge
    method : {"tight", "paper"}

    Returns
    -------
    float
        Per generator the minimum over applicable (unit, record) pairs; then the maximum over
        generators (``how="max"``) or their mean (``how="mixture"``).  Valid on the intersection of the
        records' events (probability ``>= 1 - Knowledge.beta_total``).
    """
    return evaluate(tau, alpha, sigma, dim, knowledge, method=method)[0]


@validate_params(exempt=AT_A_POINT)
def evaluate(tau: float, alpha: float, sigma: float, dim: int, knowledge: Any, *,
             method: str = "tight") -> tuple[float, bool]:
    """``(bound, exact)``: :func:`violation_bound` and whether the binding value is an exact worst case.

    ``exact`` is True when the generator attaining the combined value has its bound from an exact unit
    (almost-sure, moments, full population) — then the value is the supremum of the violation
    probability over all neighbour distributions consistent with that generator's knowledge.
    """
    from biasbound.bounds._tail import check_point

    t, a, s, d = check_point(tau, alpha, sigma, dim, "violation_bound")
    k = Knowledge.of(knowledge)
    total, per = Plan(k, method).evaluate(t, a, s, d, every=True)
    binding = max(per, key=lambda p: p[2])
    return total, bool(binding[1].unit.EXACT) and not (binding[1].record.beta or 0.0) > 0

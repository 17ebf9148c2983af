"""The certify pipeline: judgments → neighbours → sensitivity → calibration → mechanism → audit → outputs.

``certify`` takes a loaded judgment set (one row per judgment, see docs/DESIGN.md
"Judgment tables") and, for each judge it holds, measures the judge's sensitivity on
the observed Hamming-1 neighbours (position swaps, prompt variants, reruns), calibrates
one shrinkage + Gaussian mechanism per judge (Thm 3.1 / Prop. B.3 of the paper, or the
tight calibration of :func:`biasbound.calibrate`), applies it to every model's per-item score
vector, audits the certificate on a held-out share of the neighbours and writes the
certificates, scores, leaderboard, retention figures, plots and an HTML report.

Decisions made where the contracts are silent (documented again in the outputs):

* **One calibration per judge.** In the ``model`` view every model gets its own
  certificate, but all models of a judge share the judge's (α, σ) so that certified
  scores stay comparable: the calibration uses the MAX over models of the per-model
  combined sensitivity (and of its upper confidence bound), which upper-bounds every
  model's own sensitivity, and ``dim`` = the largest number of certified items (σ_max
  decreases in d, so σ is admissible for every model). Each model's certificate is then
  re-derived at its own ``dim`` with the judge's α and σ fixed, so that
  ``Certificate.verify()`` checks exactly the statement made for that model.
* **Audit.** Per model on its held-out neighbours (all generators pooled), and pooled over
  the judge's models (the average over models, with ``dim`` = the largest model dimension,
  which can only raise the violation probability). With ~150 held-out neighbours per model
  at δ = 0.01 a per-model verdict can be "inconclusive" (a KL bound on 150 draws only goes
  below δ when the per-neighbour probabilities are essentially zero; the almost-sure distance
  bound passed to the audit helps); the pooled verdict
  is the headline and the per-model verdict counts are reported beside it.
* **Rerun jitter is a generator like the others.** The certificate is about the scores
  released, which carry the judge's rerun jitter. With ``jitter_adjust=True`` (a ``rerun``
  generator and another one) the jitter-free sensitivity ``context_adjusted_rms(Δ*_g, Δ*_rerun)``
  of each other generator is reported in the scope (``jitter_diagnostic``) and never used to
  calibrate; a generator that moves scores less than reruns do is warned about (the data then
  contradict the additive-jitter model).
* **Audit verdicts.** "holds", "violated", "inconclusive", and "not contradictable" for a
  certificate whose almost-sure bound alone implies it (the audit cannot contradict it). The
  audit covers exactly the certificate's generators; the per-model and pooled audits share a
  Bonferroni budget, so a valid certificate is reported "violated" with probability at most
  ``1 − confidence``. Any "violated" sets ``JudgeCertification.violated`` and ``certify``'s
  exit code 1.

Modules (private; import from ``biasbound.pipeline``):

* ``_settings``: parameter parsing and validation, seeds, the judgments table checks;
* ``_results``: the result records and their JSON form;
* ``_neighbors``: neighbours, hold-out splits and sensitivity of one judge;
* ``_view``: the model and leaderboard views (what f(D) is, the mechanism, the scores columns);
* ``_judge``: one judge's certification as stage functions over frozen records;
* ``_leaderboard``: leaderboard, retention and the panel;
* ``_outputs``: the files written (JSON, tables, plots, report);
* ``_certify``: the entry point :func:`certify`.
"""

from __future__ import annotations

from biasbound.pipeline._certify import certify
from biasbound.pipeline._neighbors import _group_split, _order_within  # noqa: F401 (tests)
from biasbound.pipeline._results import CertifyResult, JudgeCertification, jsonable  # noqa: F401 (runner)
from biasbound.pipeline._settings import describe_generator, parse_center, parse_neighbors

__all__ = [
    "CertifyResult",
    "JudgeCertification",
    "certify",
    "describe_generator",
    "parse_center",
    "parse_neighbors",
]

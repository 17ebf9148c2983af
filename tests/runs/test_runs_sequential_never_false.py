"""Certificates from sequentially stopped runs are true (issue 17): the never-false grid for the stop rule.

Each replication is what ``biasbound run`` does with ``neighbors.sequential`` (swap drawn): for every model,
a seeded draw of ``looks[-1]`` items; look k certifies with the first ``looks[k]`` of each draw declared
as the uniform sample it is (``sampled=``) at β/K; the run stops at the first look whose α gains less than
``min_gain`` (:func:`biasbound.planning.sequential_stops`, the runner's rule), else at the last. The stopped
look's certificate is then checked against the truth.

Truth: the judgment table is a known population (3 models × 30 items, every item's swap verdict known;
a model flips 10%, 30% or 60% of its items to the other end of the range). For Hamming-1 neighbours of the
model view with a fixed centre, M(D) − M(D') = α (f(D) − f(D')) + B with B ~ N(0, 2σ² I_d), so
Pr[‖M(D) − M(D')‖ > τ] = mean over the batch's items i of ncx2.sf(τ²/2σ², d, α²(b_i − v_i)²/2σ²) exactly
(scipy, independent of biasbound's bounds).

False-failure rate: the stopped certificate of one replication is false with probability at most β
(docs/proofs/sequential.md: the K looks' 1 − β/K events hold jointly with probability >= 1 − β, whichever
look the rule stops at), independently over replications (fresh draw seeds, fixed). So the count F of
replications with a false certificate is stochastically below Binomial(R, β) and the test's bound
F <= binom.ppf(1 − 1e-3, R, β) fails by chance with probability <= 1e-3. Seeds are fixed: a run is
reproducible.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, chi2, ncx2

from biasbound import InfeasibleCertificateError
from biasbound.neighbors.registry import sample_indices
from biasbound.pipeline import certify
from biasbound.planning import sequential_stops

pytestmark = pytest.mark.slow  # R replications × up to K certify calls on small tables (~25 s on a loaded machine)

MODELS = {"a": 0.1, "b": 0.3, "c": 0.6}  # share of items whose swap flips the verdict to the other end
N_ITEMS, LOOKS, MIN_GAIN = 30, (6, 12, 24), 0.01
TAU, DELTA, BETA = 0.5, 0.05, 0.05
R = 10


def _population(seed: int) -> tuple[dict[tuple[str, int], float], dict[tuple[str, int], float]]:
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.0, 1.0, 5)
    base = {(m, i): float(rng.choice(grid)) for m in MODELS for i in range(N_ITEMS)}
    swap = {(m, i): (1.0 - b if b != 0.5 else 1.0) if rng.random() < MODELS[m] else b for (m, i), b in base.items()}
    return base, swap


def _table(base, swap, shown) -> pd.DataFrame:
    rows = [(m, f"q{i}", "original", 0, 1, b) for (m, i), b in base.items()]
    rows += [(m, f"q{i}", "original", 0, 2, swap[(m, i)]) for (m, i) in shown]
    f = pd.DataFrame(rows, columns=["model", "item_id", "variant", "rerun", "game", "score"])
    f["judge"], f["verdict"], f["source"], f["line"] = "j", None, "synthetic", np.arange(len(f)) + 1
    return f


def _truth(base, swap, members, alpha: float, sigma: float) -> float:
    """Exact Pr[‖M(D) − M(D')‖ > τ] for one model: D' swaps one item of the batch, drawn uniformly."""
    d = len(members)
    moves = np.array([alpha * alpha * (base[k] - swap[k]) ** 2 for k in members])
    if sigma == 0:
        return float(np.mean(moves > TAU * TAU + 1e-15))
    s2 = 2 * sigma * sigma
    lam = moves / s2
    return float(np.mean(np.where(lam > 0, ncx2.sf(TAU * TAU / s2, d, np.maximum(lam, 1e-300)), chi2.sf(TAU * TAU / s2, d))))


def _sequential(base, swap, draw_seed: int):
    """One sequentially stopped run; returns (stopped look, α per look, certify result of the stopped look)."""
    draws = {m: [int(i) for i in sample_indices(N_ITEMS, LOOKS[-1], draw_seed + j)[0]] for j, m in enumerate(MODELS)}
    alphas: list[float | None] = []
    previous, res = None, None
    for k, m in enumerate(LOOKS):
        shown = [(model, i) for model, idx in draws.items() for i in idx[:m]]
        sampled = {"swap": {"seed": draw_seed, "per_model": {
            model: {"seed": draw_seed + j, "m": m, "n": N_ITEMS, "items": [f"q{i}" for i in idx[:m]]}
            for j, (model, idx) in enumerate(draws.items())}}}
        try:
            res = certify(_table(base, swap, shown), neighbors="swap", tau=TAU, delta=DELTA, beta=BETA / len(LOOKS),
                          sampled=sampled, view="model", center="fixed:0.5", seed=draw_seed, bootstrap_rounds=20,
                          progress=False, plots=False)
        except InfeasibleCertificateError:
            alphas.append(None)
            res = None
            continue
        alpha = float(res.judges["j"].calibration.alpha)
        alphas.append(alpha)
        if sequential_stops(previous, alpha, MIN_GAIN):
            return k + 1, alphas, res
        previous = alpha
    return len(LOOKS), alphas, res


def test_sequentially_stopped_certificates_are_true_at_the_split_beta() -> None:
    base, swap = _population(20261126)
    false_runs, issued, stops = 0, 0, []
    worst = 0.0
    for r in range(R):
        look, alphas, res = _sequential(base, swap, 1000 + 97 * r)
        stops.append(look)
        # the rule replayed on the recorded α's: the first look gaining less than MIN_GAIN, else the last
        certified = [(k, a) for k, a in enumerate(alphas) if a is not None]
        expect = next((k + 1 for (j, a0), (k, a1) in itertools.pairwise(certified) if a1 < a0 * (1 + MIN_GAIN)), len(LOOKS))
        assert look == expect
        if res is None:
            continue
        issued += 1
        jc = res.judges["j"]
        sc = jc.scores[jc.scores["in_batch"]]
        batch = [(m, int(str(i)[1:])) for m, i in zip(sc["model"], sc["item_id"])]
        claims = [_truth(base, swap, [k for k in batch if k[0] == m], jc.calibration.alpha, jc.calibration.sigma)
                  for m in MODELS]
        worst = max(worst, max(claims) / DELTA)
        false_runs += max(claims) > DELTA + 1e-12
    assert issued >= R - 2  # the grid certifies: a test of nothing would pass here too
    assert min(stops) >= 2  # the first certified look never stops the rule
    assert false_runs <= binom.ppf(1 - 1e-3, R, BETA), (false_runs, worst, stops)

"""On LLMBar's 65 judge configurations (both presentation orders of every item, vendored under
tests/data/llmbar), the tight certificate's figures order the judges the way their swap
sensitivity does: a judge that flips more of its verdicts when the answers are swapped never gets
a smaller bias radius, nor (at the same batch size d) a larger α, than one that flips fewer (an item
whose swapped verdict is missing counts as flipped: the knowledge puts it at the range bound).

Every item has both orders judged (a census); with the judges declared deterministic (each recorded swapped
verdict taken as the judge's only answer) the knowledge is exact: the bias radius at δ is
the (1 − δ) quantile of |Δ| over items — for binary verdicts 1 when more than a δ share of the
items flip, else 0 — checked here against the flip shares counted directly from the CSV.
Deterministic (no statistical test; false-failure rate 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biasbound.data.tables import load_llmbar
from biasbound.pipeline import certify

pytestmark = pytest.mark.slow  # end to end: every LLMBar judge configuration certified


@pytest.fixture(scope="module")
def llmbar(shared_data):
    js = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz")
    res = certify(js, delta=0.05, out=None, progress=False, plots=False, seed=0, bootstrap_rounds=20,
                  deterministic_judge=True)
    f = js.frame
    g1 = f[f["game"] == 1].set_index(["judge", "item_id"])["score"]
    g2 = f[f["game"] == 2].set_index(["judge", "item_id"])["score"]
    both = pd.concat([g1.rename("a"), g2.rename("b")], axis=1)
    both = both[both["a"].notna()]  # the certified batch: items with a canonical verdict
    # an item whose swapped verdict is missing counts at the range bound (as if it flipped)
    flips = ((both["a"] != both["b"]) | both["b"].isna()).groupby(level="judge").mean()
    return res, flips


def test_radius_and_alpha_follow_the_swap_flip_share(llmbar):
    res, flips = llmbar
    assert len(res.judges) == 65 and not res.failures
    rows = []
    for name, j in res.judges.items():
        rows.append((name, float(flips[name]), j.certificate.bias_radius["radius"], j.calibration.alpha,
                     j.calibration.sigma, j.certificate.dim))
    table = pd.DataFrame(rows, columns=["judge", "flip", "radius", "alpha", "sigma", "dim"]).sort_values("flip")
    # exact radius at δ = 0.05 for binary verdicts: 1 iff more than 5% of the items flip
    np.testing.assert_array_equal(table["radius"].to_numpy(), (table["flip"] > 0.05).astype(float).to_numpy())
    # no reversal: more flips never give a smaller radius, nor — among judges of the same batch size d, whose
    # noise budget is the same — a larger alpha (binary verdicts: the exact probability depends on the flip
    # share alone at a given d and sigma)
    assert np.all(np.diff(table["radius"].to_numpy()) >= 0)
    for _, grp in table.groupby("dim"):
        a, q = grp["alpha"].to_numpy(), grp["flip"].to_numpy()
        assert all(a[i] >= a[j] - 1e-9 for i in range(len(a)) for j in range(i + 1, len(a)) if q[j] > q[i])
    assert table.groupby("dim").size().max() >= 30  # most judges share one item set: the check has teeth
    best = table.set_index("judge").loc["GPT-4/Swap_CoT"]
    worst = table.set_index("judge").loc["Falcon/CoT"]
    assert best["flip"] < 0.03 and worst["flip"] > 0.8
    assert best["radius"] == 0.0 and worst["radius"] == 1.0
    assert best["alpha"] == 1.0 and worst["alpha"] < 0.5


def test_the_radius_curve_over_delta_is_the_flip_quantile(llmbar):
    """radius(δ) = 1 exactly when the flip share exceeds δ, at every δ of the reported curve."""
    res, flips = llmbar
    for name in ("GPT-4/Swap_CoT", "Falcon/CoT", "ChatGPT/Vanilla"):
        curve = res.judges[name].certificate.bias_radius["curve"]
        assert len(curve) >= 8
        for p in curve:
            assert p["radius"] == (1.0 if flips[name] > p["delta"] else 0.0), (name, p, flips[name])

"""Tests for biasbound.certificate: JSON round trip, verify(), NaN rejection, the guarantee sentence."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math

import numpy as np
import pytest

from biasbound import DataFormatError, InputError
from biasbound.abb import apply_mechanism, calibrate
from biasbound.certificate import (
    Certificate,
    CertificateVerificationError,
    make_certificate,
    sha256_of_array,
)

SENS = {
    "how": "max",
    "delta_star": 0.306,
    "ucb": 0.33,
    "components": [{"name": "swap", "delta_star": 0.306, "m": 500, "ucb": 0.33}],
}


def _cert(**kw: object) -> Certificate:
    scores = np.linspace(0.0, 1.0, 500)
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.306, alpha=0.05, method="paper")
    res = apply_mechanism(scores, cal, center=0.5, rng=5)
    args = dict(sensitivity=SENS, center_kind="fixed", center_value=0.5, seed=res.seed,
                data_sha256=sha256_of_array(scores), view="model", scope={"judge": "j", "model": "m"},
                neighbor_relation="one item's presentation order swapped", created="2026-01-01T00:00:00+00:00")
    args.update(kw)
    return make_certificate(cal, **args)


def test_sha256_of_array_hashes_float64_bytes() -> None:
    x = [0.1, 0.2, 0.7]
    assert sha256_of_array(x) == hashlib.sha256(np.array(x, dtype="<f8").tobytes()).hexdigest()
    assert sha256_of_array(np.array(x, dtype=np.float32)) != sha256_of_array(x)  # float32 values differ from 0.1 etc.


def test_json_round_trip_equality(tmp_path) -> None:
    cert = _cert()
    back = Certificate.from_json(cert.to_json())
    assert back == cert
    p = cert.write(tmp_path / "certificate.json")
    assert Certificate.read(p) == cert
    data = json.loads(p.read_text())
    assert data["generators"] == {"swap": {"delta_star": 0.306, "m": 500, "ucb": 0.33}}
    assert data["center"] == {"kind": "fixed", "value": 0.5}
    assert data["combination"] == "max" and data["sensitivity_ucb"] == 0.33
    assert data["seed"] == 5 and data["audit"] is None


def test_with_audit_returns_copy() -> None:
    cert = _cert()
    audited = cert.with_audit({"verdict": "holds", "exact_ucb": 1e-4, "n_neighbors": 500})
    assert cert.audit is None and audited.audit["verdict"] == "holds"
    assert Certificate.from_json(audited.to_json()) == audited
    with pytest.raises(InputError, match="audit"):
        cert.with_audit({"exact_ucb": float("nan")})


def test_verify_accepts_and_catches_tampering() -> None:
    cert = _cert()
    report = cert.verify()
    assert report["holds"] and report["sigma_max_recomputed"] >= cert.sigma > 0
    # recompute sigma_max independently from the recorded fields (Corollary 3.2)
    lt = math.log(1 / cert.delta_B)
    indep = (cert.tau - cert.alpha * cert.sensitivity / math.sqrt(cert.delta_Delta)) / math.sqrt(
        2 * (cert.dim + 2 * math.sqrt(cert.dim * lt) + 2 * lt))
    assert report["sigma_max_recomputed"] == pytest.approx(indep, rel=1e-12)
    tampered = dataclasses.replace(cert, sigma=cert.sigma * 1.01)
    with pytest.raises(CertificateVerificationError, match="sigma"):
        tampered.verify()
    # a tampered file is caught after a JSON round trip too
    data = json.loads(cert.to_json())
    data["sensitivity"] = 0.35
    with pytest.raises(CertificateVerificationError):
        Certificate.from_json(json.dumps(data)).verify()
    data = json.loads(cert.to_json())
    data["delta_B"] = 0.009
    with pytest.raises(CertificateVerificationError, match="split"):
        Certificate.from_json(json.dumps(data)).verify()


def test_nan_rejected() -> None:
    cert = _cert()
    with pytest.raises(InputError, match="sigma"):
        dataclasses.replace(cert, sigma=float("nan"))
    with pytest.raises(InputError, match="scope"):
        dataclasses.replace(cert, scope={"x": float("inf")})
    text = cert.to_json().replace('"sigma": ' + repr(cert.sigma), '"sigma": NaN')
    assert "NaN" in text
    with pytest.raises(InputError, match="NaN"):
        Certificate.from_json(text)


def test_from_json_errors(tmp_path) -> None:
    with pytest.raises(DataFormatError):
        Certificate.from_json("{not json")
    data = json.loads(_cert().to_json())
    del data["tau"]
    with pytest.raises(InputError, match="tau"):
        Certificate.from_json(json.dumps(data))
    bad = tmp_path / "c.json"
    bad.write_text("[1, 2")
    with pytest.raises(DataFormatError) as info:
        Certificate.read(bad)
    assert info.value.path == str(bad)


def test_guarantee_sentence_mentions_everything() -> None:
    cert = _cert()
    g = cert.guarantee
    assert "0.5" in g and "0.01" in g and "{swap}" in g and "local" in g
    assert "500 judged items" in g and "presentation order swapped" in g
    assert "point estimate" in g  # paper mode with the point estimate says so
    scores = np.linspace(0.0, 1.0, 500)
    cal = calibrate(tau=0.5, delta=0.01, dim=500, sensitivity=0.3, sensitivity_ucb=0.33, beta=0.05, alpha=0.05)
    c2 = make_certificate(cal, sensitivity=SENS, center_kind="holdout", center_value=0.4, seed=1,
                          data_sha256=sha256_of_array(scores), view="model", scope={})
    assert "confidence 0.95" in c2.guarantee and c2.beta == 0.05
    cal3 = calibrate(tau=0.5, delta=0.01, dim=500, max_distance=1.0, alpha=0.2)
    c3 = make_certificate(cal3, sensitivity=None, center_kind="fixed", center_value=0.5, seed=1,
                          data_sha256=sha256_of_array(scores), view="model", scope={})
    assert "almost-sure" in c3.guarantee and c3.verify()["holds"]


def test_order_statistic_certificate_verifies() -> None:
    rng = np.random.default_rng(0)
    dist = rng.gamma(0.5, 0.04, size=4000)
    cal = calibrate(tau=0.5, delta=0.01, dim=300, distances=dist, beta=0.05, alpha=0.5)
    assert cal.bound_used == "order-statistic"
    cert = make_certificate(cal, sensitivity=None, center_kind="fixed", center_value=0.5, seed=1,
                            data_sha256=sha256_of_array(np.zeros(300)), view="model", scope={})
    assert cert.verify()["holds"] and cert.bound_details["m"] == 4000
    bad = dataclasses.replace(cert, bound_details={**cert.bound_details, "order_index": 10})
    with pytest.raises(CertificateVerificationError, match="order statistic"):
        bad.verify()


def test_make_certificate_bad_input() -> None:
    with pytest.raises(InputError, match="'center_kind'"):
        _cert(center_kind="median")
    with pytest.raises(InputError, match="'center_kind'.*batch"):
        _cert(center_kind="batch")  # calibrated for a fixed centre
    with pytest.raises(InputError, match="'data_sha256'"):
        _cert(data_sha256="abc")
    with pytest.raises(TypeError, match="'seed'"):
        _cert(seed=1.5)


def test_rms_combination_is_certified_for_the_uniform_mixture_only_and_the_sentence_says_so() -> None:
    """Counterexample to reading an RMS-combined certificate as covering each generator.

    Generator A moves one score by 1 with probability q = 0.15 (else 0); generator B never moves it.
    Their RMS combination is sqrt(q / 2) = 0.274, and with delta = 0.1 = 0.01 + 0.09 the Markov
    radius is a = 0.274 / sqrt(0.09) = 0.913 < tau = 0.999. Under A alone the exact probability of
    ||M(D) - M(D')|| > tau (noncentral chi-square, computed independently with scipy) is about
    q = 0.15 > delta; under the uniform mixture it is about 0.075 <= delta. The sentence must
    therefore claim the uniform mixture, not "neighbours drawn from {A, B}".
    """
    from scipy import stats

    from biasbound.sensitivity import combine, estimate

    q, tau, delta, dim = 0.15, 0.999, 0.1, 20
    a_dist = np.r_[np.ones(150), np.zeros(850)]  # exactly the population of A
    b_dist = np.zeros(1000)
    comb = combine([estimate(a_dist, name="A"), estimate(b_dist, name="B")], how="rms")
    assert comb.delta_star == pytest.approx(math.sqrt((q + 1e-3**2) / 2))  # B floored at 1e-3
    cal = calibrate(tau=tau, delta=delta, dim=dim, sensitivity=comb.delta_star, alpha=1.0, delta_B=0.01,
                    sigma=1e-3, method="paper")

    def exceed(dist: np.ndarray) -> float:  # exact Pr[||Delta + B|| > tau], B ~ N(0, 2 sigma^2 I_d)
        s2 = 2 * cal.sigma**2
        return float(np.mean(stats.ncx2.sf(tau**2 / s2, dim, dist**2 / s2)))

    assert exceed(a_dist) > delta  # A alone violates the (tau, delta) statement
    assert 0.5 * (exceed(a_dist) + exceed(b_dist)) <= delta  # the uniform mixture satisfies it
    cert = make_certificate(cal, sensitivity=comb, center_kind="fixed", center_value=0.5, seed=1,
                            data_sha256=sha256_of_array(np.zeros(dim)), view="model", scope={})
    assert "uniformly at random among {A, B}" in cert.guarantee and "not each generator alone" in cert.guarantee
    # max combination of the same generators covers each one: its sentence says "any one of"
    cmax = combine([estimate(a_dist, name="A"), estimate(b_dist, name="B")], how="max")
    cal2 = calibrate(tau=tau, delta=delta, dim=dim, sensitivity=cmax.delta_star, alpha=0.4, method="paper")
    cert2 = make_certificate(cal2, sensitivity=cmax, center_kind="fixed", center_value=0.5, seed=1,
                             data_sha256=sha256_of_array(np.zeros(dim)), view="model", scope={})
    assert "any one of {A, B}" in cert2.guarantee


def test_batch_description_and_jitter_clause_in_the_sentence() -> None:
    scores = np.linspace(0.0, 1.0, 5)
    cal = calibrate(tau=0.5, delta=0.01, dim=5, sensitivity=0.01, method="paper")
    c = make_certificate(cal, sensitivity=SENS, center_kind="fixed", center_value=0.5, seed=1,
                         data_sha256=sha256_of_array(scores), view="leaderboard", scope={},
                         batch_description="this fixed vector of 5 model mean scores", jitter_adjusted=True)
    assert c.guarantee.startswith("For this fixed vector of 5 model mean scores and")
    assert "judged items" not in c.guarantee and "jitter-free judge" in c.guarantee
    cal_det = calibrate(tau=0.5, delta=0.01, dim=5, max_distance=0.1)  # the a.s. bound covers raw neighbours
    c_det = make_certificate(cal_det, sensitivity=SENS, center_kind="fixed", center_value=0.5, seed=1,
                             data_sha256=sha256_of_array(scores), view="model", scope={}, jitter_adjusted=True)
    assert "jitter-free" not in c_det.guarantee

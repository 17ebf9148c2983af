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

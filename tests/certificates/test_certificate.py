"""Tests for biasbound.certificate: JSON round trip, verify(), NaN rejection, the guarantee sentence, and the refusal
of schema-version-1 files (one sentence naming the file; exit 2 in the CLI)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest

import biasbound as bb
from biasbound import DataFormatError, InputError
from biasbound.bounds import FullPopulation, Knowledge, Moments
from biasbound.certificate import Certificate, CertificateVerificationError, make_certificate, sha256_of_array
from biasbound.mechanism import apply_mechanism

SCORES = np.linspace(0.0, 1.0, 500)


def _cert(**kw: object) -> Certificate:
    cal = bb.calibrate({"swap": Moments(0.306**2)}, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper",
                       frontier_points=3)
    res = apply_mechanism(SCORES, cal, center=0.5, rng=5)
    args = dict(center_kind="fixed", center_value=0.5, seed=res.seed, data_sha256=sha256_of_array(SCORES),
                view="model", scope={"judge": "j", "model": "m"},
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
    assert data["schema_version"] == 3 and data["method"] == "paper"
    assert data["knowledge"]["generators"]["swap"][0]["U2"] == pytest.approx(0.306**2, rel=1e-15)
    assert data["center"] == {"kind": "fixed", "value": 0.5}
    assert data["paper"]["delta_B"] == 0.005 and data["paper"]["radius"] == "laurent-massart"
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
    report = cert.verify(scores=SCORES, certified=apply_mechanism(SCORES, bb.calibrate(
        {"swap": Moments(0.306**2)}, tau=0.5, delta=0.01, dim=500, alpha=0.05, method="paper", frontier_points=3),
        center=0.5, rng=5).certified)
    assert report["holds"] and report["bound_value"] <= cert.delta and "seed" in report["checked"]
    # sigma_max recomputed independently from the recorded fields (Corollary 3.2, by hand): 0.0080967
    assert cert.sigma_max == pytest.approx(0.0080967, abs=1e-7) and cert.sigma < cert.sigma_max
    tampered = dataclasses.replace(cert, sigma=cert.sigma * 1.01)
    with pytest.raises(CertificateVerificationError, match="sigma"):
        tampered.verify()
    # a tampered file is caught after a JSON round trip too
    data = json.loads(cert.to_json())
    data["knowledge"]["generators"]["swap"][0]["U2"] = 0.35**2
    with pytest.raises(CertificateVerificationError):
        Certificate.from_json(json.dumps(data)).verify()
    data = json.loads(cert.to_json())
    data["paper"]["delta_B"] = 0.009
    with pytest.raises(CertificateVerificationError, match="paper"):
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


#: the shape of a schema-1 certificate (no schema_version; the calibrator before knowledge records)
V1 = {"tau": 0.5, "delta": 0.01, "delta_B": 0.005, "delta_Delta": 0.005, "dim": 500, "alpha": 0.05, "sigma": 0.008,
      "sigma_max": 0.0081, "bound_used": "markov", "sensitivity": 0.306, "method": "paper", "seed": 1}


def test_a_schema_1_certificate_is_refused_with_one_sentence_naming_the_file(tmp_path, capsys) -> None:
    from biasbound.cli import main

    with pytest.raises(DataFormatError, match="schema version 1 certificate, which this biasbound no longer reads"):
        Certificate.from_dict(dict(V1))
    p = tmp_path / "old-certificate.json"
    p.write_text(json.dumps(V1))
    with pytest.raises(DataFormatError) as info:
        Certificate.read(p)
    assert info.value.path == str(p) and "schema version 1" in str(info.value)
    assert main(["verify", str(p)]) == 2
    err = capsys.readouterr().err
    assert "old-certificate.json" in err and "schema version 1" in err and "Traceback" not in err
    assert err.count(".") <= 3  # one sentence (the path's dots and the file name's included)
    assert main(["audit", str(p), "--neighbors", str(p)]) == 2
    err = capsys.readouterr().err
    assert "old-certificate.json" in err and "schema version 1" in err and "Traceback" not in err


def test_guarantee_sentence_mentions_everything() -> None:
    g = _cert().guarantee
    assert "0.5" in g and "0.01" in g and "{swap}" in g and "local" in g
    assert "500 judged items" in g and "presentation order swapped" in g
    assert "point estimate" in g  # the paper route on the point estimate says so
    cal = bb.calibrate({"swap": Moments(0.33**2, beta=0.05)}, tau=0.5, delta=0.01, dim=500, alpha=0.05,
                       frontier_points=0)
    c2 = make_certificate(cal, center_kind="holdout", center_value=0.4, seed=1, data_sha256=sha256_of_array(SCORES),
                          view="model", scope={})
    assert "confidence 0.95" in c2.guarantee and c2.beta == pytest.approx(0.05, rel=1e-15)


def test_make_certificate_bad_input() -> None:
    with pytest.raises(InputError, match="'center_kind'"):
        _cert(center_kind="median")
    with pytest.raises(InputError, match="'data_sha256'"):
        _cert(data_sha256="abc")
    with pytest.raises(TypeError, match="'seed'"):
        _cert(seed=1.5)
    with pytest.raises(TypeError, match="'calibration'"):
        make_certificate({"alpha": 0.1}, center_kind="fixed", center_value=0.5, seed=1, data_sha256="0" * 64,
                         view="model")


def test_a_mixture_certificate_claims_the_mixture_only_and_the_sentence_says_so() -> None:
    """Counterexample to reading a mixture certificate as covering each generator.

    Generator A moves one score by 1 on 150 of its 1000 neighbours (else 0); generator B never moves it. At
    alpha = 1, sigma = 1e-3, tau = 0.999, d = 20 the exact probability of ||M(D) - M(D')|| > tau (noncentral
    chi-square, computed independently with scipy) is about 0.15 > delta = 0.1 under A alone and about 0.075 <= delta
    under the uniform mixture of A and B. The sentence must claim the uniform mixture, not "any one of {A, B}".
    """
    from scipy import stats

    tau, delta, dim, sigma = 0.999, 0.1, 20, 1e-3
    a_sq, b_sq = np.r_[np.ones(150), np.zeros(850)], np.zeros(1000)

    def exceed(sq: np.ndarray) -> float:  # exact Pr[||Delta + B|| > tau], B ~ N(0, 2 sigma^2 I_d)
        s2 = 2 * sigma**2
        return float(np.mean(stats.ncx2.sf(tau**2 / s2, dim, sq / s2)))

    assert exceed(a_sq) > delta >= 0.5 * (exceed(a_sq) + exceed(b_sq))
    gens = (("A", (FullPopulation(a_sq),)), ("B", (FullPopulation(b_sq),)))
    mix = bb.calibrate(Knowledge(generators=gens, how="mixture"), tau=tau, delta=delta, dim=dim, alpha=1.0, sigma=sigma,
                       frontier_points=0)
    cert = make_certificate(mix, center_kind="fixed", center_value=0.5, seed=1, data_sha256=sha256_of_array(np.zeros(dim)),
                            view="model")
    assert "uniformly at random among {A, B}" in cert.guarantee and "not each generator alone" in cert.guarantee
    with pytest.raises(bb.InfeasibleCertificateError):  # the same point does not certify A alone (max over generators)
        bb.calibrate(Knowledge(generators=gens, how="max"), tau=tau, delta=delta, dim=dim, alpha=1.0, sigma=sigma,
                     frontier_points=0)

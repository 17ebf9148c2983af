"""Certificates of the current schema (SCHEMA_VERSION, 3): JSON round trip, verify() recomputes every derived field, and every
numeric field, edited, makes verify() fail (checked field by field, with the data given)."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest

from biasbound import InputError
from biasbound.mechanism import apply_mechanism
from biasbound.bounds import AlmostSure, FullPopulation, Moments, Sample
from biasbound.calibration import calibrate, recheck
from biasbound.certificate import SCHEMA_VERSION, Certificate, CertificateVerificationError, make_certificate, sha256_of_array

pytestmark = pytest.mark.slow  # end to end: certificates written by certify, edited field by field (~18 s on a loaded machine)

X = np.linspace(0.0, 1.0, 200)
POP = np.array([0.0] * 190 + [0.0625] * 8 + [1.0] * 2)

#: numeric fields verify() cannot recompute without data it is not given, each with the reason
#: Fields no edit test skips: scope, audit and diagnostics are records no statistic determines, and
#: records_sha256 (written with the certificate) makes an edit there fail verify() too.
PROVENANCE: dict[str, str] = {}


def _make(knowledge: Any, method: str = "tight", delta: float = 0.05, **kw: Any) -> tuple[Certificate, np.ndarray]:
    c = calibrate(knowledge, tau=0.5, delta=delta, dim=X.size, method=method, frontier_points=3)
    assert c.alpha < 1  # the centre matters (at alpha = 1 its value has no effect on anything)
    res = apply_mechanism(X, c, center=0.5, rng=9)
    cert = make_certificate(c, center_kind="fixed", center_value=0.5, seed=res.seed, data_sha256=sha256_of_array(X),
                            view="model", range_bound=1.0, neighborhood={"kind": "hamming", "k": 1},
                            neighbor_relation="answer order swapped", created="2026-01-01T00:00:00+00:00",
                            units={"scale": 10.0, "name": "points on a 0–10 scale"}, **kw)
    return cert, res.certified


def _numeric_paths(tree: Any, path: tuple = ()) -> list[tuple]:
    out = []
    if isinstance(tree, bool):
        out.append(path)
    elif isinstance(tree, (int, float)):
        out.append(path)
    elif isinstance(tree, dict):
        for k, v in tree.items():
            out += _numeric_paths(v, path + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _numeric_paths(v, path + (i,))
    return out


def _edit(d: dict, path: tuple) -> dict:
    d = copy.deepcopy(d)
    node = d
    for p in path[:-1]:
        node = node[p]
    v = node[path[-1]]
    if isinstance(v, bool):
        node[path[-1]] = not v
    elif isinstance(v, int):
        node[path[-1]] = v + 1
    else:
        node[path[-1]] = v * 1.01 + 0.001
    return d


CASES = {
    "full-population+range": lambda: _make({"swap": [AlmostSure(1.0), FullPopulation(POP)]}, delta=0.01),
    "sample": lambda: _make(Sample(POP[::2], population_size=200, beta=0.01, A=1.0, seed=4)),
    # 10 of the 200 neighbours not judged, entered at the range bound (the sentence names the count)
    "partial-population": lambda: _make(FullPopulation(np.append(POP[:190], [1.0] * 10), filled=10), delta=0.05),
    "paper": lambda: _make(Moments(float(POP.mean())), method="paper"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_and_verify(case: str) -> None:
    cert, released = CASES[case]()
    assert cert.schema_version == SCHEMA_VERSION
    back = Certificate.from_json(cert.to_json())
    assert back == cert
    out = back.verify(scores=X, certified=released)
    assert out["holds"] and "seed" in out["checked"] and out["bound_value"] <= cert.delta


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_numeric_field_edited_fails_verify(case: str) -> None:
    cert, released = CASES[case]()
    d = json.loads(cert.to_json())
    paths = [p for p in _numeric_paths(d) if p[0] not in PROVENANCE]
    assert len(paths) > 30
    for p in paths:
        edited = _edit(d, p)
        with pytest.raises((CertificateVerificationError, InputError, TypeError, KeyError)):
            Certificate.from_dict(edited).verify(scores=X, certified=released)


def test_sentence_says_when_the_range_alone_implies_it() -> None:
    c = calibrate(AlmostSure(1.0), tau=0.5, delta=0.01, dim=500, frontier_points=2)
    cert = make_certificate(c, center_kind="fixed", center_value=0.5, seed=1, data_sha256="0" * 64, view="model",
                            range_bound=1.0)
    assert cert.range_implied["holds"] is True
    assert "follows from the score range alone" in cert.guarantee and "ANY judge" in cert.guarantee
    full = calibrate(FullPopulation(POP), tau=0.5, delta=0.05, dim=500, frontier_points=2)
    cert2 = make_certificate(full, center_kind="fixed", center_value=0.5, seed=1, data_sha256="0" * 64, view="model",
                             range_bound=1.0)
    assert cert2.range_implied["holds"] is False and "score range alone" not in cert2.guarantee
    assert "no sampling, no confidence level" in cert2.guarantee and cert2.beta is None


def test_per_model_recheck_certificate_verifies() -> None:
    c = calibrate({"a": FullPopulation(POP), "b": FullPopulation(POP[:100])}, tau=0.5, delta=0.05, dim=200,
                            frontier_points=2)
    one = recheck(c, knowledge=FullPopulation(POP[:100]), dim=100)
    assert one.checked_point and (one.alpha, one.sigma) == (c.alpha, c.sigma)
    cert = make_certificate(one, center_kind="fixed", center_value=0.5, seed=2, data_sha256="0" * 64, view="model")
    assert cert.verify()["holds"]


def test_batch_centre_needs_knowledge_of_the_shift() -> None:
    c = calibrate(FullPopulation(POP), tau=0.5, delta=0.01, dim=200, frontier_points=0)
    with pytest.raises(InputError, match="batch"):
        make_certificate(c, center_kind="batch", center_value=None, seed=1, data_sha256="0" * 64, view="model")
    y = POP / 200  # Hamming-1: s^2 = ||Delta||^2 / d exactly
    cb = calibrate(FullPopulation(POP, shift_sq=y), tau=0.5, delta=0.01, dim=200, frontier_points=0)
    cert = make_certificate(cb, center_kind="batch", center_value=None, seed=1, data_sha256="0" * 64, view="model")
    assert cert.original_scale is None and cert.verify()["holds"]


def test_edited_scope_and_audit_records_of_a_written_certificate_fail_verify(tmp_path) -> None:
    """A certificate written by certify: an edited coverage count or audit figure fails verify()."""
    from biasbound.cli import main

    rows = [{"judge": "j", "model": m, "item_id": f"q{i}", "score": float((i * 7 + k) % 5) / 4, "game": g}
            for k, m in enumerate(["a", "b"]) for i in range(40) for g in (1, 2)]
    table = tmp_path / "t.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    assert main(["certify", str(table), "--out", str(tmp_path / "o"), "--no-plots", "--no-progress"]) in (0, 1)
    d = json.loads((tmp_path / "o" / "certificate.json").read_text(encoding="utf-8"))
    assert Certificate.from_dict(d).verify()["holds"]
    numeric = [p for p in _numeric_paths(d) if p[0] in ("scope", "audit")]
    assert any(p[0] == "scope" for p in numeric) and any(p[0] == "audit" for p in numeric)
    for p in numeric:
        with pytest.raises(CertificateVerificationError, match="records_sha256"):
            Certificate.from_dict(_edit(d, p)).verify()

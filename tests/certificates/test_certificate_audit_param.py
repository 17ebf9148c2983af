"""make_certificate(audit=...): the certificate is built with its audit in one step, as with_audit would add it."""

from __future__ import annotations

import numpy as np
import pytest

import biasbound as bb
from biasbound import InputError
from biasbound.bounds import Moments
from biasbound.certificate import Certificate, make_certificate, sha256_of_array

AUDIT = {"model": {"verdict": "holds", "exact_ucb": 1e-6, "n_neighbors": 150},
         "pooled": None, "verdict_counts": {"holds": 3, "violated": 0}}


def _make(**kw: object) -> Certificate:
    scores = np.linspace(0.0, 1.0, 200)
    cal = bb.calibrate({"swap": Moments(0.306**2)}, tau=0.5, delta=0.01, dim=200, alpha=0.05, method="paper",
                       frontier_points=0)
    args = dict(center_kind="fixed", center_value=0.5, seed=7, data_sha256=sha256_of_array(scores),
                view="model", scope={"judge": "j", "model": "m"}, created="2026-01-01T00:00:00+00:00")
    args.update(kw)
    return make_certificate(cal, **args)


def test_audit_argument_equals_with_audit() -> None:
    assert _make(audit=AUDIT) == _make().with_audit(AUDIT)
    assert _make(audit=AUDIT).audit == AUDIT
    assert _make().audit is None and _make(audit=None).audit is None


def test_audit_object_with_to_dict_and_numpy_values_become_plain() -> None:
    class Audit:
        def to_dict(self) -> dict[str, object]:
            return {"p": np.float64(0.25), "n": np.int64(3), "v": np.array([1.0, 2.0]), "t": (1, 2)}

    cert = _make(audit=Audit())
    assert cert.audit == {"p": 0.25, "n": 3, "v": [1.0, 2.0], "t": [1, 2]}
    assert type(cert.audit["p"]) is float and type(cert.audit["n"]) is int
    assert cert == _make().with_audit(Audit())
    assert Certificate.from_json(cert.to_json()) == cert


def test_bad_audit_rejected() -> None:
    with pytest.raises(TypeError, match="'audit' parameter of make_certificate"):
        _make(audit=[1, 2])
    with pytest.raises(InputError, match="audit.p"):
        _make(audit={"p": float("nan")})

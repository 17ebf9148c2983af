"""The demo's paper and tight certificates are pinned: moving code must not move a number.

``tests/data/pinned/demo-certificates.json`` was written from ``biasbound demo`` at commit 444f866 (before the
calibration route was reorganised) by ``python tests/calibration/test_demo_pinned.py --write``: for the paper and the
tight run, every number of the judge-level ``certificate.json`` that says what was certified (α, σ, σ_max, α_max,
α*(σ), the bound, the paper split), a SHA-256 of the whole certificate apart from ``created``,
``biasbound_version`` and what holds the checkout's path (``scope``, ``records_sha256``), and α, σ and the bound of every
per-model certificate. Exact equality: the same inputs
through the same arithmetic give the same floats (no statistics, no tolerance). A deliberate change of what a
certificate holds (a new field, a reworded sentence) re-writes the pin with the same command in the same commit, and
says why; a reorganisation of code never does.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

PINNED = Path(__file__).resolve().parents[1] / "data" / "pinned" / "demo-certificates.json"
RUNS = ("paper", "tight")
_TOP = ("method", "tau", "delta", "dim", "alpha", "sigma", "sigma_max", "alpha_max", "alpha_at_sigma", "bound_used",
        "bound_value", "exact", "beta", "paper", "seed", "data_sha256")
#: left out of the digest: the time, the version, and what names the checkout's path (the scope lists the data files
#: read, with their absolute paths; the records digest covers the scope)
_UNPINNED = ("created", "biasbound_version", "scope", "records_sha256")
_PER_MODEL = ("dim", "alpha", "sigma", "sigma_max", "bound_value", "bound_used")


def _digest(cert: dict) -> str:
    body = {k: v for k, v in cert.items() if k not in _UNPINNED}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def summarise(folder: Path) -> dict:
    """The pinned figures of one demo run's output folder."""
    cert = json.loads((folder / "certificate.json").read_text(encoding="utf-8"))
    models = json.loads((folder / "certificates.json").read_text(encoding="utf-8"))
    return {"certificate": {k: cert[k] for k in _TOP}, "certificate_sha256": _digest(cert),
            "per_model": [[m["scope"]["model"], *(m[k] for k in _PER_MODEL)] for m in models]}


def _certify(out: Path) -> dict:
    from biasbound.commands.demo import DEMO_RUNS, DEMO_SETTINGS
    from biasbound.data.embedded import DEMO_BASELINE, load_demo
    from biasbound.pipeline import certify

    data = load_demo()
    found = {}
    for name in RUNS:
        certify(data, out=out / name, progress=False, plots=False, baseline=DEMO_BASELINE, **{**DEMO_SETTINGS, **DEMO_RUNS[name]})
        found[name] = summarise(out / name)
    return found


@pytest.mark.slow
def test_demo_paper_and_tight_certificates_are_unchanged(tmp_path):
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    found = _certify(tmp_path)
    # the paper route's headline numbers, readable here (Corollary 3.2 on the embedded data)
    assert found["paper"]["certificate"]["alpha"] == pytest.approx(0.03997, abs=5e-6)
    assert found["paper"]["certificate"]["sigma"] == pytest.approx(0.007137, abs=5e-7)
    for name in RUNS:
        assert found[name]["certificate"] == pinned[name]["certificate"], name
        assert found[name]["per_model"] == pinned[name]["per_model"], name
        assert found[name]["certificate_sha256"] == pinned[name]["certificate_sha256"], name


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        PINNED.write_text(json.dumps(_certify(Path(tmp)), indent=1) + "\n", encoding="utf-8")

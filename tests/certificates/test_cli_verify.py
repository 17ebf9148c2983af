"""`biasbound verify` on the outputs of `biasbound certify`: untouched outputs verify (exit 0), an edited
score or certificate field fails naming it (exit 1), bad input is one sentence (exit 2).

No statistics here: every check is an exact recomputation (hash, seeded re-draw, derived fields),
so these tests cannot fail at random (false-failure rate 0)."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from biasbound.cli import main
from table_helpers import pairwise_table

pytestmark = pytest.mark.slow  # end to end: verify on certify's written outputs (~6 s on a loaded machine)


@pytest.fixture(scope="module", params=["model", "leaderboard"])
def certified(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"verify-{request.param}")
    table = root / "t.csv"
    pairwise_table("preferences", n_items=30).to_csv(table, index=False)
    out = root / "out"
    assert main(["certify", str(table), "--out", str(out), "--no-plots", "--bootstrap-rounds", "100",
                 "--view", request.param, "--seed", "3"]) == 0
    return out


def _copy(out, tmp_path):
    dst = tmp_path / "out"
    shutil.copytree(out, dst)
    return dst


def test_untouched_outputs_verify_with_the_data_hash(certified, capsys) -> None:
    assert main(["verify", str(certified)]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith(("verified", "FAILED"))]
    n_models = len(json.loads((certified / "certificates.json").read_text())) if (certified / "certificates.json").exists() else 0
    assert len(lines) == 1 + n_models and all("incl. data_sha256" in ln for ln in lines)
    # one certificate file alone: scores.parquet beside it is used
    assert main(["verify", str(certified / "certificate.json")]) == 0


def test_an_edited_score_fails_on_data_sha256(certified, tmp_path, capsys) -> None:
    out = _copy(certified, tmp_path)
    scores = pd.read_parquet(out / "scores.parquet")
    k = scores.index[scores["in_batch"]][0]
    scores.loc[k, "original"] = 1.0 - scores.loc[k, "original"] if scores.loc[k, "original"] != 0.5 else 0.25
    scores.to_parquet(out / "scores.parquet", index=False)
    assert main(["verify", str(out)]) == 1
    text = capsys.readouterr().out
    assert "FAILED" in text and "data_sha256" in text


def test_an_edited_released_score_fails_on_the_noise_redraw(certified, tmp_path, capsys) -> None:
    out = _copy(certified, tmp_path)
    scores = pd.read_parquet(out / "scores.parquet")
    col = "certified" if "certified" in scores.columns else "certified_model"
    k = scores.index[scores["in_batch"]][0]
    scores.loc[k, col] += 1e-6
    scores.to_parquet(out / "scores.parquet", index=False)
    assert main(["verify", str(out)]) == 1
    assert "released scores are not the mechanism's output" in capsys.readouterr().out


@pytest.mark.parametrize("field", ["sigma", "generator"])
def test_an_edited_certificate_number_fails_naming_the_field(certified, tmp_path, capsys, field) -> None:
    out = _copy(certified, tmp_path)
    path = out / "certificate.json"
    d = json.loads(path.read_text())
    if field == "sigma":
        d["sigma"] *= 1.01
        # sigma is an input: the first derived field it changes is named, or (a random judge's bound rising with
        # sigma at this point) the bound at the edited sigma exceeds delta
        expect = ("sigma_max differs", "do not certify")
    else:  # a per-generator statistic recorded beside the values it summarises
        name, (rec, *_) = next(iter(d["knowledge"]["generators"].items()))
        if rec["kind"] == "random-judge":  # the default: the tail bounds recorded beside the sums they come from
            rec["upper"][0] *= 0.9
            expect = ("'upper'",)
        else:
            rec["sum_sq"] *= 1.5
            expect = ("'sum_sq'",)
    path.write_text(json.dumps(d, indent=2))
    assert main(["verify", str(out)]) == 1
    text = capsys.readouterr().out
    failed = [ln for ln in text.splitlines() if ln.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith("FAILED    certificate.json")
    assert any(e in failed[0] for e in expect), failed[0]


def test_bad_input_is_one_sentence_and_exit_2(certified, tmp_path, capsys) -> None:
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{this is not json")
    assert main(["verify", str(garbage)]) == 2
    err = capsys.readouterr().err
    assert "garbage.json" in err and "Traceback" not in err
    assert main(["verify", str(tmp_path / "nope")]) == 2
    not_cert = tmp_path / "list.json"
    not_cert.write_text(json.dumps({"a": 1}))
    assert main(["verify", str(not_cert)]) == 2
    out = _copy(certified, tmp_path)
    (out / ".biasbound-outputs.json").unlink()  # with the manifest, a file changed since certify is a failed check (1)
    pd.read_parquet(out / "scores.parquet").drop(columns=["in_batch"]).to_parquet(out / "scores.parquet")
    assert main(["verify", str(out)]) == 2
    assert "in_batch" in capsys.readouterr().err
    (out / "scores.parquet").write_text("not parquet")
    assert main(["verify", str(out)]) == 2

"""Certificates bound to all their data and unforgeable (issue 13, item 4).

The forgery set: (a) statistics edited with every derived field, records_sha256 and the manifest recomputed the
way the code does — passes the keyless checks (which is why they are documented as catching accidents only) and
fails ``verify --judgments``; (b) a doctored neighbour judgment fails ``verify --judgments``; (c) with
``--public-key`` any single edit of any output file or of the manifest fails; (d) a deleted records_sha256 fails;
(e) an edited leaderboard.csv / summary.json / retention.json fails through the manifest; (f) genuine outputs
verify, with and without a key. Plus reproducibility (two runs identical apart from the time stamps), the key
files, the judge-level seed and centre checks, schema-2 files, and the exit codes through the installed
``biasbound`` entry point.

No statistics here: every check is an exact recomputation (digests, signatures, a re-run with the recorded
seeds), so no test can fail at random (false-failure rate 0); the judgment tables are drawn with fixed seeds.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound.bounds import record_from_dict
from biasbound._integrity import MANIFEST, judgments_digest, manifest_record
from biasbound.certificate import SCHEMA_VERSION, Certificate, _derive, _records_digest
from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: certify's outputs written, signed, edited and verified (~21 s on a loaded machine)

CERT_FILES = ("certificate.json", "certificates.json")


def flip_table(flip: float, *, seed: int = 0, n_items: int = 30) -> pd.DataFrame:
    """Three models judged in both orders on Arena-Hard's five levels; with probability ``flip`` the swapped
    game's verdict is the mirror image (position bias), else the same verdict."""
    rng = np.random.default_rng(seed)
    levels = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    rows = []
    for m, p in (("mA", (0.05, 0.1, 0.2, 0.3, 0.35)), ("mB", (0.2, 0.2, 0.2, 0.2, 0.2)), ("mC", (0.35, 0.3, 0.2, 0.1, 0.05))):
        for i in range(n_items):
            s1 = float(rng.choice(levels, p=p))
            s2 = 1.0 - s1 if rng.random() < flip else s1
            rows += [{"judge": "j", "model": m, "item_id": f"q{i}", "variant": "original", "rerun": 0, "game": g,
                      "score": s} for g, s in ((1, s1), (2, s2))]
    return pd.DataFrame(rows)


def _certify(table: Path, out: Path, *extra: str) -> None:
    code = main(["certify", str(table), "--out", str(out), "--bootstrap-rounds", "100", "--no-progress", *extra])
    assert code == 0


def _verify(capsys, *args: str) -> tuple[int, str]:
    code = main(["verify", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out + err


def _rehash(out: Path) -> None:
    """The manifest's digests recomputed the way certify writes them, keyless (what anyone can do); a signature
    there is kept (it can only be copied, not made)."""
    rec = json.loads((out / MANIFEST).read_text())
    new = manifest_record(out, rec["files"])
    if "signature" in rec:
        new["signature"] = rec["signature"]
    (out / MANIFEST).write_text(json.dumps(new, indent=2) + "\n")


def _rewrite_certs(out: Path, edit) -> None:
    """Apply ``edit(dict) -> dict`` to every certificate of the folder and write them as certify does."""
    for name in CERT_FILES:
        data = json.loads((out / name).read_text())
        new = [edit(d) for d in data] if isinstance(data, list) else edit(data)
        (out / name).write_text(json.dumps(new, indent=2, ensure_ascii=False) + "\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A position-biased judge (87% of verdicts flip under a swap), certified unsigned without plots and signed with
    plots; the key pair; the judgment file."""
    root = tmp_path_factory.mktemp("integrity")
    table = root / "judgments.csv"
    flip_table(0.87).to_csv(table, index=False)
    assert main(["keygen", "--out", str(root / "keys")]) == 0
    plain, signed = root / "plain", root / "signed"
    _certify(table, plain, "--no-plots")
    _certify(table, signed, "--sign-key", str(root / "keys" / "biasbound-signing.key"))
    return {"root": root, "table": table, "plain": plain, "signed": signed,
            "key": root / "keys" / "biasbound-signing.key", "pub": root / "keys" / "biasbound-signing.pub"}


@pytest.fixture(autouse=True)
def _scratch_in_tmp(tmp_path, monkeypatch):
    """verify --judgments re-certifies into tempfile's folder: keep it under this test's tmp_path."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst)
    return dst


# ----------------------------------------------------------------------------------------------- (f) genuine
@pytest.mark.slow
def test_genuine_outputs_verify_with_and_without_key_and_from_the_judgments(runs, capsys) -> None:
    code, text = _verify(capsys, runs["plain"], "--judgments", runs["table"])
    assert code == 0, text
    assert re.search(r"files +\d+ file\(s\) match", text) and "reproduced" in text and "FAILED" not in text
    code, text = _verify(capsys, runs["signed"], "--public-key", runs["pub"], "--judgments", runs["table"])
    assert code == 0, text
    listed = set(json.loads((runs["signed"] / MANIFEST).read_text())["files"]) - {MANIFEST}
    assert "Ed25519 signature" in text and f"reproduced {len(listed)} output file(s)" in text  # every file written


# ----------------------------------------------------------------------------------------------- (a) forgery
def _as_if_consistent(d: dict) -> dict:
    """A 2%-flip judge's figures given to the 87%-flip judge: every observed squared shift (a random judge: every
    share of items moving) scaled down 50-fold,
    m/sum/max recomputed from them, every derived field re-derived and records_sha256 rewritten by the code's own
    functions; the point (alpha, sigma), the seeds and the released scores unchanged, so they still verify."""
    cert = Certificate.from_dict(d)
    kn = copy.deepcopy(cert.knowledge)
    for recs in kn["generators"].values():
        for r in recs:
            if "values" in r:  # a judge declared deterministic: its census of squared shifts
                r["values"] = [v / 50 for v in r["values"]]
                r["sum_sq"] = float(sum(v * c for v, c in zip(r["values"], r["counts"])))
                r["max_sq"] = float(max(r["values"]))
            elif r.get("kind") == "random-judge":  # the default: the share of items moving at each level, 50x fewer
                r["filled"] = 0
                r["sums"] = [v / 50 for v in r["sums"]]
                r.pop("upper")
                r.update(record_from_dict(r).to_dict())  # its KL upper bounds recomputed by the code's own function
    new = dataclasses.replace(cert, knowledge=kn, **_derive({**cert.inputs, "knowledge": kn}))
    return json.loads(new.to_json())


def _claimed_shift(cert: dict) -> float:
    """What the certificate's records say the judge moves: the mean squared shift of a census, or the share of
    items moving at all under a random judge (its first level's sum over n)."""
    out = []
    for recs in cert["knowledge"]["generators"].values():
        for r in recs:
            if "values" in r:
                out.append(sum(v * c for v, c in zip(r["values"], r["counts"])) / sum(r["counts"]))
            elif r.get("kind") == "random-judge":
                out.append(r["sums"][0] / r["n"])
    assert out, "the certificate records no census or random-judge statistics"
    return max(out)


def test_forged_statistics_pass_the_keyless_checks_and_fail_recertification(runs, tmp_path, capsys) -> None:
    out = _copy(runs["plain"], tmp_path)
    before = _claimed_shift(json.loads((out / "certificate.json").read_text()))
    _rewrite_certs(out, _as_if_consistent)
    _rehash(out)
    after = _claimed_shift(json.loads((out / "certificate.json").read_text()))
    assert after < before / 5  # the forged certificate tells a much better story about the judge
    code, text = _verify(capsys, out)
    assert code == 0, text  # keyless checks catch accidents only: anyone can recompute them (README)
    code, text = _verify(capsys, out, "--judgments", runs["table"])
    assert code == 1
    assert re.search(r"DIFFERS +certificate\.json: knowledge, .* differ from the re-certification \(first: "
                     r"knowledge\.generators\.", text), text


# ----------------------------------------------------------------------------------------------- (b) doctored
def test_a_doctored_neighbor_judgment_fails_recertification(runs, tmp_path, capsys) -> None:
    frame = pd.read_csv(runs["table"])
    k = frame.index[(frame["game"] == 2) & (frame["score"] != 0.5)][0]
    frame.loc[k, "score"] = 1.0 - frame.loc[k, "score"]  # one swapped verdict mirrored
    doctored = tmp_path / "judgments.csv"
    frame.to_csv(doctored, index=False)
    code, text = _verify(capsys, runs["plain"], "--judgments", doctored)
    assert code == 1
    assert "DIFFERS   certificate.json" in text and "DIFFERS   certificates.json" in text
    # the digest over every judgment (originals and neighbours) changes with that one row, and only its model's
    new, old = judgments_digest(frame), judgments_digest(pd.read_csv(runs["table"]))
    assert new[0] != old[0]
    assert {m for m in old[1] if old[1][m] != new[1][m]} == {frame.loc[k, "model"]}


def test_judgments_digest_is_canonical_and_covers_neighbors() -> None:
    frame = flip_table(0.5, n_items=6)
    root, per = judgments_digest(frame)
    shuffled = frame.sample(frac=1.0, random_state=1).reset_index(drop=True)
    assert judgments_digest(shuffled) == (root, per)  # row order does not matter
    assert set(per) == {"mA", "mB", "mC"}
    g2 = frame.index[frame["game"] == 2][3]
    edited = frame.copy()
    edited.loc[g2, "score"] = np.nextafter(edited.loc[g2, "score"], 2.0)  # the smallest float change
    assert judgments_digest(edited)[0] != root
    missing = frame.copy()
    missing.loc[g2, "score"] = np.nan  # a missing neighbour judgment is part of what was used
    assert judgments_digest(missing)[0] not in (root, judgments_digest(edited)[0])


# ----------------------------------------------------------------------------------------------- (c) signed
def _signed_files(runs) -> list[str]:
    return json.loads((runs["signed"] / MANIFEST).read_text())["files"]


def test_with_the_public_key_any_single_edit_of_any_file_fails(runs, tmp_path, capsys) -> None:
    names = _signed_files(runs)
    assert {"certificate.json", "certificates.json", "leaderboard.csv", "summary.json", "retention.json",
            "scores.parquet", "report.html"} <= set(names)
    for name in names:
        out = tmp_path / f"edit-{name}"
        shutil.copytree(runs["signed"], out)
        raw = bytearray((out / name).read_bytes())
        raw[len(raw) // 2] ^= 0x01  # one bit of one byte
        (out / name).write_bytes(bytes(raw))
        _rehash(out)  # the keyless digests recomputed: only the signature can tell
        code, text = _verify(capsys, out, "--public-key", runs["pub"])
        assert code == 1, f"{name}: {text}"
        assert "signature does not verify" in text, name


def test_with_the_public_key_an_edited_manifest_fails(runs, tmp_path, capsys) -> None:
    edits = {
        "digest": lambda r: r["sha256"].__setitem__("leaderboard.csv", "0" * 64),
        "file dropped": lambda r: (r["files"].remove("summary.json"), r["sha256"].pop("summary.json")),
        "signature": lambda r: r["signature"].__setitem__("value", r["signature"]["value"][::-1]),
        "unsigned": lambda r: r.pop("signature"),
    }
    for what, edit in edits.items():
        out = tmp_path / what.replace(" ", "-")
        shutil.copytree(runs["signed"], out)
        rec = json.loads((out / MANIFEST).read_text())
        edit(rec)
        (out / MANIFEST).write_text(json.dumps(rec, indent=2))
        code, text = _verify(capsys, out, "--public-key", runs["pub"])
        assert code == 1, what
        assert ("MISSING" if what == "unsigned" else "EDITED") in text, what
    # signed by another key: fails with this one
    other = tmp_path / "other-keys"
    assert main(["keygen", "--out", str(other)]) == 0
    capsys.readouterr()
    resigned = tmp_path / "resigned"
    shutil.copytree(runs["signed"], resigned)
    from biasbound._integrity import load_private_key

    rec = json.loads((resigned / MANIFEST).read_text())
    (resigned / MANIFEST).write_text(json.dumps(manifest_record(resigned, rec["files"],
                                                                load_private_key(other / "biasbound-signing.key"))))
    code, text = _verify(capsys, resigned, "--public-key", runs["pub"])
    assert code == 1 and "another key signed it" in text
    assert _verify(capsys, resigned, "--public-key", other / "biasbound-signing.pub")[0] == 0


# ----------------------------------------------------------------------------------------------- (d) records
def test_a_deleted_records_sha256_fails(runs, tmp_path, capsys) -> None:
    out = _copy(runs["plain"], tmp_path)
    d = json.loads((out / "certificate.json").read_text())
    del d["records_sha256"]
    (out / "certificate.json").write_text(json.dumps(d, indent=2))
    _rehash(out)
    code, text = _verify(capsys, out)
    assert code == 1
    failed = [ln for ln in text.splitlines() if ln.startswith("FAILED")]
    assert len(failed) == 1 and "records_sha256 is missing" in failed[0]


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.__setitem__("seed", d["seed"] + 1), "does not give the models' seeds"),
    (lambda d: d["center"].__setitem__("value", 0.25), "is not the models' centres"),
    (lambda d: d["scope"]["reproduce"]["certify"].__setitem__("tau", 0.4), "records_sha256"),
    (lambda d: d.__setitem__("judgments_sha256", "0" * 64), "records_sha256"),
])
def test_judge_seed_centre_and_records_are_checked(runs, tmp_path, capsys, edit, words) -> None:
    out = _copy(runs["plain"], tmp_path)
    d = json.loads((out / "certificate.json").read_text())
    edit(d)
    if words != "records_sha256":  # recompute the digest the way the code does: the check itself must catch it
        d["records_sha256"] = _records_digest(d)
    (out / "certificate.json").write_text(json.dumps(d, indent=2))
    _rehash(out)
    code, text = _verify(capsys, out)
    assert code == 1 and words in text, text


def test_a_per_model_certificate_must_match_the_judges_record(runs, tmp_path, capsys) -> None:
    out = _copy(runs["plain"], tmp_path)
    certs = json.loads((out / "certificates.json").read_text())
    certs[1]["seed"] += 1  # with scores.parquet removed only the cross-check can see it
    certs[1]["records_sha256"] = _records_digest(certs[1])
    (out / "certificates.json").write_text(json.dumps(certs, indent=2))
    (out / "scores.parquet").unlink()
    rec = json.loads((out / MANIFEST).read_text())
    rec["files"].remove("scores.parquet")
    (out / MANIFEST).write_text(json.dumps(manifest_record(out, rec["files"]), indent=2))
    code, text = _verify(capsys, out)
    assert code == 1 and "differs from the judge certificate's record of this model" in text


# ----------------------------------------------------------------------------------------------- (e) manifest
@pytest.mark.parametrize("name", ["leaderboard.csv", "summary.json", "retention.json"])
def test_an_edited_output_file_fails_through_the_manifest(runs, tmp_path, capsys, name) -> None:
    out = _copy(runs["plain"], tmp_path)
    text = (out / name).read_text()
    (out / name).write_text(text.replace("0.", "0.9", 1))
    code, printed = _verify(capsys, out)
    assert code == 1
    assert f"EDITED    {name} was changed after certify wrote it" in printed


def test_a_deleted_manifest_or_an_added_certificate_fails(runs, tmp_path, capsys) -> None:
    out = _copy(runs["plain"], tmp_path)
    (out / MANIFEST).unlink()
    code, text = _verify(capsys, out)
    assert code == 1 and f"MISSING   the folder has no {MANIFEST}" in text
    out2 = tmp_path / "added"
    shutil.copytree(runs["plain"], out2)
    shutil.copy(out2 / "certificate.json", out2 / "certificate-extra.json")
    code, text = _verify(capsys, out2)
    assert code == 1 and "certificate-extra.json is not listed" in text


# ----------------------------------------------------------------------------------------------- reproducibility
def test_two_runs_write_identical_files_apart_from_time_stamps(runs, tmp_path) -> None:
    """Inherently time-stamped: each certificate's ``created`` (certificate*.json, certificates.json), the time
    stamps report.html prints, and so the manifest's digests of those files (and its signature)."""
    again = tmp_path / "again"
    _certify(runs["table"], again, "--sign-key", str(runs["key"]))
    names = sorted(p.name for p in runs["signed"].iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    stamp = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")
    for name in names:
        a, b = (runs["signed"] / name).read_bytes(), (again / name).read_bytes()
        if name in CERT_FILES:
            def strip(x: object) -> list:
                return [{k: v for k, v in c.items() if k != "created"} for c in (x if isinstance(x, list) else [x])]

            assert strip(json.loads(a)) == strip(json.loads(b)), name
        elif name == "report.html":
            assert stamp.sub("", a.decode()) == stamp.sub("", b.decode())
        elif name == MANIFEST:
            ra, rb = json.loads(a), json.loads(b)
            assert ra["files"] == rb["files"]
            assert {k for k in ra["sha256"] if ra["sha256"][k] != rb["sha256"][k]} <= {*CERT_FILES, "report.html"}
        else:
            assert a == b, name


# ----------------------------------------------------------------------------------------------- schema 2
def test_a_schema_2_certificate_verifies_with_a_warning(runs) -> None:
    d = json.loads((runs["plain"] / "certificate.json").read_text())
    assert d["schema_version"] == SCHEMA_VERSION == 3 and len(d["judgments_sha256"]) == 64
    d["schema_version"] = 2
    del d["judgments_sha256"]
    d["records_sha256"] = _records_digest(d)  # schema 2: scope, audit, diagnostics, version only
    res = Certificate.from_dict(d).verify()
    assert "schema version 2" in res["warning"]
    del d["records_sha256"]  # optional in schema 2 ...
    assert Certificate.from_dict(d).verify()["holds"]
    d3 = json.loads((runs["plain"] / "certificate.json").read_text())
    del d3["records_sha256"]  # ... mandatory in schema 3
    with pytest.raises(Exception, match="records_sha256 is missing"):
        Certificate.from_dict(d3).verify()


# ----------------------------------------------------------------------------------------------- keys
def test_keygen_writes_a_private_key_only_its_owner_reads_and_never_overwrites(tmp_path, capsys) -> None:
    assert main(["keygen", "--out", str(tmp_path / "k")]) == 0
    printed = capsys.readouterr().out
    priv, pub = tmp_path / "k" / "biasbound-signing.key", tmp_path / "k" / "biasbound-signing.pub"
    assert stat.S_IMODE(priv.stat().st_mode) == 0o600
    assert "PRIVATE KEY" in priv.read_text() and "PUBLIC KEY" in pub.read_text()
    assert priv.read_text().splitlines()[1] not in printed
    assert main(["keygen", "--out", str(tmp_path / "k")]) == 2
    assert "never overwritten" in capsys.readouterr().err


def test_the_private_key_is_in_no_output(runs) -> None:
    secret = runs["key"].read_bytes()
    body = b"".join(secret.splitlines()[1:-1])
    for p in runs["signed"].iterdir():
        data = p.read_bytes()
        assert body not in data and secret not in data, p.name


def test_wrong_or_corrupt_key_files_are_one_sentence_and_exit_2(runs, tmp_path, capsys) -> None:
    corrupt = tmp_path / "corrupt.key"
    corrupt.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    for key in (corrupt, runs["pub"], tmp_path / "absent.key"):
        code = main(["certify", str(runs["table"]), "--out", str(tmp_path / "o"), "--sign-key", str(key),
                     "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and "--sign-key" in err and "Traceback" not in err and len(err.strip().splitlines()) <= 3
        assert not (tmp_path / "o").exists()  # refused before anything was computed or written
    for key in (corrupt, runs["key"]):
        code, text = _verify(capsys, runs["signed"], "--public-key", key)
        assert code == 2 and "--public-key" in text


# ----------------------------------------------------------------------------------------------- entry point
def _entry_point() -> list[str]:
    exe = Path(sys.executable).with_name("biasbound")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "biasbound.cli"]


@pytest.mark.slow
def test_exit_codes_and_environment_keys_through_the_installed_entry_point(runs, tmp_path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "BIASBOUND_SIGN_KEY": str(runs["key"])}
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")

    def run(*args: str, extra_env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([*_entry_point(), *args], capture_output=True, text=True, env={**env, **(extra_env or {})},
                              timeout=600)

    out = tmp_path / "env-signed"
    r = run("certify", str(runs["table"]), "--out", str(out), "--no-plots", "--bootstrap-rounds", "100", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "signature" in json.loads((out / MANIFEST).read_text())  # signed with the key the variable names
    r = run("verify", str(out), extra_env={"BIASBOUND_PUBLIC_KEY": str(runs["pub"])})
    assert r.returncode == 0 and "Ed25519 signature" in r.stdout, r.stdout + r.stderr
    (out / "retention.json").write_text("{}\n")
    r = run("verify", str(out), "--public-key", str(runs["pub"]))
    assert r.returncode == 1 and "retention.json" in r.stdout
    r = run("verify", str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "nowhere" in r.stderr


def test_several_inputs_after_one_judgments_option_and_in_memory_tables(tmp_path, capsys) -> None:
    frame = flip_table(0.3, seed=4, n_items=12)
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    frame[frame["model"] != "mC"].to_csv(a, index=False)
    frame[frame["model"] == "mC"].to_csv(b, index=False)
    out = tmp_path / "two"
    code = main(["certify", str(a), str(b), "--out", str(out), "--bootstrap-rounds", "100", "--no-progress", "--no-plots"])
    assert code == 0
    capsys.readouterr()
    code, text = _verify(capsys, out, "--judgments", a, b)
    assert code == 0 and "reproduced" in text, text
    code, text = _verify(capsys, out, a)  # a second positional without --judgments
    assert code == 2 and "--judgments" in text
    code, text = _verify(capsys, out, "--judgments", tmp_path / "absent.csv")
    assert code == 2 and "The '--judgments' option of verify names" in text and "absent.csv" in text
    # certificates made from an in-memory table record no reading options: refused in one sentence
    from biasbound.pipeline import certify

    mem = tmp_path / "mem"
    table = frame.assign(source="<frame>", line=range(1, len(frame) + 1), verdict=None)
    certify(table, neighbors="swap", out=mem, bootstrap_rounds=100, plots=False, progress=False)
    code, text = _verify(capsys, mem, "--judgments", a)
    assert code == 2 and "in-memory table" in text
    assert _verify(capsys, mem)[0] == 0  # its other checks are the same


@pytest.mark.slow
def test_a_report_rewritten_after_certify_keeps_the_manifest_true_and_a_signed_one_refuses(runs, tmp_path, capsys) -> None:
    """The demo re-writes report.html after certify (its comparison section): the manifest records the new digest;
    in a signed folder that would drop the signature, so it is refused."""
    from biasbound._exceptions import InputError
    from biasbound._integrity import file_sha256
    from biasbound.pipeline import certify
    from biasbound.pipeline._outputs import write_result_report

    frame = pd.read_csv(runs["table"]).assign(source="<frame>", verdict=None)
    frame["line"] = range(1, len(frame) + 1)
    out = tmp_path / "demo-like"
    result = certify(frame, neighbors="swap", out=out, bootstrap_rounds=100, progress=False)
    (out / "report.html").write_text("stale")  # what the re-write replaces
    write_result_report(result, out, comparison=None)
    assert (out / "report.html").read_text() != "stale"
    assert json.loads((out / MANIFEST).read_text())["sha256"]["report.html"] == file_sha256(out / "report.html")
    assert _verify(capsys, out)[0] == 0
    signed = tmp_path / "signed-demo-like"
    result = certify(frame, neighbors="swap", out=signed, bootstrap_rounds=100, progress=False, sign_key=runs["key"])
    report = (signed / "report.html").read_bytes()
    with pytest.raises(InputError, match="signed outputs"):
        write_result_report(result, signed)
    assert (signed / "report.html").read_bytes() == report  # refused before writing
    assert _verify(capsys, signed, "--public-key", runs["pub"])[0] == 0


@pytest.mark.parametrize("what", ["coverage", "audit", "judgments_sha256"])
def test_forged_records_with_recomputed_digests_fail_recertification(runs, tmp_path, capsys, what) -> None:
    """Records no statistic determines (a coverage count, an audit verdict, the judgments digest), edited and every
    digest recomputed: the keyless checks cannot tell; re-certification from the judgments names the field."""
    def edit(d: dict) -> dict:
        if what == "coverage" and "models" in d["scope"]["coverage"]:
            next(iter(d["scope"]["coverage"]["models"].values()))["neighbors"]["swap"]["missing"] += 3
        elif what == "coverage":
            d["scope"]["coverage"]["neighbors"]["swap"]["missing"] += 3
        elif what == "audit":
            d["audit"]["pooled"]["reason"] = "audited on fresh neighbours"
        else:
            d["judgments_sha256"] = "0" * 64
        d["records_sha256"] = _records_digest(d)
        return d

    out = _copy(runs["plain"], tmp_path)
    _rewrite_certs(out, edit)
    _rehash(out)
    assert _verify(capsys, out)[0] == 0
    code, text = _verify(capsys, out, "--judgments", runs["table"])
    field = "judgments_sha256" if what == "judgments_sha256" else ("scope" if what == "coverage" else "audit")
    assert code == 1 and re.search(rf"DIFFERS +certificate\.json: {field}\b", text), text


def test_outputs_of_an_in_memory_judgment_set_recertify_from_its_table(tmp_path, capsys) -> None:
    """biasbound run certifies judgments.parquet as an in-memory JudgmentSet (from_frame, scale [0, 1]): the recorded
    source name and scale let verify --judgments read that table the same way; a doctored copy fails."""
    from biasbound.data.tables import from_frame
    from biasbound.pipeline import certify

    frame = flip_table(0.4, seed=5, n_items=12)
    table = tmp_path / "judgments.parquet"
    frame.to_parquet(table, index=False)
    out = tmp_path / "run-like"
    certify(from_frame(frame, source="judgments.parquet", scale=(0.0, 1.0)), neighbors="swap", out=out,
            bootstrap_rounds=100, plots=False, progress=False)
    code, text = _verify(capsys, out, "--judgments", table)
    assert code == 0 and "reproduced" in text, text
    doctored = tmp_path / "doctored.parquet"
    frame.assign(score=np.where(frame.index == frame.index[frame["game"] == 2][0], 0.5, frame["score"])).to_parquet(
        doctored, index=False)
    assert judgments_digest(pd.read_parquet(doctored))[0] != judgments_digest(frame)[0]
    code, text = _verify(capsys, out, "--judgments", doctored)
    assert code == 1 and "DIFFERS   certificate.json" in text
    code, text = _verify(capsys, out, "--judgments", table, doctored)
    assert code == 2 and "one table" in text


def test_an_unreadable_file_the_manifest_shows_edited_is_a_failed_check_not_bad_input(runs, tmp_path, capsys) -> None:
    out = _copy(runs["plain"], tmp_path)
    (out / "certificate.json").write_text("{not json")
    code, text = _verify(capsys, out)
    assert code == 1 and "EDITED    certificate.json was changed" in text and "cannot be read any more" in text
    (out / MANIFEST).unlink()  # no manifest to say so: an unreadable certificate is bad input
    code, text = _verify(capsys, out)
    assert code == 2 and "certificate.json" in text

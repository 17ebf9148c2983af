"""What a stranger's ``verify`` says must be true (issue 22, classes 1-6; issue 28, class 2 and items 5/7).

Each class: the attack from the issue, reproduced on a tiny table, fails verification or is refused in one
sentence (exit != 0, no traceback, no hang); genuine outputs still verify, also after the judgments file is
renamed or moved; certify never deletes a file it did not write. The attacks run through the installed
``biasbound`` entry point (one subprocess each); their variants in-process through :func:`biasbound.cli.main`.

No statistics: every check is an exact recomputation (digests, signatures, a re-run with the recorded seeds) or a
refusal, so no test can fail at random (false-failure rate 0); the tables are drawn with fixed seeds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from biasbound._integrity import MANIFEST, manifest_record
from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: certify's outputs written, attacked and verified (~10 s)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_integrity import flip_table  # noqa: E402 - the sibling test module, after its folder is on the path


def _entry_point() -> list[str]:
    exe = Path(sys.executable).with_name("biasbound")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "biasbound.cli"]


def cli(*args: object, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    """One run of the installed entry point in the test's own folder (its temporary files too); a hang fails the
    test (timeout) instead of blocking the suite."""
    env = {**os.environ, "TMPDIR": str(cwd)}
    env.pop("BIASBOUND_PUBLIC_KEY", None)
    env.pop("BIASBOUND_SIGN_KEY", None)
    res = subprocess.run([*_entry_point(), *map(str, args)], check=False, capture_output=True, text=True, env=env, cwd=cwd,
                         timeout=timeout)
    assert "Traceback" not in res.stdout + res.stderr, res.stderr
    return res


def one_sentence(res: subprocess.CompletedProcess) -> str:
    """The refusal: exit 2 and one ``error:`` line on stderr."""
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A judgment table, a key pair, a signed certify folder and a plain one (made in-process: cheap)."""
    root = tmp_path_factory.mktemp("trust")
    table = root / "judgments.csv"
    flip_table(0.3, n_items=12).to_csv(table, index=False)
    assert main(["keygen", "--out", str(root / "keys")]) == 0
    signed, plain = root / "signed", root / "plain"
    base = ["--bootstrap-rounds", "50", "--no-progress", "--no-plots"]
    assert main(["certify", str(table), "--out", str(signed), "--sign-key", str(root / "keys" / "biasbound-signing.key"),
                 *base]) == 0
    assert main(["certify", str(table.absolute()), "--out", str(plain), *base]) == 0
    return {"root": root, "table": table, "signed": signed, "plain": plain, "pub": root / "keys" / "biasbound-signing.pub",
            "base": base}


@pytest.fixture(autouse=True)
def _scratch_in_tmp(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))


def _copy(src: Path, tmp_path: Path) -> Path:
    dst = tmp_path / src.name
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _rehash(out: Path) -> None:
    """The manifest's digests recomputed keyless, the way anyone can."""
    rec = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps(manifest_record(out, rec["files"]), indent=2))


def _inprocess(capsys, *args: object) -> tuple[int, str]:
    code = main([*map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out + err


# ------------------------------------------------------------------------------------ class 1: the manifest
def test_class1_an_unlisted_certificate_beside_signed_outputs_fails(made, tmp_path, capsys) -> None:
    out = _copy(made["signed"], tmp_path)
    forged = json.loads((out / "certificate.json").read_text())
    forged["alpha"] = min(1.0, float(forged["alpha"]) * 1.5)  # a raised α
    (out / "certificate_final.json").write_text(json.dumps(forged))
    (out / "certificate.json.json").write_text(json.dumps(forged))
    res = cli("verify", out / "certificate_final.json", "--public-key", made["pub"], cwd=tmp_path)
    assert res.returncode == 1 and "certificate_final.json is not listed" in res.stdout
    assert "signature" not in res.stdout.split("EDITED")[-1].split("\n")[-2]  # no "signature matched" line
    code, text = _inprocess(capsys, "verify", out, "--public-key", made["pub"])
    assert code == 1 and "certificate_final.json is not listed" in text and "certificate.json.json is not listed" in text


@pytest.mark.parametrize("name", ["leaderboard_final.csv", "summary_v2.json", "report-final.html", "Scores.parquet"])
def test_class1_unlisted_outputs_are_named_and_fail(made, tmp_path, capsys, name) -> None:
    out = _copy(made["signed"], tmp_path)
    (out / name).write_text("x")
    (out / "notes.txt").write_text("mine")  # a user's own file, not output-like: never a failure
    code, text = _inprocess(capsys, "verify", out, "--public-key", made["pub"])
    assert code == 1 and f"{name} is not listed" in text and "notes.txt" not in text


def test_class1_scores_outside_the_manifest_fail_and_keyless_says_signature_unchecked(made, tmp_path, capsys) -> None:
    import pandas as pd

    out = _copy(made["signed"], tmp_path)
    other = tmp_path / "elsewhere.parquet"
    frame = pd.read_parquet(out / "scores.parquet")
    frame.loc[0, "certified"] = float(frame.loc[0, "certified"]) + 0.01
    frame.to_parquet(other, index=False)
    code, text = _inprocess(capsys, "verify", out, "--scores", other, "--public-key", made["pub"])
    assert code == 1 and "--scores" in text and "not the scores.parquet" in text
    # the genuine scores given by --scores (a copy elsewhere) verify
    shutil.copy(out / "scores.parquet", tmp_path / "copy.parquet")
    assert _inprocess(capsys, "verify", out, "--scores", tmp_path / "copy.parquet", "--public-key", made["pub"])[0] == 0
    code, text = _inprocess(capsys, "verify", out)
    assert code == 0 and "signature present, not checked" in text


# ------------------------------------------------------------------------------------ class 2: deletion
def test_class2_a_planted_manifest_deletes_nothing(made, tmp_path, capsys) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    table = folder / "judgments.csv"
    shutil.copy(made["table"], table)
    (folder / "notes.txt").write_text("my notes")
    (folder / "certificate-important.json").write_text('{"mine": 1}')
    (folder / "ranking-my-slides.png").write_bytes(b"png")
    planted = manifest_record(folder, ["judgments.csv", "notes.txt", "certificate-important.json",
                                       "ranking-my-slides.png"])
    (folder / MANIFEST).write_text(json.dumps(planted))
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != MANIFEST}
    res = cli("certify", table, "--out", folder, *made["base"], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert all((folder / n).read_bytes() == b for n, b in before.items())
    # a re-run replaces its own outputs (recorded with their digests and file identity)
    (folder / "certificate.json").read_text()
    assert _inprocess(capsys, "certify", table, "--out", folder, *made["base"])[0] == 0
    assert all((folder / n).read_bytes() == b for n, b in before.items())


def test_class2_a_users_file_under_an_output_name_is_refused_untouched(made, tmp_path, capsys) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "summary.json").write_text("my summary")
    code, line = _inprocess(capsys, "certify", made["table"], "--out", folder, *made["base"])
    assert code == 2 and "summary.json" in line and "cannot prove it wrote" in line
    assert (folder / "summary.json").read_text() == "my summary" and sorted(p.name for p in folder.iterdir()) == [
        "summary.json"]


# ------------------------------------------------------------------------------------ class 3: inputs by content
def test_class3_no_path_as_typed_and_verify_after_rename(made, tmp_path, capsys) -> None:
    plain = made["plain"]
    typed = str(made["table"].absolute().parent)
    for p in plain.iterdir():
        if p.suffix in (".json", ".csv"):
            assert typed not in p.read_text(), p.name  # the certifier's folder layout is never published
    moved = tmp_path / "elsewhere" / "renamed.csv"
    moved.parent.mkdir()
    shutil.copy(made["table"], moved)
    res = cli("verify", plain, "--judgments", moved, cwd=tmp_path)
    assert res.returncode == 0, res.stdout
    assert "matched by content: judgments.csv = " in res.stdout and "reading options applied" in res.stdout
    # a doctored copy is named as such and its outputs differ
    text = made["table"].read_text().replace(",1.0\n", ",0.0\n", 1)
    doctored = tmp_path / "doctored.csv"
    doctored.write_text(text)
    code, out = _inprocess(capsys, "verify", plain, "--judgments", doctored)
    assert code == 1 and "no file given has the content recorded" in out


def test_class3_verify_says_which_column_it_read(made, tmp_path, capsys) -> None:
    import pandas as pd

    frame = pd.read_csv(made["table"]).rename(columns={"score": "score_alt"})
    frame["score"] = 0.5  # a decoy column the recorded mapping does not read
    src = tmp_path / "alt.csv"
    frame.to_csv(src, index=False)
    out = tmp_path / "out"
    assert _inprocess(capsys, "certify", src, "--out", out, "--columns", "score=score_alt", *made["base"])[0] == 0
    code, text = _inprocess(capsys, "verify", out, "--judgments", src)
    assert code == 0 and "columns score=score_alt" in text


# ------------------------------------------------------------------------------------ class 4: untrusted files
def test_class4_devices_fifos_and_links_out_are_refused_without_hanging(made, tmp_path, capsys) -> None:
    folder = tmp_path / "bare"
    folder.mkdir()
    shutil.copy(made["plain"] / "certificate.json", folder / "certificate.json")
    os.symlink("/dev/zero", folder / "certificate-x.json")
    code, line = _inprocess(capsys, "verify", folder)
    assert code == 2 and "certificate-x.json" in line and ("device" in line or "link" in line)
    fifo_folder = tmp_path / "fifo"
    fifo_folder.mkdir()
    os.mkfifo(fifo_folder / "certificate.json")
    line = one_sentence(cli("verify", fifo_folder, cwd=tmp_path, timeout=60))
    assert "named pipe" in line
    # with a manifest, the link beside signed outputs is named as unlisted (never read)
    out = _copy(made["signed"], tmp_path / "s")
    os.symlink("/dev/zero", out / "certificate-x.json")
    code, text = _inprocess(capsys, "verify", out, "--public-key", made["pub"])
    assert code == 1 and "certificate-x.json is not listed" in text
    # a named pipe as certify's input
    os.mkfifo(tmp_path / "pipe.csv")
    line = one_sentence(cli("certify", tmp_path / "pipe.csv", "--out", tmp_path / "o", cwd=tmp_path, timeout=60))
    assert "named pipe" in line


def test_class4_size_caps_are_one_sentence(made, tmp_path, capsys, monkeypatch) -> None:
    import gzip

    import biasbound._untrusted as untrusted

    monkeypatch.setattr(untrusted, "MAX_TEXT_BYTES", 100_000)  # the cap's route, at a size a test can afford
    monkeypatch.setattr(untrusted, "MAX_PARQUET_ROWS", 10)  # scores.parquet holds 36
    big = tmp_path / "big.csv.gz"
    big.write_bytes(gzip.compress(made["table"].read_bytes() * 200))
    code, text = _inprocess(capsys, "certify", big, "--out", tmp_path / "o")
    assert code == 2 and "expands to more than the 100,000 bytes" in text and "corrupt" not in text
    code, text = _inprocess(capsys, "verify", made["plain"])
    assert code == 2 and "scores.parquet: declares" in text and "rows" in text


def _forge_reproduce(made, tmp_path, edit) -> Path:
    out = _copy(made["plain"], tmp_path)
    cert = json.loads((out / "certificate.json").read_text())
    edit(cert["scope"]["reproduce"]["certify"])
    (out / "certificate.json").write_text(json.dumps(cert))
    _rehash(out)
    return out


def test_class4_recorded_call_is_read_through_the_parameter_table(made, tmp_path, capsys) -> None:
    out = _forge_reproduce(made, tmp_path / "a", lambda c: c.update(n_mc=2_000_000_000))
    line = one_sentence(cli("verify", out, "--judgments", made["table"], cwd=tmp_path, timeout=60))
    assert "scope.reproduce.certify.n_mc" in line
    out = _forge_reproduce(made, tmp_path / "b", lambda c: c.update(sign_key=str(tmp_path / "secret.key")))
    code, text = _inprocess(capsys, "verify", out, "--judgments", made["table"])
    assert code == 2 and "'sign_key', which is not a parameter certify records" in text
    out = _forge_reproduce(made, tmp_path / "c", lambda c: c.update(frobnicate=1))
    code, text = _inprocess(capsys, "verify", out, "--judgments", made["table"])
    assert code == 2 and "'frobnicate'" in text
    out = _forge_reproduce(made, tmp_path / "d", lambda c: c.update(tau=-1))
    code, text = _inprocess(capsys, "verify", out, "--judgments", made["table"])
    assert code == 2 and "scope.reproduce.certify.tau" in text


@pytest.mark.parametrize("kind", ["duplicate", "long int", "deep"])
def test_class4_hostile_json_is_one_sentence(made, tmp_path, capsys, kind) -> None:
    out = _copy(made["plain"], tmp_path)
    text = (out / "certificate.json").read_text()
    if kind == "duplicate":  # json keeps the last "alpha", a reader sees the first
        text = text.replace('"alpha":', '"alpha": 0.999, "alpha":', 1)
    elif kind == "long int":
        text = text.replace('"seed":', '"seed": ' + "7" * 5000 + ', "x_seed":', 1)
    else:
        text = json.dumps(json.loads(text))[:-1] + ', "deep": ' + "[" * 900 + "]" * 900 + "}"
    (out / "certificate.json").write_text(text)
    _rehash(out)
    if kind == "duplicate":
        line = one_sentence(cli("verify", out, cwd=tmp_path))
    else:
        code, line = _inprocess(capsys, "verify", out)
        assert code == 2 and len(line.strip().splitlines()) == 1
    assert "certificate.json" in line
    assert {"duplicate": "twice", "long int": "digits", "deep": "levels deep"}[kind] in line


# ------------------------------------------------------------------------------------ class 6: names, compare, keys
EVIL = "ev\x1b[1A\x1b[2Kil\x1b]52;c;ZXZpbA==\x07"


def test_class6_control_characters_in_names_never_reach_the_terminal(made, tmp_path, capsys) -> None:
    import pandas as pd

    frame = pd.read_csv(made["table"])
    frame["judge"] = EVIL
    frame["model"] = frame["model"] + "\x1b[31m"
    evil = tmp_path / "evil.csv"
    frame.to_csv(evil, index=False)
    out = tmp_path / "out"
    res = cli("certify", evil, "--out", out, *made["base"], cwd=tmp_path)
    assert res.returncode == 0 and "\x1b" not in res.stdout + res.stderr
    assert "ev\\x1b[1A\\x1b[2Kil\\x1b]52;c;ZXZpbA==\\x07" in res.stdout  # shown, escaped
    code, text = _inprocess(capsys, "verify", out)
    assert code == 0 and "\x1b" not in text and "\\x1b" in text
    code, text = _inprocess(capsys, "compare", out, out)
    assert "\x1b" not in text and "\\x1b" in text


def test_class6_compare_refuses_an_edited_summary(made, tmp_path, capsys) -> None:
    old = _copy(made["plain"], tmp_path / "old")
    new = _copy(made["plain"], tmp_path / "new")
    summary = json.loads((new / "summary.json").read_text())
    summary["edited"] = True
    (new / "summary.json").write_text(json.dumps(summary))
    line = one_sentence(cli("compare", old, new, "--fail-if", "flip_rate>0.99", cwd=tmp_path))
    assert "'NEW'" in line and "summary.json was changed" in line
    (new / MANIFEST).unlink()
    code, text = _inprocess(capsys, "compare", old, new / "summary.json")
    assert code == 2 and "has no .biasbound-outputs.json" in text
    assert _inprocess(capsys, "compare", old, made["plain"])[0] == 0  # genuine folders compare


def test_keygen_refuses_an_empty_or_unwritable_folder_and_a_readable_key_warns(made, tmp_path, capsys) -> None:
    code, line = _inprocess(capsys, "keygen", "--out", "")
    assert code == 2 and "empty name" in line and not list(Path.cwd().glob("biasbound-signing.*"))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        if not os.access(ro, os.W_OK):  # (root writes anywhere: nothing to refuse then)
            code, text = _inprocess(capsys, "keygen", "--out", ro / "k")
            assert code == 2 and "give a writable folder" in text
    finally:
        ro.chmod(0o700)
    key = tmp_path / "open.key"
    shutil.copy(made["root"] / "keys" / "biasbound-signing.key", key)
    key.chmod(0o644)
    res = cli("certify", made["table"], "--out", tmp_path / "o", "--sign-key", key, *made["base"], cwd=tmp_path)
    assert res.returncode == 0 and res.stderr.count("can be read by other users (mode 0644)") == 1  # entry point


# ------------------------------------------------------------------------------------ class 5: the audit's own data
def test_class5_audit_recognises_its_own_data_by_the_rows_digest(made, tmp_path) -> None:
    """Neighbours whose distances, counts and level sums equal the certificate's record but whose rows are not its
    data (here: the same answers under other item ids) are fresh evidence, audited; the certificate's own rows are
    a recheck."""
    import pandas as pd

    cert = made["plain"] / "certificate.json"
    res = cli("audit", cert, "--neighbor-file", made["table"], "--json", "--no-progress", cwd=tmp_path)
    own = json.loads(res.stdout)
    assert {p["kind"] for p in own["audit"]["parts"]} == {"recheck"}, own
    frame = pd.read_csv(made["table"])
    frame["item_id"] = frame["item_id"] + "-fresh"  # same counts and level sums, other items
    fresh = tmp_path / "fresh.csv"
    frame.to_csv(fresh, index=False)
    res = cli("audit", cert, "--neighbor-file", fresh, "--json", "--no-progress", cwd=tmp_path)
    doc = json.loads(res.stdout)
    kinds = {p["kind"] for p in doc["audit"]["parts"]}
    assert "recheck" not in kinds and doc["verdict"] != "recheck", doc
    assert res.returncode == {"holds": 0, "not contradictable": 0, "violated": 1, "inconclusive": 3}[doc["verdict"]]


def test_every_command_refuses_a_named_pipe_in_one_sentence(made, tmp_path, capsys) -> None:
    """Issue 28, items 5/7: compare, audit and plan read their inputs through the same regular-file check as
    certify and verify (a FIFO would block them forever)."""
    fifo = tmp_path / "judgments.csv"
    os.mkfifo(fifo)
    for args in (["compare", made["plain"], fifo], ["audit", made["plain"] / "certificate.json", "--neighbor-file", fifo]):
        code, text = _inprocess(capsys, *args)
        assert code == 2 and "named pipe" in text, (args, text)
    pilot = tmp_path / "pilot"
    pilot.mkdir()
    for name in ("judgments.parquet", "neighbors.jsonl"):
        (pilot / name).write_bytes(b"")
    os.mkfifo(pilot / "run_summary.json")
    code, text = _inprocess(capsys, "plan", pilot)
    assert code == 2 and "named pipe" in text

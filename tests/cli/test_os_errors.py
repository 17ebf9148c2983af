"""Every operating-system error that stops a command is one sentence with the path and the fix.

The errors are raised where each command reaches the disk (the test runs as any user, root
included, so permissions and full disks are simulated at the command's own library call); the
sentence is built once, at the CLI entry, for every command.
"""

from __future__ import annotations

import errno
import os

import pytest

from biasbound._oserror import os_error_sentence
from biasbound.cli import main

GOOD = "judge,model,item_id,game,score\n" + "".join(f"j,m{m},q{i},{g},0.{(i * 7 + m + g) % 9 + 1}\n"
                                                      for m in range(2) for i in range(8) for g in (1, 2))


def _raise(err: int, filename: str | None = None):
    def f(*_a, **_k):
        raise OSError(err, os.strerror(err), *((filename,) if filename else ()))
    return f


@pytest.mark.parametrize(("err", "words"), [
    (errno.ENOSPC, ("no space is left on the device", "free space on that disk or give a folder on another disk")),
    (errno.EROFS, ("the file system is read-only", "give a writable folder")),
    (errno.EACCES, ("permission denied", "chmod")),
    (errno.EISDIR, ("it is a folder where a file was expected", "name a file")),
    (errno.EDQUOT, ("quota",)),
])
def test_each_os_error_is_one_sentence_naming_the_path_and_the_fix(err, words):
    text = os_error_sentence(OSError(err, os.strerror(err), "/data/out/summary.json"), "certify")
    assert text.startswith("certify could not use '/data/out/summary.json': ")
    for w in words:
        assert w in text
    assert text.endswith("then run the command again.") and text.count(".") <= 3


def test_an_error_naming_no_path_names_the_out_folder():
    text = os_error_sentence(OSError(errno.ENOSPC, "No space left on device"), "plan", ["plan", "p", "--out", "x/y"])
    assert text.startswith("plan could not write into 'x/y' (its --out): no space is left on the device")


@pytest.mark.slow  # six commands through the command line (~8 s; plan --demo loads the embedded set)
@pytest.mark.parametrize(("command", "target", "argv"), [
    ("certify", "biasbound.pipeline.certify", ["certify", "{d}/t.csv", "--out", "{d}/out", "--no-plots", "--no-progress"]),
    ("keygen", "biasbound._integrity.generate_keypair", ["keygen", "--out", "{d}/keys"]),
    ("run", "biasbound.config.load_config", ["run", "{d}/run.yaml"]),
    ("plan", "biasbound.planning.plan_judgments", ["plan", "--demo", "--out", "{d}/plan.json"]),
    ("compare", "biasbound.data.loading.load_inputs", ["compare", "{d}/t.csv", "{d}/t2.csv"]),
    ("verify", "biasbound.commands.verify._read_json", ["verify", "{d}/cert.json"]),
])
def test_every_command_speaks_the_same_sentence(command, target, argv, tmp_path, monkeypatch, capsys):
    (tmp_path / "t.csv").write_text(GOOD)
    (tmp_path / "t2.csv").write_text(GOOD)
    (tmp_path / "run.yaml").write_text("judge: {}\n")
    (tmp_path / "cert.json").write_text("{}")
    module, _, name = target.rpartition(".")
    import importlib

    owner = importlib.import_module(module)
    monkeypatch.setattr(owner, name, _raise(errno.ENOSPC, str(tmp_path / "full")))
    code = main([a.replace("{d}", str(tmp_path)) for a in argv])
    err = " ".join(capsys.readouterr().err.split())
    if code != 2 or "could not use" not in err:  # the command stopped earlier, on a check of its own: say which
        pytest.fail(f"{command}: exit {code}: {err}")
    assert err.startswith(f"error: {command} could not use '{tmp_path / 'full'}': no space is left on the device; ")
    assert "Traceback" not in err

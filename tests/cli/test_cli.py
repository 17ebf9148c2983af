"""The CLI shell: usage errors and biasbound errors end in one sentence and exit code 2."""

from __future__ import annotations

import subprocess
import sys

from biasbound import __version__
from biasbound.cli import main


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"biasbound {__version__}"


def test_unknown_option_is_a_usage_error_not_a_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "biasbound.cli", "--no-such-option"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "No such option" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


def test_every_command_is_registered(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("calibrate", "schematic", "certify", "audit", "demo", "run", "serve-synthetic-judge"):
        assert command in out

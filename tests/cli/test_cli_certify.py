"""`biasbound certify` and `biasbound audit` through the CLI on the real Arena-Hard judgments."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import typer
from scipy import stats

from biasbound.certificate import Certificate
from biasbound.cli import main
from biasbound.commands import audit as audit_cmd
from biasbound.commands import certify as certify_cmd

pytestmark = pytest.mark.slow  # end to end: certify and audit on the real Arena-Hard judgments (~33 s on a loaded machine)

# Registers the commands on the real CLI app when the integrator has not done it yet, so that
# `main([...])` (error handling, exit codes) is exercised exactly as users run it.
_REGISTER = (
    "from biasbound import cli\n"
    "from biasbound.commands import audit, certify, demo\n"
    "names = {c.name for c in cli.app.registered_commands}\n"
    "for mod, name in ((certify, 'certify'), (audit, 'audit'), (demo, 'demo')):\n"
    "    if name not in names:\n"
    "        mod.register(cli.app)\n"
)
exec(_REGISTER)  # noqa: S102 - same code as in the subprocess below


@pytest.fixture(scope="module")
def ensemble_file(shared_data):
    return shared_data / "ko-arena-hard-v0.1" / "judgments_ensemble.jsonl.gz"


@pytest.fixture(scope="module")
def certified(ensemble_file, tmp_path_factory):
    out = tmp_path_factory.mktemp("cli-certify")
    code = main(["certify", str(ensemble_file), "--out", str(out), "--tau", "0.5", "--delta", "0.01",
                 "--generators", "swap", "--seed", "5", "--no-plots"])
    return code, out


def test_certify_cli_writes_verified_certificates(certified):
    code, out = certified
    assert code == 0
    cert = Certificate.read(out / "certificate.json")
    assert cert.verify()["holds"] is True
    assert cert.scope["judge"] == "ensemble"
    per_model = json.loads((out / "certificates.json").read_text())
    assert len(per_model) == 76  # one per model of the 76 in the file (the loop below is not vacuous)
    for d in per_model:
        assert Certificate.from_dict(d).verify()["holds"] is True
    report = json.loads((out / "load_report.json").read_text())
    (entry,) = report.values()
    assert entry["format"] == "arena-hard" and entry["rows"] == 76000


def test_certify_cli_winrates_match_published(certified, shared_data):
    code, out = certified
    lb = pd.read_csv(out / "leaderboard.csv").set_index("model")
    pub = pd.read_csv(shared_data / "ko-arena-hard-v0.1" / "leaderboard_20250423" / "no_control.csv").set_index("model")
    common = pub.index.intersection(lb.index)
    assert stats.spearmanr(lb.loc[common, "win_rate_pct"], pub.loc[common, "score"]).statistic >= 0.999
    assert {"rank_original", "rank_certified", "bt_elo", "bt_elo_lo", "bt_elo_hi"} <= set(lb.columns)
    assert lb["rank_original"].dtype.kind == "i" and lb["rank_certified"].dtype.kind == "i"


def test_audit_cli_exit_code_matches_verdict(certified, ensemble_file):
    """Re-audit the judge certificate and one per-model certificate; the exit code follows the verdict."""
    code, out = certified
    res, _, used = audit_cmd.audit_on_files(out / "certificate.json", [ensemble_file], seed=1)
    assert used == ["swap"] and res.n_neighbors > 30000
    assert main(["audit", str(out / "certificate.json"), "--neighbor-file", str(ensemble_file), "--seed", "1"]) == \
        audit_cmd.EXIT_CODES[res.verdict]
    model = "o3-high"
    res_m, cert_m, _ = audit_cmd.audit_on_files(out / "certificates.json", [ensemble_file], model=model, seed=1)
    assert cert_m["scope"]["model"] == model and res_m.n_neighbors <= 500
    assert main(["audit", str(out / "certificates.json"), "--model", model, "--neighbor-file", str(ensemble_file),
                 "--seed", "1"]) == audit_cmd.EXIT_CODES[res_m.verdict]


def test_local_app_registers_the_commands():
    app = typer.Typer()
    certify_cmd.register(app)
    audit_cmd.register(app)
    names = {c.name for c in app.registered_commands}
    assert names == {"certify", "audit"}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--tau", "0"], "The '--tau' option of certify"),
        (["--delta", "1.5"], "The '--delta' option of certify"),
        (["--generators", "shuffle"], "The '--generators' option of certify"),
        (["--generators", "swap,variant:bold"], "variant:bold"),
    ],
)
def test_bad_parameters_exit_2(ensemble_file, tmp_path, capsys, args, fragment):
    code = main(["certify", str(ensemble_file), "--out", str(tmp_path), "--no-plots", *args])
    assert code == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_missing_file_exit_2_without_traceback_in_a_subprocess(tmp_path):
    from biasbound.commands import COMMAND_MODULES

    if certify_cmd in COMMAND_MODULES:  # wired into the real CLI: run it as users do
        cmd = [sys.executable, "-m", "biasbound.cli"]
    else:  # not yet registered by the integrator: register, then run cli.main the same way
        cmd = [sys.executable, "-c", _REGISTER + "import sys\nsys.exit(cli.main(sys.argv[1:]))\n"]
    proc = subprocess.run(
        [*cmd, "certify", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 3  # one sentence (rich may wrap it)


def test_audit_shows_its_steps_on_a_terminal_and_keeps_stdout_clean(certified, ensemble_file, capsys, monkeypatch):
    """Progress goes to the stderr console only: on a terminal each step leaves a line; stdout holds the table alone."""
    import io

    from rich.console import Console

    from biasbound import _progress

    screen = io.StringIO()
    monkeypatch.setattr(_progress, "_CONSOLE", Console(file=screen, force_terminal=True, width=120, color_system=None))
    code, out = certified
    main(["audit", str(out / "certificate.json"), "--neighbor-file", str(ensemble_file), "--seed", "1"])
    shown = screen.getvalue()
    assert "✓ reading 1 neighbour file(s)" in shown and "✓ auditing" in shown
    stdout = capsys.readouterr().out
    assert "verdict" in stdout and "reading" not in stdout and "auditing:" not in stdout
    screen.truncate(0)
    main(["audit", str(out / "certificate.json"), "--neighbor-file", str(ensemble_file), "--seed", "1", "--no-progress"])
    assert screen.getvalue().strip("\x00") == ""

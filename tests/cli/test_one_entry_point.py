"""One command-line entry point: `biasbound` (and `python -m biasbound`, the same biasbound.cli.main); the run
command has no handler of its own, and rich markup in a file name reaches the user verbatim."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import biasbound.commands.run as run_command


def test_run_has_no_entry_point_of_its_own() -> None:
    assert not hasattr(run_command, "main")
    assert "__main__" not in Path(run_command.__file__).read_text()


def test_python_m_biasbound_is_the_cli(tmp_path: Path) -> None:
    config = tmp_path / "[bold]x.yaml"
    config.write_text("tau: 0.5\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(Path(__file__).resolve().parents[2] / "src"),
                                                                     os.environ.get("PYTHONPATH")) if p)}
    proc = subprocess.run([sys.executable, "-m", "biasbound", "run", str(config)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    err = " ".join(proc.stderr.split())
    assert err.startswith(f"error: {config}: The key 'data'"), err  # '[bold]' kept, never taken for markup

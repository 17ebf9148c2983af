"""`biasbound --help` and the command line's start-up import only what the command needs.

Structural, not timed: a fresh interpreter imports the CLI (and prints the help of every command) and
reports which heavy modules ended up in ``sys.modules``; scipy.stats and pandas must not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # end to end: fresh interpreters start the CLI (~13 s on a loaded machine)

HEAVY = ("scipy.stats", "pandas", "biasbound.calibration", "biasbound.pipeline")


def _loaded_after(code: str) -> list[str]:
    probe = code + f"\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_the_cli_loads_neither_scipy_stats_nor_pandas() -> None:
    assert _loaded_after("import biasbound.cli") == []


@pytest.mark.parametrize("argv", [["--help"], ["certify", "--help"], ["audit", "--help"], ["verify", "--help"],
                                  ["calibrate", "--help"], ["demo", "--help"], ["run", "--help"]])
def test_help_loads_neither_scipy_stats_nor_pandas(argv: list[str]) -> None:
    code = ("import contextlib, io\nfrom biasbound.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as buf:\n    rc = main({argv!r})\n"
            "assert rc == 0 and 'Usage' in buf.getvalue(), (rc, buf.getvalue())\n")
    assert _loaded_after(code) == []


def test_public_names_still_load_on_first_use() -> None:
    import biasbound

    assert biasbound.calibrate is biasbound.calibration.calibrate  # a lazy name and a submodule attribute
    assert callable(biasbound.certify) and biasbound.Certificate.__name__ == "Certificate"
    with pytest.raises(AttributeError):
        biasbound.no_such_name  # noqa: B018
    assert _loaded_after("from biasbound import calibrate") == ["scipy.stats", "biasbound.calibration"]


def _modules_after(code: str, names: tuple[str, ...]) -> list[str]:
    probe = code + f"\nimport json, sys\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=dict(os.environ))
    return json.loads(out.stdout.strip().splitlines()[-1])


OTHER_COMMANDS = ("biasbound.commands.audit", "biasbound.commands.serve", "biasbound.commands.verify",
                  "biasbound.commands.compare", "biasbound.testing.server", "biasbound.judge.prompts")


@pytest.mark.parametrize("argv", [["demo", "--help"], ["calibrate", "--help"], ["certify", "--help"]])
def test_a_command_imports_its_own_module_not_the_others(argv: list[str]) -> None:
    code = ("import contextlib, io\nfrom biasbound.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()) as buf:\n    rc = main({argv!r})\n"
            "assert rc == 0 and 'Usage' in buf.getvalue(), (rc, buf.getvalue())\n")
    assert _modules_after(code, OTHER_COMMANDS) == []


def test_the_top_level_help_still_lists_every_command_in_order() -> None:
    from biasbound.commands import COMMANDS

    code = ("import contextlib, io\nfrom biasbound.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as buf:\n    rc = main(['demo', '--help'])\n"
            "with contextlib.redirect_stdout(io.StringIO()) as buf:\n    rc = main(['--help'])\n"
            "assert rc == 0\nimport re, sys\n"
            "print(' '.join(re.findall(r'^│ ([a-z][a-z-]*) ', buf.getvalue(), re.M)), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "COLUMNS": "100"})
    assert out.stderr.split() == list(COMMANDS)  # demo registered first, listed in its place

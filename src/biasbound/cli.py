"""The ``biasbound`` command line: a typer app whose commands live in ``biasbound.commands``.

Each module in ``biasbound.commands`` defines ``register(app)``; errors from the
biasbound error tree are printed as one red sentence with exit code 2, never a traceback.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from biasbound import __version__
from biasbound._exceptions import BiasboundError
from biasbound.commands import COMMAND_MODULES

__all__ = ["app", "main"]


def _usage_errors() -> tuple[type[Exception], ...]:
    """Click's usage-error classes: newer typer bundles its own copy of click, older typer uses the real one."""
    classes: list[type[Exception]] = []
    try:
        from typer._click.exceptions import ClickException as TyperClickException
    except ImportError:  # typer that still depends on the real click
        pass
    else:
        classes.append(TyperClickException)
    try:
        from click.exceptions import ClickException
    except ImportError:  # typer >= 0.20 needs no click
        pass
    else:
        classes.append(ClickException)
    return tuple(classes)


_USAGE_ERRORS = _usage_errors()

app = typer.Typer(
    name="biasbound",
    help="Provably bias-bounded LLM-as-a-judge scores: measure, calibrate, certify, audit.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"biasbound {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Provably bias-bounded LLM-as-a-judge scores."""


for _module in COMMAND_MODULES:
    _module.register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; biasbound errors become one sentence on stderr and exit code 2."""
    err = Console(stderr=True)
    try:
        # with standalone_mode=False click returns a command's typer.Exit code (or its return
        # value) instead of exiting: it is the process's exit code (audit/certify verdicts)
        rv = app(args=argv, standalone_mode=False)
    except BiasboundError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        return 2
    except (typer.Exit, SystemExit) as exc:  # --help, --version, typer.Exit(code)
        code = getattr(exc, "exit_code", None)
        if code is None:
            code = getattr(exc, "code", 0)
        return int(code or 0)
    except typer.Abort:
        err.print("[bold red]aborted[/]")
        return 130
    except _USAGE_ERRORS as exc:  # unknown option, bad value: click's one-line usage message
        exc.show()
        return int(exc.exit_code)
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

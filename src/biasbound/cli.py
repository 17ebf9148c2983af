"""The ``biasbound`` command line: a typer app whose commands live in ``biasbound.commands``.

Each module in ``biasbound.commands`` defines ``register(app)``; errors from the
biasbound error tree are printed as one red sentence with exit code 2, never a traceback.
"""

from __future__ import annotations

import re
import sys

import typer
from rich.console import Console
from rich.markup import escape

from biasbound import __version__
from biasbound._exceptions import BiasboundError
from biasbound._validation import speaking_cli
from biasbound.commands import COMMANDS, command_module
from biasbound.commands._usage import USAGE_ERRORS as _USAGE_ERRORS

__all__ = ["app", "main"]

app: typer.Typer  # provided by __getattr__ below: every command registered on first use

_APP = typer.Typer(
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


@_APP.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Provably bias-bounded LLM-as-a-judge scores."""


def _register(command: str | None = None) -> typer.Typer:
    """The app with ``command`` registered (every command when None or not a command name), each module imported
    and registered once, in :data:`biasbound.commands.COMMANDS` order. Commands registered from outside (tests)
    stay."""
    names = [command] if command in COMMANDS else list(COMMANDS)
    have = {c.name for c in _APP.registered_commands}
    for name in names:
        if name not in have:
            command_module(name).register(_APP)
    order = {name: k for k, name in enumerate(COMMANDS)}
    _APP.registered_commands.sort(key=lambda c: order.get(c.name or "", len(order)))  # stable: others keep theirs
    return _APP


def __getattr__(name: str) -> object:
    """``app``: the typer app with every command registered (``main`` registers only the command it runs)."""
    if name == "app":
        return _register()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_PARAMETER = re.compile(r"^(?P<head>.*?)The '(?P<name>[A-Za-z_][A-Za-z0-9_]*)' parameter of (?P<where>[A-Za-z_][\w.]*)")


#: Library parameters outside :data:`biasbound.parameters.PARAMETERS` whose command-line option has another name.
_OPTION_NAMES = {"ties": "mt_bench_ties", "score_map": "score_map"}


def _in_cli_words(message: str, command: str) -> str:
    """A library sentence in the command line's words: "The 'fault_rate' parameter of SyntheticServerConfig"
    becomes "The '--fault-rate' option of serve-synthetic-judge" when the command has that option.

    Library functions name their Python parameters; the CLI user typed options. Only a parameter that
    is an option of the command being run is renamed, so nothing is ever named that the user cannot type.
    """
    m = _PARAMETER.match(message)
    if m is None:
        return message
    try:
        click_command = typer.main.get_command(_register(command)).commands.get(command)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - words only; never turn an error message into a crash
        return message
    if click_command is None:
        return message
    from biasbound.parameters import PARAMETERS

    declared = PARAMETERS.get(m.group("name"))
    flag = (declared.flag.split("/")[0] if declared is not None and declared.flag
            else "--" + _OPTION_NAMES.get(m.group("name"), m.group("name")).replace("_", "-"))
    options = {opt for p in click_command.params for opt in getattr(p, "opts", [])}
    if flag not in options:
        return message
    return f"{m.group('head')}The '{flag}' option of {command}" + message[m.end():]


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; biasbound errors become one sentence on stderr and exit code 2."""
    from biasbound._untrusted import escape_terminal_text

    escape_terminal_text()  # names from the data never drive the terminal (control characters shown escaped)
    err = Console(stderr=True)
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), "biasbound")
    try:
        # with standalone_mode=False click returns a command's typer.Exit code (or its return
        # value) instead of exiting: it is the process's exit code (audit/certify verdicts)
        with speaking_cli(command):
            rv = _register(command)(args=args, standalone_mode=False)
    except BiasboundError as exc:
        # the sentence may quote the user's data ("[judge model, prompt name]", a model named "[b]x"): never markup
        from biasbound._names import shown  # a name quoted in the sentence keeps its control characters escaped

        err.print(f"[bold red]error:[/] {escape(shown(_in_cli_words(str(exc), command)))}", highlight=False,
                  soft_wrap=True)
        return 2
    except MemoryError:  # an input larger than the machine holds, past every size cap
        err.print("[bold red]error:[/] the input needs more memory than this machine has; give a smaller input "
                  "(or split it).", highlight=False, soft_wrap=True)
        return 2
    except OSError as exc:  # a file the command had to read or write (permission, full disk, a folder in the way)
        from biasbound._oserror import os_error_sentence

        err.print(f"[bold red]error:[/] {escape(os_error_sentence(exc, command, args))}", highlight=False, soft_wrap=True)
        return 2
    except (typer.Exit, SystemExit) as exc:  # --help, --version, typer.Exit(code)
        code = getattr(exc, "exit_code", None)
        if code is None:
            code = getattr(exc, "code", 0)
        return int(code or 0)
    except typer.Abort as exc:
        if isinstance(exc.__cause__, EOFError):  # click turns every EOFError into Abort; it is no Ctrl-C
            err.print(f"[bold red]error:[/] an input ended before it was complete ({escape(str(exc.__cause__))}).",
                      highlight=False, soft_wrap=True)
            return 2
        err.print("[bold red]aborted[/]")
        return 130
    except _USAGE_ERRORS as exc:  # unknown option, bad value: click's one-line usage message
        exc.show()  # type: ignore[attr-defined]  # click's ClickException (typer's or click's own)
        return int(exc.exit_code)  # type: ignore[attr-defined]
    return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

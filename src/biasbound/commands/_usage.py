"""Click's usage-error classes, shared by the command line's entry points (``biasbound`` and ``biasbound.commands.run``).

Newer typer bundles its own copy of click, older typer uses the real one; both are caught.
"""

from __future__ import annotations

__all__ = ["USAGE_ERRORS"]


def _usage_errors() -> tuple[type[Exception], ...]:
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


USAGE_ERRORS = _usage_errors()

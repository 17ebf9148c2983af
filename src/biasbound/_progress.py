"""Progress on stderr for the commands' slow steps: a spinner with the step's name while it runs.

Everything goes to stderr through rich, so standard output (tables, ``--json``) is never touched.
On a terminal each finished step leaves one line with its duration; when stderr is not a terminal
(a pipe, a log file, a test) rich draws nothing, so captured output stays clean.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

__all__ = ["progress_console", "start_step", "step"]

_CONSOLE: Console | None = None


def progress_console() -> Console:
    """The stderr console every progress display shares (created on first use)."""
    global _CONSOLE
    if _CONSOLE is None:
        _CONSOLE = Console(stderr=True)
    return _CONSOLE


@contextmanager
def step(text: str, *, enabled: bool = True) -> Iterator[None]:
    """Show ``text`` with a spinner while the block runs; on a terminal, then leave ``✓ text (1.2 s)``."""
    if not enabled:
        yield
        return
    console = progress_console()
    start = time.perf_counter()
    with console.status(text):
        yield
    if console.is_terminal:
        console.print(f"[green]✓[/] {text} ({time.perf_counter() - start:.1f} s)", highlight=False)


class _Started:
    """A step started by :func:`start_step`; :meth:`stop` ends it (idempotent)."""

    def __init__(self, text: str, enabled: bool) -> None:
        self._cm = step(text, enabled=enabled)
        self._cm.__enter__()
        self._open = True

    def stop(self) -> None:
        if self._open:
            self._open = False
            self._cm.__exit__(None, None, None)


def start_step(text: str, *, enabled: bool = True) -> _Started:
    """:func:`step` for code that cannot wrap the work in a ``with`` block: call ``.stop()`` when done."""
    return _Started(text, enabled)

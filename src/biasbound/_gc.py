"""The cyclic garbage collector around a command's heavy imports.

A command that imports scipy, pandas, matplotlib and scikit-learn holds hundreds of thousands of
long-lived objects (functions, classes, module dicts). Python's full collections walk every one of
them again each time the heap grows by a quarter, although none of them ever becomes garbage: in
``biasbound demo`` that was about 1 s of its 10-11 s of CPU. :func:`imports_frozen` imports a
command's modules with the collector paused (imports make next to no cyclic garbage), then moves
every object alive at that point into the collector's permanent generation
(:func:`gc.freeze`) for the rest of the block, and back out at its end (:func:`gc.unfreeze`), so
nothing stays exempt from collection once the command is done, even when it runs inside a caller's
process (the tests, a notebook). The objects the command creates are collected as before.

At the process's exit the interpreter runs one more full collection over everything still alive, which
is nothing but cost for a command that has finished (about 0.15 s after the demo): a process that ran
such a block freezes every object at exit (:mod:`atexit`), before that pass, so the pass has nothing to
walk. Objects left alive at exit are never guaranteed finalization anyway; the command's files are written
and closed before it returns.
"""

from __future__ import annotations

import atexit
import gc
import importlib
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["imports_frozen"]

_AT_EXIT = False  # whether gc.freeze is registered to run at exit


@contextmanager
def imports_frozen(*modules: str) -> Iterator[None]:
    """Import ``modules`` with the collector paused, then run the block with every object alive at that point
    left out of the collector's passes (unfrozen again at the end).

    When the process already manages its collector (it is disabled, or something is frozen), the modules are
    imported and the block runs with the collector left as it is."""
    if not gc.isenabled() or gc.get_freeze_count():
        for name in modules:
            importlib.import_module(name)
        yield
        return
    global _AT_EXIT
    if not _AT_EXIT:
        atexit.register(gc.freeze)  # runs before the interpreter's last full collection
        _AT_EXIT = True
    gc.disable()
    try:
        for name in modules:
            importlib.import_module(name)
        gc.freeze()
    finally:
        gc.enable()
    try:
        yield
    finally:
        gc.unfreeze()

"""CLI commands, one module each; every module defines ``register(app)``.

:data:`COMMANDS` names each command's module without importing it: the command line imports only the module of
the command being run (every one for the top-level help). :data:`COMMAND_MODULES` (the modules, imported on first
use) is their tuple in the help's order.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: Command name → its module in this package, in the order ``biasbound --help`` lists them.
COMMANDS: dict[str, str] = {
    "calibrate": "calibrate", "schematic": "schematic", "certify": "certify", "audit": "audit", "demo": "demo",
    "run": "run", "plan": "plan", "serve-synthetic-judge": "serve", "verify": "verify", "keygen": "keygen",
    "compare": "compare",
}

__all__ = ["COMMANDS", "COMMAND_MODULES", "command_module"]


def command_module(name: str) -> ModuleType:
    """The module of command ``name`` (a key of :data:`COMMANDS`), imported."""
    return importlib.import_module(f"{__name__}.{COMMANDS[name]}")


def __getattr__(name: str) -> Any:
    if name == "COMMAND_MODULES":
        return tuple(command_module(c) for c in COMMANDS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

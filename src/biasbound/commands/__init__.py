"""CLI commands, one module each; every module defines ``register(app)``."""

from __future__ import annotations

from biasbound.commands import calibrate, schematic

COMMAND_MODULES = (calibrate, schematic)

__all__ = ["COMMAND_MODULES"]

"""CLI commands, one module each; every module defines ``register(app)``."""

from __future__ import annotations

from biasbound.commands import audit, calibrate, certify, demo, schematic, serve

COMMAND_MODULES = (calibrate, schematic, certify, audit, demo, serve)

__all__ = ["COMMAND_MODULES"]

"""CLI commands, one module each; every module defines ``register(app)``."""

from __future__ import annotations

from biasbound.commands import audit, calibrate, certify, demo, keygen, run, schematic, serve, verify

COMMAND_MODULES = (calibrate, schematic, certify, audit, demo, run, serve, verify, keygen)

__all__ = ["COMMAND_MODULES"]

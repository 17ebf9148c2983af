"""CLI commands, one module each; every module defines ``register(app)``."""

from __future__ import annotations

from biasbound.commands import audit, calibrate, certify, compare, demo, keygen, plan, run, schematic, serve, verify

COMMAND_MODULES = (calibrate, schematic, certify, audit, demo, run, plan, serve, verify, keygen, compare)

__all__ = ["COMMAND_MODULES"]

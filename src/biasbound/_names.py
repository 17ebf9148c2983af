"""The one function every printed name (judge, model, file) goes through: :func:`shown`.

A name is data: it may hold control characters (a terminal escape that moves the cursor, erases a line or writes
the clipboard with OSC 52). :func:`shown` returns it with every C0 and C1 control character, DEL and the
bidirectional overrides escaped (``\\x1b``, ``\\u202e``), so it is printed, never obeyed. No biasbound import here:
:mod:`biasbound._exceptions` uses it for the file names in its sentences.
"""

from __future__ import annotations

from typing import Any

__all__ = ["shown"]

_ESCAPES = {i: f"\\x{i:02x}" for i in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}
_ESCAPES.update({0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"})
for _cp in (0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)):  # bidirectional overrides
    _ESCAPES[_cp] = f"\\u{_cp:04x}"


def shown(name: Any) -> str:
    """``str(name)`` with every control character (C0, DEL, C1, bidirectional overrides) shown escaped."""
    return str(name).translate(_ESCAPES)

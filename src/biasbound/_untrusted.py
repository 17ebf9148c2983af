"""Reading files a stranger made, and showing names a stranger chose: bounded, one sentence when refused.

* :func:`regular_file` — every command that reads an input (certify, compare, audit, verify, plan, run) asks it
  first: a named pipe, a device, a socket or a folder is refused in one sentence (reading a FIFO blocks forever,
  ``/dev/zero`` never ends); with ``folder`` given, a symbolic link that leads out of that folder is refused too
  (a published output folder is read as it is, never through a link to elsewhere).
* :func:`load_json` — a JSON file (certificate, summary, manifest, plan) from a regular file of at most
  :data:`MAX_JSON_BYTES`, with duplicate keys refused (``json`` keeps the last one while a person reading the file
  sees the first), integers of more than :data:`MAX_INT_DIGITS` digits and nesting deeper than
  :data:`MAX_JSON_DEPTH` refused: every way it can fail is a :class:`~biasbound._exceptions.DataFormatError`
  naming the file.
* The caps on decompressed text (:data:`MAX_TEXT_BYTES`) and on Parquet rows (:data:`MAX_PARQUET_ROWS`) used by the
  table readers: a small compressed file can expand to more than the machine holds.
* :func:`shown` — the one function every printed name (judge, model, file) goes through: control characters are
  shown escaped (``\\x1b``), so a name holding a terminal escape cannot rewrite the screen or the clipboard.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from biasbound._exceptions import DataFormatError
from biasbound._names import _ESCAPES, shown

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_PARQUET_ROWS",
    "MAX_TEXT_BYTES",
    "check_parquet_rows",
    "escape_terminal_text",
    "load_json",
    "parse_json",
    "regular_file",
    "shown",
]

#: The largest JSON file read (a certificate of 10^4 models is a few MB).
MAX_JSON_BYTES = 256 * 2**20
#: The most text a table reader holds after decompression (the largest public judgment sets are ~0.5 GB).
MAX_TEXT_BYTES = 2**30
#: The most rows a Parquet table may hold (its own metadata says how many, before anything is read).
MAX_PARQUET_ROWS = 50_000_000
#: Digits of one JSON integer (a certificate's largest integer, a seed, has 39).
MAX_INT_DIGITS = 100
#: Nesting depth of a JSON document (a certificate nests 7 deep).
MAX_JSON_DEPTH = 64


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def regular_file(path: str | Path, *, folder: str | Path | None = None) -> Path:
    """``path`` when it is a regular file (a link to one is followed); a :class:`DataFormatError` otherwise.

    With ``folder``, a symbolic link whose target is not inside ``folder`` is refused as well."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as exc:
        raise DataFormatError(f"cannot be opened ({exc.strerror or exc}).", path=str(p)) from None
    if not stat.S_ISREG(st.st_mode):
        raise DataFormatError(f"is {_kind(st.st_mode)}, not a regular file; give a file.", path=str(p))
    if folder is not None and p.is_symlink():
        root = Path(folder).resolve()
        if root not in p.resolve().parents:
            raise DataFormatError(f"is a symbolic link out of its folder (to {str(p.resolve())!r}); outputs are "
                                  "read as they are, never through a link.", path=str(p))
    return p


def check_parquet_rows(path: str | Path) -> Path:
    """``path`` (a regular file) when its Parquet metadata declares at most :data:`MAX_PARQUET_ROWS` rows; one
    sentence otherwise (a few MB of equal values can decode to billions of rows). A file whose metadata cannot be
    read is left to the reader's own error."""
    p = regular_file(path)
    try:
        import pyarrow.parquet as pq

        rows = int(pq.ParquetFile(p).metadata.num_rows)
    except (OSError, ValueError, ImportError):  # not Parquet, or damaged: the reader says so in its own sentence
        return p
    if rows > MAX_PARQUET_ROWS:
        raise DataFormatError(f"declares {rows:,} rows, more than the {MAX_PARQUET_ROWS:,} biasbound reads from one "
                              "Parquet table; split it.", path=str(p))
    return p


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _Duplicate(key)
        seen[key] = value
    return seen


class _Duplicate(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooLong(text)
    return int(text)


class _TooLong(ValueError):
    pass


def _depth(obj: Any) -> int:
    """Nesting depth of a parsed JSON value, without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, d = stack.pop()
        if isinstance(value, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_JSON_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def parse_json(text: str, path: str | Path) -> Any:
    """``text`` parsed as the JSON of ``path``, with the rules of :func:`load_json`."""
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicates, parse_int=_int)
    except _Duplicate as exc:
        raise DataFormatError(f"holds the key {shown(exc.key)!r} twice in one object; a JSON file read as evidence "
                              "must say each thing once.", path=str(path)) from None
    except _TooLong:
        raise DataFormatError(f"holds an integer of more than {MAX_INT_DIGITS} digits; no field of a biasbound file "
                              "is that long.", path=str(path)) from None
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"is not valid JSON ({exc.msg} at column {exc.colno}).", path=str(path),
                              line=exc.lineno) from None
    except RecursionError:
        raise DataFormatError(f"nests JSON more than {MAX_JSON_DEPTH} levels deep.", path=str(path)) from None
    except ValueError as exc:  # e.g. Python's own digit limit
        raise DataFormatError(f"is not valid JSON ({exc}).", path=str(path)) from None
    if _depth(value) > MAX_JSON_DEPTH:
        raise DataFormatError(f"nests JSON more than {MAX_JSON_DEPTH} levels deep.", path=str(path))
    return value


def load_json(path: str | Path, *, folder: str | Path | None = None) -> Any:
    """The JSON value of the regular file ``path`` (see the module docstring for what is refused)."""
    p = regular_file(path, folder=folder)
    size = p.stat().st_size
    if size > MAX_JSON_BYTES:
        raise DataFormatError(f"is {size:,} bytes, more than the {MAX_JSON_BYTES:,} a biasbound JSON file may hold.",
                              path=str(p))
    try:
        with open(p, "rb") as fh:
            data = fh.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise DataFormatError(f"cannot be read ({exc.strerror or exc}).", path=str(p)) from None
    if len(data) > MAX_JSON_BYTES:
        raise DataFormatError(f"holds more than the {MAX_JSON_BYTES:,} bytes a biasbound JSON file may hold.",
                              path=str(p))
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DataFormatError(f"is binary, not JSON text (a NUL byte at offset {nul}).", path=str(p),
                              line=data.count(b"\n", 0, nul) + 1)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}).",
                              path=str(p)) from None
    return parse_json(text, p)


def escape_terminal_text() -> None:
    """Make every text the ``rich`` consoles print go through :func:`shown`'s escapes (newlines and tabs kept).

    rich sanitises each text it prints with one translation table (``rich.control.strip_control_codes``, which
    by itself drops only BEL, BS, VT, FF and CR and lets ESC through); the command line extends that table once
    at start-up, so a judge or model name holding a terminal escape (cursor moves, erase-line, an OSC 52 clipboard
    write) is shown as ``\\x1b[1A...`` in every table and line of every command. rich's own styling is not text
    and is unaffected."""
    try:
        from rich import control
    except ImportError:  # pragma: no cover - rich is a dependency
        return
    table = getattr(control, "_CONTROL_STRIP_TRANSLATE", None)
    if isinstance(table, dict):
        table.update({k: v for k, v in _ESCAPES.items() if k not in (0x09, 0x0A)})

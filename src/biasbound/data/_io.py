"""Text and JSON-lines reading shared by the loaders, the run config's inputs and the CLI.

Plain or compressed (``.gz``, ``.bz2``, ``.xz``) UTF-8 files are read whole and checked
before any parsing, so that every way a file can be unreadable is one
:class:`~biasbound._exceptions.DataFormatError` sentence naming the file (and line):

* compressed bytes under a name without the compression suffix (gzip magic under ``.csv``);
* a truncated or corrupt compressed stream (which Python reports as ``EOFError``, a type
  the command line would otherwise treat as an interrupted prompt);
* binary content (a NUL byte) or bytes that are not UTF-8, with the line they sit on.

A JSON-lines file yields ``(line, record)`` pairs with physical 1-based line numbers, blank
lines skipped; a line that is not a JSON object is an error naming the file and line.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from biasbound._exceptions import DataFormatError

__all__ = ["iter_json_records", "open_text", "read_bytes", "read_text"]

_GZIP_MAGIC = b"\x1f\x8b"
_BZ2_MAGIC = b"BZh"
_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZIP_MAGIC = b"PK\x03\x04"
_PARQUET_MAGIC = b"PAR1"
_COMPRESSED = {".gz": ("gzip", gzip.decompress), ".bz2": ("bzip2", bz2.decompress), ".xz": ("xz", lzma.decompress)}


def _kind_of(head: bytes) -> str | None:
    """The compression (or binary container) that ``head`` starts with, if any."""
    for magic, name in ((_GZIP_MAGIC, "gzip"), (_BZ2_MAGIC, "bzip2"), (_XZ_MAGIC, "xz"), (_ZIP_MAGIC, "zip"),
                        (_PARQUET_MAGIC, "Parquet")):
        if head.startswith(magic):
            return name
    return None


def read_bytes(path: Path) -> bytes:
    """The decompressed bytes of ``path`` (``.gz``, ``.bz2`` or ``.xz`` by suffix), checked.

    Raises
    ------
    DataFormatError
        When the file cannot be opened, is compressed under a plain name, or is truncated
        or corrupt.
    """
    from biasbound._untrusted import MAX_TEXT_BYTES, regular_file

    path = Path(path)
    if path.is_dir():
        raise DataFormatError("is a folder, not a file.", path=str(path))
    regular_file(path)  # a named pipe would block, a device never end
    try:
        size = path.stat().st_size
        if size > MAX_TEXT_BYTES:
            raise DataFormatError(f"is {size:,} bytes, more than the {MAX_TEXT_BYTES:,} biasbound reads from one text "
                                  "file; split it.", path=str(path))
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFormatError(f"cannot be opened ({exc.strerror or exc}).", path=str(path)) from None
    suffix = path.suffix.lower()
    if suffix in _COMPRESSED:
        name, _ = _COMPRESSED[suffix]
        try:
            return _bounded(suffix, raw, path)
        except DataFormatError:  # the size cap: its own sentence
            raise
        except (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError) as exc:
            what = "truncated" if isinstance(exc, EOFError) else "corrupt"
            raise DataFormatError(
                f"is not a complete {name} file ({what}: {exc}); re-download or re-compress it.", path=str(path)
            ) from None
    kind = _kind_of(raw[:8])
    if kind in ("gzip", "bzip2", "xz"):
        ext = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz"}[kind]
        raise DataFormatError(
            f"holds {kind}-compressed bytes but its name does not end in {ext}; rename it to {path.name}{ext}.",
            path=str(path),
        )
    return raw


def _bounded(suffix: str, raw: bytes, path: Path) -> bytes:
    """``raw`` decompressed (every member of a multi-member stream), refused in one sentence past
    :data:`biasbound._untrusted.MAX_TEXT_BYTES` (a few MB of gzip can expand to more than the machine holds)."""
    from biasbound._untrusted import MAX_TEXT_BYTES

    make = {".gz": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), ".bz2": bz2.BZ2Decompressor,
            ".xz": lzma.LZMADecompressor}[suffix]
    out = bytearray()
    data = raw
    while data:
        d: Any = make()
        out += d.decompress(data, MAX_TEXT_BYTES + 1 - len(out))
        if len(out) > MAX_TEXT_BYTES:
            raise DataFormatError(f"expands to more than the {MAX_TEXT_BYTES:,} bytes biasbound reads from one "
                                  "compressed file; split it.", path=str(path))
        if not d.eof:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
        data = d.unused_data
        if suffix == ".gz" and not data.strip(b"\x00"):  # gzip's trailing zero padding
            break
    return bytes(out)


def read_text(path: Path) -> str:
    """The text of ``path``: decompressed (:func:`read_bytes`), UTF-8 (a BOM is dropped), checked.

    Raises
    ------
    DataFormatError
        Naming the file and the line of the first NUL byte or non-UTF-8 byte, or what
        :func:`read_bytes` raises.
    """
    path = Path(path)
    data = read_bytes(path)
    kind = _kind_of(data[:8])
    if kind in ("zip", "Parquet"):
        raise DataFormatError(
            f"is a {kind} file, not text; give a .csv, .tsv, .jsonl{' or .parquet' if kind == 'Parquet' else ''} "
            "file (optionally .gz).",
            path=str(path),
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        raise DataFormatError(
            f"is binary, not text (a NUL byte at offset {nul}); give a UTF-8 text table.",
            path=str(path), line=data.count(b"\n", 0, nul) + 1,
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        raise DataFormatError(
            f"is not UTF-8 text (byte 0x{data[start]:02x} at offset {start}); save it as UTF-8.",
            path=str(path), line=data.count(b"\n", 0, start) + 1,
        ) from None


def open_text(path: Path) -> IO[str]:
    """A text stream over :func:`read_text` of ``path`` (checked, decompressed by suffix)."""
    return io.StringIO(read_text(path), newline=None)


def iter_json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(1-based physical line, record)`` for every non-blank line of a JSON-lines file."""
    # split on "\n" only: str.splitlines would also split on \x0b, \x1c, U+2028 ... inside JSON strings
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(
                f"the line is not valid JSON ({exc.msg} at column {exc.colno}).", path=str(path), line=lineno
            ) from None
        except RecursionError:
            raise DataFormatError("the line nests JSON too deeply to read.", path=str(path), line=lineno) from None
        if not isinstance(record, dict):
            raise DataFormatError(
                f"each line must be a JSON object {{...}}; got a JSON {_json_type(record)}.", path=str(path), line=lineno
            )
        yield lineno, record


def _json_type(value: Any) -> str:
    return {list: "array", str: "string", bool: "boolean", int: "number", float: "number"}.get(type(value), "null")

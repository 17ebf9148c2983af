"""Text and JSON-lines reading shared by the loaders, the run config's inputs and the CLI.

Plain or gzip-compressed (``.gz``) UTF-8 files; a JSON-lines file yields ``(line, record)``
pairs, blank lines skipped, and a line that is not a JSON object is a ``DataFormatError``
naming the file and line.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from biasbound._exceptions import DataFormatError

__all__ = ["iter_json_records", "open_text"]


def open_text(path: Path) -> IO[str]:
    """Open ``path`` for reading text, decompressing a ``.gz`` file on the fly."""
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def iter_json_records(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(1-based line, record)`` for every non-blank line of a JSON-lines file."""
    with open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(
                    f"the line is not valid JSON ({exc.msg} at column {exc.colno}).", path=str(path), line=lineno
                ) from None
            if not isinstance(record, dict):
                raise DataFormatError(
                    f"each line must be a JSON object; got {type(record).__name__}.", path=str(path), line=lineno
                )
            yield lineno, record

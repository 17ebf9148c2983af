"""Judgment inputs as the outputs name them: by content and a display name, never by the path as typed.

* :func:`check_input` — the one check every command runs on an input before reading it (certify, audit's
  neighbour files, compare, verify's ``--judgments``, plan): a regular file or a folder of them; a named pipe, a
  device or a socket is refused in one sentence (reading one would block or never end).
* :func:`display_names` — each input's name in the outputs: its file name, or, when two inputs share a file
  name, as many trailing folders as tell them apart (``a/judgments.csv``, ``b/judgments.csv``). The folder
  layout of the machine that certified never reaches a certificate, a summary or a load report.
* :func:`content_record` — ``{name, sha256, bytes, format}`` of an input (a folder: the SHA-256 over its files'
  relative paths and digests), recorded in ``scope.reproduce.load.inputs``: ``biasbound verify --judgments``
  matches the files it is given to these records by content, whatever they are called now.
* :func:`relabel` — a loaded input's ``source`` column and load report, with the path as typed replaced by the
  display name.
"""

from __future__ import annotations

import pandas as pd

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from biasbound._exceptions import DataFormatError

__all__ = ["check_input", "content_record", "display_names", "relabel"]


def check_input(path: str | Path) -> Path:
    """``path`` when it is a regular file or a folder; one sentence for a named pipe, a device or a socket."""
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except OSError as exc:
        raise DataFormatError(f"cannot be opened ({exc.strerror or exc}).", path=str(p)) from None
    if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
        return p
    from biasbound._untrusted import regular_file

    return regular_file(p)  # raises, naming what it is


def display_names(paths: Sequence[str]) -> dict[str, str]:
    """``{path as typed: display name}``: the shortest trailing part of each absolute path (not following links)
    that no other input shares."""
    parts = {q: Path(os.path.abspath(q)).parts[1:] or (str(q),) for q in paths}
    depth = dict.fromkeys(paths, 1)
    while True:
        names = {q: "/".join(parts[q][-depth[q]:]) for q in paths}
        clash = [q for q in paths if sum(1 for r in paths if names[r] == names[q]) > 1 and depth[q] < len(parts[q])]
        if not clash:
            return names
        for q in clash:
            depth[q] += 1


def _file_sha256(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def content_record(path: Path, name: str, fmt: str) -> dict[str, Any]:
    """``{name, sha256, bytes, format}`` of an input file, or of a folder (its regular files, sorted by relative
    path: the SHA-256 of ``relative path NUL file digest LF`` lines; ``bytes`` their total size)."""
    if path.is_dir():
        h, total = hashlib.sha256(), 0
        files = []
        for root, dirs, names in os.walk(path):
            dirs.sort()
            for n in names:
                f = Path(root) / n
                if f.is_file():
                    files.append(f)
        for f in sorted(files, key=lambda f: f.relative_to(path).as_posix()):
            digest, size = _file_sha256(f)
            total += size
            h.update(f"{f.relative_to(path).as_posix()}\0{digest}\n".encode())
        return {"name": name, "sha256": h.hexdigest(), "bytes": total, "format": fmt, "kind": "folder"}
    digest, size = _file_sha256(path)
    return {"name": name, "sha256": digest, "bytes": size, "format": fmt, "kind": "file"}


def _swap(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        if value == old:
            return new
        for sep in ("/", os.sep, ":", " "):
            if value.startswith(old + sep):
                return new + value[len(old):]
        return value.replace(old, new) if len(old) > 3 and old in value else value
    if isinstance(value, list):
        return [_swap(v, old, new) for v in value]
    if isinstance(value, tuple):
        return tuple(_swap(v, old, new) for v in value)
    if isinstance(value, Mapping):
        return {_swap(k, old, new): _swap(v, old, new) for k, v in value.items()}
    return value


def relabel(js: Any, report: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The load report with ``old`` (the path as typed) replaced by ``new``; ``js.frame``'s ``source`` column (and
    its ``integration`` notes) relabelled in place."""
    if old == new:
        return report
    frame = js.frame
    if "source" in frame.columns:
        from biasbound.data.coded import is_coded_column, text_categorical

        src = frame["source"]
        if is_coded_column(src):  # a coded column: its few texts relabelled, the codes kept (no text per row)
            names = [_swap(str(v), old, new) for v in src.cat.categories]
            if names != list(src.cat.categories):
                relabelled = pd.Categorical.from_codes(src.array.codes, categories=pd.Index(names, dtype="str")) \
                    if len(set(names)) == len(names) else src.astype(str).map(lambda v: _swap(v, old, new))
                frame["source"] = text_categorical(pd.Series(relabelled, index=frame.index, name="source"))
        else:
            texts = src.astype(str)
            if texts.str.startswith(old).any():
                frame["source"] = [_swap(v, old, new) for v in texts.tolist()]
    if "integration" in frame.attrs:
        frame.attrs["integration"] = _swap(frame.attrs["integration"], old, new)
    return dict(_swap(report, old, new))

"""One sentence for an operating-system error that stops a command: the path, what happened, the fix.

The CLI entry (:func:`biasbound.cli.main`) is the one place that turns an ``OSError`` escaping a
command into this sentence, so every command (certify, run, plan, keygen, compare, verify, …)
speaks the same way. A system call that names no path (a ``write`` on a full disk) is attributed to
the folder the command was writing (its ``--out``), said as such.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

__all__ = ["os_error_sentence"]

#: errno → (what happened, the fix); ``{path}`` is the file or folder the error is about.
_FIXES: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("no space is left on the device", "free space on that disk or give a folder on another disk"),
    errno.EDQUOT: ("the disk quota is exhausted", "free space within your quota or give a folder on another disk"),
    errno.EROFS: ("the file system is read-only", "give a writable folder"),
    errno.EACCES: ("permission denied", "change its permissions (ls -l, chmod) or give a path you may read and write"),
    errno.EPERM: ("the operation is not permitted", "change its permissions or owner, or give another path"),
    errno.EISDIR: ("it is a folder where a file was expected", "name a file, not a folder"),
    errno.ENOTDIR: ("a part of the path is a file where a folder was expected", "fix the path"),
    errno.ENOENT: ("no such file or folder", "check the path (a folder on the way may be missing)"),
    errno.EEXIST: ("it already exists", "remove it or give another path"),
    errno.ENAMETOOLONG: ("the name is too long for the file system", "give a shorter path"),
    errno.EMFILE: ("too many files are open", "raise the limit (ulimit -n) or read fewer inputs at once"),
    errno.ENFILE: ("too many files are open on the system", "close other programs or retry later"),
    errno.EIO: ("the device reported an input/output error", "check the disk and retry"),
    errno.ENXIO: ("no device answers at that path", "give a regular file"),
    errno.ENOTEMPTY: ("the folder is not empty", "empty it or give another folder"),
    errno.EXDEV: ("the move crosses file systems", "give a folder on the same disk"),
    errno.ETXTBSY: ("the file is busy", "close the program using it and retry"),
}

_OUT_FLAGS = ("--out", "--output", "-o")


def _out_value(argv: Sequence[str]) -> str | None:
    for i, a in enumerate(argv):
        for flag in _OUT_FLAGS:
            if a == flag and i + 1 < len(argv):
                return argv[i + 1]
            if a.startswith(flag + "="):
                return a[len(flag) + 1:]
    return None


def os_error_sentence(exc: OSError, command: str, argv: Sequence[str] = ()) -> str:
    """``exc`` as one sentence naming the path, what happened and the fix (no trailing 'error:')."""
    what, fix = _FIXES.get(exc.errno or -1, (str(exc.strerror or exc).rstrip(".").lower() or type(exc).__name__,
                                             "fix the path and run the command again"))
    path = exc.filename if exc.filename not in (None, "") else None
    if path is not None:
        where = repr(str(path if not isinstance(path, bytes) else path.decode(errors="replace")))
        if exc.filename2:
            where += f" (to {str(exc.filename2)!r})"
        subject = f"{command} could not use {where}"
    else:
        out = _out_value(argv)
        subject = (f"{command} could not write into {out!r} (its --out)" if out is not None
                   else f"{command} stopped on a file the system did not name")
    return f"{subject}: {what}; {fix}, then run the command again."

"""Handing freed memory back to the system between the heavy steps of a run.

Two allocators keep memory a large table freed: Arrow's (mimalloc by default) caches the buffers of a Parquet
read, and glibc's ``malloc`` keeps freed heap pages (numpy arrays below its mmap threshold, which rises to 32 MiB
once large arrays have been freed) for the process to reuse. Neither is a leak, but each counts in the process's
resident memory until the allocator returns it: after reading the 10^7-row benchmark table 180 MiB of the
process's 850 MiB were such free memory (:mod:`benchmarks.bench_certify`; measured in docs/DESIGN.md). The
freed memory would be reused by later allocations of the same allocator only, and numpy's arrays do not come from
Arrow's, so the pipeline returns it at the points where a step has just freed much (after the read, before a
judge's leaderboard). Nothing here changes a value: it only returns pages no object holds.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import lru_cache
from typing import Any

__all__ = ["release_free_memory"]


@lru_cache(maxsize=1)
def _malloc_trim() -> Any:
    """glibc's ``malloc_trim`` (None elsewhere: macOS, Windows, musl)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> None:
    """Return the memory Arrow's pool and glibc's heap hold free (no object's memory) to the system; a no-op for
    an allocator that is not there or not loaded."""
    if "pyarrow" in sys.modules:  # never imported just for this
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

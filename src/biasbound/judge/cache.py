"""An on-disk SQLite cache of finished judge calls, safe to resume after a crash.

The key is the SHA-256 of a canonical JSON of exactly the things that change a reply:
the judge's *identity*, the model name sent, the full messages, the sampling parameters
(temperature, max_tokens, top_p), the seed and rerun index, and the template version --
and nothing else (never the API key, never the caller's labels or metadata).

The identity is explicit: ``cache_identity`` of the judge config (``None`` by default). The
base URL is *not* in the key, so the same model judged through another host or port (a
server restarted on a free port, a judge moved to another machine, several endpoints of one
fleet) reuses every finished call. Pin ``cache_identity`` to a label of your own (e.g.
``"vllm-llama3-70b-awq@2024-06"``) when two endpoints serve *different* weights under one
model name, or change it to judge everything afresh. Caches written before the identity
replaced the base URL in the key are still read (:func:`legacy_cache_key`, for an unpinned judge
at the same URL): an ``ok`` entry found there is copied under the new key.

The database runs in WAL mode and every finished call is committed on its own, so a run
that is killed (even ``kill -9``) loses at most the calls that were in flight; a restart
finds every committed call and does not repeat it. Only final outcomes are stored: ``ok``
results, and ``missing``/``failed`` results whose retry budget was spent (those can be
retried on a later run with ``retry_failed=True``). One connection is shared behind a lock,
so the cache may be used from the event-loop thread and from worker threads alike.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from biasbound._exceptions import DataFormatError, InputError
from biasbound.parameters import validate_params

__all__ = ["JudgeCache", "cache_key", "legacy_cache_key"]

_STATUSES = ("ok", "missing", "failed")


@validate_params(exempt={"seed": "the sampling seed sent to the endpoint (any int or None)"})
def cache_key(
    *,
    identity: str | None,
    model: str,
    messages: Sequence[Mapping[str, Any]],
    temperature: float | None,
    max_tokens: int | None,
    top_p: float | None,
    seed: int | None,
    rerun: int,
    template_version: str,
) -> str:
    """Return the hex SHA-256 identifying one judge call.

    Parameters
    ----------
    identity:
        The judge's pinned ``cache_identity`` (``None``: the model name alone identifies it;
        leading/trailing whitespace is ignored).
    model:
        The model name sent to the endpoint.
    messages:
        The full chat messages (role and content of each).
    temperature, max_tokens, top_p:
        Sampling parameters as sent (``None`` when not sent).
    seed:
        The ``seed`` sent (base seed + rerun index).
    rerun:
        The rerun index.
    template_version:
        :data:`biasbound.judge.prompts.TEMPLATE_VERSION` (or the caller's own version tag).

    Returns
    -------
    str
        64 hex characters.

    Notes
    -----
    The canonical JSON uses sorted keys, no whitespace and UTF-8 (``ensure_ascii=False``);
    floats are written by ``json`` (shortest round-trip repr), so ``0.0`` and ``0`` differ --
    callers pass floats consistently (:class:`~biasbound.judge.client.JudgeConfig` does).
    """
    payload = {
        "identity": None if identity is None else str(identity).strip(),
        "model": model,
        "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
        "sampling": {"temperature": temperature, "max_tokens": max_tokens, "top_p": top_p},
        "seed": seed,
        "rerun": rerun,
        "template_version": template_version,
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def legacy_cache_key(*, base_url: str, **fields: Any) -> str:
    """The key caches used before ``identity`` replaced the base URL (read-only compatibility).

    ``fields`` are :func:`cache_key`'s other arguments (``model``, ``messages``, ``temperature``,
    ``max_tokens``, ``top_p``, ``seed``, ``rerun``, ``template_version``).
    """
    payload = {
        "base_url": str(base_url).rstrip("/"),
        "model": fields["model"],
        "messages": [{"role": m["role"], "content": m["content"]} for m in fields["messages"]],
        "sampling": {"temperature": fields["temperature"], "max_tokens": fields["max_tokens"], "top_p": fields["top_p"]},
        "seed": fields["seed"],
        "rerun": fields["rerun"],
        "template_version": fields["template_version"],
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class JudgeCache:
    """SQLite cache of finished judge calls (see the module docstring).

    Parameters
    ----------
    path:
        The database file; parent directories are created. ``":memory:"`` keeps it in memory.

    Examples
    --------
    >>> with JudgeCache(":memory:") as cache:
    ...     cache.put("k" * 64, "ok", {"verdict": "A>B"})
    ...     cache.get("k" * 64)["payload"]["verdict"]
    'A>B'
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30.0)
        try:
            with self._lock, self._readable():
                self._check_own()
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS judge_calls ("
                    " key TEXT PRIMARY KEY, status TEXT NOT NULL, payload TEXT NOT NULL, created REAL NOT NULL)"
                )
                self._conn.execute("SELECT COUNT(*) FROM judge_calls").fetchone()  # reads every page of the table
        except DataFormatError:
            self._conn.close()
            raise

    def _check_own(self) -> None:
        """Refuse an SQLite file that is some other program's database: a cache never adds its table to it."""
        tables = {str(r[0]): str(r[1] or "") for r in self._conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()}
        if not tables:
            return  # a new (or empty) file: the cache's own
        own = tables.get("judge_calls")
        columns = ({str(r[1]) for r in self._conn.execute("PRAGMA table_info(judge_calls)").fetchall()}
                   if own is not None else set())
        if own is None or not {"key", "status", "payload", "created"} <= columns:
            names = ", ".join(sorted(tables)[:5]) + (" …" if len(tables) > 5 else "")
            raise DataFormatError(f"is an SQLite database of another program (tables: {names}), not a biasbound judge "
                                  "cache (table judge_calls); move it away or give the cache another path, so it is "
                                  "neither read as judgments nor written into.", path=self.path)

    @contextmanager
    def _readable(self) -> Iterator[None]:
        """Turn SQLite's "not a database" / "malformed" errors into one sentence naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise DataFormatError(f"The judge cache is not a readable SQLite database ({exc}); move the file away "
                                  "to judge afresh.", path=self.path) from None

    def __repr__(self) -> str:
        return f"JudgeCache(path={self.path!r})"

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise InputError(f"The JudgeCache at {self.path!r} is closed; open a new one.")
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        """Return ``{"status", "payload", "created"}`` for ``key`` or ``None`` when absent."""
        with self._lock, self._readable():
            row = self._connection().execute(
                "SELECT status, payload, created FROM judge_calls WHERE key = ?", (key,)
            ).fetchone()
        if row is None:
            return None
        return {"status": row[0], "payload": json.loads(row[1]), "created": row[2]}

    def put(self, key: str, status: str, payload: Mapping[str, Any]) -> None:
        """Store (or replace) a final outcome and commit it at once.

        Parameters
        ----------
        key:
            A :func:`cache_key`.
        status:
            ``"ok"``, ``"missing"`` or ``"failed"``.
        payload:
            A JSON-serialisable mapping (the result; never the API key).
        """
        if status not in _STATUSES:
            raise InputError(f"The 'status' parameter of JudgeCache.put must be one of {', '.join(map(repr, _STATUSES))}. "
                             f"Got {status!r} instead.")
        blob = json.dumps(dict(payload), sort_keys=True, ensure_ascii=False, allow_nan=False)
        with self._lock, self._readable():
            # autocommit mode (isolation_level=None): the statement is its own transaction.
            self._connection().execute(
                "INSERT OR REPLACE INTO judge_calls (key, status, payload, created) VALUES (?, ?, ?, ?)",
                (key, status, blob, time.time()),
            )

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error when absent)."""
        with self._lock, self._readable():
            self._connection().execute("DELETE FROM judge_calls WHERE key = ?", (key,))

    def keys(self, status: str | None = None) -> list[str]:
        """All stored keys (optionally only those with ``status``)."""
        with self._lock, self._readable():
            conn = self._connection()
            if status is None:
                rows = conn.execute("SELECT key FROM judge_calls ORDER BY created, key").fetchall()
            else:
                rows = conn.execute("SELECT key FROM judge_calls WHERE status = ? ORDER BY created, key", (status,)).fetchall()
        return [r[0] for r in rows]

    def counts(self) -> dict[str, int]:
        """Number of stored entries per status."""
        with self._lock, self._readable():
            rows = self._connection().execute("SELECT status, COUNT(*) FROM judge_calls GROUP BY status").fetchall()
        out = {s: 0 for s in _STATUSES}
        out.update({s: int(n) for s, n in rows})
        return out

    def __len__(self) -> int:
        return sum(self.counts().values())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

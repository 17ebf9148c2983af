"""The SQLite judge cache: key contents, persistence, WAL, concurrency (exact checks, no HTTP)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from biasbound import InputError
from biasbound.judge.cache import JudgeCache, cache_key

BASE = dict(
    identity="vllm-judge@fleet-a",
    model="judge-model",
    messages=[{"role": "system", "content": "biasbound-task: judge-single"}, {"role": "user", "content": "hi"}],
    temperature=0.0,
    max_tokens=256,
    top_p=None,
    seed=3,
    rerun=3,
    template_version="v1",
)


def test_key_is_deterministic_hex_sha256() -> None:
    key = cache_key(**BASE)
    assert key == cache_key(**dict(BASE))
    assert len(key) == 64 and int(key, 16) >= 0
    # surrounding whitespace of the pinned identity is ignored
    assert cache_key(**{**BASE, "identity": " " + BASE["identity"] + " "}) == key


@pytest.mark.parametrize(("field", "value"), [
    ("identity", "vllm-judge@fleet-b"),
    ("identity", None),
    ("model", "other-model"),
    ("messages", [{"role": "system", "content": "biasbound-task: judge-single"}, {"role": "user", "content": "hi!"}]),
    ("messages", [{"role": "user", "content": "biasbound-task: judge-single"}, {"role": "user", "content": "hi"}]),
    ("temperature", 0.7),
    ("max_tokens", 257),
    ("top_p", 0.9),
    ("seed", 4),
    ("rerun", 4),
    ("template_version", "v2"),
])
def test_every_component_changes_the_key(field: str, value: object) -> None:
    assert cache_key(**{**BASE, field: value}) != cache_key(**BASE)


def test_extra_message_fields_do_not_enter_the_key() -> None:
    msgs = [dict(m, name="ignored") for m in BASE["messages"]]
    assert cache_key(**{**BASE, "messages": msgs}) == cache_key(**BASE)


def test_put_get_persist_and_wal(tmp_path) -> None:
    path = tmp_path / "sub" / "cache.sqlite"
    with JudgeCache(path) as cache:
        cache.put("a" * 64, "ok", {"verdict": "A>B", "raw": "x"})
        cache.put("b" * 64, "failed", {"verdict": None, "reason": "HTTP 500"})
        cache.put("c" * 64, "missing", {"verdict": None})
        assert cache.get("a" * 64)["payload"] == {"verdict": "A>B", "raw": "x"}
        assert cache.get("z" * 64) is None
        assert cache.counts() == {"ok": 1, "missing": 1, "failed": 1}
        assert len(cache) == 3 and ("b" * 64) in cache
        with pytest.raises(InputError, match="'status'"):
            cache.put("d" * 64, "tie", {})
    # reopening finds every committed row; the database is in WAL mode
    with JudgeCache(path) as cache:
        assert sorted(cache.keys()) == ["a" * 64, "b" * 64, "c" * 64]
        assert cache.keys("failed") == ["b" * 64]
        cache.put("b" * 64, "ok", {"verdict": "A=B"})
        assert cache.get("b" * 64)["status"] == "ok"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    closed = JudgeCache(path)
    closed.close()
    with pytest.raises(InputError, match="closed"):
        closed.get("a" * 64)


def test_each_put_is_visible_to_another_connection_at_once(tmp_path) -> None:
    path = tmp_path / "cache.sqlite"
    writer = JudgeCache(path)
    writer.put("a" * 64, "ok", {"n": 1})
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0] == 1
    reader.close()
    writer.close()


def test_concurrent_puts_from_threads(tmp_path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")

    def work(t: int) -> None:
        for i in range(50):
            cache.put(f"{t:02d}{i:062d}", "ok", {"t": t, "i": i})

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(cache) == 400
    assert cache.get(f"{7:02d}{49:062d}")["payload"] == {"t": 7, "i": 49}
    cache.close()


def test_a_foreign_sqlite_file_is_refused_and_left_untouched(tmp_path):
    """An unrelated SQLite database named like the cache: never read as judgments, never written into."""
    import sqlite3

    from biasbound._exceptions import DataFormatError
    from biasbound.judge.cache import JudgeCache

    path = tmp_path / "judge_cache.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER, name TEXT)")
    con.execute("INSERT INTO users VALUES (1, 'ada')")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(DataFormatError, match=r"judge_cache\.sqlite: is an SQLite database of another program \(tables: "
                                              r"users\), not a biasbound judge cache"):
        JudgeCache(path)
    assert path.read_bytes() == before
    con = sqlite3.connect(path)
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["users"]
    con.close()
    # a cache of its own (and an empty file) still opens
    with JudgeCache(tmp_path / "own.sqlite") as cache:
        cache.put("k" * 64, "ok", {"verdict": "A>B"})
    with JudgeCache(tmp_path / "own.sqlite") as cache:
        assert cache.get("k" * 64)["payload"]["verdict"] == "A>B"

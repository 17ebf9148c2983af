"""Several endpoints per judge (task "runs"): client-side balancing, per-endpoint limits, retries elsewhere,
the config keys ``endpoints`` and ``cache_identity``.

Every check is exact (no statistics, no wall clock): the first wave of picks happens before any
reply arrives, so the split over endpoints is a deterministic function of their concurrencies.
"""

from __future__ import annotations

import pytest
import yaml

from biasbound import DataFormatError, InputError
from biasbound.config import load_config
from biasbound.judge import Endpoint, JudgeConfig, JudgeRequest, judge_many_sync, render_single
from biasbound.testing import SyntheticServerConfig, serve_in_thread


def _requests(n: int, tag: str = "q") -> list[JudgeRequest]:
    return [JudgeRequest(key=f"{tag}{i}", messages=render_single(f"Question {tag} {i}?", f"Answer {i}: use a hammer."))
            for i in range(n)]


def test_requests_split_over_endpoints_in_proportion_to_their_concurrency(tmp_path) -> None:
    slow = SyntheticServerConfig(latency_ms=20)
    with serve_in_thread(slow) as a, serve_in_thread(slow) as b:
        cfg = JudgeConfig(base_url=a.url, model="synth", api_key_env="BIASBOUND_TEST_UNSET_KEY", concurrency=2,
                          extra_endpoints=(Endpoint(b.url, concurrency=6),))
        results = judge_many_sync(_requests(64), config=cfg, cache=tmp_path / "c.sqlite", progress=False)
        n_a, n_b = len(a.log), len(b.log)
        max_a, max_b = a.stats()["max_in_flight"], b.stats()["max_in_flight"]
    assert all(r.status == "ok" for r in results)
    assert (n_a, n_b) == (16, 48)  # 2 : 6
    assert max_a <= 2 and max_b <= 6  # each endpoint's own concurrency holds
    assert {r.endpoint for r in results} == {a.url, b.url}


def test_a_retry_goes_to_another_endpoint(tmp_path) -> None:
    broken = SyntheticServerConfig(fault_rate=1.0, fault_kinds=("500",), fault_seed=3)
    with serve_in_thread(broken) as a, serve_in_thread(SyntheticServerConfig()) as b:
        cfg = JudgeConfig(base_url=a.url, model="synth", api_key_env="BIASBOUND_TEST_UNSET_KEY", concurrency=4,
                          max_attempts=2, backoff_initial=0.0, backoff_jitter=0.0,
                          extra_endpoints=(Endpoint(b.url, concurrency=4),))
        results = judge_many_sync(_requests(20), config=cfg, progress=False)
    # every call that first went to the broken endpoint got its second (last) attempt from the healthy one
    assert all(r.status == "ok" and r.endpoint == b.url for r in results)
    assert len(a.log) == 10 and len(b.log) == 20


def test_the_same_judge_on_another_endpoint_reuses_the_cache_unless_its_identity_is_pinned(tmp_path) -> None:
    db = tmp_path / "c.sqlite"
    with serve_in_thread(SyntheticServerConfig()) as a:
        first = judge_many_sync(_requests(8), config=JudgeConfig(base_url=a.url, model="synth",
                                                                 api_key_env="BIASBOUND_TEST_UNSET_KEY"),
                                cache=db, progress=False)
    with serve_in_thread(SyntheticServerConfig()) as b:  # another port: a judge moved elsewhere
        moved = judge_many_sync(_requests(8), config=JudgeConfig(base_url=b.url, model="synth",
                                                                 api_key_env="BIASBOUND_TEST_UNSET_KEY"),
                                cache=db, progress=False)
        assert not b.log and all(r.from_cache for r in moved)
        pinned = judge_many_sync(_requests(8), config=JudgeConfig(base_url=b.url, model="synth", cache_identity="new-weights",
                                                                  api_key_env="BIASBOUND_TEST_UNSET_KEY"),
                                 cache=db, progress=False)
        assert len(b.log) == 8 and not any(r.from_cache for r in pinned)
    assert [r.verdict for r in moved] == [r.verdict for r in first]


def test_endpoint_arguments_are_checked() -> None:
    with pytest.raises(InputError, match="given twice"):
        JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", extra_endpoints=(Endpoint("http://127.0.0.1:1/v1/"),))
    with pytest.raises(InputError, match="Endpoint objects"):
        JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", extra_endpoints=("http://127.0.0.1:2/v1",))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="concurrency"):
        Endpoint("http://127.0.0.1:2/v1", concurrency=0)
    with pytest.raises(InputError, match="cache_identity"):
        JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", cache_identity=" ")
    assert JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m", extra_endpoints=(Endpoint("http://localhost:2/v1"),)).is_local
    assert not JudgeConfig(base_url="http://127.0.0.1:1/v1", model="m",
                           extra_endpoints=(Endpoint("https://judge.example.com/v1"),)).is_local


def _config(tmp_path, judge: dict) -> object:
    data = tmp_path / "t.csv"
    data.write_text("item_id,question,model,answer,baseline\nq1,Q?,m,A,B\nq2,Q2?,m,A2,B2\n", encoding="utf-8")
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"data": {"table": str(data)}, "judge": {"model": "j", **judge},
                                    "output": str(tmp_path / "out")}), encoding="utf-8")
    return path


def test_config_endpoints_and_cache_identity(tmp_path) -> None:
    cfg = load_config(_config(tmp_path, {"concurrency": 4, "rpm": 600, "cache_identity": "llama3-70b-awq",
                                         "endpoints": [{"base_url": "http://gpu1:8000/v1", "concurrency": 32},
                                                       "http://gpu2:8000/v1"]}))
    jc = cfg.judge.judge_config()
    assert [(e.base_url, e.concurrency, e.requests_per_minute) for e in jc.endpoints] == [
        ("http://gpu1:8000/v1", 32, 600.0), ("http://gpu2:8000/v1", 4, 600.0)]
    assert jc.cache_identity == "llama3-70b-awq"
    assert cfg.to_dict()["judge"]["extra_endpoints"] == [{"base_url": "http://gpu2:8000/v1", "concurrency": 4, "rpm": 600.0}]
    for bad, words in [
        ({"base_url": "http://a:1/v1", "endpoints": ["http://b:1/v1"]}, "judge.base_url"),
        ({"endpoints": []}, "judge.endpoints"),
        ({"endpoints": ["http://a:1/v1", "http://a:1/v1/"]}, "judge.endpoints[1].base_url"),
        ({"endpoints": [{"base_url": "ftp://a/v1"}]}, "judge.endpoints[0].base_url"),
        ({"endpoints": [{"base_url": "http://a:1/v1", "concurrency": 0}]}, "judge.endpoints[0].concurrency"),
        ({"endpoints": [{"base_url": "http://a:1/v1", "weight": 2}]}, "judge.endpoints[0].weight"),
        ({"base_url": "http://a:1/v1", "cache_identity": ""}, "judge.cache_identity"),
    ]:
        with pytest.raises(DataFormatError) as err:
            load_config(_config(tmp_path, bad))
        assert words in str(err.value) and "run.yaml" in str(err.value), str(err.value)


def test_a_cache_written_with_the_base_url_in_the_key_is_still_read(tmp_path) -> None:
    """Caches from before ``cache_identity``: their entries are found (and copied under the new key), not re-paid."""
    from biasbound.judge.cache import JudgeCache, cache_key, legacy_cache_key
    from biasbound.judge.prompts import TEMPLATE_VERSION

    db = tmp_path / "old.sqlite"
    with serve_in_thread(SyntheticServerConfig()) as server:
        cfg = JudgeConfig(base_url=server.url, model="synth", api_key_env="BIASBOUND_TEST_UNSET_KEY")
        fresh = judge_many_sync(_requests(6), config=cfg, cache=db, progress=False)
        # rewrite the cache as an old release wrote it: the same payloads under base-URL keys
        with JudgeCache(db) as cache:
            for r in fresh:
                entry = cache.get(r.cache_key)
                fields = dict(model="synth", messages=r.messages, temperature=0.0, max_tokens=cfg.max_tokens, top_p=None,
                              seed=0, rerun=0, template_version=TEMPLATE_VERSION)
                assert cache_key(identity=None, **fields) == r.cache_key
                cache.delete(r.cache_key)
                cache.put(legacy_cache_key(base_url=server.url + "/", **fields), entry["status"], entry["payload"])
        n = len(server.log)
        again = judge_many_sync(_requests(6), config=cfg, cache=db, progress=False)
        assert len(server.log) == n and all(r.from_cache for r in again)
        assert [r.verdict for r in again] == [r.verdict for r in fresh]
        with JudgeCache(db) as cache:
            assert all(cache.get(r.cache_key)["status"] == "ok" for r in fresh)  # copied under the new keys

"""The synthetic judge: the formula's known biases, its closed forms, and the HTTP server."""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.request

import numpy as np
import openai
import pytest
from scipy import stats
from typer.testing import CliRunner

from biasbound import InputError
from biasbound.judge.parsing import parse_pairwise, parse_rewrite, parse_single
from biasbound.judge.prompts import default_rubric, render_pairwise, render_single
from biasbound.testing import (
    ERROR_SENTENCES,
    SYNONYMS,
    SyntheticJudge,
    SyntheticJudgeConfig,
    SyntheticServerConfig,
    count_markdown,
    find_inserted_error,
    fingerprint,
    serve_in_thread,
)

ANSWER = """## How to start

Use a big hammer to fix the problem.

- First, check the nail.
- Then **start** slowly; it is often easy.

This method helps in most examples."""

# The same content reformatted the ways the `format` generator does: emphasis removed,
# bullets -> numbers, heading level changed, blank lines removed/added.
REFORMATTED = [
    ANSWER.replace("**", ""),
    ANSWER.replace("- First", "1. First").replace("- Then", "2. Then"),
    ANSWER.replace("## How", "#### How"),
    ANSWER.replace("\n\n", "\n"),
    ANSWER.replace("\n\n", "\n\n\n"),
    ANSWER.replace("## How to start", "**How to start**"),
]

NEUTRAL = dict(quality_sd=0.0, markdown_bonus=0.0, markdown_cap=0.0, length_coef=0.0, position_bias=0.0,
               error_penalty=0.0, rubric_focus=0.0, jitter_sd=0.0)


def test_fingerprint_invariant_to_formatting_and_paraphrase() -> None:
    fp = fingerprint(ANSWER)
    for variant in REFORMATTED:
        assert fingerprint(variant) == fp, variant
    judge = SyntheticJudge()
    for seed in range(5):
        para = judge.paraphrase(ANSWER, seed)
        assert fingerprint(para) == fp
        assert judge.paraphrase(ANSWER, seed) == para  # deterministic
    assert any(judge.paraphrase(ANSWER, s) != ANSWER for s in range(5))
    # content changes do change it
    assert fingerprint(ANSWER.replace("hammer", "wrench")) != fp
    assert fingerprint(ANSWER + " Extra sentence.") != fp


def test_paraphrase_swaps_only_table_words_and_keeps_case() -> None:
    judge = SyntheticJudge(SyntheticJudgeConfig(paraphrase_rate=1.0))
    assert judge.paraphrase("Use it. USE it. use it. Hammer.", 0) == "Utilize it. UTILIZE it. utilize it. Hammer."
    assert judge.paraphrase(judge.paraphrase(ANSWER, 0), 0) == ANSWER  # every swap is to the partner
    table_words = {w for pair in SYNONYMS for w in pair}
    assert len(table_words) == 2 * len(SYNONYMS)  # each word in one pair only
    for sentence in ERROR_SENTENCES:
        assert not {w.lower() for w in re.findall(r"[A-Za-z]+", sentence)} & table_words


def test_count_markdown_by_hand() -> None:
    text = "# Title\n\n- a\n- b\n1. c\n2) d\n**bold** and __bold__ and `code`\n```\nx\n```\n| a | b |\n|---|---|"
    # 1 heading + 2 bullets + 2 numbered + 2 bold + 1 inline code + 2 fences + 2 table rows
    assert count_markdown(text) == 12
    assert count_markdown("plain text only") == 0


def test_insert_error_is_found_and_keeps_the_fingerprint() -> None:
    judge = SyntheticJudge()
    out, desc = judge.insert_error(ANSWER, seed=2)
    k = find_inserted_error(out)
    assert k is not None and ERROR_SENTENCES[k] in out and ERROR_SENTENCES[k] in desc
    assert find_inserted_error(ANSWER) is None
    assert fingerprint(out) == fingerprint(ANSWER)
    assert find_inserted_error(judge.paraphrase(out, 1)) == k
    assert find_inserted_error(out.replace(ERROR_SENTENCES[k], f"**{ERROR_SENTENCES[k]}**")) == k


def _d0(config: SyntheticJudgeConfig, a: str, b: str, rubric=None) -> float:
    return SyntheticJudge(config).components(render_pairwise("Q", a, b, rubric=rubric))["d0"]


def test_each_bias_term_by_hand() -> None:
    plain = "Use a hammer to fix it."
    # position bias alone: identical answers differ by exactly the bonus for A
    assert _d0(SyntheticJudgeConfig(**{**NEUTRAL, "position_bias": 0.4}), plain, plain) == pytest.approx(0.4, abs=1e-12)
    # markdown: 3 bold spans at 0.15 each, capped at 0.6
    bold = "Use a **hammer** to **fix** it **now**."
    plain_now = "Use a hammer to fix it now."
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "markdown_bonus": 0.15, "markdown_cap": 0.6})
    assert _d0(cfg, bold, plain_now) == pytest.approx(0.45, abs=1e-12)
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "markdown_bonus": 0.25, "markdown_cap": 0.6})
    assert _d0(cfg, bold, plain_now) == pytest.approx(0.6, abs=1e-12)
    # length: 0.25 * (log(1 + 12) - log(1 + 6)) words counted by hand
    long = "Use a hammer to fix it, then check the nail twice more."
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "length_coef": 0.25})
    assert _d0(cfg, long, plain) == pytest.approx(0.25 * (math.log(13) - math.log(7)), abs=1e-12)
    # inserted error, always detected: penalty 1.5 (quality and length switched off)
    with_error, _ = SyntheticJudge().insert_error(plain, seed=0)
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "error_penalty": 1.5, "error_detect_prob": 1.0})
    assert _d0(cfg, with_error, plain) == pytest.approx(-1.5, abs=1e-12)
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "error_penalty": 1.5, "error_detect_prob": 0.0})
    assert _d0(cfg, with_error, plain) == 0.0
    # rubric order: style first -> extra weight 0.5 on the markdown term (0.45 difference)
    style_first = default_rubric("pairwise").reordered(["style", "correctness", "completeness", "safety", "conciseness"])
    cfg = SyntheticJudgeConfig(**{**NEUTRAL, "markdown_bonus": 0.15, "markdown_cap": 0.6, "rubric_focus": 0.5})
    assert _d0(cfg, bold, plain_now, rubric=style_first) == pytest.approx(0.45 * 1.5, abs=1e-12)
    assert _d0(cfg, bold, plain_now) == pytest.approx(0.45, abs=1e-12)  # correctness first: quality focus, 0 here


def test_verdict_thresholds_by_hand() -> None:
    plain = "Use a hammer to fix it."
    for bias, expected in [(0.0, "A=B"), (0.29, "A=B"), (0.3, "A>B"), (1.19, "A>B"), (1.2, "A>>B"), (-0.5, "B>A"), (-2.0, "B>>A")]:
        cfg = SyntheticJudgeConfig(**{**NEUTRAL, "position_bias": bias, "tie_threshold": 0.3, "strong_threshold": 1.2})
        reply = SyntheticJudge(cfg).reply(render_pairwise("Q", plain, plain), seed=0)
        assert parse_pairwise(reply).value == expected


def test_probabilities_match_scipy_and_reruns() -> None:
    """Closed-form verdict probabilities vs scipy and vs 4000 reruns (seeds 0..3999).

    17 checks: 15 frequencies (5 pairwise verdicts, 10 ratings), each within 5 binomial
    standard errors + 1e-3, and 2 means within 5 standard errors. For independent draws the
    exact binomial tails of the 15 frequency checks sum to 2.0e-6 and the two mean checks add
    <= 1.2e-6 (normal approximation; the pairwise one uses the bound 0.5 on the SD), so the
    false-failure rate is below 1e-5; the seeds are fixed, so the outcome is deterministic.
    """
    judge = SyntheticJudge(SyntheticJudgeConfig(jitter_sd=0.6))
    msgs = render_pairwise("Q", ANSWER, "Use a hammer. It is easy.")
    comp = judge.components(msgs)
    probs = judge.verdict_probabilities(msgs)
    sd = 0.6 * math.sqrt(2)
    cdf = stats.norm(comp["d0"], sd).cdf
    expected = {"B>>A": cdf(-1.2), "B>A": cdf(-0.3) - cdf(-1.2), "A=B": cdf(0.3) - cdf(-0.3),
                "A>B": cdf(1.2) - cdf(0.3), "A>>B": 1 - cdf(1.2)}
    for v, p in expected.items():
        assert probs[v] == pytest.approx(p, abs=1e-12)
    n = 4000
    verdicts = [judge.judgment(msgs, s)["overall"] for s in range(n)]
    for v, p in probs.items():
        freq = verdicts.count(v) / n
        assert abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-3
    scores = {"A>>B": 1.0, "A>B": 0.75, "A=B": 0.5, "B>A": 0.25, "B>>A": 0.0}
    mc_mean = float(np.mean([scores[v] for v in verdicts]))
    assert abs(mc_mean - judge.expected_score(msgs)) <= 5 * 0.5 / math.sqrt(n)
    # single-answer ratings
    single = render_single("Q", ANSWER)
    rprobs = judge.verdict_probabilities(single)
    assert sum(rprobs.values()) == pytest.approx(1.0, abs=1e-12)
    ratings = [judge.judgment(single, s)["overall"] for s in range(n)]
    for k, p in rprobs.items():
        assert abs(ratings.count(k) / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-3
    assert abs(np.mean(ratings) - judge.expected_score(single)) <= 5 * np.std(ratings) / math.sqrt(n) + 1e-3


def test_replies_parse_and_agree_with_the_judgment() -> None:
    judge = SyntheticJudge()
    msgs = render_pairwise("Q", ANSWER, "Use a hammer.")
    for seed in range(3):
        parsed = parse_pairwise(judge.reply(msgs, seed))
        j = judge.judgment(msgs, seed)
        assert parsed.status == "ok" and parsed.value == j["overall"] and parsed.factors == j["factors"]
    single = render_single("Q", ANSWER)
    parsed = parse_single(judge.reply(single, 1))
    j = judge.judgment(single, 1)
    assert parsed.value == j["overall"] and parsed.factors == {k: float(v) for k, v in j["factors"].items()}
    with pytest.raises(InputError, match="biasbound-task"):
        judge.reply([{"role": "system", "content": "hello"}, {"role": "user", "content": "x"}])


def _rewrite_messages(task: str, text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": f"biasbound-task: {task}\nRewrite the text."},
            {"role": "user", "content": f"<<<RESPONSE\n{text}\nRESPONSE>>>"}]


def test_http_server_speaks_the_protocol(monkeypatch) -> None:
    monkeypatch.setenv("BIASBOUND_SYNTH_TEST_KEY", "sk-synthetic-test-0001")
    config = SyntheticServerConfig(api_key_env="BIASBOUND_SYNTH_TEST_KEY", model="synth")
    judge = SyntheticJudge(config.judge)
    with serve_in_thread(config) as server:
        url, stop = server
        with urllib.request.urlopen(url + "/models") as resp:
            assert json.load(resp)["data"][0]["id"] == "synth"
        client = openai.OpenAI(base_url=url, api_key="sk-synthetic-test-0001", max_retries=0)
        msgs = render_pairwise("Q", ANSWER, "Use a hammer.")
        resp = client.chat.completions.create(model="synth", messages=msgs, seed=5)
        assert resp.choices[0].message.content == judge.reply(msgs, 5)
        assert resp.usage.prompt_tokens == sum(len(m["content"].split()) for m in msgs)
        para = client.chat.completions.create(model="synth", messages=_rewrite_messages("paraphrase", ANSWER), seed=1)
        assert parse_rewrite(para.choices[0].message.content).value == judge.paraphrase(ANSWER, 1)
        err = client.chat.completions.create(model="synth", messages=_rewrite_messages("insert-error", ANSWER), seed=1)
        parsed = parse_rewrite(err.choices[0].message.content, task="insert-error")
        assert find_inserted_error(parsed.value) is not None and parsed.extra["inserted"].startswith("Inserted")
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).chat.completions.create(model="synth", messages=msgs)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="synth", messages=[{"role": "user", "content": "no task line"}])
        assert server.stats()["n_requests"] == 4  # the 401 and the malformed one never reach the judge
        stop()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/models", timeout=2)


def test_fault_injection_is_seeded_per_attempt() -> None:
    msgs = render_single("Q", "Use a hammer.")
    config = SyntheticServerConfig(fault_rate=0.5, fault_kinds=("500",), fault_seed=7)
    outcomes = []
    for _ in range(2):
        with serve_in_thread(config) as server:
            client = openai.OpenAI(base_url=server.url, api_key="EMPTY", max_retries=0)
            run = []
            for _ in range(12):
                try:
                    client.chat.completions.create(model="m", messages=msgs)
                    run.append("ok")
                except openai.InternalServerError:
                    run.append("500")
            outcomes.append(run)
            assert [e["attempt"] for e in server.log] == list(range(12))
    assert outcomes[0] == outcomes[1]  # reproducible
    assert 0 < outcomes[0].count("500") < 12  # draws differ between attempts
    with pytest.raises(InputError, match="'fault_kinds'"):
        SyntheticServerConfig(fault_kinds=("teapot",))


def test_serve_command_registers() -> None:
    import typer

    from biasbound.commands import serve

    app = typer.Typer()
    serve.register(app)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["serve-synthetic-judge", "--help"])
    assert result.exit_code == 0 and "--fault-rate" in result.output and "--latency-ms" in result.output
    config = serve.build_config(latency_ms=50, fault_rate=0.2, fault_kinds="429, timeout", position_bias=0.1)
    assert config.fault_kinds == ("429", "timeout") and config.judge.position_bias == 0.1 and config.latency_ms == 50
    with pytest.raises(InputError, match="fault-kinds"):
        serve.build_config(fault_kinds=" , ")


def test_synthetic_paraphrase_never_touches_code_and_retries_differ() -> None:
    from biasbound.testing.synthetic import SyntheticJudge, SyntheticJudgeConfig

    judge = SyntheticJudge(SyntheticJudgeConfig(paraphrase_rate=1.0))
    text = "We use this to help.\n\n```python\nuse = help(big)\n```\nThen `use big` and use it.\n~~~~\nuse\n~~~~\nshow"
    out = judge.paraphrase(text, 1)
    assert "```python\nuse = help(big)\n```" in out and "`use big`" in out and "~~~~\nuse\n~~~~" in out
    assert out.startswith("We utilize this to assist.") and out.endswith("demonstrate")

    half = SyntheticJudge(SyntheticJudgeConfig(paraphrase_rate=0.5))
    prose = " ".join(["use help big show start need make"] * 6)

    def request(attempt: int) -> list[dict[str, str]]:
        system = f"biasbound-task: paraphrase\nbiasbound-variation: 7\nbiasbound-attempt: {attempt}"
        return [{"role": "system", "content": system}, {"role": "user", "content": f"<<<RESPONSE\n{prose}\nRESPONSE>>>"}]

    replies = {half.reply(request(a), seed=0) for a in range(4)}
    assert len(replies) > 1  # a retried rewrite is a new draw, as from a sampled LLM
    assert half.reply(request(2), seed=0) == half.reply(request(2), seed=0)  # and still reproducible


# --------------------------------------------------------------------------- HTTP/1.1 framing of the asyncio server


def _exchange(url: str, payload: bytes, *, expect_responses: int = 1, timeout: float = 5.0) -> tuple[list[tuple[int, dict[str, str], bytes]], bool]:
    """Send raw bytes on one TCP connection; return the parsed responses and whether the server closed it."""
    import socket
    from urllib.parse import urlparse

    parsed = urlparse(url)
    responses: list[tuple[int, dict[str, str], bytes]] = []
    with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout) as sock:
        sock.sendall(payload)
        buf, closed = b"", False
        while len(responses) < expect_responses:
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0:
                lines = buf[:head_end].decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
                length = int(headers["content-length"])
                if len(buf) >= head_end + 4 + length:
                    responses.append((int(lines[0].split()[1]), headers, buf[head_end + 4:head_end + 4 + length]))
                    buf = buf[head_end + 4 + length:]
                    continue
            chunk = sock.recv(65536)
            if not chunk:
                closed = True
                break
            buf += chunk
        if not closed:
            sock.settimeout(0.5)
            try:
                closed = sock.recv(1) == b""
            except TimeoutError:
                closed = False
    return responses, closed


def _post(path: str, body: bytes, extra: str = "", version: str = "HTTP/1.1") -> bytes:
    return (f"POST {path} {version}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n").encode() + body


@pytest.mark.slow  # end to end: HTTP against the server
def test_server_keep_alive_pipelining_and_connection_close() -> None:
    judge = SyntheticJudge()
    msgs = [render_single(f"Q{i}", f"Use a hammer {i} times.") for i in range(3)]
    bodies = [json.dumps({"model": "m", "messages": m, "seed": i}).encode() for i, m in enumerate(msgs)]
    with serve_in_thread(SyntheticServerConfig(latency_ms=20)) as server:
        # three requests written at once on one keep-alive connection: three answers, in order, connection open
        responses, closed = _exchange(server.url, b"".join(_post("/v1/chat/completions", b) for b in bodies),
                                      expect_responses=3)
        assert [code for code, _, _ in responses] == [200, 200, 200] and not closed
        texts = [json.loads(body)["choices"][0]["message"]["content"] for _, _, body in responses]
        assert texts == [judge.reply(m, i) for i, m in enumerate(msgs)]
        # 'Connection: close' and HTTP/1.0 without keep-alive: one answer, then the server closes
        for extra, version in (("Connection: close\r\n", "HTTP/1.1"), ("", "HTTP/1.0")):
            responses, closed = _exchange(server.url, _post("/chat/completions", bodies[0], extra, version))
            assert responses[0][0] == 200 and responses[0][1]["connection"] == "close" and closed
        # HTTP/1.0 asking for keep-alive stays open
        responses, closed = _exchange(server.url, _post("/v1/chat/completions", bodies[1], "Connection: keep-alive\r\n",
                                                        "HTTP/1.0"))
        assert responses[0][0] == 200 and not closed
        assert server.stats()["n_requests"] == 6


@pytest.mark.slow  # end to end: HTTP against the server
def test_server_rejects_what_it_cannot_frame() -> None:
    with serve_in_thread() as server:
        chunked = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"2\r\n{}\r\n0\r\n\r\n")
        responses, closed = _exchange(server.url, chunked)
        assert responses[0][0] == 501 and "Content-Length" in json.loads(responses[0][2])["error"]["message"] and closed
        for raw, code in ((b"GARBAGE\r\n\r\n", 400), (b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: x1\r\n\r\n", 400),
                          (b"GET /v1/models HTTP/1.1\r\nbad header line\r\n\r\n", 400)):
            responses, closed = _exchange(server.url, raw)
            assert responses[0][0] == code and closed, raw
        responses, closed = _exchange(server.url, b"PUT /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        assert responses[0][0] == 501 and not closed  # well-framed: the connection stays usable
        responses, _ = _exchange(server.url, b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        assert responses[0][0] == 404
        responses, _ = _exchange(server.url, _post("/v1/chat/completions", b"{not json"))
        assert responses[0][0] == 400
        responses, _ = _exchange(server.url, b"GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n")
        assert json.loads(responses[0][2])["n_requests"] == 0  # none of the above reached the judge


def test_server_waits_on_timers_not_threads(monkeypatch) -> None:
    """16 requests waiting on their latency timers are all in flight at once (a server blocking a thread per request
    could not accept the 16th while 15 wait).

    Deterministic: the timers are held until the 16th request has arrived, then all started, so the count does not
    depend on how fast the client threads start; the counters are read through the server's own ``/v1/stats`` route,
    which the event loop answers only after every callback that wrote a reply has also decremented ``in_flight``.
    """
    import concurrent.futures

    from biasbound.testing import server as server_module

    held: list[tuple] = []
    start_timer = server_module._Serving.later

    def later_once_all_arrived(self, delay, callback, *args):  # runs on the server's event loop
        held.append((self, delay, callback, args))
        if len(held) == 16:
            for serving, d, cb, a in held:
                start_timer(serving, d, cb, *a)

    monkeypatch.setattr(server_module._Serving, "later", later_once_all_arrived)
    msgs = render_single("Q", "Use a hammer.")
    with serve_in_thread(SyntheticServerConfig(latency_ms=50)) as server:
        client = openai.OpenAI(base_url=server.url, api_key="EMPTY", max_retries=0, timeout=120)
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(lambda s: client.chat.completions.create(model="m", messages=msgs, seed=s), range(16)))
        with urllib.request.urlopen(server.url + "/stats", timeout=30) as resp:
            counters = json.load(resp)
    assert len(held) == 16
    assert counters["max_in_flight"] == 16 and counters["in_flight"] == 0 and counters["n_requests"] == 16
    assert [r.choices[0].message.content for r in replies] == [SyntheticJudge().reply(msgs, s) for s in range(16)]


@pytest.mark.slow  # end to end: HTTP against the server
def test_run_server_in_the_foreground_stops_on_ctrl_c(tmp_path) -> None:
    import signal
    import subprocess
    import sys

    script = ("import sys\nfrom biasbound.testing.server import SyntheticServerConfig, run_server\n"
              "run_server(SyntheticServerConfig(model='fg'), port=0, on_ready=lambda u: print(u, flush=True))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        with urllib.request.urlopen(url + "/models", timeout=5) as resp:
            assert json.load(resp)["data"][0]["id"] == "fg"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.slow  # end to end: HTTP against the server
def test_many_pipelined_requests_without_latency_are_answered_in_order() -> None:
    """500 requests written at once and answered at once (a recursive reply->next-request chain would overflow the stack)."""
    judge = SyntheticJudge()
    msgs = [render_single("Q", f"Use {i} nails.") for i in range(500)]
    payload = b"".join(_post("/v1/chat/completions", json.dumps({"model": "m", "messages": m, "seed": i}).encode())
                       for i, m in enumerate(msgs))
    with serve_in_thread() as server:
        responses, closed = _exchange(server.url, payload, expect_responses=500, timeout=30)
    assert not closed and [code for code, _, _ in responses] == [200] * 500
    assert [json.loads(body)["choices"][0]["message"]["content"] for _, _, body in responses] == [
        judge.reply(m, i) for i, m in enumerate(msgs)]

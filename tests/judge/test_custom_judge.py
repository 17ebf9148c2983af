"""A judge configured by its own prompt and parser (issue: real judges that do not speak biasbound's format):
presets, parsers, config errors in one sentence, the preflight, parse retries with new seeds, and a run
against the synthetic server's small-model reply styles."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import SHARED_DATA

from biasbound import DataFormatError
from biasbound._exceptions import InputError, JudgeError
from biasbound.config import load_config
from biasbound.judge.client import JudgeConfig, JudgeRequest, JudgeSession
from biasbound.judge.custom import VerdictParser, preset
from biasbound.testing.server import SyntheticServerConfig, serve_in_thread

DATA = SHARED_DATA / "arena-hard-v0.1"


def _config(tmp_path: Path, url: str, **changes: object) -> Path:
    cfg: dict = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 12, "models": ["gpt-3.5-turbo-0125"]},
        "judge": {"base_url": url, "model": "m", "api_key_env": "BIASBOUND_TEST_UNSET_KEY",
                  "sampling": {"temperature": 0.7}, "retry": {"backoff_initial": 0.0, "backoff_jitter": 0.0}},
        "neighbors": {"generators": ["swap", "rerun"]},
        "prompt": {"preset": "llmbar"}, "bootstrap_rounds": 200, "plots": False, "output": "out",
    }
    cfg.update(changes)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


# ------------------------------------------------------------------ parsers (found item 1)
def test_llmbar_preset_reads_its_own_spellings_and_names_positions() -> None:
    p = preset("llmbar")
    assert p is not None
    assert p.parser.parse("Output (a)", "judge-pairwise").value == "A>B"
    assert p.parser.parse("output (b) is better.", "judge-pairwise").value == "B>A"
    miss = p.parser.parse("Both are fine.", "judge-pairwise")
    assert miss.status == "missing" and miss.value is None and miss.raw == "Both are fine."
    msgs = p.render(question="Q?", answer_a="first", answer_b="second", answer="x", reference=None, position="B")
    assert msgs[0]["role"] == "system" and "Output (a):\nfirst" in msgs[1]["content"]
    assert "{#" not in msgs[0]["content"]  # the source header is a comment, never sent


def test_mt_bench_preset_maps_c_to_a_tie() -> None:
    p = preset("mt-bench")
    assert p is not None
    assert p.parser.parse("A is clearer. [[C]]", "judge-pairwise").value == "A=B"
    assert p.parser.parse("[[B]]", "judge-pairwise").value == "B>A"


def test_bare_rating_json_field_and_logprobs() -> None:
    number = VerdictParser(kind="number", low=1, high=10)
    assert number.parse("Rating: 7", "judge-single").value == 7.0  # found: 'Rating: 7' was rejected
    assert number.parse("Rating: 12", "judge-single").status == "missing"
    five = VerdictParser(kind="number", low=1, high=5)
    assert five.parse("5", "judge-single").value == 10.0 and five.parse("1", "judge-single").value == 1.0
    js = VerdictParser(kind="json", field="verdict.winner", mapping=(("first", "A>B"), ("second", "B>A")))
    assert js.parse('Sure: {"verdict": {"winner": "second"}}', "judge-pairwise").value == "B>A"
    assert js.parse('{"verdict": {}}', "judge-pairwise").status == "missing"
    lp = VerdictParser(kind="logprob", mapping=(("a", "A>B"), ("b", "B>A")))
    got = lp.parse("Output (b)", "judge-pairwise", [{"a": math.log(0.2), "b": math.log(0.6), "c": math.log(0.2)}])
    assert got.value == "B>A" and got.extra["p"]["B>A"] == pytest.approx(0.75)
    assert lp.parse("x", "judge-pairwise", None).status == "missing"
    # 'Output (a)': the verdict token is at the third position; earlier positions hold no mapped token
    later = lp.parse("Output (a)", "judge-pairwise", [{"Output": -0.1}, {" (": -0.1}, {"a": math.log(0.9), "b": math.log(0.1)}])
    assert later.value == "A>B" and later.extra["p"]["A>B"] == pytest.approx(0.9)
    assert lp.parse("I think", "judge-pairwise", [{"I": -0.1}, {" think": -0.2}]).status == "missing"


@pytest.mark.parametrize(
    ("prompt", "pattern"),
    [
        ({"preset": "alpaca"}, r"The key 'prompt\.preset' must be one of alpaca-eval, alpaca-eval-gpt4, arena-hard, llmbar, "
                                r"mt-bench\. Got 'alpaca'"),
        ({"user": "u.jinja", "parser": {"kind": "regex", "pattern": "(", "map": {"a": "A>B"}}},
         r"The key 'prompt\.parser\.pattern' must be a valid regular expression"),
        ({"user": "u.jinja", "parser": {"kind": "regex", "pattern": "(a)", "map": {"a": "first"}}},
         r"The key 'prompt\.parser\.map\.a' must be one of A>>B, A>B, A=B, B>A, B>>A\. Got 'first'"),
        ({"user": "bad.jinja", "parser": {"kind": "logprob", "map": {"a": "A>B"}}},
         r"The key 'prompt\.user' must be a template using only the fields .* uses 'answr'"),
        ({"user": "u.jinja", "parser": {"kind": "number"}}, r"The key 'prompt\.parser\.kind' must be regex, json or logprob"),
        ({"user": "u.jinja", "parser": {"kind": "regex", "pattern": "(a)"}}, r"The key 'prompt\.parser\.map' must be a mapping"),
    ],
)
def test_prompt_config_errors_are_one_sentence(tmp_path: Path, prompt: dict, pattern: str) -> None:
    (tmp_path / "u.jinja").write_text("{{ question }} {{ answer_a }} {{ answer_b }}", encoding="utf-8")
    (tmp_path / "bad.jinja").write_text("{{ question }} {{ answr }}", encoding="utf-8")
    with pytest.raises(DataFormatError, match=pattern) as info:
        load_config(_config(tmp_path, "http://127.0.0.1:9/v1", prompt=prompt))
    assert str(info.value).count(". ") <= 1


# ------------------------------------------------------------------ retries (found item 3)
def test_parse_retry_sends_a_new_seed_and_stops_on_a_repeated_reply() -> None:
    """A server that repeats its prose verbatim is deterministic: 2 attempts, not 3, with two different seeds."""
    parser = preset("llmbar").parser  # type: ignore[union-attr]
    with serve_in_thread(SyntheticServerConfig(style="prose")) as server:
        cfg = JudgeConfig(base_url=server.url, model="m", api_key_env="BIASBOUND_TEST_UNSET_KEY", max_parse_attempts=3,
                          backoff_initial=0.0, backoff_jitter=0.0)

        async def go() -> list:
            async with JudgeSession(cfg) as session:
                req = JudgeRequest(key="k", messages=[{"role": "user", "content": "which?"}], task="judge-pairwise",
                                   parser=parser)
                return await session.judge([req], progress=False)

        (res,) = asyncio.run(go())
        log = server.log
    assert res.status == "missing" and res.attempts == 2 and "unparseable" in str(res.reason)
    assert len({e["seed"] for e in log}) == 2


# ------------------------------------------------------------------ preflight (found item 2)
@pytest.mark.slow
def test_preflight_stops_naming_the_cause_and_one_reply(tmp_path: Path) -> None:
    from biasbound.runner import run

    with serve_in_thread(SyntheticServerConfig(style="prose")) as server:
        with pytest.raises(JudgeError, match=r"answered 4 of the preflight's 4 calls, but only 0 replies held a verdict "
                                             r"the parser accepts .* here is one: 'Both outputs"):
            run(_config(tmp_path, server.url), progress=False)
        calls = len(server.log)
    assert calls <= 4 * 2  # the preflight's calls (each with at most one parse retry), nothing more


@pytest.mark.slow
def test_llmbar_preset_run_certifies_against_letter_replies(tmp_path: Path) -> None:
    """'Output (a)' replies (with a position bias) parse 100% and certify; the scope records the prompt."""
    from biasbound.runner import run

    with serve_in_thread(SyntheticServerConfig(style="letter")) as server:
        result = run(_config(tmp_path, server.url), progress=False)
    frame = result.judgments.frame
    assert frame["score"].notna().all() and len(frame) > 0
    summary = yaml.safe_load((tmp_path / "out" / "run_summary.json").read_text())
    assert summary["config"]["prompt"]["name"] == "llmbar"
    assert any("preflight: 4 of 4 replies parsed" in n for n in summary.get("notes", []))
    assert (tmp_path / "out" / "certificate.json").is_file()
    from biasbound.commands.run import call_lines

    lines = call_lines(result.summary)  # each judgment counted once: the preflight's 4 requests are said apart
    assert f"judgments: {len(frame)} ok, 0 missing, 0 failed" in lines[lines.index(next(x for x in lines
                                                                                       if x.startswith("judgments:")))]
    assert any(x.startswith("  preflight: 4 of these requests") for x in lines)


@pytest.mark.slow
def test_the_certificate_records_the_prompt_and_parser_and_verify_reproduces_it(tmp_path: Path, capsys) -> None:
    """The run's certificates name the prompt and parser (scope.judge_prompt: preset name, templates, parser, digest);
    verify prints it; verify --judgments re-makes every output from judgments.parquet; an edited template in the
    scope fails verify (the certificate's records digest and the manifest)."""
    from biasbound.cli import main
    from biasbound.judge.custom import prompt_record_digest
    from biasbound.runner import run

    with serve_in_thread(SyntheticServerConfig(style="letter")) as server:
        run(_config(tmp_path, server.url), progress=False)
    out = tmp_path / "out"
    cert = json.loads((out / "certificate.json").read_text())
    rec = cert["scope"]["judge_prompt"]
    llmbar = preset("llmbar")
    assert llmbar is not None
    assert rec["name"] == "llmbar" and rec["user"] == llmbar.user and rec["system"] == llmbar.system
    assert rec["parser"]["kind"] == "regex" and rec["parser"]["pattern"] == llmbar.parser.pattern
    assert rec["parser"]["map"] == {"a": "A>B", "b": "B>A"} and rec["few_shot"] == []
    assert rec["sha256"] == prompt_record_digest(rec) and len(rec["sha256"]) == 64
    capsys.readouterr()
    code = main(["verify", str(out), "--judgments", str(out / "judgments.parquet")])
    text = capsys.readouterr().out
    assert code == 0 and "DIFFERS" not in text and "reproduced" in text, text
    assert f"prompt    judge m: llmbar (sha256 {rec['sha256'][:16]}...): parser regex" in text

    rec["user"] = rec["user"].replace("Output (a)", "Response (a)")  # an edited template in the scope
    cert["scope"]["judge_prompt"] = rec
    (out / "certificate.json").write_text(json.dumps(cert))
    code = main(["verify", str(out)])
    text = capsys.readouterr().out
    assert code == 1 and "FAILED" in text and "EDITED" in text, text


@pytest.mark.slow
def test_a_resume_repeats_no_stored_reply_unless_asked_or_the_parser_changed(tmp_path: Path) -> None:
    """Bare-number replies read by a regex that takes only 1 or 2: most replies are unparseable. A second run
    calls nothing; retry_unparseable calls the unparseable ones again; a changed parser calls everything."""
    from biasbound.runner import run

    (tmp_path / "u.jinja").write_text("{{ question }}\nA: {{ answer_a }}\nB: {{ answer_b }}\nAnswer 1 or 2.", encoding="utf-8")
    parser = {"kind": "regex", "pattern": r"^([12])$", "map": {"1": "A>B", "2": "B>A"}}
    prompt = {"user": "u.jinja", "parser": parser}

    def chat_calls(server) -> int:
        return sum(1 for e in server.log)

    small = {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
             "baseline": "gpt-4-0314", "n_items": 4, "models": ["gpt-3.5-turbo-0125"]}
    with serve_in_thread(SyntheticServerConfig(style="number")) as server:
        def once(**changes: object) -> int:
            before = chat_calls(server)
            with contextlib.suppress(Exception):  # a run with few verdicts may not certify; the calls are what counts
                run(_config(tmp_path, server.url, preflight={"calls": 0}, data=small, **changes), progress=False)
            return chat_calls(server) - before

        first = once(prompt=prompt)
        again = once(prompt=prompt)
        asked = once(prompt=prompt, retry_unparseable=True)
        changed = once(prompt={"user": "u.jinja", "parser": {**parser, "pattern": r"([12])"}})
    assert first > 0 and again == 0
    assert 0 < asked <= first  # only the unparseable replies (each with at most its parse retries) come back
    assert changed > 0


# ------------------------------------------------------------------ serving figures (found item 4)
def test_a_server_serving_one_request_at_a_time_is_reported_and_warned() -> None:
    """A serial server with 4 requests asked at once: sustained concurrency about 1 (the estimate is replies/s
    times the fastest call's latency: at most about 1 for serial service -- load only lengthens the wall time --
    far below 0.6 x 4)."""
    from biasbound.judge.serving import serving_lines, serving_summary

    parser = preset("llmbar").parser  # type: ignore[union-attr]
    with serve_in_thread(SyntheticServerConfig(style="letter", serial=True, latency_ms=30)) as server:
        cfg = JudgeConfig(base_url=server.url, model="m", api_key_env="BIASBOUND_TEST_UNSET_KEY", concurrency=4)

        async def go() -> list:
            async with JudgeSession(cfg) as session:
                reqs = [JudgeRequest(key=f"k{i}", messages=[{"role": "user", "content": f"q{i}"}], task="judge-pairwise",
                                     parser=parser) for i in range(12)]
                return await session.judge(reqs, progress=False)

        results = asyncio.run(go())
    out = serving_summary(results, 4)
    assert out["parse_rate"] == 1.0 and out["calls_timed"] == 12
    assert out["sustained_concurrency"] < 2.4 and "warning" in out
    assert out["server_latency_p90_s"] >= out["server_latency_median_s"] > 0
    text = "\n".join(serving_lines(out))
    assert "judgments parsed: 12 of the 12 the judge answered (100.0%" in text and "sustained concurrency" in text and "warning" in text


def test_errors_name_a_refused_connection_apart_from_a_timeout() -> None:
    """Found: a refused connection was labelled a timeout."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    cfg = JudgeConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key_env="BIASBOUND_TEST_UNSET_KEY",
                      max_attempts=1, backoff_initial=0.0, backoff_jitter=0.0)

    async def go() -> str:
        async with JudgeSession(cfg) as session:
            try:
                await session.judge([JudgeRequest(key="k", messages=[{"role": "user", "content": "q"}],
                                                  task="judge-pairwise")], progress=False)
            except JudgeError as exc:
                return str(exc)
        return ""

    assert "Cannot connect to the endpoint" in asyncio.run(go())


def test_timeout_and_refusal_are_described_by_kind() -> None:
    import httpx
    import openai

    from biasbound.judge.client import _Run

    run = _Run.__new__(_Run)
    run.config = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout=8.0)
    run.secret = None
    req = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")
    timeout = openai.APITimeoutError(request=req)
    assert run.describe(timeout).startswith("timeout (no reply within the client timeout of 8 s)")
    refused = openai.APIConnectionError(request=req)
    assert run.describe(refused).startswith("refused connection")


def _table(tmp_path: Path, n: int = 6) -> Path:
    import pandas as pd

    q = pd.read_json(DATA / "question.jsonl", lines=True).head(n)
    base = pd.read_json(DATA / "model_answer" / "gpt-4-0314.jsonl", lines=True).set_index("uid")
    ans = pd.read_json(DATA / "model_answer" / "gpt-3.5-turbo-0125.jsonl", lines=True).set_index("uid")
    rows = [{"item_id": uid, "question": prompt, "model": "gpt-3.5-turbo-0125",
             "answer": ans.loc[uid, "messages"][-1]["content"]["answer"],
             "baseline": base.loc[uid, "messages"][-1]["content"]["answer"], "gold_label": 1.0 if k % 2 else 0.0}
            for k, (uid, prompt) in enumerate(zip(q["uid"], q["prompt"]))]
    path = tmp_path / "answers.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_gold_labels_and_unread_replies_reach_the_judgment_table(tmp_path: Path) -> None:
    import pandas as pd

    table = _table(tmp_path)
    with serve_in_thread(SyntheticServerConfig(style="letter")) as server:
        run_cfg = _config(tmp_path, server.url, data={"table": str(table)})
        from biasbound.runner import run

        run(run_cfg, progress=False)
    frame = pd.read_parquet(tmp_path / "out" / "judgments.parquet")
    gold = pd.read_csv(table).set_index("item_id")["gold_label"]
    assert (frame["human"] == frame["item_id"].map(gold)).all()  # the gold labels ride as the human labels
    assert frame["raw_reply"].isna().all()  # every reply parsed: nothing unread to keep
    # the run's own certify reads them: the judge card's agreement, counted from the table by hand
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    (card,) = summary["judge_card"]["judges"].values()
    agreement = card["human_agreement"]["agreement"]
    canon = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == 1)]
    assert agreement["n"] == len(canon) == 6
    # the judge's five levels against 0/1 labels: a verdict agrees when it is on the label's side of 0.5 (a tie never
    # does); exact equality would have said 0 of 6 here
    assert agreement["rule"] == "side of the midpoint"
    side = np.where(canon["score"] > 0.5, 1.0, np.where(canon["score"] < 0.5, 0.0, 0.5))
    assert agreement["accuracy"] == pytest.approx(float((side == canon["human"]).mean()))
    assert agreement["ties"] == int((canon["score"] == 0.5).sum())
    bad = tmp_path / "bad.csv"
    pd.read_csv(table).assign(gold_label="A").to_csv(bad, index=False)
    with serve_in_thread(SyntheticServerConfig(style="letter")) as server:
        with pytest.raises(InputError, match="bad.csv:2: gold_label must be a number"):
            run(_config(tmp_path, server.url, data={"table": str(bad)}, output="out-bad"), progress=False)
        assert server.stats()["n_requests"] == 0  # refused before any judge call: no judging spent on a bad label


@pytest.mark.slow
def test_answered_but_unparseable_is_not_blamed_on_the_endpoint(tmp_path: Path) -> None:
    """Found: 'Every one of the 75 calls failed ... Check that endpoint' although the server answered all 75."""
    from biasbound.runner import run

    pattern = r"answered all \d+ calls, but no reply held a verdict the parser accepts"
    with serve_in_thread(SyntheticServerConfig(style="prose")) as server, pytest.raises(JudgeError, match=pattern) as info:
        run(_config(tmp_path, server.url, preflight={"calls": 0}, data={"table": str(_table(tmp_path, 3))}), progress=False)
    assert "Check that endpoint" not in str(info.value)


def test_a_connection_not_accepted_in_time_is_a_timeout_not_a_dead_endpoint() -> None:
    """Found under load: 16 connects that a busy local server did not accept within 0.4 s were counted as refused
    connections, 8 in a row stopped the run ("ConnectTimeout: Connection timeout to host ..."). The SDK's aiohttp
    transport reports both as APITimeoutError; only its cause's words tell a refused connection from a slow one."""
    import httpx
    import openai

    from biasbound.judge.client import _is_connection_failure

    req = httpx.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    def timeout_caused_by(text: str) -> openai.APITimeoutError:
        exc = openai.APITimeoutError(request=req)
        exc.__cause__ = TimeoutError(text)
        return exc

    assert not _is_connection_failure(timeout_caused_by("Connection timeout to host http://127.0.0.1:9/v1"))
    assert _is_connection_failure(timeout_caused_by("Cannot connect to host 127.0.0.1:9 ssl:default [Connection refused]"))
    assert _is_connection_failure(openai.APIConnectionError(request=req))  # no reply of any kind
    assert not _is_connection_failure(openai.APITimeoutError(request=req))  # accepted, then slow


# ------------------------------------------------------------------ after an unparseable run (found item 2)
def test_unparseable_cause_names_the_replies_only_when_they_are_the_cause(tmp_path: Path) -> None:
    import pandas as pd

    from biasbound.data.unparseable import unparseable_cause

    bad = "no match of the parser's pattern 'x' after 2 unparseable replies"
    frame = pd.DataFrame({"score": [float("nan")] * 3, "reason": [bad, bad, "connection refused"],
                          "raw_reply": ["Both are fine.", "Both are fine.", None]})
    said = unparseable_cause(frame, tmp_path / "judgments.parquet", doing="plan")
    assert said is not None and "2 of 3 judgments unparseable" in said and "'Both are fine.'" in said
    assert said.startswith("Nothing to plan in ") and "no verdict the parser accepts" in said
    assert unparseable_cause(frame.assign(score=[0.5, None, None]), tmp_path, doing="plan") is None  # a score: usual checks
    refused = frame.assign(reason=[bad, "connection refused", "connection refused"])  # mostly the endpoint's failure
    assert unparseable_cause(refused, tmp_path, doing="plan") is None
    assert unparseable_cause(frame.drop(columns="reason"), tmp_path, doing="plan") is None  # not a run's table


@pytest.mark.slow
def test_plan_and_certify_after_an_unparseable_run_name_the_replies(tmp_path: Path, capsys) -> None:
    """A run whose every reply is prose: plan on its folder and certify on its judgments (with or without --scale)
    say the replies held no verdict, N of M, and point to run_summary.json, never 'out of reach' or '--scale'."""
    import pandas as pd

    from biasbound.cli import main
    from biasbound.runner import run

    with serve_in_thread(SyntheticServerConfig(style="prose")) as server:
        with pytest.raises(JudgeError, match="no reply held a verdict the parser accepts"):
            run(_config(tmp_path, server.url, preflight={"calls": 0}), progress=False)
    out = tmp_path / "out"
    n = len(pd.read_parquet(out / "judgments.parquet"))
    capsys.readouterr()
    for argv in (["plan", str(out)], ["certify", str(out / "judgments.parquet"), "--out", str(tmp_path / "c")],
                 ["certify", str(out / "judgments.parquet"), "--scale", "0,1", "--out", str(tmp_path / "c")]):
        code = main(argv)
        err = " ".join(capsys.readouterr().err.split())
        assert code == 2, (argv, err)
        assert "the judge answered, but its replies held no verdict the parser accepts" in err, err
        assert f"{n} of {n} judgments unparseable" in err and "run_summary.json" in err and "raw_reply" in err
        assert "reach" not in err and "--scale" not in err and "Traceback" not in err


# ------------------------------------------------------------------ run --dry-run (what to build, item 2)
def test_dry_run_renders_every_prompt_and_calls_no_judge(tmp_path: Path, capsys) -> None:
    """12 items x 2 orders rendered with the user's template, one printed, exit 0; a template using a field the
    items lack and one that fails to render: one sentence per item and order naming it, exit 2; the synthetic
    server saw no request either time and no output folder was made."""
    from biasbound.cli import main

    (tmp_path / "good.jinja").write_text("Q: {{ question }}\n(a) {{ answer_a }}\n(b) {{ answer_b }}\nWhich, a or b?",
                                         encoding="utf-8")
    (tmp_path / "bad.jinja").write_text("{{ question }} {{ reference }} {{ answer_a + 1 }} {{ answer_b }}", encoding="utf-8")
    parser = {"kind": "regex", "pattern": r"\b([ab])\b", "map": {"a": "A>B", "b": "B>A"}}
    with serve_in_thread(SyntheticServerConfig(style="letter")) as server:
        good = _config(tmp_path, server.url, prompt={"user": "good.jinja", "parser": parser})
        capsys.readouterr()
        code = main(["run", str(good), "--dry-run"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "dry run: 24 prompt(s) rendered, 0 problem(s); no judge was called." in out
        assert "One rendered prompt (item " in out and "--- user\nQ: " in out and "Which, a or b?" in out
        bad = _config(tmp_path, server.url, prompt={"user": "bad.jinja", "parser": parser})
        code = main(["run", str(bad), "--dry-run"])
        out, err = capsys.readouterr()
        calls = len(server.log)
    assert code == 2
    problems = [line for line in err.splitlines() if line.startswith("error: item ")]
    assert len(problems) == 20 and "... and 28 more problems" in err  # 24 prompts x (a missing field + a render error)
    assert any("game 2, the model's answer first): the user template uses 'reference', which this item does not have"
               in p for p in problems)
    assert any("the template cannot be rendered (TypeError: can only concatenate str" in p for p in problems)
    assert "dry run: 0 prompt(s) rendered, 48 problem(s)" in out
    assert calls == 0 and not (tmp_path / "out").exists()


# ------------------------------------------------------------------ AlpacaEval presets (what to build, item 1)
#: SHA-256 of AlpacaEval's own prompt files at tatsu-lab/alpaca_eval cd543a149df8 (computed from `git show`):
#: src/alpaca_eval/evaluators_configs/alpaca_eval_clf_gpt4_turbo/alpaca_eval_clf.txt and alpaca_eval_gpt4/alpaca_eval.txt
ALPACA_EVAL_PROMPTS = {"alpaca-eval": "784227e6dc2832fc08c43d2c8ea3a308e7523780187a1aaad2f85e30bac85f62",
                       "alpaca-eval-gpt4": "cf4bace43fa6ac71944b9ca2506587ad7c509478a219e98a3950abf9d5b42a98"}


@pytest.mark.parametrize("name", sorted(ALPACA_EVAL_PROMPTS))
def test_alpaca_eval_presets_send_alpaca_evals_own_words(name: str) -> None:
    """Rendered with AlpacaEval's placeholders and its chat markers put back, each preset is AlpacaEval's prompt
    file byte for byte (one changed word changes the digest)."""
    import hashlib

    p = preset(name)
    assert p is not None
    m = p.render(question="{instruction}", answer_a="{output_1}", answer_b="{output_2}", answer=None, reference=None,
                 position=None)
    assert [x["role"] for x in m] == ["system", "user"]
    text = f"<|im_start|>system\n{m[0]['content']}\n<|im_end|>\n<|im_start|>user\n{m[1]['content']}\n<|im_end|>"
    assert hashlib.sha256(text.encode()).hexdigest() == ALPACA_EVAL_PROMPTS[name]


def test_alpaca_eval_parsers_read_as_alpaca_eval_does() -> None:
    """weighted_alpaca_eval_gpt4_turbo: 'm' (output_1, answer A) against 'M', case-sensitive, from the first token's
    log-probabilities, p renormalised over the two; alpaca_eval_gpt4: model_1's rank 1 or 2, any other rank missing."""
    clf = preset("alpaca-eval")
    assert clf is not None
    r = clf.parser.parse("M", "judge-pairwise", [{"M": math.log(0.8), "m": math.log(0.15), "The": math.log(0.05)}])
    assert r.value == "B>A" and r.extra["p"]["A>B"] == pytest.approx(0.15 / 0.95)
    assert clf.parser.parse("m", "judge-pairwise", [{"m": math.log(0.6), "M": math.log(0.3)}]).value == "A>B"
    assert clf.parser.parse("m", "judge-pairwise", None).status == "missing"  # no log-probabilities: not a guess
    rank = preset("alpaca-eval-gpt4")
    assert rank is not None
    reply = "[{'model': 'model_1', 'rank': 2}, {'model': 'model_2', 'rank': 1}]"
    assert rank.parser.parse(reply, "judge-pairwise").value == "B>A"
    assert rank.parser.parse(reply.replace("2}", "1}", 1).replace("1}]", "2}]"), "judge-pairwise").value == "A>B"
    assert rank.parser.parse(reply.replace("'rank': 2", "'rank': 3"), "judge-pairwise").status == "missing"


@pytest.mark.slow
@pytest.mark.parametrize(("name", "style"), [("alpaca-eval", "identifier"), ("alpaca-eval-gpt4", "ranking")])
def test_alpaca_eval_preset_run_certifies_against_its_replies(name: str, style: str, tmp_path: Path) -> None:
    """Through the synthetic server answering as AlpacaEval's annotators do ('m'/'M' with log-probabilities, or the
    ranking list): every reply parsed, certified, the scope names the preset, AlpacaEval's prompt was sent."""
    from biasbound.runner import run

    with serve_in_thread(SyntheticServerConfig(style=style)) as server:
        result = run(_config(tmp_path, server.url, prompt={"preset": name}), progress=False)
        log = server.log
    frame = result.judgments.frame
    assert len(frame) > 0 and frame["score"].notna().all()
    assert result.summary["serving"]["parse_rate"] == 1.0
    assert result.certification is not None
    scope = json.loads((tmp_path / "out" / "certificate.json").read_text())["scope"]
    assert scope["judge_prompt"]["name"] == name
    sent = log[0]["messages"]
    assert sent[0]["role"] == "system" and ("m or M." in sent[1]["content"] or "'rank': <model-rank>" in sent[1]["content"])
    # the server leans to the first-shown answer (A): its log-probabilities put 0.7 on it, so the logprob parser
    # (AlpacaEval's binarised reading) names A every time; the ranking replies name it in 70% of draws. Replies are
    # a fixed function of messages and seed, so this is deterministic; for fresh draws of n >= 36 ranking replies,
    # a share <= 0.5 has probability < 1% (binomial(36, 0.7) at 18: 0.0093).
    first = frame["verdict"] == "A>B"
    assert len(frame) >= 36 and first.mean() > 0.5
    if name == "alpaca-eval":
        assert first.all()


def test_a_recorded_prompt_whose_digest_does_not_match_is_not_run() -> None:
    """verify --judgments reads scope.reproduce as untrusted: a judge_prompt record edited without its sha256
    (or with none) is refused in one sentence; the genuine record passes unchanged."""
    from biasbound._reproduce import checked_reproduce

    llmbar = preset("llmbar")
    assert llmbar is not None
    rec = llmbar.scope()
    call, _ = checked_reproduce({"certify": {"judge_prompt": rec}})
    assert call["judge_prompt"] == rec
    edited = dict(rec, user=rec["user"].replace("Output (a)", "Response (a)"))
    with pytest.raises(InputError, match=r"scope\.reproduce\.certify\.judge_prompt must be a record whose sha256 is "
                                         r"the digest of its templates and parser \(it is not: the record was edited\)"):
        checked_reproduce({"certify": {"judge_prompt": edited}})
    with pytest.raises(InputError, match="with its sha256"):
        checked_reproduce({"certify": {"judge_prompt": {"name": "x"}}})

"""``biasbound run``: config validation (one sentence, exit code 2), score mapping, item loading,
and a small single-grading run from a generic answer table."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound import DataFormatError, InputError
from biasbound.cli import main
from biasbound.config import load_config, parse_config
from biasbound.runner import load_items, run, score_of
from biasbound.testing import SyntheticJudge, serve_in_thread

DATA = SHARED_DATA / "arena-hard-v0.1"


def base_config(**changes: object) -> dict:
    cfg = {
        "data": {"questions": str(DATA / "question.jsonl"), "answers": str(DATA / "model_answer"),
                 "baseline": "gpt-4-0314", "n_items": 30},
        "judge": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
        "neighbors": {"generators": ["swap", "format"], "neighbors_per_generator": 10},
        "output": "out",
    }
    cfg.update(changes)
    return cfg


def write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"neighbors": {"generators": ["swap", "bold"]}},
         r"run\.yaml: The key 'neighbors\.generators' must be a list of generators among 'swap', 'format', "
         r"'paraphrase', 'schematic', 'agreeable', 'rerun'\. Got 'bold' instead\."),
        ({"tau": -1}, r"The key 'tau' must be a number in \(0, 1e\+06\]\. Got -1 instead\."),
        ({"tau": "big"}, r"The key 'tau' must be a number in \(0, 1e\+06\]\. Got 'big' instead\."),
        ({"delta": 1.5}, r"The key 'delta' must be a number in \[1e-12, 1\)\. Got 1\.5 instead\."),
        ({"delta": 1e-300}, r"The key 'delta' must be a number in \[1e-12, 1\)\. Got 1e-300 instead\."),
        ({"template": "triple"}, r"The key 'template' must be one of 'pairwise', 'single'\. Got 'triple' instead\."),
        ({"colour": 1}, r"The key 'colour' is not allowed at the top level; allowed keys are 'data', "),
        ({"calibration": {"center": "middle"}}, r"The key 'calibration\.center' must be one of 'fixed:X'"),
        ({"judge": {"base_url": "ftp://x", "model": "m"}}, r"The key 'judge\.base_url' must be an http\(s\) URL"),
        ({"judge": {"base_url": "http://h/v1", "model": "m", "concurrency": 0}},
         r"The key 'judge\.concurrency' must be an int >= 1\. Got 0 instead\."),
        ({"neighbors": {"generators": ["paraphrase"]}},
         r"The key 'rewriter' must name an endpoint for the generators 'paraphrase': none is given, and the judge "
         r"does not rewrite its own inputs unless 'allow_judge_as_rewriter: true' is set\."),
    ],
)
def test_config_errors_name_file_key_and_allowed_values(tmp_path, change, pattern) -> None:
    path = write(tmp_path, base_config(**change))
    with pytest.raises(DataFormatError, match=pattern) as info:
        load_config(path)
    assert info.value.path == str(path)
    assert str(info.value).count(". ") <= 1  # one sentence


def test_missing_files_are_named(tmp_path) -> None:
    cfg = base_config(data={"questions": str(tmp_path / "nope.jsonl"), "answers": str(DATA / "model_answer"),
                            "baseline": "gpt-4-0314"})
    with pytest.raises(DataFormatError, match=r"The key 'data\.questions' must be an existing file\. Got '.*nope\.jsonl' instead\."):
        load_config(write(tmp_path, cfg))
    with pytest.raises(DataFormatError, match="does not exist"):
        load_config(tmp_path / "absent.yaml")


def test_judge_as_rewriter_only_when_allowed(tmp_path) -> None:
    cfg = parse_config(base_config(neighbors={"generators": ["agreeable"]}, allow_judge_as_rewriter=True), base=tmp_path)
    assert cfg.rewriter_is_judge and cfg.rewriter == cfg.judge
    sep = parse_config(base_config(neighbors={"generators": ["agreeable"]},
                                   rewriter={"base_url": "http://127.0.0.1:9/v1", "model": "r"}), base=tmp_path)
    assert not sep.rewriter_is_judge and sep.rewriter.model == "r"
    assert cfg.output == (tmp_path / "out").resolve()


@pytest.mark.slow  # end to end: CLI subprocesses
def test_cli_config_error_is_one_sentence_and_exit_code_2(tmp_path) -> None:
    path = write(tmp_path, base_config(neighbors={"generators": ["unknown-gen"]}))
    proc = subprocess.run([sys.executable, "-m", "biasbound.cli", "run", str(path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    err = " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert err.startswith("error: ") and "'neighbors.generators'" in err and "'unknown-gen'" in err and "run.yaml" in err
    # and in-process, the same handler: bad tau
    assert main(["run", str(write(tmp_path, base_config(tau=0)))]) == 2


# ---------------------------------------------------------------------------- units
@pytest.mark.parametrize(("verdict", "game", "want"), [
    ("B>>A", 1, 1.0), ("B>A", 1, 0.75), ("A=B", 1, 0.5), ("A>B", 1, 0.25), ("A>>B", 1, 0.0),
    ("A>>B", 2, 1.0), ("A>B", 2, 0.75), ("B>A", 2, 0.25), (7.0, 0, 6 / 9), (1.0, 0, 0.0), (10.0, 0, 1.0),
])
def test_score_of_maps_to_the_models_view(verdict, game, want) -> None:
    assert score_of(SimpleNamespace(status="ok", verdict=verdict), game) == pytest.approx(want, abs=1e-15)


@pytest.mark.parametrize("status", ["missing", "failed"])
def test_missing_or_failed_judgments_are_nan_never_a_tie(status) -> None:
    assert math.isnan(score_of(SimpleNamespace(status=status, verdict=None), 1))


def test_items_are_a_seeded_subset_with_baseline_answers(tmp_path) -> None:
    cfg = parse_config(base_config(), base=tmp_path)
    a, b = load_items(cfg), load_items(cfg)
    assert a.item_ids == b.item_ids and len(a.item_ids) == 30 == len(set(a.item_ids))
    other = load_items(parse_config(base_config(seed=1), base=tmp_path))
    assert other.item_ids != a.item_ids
    assert a.models == ("gpt-3.5-turbo-0125",) and set(a.item_ids) <= set(a.baseline)
    with pytest.raises(InputError, match="'data.baseline'"):
        load_items(parse_config(base_config(data={**base_config()["data"], "baseline": "gpt-9"}), base=tmp_path))


# ---------------------------------------------------------------------------- single grading from a table
def test_single_grading_run_from_a_generic_table(tmp_path) -> None:
    """Two real answer sets graded 1-10 from a CSV table; ratings map to (r - 1) / 9 as the formula gives."""
    q = pd.read_json(DATA / "question.jsonl", lines=True).head(14)
    rows = []
    for model in ("gpt-4-0314", "gpt-3.5-turbo-0125"):
        ans = pd.read_json(DATA / "model_answer" / f"{model}.jsonl", lines=True).set_index("uid")
        for uid, prompt in zip(q["uid"], q["prompt"]):
            rows.append({"item_id": uid, "question": prompt, "model": model,
                         "answer": ans.loc[uid, "messages"][-1]["content"]["answer"]})
    table = tmp_path / "answers.csv"
    pd.DataFrame(rows).to_csv(table, index=False)
    with serve_in_thread() as server:
        cfg = {"data": {"table": str(table)}, "template": "single",
               "judge": {"base_url": server.url, "model": "synthetic", "api_key_env": "BIASBOUND_TEST_UNSET_KEY"},
               "neighbors": {"generators": ["format", "schematic", "rerun"], "neighbors_per_generator": 10},
               "bootstrap_rounds": 200, "plots": False, "tau": 2.0, "output": "out"}
        result = run(write(tmp_path, cfg), progress=False)
    frame = result.judgments.frame
    assert set(frame["game"]) == {0} and frame["score"].notna().all()
    assert set(frame["variant"]) == {"original", "format", "schematic"} and set(frame["rerun"]) == {0, 1}
    # every original rating equals the formula's at seed 0
    from biasbound.judge.prompts import render_single

    judge = SyntheticJudge()
    orig = frame[(frame["variant"] == "original") & (frame["rerun"] == 0)].merge(pd.DataFrame(rows), on=["item_id", "model"])
    for r in orig.itertuples():
        rating = judge.judgment(render_single(r.question, r.answer), 0)["overall"]
        assert r.score == (rating - 1) / 9
    assert not (tmp_path / "out" / "model_judgment").exists()  # Arena-Hard files are pairwise only
    assert (tmp_path / "out" / "certificate.json").is_file()

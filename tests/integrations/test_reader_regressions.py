"""Readers on real files of the tools (issue 26, item 5): an inspect_ai log re-scored by ``inspect score
--action append`` (written by inspect itself, beside the original, as inspect does) reads, once; a folder whose
records name another judge is certified under the records' judge, with a note saying so. Deterministic."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_helpers import run_eval, samples

from biasbound.data.inspect_log import load_inspect_log

pytestmark = pytest.mark.slow  # inspect_ai evals with the mock model and `inspect score` in a subprocess (~8 s)


def _remarks(js) -> list[str]:
    return list(js.frame.attrs["integration"]["remarks"])


@pytest.fixture(scope="module")
def scored_log(tmp_path_factory) -> Path:
    from inspect_ai import Task
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    logs = tmp_path_factory.mktemp("inspect") / "logs"
    return run_eval(Task(dataset=samples(4), solver=generate(), scorer=match()), ["0", "2", "5", "6"], logs)


def test_a_log_rescored_by_inspect_score_append_reads_once(scored_log):
    logs = scored_log.parent
    rescored = logs / "rescored.eval"
    inspect = Path(sys.executable).with_name("inspect")
    proc = subprocess.run([str(inspect), "score", str(scored_log), "--scorer", "match", "--action", "append",
                           "--output-file", str(rescored), "--display", "none"],
                          capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0 and rescored.is_file(), proc.stdout + proc.stderr
    alone = load_inspect_log(scored_log).frame
    assert sorted(alone["judge"].unique()) == ["match"] and len(alone) == 4
    both = load_inspect_log(logs)  # the folder holds the original and inspect's re-scored copy
    f = both.frame
    assert sorted(f["judge"].unique()) == ["match", "match1"]  # inspect names the appended scorer match1
    assert len(f) == 8 and set(f["source"]) == {str(rescored)}
    m, m1 = (f[f["judge"] == j].set_index("item_id")["score"].sort_index() for j in ("match", "match1"))
    assert m.tolist() == m1.tolist() == alone.set_index("item_id")["score"].sort_index().tolist()
    note = [r for r in _remarks(both) if "logs of one eval" in r]
    assert len(note) == 1 and "read rescored.eval" in note[0] and scored_log.name in note[0]


def test_the_records_judge_is_named_in_a_note(shared_data, tmp_path):
    from biasbound.data.arena_hard import load_arena_hard
    from biasbound.data.alpaca_eval import load_alpaca_eval

    # AlpacaEval: the weighted GPT-4-turbo annotator's real annotations, in a folder named for another annotator
    src = shared_data / "alpaca_eval" / "results" / "alpaca-7b" / "weighted_alpaca_eval_gpt4_turbo" / "annotations.json"
    dst = tmp_path / "results" / "alpaca-7b" / "alpaca_eval_gpt4" / "annotations.json"
    dst.parent.mkdir(parents=True)
    shutil.copy(src, dst)
    js = load_alpaca_eval(dst.parent)
    assert set(js.frame["judge"]) == {"weighted_alpaca_eval_gpt4_turbo"}
    assert any("folder 'alpaca_eval_gpt4' name the annotator 'weighted_alpaca_eval_gpt4_turbo'" in r
               for r in _remarks(js))
    assert not any("name the annotator" in r for r in _remarks(load_alpaca_eval(src.parent)))  # names agree: no note
    # Arena-Hard: real records of the judge "ensemble" in Arena-Hard's model_judgment/<judge>/ layout under gpt-4o
    demo = Path(__file__).resolve().parents[2] / "src/biasbound/data/embedded/ko-arena-hard-v0.1/judgments_ensemble.jsonl.gz"
    with gzip.open(demo, "rt", encoding="utf-8") as fh:
        lines = [next(fh) for _ in range(20)]
    assert {json.loads(x)["judge"] for x in lines} == {"ensemble"}
    folder = tmp_path / "model_judgment" / "gpt-4o"
    folder.mkdir(parents=True)
    (folder / "some-model.jsonl").write_text("".join(lines), encoding="utf-8")
    ah = load_arena_hard(folder)
    assert set(ah.frame["judge"]) == {"ensemble"}
    assert any("20 record(s) under the judge name 'gpt-4o'" in r and "certified as 'ensemble'" in r
               for r in _remarks(ah))
    same = tmp_path / "model_judgment" / "ensemble"
    same.mkdir()
    (same / "some-model.jsonl").write_text("".join(lines), encoding="utf-8")
    assert not any("under the judge name" in r for r in _remarks(load_arena_hard(same)))

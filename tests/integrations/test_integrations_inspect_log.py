"""The inspect_ai log reader on real logs written by inspect_ai with its mock model."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from biasbound import DataFormatError, InputError
from biasbound.cli import main
from biasbound.data.inspect_log import load_inspect_log
from inspect_helpers import graded_task as _graded_task
from inspect_helpers import mock_model, run_eval, samples

pytestmark = pytest.mark.slow  # end to end: inspect_ai evals with the mock model, read back (~10 s on a loaded machine)


def test_model_graded_log_epochs_letters_and_unscored(tmp_path):
    # epoch 1 grades C, I, P, (none); epoch 2 grades C, C, P, I — inspect runs the samples of an
    # epoch in order with one mock grader, so the grades land on q0..q3 in turn
    log = run_eval(_graded_task("CIPXCCPI", epochs=2), [str(2 * i) for i in range(4)] * 2, tmp_path)
    js = load_inspect_log(log)
    f = js.frame.set_index(["item_id", "rerun"])["score"]
    assert set(js.frame["judge"]) == {"model_graded_qa(mockllm/model)"}  # the grader model from the scorer's options
    assert set(js.frame["model"]) == {"mockllm/model"}
    from inspect_ai.log import read_eval_log

    raw = {(s.id, s.epoch): s.scores["model_graded_qa"].value for s in read_eval_log(str(log)).samples}
    letters = {"C": 1.0, "P": 0.5, "I": 0.0}
    for (sid, epoch), v in raw.items():
        got = f[(sid, epoch - 1)]
        assert (math.isnan(got) and not isinstance(v, str)) or got == letters[v]
    notes = js.frame.attrs["integration"]
    assert notes["not_mapped"] == {"unscored (grader_failed): missing": 1}
    assert "C=1, P=0.5, I=0" in notes["score_rule"]
    assert js.report.missing == 1 and len(js.frame) == 8


def test_sample_errors_are_missing_and_counted(tmp_path):
    from inspect_ai.solver import generate, solver

    @solver
    def fails_on_q2():
        gen = generate()

        async def solve(state, generate_fn):
            if state.sample_id == "q2":
                raise RuntimeError("the sandbox fell over")
            return await gen(state, generate_fn)

        return solve

    js2 = load_inspect_log(run_eval(_graded_task("CCC", solver=fails_on_q2()), ["0", "2", "6"], tmp_path / "b",
                                    fail_on_error=False))
    g = js2.frame.set_index("item_id")["score"]
    assert math.isnan(g["q2"]) and g[["q0", "q1", "q3"]].tolist() == [1.0, 1.0, 1.0]
    assert js2.frame.attrs["integration"]["not_mapped"] == {"sample with an error (no score): missing": 1}


def _numeric_task(values):
    from inspect_ai import Task
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate

    table = dict(zip([f"q{i}" for i in range(len(values))], values))

    @scorer(metrics=[mean()])
    def rating():
        async def score(state, target):
            return Score(value=table[state.sample_id])

        return score

    return Task(dataset=samples(len(values)), solver=generate(), scorer=rating())


def test_numeric_scores_scale_inferred_given_and_out_of_range(tmp_path):
    log = run_eval(_numeric_task([1, 3, 4, 5]), ["a"] * 4, tmp_path, log_format="json")
    assert log.suffix == ".json"
    with pytest.raises(InputError, match="never gave more than 5"):  # 1..5 could be a 1-10 grader's low end
        load_inspect_log(tmp_path)  # the folder
    js = load_inspect_log(tmp_path, scale=(1, 5))
    f = js.frame.set_index("item_id")["score"]
    assert f.tolist() == [0.0, 0.5, 0.75, 1.0]  # given [1, 5]: (x - 1) / 4
    assert "[1, 5]" in js.frame.attrs["integration"]["score_rule"]
    g = load_inspect_log(log, scale=(0, 10)).frame.set_index("item_id")["score"]
    assert g.tolist() == [0.1, 0.3, 0.4, 0.5]
    with pytest.raises(DataFormatError) as ei:
        load_inspect_log(log, scale=(0, 4))
    assert "sample 'q3'" in str(ei.value) and "outside the scale [0, 4]" in str(ei.value) and ei.value.path == str(log)
    h = load_inspect_log(log, score_map={"1": 0, "3": 0.2, "4": 0.9, "5": 1}).frame.set_index("item_id")["score"]
    assert h.tolist() == [0.0, 0.2, 0.9, 1.0]


def test_cli_certifies_an_inspect_log_with_epochs_as_reruns(tmp_path, capsys):
    grades = "CIPCIPCI" + "CCPIIPCC"  # 8 samples x 2 epochs
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    grader = mock_model([f"GRADE: {g}" for g in grades])
    task = Task(dataset=samples(8), solver=generate(), scorer=model_graded_qa(model=grader, partial_credit=True), epochs=2)
    log = run_eval(task, [str(2 * i) for i in range(8)] * 2, tmp_path / "logs")
    code = main(["certify", str(tmp_path / "logs"), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots",
                 "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "neighbours found in the data: rerun" in out and "inspect" in out
    assert "epochs 2-2 read as reruns of epoch 1" in out
    from inspect_ai.log import read_eval_log

    letters = {"C": 1.0, "P": 0.5, "I": 0.0}
    by = {(s.id, s.epoch): letters[s.scores["model_graded_qa"].value] for s in read_eval_log(str(log)).samples}
    diffs = [by[(f"q{i}", 1)] - by[(f"q{i}", 2)] for i in range(8)]
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert cert["scope"]["generators_table"]["rerun"]["delta_star"] == pytest.approx(float(np.sqrt(np.mean(np.square(diffs)))), rel=1e-9)
    assert cert["scope"]["generators_table"]["rerun"]["m"] == 8


def test_cli_unreadable_log_and_unmappable_value_are_one_sentence_exit_2(tmp_path, capsys):
    bad = tmp_path / "broken.eval"
    bad.write_bytes(b"PK\x03\x04 this is not a zip archive")
    assert main(["certify", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "inspect_ai cannot read this log" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    log = run_eval(_numeric_task(["yes", "no", "yes"]), ["a"] * 3, tmp_path / "logs")
    assert main(["certify", str(log), "--out", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "sample 'q0' (epoch 1)" in err and "--score-map" in err and len(err.strip().splitlines()) == 1
    # the user's mapping makes the same log readable
    js = load_inspect_log(log, score_map={"yes": 1.0, "no": 0.0})
    assert js.frame.set_index("item_id")["score"].to_dict() == {"q0": 1.0, "q1": 0.0, "q2": 1.0}


def test_eval_set_log_folder_with_its_manifests(tmp_path, capsys):
    # `inspect eval-set` writes logs.json and eval-set.json beside the logs: manifests, not logs
    from inspect_ai import Task, eval_set
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    grader = mock_model([f"GRADE: {g}" for g in "CIPCCIPI"])
    task = Task(dataset=samples(4), solver=generate(), scorer=model_graded_qa(model=grader, partial_credit=True), epochs=2)
    ok, _ = eval_set(task, log_dir=str(tmp_path / "set"), model=mock_model([str(2 * i) for i in range(4)] * 2),
                     display="none")
    assert ok and (tmp_path / "set" / "logs.json").is_file() and (tmp_path / "set" / "eval-set.json").is_file()
    js = load_inspect_log(tmp_path / "set")
    assert len(js.report.sources) == 1 and js.report.sources[0].endswith(".eval") and len(js.frame) == 8
    code = main(["certify", str(tmp_path / "set"), "--out", str(tmp_path / "o"), "--no-plots", "--bootstrap-rounds", "50"])
    assert code == 0 and "neighbours found in the data: rerun" in capsys.readouterr().out

"""The biasbound.inspect scorer wrapper: real inspect_ai runs with the mock model, read back by certify.

Acceptance: ``biasbound certify LOG --holdout 0`` reports, per generator, the Δ* the wrapper's
metric recorded in the same log (both computed from the raw grades; the test also recomputes
them from the log's Score metadata by hand).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from biasbound import InputError
from biasbound.cli import main
from inspect_helpers import mock_model, run_eval

pytestmark = pytest.mark.slow  # end to end: inspect_ai evals with the mock model, read back by certify (~10 s on a loaded machine)

LETTER = {"C": 1.0, "P": 0.5, "I": 0.0}
ANSWER = "**Yes**, this is *right*.\n\n- first point\n- second point"


def _samples(n):
    from inspect_ai.dataset import Sample

    return [Sample(id=f"q{i}", input=f"Explain item {i}.", target="a clear explanation") for i in range(n)]


def _task(grades, n=6, **kw):
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded

    grader = mock_model([f"GRADE: {g}" for g in grades])
    return Task(dataset=_samples(n), solver=generate(),
                scorer=bias_bounded(model_graded_qa(model=grader, partial_credit=True), **kw))


def _by_hand(log_path):
    """Per generator, RMS of (original - neighbour) from the Score metadata of a log."""
    from inspect_ai.log import read_eval_log

    diffs: dict[str, list[float]] = {}
    for s in read_eval_log(str(log_path)).samples:
        sc = s.scores["bias_bounded"]
        for nb in sc.metadata["biasbound"]["neighbors"]:
            if nb["status"] == "applied" and nb["value"] is not None:
                diffs.setdefault(nb["generator"], []).append(LETTER[sc.value] - LETTER[nb["value"]])
    return {g: float(np.sqrt(np.mean(np.square(d)))) for g, d in diffs.items()}, {g: len(d) for g, d in diffs.items()}


def test_wrapper_log_certifies_with_the_recorded_sensitivities(tmp_path, capsys):
    # 6 samples x (original, format, rerun) = 18 grades, consumed in call order
    log = run_eval(_task("CICPCCIPCCCIPPCICC", generators=["format", "rerun"]), [ANSWER] * 6, tmp_path / "logs")
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    assert ev.status == "success"
    metrics = {k: m.value for es in ev.results.scores for k, m in es.metrics.items()}
    hand, counts = _by_hand(log)
    assert set(hand) == {"format", "rerun"} and counts == {"format": 6, "rerun": 6}
    for g in ("format", "rerun"):
        assert metrics[g] == pytest.approx(hand[g], rel=1e-12) and metrics[f"m_{g}"] == counts[g]
    assert metrics["format"] > 0 and metrics["rerun"] > 0  # the grades differ: the comparison below is not 0 == 0
    meta = ev.samples[0].scores["bias_bounded"].metadata["biasbound"]
    assert meta["judge"] == "model_graded_qa(mockllm/model)" and meta["epoch"] == 1
    assert meta["neighbors"][0]["changed"].startswith("formatting:")

    code = main(["certify", str(log), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots", "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0 and "neighbours found in the data: variant:format,rerun" in out
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert cert["scope"]["judge"] == "model_graded_qa(mockllm/model)"
    assert cert["scope"]["generators_table"]["variant:format"]["delta_star"] == pytest.approx(metrics["format"], rel=1e-12)
    assert cert["scope"]["generators_table"]["rerun"]["delta_star"] == pytest.approx(metrics["rerun"], rel=1e-12)
    assert cert["scope"]["generators_table"]["variant:format"]["m"] == 6 and cert["scope"]["generators_table"]["rerun"]["m"] == 6


def test_paraphrase_agreeable_and_schematic_through_inspect_models(tmp_path):
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded, rubric_instructions
    from biasbound.rubric import default_rubric

    grader = mock_model([f"GRADE: {g}" for g in "CPCICCPC" * 3])
    paraphrase = "<<<RESPONSE\n**Yes**, this is *correct*.\n\n- first point\n- second point\nRESPONSE>>>"
    planted = ("<<<RESPONSE\n**Yes**, this is *wrong*.\n\n- first point\n- second point\nRESPONSE>>>\n"
               "<<<INSERTED\n'right' changed to 'wrong'\nINSERTED>>>")
    rewriter = mock_model([paraphrase, planted] * 4)  # per sample (one at a time): the paraphrase, then the planted error
    seen: list[str] = []

    def rubric_scorer(rubric):
        seen.append(rubric_instructions(rubric))
        return model_graded_qa(instructions=rubric_instructions(rubric) + "\nEnd with 'GRADE: $LETTER' (C, P or I).",
                               model=grader, partial_credit=True)

    base = default_rubric("single")
    task = Task(dataset=_samples(4), solver=generate(),
                scorer=bias_bounded(rubric_scorer(base), generators=["paraphrase", "agreeable", "schematic"], rubric=base,
                                    rubric_scorer=rubric_scorer, rewriter=rewriter))
    log = run_eval(task, [ANSWER] * 4, tmp_path / "logs", max_samples=1)
    from inspect_ai.log import read_eval_log

    for s in read_eval_log(str(log)).samples:
        nbs = {nb["generator"]: nb for nb in s.scores["bias_bounded"].metadata["biasbound"]["neighbors"]}
        assert nbs["paraphrase"]["status"] == "applied" and nbs["paraphrase"]["value"] in LETTER
        assert nbs["agreeable"]["status"] == "applied" and nbs["agreeable"]["changed"].startswith("inserted error")
        assert nbs["schematic"]["status"] == "applied" and nbs["schematic"]["changed"].startswith("schematic:")
    assert len(seen) == 1 + 4 and all(t != seen[0] for t in seen[1:])  # each schematic neighbour graded under a changed rubric
    assert main(["certify", str(log), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots",
                 "--bootstrap-rounds", "50"]) == 0
    gens = json.loads((tmp_path / "o" / "certificate.json").read_text())["scope"]["generators_table"]
    assert set(gens) == {"variant:paraphrase", "variant:agreeable", "variant:schematic"}


def test_inspect_score_over_an_existing_log(tmp_path):
    from inspect_ai import Task, score
    from inspect_ai.log import write_eval_log
    from inspect_ai.scorer import match
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded

    first = run_eval(Task(dataset=_samples(5), solver=generate(), scorer=match()), [ANSWER] * 5, tmp_path / "a")
    from inspect_ai.log import read_eval_log

    grader = mock_model([f"GRADE: {g}" for g in "CIPCCCPICIPCCCI"])
    rescored = score(read_eval_log(str(first)), bias_bounded(model_graded_qa(model=grader, partial_credit=True),
                                                            generators=["format", "rerun"]), action="overwrite",
                     display="none")
    out = tmp_path / "b" / "rescored.eval"
    out.parent.mkdir()
    write_eval_log(rescored, str(out))
    metrics = {k: m.value for r in rescored.results.scores if r.name == "bias_bounded" for k, m in r.metrics.items()}
    assert main(["certify", str(out), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots",
                 "--bootstrap-rounds", "50"]) == 0
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert cert["scope"]["judge"] == "model_graded_qa(mockllm/model)"
    assert cert["scope"]["generators_table"]["variant:format"]["delta_star"] == pytest.approx(metrics["format"], rel=1e-12)


def test_wrapper_argument_errors():
    from inspect_ai.scorer import model_graded_qa

    from biasbound.inspect import bias_bounded

    grader = mock_model(["GRADE: C"])
    with pytest.raises(InputError, match="'generators' parameter of bias_bounded"):
        bias_bounded(model_graded_qa(model=grader), generators=["swap"])
    with pytest.raises(InputError, match="'rubric_scorer' parameter"):
        bias_bounded(model_graded_qa(model=grader), generators=["schematic"])
    with pytest.raises(InputError, match="'rewriter' parameter"):
        bias_bounded(model_graded_qa(model=grader), generators=["paraphrase"])


def test_the_shipped_example_task_runs_and_certifies(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "inspect_bias_bounded.py"
    spec = importlib.util.spec_from_file_location("inspect_bias_bounded_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    grader = mock_model([f"GRADE: {g}" for g in "CPCICCPIC" + "CCIP"])
    log = run_eval(module.explain(grader=grader), ["# Answer\n\n**Short** answer with *emphasis*.\n\n- a\n- b"] * 4,
                   tmp_path / "logs")
    assert main(["certify", str(log), "--out", str(tmp_path / "o"), "--no-plots", "--bootstrap-rounds", "50",
                 "--holdout", "0"]) == 0
    assert set(json.loads((tmp_path / "o" / "certificate.json").read_text())["scope"]["generators_table"]) == {"variant:format", "rerun"}


def test_epochs_and_wrapper_reruns_pool_into_one_rerun_generator(tmp_path):
    # 5 samples x 2 epochs x (original + rerun) = 20 grades; epoch 2 is a rerun of epoch 1 too
    log = run_eval(_task("CIPCCIICPPCCICPCIPCC", n=5, generators=["rerun"], ), [ANSWER] * 10, tmp_path / "logs",
                   epochs=2)
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    metrics = {k: m.value for es in ev.results.scores for k, m in es.metrics.items()}
    by = {}
    for s in ev.samples:
        sc = s.scores["bias_bounded"]
        by[(s.id, s.epoch)] = (LETTER[sc.value], [LETTER[nb["value"]] for nb in sc.metadata["biasbound"]["neighbors"]])
    diffs = []
    for i in range(5):
        first, reruns = by[(f"q{i}", 1)]
        diffs += [first - by[(f"q{i}", 2)][0]] + [first - r for r in reruns]  # epoch 2, then the wrapper's rerun of epoch 1
    assert metrics["m_rerun"] == len(diffs) == 10
    assert metrics["rerun"] == pytest.approx(float(np.sqrt(np.mean(np.square(diffs)))), rel=1e-12) and metrics["rerun"] > 0
    assert main(["certify", str(log), "--out", str(tmp_path / "o"), "--holdout", "0", "--no-plots",
                 "--bootstrap-rounds", "50"]) == 0
    cert = json.loads((tmp_path / "o" / "certificate.json").read_text())
    assert cert["scope"]["generators_table"]["rerun"]["delta_star"] == pytest.approx(metrics["rerun"], rel=1e-12)
    assert cert["scope"]["generators_table"]["rerun"]["m"] == 10


def test_neighbor_state_is_a_copy_the_original_state_is_untouched():
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.solver import TaskState

    from biasbound.integrations.inspect_scorer import _with_answer

    state = TaskState(model="mockllm/model", sample_id="q0", epoch=1, input="question?",
                      messages=[ChatMessageUser(content="question?"), ChatMessageAssistant(content="old answer")])
    state.output = ModelOutput.from_content("mockllm/model", "old answer")
    new = _with_answer(state, "new answer")
    assert new.output.completion == "new answer" and new.messages[-1].text == "new answer"
    assert state.output.completion == "old answer" and state.messages[-1].text == "old answer"
    assert new.input_text == "question?" and new.sample_id == "q0"


def test_failed_rewrites_and_unscored_neighbor_grades_are_counted_never_scored(tmp_path):
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.data.inspect_log import load_inspect_log
    from biasbound.inspect import bias_bounded

    # 3 samples, one at a time: each original graded C, its format neighbour's grade cannot be parsed
    grader = mock_model(["GRADE: C", "no grade"] * 3)
    rewriter = mock_model(["I will not rewrite this."] * 9)  # no <<<RESPONSE block: every attempt rejected
    task = Task(dataset=_samples(3), solver=generate(),
                scorer=bias_bounded(model_graded_qa(model=grader, partial_credit=True), generators=["paraphrase", "format"],
                                    rewriter=rewriter, options={"paraphrase": {"max_attempts": 3}}))
    inspect_eval_kw = {"max_samples": 1}  # one sample at a time: the grader's outputs land in the order written
    log = run_eval(task, [ANSWER] * 3, tmp_path / "logs", **inspect_eval_kw)
    from inspect_ai.log import read_eval_log

    for s in read_eval_log(str(log)).samples:
        nbs = {nb["generator"]: nb for nb in s.scores["bias_bounded"].metadata["biasbound"]["neighbors"]}
        assert nbs["paraphrase"]["status"] == "failed" and "value" not in nbs["paraphrase"]
        assert nbs["format"]["status"] == "applied" and nbs["format"]["value"] is None and nbs["format"]["reason"]
    js = load_inspect_log(log)
    counts = js.frame.attrs["integration"]["not_mapped"]
    assert counts["paraphrase neighbour failed (no perturbed item to judge): not a neighbour"] == 3
    assert sum(v for k, v in counts.items() if k.startswith("format neighbour unscored")) == 3
    f = js.frame
    assert f.loc[f["variant"] == "format", "score"].isna().all() and (f["variant"] != "paraphrase").all()


def test_default_certify_prints_the_recorded_sensitivities(tmp_path, capsys):
    # with the default hold-out the certificate estimates on its calibration share; the line printed
    # before it is over every neighbour, as the wrapper's metric
    log = run_eval(_task("CICPCCIPCCCIPPCICC", generators=["format", "rerun"]), [ANSWER] * 6, tmp_path / "logs")
    from inspect_ai.log import read_eval_log

    from biasbound.commands.certify import observed_sensitivity
    from biasbound.data.loading import load_inputs

    metrics = {k: m.value for es in read_eval_log(str(log)).results.scores for k, m in es.metrics.items()}
    table = observed_sensitivity(load_inputs([log]).frame, ["variant:format", "rerun"]).set_index("generator")
    assert table.loc["variant:format", "delta_star"] == pytest.approx(metrics["format"], rel=1e-12)
    assert table.loc["rerun", "delta_star"] == pytest.approx(metrics["rerun"], rel=1e-12)
    assert table.loc["rerun", "m"] == metrics["m_rerun"] == 6
    code = main(["certify", str(log), "--out", str(tmp_path / "o"), "--no-plots", "--bootstrap-rounds", "50"])
    out = capsys.readouterr().out
    assert code == 0
    assert (f"judge model_graded_qa(mockllm/model): Δ* over every observed neighbour (no hold-out): "
            f"variant:format {metrics['format']:.4g} (m=6), rerun {metrics['rerun']:.4g} (m=6)") in out


def test_a_grader_whose_every_grade_failed_is_refused_in_one_sentence(tmp_path):
    """Found: a grader none of whose grades parsed ran to the end and exited 0; now the eval stops on the 5th
    sample naming the cause (the openai-api/ route for local servers, the grade pattern)."""
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded

    grader = mock_model(["I think it is fine."] * 40)
    task = Task(dataset=_samples(6), solver=generate(),
                scorer=bias_bounded(model_graded_qa(model=grader, partial_credit=True), generators=["format"]))
    log = run_eval(task, [ANSWER] * 6, tmp_path / "logs", max_samples=1)
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    assert ev.status == "error"
    assert "every one of the 5 grades of model_graded_qa so far failed" in str(ev.error.message)
    assert "openai-api/<name>/<model>" in str(ev.error.message)

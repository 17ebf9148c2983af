"""The inspect integration as an inspect user expects it (issue 16, item 4).

Real inspect_ai runs with the mock model (no network): a 1-10 grader, the wrapped scorer's own
metrics kept, no grader call spent on neighbours never read, a grade off the scale stops the eval,
inspect's own metrics beside the certified column, judge names from the log.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from biasbound import InputError
from biasbound.cli import main
from biasbound.data.inspect_log import load_inspect_log
from inspect_helpers import mock_model, run_eval

pytestmark = pytest.mark.slow  # end to end: inspect_ai evals with the mock model (~6 s on a loaded machine)

ANSWER = "**Yes**, this is *right*.\n\n- first point\n- second point"


def _samples(n):
    from inspect_ai.dataset import Sample

    return [Sample(id=f"q{i}", input=f"Explain item {i}.", target="a clear explanation") for i in range(n)]


def _rating_task(grades, n, **kw):
    """A model-graded 1-10 scorer (the grader's text parsed to a number), wrapped by bias_bounded."""
    from inspect_ai import Task
    from inspect_ai.scorer import Score, mean, scorer, stderr
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded

    grader = mock_model([f"RATING: {g}" for g in grades])

    @scorer(metrics=[mean(), stderr()])
    def rating():
        async def score(state, target):
            out = await grader.generate(f"Rate 1-10: {state.output.completion}")
            return Score(value=float(out.completion.split(":")[1]))

        return score

    return Task(dataset=_samples(n), solver=generate(), scorer=bias_bounded(rating(), **kw))


def metrics_of(log):
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    return ev, {k: m.value for es in ev.results.scores for k, m in es.metrics.items()}


def test_a_1_to_10_grader_with_its_scale_runs_every_sample_and_keeps_its_metrics(tmp_path, capsys):
    grades = [1 + (7 * i) % 10 for i in range(40)]  # 20 samples x (original, format)
    log = run_eval(_rating_task(grades, 20, generators=["format"], scale=(1, 10)), [ANSWER] * 20, tmp_path / "logs")
    ev, m = metrics_of(log)
    assert ev.status == "success" and len(ev.samples) == 20
    assert "mean" in m and "stderr" in m and "format" in m  # the wrapped scorer's metrics are kept
    originals = [s.scores["bias_bounded"].value for s in ev.samples]
    assert m["mean"] == pytest.approx(sum(originals) / 20)
    # the metric's Δ* is on [0, 1] by the declared scale, as the reader maps it
    js = load_inspect_log(log)
    assert "declared by bias_bounded(scale=...)" in js.frame.attrs["integration"]["score_rule"]
    f = js.frame
    orig = f[f["variant"] == "original"].set_index("item_id")["score"]
    nb = f[f["variant"] == "format"].set_index("item_id")["score"]
    d = (orig - nb.reindex(orig.index)).dropna()
    assert m["format"] == pytest.approx(math.sqrt((d**2).mean()), rel=1e-12)
    assert orig.between(0, 1).all()
    # inspect's own metric is shown beside the certified column
    out = tmp_path / "o"
    assert main(["certify", str(log), "--out", str(out), "--no-plots", "--no-progress", "--bootstrap-rounds", "50"]) == 0
    text = capsys.readouterr().out
    assert "native number: inspect_mean" in " ".join(text.split())
    lb = pd.read_csv(out / "leaderboard.csv")
    assert lb["inspect_mean"].iloc[0] == pytest.approx(m["mean"])


def test_a_grade_off_the_scale_stops_the_eval_in_one_sentence(tmp_path):
    grades = [7] * 40
    log = run_eval(_rating_task(grades, 20, generators=["format"]), [ANSWER] * 20, tmp_path / "logs")
    from inspect_ai.log import read_eval_log

    ev = read_eval_log(str(log))
    assert ev.status == "error"  # not a success with a broken metric
    assert "outside the scale [0, 1]" in ev.error.message and "scale=(lo, hi)" in ev.error.message
    with pytest.raises(InputError, match="must be a pair"):
        _rating_task(grades, 2, generators=["format"], scale=(10, 1))


def test_epochs_spend_no_grader_call_on_neighbors_never_read_and_inspect_accuracy_is_shown(tmp_path, capsys):
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    from biasbound.inspect import bias_bounded

    n, epochs = 6, 2
    grades = "CIPCCIICPPCCICPCIPCCCCIP"
    grader = mock_model([f"GRADE: {g}" for g in grades])
    task = Task(dataset=_samples(n), solver=generate(),
                scorer=bias_bounded(model_graded_qa(model=grader, partial_credit=True), generators=["rerun"]))
    log = run_eval(task, [ANSWER] * (n * epochs), tmp_path / "logs", epochs=epochs)
    ev, m = metrics_of(log)
    assert ev.status == "success"
    for s in ev.samples:
        nbs = s.scores["bias_bounded"].metadata["biasbound"]["neighbors"]
        assert len(nbs) == (1 if s.epoch == 1 else 0)
    # every call is 10 input tokens (inspect_helpers): solver n*epochs + grader n*epochs + one rerun per sample of epoch 1
    calls = sum(u.input_tokens for u in ev.stats.model_usage.values()) // 10
    assert calls == n * epochs + n * epochs + n
    assert "accuracy" in m
    out = tmp_path / "o"
    assert main(["certify", str(log), "--out", str(out), "--no-plots", "--no-progress", "--bootstrap-rounds", "50"]) == 0
    lb = pd.read_csv(out / "leaderboard.csv")
    # inspect's accuracy (both epochs, reduced by mean) beside biasbound's epoch-1 'original'
    assert lb["inspect_accuracy"].iloc[0] == pytest.approx(m["accuracy"])
    text = " ".join(capsys.readouterr().out.split())
    assert "reducer" in text and "inspect_accuracy" in text


def test_appended_scorer_without_a_grader_is_named_without_nan(tmp_path):
    # one scorer with a grader model, one appended by `inspect score --action append` without: the grader column
    # mixes a name and nothing (pandas reads the nothing as NaN), which must add nothing to the second's name
    from inspect_ai import Task, score
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.scorer import match, model_graded_qa
    from inspect_ai.solver import generate

    grader = mock_model([f"GRADE: {g}" for g in "CICI"])
    first = run_eval(Task(dataset=_samples(4), solver=generate(), scorer=model_graded_qa(model=grader)),
                     [ANSWER] * 4, tmp_path / "a")
    appended = score(read_eval_log(str(first)), match(), action="append", display="none")
    out = tmp_path / "b" / "appended.eval"
    out.parent.mkdir()
    write_eval_log(appended, str(out))
    js = load_inspect_log(out)
    judges = set(js.frame["judge"])
    assert judges == {"model_graded_qa(mockllm/model)", "match"}, judges

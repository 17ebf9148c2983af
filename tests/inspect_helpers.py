"""Real inspect_ai logs for the tests, written by inspect_ai's built-in mock model (no network).

Every mock output carries its own ``usage`` so inspect never counts tokens with tiktoken (which
would download an encoding).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def mock_output(text: str) -> Any:
    """A ``ModelOutput`` of the mock model with its own usage."""
    from inspect_ai.model import ModelOutput, ModelUsage

    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    return out


def mock_model(texts: Sequence[str]) -> Any:
    """``mockllm/model`` answering ``texts`` in order."""
    from inspect_ai.model import get_model

    return get_model("mockllm/model", custom_outputs=[mock_output(t) for t in texts])


def samples(n: int) -> list[Any]:
    """``n`` arithmetic samples ``q0 .. q{n-1}``."""
    from inspect_ai.dataset import Sample

    return [Sample(id=f"q{i}", input=f"What is {i} + {i}?", target=str(2 * i)) for i in range(n)]


def run_eval(task: Any, answers: Sequence[str], log_dir: Path, *, log_format: str = "eval", **kw: Any) -> Path:
    """Run ``task`` with the mock model answering ``answers``; return the log file written."""
    from inspect_ai import eval as inspect_eval

    logs = inspect_eval(task, model=mock_model(answers), log_dir=str(log_dir), log_format=log_format, display="none", **kw)
    (log,) = logs
    return Path(log.location)


def graded_task(grades, *, epochs=1, solver=None):
    """A model-graded task whose mock grader answers ``grades`` in turn (C/P/I; anything else unparseable)."""
    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    grader = mock_model([f"GRADE: {g}" if g in "CPI" else "no grade here" for g in grades])
    return Task(dataset=samples(4), solver=solver or generate(), scorer=model_graded_qa(model=grader, partial_credit=True),
                epochs=epochs)

"""An inspect_ai task whose model-graded scores biasbound can certify.

    pip install 'biasbound[inspect]'
    inspect eval examples/inspect_bias_bounded.py --model openai/gpt-4o-mini -T grader=openai/gpt-4o
    biasbound certify logs/ --out cert

The scorer grades every sample as ``model_graded_qa`` does and also grades two neighbours per
sample: the answer's markdown reformatted (``format``) and the same grading asked again
(``rerun``). ``biasbound certify`` reads them from the log (``--generators auto``).
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import model_graded_qa
from inspect_ai.solver import generate

from biasbound.inspect import bias_bounded

QUESTIONS = [
    ("Explain in a few sentences why the sky is blue.", "Rayleigh scattering: shorter wavelengths scatter more."),
    ("Give three tips for writing readable Python.", "Any three sound tips, e.g. naming, small functions, tests."),
    ("What is the difference between a list and a tuple in Python?", "Lists are mutable, tuples are immutable."),
    ("Summarise the causes of the French Revolution.", "Fiscal crisis, inequality, Enlightenment ideas, bread prices."),
]


@task
def explain(grader: Any = None, generators: str = "format,rerun") -> Task:
    """Open questions graded by ``grader`` (an inspect model name or Model; default: the grader role or the task model)."""
    return Task(
        dataset=[Sample(id=f"q{i}", input=q, target=t) for i, (q, t) in enumerate(QUESTIONS)],
        solver=generate(),
        scorer=bias_bounded(model_graded_qa(model=grader, partial_credit=True), generators=generators.split(",")),
    )

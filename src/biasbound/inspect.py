"""biasbound inside inspect_ai: the :func:`bias_bounded` scorer wrapper and its metric.

Needs the optional extra: ``pip install 'biasbound[inspect]'``. Example::

    from inspect_ai import Task
    from inspect_ai.scorer import model_graded_qa
    from biasbound.inspect import bias_bounded

    Task(dataset=..., solver=...,
         scorer=bias_bounded(model_graded_qa(model="openai/gpt-4o"), generators=["format", "rerun"]))

then ``inspect eval task.py`` writes a log that ``biasbound certify LOG`` certifies.
"""

from __future__ import annotations

from biasbound.integrations.inspect_scorer import GENERATORS, bias_bounded, neighbor_sensitivity, rubric_instructions

__all__ = ["GENERATORS", "bias_bounded", "neighbor_sensitivity", "rubric_instructions"]

"""Testing tools: a synthetic judge with known biases, as a pure formula and as an HTTP server.

Use these to test judge pipelines (this package's and your own) against a judge whose
biases -- position, markdown, length, missed errors, rubric order, rerun jitter -- are
known terms of a formula, so the true sensitivity to any perturbation can be computed
exactly. See :mod:`biasbound.testing.synthetic` (the formula) and
:mod:`biasbound.testing.server` (the OpenAI-compatible server).
"""

from __future__ import annotations

from biasbound.testing.card import assert_judge_card
from biasbound.testing.regression import assert_no_regression
from biasbound.testing.server import FAULT_KINDS, RunningServer, SyntheticServerConfig, run_server, serve_in_thread
from biasbound.testing.synthetic import (
    ERROR_SENTENCES,
    SYNONYMS,
    SyntheticJudge,
    SyntheticJudgeConfig,
    canonical_tokens,
    count_markdown,
    find_inserted_error,
    fingerprint,
)

__all__ = [
    "ERROR_SENTENCES",
    "FAULT_KINDS",
    "SYNONYMS",
    "RunningServer",
    "SyntheticJudge",
    "SyntheticJudgeConfig",
    "SyntheticServerConfig",
    "assert_judge_card",
    "assert_no_regression",
    "canonical_tokens",
    "count_markdown",
    "find_inserted_error",
    "fingerprint",
    "run_server",
    "serve_in_thread",
]

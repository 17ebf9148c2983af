"""Judge prompts: the rubric record and the Jinja templates that render chat messages.

Two judging protocols (see ``docs/DESIGN.md``, "Judge protocol"):

* ``judge-pairwise`` -- Arena-Hard style comparison of a model answer with a baseline
  answer, played in both orders (game 1: baseline = A; game 2: model = A), with one
  verdict line per rubric factor and ``My final verdict is: [[A>B]]``.
* ``judge-single`` -- one answer graded 1-10 with factor lines ``Helpfulness: 7`` and
  ``Rating: [[7]]``.

The rubric (factor names, their order and one emphasis sentence each) is a template
variable, so a schematic neighbour changes the rubric and nothing else. The rubric type
lives in :mod:`biasbound.rubric` (shared with the neighbour generators) and is
re-exported here. Every system
message starts with the line ``biasbound-task: <task>``. :data:`TEMPLATE_VERSION` goes
into every cache key: bump it whenever a template's wording changes.
"""

from __future__ import annotations

from functools import lru_cache
from types import SimpleNamespace

import jinja2

from biasbound._exceptions import InputError
from biasbound.rubric import PAIRWISE_FACTORS, SINGLE_FACTORS, Rubric, RubricFactor, default_rubric

__all__ = [
    "PAIRWISE_FACTORS",
    "SINGLE_FACTORS",
    "TEMPLATE_VERSION",
    "Rubric",
    "RubricFactor",
    "default_rubric",
    "pairwise_games",
    "render_pairwise",
    "render_single",
]

TEMPLATE_VERSION = "biasbound-judge-templates-1"

@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("biasbound.judge", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=False,
        trim_blocks=False,
    )


def _render(name: str, **variables: object) -> str:
    return _environment().get_template(name).render(**variables).strip("\n")


def _check_text(value: object, name: str, where: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"The {name!r} parameter of {where} must be a str. Got {type(value).__name__} instead.")
    return value


def _check_rubric(rubric: Rubric | None, kind: str, where: str) -> SimpleNamespace:
    """The template view of a rubric: ``factors`` as RubricFactor objects (name, title, emphasis)."""
    if rubric is None:
        rubric = default_rubric(kind)
    if not isinstance(rubric, Rubric) or rubric.kind not in (None, kind):
        raise InputError(f"The 'rubric' parameter of {where} must be a {kind!r} Rubric (or one without a kind). "
                         f"Got {rubric!r} instead.")
    return SimpleNamespace(factors=rubric.entries)


def render_pairwise(question: str, answer_a: str, answer_b: str, *, rubric: Rubric | None = None) -> list[dict[str, str]]:
    """Render the chat messages for one pairwise game.

    Parameters
    ----------
    question:
        The user prompt.
    answer_a, answer_b:
        The answers shown as Assistant A and Assistant B.
    rubric:
        A ``"pairwise"`` rubric; ``None`` uses :func:`default_rubric`.

    Returns
    -------
    list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]``; the system message starts with
        ``biasbound-task: judge-pairwise``.
    """
    where = "render_pairwise"
    rubric = _check_rubric(rubric, "pairwise", where)
    system = _render("pairwise_system.jinja", rubric=rubric)
    user = _render(
        "pairwise_user.jinja",
        question=_check_text(question, "question", where),
        answer_a=_check_text(answer_a, "answer_a", where),
        answer_b=_check_text(answer_b, "answer_b", where),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def render_single(question: str, answer: str, *, rubric: Rubric | None = None) -> list[dict[str, str]]:
    """Render the chat messages for grading one answer 1-10.

    Parameters
    ----------
    question:
        The user prompt.
    answer:
        The answer to grade.
    rubric:
        A ``"single"`` rubric; ``None`` uses :func:`default_rubric`.

    Returns
    -------
    list of dict
        System and user messages; the system message starts with ``biasbound-task: judge-single``.
    """
    where = "render_single"
    rubric = _check_rubric(rubric, "single", where)
    system = _render("single_system.jinja", rubric=rubric)
    user = _render(
        "single_user.jinja",
        question=_check_text(question, "question", where),
        answer=_check_text(answer, "answer", where),
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def pairwise_games(
    question: str, answer: str, baseline: str, *, rubric: Rubric | None = None
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Render both Arena-Hard games for a model answer against a baseline answer.

    Returns
    -------
    (game1, game2)
        Game 1 shows the baseline as Assistant A and the model as B; game 2 swaps them.
        A verdict in game 1 is therefore from the baseline's view and must be flipped to
        get the model's view; in game 2 it is already the model's view.
    """
    return (
        render_pairwise(question, baseline, answer, rubric=rubric),
        render_pairwise(question, answer, baseline, rubric=rubric),
    )

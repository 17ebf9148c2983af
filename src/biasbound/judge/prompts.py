"""Judge prompts: the rubric record and the Jinja templates that render chat messages.

Two judging protocols (see ``docs/DESIGN.md``, "Judge protocol"):

* ``judge-pairwise`` -- Arena-Hard style comparison of a model answer with a baseline
  answer, played in both orders (game 1: baseline = A; game 2: model = A), with one
  verdict line per rubric factor and ``My final verdict is: [[A>B]]``.
* ``judge-single`` -- one answer graded 1-10 with factor lines ``Helpfulness: 7`` and
  ``Rating: [[7]]``.

The rubric (factor names, their order and one emphasis sentence each) is a template
variable, so a schematic neighbour changes the rubric and nothing else. Every system
message starts with the line ``biasbound-task: <task>``. :data:`TEMPLATE_VERSION` goes
into every cache key: bump it whenever a template's wording changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import jinja2

from biasbound._exceptions import InputError
from biasbound._validation import check_one_of

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

PAIRWISE_FACTORS: tuple[str, ...] = ("correctness", "completeness", "safety", "conciseness", "style")
SINGLE_FACTORS: tuple[str, ...] = ("helpfulness", "relevance", "accuracy", "depth", "creativity", "detail")

_DEFAULT_EMPHASIS: dict[str, str] = {
    "correctness": "Facts, code and reasoning must be accurate; any error counts heavily against an answer.",
    "completeness": "The answer should contain everything the intended audience needs to act on it.",
    "safety": "The answer must not advise anything harmful, illegal or dangerous; refusing such parts is correct.",
    "conciseness": "Prefer answers without rambling, padding or needless repetition.",
    "style": "Prefer clear, varied, well-organised writing with a tone that suits the request.",
    "helpfulness": "How far the answer actually solves the user's problem.",
    "relevance": "Whether every part of the answer addresses the question that was asked.",
    "accuracy": "Whether the facts, numbers and reasoning are correct.",
    "depth": "Whether the answer explains the why, not only the what.",
    "creativity": "Whether the answer brings a useful idea or angle beyond the obvious.",
    "detail": "Whether the answer gives the specifics (steps, values, examples) the user needs.",
}

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


@dataclass(frozen=True)
class RubricFactor:
    """One rubric factor: a lower-case identifier and the sentence that tells the judge what it means.

    Parameters
    ----------
    name:
        Identifier such as ``"correctness"`` (lower case letters, digits, ``_``).
    emphasis:
        One sentence shown to the judge next to the factor.
    """

    name: str
    emphasis: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):
            raise InputError(
                "The 'name' parameter of RubricFactor must be a lower-case identifier like 'correctness'. "
                f"Got {self.name!r} instead."
            )
        if not isinstance(self.emphasis, str) or not self.emphasis.strip() or "\n" in self.emphasis:
            raise InputError(
                f"The 'emphasis' parameter of RubricFactor must be one non-empty line of text. Got {self.emphasis!r} instead."
            )

    @property
    def title(self) -> str:
        """The factor as the judge writes it on a verdict line (``"Correctness"``)."""
        return self.name.replace("_", " ").capitalize()


@dataclass(frozen=True)
class Rubric:
    """An ordered tuple of rubric factors for one judging protocol.

    Parameters
    ----------
    kind:
        ``"pairwise"`` or ``"single"``.
    factors:
        The factors in the order the judge sees them (at least one, names unique).
    """

    kind: str
    factors: tuple[RubricFactor, ...]

    def __post_init__(self) -> None:
        check_one_of(self.kind, "kind", "Rubric", ("pairwise", "single"))
        factors = tuple(self.factors)
        if not factors or not all(isinstance(f, RubricFactor) for f in factors):
            raise InputError("The 'factors' parameter of Rubric must be a non-empty sequence of RubricFactor. Got "
                             f"{self.factors!r} instead.")
        names = [f.name for f in factors]
        if len(set(names)) != len(names):
            raise InputError(f"The 'factors' parameter of Rubric must have unique names. Got {names} instead.")
        object.__setattr__(self, "factors", factors)

    @property
    def names(self) -> tuple[str, ...]:
        """Factor names in rubric order."""
        return tuple(f.name for f in self.factors)

    def reordered(self, names: tuple[str, ...] | list[str]) -> Rubric:
        """Return the same factors in the order given by ``names`` (a permutation of :attr:`names`)."""
        if sorted(names) != sorted(self.names):
            raise InputError(
                f"The 'names' parameter of Rubric.reordered must be a permutation of {list(self.names)}. Got {list(names)} instead."
            )
        by_name = {f.name: f for f in self.factors}
        return Rubric(self.kind, tuple(by_name[n] for n in names))

    def to_dict(self) -> dict:
        """A JSON-ready form (used in cache keys and outputs)."""
        return {"kind": self.kind, "factors": [{"name": f.name, "emphasis": f.emphasis} for f in self.factors]}


def default_rubric(kind: str) -> Rubric:
    """Return the default rubric for ``kind`` (``"pairwise"`` or ``"single"``).

    Pairwise factors: correctness, completeness, safety, conciseness, style.
    Single-answer factors: helpfulness, relevance, accuracy, depth, creativity, detail.
    """
    check_one_of(kind, "kind", "default_rubric", ("pairwise", "single"))
    names = PAIRWISE_FACTORS if kind == "pairwise" else SINGLE_FACTORS
    return Rubric(kind, tuple(RubricFactor(n, _DEFAULT_EMPHASIS[n]) for n in names))


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


def _check_rubric(rubric: Rubric | None, kind: str, where: str) -> Rubric:
    if rubric is None:
        return default_rubric(kind)
    if not isinstance(rubric, Rubric) or rubric.kind != kind:
        raise InputError(f"The 'rubric' parameter of {where} must be a {kind!r} Rubric. Got {rubric!r} instead.")
    return rubric


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

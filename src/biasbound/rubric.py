"""The judge's rubric: one type shared by the judge templates and the neighbour generators.

A :class:`Rubric` is an ordered tuple of factor names, one emphasis sentence per factor and
an optional protocol ``kind`` (``"pairwise"`` or ``"single"``). The judge templates
(:mod:`biasbound.judge.prompts`) render it; the ``schematic`` neighbour generator
(:mod:`biasbound.neighbors.schematic`) reorders or rewords it -- the same object flows from
the generator into the judge prompt, so a schematic neighbour changes the rubric and
nothing else.

This module imports only the standard library and :mod:`biasbound._validation`: the
neighbour generators import it without pulling in Jinja or the HTTP client.

Two construction forms are accepted (both older APIs keep working)::

    Rubric(("correctness", "style"), {"correctness": "...", "style": "..."})      # names + emphasis
    Rubric("pairwise", (RubricFactor("correctness", "..."), RubricFactor(...)))  # kind + factors
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from biasbound._exceptions import InputError
from biasbound._validation import check_one_of

__all__ = [
    "KINDS",
    "PAIRWISE_FACTORS",
    "SINGLE_FACTORS",
    "Rubric",
    "RubricFactor",
    "default_rubric",
]

#: Protocol kinds a rubric may be tagged with.
KINDS: tuple[str, ...] = ("pairwise", "single")

#: Arena-Hard's pairwise factors, in the default order.
PAIRWISE_FACTORS: tuple[str, ...] = ("correctness", "completeness", "safety", "conciseness", "style")
#: MT-Bench-style single-answer factors, in the default order.
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


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise InputError(
            f"The 'name' parameter of {where} must be a lower-case identifier like 'correctness'. Got {name!r} instead."
        )
    return name


def _check_emphasis(text: Any, where: str, factor: str | None = None) -> str:
    if not isinstance(text, str) or not text.strip() or "\n" in text:
        of = "" if factor is None else f" for factor {factor!r}"
        raise InputError(
            f"The 'emphasis' parameter of {where} must be one non-empty line of text{of}. Got {text!r} instead."
        )
    return text


@dataclass(frozen=True)
class RubricFactor:
    """One rubric factor: a lower-case identifier and the sentence that tells the judge what it means.

    Parameters
    ----------
    name:
        Identifier such as ``"correctness"`` (lower-case letters, digits, ``_``).
    emphasis:
        One sentence shown to the judge next to the factor.
    """

    name: str
    emphasis: str

    def __post_init__(self) -> None:
        _check_name(self.name, "RubricFactor")
        _check_emphasis(self.emphasis, "RubricFactor")

    @property
    def title(self) -> str:
        """The factor as the judge writes it on a verdict line (``"Correctness"``)."""
        return self.name.replace("_", " ").capitalize()


def _pairs(factors: Iterable[Any]) -> list[tuple[str, str]]:
    """``(name, emphasis)`` from RubricFactor-like objects (``.name``/``.emphasis``) or 2-tuples."""
    out: list[tuple[str, str]] = []
    for f in factors:
        if hasattr(f, "name") and hasattr(f, "emphasis"):
            out.append((f.name, f.emphasis))
        else:
            try:
                name, emphasis = f
            except (TypeError, ValueError):
                raise InputError(
                    "The 'factors' parameter of Rubric must hold RubricFactor objects or (name, emphasis) pairs. "
                    f"Got {f!r} instead."
                ) from None
            out.append((name, emphasis))
    return out


@dataclass(frozen=True)
class Rubric:
    """The judge's rubric: ordered factor names, one emphasis sentence each, an optional kind.

    Parameters
    ----------
    factors:
        Factor names in the order the judge prompt lists them (lower-case identifiers,
        unique), e.g. ``("correctness", "completeness", "safety", "conciseness", "style")``.
        Also accepted (the judge package's older form): ``Rubric(kind, factors)`` with
        ``kind`` ``"pairwise"``/``"single"`` and ``factors`` a sequence of
        :class:`RubricFactor` (or ``(name, emphasis)`` pairs).
    emphasis:
        Factor name -> one-line sentence telling the judge what the factor means and how
        much it matters. Every factor needs one; no other keys are allowed. Stored read-only.
    kind:
        ``"pairwise"``, ``"single"`` or ``None`` (usable with either template). The
        renderers refuse a rubric of the other kind.

    Notes
    -----
    Equality compares ``factors`` and ``emphasis``; ``kind`` is a tag checked by the
    renderers and takes no part in equality or hashing, and ``emphasis`` takes no part in
    ``hash`` (it is a mapping).
    """

    factors: tuple[str, ...]
    emphasis: Mapping[str, str] = field(default_factory=dict, hash=False)
    kind: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        factors: Any = self.factors
        emphasis: Any = self.emphasis
        kind = self.kind
        if (isinstance(factors, str) and factors in KINDS and not isinstance(emphasis, Mapping)
                and not isinstance(emphasis, str)):
            # Rubric(kind, (RubricFactor, ...)): the judge package's former constructor
            kind = factors
            pairs = _pairs(emphasis)
            for name, text in pairs:
                _check_name(name, "Rubric")
                _check_emphasis(text, "Rubric", name)
            factors, emphasis = tuple(n for n, _ in pairs), {}
            for name, text in pairs:
                emphasis.setdefault(name, text)
        factors = (factors,) if isinstance(factors, str) else tuple(factors)
        if not factors:
            raise InputError(f"The 'factors' parameter of Rubric must be a non-empty tuple of factor names. Got {self.factors!r} instead.")
        for f in factors:
            _check_name(f, "Rubric")
        if len(set(factors)) != len(factors):
            raise InputError(
                f"The 'factors' parameter of Rubric must not repeat a factor (names must be unique). Got {list(factors)} instead."
            )
        if not isinstance(emphasis, Mapping):
            raise TypeError(
                f"The 'emphasis' parameter of Rubric must be a mapping factor -> sentence. Got {type(emphasis).__name__} instead."
            )
        if set(emphasis) != set(factors):
            raise InputError(
                "The 'emphasis' parameter of Rubric must map exactly the factors "
                f"{list(factors)} to sentences. Got keys {sorted(map(str, emphasis))} instead."
            )
        for f in factors:
            _check_emphasis(emphasis[f], "Rubric", f)
        if kind is not None:
            check_one_of(kind, "kind", "Rubric", KINDS)
        object.__setattr__(self, "factors", factors)
        object.__setattr__(self, "emphasis", MappingProxyType({f: emphasis[f] for f in factors}))
        object.__setattr__(self, "kind", kind)

    # -- constructors -----------------------------------------------------------------------
    @classmethod
    def from_factors(cls, factors: Iterable[Any], *, kind: str | None = None) -> Rubric:
        """Build from ``(name, emphasis)`` pairs or objects with ``.name``/``.emphasis``."""
        pairs = _pairs(factors)
        names = tuple(n for n, _ in pairs)
        if len(set(names)) != len(names):
            raise InputError(
                f"The 'factors' parameter of Rubric must not repeat a factor (names must be unique). Got {list(names)} instead."
            )
        return cls(factors=names, emphasis=dict(pairs), kind=kind)

    # -- views --------------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Factor names in rubric order (same as :attr:`factors`)."""
        return self.factors

    @property
    def entries(self) -> tuple[RubricFactor, ...]:
        """The factors as :class:`RubricFactor` objects (name, emphasis, title), in rubric order."""
        return tuple(RubricFactor(f, self.emphasis[f]) for f in self.factors)

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """Return ``((name, emphasis), ...)`` in rubric order."""
        return tuple((f, self.emphasis[f]) for f in self.factors)

    # -- derived rubrics ----------------------------------------------------------------------
    def reordered(self, names: Sequence[str]) -> Rubric:
        """Return the same factors in the order given by ``names`` (a permutation of :attr:`factors`)."""
        names = list(names)
        if sorted(names) != sorted(self.factors):
            raise InputError(
                f"The 'names' parameter of Rubric.reordered must be a permutation of {list(self.factors)}. Got {names} instead."
            )
        return replace(self, factors=tuple(names), emphasis=dict(self.emphasis))

    def with_changes(self, *, factors: Sequence[str] | None = None, emphasis: Mapping[str, str] | None = None) -> Rubric:
        """Return a copy with a new factor order and/or emphasis (the kind is kept)."""
        return replace(
            self,
            factors=tuple(self.factors if factors is None else factors),
            emphasis=dict(self.emphasis if emphasis is None else emphasis),
        )

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"kind", "factors": [...], "emphasis": {...}}`` (JSON-ready)."""
        return {"kind": self.kind, "factors": list(self.factors), "emphasis": dict(self.emphasis)}


def default_rubric(kind: str = "pairwise") -> Rubric:
    """Return the rubric the judge templates use unless told otherwise.

    Parameters
    ----------
    kind:
        ``"pairwise"`` (Arena-Hard factors: correctness, completeness, safety, conciseness,
        style) or ``"single"`` (helpfulness, relevance, accuracy, depth, creativity, detail).

    Returns
    -------
    Rubric
        Tagged with ``kind``; factors in the order listed in ``docs/DESIGN.md`` ("Judge protocol").
    """
    check_one_of(kind, "kind", "default_rubric", KINDS)
    names = PAIRWISE_FACTORS if kind == "pairwise" else SINGLE_FACTORS
    return Rubric(factors=names, emphasis={n: _DEFAULT_EMPHASIS[n] for n in names}, kind=kind)

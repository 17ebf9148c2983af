"""Each knowledge kind answers for itself: no code outside ``bounds/`` tests a record's type.

An AST walk over ``src/biasbound`` finds every ``isinstance(x, K)`` (``K`` a name, an attribute or a tuple of them)
and ``type(x) is K`` naming a knowledge kind; outside ``src/biasbound/bounds/`` there must be none (a consumer asks
the record — ``survivals``, ``describe``, ``audit_role``, ... — instead of switching on its type). The walk itself is
checked on a snippet that holds such tests, so it cannot pass by finding nothing. And every kind answers the whole
protocol (:class:`biasbound.bounds._knowledge.KnowledgeKind`), so a new kind cannot leave a question unanswered.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import numpy as np

from biasbound.bounds import _knowledge
from biasbound.bounds._knowledge import KINDS, KnowledgeKind

SRC = Path(__file__).resolve().parents[2] / "src" / "biasbound"
NAMES = {k.__name__ for k in KINDS}


def _named(node: ast.expr) -> set[str]:
    """Kind names in a type expression: ``K``, ``mod.K``, ``(K1, K2)``."""
    if isinstance(node, ast.Name):
        return {node.id} & NAMES
    if isinstance(node, ast.Attribute):
        return {node.attr} & NAMES
    if isinstance(node, ast.Tuple):
        return set().union(*(_named(e) for e in node.elts)) if node.elts else set()
    return set()


def type_tests(source: str) -> list[tuple[int, str]]:
    """``(line, kind)`` of every isinstance/issubclass or ``type(x) is/== K`` test on a knowledge kind."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("isinstance", "issubclass")
                and len(node.args) == 2):
            out += [(node.lineno, k) for k in sorted(_named(node.args[1]))]
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.Eq, ast.IsNot, ast.NotEq)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(isinstance(x, ast.Call) and isinstance(x.func, ast.Name) and x.func.id == "type" for x in sides):
                out += [(node.lineno, k) for x in sides for k in sorted(_named(x))]
    return out


def test_the_walk_finds_every_form_of_type_test() -> None:
    snippet = ("a = isinstance(r, Moments)\nb = isinstance(r, (FullPopulation, k.Sample))\nc = type(r) is RandomJudge\n"
               "d = isinstance(r, int)\ne = issubclass(t, bounds.HighProbability)\n")
    assert type_tests(snippet) == [(1, "Moments"), (2, "FullPopulation"), (2, "Sample"), (3, "RandomJudge"),
                                   (5, "HighProbability")]


def test_no_type_test_on_a_knowledge_kind_outside_bounds() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if (SRC / "bounds") in path.parents:
            continue
        found += [f"{path.relative_to(SRC)}:{line}: {kind}" for line, kind in type_tests(path.read_text(encoding="utf-8"))]
    assert SRC.is_dir() and found == [], "consumers switch on knowledge kinds (ask the record instead):\n" + "\n".join(found)


def test_every_kind_answers_the_whole_protocol() -> None:
    members = [n for n in vars(KnowledgeKind) if not n.startswith("_")] + list(typing.get_type_hints(KnowledgeKind))
    assert {"survivals", "jumps", "describe", "audit_role", "RECHECK_UNIT", "dominated_by", "RANDOM_JUDGE"} <= set(members)
    assert set(KINDS) == set(_knowledge._RECORD_TYPES)
    for kind in KINDS:
        missing = [m for m in members if not hasattr(kind, m) and m not in {f for f in kind.__dataclass_fields__}]
        assert not missing, f"{kind.__name__} does not answer {missing}"
        assert kind.KIND in {"almost-sure", "moments", "full-population", "sample", "random-judge", "high-probability"}


def test_consumers_get_the_same_answers_through_the_protocol() -> None:
    """The kinds' answers on a small example: survival steps, jump points and one fact each (hand-computed)."""
    from biasbound.bounds import AlmostSure, FullPopulation, Moments, Wording
    from biasbound.bounds._knowledge import facts

    pop = FullPopulation(np.array([0.0, 0.25, 1.0]))
    t = np.array([0.0, 0.5, 1.0])
    np.testing.assert_allclose(pop.survivals(t), [2 / 3, 1 / 3, 0.0])  # #{x > t²}/3
    np.testing.assert_allclose(Moments(U2=0.25, A=1.0).survivals(t), [1.0, 1.0, 0.0])  # min(1, U2/t²), 0 at A
    np.testing.assert_allclose(np.concatenate(pop.jumps()), [0.0, 0.5, 1.0])
    said = facts([AlmostSure(1.0), pop], Wording(str))
    assert said[0].startswith("every neighbour of the batch judged") and "judge declared deterministic" in said[1]
    assert said[-1].endswith("(almost surely)") and len(said) == 3

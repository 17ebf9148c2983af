"""Verdict parsing, prompt rendering and the Arena-Hard record export (exact values, no HTTP)."""

from __future__ import annotations

import json

import pytest

from biasbound import InputError
from biasbound.judge.parsing import (
    PAIRWISE_VERDICTS,
    flip_verdict,
    normalize_verdict,
    parse_pairwise,
    parse_reply,
    parse_rewrite,
    parse_single,
    rubric_factors,
    task_of,
    to_arena_hard_record,
)
from biasbound.judge.prompts import (
    PAIRWISE_FACTORS,
    SINGLE_FACTORS,
    TEMPLATE_VERSION,
    Rubric,
    RubricFactor,
    default_rubric,
    pairwise_games,
    render_pairwise,
    render_single,
)

# What each label means, written out by hand: (winner, strength) with strength 2 = much better.
MEANING = {
    "A>>B": ("A", 2), "A>B": ("A", 1), "A=B": (None, 0), "B>A": ("B", 1), "B>>A": ("B", 2),
    "A<<B": ("B", 2), "A<B": ("B", 1), "B<<A": ("A", 2), "B<A": ("A", 1), "B=A": (None, 0),
}
CANONICAL = {("A", 2): "A>>B", ("A", 1): "A>B", (None, 0): "A=B", ("B", 1): "B>A", ("B", 2): "B>>A"}


@pytest.mark.parametrize("label", sorted(MEANING))
def test_every_verdict_form_and_alias(label: str) -> None:
    expected = CANONICAL[MEANING[label]]
    assert normalize_verdict(label) == expected
    reply = f"Some reasoning about the answers.\n\nMy final verdict is: [[{label}]]"
    parsed = parse_pairwise(reply)
    assert parsed.status == "ok" and parsed.value == expected and parsed.raw == reply
    spaced = label.replace(">", " > ").replace("<", " < ").replace("=", " = ")
    assert parse_pairwise(f"My final verdict is: [[ {spaced} ]]").value == expected


def test_flip_verdict_swaps_positions() -> None:
    for v in PAIRWISE_VERDICTS:
        winner, strength = MEANING[v]
        other = {"A": "B", "B": "A", None: None}[winner]
        assert flip_verdict(v) == CANONICAL[(other, strength)]
    with pytest.raises(InputError, match="'verdict'"):
        flip_verdict("A>C")


def test_factor_lines_are_separate_from_the_overall_verdict() -> None:
    reply = (
        "A is more accurate, B is shorter.\n"
        "**Correctness**: [[A>>B]]\n"
        "- Completeness: [[A>B]]\n"
        "Safety: [[A=B]]\n"
        "Conciseness: [[A<B]]\n"
        "## Style: [[B>A]]\n"
        "My final verdict is: [[A>B]]\n"
    )
    parsed = parse_pairwise(reply)
    assert parsed.status == "ok" and parsed.value == "A>B"
    assert parsed.factors == {"correctness": "A>>B", "completeness": "A>B", "safety": "A=B",
                              "conciseness": "B>A", "style": "B>A"}
    assert parsed.reason is None


def test_missing_verdict_keeps_raw_and_reason() -> None:
    reply = "Both answers are fine but I cannot decide.\nCorrectness: [[A>B]]"
    parsed = parse_pairwise(reply)
    assert parsed.status == "missing" and parsed.value is None
    assert parsed.reason.startswith("no verdict found") and parsed.raw == reply
    assert parsed.factors["correctness"] == "A>B" and parsed.factors["style"] is None


def test_conflicting_verdicts_are_ambiguous_and_repeats_are_not() -> None:
    parsed = parse_pairwise("First I thought [[A>B]].\nMy final verdict is: [[B>>A]]")
    assert parsed.status == "missing" and parsed.value is None and parsed.reason.startswith("ambiguous")
    # an alias of the same verdict is not a conflict
    assert parse_pairwise("[[A<B]] ... My final verdict is: [[B>A]]").value == "B>A"
    # a conflicting factor is None, the overall verdict still parses
    parsed = parse_pairwise("Style: [[A>B]]\nStyle: [[B>A]]\nMy final verdict is: [[A=B]]")
    assert parsed.value == "A=B" and parsed.factors["style"] is None and "style: ambiguous" in parsed.reason


@pytest.mark.parametrize("garbage", ["", "lorem ipsum dolor", "[[C>D]] [[7]]", "My final verdict is: [[A>", "[[A>B"])
def test_garbage_is_missing_with_raw_kept(garbage: str) -> None:
    parsed = parse_pairwise(garbage)
    assert parsed.status == "missing" and parsed.value is None and parsed.raw == garbage


def test_single_rating_and_factor_scores() -> None:
    reply = ("Good answer.\nHelpfulness: 8\nRelevance: 9/10\n**Accuracy**: [[7]]\nDepth: 6.5\n"
             "Creativity: 0\nDetail: 12\nRating: [[7.5]]")
    parsed = parse_single(reply)
    assert parsed.status == "ok" and parsed.value == 7.5
    assert parsed.factors == {"helpfulness": 8.0, "relevance": 9.0, "accuracy": 7.0, "depth": 6.5,
                              "creativity": None, "detail": None}
    assert "creativity: score 0 outside [1, 10]" in parsed.reason


@pytest.mark.parametrize(("reply", "reason"), [
    ("Rating: [[11]]", "rating 11 outside [1, 10]"),
    ("Rating: [[0]]", "rating 0 outside [1, 10]"),
    ("Rating: [[5]] or maybe [[6]]", "ambiguous"),
    ("Rating: 7", "no rating found"),
    ("nothing here", "no rating found"),
])
def test_single_missing_forms(reply: str, reason: str) -> None:
    parsed = parse_single(reply)
    assert parsed.status == "missing" and parsed.value is None and parsed.reason.startswith(reason)
    assert parsed.raw == reply


def test_rewrite_blocks() -> None:
    ok = parse_rewrite("Sure.\n<<<RESPONSE\nline one\n\nline two\nRESPONSE>>>\n", task="paraphrase")
    assert ok.status == "ok" and ok.value == "line one\n\nline two"
    err = parse_rewrite("<<<RESPONSE\ntext\nRESPONSE>>>\n<<<INSERTED\nchanged 4 to 5\nINSERTED>>>", task="insert-error")
    assert err.value == "text" and err.extra == {"inserted": "changed 4 to 5"}
    no_desc = parse_rewrite("<<<RESPONSE\ntext\nRESPONSE>>>", task="insert-error")
    assert no_desc.status == "missing" and "INSERTED" in no_desc.reason
    truncated = parse_rewrite("<<<RESPONSE\ntext cut her", task="paraphrase")
    assert truncated.status == "missing" and truncated.raw == "<<<RESPONSE\ntext cut her"
    with pytest.raises(InputError, match="'task'"):
        parse_reply("x", "judge-everything")


def test_templates_name_the_task_and_carry_the_rubric() -> None:
    game1, game2 = pairwise_games("What is 2+2?", "MODEL ANSWER", "BASELINE ANSWER")
    assert game1[0]["content"].split("\n", 1)[0] == "biasbound-task: judge-pairwise"
    assert task_of(game1) == "judge-pairwise"
    # game 1: baseline is A; game 2: the model is A
    a1 = game1[1]["content"].split("<|The Start of Assistant A's Answer|>\n")[1].split("\n<|The End")[0]
    a2 = game2[1]["content"].split("<|The Start of Assistant A's Answer|>\n")[1].split("\n<|The End")[0]
    assert (a1, a2) == ("BASELINE ANSWER", "MODEL ANSWER")
    assert rubric_factors(game1) == PAIRWISE_FACTORS
    single = render_single("Q", "A")
    assert task_of(single) == "judge-single" and rubric_factors(single) == SINGLE_FACTORS
    assert "[The Start of Assistant's Answer]\nA\n[The End of Assistant's Answer]" in single[1]["content"]
    reordered = default_rubric("pairwise").reordered(["style", "safety", "correctness", "completeness", "conciseness"])
    msgs = render_pairwise("Q", "a", "b", rubric=reordered)
    assert rubric_factors(msgs) == ("style", "safety", "correctness", "completeness", "conciseness")
    assert render_pairwise("Q", "a", "b")[1] == msgs[1]  # the rubric changes the system message only
    assert render_pairwise("Q", "a", "b")[0] != msgs[0]
    custom = Rubric("single", (RubricFactor("accuracy", "Only facts matter here."),))
    assert "Factor 1 - Accuracy: Only facts matter here." in render_single("Q", "A", rubric=custom)[0]["content"]
    assert isinstance(TEMPLATE_VERSION, str) and TEMPLATE_VERSION


def test_rubric_validation() -> None:
    with pytest.raises(InputError, match="'name'"):
        RubricFactor("Bad Name", "x")
    with pytest.raises(InputError, match="unique"):
        Rubric("single", (RubricFactor("a", "x"), RubricFactor("a", "y")))
    with pytest.raises(InputError, match="permutation"):
        default_rubric("single").reordered(["helpfulness"])
    with pytest.raises(InputError, match="'rubric'"):
        render_pairwise("Q", "a", "b", rubric=default_rubric("single"))
    with pytest.raises(TypeError, match="'answer_a'"):
        render_pairwise("Q", None, "b")  # type: ignore[arg-type]


def test_arena_hard_record_matches_the_reader_fields() -> None:
    game1, game2 = pairwise_games("Q", "model", "baseline")
    record = to_arena_hard_record(
        question_id="q1", model="m", judge="j", baseline="b", category="hard_prompt",
        games=[{"verdict": "A<B", "raw": "My final verdict is: [[A<B]]", "messages": game1, "status": "ok"},
               {"verdict": None, "raw": "garbage", "messages": game2, "status": "missing", "reason": "no verdict found"}],
    )
    line = json.loads(json.dumps(record))
    # the fields Arena-Hard-Auto's show_result.py reads: uid/question_id, model, games[i]["score"]
    assert line["question_id"] == line["uid"] == "q1" and line["model"] == "m" and line["judge"] == "j"
    assert [g["score"] for g in line["games"]] == ["B>A", None]
    assert line["games"][0]["judgment"] == {"answer": "My final verdict is: [[A<B]]"}
    assert line["games"][0]["user_prompt"] == game1[1]["content"]
    assert line["games"][1]["reason"] == "no verdict found"
    with pytest.raises(InputError, match="exactly 2 games"):
        to_arena_hard_record(question_id="q", model="m", judge="j", games=[{}])
    with pytest.raises(InputError, match="unknown verdict"):
        to_arena_hard_record(question_id="q", model="m", judge="j", games=[{"verdict": "A>C"}, {"verdict": "A>B"}])

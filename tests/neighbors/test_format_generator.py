"""Tests of the ``format`` neighbour generator and its markdown sub-operations.

Expected values come from hand-written examples or from naive line scanners written
here, independent of the implementation's regexes and masking.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import SHARED_DATA  # tests/data: vendored real data
from biasbound import InputError
from biasbound.neighbors.base import JudgeItem, default_rubric
from biasbound.neighbors.formatting import FORMAT_OPERATIONS, FormatGenerator, mask_protected, reformat

ANSWERS = SHARED_DATA / "arena-hard-v0.1" / "model_answer" / "gpt-4-0314.jsonl"


@lru_cache(maxsize=1)
def real_answers() -> dict[str, str]:
    """uid -> answer text of Arena-Hard's gpt-4-0314 answers (the 198 real answers shipped with biasbound)."""
    out = {}
    with ANSWERS.open() as fh:
        for line in fh:
            rec = json.loads(line)
            out[rec["uid"]] = rec["messages"][1]["content"]["answer"]
    assert len(out) == 198
    return out


def item(answer: str, item_id: str = "q") -> JudgeItem:
    return JudgeItem(item_id, "Question?", answer, None, "m", default_rubric("single"), game=0)


# ---- naive reference scanners ---------------------------------------------------------
def fence_ids(text: str) -> list[int | None]:
    """Per line: None outside fenced code, else the number of the block (naive scanner)."""
    ids: list[int | None] = []
    fence = None
    count = 0
    for line in text.split("\n"):
        s = line.lstrip(" ")
        indent = len(line) - len(s)
        if fence is None:
            if indent <= 3 and (s.startswith("```") or s.startswith("~~~")):
                ch = s[0]
                run = len(s) - len(s.lstrip(ch))
                if not (ch == "`" and "`" in s[run:]):
                    fence = (ch, run)
                    count += 1
                    ids.append(count)
                    continue
            ids.append(None)
        else:
            ids.append(count)
            ch, run = fence
            body = s.rstrip()
            if indent <= 3 and body and set(body) == {ch} and len(body) >= run:
                fence = None
    return ids


def outside_fence_flags(text: str) -> list[bool]:
    """Per line: True if the line is outside every fenced code block."""
    return [i is None for i in fence_ids(text)]


def fenced_blocks(text: str) -> list[str]:
    """The fenced code blocks of ``text`` in order, each as its exact lines."""
    blocks: dict[int, list[str]] = {}
    for line, i in zip(text.split("\n"), fence_ids(text)):
        if i is not None:
            blocks.setdefault(i, []).append(line)
    return ["\n".join(v) for _, v in sorted(blocks.items())]


def words(text: str) -> list[str]:
    """Alphanumeric word sequence, list markers at line starts removed."""
    text = re.sub(r"(?m)^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+", " ", text)
    return re.findall(r"[^\W_]+", text)


def answers_where(pattern: str, limit: int = 8) -> list[tuple[str, str]]:
    rx = re.compile(pattern)
    found = []
    for uid, text in real_answers().items():
        lines = [ln for ln, out in zip(text.split("\n"), outside_fence_flags(text)) if out]
        if any(rx.search(ln) for ln in lines):
            found.append((uid, text))
        if len(found) >= limit:
            break
    return found


# ---- masking ----------------------------------------------------------------------------
def test_mask_finds_fences_of_any_length_and_inline_spans():
    text = "Intro `a*b*` and ``x`y``.\n\n````md\n```\ninner\n```\n````\n\n~~~~\n# not a heading\n~~~~~\nend"
    masked = mask_protected(text)
    assert masked.of_kind("code_block") == ["````md\n```\ninner\n```\n````", "~~~~\n# not a heading\n~~~~~"]
    assert masked.of_kind("inline_code") == ["`a*b*`", "``x`y``"]
    assert masked.unmask(masked.text) == text


def test_unclosed_fence_runs_to_end_and_is_untouched():
    text = "**Bold** text\n\n```python\n- item\n**not bold**"
    new, counts = reformat(text, ["emphasis_strip", "bullets_to_numbers"])
    assert new == "Bold text\n\n```python\n- item\n**not bold**"
    assert counts == {"emphasis_strip": 1, "bullets_to_numbers": 0}


def test_private_use_characters_are_refused():
    with pytest.raises(InputError, match="private-use"):
        mask_protected("a \ue001 b")
    p = FormatGenerator(seed=0).perturb(item("**a** \ue001 b"))
    assert p.status == "not-applicable" and p.item.answer == "**a** \ue001 b"


# ---- each sub-operation: hand examples -----------------------------------------------
HAND = [
    ("emphasis_strip", "A **bold** and *it* and __b two__ and _i2_ but `**kw**` and a*b*c.",
     "A bold and it and b two and i2 but `**kw**` and a*b*c."),
    ("emphasis_swap", "A **bold** and *it*.", "A *bold* and **it**."),
    ("emphasis_add", "1. Install Slim: run it.\n- Setup step: done\nNot: a list",
     "1. **Install Slim**: run it.\n- **Setup step**: done\nNot: a list"),
    ("bullets_to_numbers", "- a\n- b\n  - c\n  - d\n- e\n\ntext\n\n* f\n* g",
     "1. a\n2. b\n  1. c\n  2. d\n3. e\n\ntext\n\n1. f\n2. g"),
    ("numbers_to_bullets", "1. a\n2) b\n   10. c", "- a\n- b\n   - c"),
    ("heading_demote", "# T\ntext\n### U ##", "## T\ntext\n#### U ##"),
    ("heading_promote", "## T\n### U", "# T\n## U"),
    ("heading_to_bold", "## Title ##\nbody", "**Title**\nbody"),
    ("bold_to_heading", "**Step one:**\nbody\n- **not a line**", "### Step one:\nbody\n- **not a line**"),
    ("blank_lines_normalise", "a\n\n\n\nb\n## H\n```\nx\n\n\n```\nc", "a\n\nb\n\n## H\n\n```\nx\n\n\n```\n\nc"),
]


@pytest.mark.parametrize(("op", "text", "expected"), HAND, ids=[h[0] for h in HAND])
def test_sub_operation_hand_examples(op, text, expected):
    new, counts = reformat(text, [op])
    assert new == expected
    assert counts[op] > 0


def test_hand_examples_cover_every_operation():
    assert {h[0] for h in HAND} == set(FORMAT_OPERATIONS)


def test_heading_shift_refuses_to_leave_levels_1_to_6():
    assert reformat("###### deep", ["heading_demote"]) == ("###### deep", {"heading_demote": 0})
    assert reformat("# top\n## sub", ["heading_promote"]) == ("# top\n## sub", {"heading_promote": 0})


def test_dunder_identifiers_are_not_stripped():
    assert reformat("call __init__ now", ["emphasis_strip"])[0] == "call __init__ now"


# ---- each sub-operation on real Arena-Hard answers -------------------------------------
def test_numbers_to_bullets_on_real_answers():
    cases = answers_where(r"^\s*\d{1,9}[.)]\s+\S")
    assert len(cases) >= 5
    for _, text in cases:
        new, counts = reformat(text, ["numbers_to_bullets"])
        expected_lines = [
            re.sub(r"^([ \t]*)\d{1,9}[.)]([ \t]+)(?=\S)", r"\1-\2", ln) if out else ln
            for ln, out in zip(text.split("\n"), outside_fence_flags(text))
        ]
        assert new == "\n".join(expected_lines)
        assert counts["numbers_to_bullets"] == sum(a != b for a, b in zip(text.split("\n"), expected_lines))
        assert fenced_blocks(new) == fenced_blocks(text)


def test_bullets_to_numbers_on_real_flat_lists():
    """Answers whose bullets are all at one indentation: numbers restart after any non-item line."""
    checked = 0
    for _, text in answers_where(r"^\s*[-*+]\s+\S", limit=60):
        lines, flags = text.split("\n"), outside_fence_flags(text)
        indents = {len(ln) - len(ln.lstrip()) for ln, out in zip(lines, flags) if out and re.match(r"\s*[-*+]\s+\S", ln)}
        if len(indents) != 1 or any(out and re.match(r"\s*[-*_](\s*[-*_]){2,}\s*$", ln) for ln, out in zip(lines, flags)):
            continue
        expected, k = [], 0
        for ln, out in zip(lines, flags):
            if out and re.match(r"\s*[-*+]\s+\S", ln):
                k += 1
                ln = re.sub(r"^(\s*)[-*+]", lambda m, k=k: f"{m.group(1)}{k}.", ln, count=1)
            elif not out or ln.strip():
                k = 0 if (not out or len(ln) - len(ln.lstrip()) <= min(indents)) else k
            expected.append(ln)
        new, _ = reformat(text, ["bullets_to_numbers"])
        assert new == "\n".join(expected)
        checked += 1
    assert checked >= 3


def test_emphasis_ops_on_real_answers():
    cases = answers_where(r"\*\*[A-Za-z][^*]*\*\*")
    assert len(cases) >= 2
    for _, text in cases:
        for op in ("emphasis_strip", "emphasis_swap"):
            new, counts = reformat(text, [op])
            assert counts[op] > 0 and new != text
            assert fenced_blocks(new) == fenced_blocks(text)
            assert words(new) == words(text)
        stripped, _ = reformat(text, ["emphasis_strip"])
        prose = [ln for ln, out in zip(stripped.split("\n"), outside_fence_flags(stripped)) if out]
        assert not any(re.search(r"\*\*\w[^`*]*\w\*\*", re.sub(r"`[^`]*`", "", ln)) for ln in prose)


def test_emphasis_add_on_real_scim_answer():
    text = real_answers()["0122ab60646b4961bc39e9c03bdf6bcc"]
    new, counts = reformat(text, ["emphasis_add"])
    # read off the original by hand: the numbered steps of the SCIM answer
    assert "1. **Install Slim Framework and other dependencies**:" in new
    assert "2. **Create the Slim application**:" in new
    assert "1. Install Slim Framework and other dependencies:" in text
    assert counts["emphasis_add"] == len(re.findall(r"(?m)^\d+\. \*\*", new))
    assert fenced_blocks(new) == fenced_blocks(text)


def test_heading_ops_on_real_answers():
    cases = answers_where(r"^#{1,6}\s+\S")
    assert cases
    demoted = 0
    for _, text in cases:
        lines, flags = text.split("\n"), outside_fence_flags(text)
        heads = [k for k, (ln, out) in enumerate(zip(lines, flags)) if out and re.match(r"#{1,6}\s+\S", ln)]
        new, counts = reformat(text, ["heading_demote"])
        if max(len(lines[k]) - len(lines[k].lstrip("#")) for k in heads) < 6:
            expected = ["#" + ln if k in heads else ln for k, ln in enumerate(lines)]
            assert new == "\n".join(expected)
            assert counts["heading_demote"] == len(heads)
            demoted += 1
        else:  # a level-6 heading cannot go deeper: the whole answer is left alone
            assert (new, counts["heading_demote"]) == (text, 0)
        new, _ = reformat(text, ["heading_to_bold"])
        assert words(new) == words(text)
        assert fenced_blocks(new) == fenced_blocks(text)
    assert demoted >= 1  # the exact expected-output check above ran on at least one real answer


def test_bold_to_heading_on_real_answer():
    cases = answers_where(r"^\*\*[^*]+\*\*:?\s*$")
    assert cases
    for _, text in cases:
        new, counts = reformat(text, ["bold_to_heading"])
        n_bold = sum(
            1 for ln, out in zip(text.split("\n"), outside_fence_flags(text)) if out and re.fullmatch(r"\*\*[^*]+\*\*:?\s*", ln)
        )
        assert counts["bold_to_heading"] == n_bold > 0
        assert len(re.findall(r"(?m)^### ", new)) - len(re.findall(r"(?m)^### ", text)) == n_bold


def test_blank_lines_normalise_on_real_answers():
    applied = 0
    for _, text in list(real_answers().items())[:200]:
        new, counts = reformat(text, ["blank_lines_normalise"])
        flags = outside_fence_flags(new)
        if counts["blank_lines_normalise"] == 0:
            assert new == text
            continue
        applied += 1
        assert [ln for ln in new.split("\n") if ln.strip()] == [ln for ln in text.split("\n") if ln.strip()]
        prose_runs = re.findall(r"\n[ \t]*\n[ \t]*\n", "\n".join(ln if out else "x" for ln, out in zip(new.split("\n"), flags)))
        assert not prose_runs
        assert fenced_blocks(new) == fenced_blocks(text)
    assert applied >= 3


# ---- the generator -------------------------------------------------------------------
def test_plain_text_is_not_applicable_and_counted():
    gen = FormatGenerator(seed=1)
    it = item("Just one plain sentence without any markdown.")
    p = gen.perturb(it)
    assert p.status == "not-applicable" and not p.applied
    assert p.changed == "no applicable formatting change"
    assert p.item == it
    assert gen.counts_["not-applicable"] == 1 and gen.counts_["applied"] == 0


def test_unfenced_code_answer_is_left_alone():
    text = real_answers()["0122ab60646b4961bc39e9c03bdf6bcc"]
    assert FormatGenerator(seed=0).perturb(item(text)).applied
    code = "def f(x):\n    return x\n\n# Example usage:\ny = f(2)\nprint(y)"
    p = FormatGenerator(seed=0).perturb(item(code))
    assert p.status == "not-applicable" and "unfenced code" in p.details["reason"]


def test_generator_is_deterministic_given_the_seed_and_varies_across_seeds():
    text = real_answers()["0122ab60646b4961bc39e9c03bdf6bcc"] + "\n\n**Note:** see *above*.\n\n\n## End"
    it = item(text)
    a = FormatGenerator(seed=5).perturb(it)
    b = FormatGenerator(seed=5).perturb(it)
    assert a == b
    assert FormatGenerator(seed=9).perturb(it, rng=11) == FormatGenerator(seed=5).perturb(it, rng=11)
    outputs = {FormatGenerator(seed=s).perturb(it).item.answer for s in range(20)}
    assert len(outputs) >= 5
    ops = {op for s in range(20) for op in FormatGenerator(seed=s).perturb(it).details["operations"]}
    assert {"emphasis_strip", "numbers_to_bullets", "heading_demote", "blank_lines_normalise"} <= ops


def test_generator_records_seed_operations_and_touches_only_the_answer():
    it = JudgeItem("q", "Q", "- a\n- b", "**base** line", "m", default_rubric(), game=2)
    p = FormatGenerator(seed=0).perturb(it, rng=3)
    assert p.details["seed"] == 3
    assert p.item.answer == "1. a\n2. b" and p.details["operations"] == ["bullets_to_numbers"]
    assert (p.item.baseline, p.item.rubric, p.item.game, p.item.variant) == ("**base** line", it.rubric, 2, "format")


def test_operations_option_is_validated():
    with pytest.raises(InputError, match="'operations'"):
        FormatGenerator(operations=["bold_everything"])
    gen = FormatGenerator(seed=0, operations=["emphasis_strip"])
    assert gen.perturb(item("- a\n- b")).status == "not-applicable"


# ---- hypothesis properties -------------------------------------------------------------
WORD = st.text(alphabet="abcdefghijXYZ0123456789", min_size=1, max_size=6)
CODE_CHARS = "ab1 *_#-.~+$[]()"


@st.composite
def inline_code(draw):
    if draw(st.booleans()):
        body = draw(st.text(alphabet=CODE_CHARS, min_size=1, max_size=8))
        return "`" + body + "`"
    left = draw(st.text(alphabet=CODE_CHARS.replace(" ", ""), min_size=1, max_size=4))
    right = draw(st.text(alphabet=CODE_CHARS.replace(" ", ""), min_size=1, max_size=4))
    return "``" + left + "`" + right + "``"


@st.composite
def phrase(draw, codes):
    toks = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["w", "w", "w", "b", "i", "bu", "iu", "code"]))
        w = " ".join(draw(st.lists(WORD, min_size=1, max_size=3)))
        if kind == "code":
            c = draw(inline_code())
            codes.append(c)
            toks.append(c)
        else:
            toks.append({"w": w, "b": f"**{w}**", "i": f"*{w}*", "bu": f"__{w}__", "iu": f"_{w}_"}[kind])
    return " ".join(toks)


@st.composite
def fenced(draw):
    ch = draw(st.sampled_from("`~"))
    fence = ch * draw(st.integers(3, 5))
    info = draw(st.sampled_from(["", "python", "md"]))
    body = draw(
        st.lists(
            st.text(alphabet="ab1 *_#-.~`+\t", max_size=12).filter(lambda s: not s.lstrip(" ").startswith(ch * 3)),
            max_size=5,
        )
    )
    close = fence + draw(st.sampled_from(["", ch]))
    return "\n".join([fence + info, *body, close])


@st.composite
def markdown_doc(draw):
    codes: list[str] = []
    blocks_out: list[str] = []
    parts = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["para", "bullets", "numbers", "heading", "boldline", "fence", "label"]))
        if kind == "para":
            parts.append(draw(phrase(codes)))
        elif kind in ("bullets", "numbers"):
            lines = []
            for k in range(draw(st.integers(1, 4))):
                indent = draw(st.sampled_from(["", "", "  "]))
                marker = draw(st.sampled_from(["-", "*", "+"])) if kind == "bullets" else f"{k + 1}{draw(st.sampled_from('.)'))}"
                lines.append(f"{indent}{marker} {draw(phrase(codes))}")
            parts.append("\n".join(lines))
        elif kind == "heading":
            parts.append("#" * draw(st.integers(1, 6)) + " " + " ".join(draw(st.lists(WORD, min_size=1, max_size=3))))
        elif kind == "boldline":
            parts.append("**" + " ".join(draw(st.lists(WORD, min_size=1, max_size=3))) + "**")
        elif kind == "label":
            parts.append("1. " + draw(WORD) + ": " + draw(phrase(codes)))
        else:
            block = draw(fenced())
            blocks_out.append(block)
            parts.append(block)
    seps = [draw(st.sampled_from(["\n", "\n\n", "\n\n\n", "\n\n\n\n"])) for _ in parts]
    text = "".join(p + s for p, s in zip(parts, seps)).rstrip("\n")
    return text, blocks_out, codes


def appear_in_order(pieces: list[str], text: str) -> bool:
    pos = 0
    for piece in pieces:
        at = text.find(piece, pos)
        if at < 0:
            return False
        pos = at + len(piece)
    return True


@settings(max_examples=120, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(doc=markdown_doc(), seed=st.integers(0, 2**32), p_family=st.sampled_from([0.0, 0.5, 1.0]))
def test_property_code_is_byte_identical_and_words_are_kept(doc, seed, p_family):
    text, blocks, codes = doc
    p = FormatGenerator(seed=0, p_family=p_family, max_code_like_fraction=1.0).perturb(item(text), rng=seed)
    new = p.item.answer
    assert appear_in_order(blocks, new)
    assert appear_in_order(codes, new)
    assert fenced_blocks(new) == fenced_blocks(text)
    assert words(new) == words(text)
    assert (new != text) == p.applied


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(doc=markdown_doc(), ops=st.lists(st.sampled_from(FORMAT_OPERATIONS), min_size=1, max_size=4))
def test_property_any_operation_sequence_keeps_code_and_words(doc, ops):
    text, blocks, codes = doc
    new, _ = reformat(text, ops)
    assert appear_in_order(blocks, new)
    assert appear_in_order(codes, new)
    assert words(new) == words(text)

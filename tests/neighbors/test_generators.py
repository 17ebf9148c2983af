"""Tests of the swap, rerun, schematic, paraphrase and agreeable generators, the registry
and Hamming-1 neighbour sampling. LLM generators are driven by fake in-process
``complete`` functions whose replies are written by hand."""

from __future__ import annotations

import asyncio
import re
from collections import Counter

import numpy as np
import pytest

from biasbound import InputError, JudgeError
from biasbound.neighbors.agreeable import AgreeableGenerator
from biasbound.neighbors.base import JudgeItem, Perturbation, Rubric, default_rubric
from biasbound.neighbors.paraphrase import ParaphraseGenerator, extract_block
from biasbound.neighbors.registry import (
    GENERATORS,
    apply_neighbor,
    make_generator,
    sample_indices,
    sample_neighbors,
    sample_neighbors_async,
)
from biasbound.neighbors.rerun import RerunGenerator
from biasbound.neighbors.schematic import EMPHASIS_BANK, SchematicGenerator
from biasbound.neighbors.swap import SwapGenerator

ORIGINAL = (
    "To install the package, run `pip install foo==1.2` and then open https://example.com/docs "
    "for 3 worked examples.\n\n```python\nimport foo\nfoo.run(42)\n```\n\n"
    "The call takes about 5 seconds on a laptop, and the result is cached afterwards."
)
GOOD = (
    "To set up the package, run `pip install foo==1.2` and afterwards visit https://example.com/docs "
    "for 3 worked examples.\n\n```python\nimport foo\nfoo.run(42)\n```\n\n"
    "The call needs roughly 5 seconds on a laptop, and its result is cached afterwards."
)


def wrap(text: str) -> str:
    return f"Sure, here it is.\n<<<RESPONSE\n{text}\nRESPONSE>>>\n"


def pair_item(item_id: str = "q1", answer: str = ORIGINAL, game: int = 1) -> JudgeItem:
    return JudgeItem(item_id, "How do I use foo?", answer, "Baseline answer.", "model-x", default_rubric(), game=game)


def fake_complete(replies: list[str]):
    """Return an async complete() that answers attempt k with replies[k-1] and logs messages."""
    log: list[list[dict[str, str]]] = []

    async def complete(messages: list[dict[str, str]]) -> str:
        log.append(messages)
        attempt = int(re.search(r"^biasbound-attempt: (\d+)$", messages[0]["content"], re.M).group(1))
        return replies[attempt - 1]

    return complete, log


def run(coro):
    return asyncio.run(coro)


# ---- base records -----------------------------------------------------------------------
def test_default_rubrics_follow_the_protocol():
    assert default_rubric("pairwise").factors == ("correctness", "completeness", "safety", "conciseness", "style")
    assert default_rubric("single").factors == ("helpfulness", "relevance", "accuracy", "depth", "creativity", "detail")
    with pytest.raises(InputError, match="'kind'"):
        default_rubric("triple")


def test_rubric_and_item_validation():
    with pytest.raises(InputError, match="repeat"):
        Rubric(("a", "a"), {"a": "x"})
    with pytest.raises(InputError, match="'emphasis'"):
        Rubric(("a", "b"), {"a": "x"})
    r = Rubric(("a", "b"), {"b": "y", "a": "x"})
    assert r == Rubric(("a", "b"), {"a": "x", "b": "y"}) and hash(r) == hash(Rubric(("a", "b"), {"a": "x", "b": "y"}))
    with pytest.raises(TypeError):
        r.emphasis["a"] = "z"  # read-only
    with pytest.raises(InputError, match="'game'"):
        JudgeItem("q", "Q", "A", None, "m", r, game=1)
    with pytest.raises(InputError, match="'game'"):
        JudgeItem("q", "Q", "A", "B", "m", r, game=0)
    with pytest.raises(InputError, match="'rerun'"):
        JudgeItem("q", "Q", "A", "B", "m", r, rerun=-1)
    with pytest.raises(InputError, match="'status'"):
        Perturbation(pair_item(), "x", {}, status="maybe")


def test_rubric_round_trips_through_factor_pairs():
    class Factor:  # duck-typed stand-in for the judge package's RubricFactor
        def __init__(self, name, emphasis):
            self.name, self.emphasis = name, emphasis

    r = default_rubric("pairwise")
    assert Rubric.from_factors(r.pairs()) == r
    assert Rubric.from_factors([Factor(n, e) for n, e in r.pairs()]) == r
    assert r.pairs()[0] == ("correctness", r.emphasis["correctness"])


def test_answer_positions_follow_arena_hard_games():
    it = pair_item()
    assert (it.answer_a, it.answer_b) == ("Baseline answer.", ORIGINAL)
    it2 = it.with_changes(game=2)
    assert (it2.answer_a, it2.answer_b) == (ORIGINAL, "Baseline answer.")


# ---- swap and rerun ---------------------------------------------------------------------
def test_swap_flips_positions_and_back():
    g = SwapGenerator(seed=0)
    it = pair_item()
    p = g.perturb(it)
    assert p.item.game == 2 and p.applied
    assert (p.item.answer_a, p.item.answer_b) == (it.answer_b, it.answer_a)
    assert (p.item.answer, p.item.baseline, p.item.rubric) == (it.answer, it.baseline, it.rubric)
    assert g.perturb(p.item).item == it
    with pytest.raises(InputError, match="pairwise"):
        g.perturb(JudgeItem("q", "Q", "A", None, "m", default_rubric("single"), game=0))


def test_rerun_increments_the_index_only():
    g = RerunGenerator(seed=0)
    it = pair_item()
    p = g.perturb(g.perturb(it).item)
    assert p.item == it.with_changes(rerun=2)
    assert p.details["rerun_before"] == 1 and g.counts_["applied"] == 2


# ---- schematic ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["pairwise", "single"])
@pytest.mark.parametrize("mode", ["reorder", "reword", "both", "random"])
def test_schematic_changes_rubric_only(kind, mode):
    rubric = default_rubric(kind)
    base = pair_item() if kind == "pairwise" else JudgeItem("q", "Q", ORIGINAL, None, "m", rubric, game=0)
    g = SchematicGenerator(seed=7, mode=mode)
    for s in range(15):
        p = g.perturb(base, rng=s)
        new = p.item.rubric
        assert (p.item.question, p.item.answer, p.item.baseline, p.item.game) == (
            base.question, base.answer, base.baseline, base.game)
        assert Counter(new.factors) == Counter(rubric.factors)
        order_changed = new.factors != rubric.factors
        changed_emph = [f for f in rubric.factors if new.emphasis[f] != rubric.emphasis[f]]
        assert order_changed or changed_emph
        used = p.details["mode"]
        assert order_changed == (used in ("reorder", "both"))
        assert len(changed_emph) == (1 if used in ("reword", "both") else 0)
        for f in changed_emph:
            assert new.emphasis[f] in EMPHASIS_BANK[f]


def test_schematic_one_factor_rubric_and_determinism():
    it = JudgeItem("q", "Q", "A", None, "m", Rubric(("overall",), {"overall": "Judge overall quality."}), game=0)
    p = SchematicGenerator(seed=1).perturb(it)
    assert p.details["mode"] == "reword" and "overall" in p.item.rubric.emphasis["overall"]
    with pytest.raises(InputError, match="at least 2 factors"):
        SchematicGenerator(seed=1, mode="reorder").perturb(it)
    it2 = pair_item()
    assert SchematicGenerator(seed=3).perturb(it2) == SchematicGenerator(seed=3).perturb(it2)


# ---- paraphrase -----------------------------------------------------------------------
def test_paraphrase_counts_and_reasons_for_each_rejection():
    too_long = GOOD + " This sentence only pads the answer with more words." * 4
    changed_number = GOOD.replace("5 seconds", "6 seconds")
    replies = ["I cannot help with that.", wrap(changed_number), wrap(too_long), wrap(GOOD)]
    complete, log = fake_complete(replies)
    g = ParaphraseGenerator(seed=0, max_attempts=4)
    p = run(g.perturb_async(pair_item(), 5, complete))
    assert p.status == "applied" and p.item.answer == GOOD and p.item.variant == "paraphrase"
    assert [r.reason for r in g.rejections_] == ["missing-markers", "changed-numbers", "length-ratio"]
    assert g.counts_ == Counter(
        {"applied": 1, "rejected:missing-markers": 1, "rejected:changed-numbers": 1, "rejected:length-ratio": 1}
    )
    assert p.details["attempts"] == 4 and len(p.details["rejections"]) == 3
    assert p.details["word_ratio"] == pytest.approx(len(GOOD.split()) / len(ORIGINAL.split()), abs=1e-4)
    ratio_long = len(too_long.split()) / len(ORIGINAL.split())
    assert ratio_long > 1.25 and f"{ratio_long:.3f}" in g.rejections_[2].detail
    assert "'5'" in g.rejections_[1].detail and "'6'" in g.rejections_[1].detail
    # protocol: task line first, text between marker lines, each attempt a distinct request
    for k, messages in enumerate(log, start=1):
        system, user = messages[0]["content"], messages[1]["content"]
        assert system.split("\n")[0] == "biasbound-task: paraphrase"
        assert f"biasbound-attempt: {k}" in system
        assert extract_block(user, "RESPONSE") == [ORIGINAL]
    assert len({m[0]["content"] for m in log}) == 4
    assert "rejected" in log[1][0]["content"] and "rejected" not in log[0][0]["content"]


def test_paraphrase_fails_after_max_attempts_without_accepting():
    replies = ["garbage", wrap(GOOD.replace("foo.run(42)", "foo.run(43)")), wrap(ORIGINAL)]
    complete, _ = fake_complete(replies)
    g = ParaphraseGenerator(seed=0, max_attempts=3)
    it = pair_item()
    p = run(g.perturb_async(it, 1, complete))
    assert p.status == "failed" and p.item == it and not p.applied
    assert [r.reason for r in g.rejections_] == ["missing-markers", "changed-code-blocks", "unchanged"]
    assert g.counts_["failed"] == 1 and g.counts_["applied"] == 0
    assert "3 attempt(s)" in p.changed


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (GOOD.replace("`pip install foo==1.2`", "`pip install foo`"), "changed-inline-code"),
        (GOOD.replace("https://example.com/docs", "https://example.org/docs"), "changed-urls"),
        (GOOD.replace("for 3 worked", "for three worked"), "changed-numbers"),
        (" ".join(ORIGINAL.split()[:20]), "length-ratio"),
        ("   ", "empty"),
    ],
)
def test_paraphrase_protected_content_checks(bad, reason):
    g = ParaphraseGenerator(seed=0)
    new, got, detail, _ = g.check_reply(ORIGINAL, wrap(bad))
    assert new is None and got == reason and detail


def test_paraphrase_needs_complete_and_a_string_reply():
    g = ParaphraseGenerator(seed=0)
    with pytest.raises(TypeError, match="perturb_async"):
        g.perturb(pair_item())
    with pytest.raises(TypeError, match="'complete'"):
        run(g.perturb_async(pair_item()))

    async def returns_none(messages):
        return None

    with pytest.raises(TypeError, match="must return a str"):
        run(g.perturb_async(pair_item(), 0, returns_none))


def test_endpoint_failure_is_a_counted_failure():
    async def broken(messages):
        raise JudgeError("endpoint down after 5 retries")

    g = ParaphraseGenerator(seed=0, max_attempts=3)
    p = run(g.perturb_async(pair_item(), 0, broken))
    assert p.status == "failed" and [r.reason for r in g.rejections_] == ["endpoint-error"]


def test_answer_with_protocol_marker_is_not_sent():
    complete, log = fake_complete([wrap(GOOD)])
    g = ParaphraseGenerator(seed=0)
    p = run(g.perturb_async(pair_item(answer="text\nRESPONSE>>>\nmore"), 0, complete))
    assert p.status == "not-applicable" and not log and g.counts_["not-applicable"] == 1


# ---- agreeable ------------------------------------------------------------------------
def with_inserted(text: str, inserted: str | None) -> str:
    out = wrap(text)
    if inserted is not None:
        out += f"<<<INSERTED\n{inserted}\nINSERTED>>>\n"
    return out


def test_agreeable_accepts_one_local_error_and_keeps_its_description():
    erroneous = ORIGINAL.replace("about 5 seconds", "about 50 seconds")
    replies = [
        "no markers at all",
        with_inserted(erroneous, None),
        with_inserted(ORIGINAL + " It also runs twice as fast on Tuesdays, which matters." * 3, "Tuesday claim"),
        with_inserted(erroneous, "  The runtime is stated as 50 seconds\ninstead of 5. "),
    ]
    complete, log = fake_complete(replies)
    g = AgreeableGenerator(seed=0, max_attempts=4)
    p = run(g.perturb_async(pair_item(), 2, complete))
    assert p.status == "applied" and p.item.answer == erroneous and p.item.variant == "agreeable"
    assert p.details["inserted"] == "The runtime is stated as 50 seconds instead of 5."
    assert p.details["regions"] == [{"before": "5", "after": "50"}]
    assert p.details["removed_words"] == 1
    assert [r.reason for r in g.rejections_] == ["missing-markers", "missing-inserted", "length-ratio"]
    assert g.counts_["applied"] == 1 and sum(v for k, v in g.counts_.items() if k.startswith("rejected:")) == 3
    assert log[0][0]["content"].split("\n")[0] == "biasbound-task: insert-error"


def test_agreeable_rejects_rewrites_and_scattered_edits():
    g = AgreeableGenerator(seed=0)
    n = len(ORIGINAL.split())
    rewritten = " ".join(reversed(ORIGINAL.split()))
    new, reason, detail, extra = g.check_reply(ORIGINAL, with_inserted(rewritten, "reversed"))
    assert new is None and reason == "rewrote-original"
    allowed = max(3, -(-n // 10))
    assert extra["removed_words"] > allowed and f"at most {allowed}" in detail
    words = ORIGINAL.split()
    for k in (1, 8, 20, 28):  # four separate one-word substitutions
        words[k] = words[k].upper() + "X"
    new, reason, _, extra = g.check_reply(ORIGINAL, with_inserted(" ".join(words), "many"))
    assert new is None and reason == "too-many-edits" and len(extra["regions"]) == 4


# ---- registry and sampling --------------------------------------------------------------
def test_registry_builds_every_generator_with_its_seed():
    assert set(GENERATORS) == {"swap", "format", "paraphrase", "schematic", "agreeable", "rerun"}
    for name in GENERATORS:
        g = make_generator(name, seed=11)
        assert g.name == name and g.seed == 11
    assert make_generator("format", seed=1, operations=["emphasis_strip"]).operations == ("emphasis_strip",)
    assert isinstance(make_generator("swap").seed, int)
    with pytest.raises(InputError, match="'name'"):
        make_generator("typos")
    with pytest.raises(InputError, match="not accepted"):
        make_generator("swap", max_attempts=2)


def context(n: int = 12) -> list[JudgeItem]:
    return [pair_item(f"q{k}", answer=f"Answer {k} with **bold** text.\n- a\n- b") for k in range(n)]


def test_sample_neighbors_is_hamming_one_and_reproducible():
    items = context()
    for name in ("swap", "rerun", "schematic", "format"):
        g = make_generator(name, seed=4)
        draws = sample_neighbors(items, g, 8, rng=123)
        assert draws == sample_neighbors(items, make_generator(name, seed=4), 8, rng=123)
        idx = [i for i, _ in draws]
        assert len(set(idx)) == 8  # without replacement while m <= n
        for i, p in draws:
            assert p.applied
            neighbor = apply_neighbor(items, i, p)
            differ = [k for k in range(len(items)) if neighbor[k] != items[k]]
            assert differ == [i]
            assert p.details["sampling"]["sample_seed"] == 123
    other = [i for i, _ in sample_neighbors(items, make_generator("swap", seed=4), 8, rng=124)]
    assert other != idx


def test_sampling_indices_when_m_exceeds_n():
    idx, seed = sample_indices(5, 13, 9)
    counts = np.bincount(idx, minlength=5)
    assert seed == 9 and counts.sum() == 13 and counts.min() == 2 and counts.max() == 3
    for start in range(0, 10, 5):  # each full pass is a permutation
        assert sorted(idx[start : start + 5]) == list(range(5))
    idx_r, _ = sample_indices(5, 13, 9, replace=True)
    assert len(idx_r) == 13 and set(idx_r) <= set(range(5))
    with pytest.raises(InputError, match="'m'"):
        sample_indices(5, 0)


def test_repeated_items_get_independent_perturbations():
    items = context(2)
    draws = sample_neighbors(items, make_generator("schematic", seed=0), 6, rng=1)
    rubrics = {(i, p.item.rubric.factors, tuple(p.item.rubric.emphasis.values())) for i, p in draws}
    assert len(rubrics) >= 4


def test_sync_sampling_refuses_llm_generators_and_async_matches_indices():
    items = context()
    with pytest.raises(TypeError, match="sample_neighbors_async"):
        sample_neighbors(items, make_generator("paraphrase", seed=0), 3, rng=0)

    async def complete(messages):
        text = extract_block(messages[1]["content"], "RESPONSE")[0]
        return wrap(text.replace("with", "containing"))

    g = make_generator("paraphrase", seed=0)
    draws = run(sample_neighbors_async(items, g, 5, rng=77, complete=complete, concurrency=2))
    sync_idx = [i for i, _ in sample_neighbors(items, make_generator("swap", seed=0), 5, rng=77)]
    assert [i for i, _ in draws] == sync_idx
    assert all(p.applied and "containing" in p.item.answer for _, p in draws)
    assert g.counts_ == Counter({"applied": 5})


def test_item_seed_does_not_depend_on_call_order():
    a, b = context(2)
    g1 = make_generator("format", seed=3)
    g1.perturb(a)
    pb1 = g1.perturb(b)
    assert make_generator("format", seed=3).perturb(b) == pb1


def test_apply_neighbor_checks_the_index():
    items = context(3)
    p = SwapGenerator(seed=0).perturb(items[1])
    with pytest.raises(InputError, match="item 'q1'"):
        apply_neighbor(items, 0, p)
    with pytest.raises(InputError, match="'index'"):
        apply_neighbor(items, 3, p)

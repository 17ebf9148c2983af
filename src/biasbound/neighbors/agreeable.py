"""Agreeableness neighbours: an LLM inserts one subtle error; does the judge notice?

Protocol (``docs/DESIGN.md``): system message first line ``biasbound-task: insert-error``;
the answer between ``<<<RESPONSE``/``RESPONSE>>>`` lines; the reply returns the modified
answer between the same markers and a one-line description of the error between
``<<<INSERTED``/``INSERTED>>>`` lines.
"""

from __future__ import annotations

import difflib
import math
from typing import Any

from biasbound._validation import check_in_range, check_int
from biasbound.neighbors.base import CompleteFn, JudgeItem, Perturbation
from biasbound.neighbors.paraphrase import ParaphraseGenerator, extract_block, word_ratio
from biasbound.parameters import validate_params

__all__ = ["INSERT_ERROR_TEMPLATE_VERSION", "AgreeableGenerator", "edit_regions"]

INSERT_ERROR_TEMPLATE_VERSION = "insert-error-v1"


def edit_regions(original: str, new: str) -> tuple[int, list[dict[str, str]]]:
    """Compare word sequences; return (original words kept in order, changed regions).

    Uses :class:`difflib.SequenceMatcher` on whitespace-split words (``autojunk=False``).
    Each region is ``{"before": <original words>, "after": <new words>}``.
    """
    a, b = original.split(), new.split()
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    kept = sum(block.size for block in matcher.get_matching_blocks())
    regions = [
        {"before": " ".join(a[i1:i2]), "after": " ".join(b[j1:j2])}
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]
    return kept, regions


class AgreeableGenerator(ParaphraseGenerator):
    """Insert one subtle factual or logical error into the evaluated answer by an LLM.

    Parameters
    ----------
    seed, max_attempts, min_ratio, max_ratio, complete:
        As for :class:`~biasbound.neighbors.paraphrase.ParaphraseGenerator`.
    max_removed_fraction:
        The original must remain a near-subsequence of the reply: at most
        ``max(min_removed_words, ceil(max_removed_fraction * n_words))`` original words
        may be missing from the longest matching word subsequence (default 0.1, 3).
    min_removed_words:
        Floor of that allowance for short answers.
    max_regions:
        Most changed word regions allowed (default 3: one error may touch a number in
        the prose and the same number in a summary, say).

    Notes
    -----
    Accepted when the reply has exactly one ``RESPONSE`` block and one non-empty
    ``INSERTED`` block (whitespace collapsed to one line), the text differs from the
    original, the word-count ratio is within ``[min_ratio, max_ratio]``, the original is
    a near-subsequence (see above), and there are at most ``max_regions`` changed
    regions. Code may be changed (an off-by-one in code is a legitimate error).
    ``details["inserted"]`` keeps the description and ``details["regions"]`` the changed
    words, so a judge that misses the error can be measured against it.
    """

    name = "agreeable"
    task = "insert-error"
    template_version = INSERT_ERROR_TEMPLATE_VERSION

    @validate_params
    def __init__(
        self,
        *,
        seed: int | None = None,
        max_attempts: int = 3,
        min_ratio: float = 0.75,
        max_ratio: float = 1.25,
        complete: CompleteFn | None = None,
        max_removed_fraction: float = 0.1,
        min_removed_words: int = 3,
        max_regions: int = 3,
    ) -> None:
        super().__init__(seed=seed, max_attempts=max_attempts, min_ratio=min_ratio, max_ratio=max_ratio, complete=complete)
        where = type(self).__name__
        self.max_removed_fraction = check_in_range(max_removed_fraction, "max_removed_fraction", where, low=0.0, high=1.0)
        self.min_removed_words = check_int(min_removed_words, "min_removed_words", where, low=0)
        self.max_regions = check_int(max_regions, "max_regions", where, low=1)

    def check_reply(self, original: str, reply: str) -> tuple[str | None, str, str, dict[str, Any]]:
        """Validate one insert-error reply (see the class Notes); ``extra["inserted"]`` on success."""
        blocks = extract_block(reply, "RESPONSE")
        if len(blocks) != 1:
            what = "no" if not blocks else f"{len(blocks)}"
            return None, "missing-markers", f"the reply has {what} <<<RESPONSE ... RESPONSE>>> block(s), expected exactly one.", {}
        inserted_blocks = extract_block(reply, "INSERTED")
        inserted = " ".join(inserted_blocks[0].split()) if len(inserted_blocks) == 1 else ""
        if not inserted:
            return None, "missing-inserted", "the reply has no single non-empty <<<INSERTED ... INSERTED>>> description.", {}
        new = blocks[0]
        if not new.strip():
            return None, "empty", "the modified text is empty.", {}
        if new.split() == original.split():
            return None, "unchanged", "the modified text has the same words as the original.", {}
        ratio = word_ratio(original, new)
        extra: dict[str, Any] = {"word_ratio": round(ratio, 4)}
        if not self.min_ratio <= ratio <= self.max_ratio:
            return None, "length-ratio", (
                f"the word-count ratio {ratio:.3f} is outside [{self.min_ratio:g}, {self.max_ratio:g}]."
            ), extra
        n = len(original.split())
        kept, regions = edit_regions(original, new)
        removed = n - kept
        allowed = max(self.min_removed_words, math.ceil(self.max_removed_fraction * n))
        extra.update(removed_words=removed, regions=regions)
        if removed > allowed:
            return None, "rewrote-original", (
                f"{removed} of {n} original words were removed or replaced; at most {allowed} may be."
            ), extra
        if len(regions) > self.max_regions:
            return None, "too-many-edits", f"the reply changes {len(regions)} separate places; at most {self.max_regions} may change.", extra
        extra["inserted"] = inserted
        return new, "accepted", "", extra

    def _accept(self, item: JudgeItem, new: str, reply: str, details: dict[str, Any]) -> Perturbation:
        return self._result(
            item.with_changes(answer=new, variant=self.name),
            f"inserted error (attempt {details['attempts']}): {details['inserted']}",
            details,
        )

"""Deterministic, meaning-preserving markdown reformatting of a response (``format`` generator).

Sub-operations (grouped in families; at most one per family is applied):

=================  ==========================================================================
emphasis           ``emphasis_strip`` (``**b**``, ``__b__``, ``*i*``, ``_i_`` -> plain),
                   ``emphasis_add`` (bold the "Label:" lead of list items),
                   ``emphasis_swap`` (``**b**`` <-> ``*i*``)
lists              ``bullets_to_numbers`` (``-``/``*``/``+`` items -> ``1.``, ``2.``, ... per list),
                   ``numbers_to_bullets`` (``1.``/``1)`` items -> ``-``)
headings           ``heading_demote`` (``#`` -> ``##``), ``heading_promote`` (``##`` -> ``#``),
                   ``heading_to_bold`` (``## T`` -> ``**T**``), ``bold_to_heading``
                   (a line that is only ``**T**`` -> ``### T``)
blank_lines        ``blank_lines_normalise`` (runs of blank lines -> one; one blank line
                   before headings and around fenced code blocks)
=================  ==========================================================================

Protected text is never touched: fenced code blocks (backtick or tilde fences of any
length >= 3, up to the closing fence of the same character and at least the same
length, or to the end of the text when unclosed), inline code spans (a backtick run
up to the next run of the same length), URLs and TeX math (``$...$``, ``$$...$$``,
``\\(...\\)``, ``\\[...\\]``). They are masked by private-use placeholders before any
operation runs and restored byte for byte afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from biasbound._exceptions import InputError
from biasbound._validation import check_in_range
from biasbound.neighbors.base import JudgeItem, NeighborGenerator, Perturbation
from biasbound.parameters import validate_params

__all__ = [
    "FORMAT_FAMILIES",
    "FORMAT_OPERATIONS",
    "FormatGenerator",
    "MaskedText",
    "code_like_fraction",
    "mask_protected",
    "reformat",
]

# --------------------------------------------------------------------------------------
# Masking of protected text
# --------------------------------------------------------------------------------------
_PUA = re.compile("[\ue000-\ue0ff]")
_BLOCK_L, _BLOCK_R, _INLINE_L, _INLINE_R = "\ue000", "\ue001", "\ue002", "\ue003"
_PLACEHOLDER = re.compile("([\ue000\ue002])([\ue010-\ue019]+)([\ue001\ue003])")

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_URL = re.compile(r"<(?:https?|ftp)://[^>\s]*>|(?:https?|ftp)://[^\s<>()\[\]{}\"'`]+[^\s<>()\[\]{}\"'`.,;:!?]")
_MATH = re.compile(r"\$\$.+?\$\$|\\\(.+?\\\)|\\\[.+?\\\]|(?<![\\$\w])\$(?![\s$])[^$\n]+?(?<![\s\\])\$(?![\w$])", re.S)
_BACKTICKS = re.compile(r"`+")


def _encode(index: int, left: str, right: str) -> str:
    return left + "".join(chr(0xE010 + int(d)) for d in str(index)) + right


@dataclass(frozen=True)
class MaskedText:
    """A text with its protected spans replaced by placeholders.

    Attributes
    ----------
    text:
        The masked text: each fenced block is one placeholder line, each inline span
        one placeholder token (no placeholder contains a newline or a markdown marker).
    segments:
        The protected originals, indexed by placeholder number.
    kinds:
        ``"code_block"``, ``"inline_code"``, ``"url"`` or ``"math"`` per segment.
    """

    text: str
    segments: tuple[str, ...]
    kinds: tuple[str, ...]

    def unmask(self, masked: str) -> str:
        """Restore every placeholder of ``masked``; each must occur exactly once."""
        seen: list[int] = []

        def put(m: re.Match[str]) -> str:
            idx = int("".join(str(ord(c) - 0xE010) for c in m.group(2)))
            seen.append(idx)
            return self.segments[idx]

        out = _PLACEHOLDER.sub(put, masked)
        if sorted(seen) != list(range(len(self.segments))):
            raise RuntimeError("internal error in biasbound.neighbors.formatting: a protected span was lost or duplicated")
        return out

    def of_kind(self, kind: str) -> list[str]:
        """Return the protected segments of ``kind`` in text order."""
        return [s for s, k in zip(self.segments, self.kinds) if k == kind]


def _mask_fences(lines: list[str], segments: list[str], kinds: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i])
        if m is None or (m.group(1)[0] == "`" and "`" in m.group(2)):
            out.append(lines[i])
            i += 1
            continue
        fence = m.group(1)
        close = re.compile(r"^ {0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t\r]*$")
        j = i + 1
        while j < len(lines) and close.match(lines[j]) is None:
            j += 1
        end = min(j, len(lines) - 1)  # unclosed fence: runs to the end of the text
        segments.append("\n".join(lines[i : end + 1]))
        kinds.append("code_block")
        out.append(_encode(len(segments) - 1, _BLOCK_L, _BLOCK_R))
        i = end + 1
    return out


def _mask_inline_code(text: str, segments: list[str], kinds: list[str]) -> str:
    parts: list[str] = []
    pos = 0
    search_from = 0
    while True:
        m = _BACKTICKS.search(text, search_from)
        if m is None:
            break
        run = m.group(0)
        closing = re.compile(r"(?<!`)" + run + r"(?!`)").search(text, m.end())
        if closing is None:
            search_from = m.end()  # an unmatched run is literal text
            continue
        parts.append(text[pos : m.start()])
        segments.append(text[m.start() : closing.end()])
        kinds.append("inline_code")
        parts.append(_encode(len(segments) - 1, _INLINE_L, _INLINE_R))
        pos = search_from = closing.end()
    parts.append(text[pos:])
    return "".join(parts)


def _mask_regex(text: str, pattern: re.Pattern[str], kind: str, segments: list[str], kinds: list[str]) -> str:
    def put(m: re.Match[str]) -> str:
        segments.append(m.group(0))
        kinds.append(kind)
        return _encode(len(segments) - 1, _INLINE_L, _INLINE_R)

    return pattern.sub(put, text)


def mask_protected(text: str, *, urls: bool = True, math: bool = True) -> MaskedText:
    """Mask fenced code blocks, inline code spans and (optionally) URLs and TeX math.

    Parameters
    ----------
    text:
        Markdown text. It must not contain Unicode private-use characters
        U+E000-U+E0FF (used for the placeholders).
    urls, math:
        Also mask URLs / TeX math spans.

    Returns
    -------
    MaskedText

    Raises
    ------
    InputError
        If ``text`` contains private-use characters U+E000-U+E0FF.
    """
    if not isinstance(text, str):
        raise TypeError(f"The 'text' parameter of mask_protected must be a str. Got {type(text).__name__} instead.")
    if _PUA.search(text):
        raise InputError(
            "The 'text' parameter of mask_protected must not contain Unicode private-use characters "
            "U+E000-U+E0FF (they are used as placeholders)."
        )
    segments: list[str] = []
    kinds: list[str] = []
    masked = "\n".join(_mask_fences(text.split("\n"), segments, kinds))
    masked = _mask_inline_code(masked, segments, kinds)
    if urls:
        masked = _mask_regex(masked, _URL, "url", segments, kinds)
    if math:
        masked = _mask_regex(masked, _MATH, "math", segments, kinds)
    return MaskedText(text=masked, segments=tuple(segments), kinds=tuple(kinds))


# --------------------------------------------------------------------------------------
# Sub-operations on masked text: each returns (new_text, number_of_changes)
# --------------------------------------------------------------------------------------
_BOLD = r"(?<![*\\])\*\*(?![\s*])(?P<b>[^\n]+?)(?<![\s*\\])\*\*(?!\*)"
_ITAL = r"(?<![*\w\\])\*(?![\s*])(?P<i>[^*\n]+?)(?<![\s\\])\*(?![*\w])"
_BOLD_U = r"(?<![\w\\])__(?![\s_])(?P<bu>[^\n]+?)(?<![\s_\\])__(?!\w)"
_ITAL_U = r"(?<![\w\\])_(?![\s_])(?P<iu>[^_\n]+?)(?<![\s_\\])_(?!\w)"
_EMPH_ALL = re.compile("|".join((_BOLD, _ITAL, _BOLD_U, _ITAL_U)))
_EMPH_STAR = re.compile("|".join((_BOLD, _ITAL)))
_IDENT = re.compile(r"\w+")

_BULLET = re.compile(r"^([ \t]*)([-*+])([ \t]+)(?=\S)")
_NUMBER = re.compile(r"^([ \t]*)(\d{1,9})([.)])([ \t]+)(?=\S)")
_HRULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t\r]*$")
_ATX = re.compile(r"^( {0,3})(#{1,6})[ \t]+(?=\S)(.*?)(?:[ \t]+#+)?([ \t\r]*)$")
_BOLD_LINE = re.compile(r"^( {0,3})\*\*(?![\s*])([^*\n]+?)(?<![\s\\])\*\*(:?)([ \t\r]*)$")
_LABEL = re.compile(
    r"^([ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+)"  # list marker
    r"([^\W\d_][^\n:*_`\ue000-\ue0ff]{0,60}?)"  # label: starts with a letter, no markers
    r":(?=[ \t\r]|$)"
)
_BLOCK_LINE = re.compile(r"^[ \t]*\ue000[\ue010-\ue019]+\ue001[ \t\r]*$")
_CODE_LIKE = re.compile(
    r"^\s*(def |class |import |from \S+ import|return\b|for .*:$|if .*:$|while .*:$|print\(|#include|#!|"
    r"public |private |function |const |let |var )|[;{}]\s*$|^\s*(//|/\*)|^\s*[\w.\[\]]+\s*[-+*/]?=\s*\S"
)


def code_like_fraction(masked_text: str) -> float:
    """Fraction of non-blank prose lines (fenced blocks excluded) that look like code or equations.

    Answers that paste code without fences (or are mostly ``x = ...`` equations) are
    not reformatted by :class:`FormatGenerator`: there ``# comment`` would read as a
    heading and ``*`` as emphasis.
    """
    lines = [ln for ln in masked_text.split("\n") if ln.strip() and not _BLOCK_LINE.match(ln)]
    if not lines:
        return 0.0
    return sum(_CODE_LIKE.search(ln) is not None for ln in lines) / len(lines)


def _emphasis_strip(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal n
        inner = m.group("b") or m.group("i") or m.group("bu") or m.group("iu")
        if m.group("bu") is not None and _IDENT.fullmatch(inner):
            return m.group(0)  # __name__ is more likely an identifier than bold text
        n += 1
        return inner

    return _EMPH_ALL.sub(repl, text), n


def _emphasis_swap(text: str) -> tuple[str, int]:
    n = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal n
        n += 1
        return f"*{m.group('b')}*" if m.group("b") is not None else f"**{m.group('i')}**"

    return _EMPH_STAR.sub(repl, text), n


def _emphasis_add(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    n = 0
    for k, line in enumerate(lines):
        if _HRULE.match(line):
            continue
        m = _LABEL.match(line)
        if m is None or len(m.group(2).split()) > 6 or m.group(2) != m.group(2).strip():
            continue
        lines[k] = f"{m.group(1)}**{m.group(2)}**:{line[m.end():]}"
        n += 1
    return "\n".join(lines), n


def _bullets_to_numbers(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    counters: dict[int, int] = {}
    n = 0
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" \t"))
        m = _BULLET.match(line)
        if m is not None and not _HRULE.match(line):
            for level in [lv for lv in counters if lv > indent]:
                del counters[level]
            counters[indent] = counters.get(indent, 0) + 1
            lines[k] = f"{m.group(1)}{counters[indent]}.{m.group(3)}{line[m.end():]}"
            n += 1
        else:
            # any other line at this indentation or less ends the lists at >= its indentation
            for level in [lv for lv in counters if lv >= indent]:
                del counters[level]
    return "\n".join(lines), n


def _numbers_to_bullets(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    n = 0
    for k, line in enumerate(lines):
        m = _NUMBER.match(line)
        if m is not None:
            lines[k] = f"{m.group(1)}-{m.group(4)}{line[m.end():]}"
            n += 1
    return "\n".join(lines), n


def _headings(text: str) -> list[tuple[int, re.Match[str]]]:
    return [(k, m) for k, line in enumerate(text.split("\n")) if (m := _ATX.match(line)) is not None]


def _heading_shift(text: str, step: int) -> tuple[str, int]:
    found = _headings(text)
    levels = [len(m.group(2)) for _, m in found]
    if not found or min(levels) + step < 1 or max(levels) + step > 6:
        return text, 0
    lines = text.split("\n")
    for k, m in found:
        lines[k] = m.group(1) + "#" * (len(m.group(2)) + step) + lines[k][m.end(2) :]
    return "\n".join(lines), len(found)


def _heading_to_bold(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    n = 0
    for k, m in _headings(text):
        title = m.group(3)
        if "*" in title or "_" in title:
            continue
        lines[k] = f"{m.group(1)}**{title}**{m.group(4)}"
        n += 1
    return "\n".join(lines), n


def _bold_to_heading(text: str, level: int = 3) -> tuple[str, int]:
    lines = text.split("\n")
    n = 0
    for k, line in enumerate(lines):
        m = _BOLD_LINE.match(line)
        if m is None:
            continue
        lines[k] = f"{m.group(1)}{'#' * level} {m.group(2)}{m.group(3)}{m.group(4)}"
        n += 1
    return "\n".join(lines), n


def _blank_lines_normalise(text: str) -> tuple[str, int]:
    lines = text.split("\n")
    out: list[str] = []
    n = 0
    k = 0
    while k < len(lines):
        line = lines[k]
        if not line.strip():
            j = k
            while j < len(lines) and not lines[j].strip():
                j += 1
            prev = out[-1] if out else ""
            nxt = lines[j] if j < len(lines) else ""
            indented_code = prev.startswith("    ") and nxt.startswith("    ")
            if j - k > 1 and not indented_code:
                out.append(line)  # keep the first blank line verbatim, drop the others
                n += 1
            else:
                out.extend(lines[k:j])
            k = j
            continue
        needs_gap = bool(out) and out[-1].strip() != ""
        if needs_gap and (_ATX.match(line) or _BLOCK_LINE.match(line) or _BLOCK_LINE.match(out[-1])):
            out.append("")
            n += 1
        out.append(line)
        k += 1
    return "\n".join(out), n


_OPERATIONS = {
    "emphasis_strip": _emphasis_strip,
    "emphasis_add": _emphasis_add,
    "emphasis_swap": _emphasis_swap,
    "bullets_to_numbers": _bullets_to_numbers,
    "numbers_to_bullets": _numbers_to_bullets,
    "heading_demote": lambda t: _heading_shift(t, +1),
    "heading_promote": lambda t: _heading_shift(t, -1),
    "heading_to_bold": _heading_to_bold,
    "bold_to_heading": _bold_to_heading,
    "blank_lines_normalise": _blank_lines_normalise,
}

#: Families in application order; at most one operation per family is applied.
FORMAT_FAMILIES: dict[str, tuple[str, ...]] = {
    "emphasis": ("emphasis_strip", "emphasis_add", "emphasis_swap"),
    "lists": ("bullets_to_numbers", "numbers_to_bullets"),
    "headings": ("heading_demote", "heading_promote", "heading_to_bold", "bold_to_heading"),
    "blank_lines": ("blank_lines_normalise",),
}
FORMAT_OPERATIONS: tuple[str, ...] = tuple(op for ops in FORMAT_FAMILIES.values() for op in ops)


def _check_operations(operations: Sequence[str], where: str) -> tuple[str, ...]:
    if isinstance(operations, str):
        operations = (operations,)
    ops = tuple(operations)
    bad = [op for op in ops if op not in _OPERATIONS]
    if bad:
        raise InputError(
            f"The 'operations' parameter of {where} must hold names from {list(FORMAT_OPERATIONS)}. Got {bad!r} instead."
        )
    return ops


def reformat(text: str, operations: Sequence[str]) -> tuple[str, dict[str, int]]:
    """Apply the named sub-operations in the given order, leaving protected text intact.

    Parameters
    ----------
    text:
        Markdown text.
    operations:
        Names from :data:`FORMAT_OPERATIONS`.

    Returns
    -------
    new_text, counts
        The reformatted text and the number of changes each operation made
        (0 = the operation did not apply).
    """
    ops = _check_operations(operations, "reformat")
    masked = mask_protected(text)
    current = masked.text
    counts: dict[str, int] = {}
    for op in ops:
        current, counts[op] = _OPERATIONS[op](current)
    return masked.unmask(current), counts


# --------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------
class FormatGenerator(NeighborGenerator):
    """Reformat the evaluated answer's markdown without changing its words.

    Parameters
    ----------
    seed:
        Base seed (see :class:`~biasbound.neighbors.base.NeighborGenerator`).
    operations:
        Allowed sub-operations (default: all of :data:`FORMAT_OPERATIONS`).
    p_family:
        Probability that each family with an applicable operation is used; when the
        draw selects no family, one applicable family is picked uniformly, so a text
        with anything to change is always changed.

    Notes
    -----
    Per item: list the applicable operations (those that change the masked text);
    for each family in the order emphasis, lists, headings, blank_lines, include it with
    probability ``p_family`` and pick one of its applicable operations uniformly; apply
    them in that order. A text with nothing applicable (or whose changes cancel) gives a
    ``status="not-applicable"`` perturbation with ``changed="no applicable formatting
    change"``: counted in ``counts_``, never passed off as a change. Only
    ``item.answer`` is changed; the baseline and the rubric are untouched.
    """

    name = "format"

    @validate_params
    def __init__(
        self,
        *,
        seed: int | None = None,
        operations: Sequence[str] | None = None,
        p_family: float = 0.5,
        max_code_like_fraction: float = 0.3,
    ) -> None:
        super().__init__(seed=seed)
        self.operations = FORMAT_OPERATIONS if operations is None else _check_operations(operations, "FormatGenerator")
        if not self.operations:
            raise InputError("The 'operations' parameter of FormatGenerator must name at least one operation. Got none.")
        self.p_family = check_in_range(p_family, "p_family", "FormatGenerator", low=0.0, high=1.0)
        self.max_code_like_fraction = check_in_range(
            max_code_like_fraction, "max_code_like_fraction", "FormatGenerator", low=0.0, high=1.0, low_open=True
        )

    def _perturb(self, item: JudgeItem, rng: np.random.Generator, seed: int) -> Perturbation:
        details: dict[str, object] = {"seed": seed, "field": "answer"}
        try:
            masked = mask_protected(item.answer)
        except InputError:
            details.update(operations=[], counts={}, reason="answer contains private-use characters U+E000-U+E0FF")
            return self._result(item, "no applicable formatting change", details, status="not-applicable")
        code_frac = code_like_fraction(masked.text)
        if code_frac >= self.max_code_like_fraction:
            details.update(
                operations=[], counts={}, code_like_fraction=round(code_frac, 4),
                reason=f"answer looks like unfenced code or equations ({code_frac:.0%} of prose lines)",
            )
            return self._result(item, "no applicable formatting change", details, status="not-applicable")
        applicable = {
            fam: [op for op in ops if op in self.operations and _OPERATIONS[op](masked.text)[1] > 0]
            for fam, ops in FORMAT_FAMILIES.items()
        }
        families = [fam for fam, ops in applicable.items() if ops]
        chosen: dict[str, str] = {}
        for fam in families:  # fixed draw order -> reproducible given the seed
            use = rng.random() < self.p_family
            pick = applicable[fam][int(rng.integers(len(applicable[fam])))]
            if use:
                chosen[fam] = pick
        if families and not chosen:
            fam = families[int(rng.integers(len(families)))]
            chosen[fam] = applicable[fam][int(rng.integers(len(applicable[fam])))]
        current = masked.text
        counts: dict[str, int] = {}
        for fam in FORMAT_FAMILIES:
            if fam in chosen:
                current, counts[chosen[fam]] = _OPERATIONS[chosen[fam]](current)
        new_answer = masked.unmask(current)
        details["applicable"] = {fam: ops for fam, ops in applicable.items() if ops}
        details["operations"] = [op for op, c in counts.items() if c > 0]
        details["counts"] = counts
        if new_answer == item.answer:
            return self._result(item, "no applicable formatting change", details, status="not-applicable")
        changed = "formatting: " + ", ".join(f"{op} ({c}x)" for op, c in counts.items() if c > 0)
        return self._result(item.with_changes(answer=new_answer, variant=self.name), changed, details)

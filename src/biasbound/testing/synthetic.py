"""The synthetic judge: a transparent scoring formula with known, configurable biases.

A tool for testing judges and this package: because every bias is a known term of a
formula, a test can compute the judge's *true* sensitivity to any perturbation without
HTTP (:meth:`SyntheticJudge.expected_score`, :meth:`SyntheticJudge.components`) and check
that a certificate built from measured judgments holds.

The formula
-----------
For an answer text ``x`` (all hashes are SHA-256 of the config ``seed`` and their inputs,
mapped to a uniform ``u`` in (0, 1); ``Phi^-1`` is the standard normal quantile):

* ``tokens(x)``: lower-cased words after stripping formatting (markdown emphasis, headings,
  bullets and numbers at line starts, blank lines, tables) with every synonym of the
  paraphrase table mapped to its canonical word -- so :func:`fingerprint` is invariant to the
  ``format`` generator and to this judge's own ``paraphrase`` task;
* ``fp(x)``: hash of ``tokens(x)`` with the known inserted-error sentences removed;
* latent quality ``q = quality_sd * Phi^-1(u("quality", fp))``;
* markdown bonus ``md = min(markdown_cap, markdown_bonus * n_markdown(x))`` where
  ``n_markdown`` counts heading lines, bullet and numbered items, bold spans, inline code
  spans, code fences and table rows;
* length bonus ``ln = length_coef * log(1 + len(tokens(x)))``;
* error penalty ``err = error_penalty`` when ``x`` holds an inserted error sentence and
  ``u("detect", fp, sentence) < error_detect_prob`` (reproducible), else 0;
* rubric-order effect ``focus = rubric_focus * feature(first factor listed)`` where the
  feature is ``q - err`` (correctness, accuracy, relevance, helpfulness), ``log(1 + words)``
  (completeness, depth, detail), ``-log(1 + words)`` (conciseness), ``md`` (style,
  creativity) or 0 (anything else);
* ``base(x) = q + md + ln - err + focus``.

Pairwise: ``d = base(A) + position_bias + j_A - base(B) - j_B`` with per-rerun jitter
``j = jitter_sd * Phi^-1(u("jitter", seed, fp, slot))``; verdict ``A>>B`` if
``d >= strong_threshold``, ``A>B`` if ``d >= tie_threshold``, ``A=B`` if ``|d| < tie_threshold``,
and symmetrically. Factor verdicts apply the same thresholds to the difference of the
factor's own feature (correctness ``q - err``, completeness ``log(1+words)``, conciseness
``-log(1+words)``, style ``md``; safety and unknown factors tie).

Single: ``rating = clip(floor(rating_center + rating_scale * (base + j - rating_offset) + 1/2), 1, 10)``;
factor scores use the same map on helpfulness ``base + j``, relevance ``q``, accuracy
``q - err``, depth ``q + ln``, creativity ``q + md``, detail ``ln + md`` (each plus
``rating_offset`` where the term has no length part, so all sit on the same scale).

Over reruns the jitters are i.i.d. normal, so verdict probabilities and expected scores
have closed forms (:meth:`SyntheticJudge.verdict_probabilities`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import NormalDist
from typing import Any

from biasbound._exceptions import InputError
from biasbound._validation import check_in_range, check_int
from biasbound.parameters import bounds
from biasbound.judge.parsing import PAIRWISE_VERDICTS, rubric_factors, task_of
from biasbound.judge.prompts import PAIRWISE_FACTORS, SINGLE_FACTORS

__all__ = [
    "ERROR_SENTENCES",
    "SYNONYMS",
    "SyntheticJudge",
    "SyntheticJudgeConfig",
    "canonical_tokens",
    "count_markdown",
    "find_inserted_error",
    "fingerprint",
]

_NORMAL = NormalDist()

#: Synonym pairs used by the synthetic ``paraphrase`` task; the fingerprint maps both to the first.
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("use", "utilize"), ("uses", "utilizes"), ("used", "utilized"), ("using", "utilizing"),
    ("help", "assist"), ("helps", "assists"), ("big", "large"), ("show", "demonstrate"),
    ("shows", "demonstrates"), ("start", "begin"), ("starts", "begins"), ("buy", "purchase"),
    ("make", "create"), ("makes", "creates"), ("need", "require"), ("needs", "requires"),
    ("get", "obtain"), ("often", "frequently"), ("maybe", "perhaps"), ("important", "crucial"),
    ("quick", "rapid"), ("easy", "simple"), ("method", "approach"), ("methods", "approaches"),
    ("problem", "issue"), ("problems", "issues"), ("also", "additionally"), ("choose", "select"),
    ("check", "verify"), ("enough", "sufficient"), ("whole", "entire"), ("fix", "repair"),
    ("therefore", "thus"), ("example", "instance"), ("examples", "instances"), ("main", "primary"),
    ("keep", "maintain"), ("improve", "enhance"), ("find", "locate"), ("try", "attempt"),
)

#: False statements the synthetic ``insert-error`` task inserts (none contains a synonym-table word).
ERROR_SENTENCES: tuple[str, ...] = (
    "Note that water boils at 50 degrees Celsius at sea level.",
    "Recall that the Earth is the largest planet in the Solar System.",
    "Recall that 7 multiplied by 8 equals 54.",
    "Note that Python lists are indexed starting at 1.",
    "Note that light travels slower than sound.",
    "Recall that the square root of 144 is 14.",
)

_PARTNER: dict[str, str] = {}
_CANON: dict[str, str] = {}
for _a, _b in SYNONYMS:
    _PARTNER[_a], _PARTNER[_b] = _b, _a
    _CANON[_a] = _CANON[_b] = _a

_LINE_MARKER_RE = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+|[-*+]\s+|\d{1,3}[.)]\s+)?")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_MD_PATTERNS = (
    re.compile(r"^\s{0,3}#{1,6}\s+\S", re.M),            # headings
    re.compile(r"^\s*[-*+]\s+\S", re.M),                 # bullet items
    re.compile(r"^\s*\d{1,3}[.)]\s+\S", re.M),           # numbered items
    re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"),       # bold spans
    re.compile(r"(?<!`)`[^`\n]+`(?!`)"),                 # inline code
    re.compile(r"^\s*```", re.M),                        # code fences (each fence line)
    re.compile(r"^\s*\|.*\|\s*$", re.M),                 # table rows
)
_FOCUS_FEATURE = {
    "correctness": "quality", "accuracy": "quality", "relevance": "quality", "helpfulness": "quality",
    "completeness": "length", "depth": "length", "detail": "length",
    "conciseness": "brevity", "style": "markdown", "creativity": "markdown",
}


def _raw_tokens(text: str) -> list[str]:
    words: list[str] = []
    for line in text.splitlines():
        words.extend(_WORD_RE.findall(_LINE_MARKER_RE.sub("", line, count=1).casefold()))
    return words


def canonical_tokens(text: str) -> list[str]:
    """Lower-cased words of ``text`` with formatting stripped and synonyms canonicalised."""
    return [_CANON.get(w, w) for w in _raw_tokens(text)]


_ERROR_TOKENS: tuple[tuple[str, ...], ...] = tuple(tuple(canonical_tokens(s)) for s in ERROR_SENTENCES)


def _find_sub(tokens: Sequence[str], sub: Sequence[str]) -> int:
    """Index of the first occurrence of the token run ``sub`` in ``tokens`` (-1 when absent)."""
    n = len(sub)
    if n == 0:
        return 0
    first, rest = sub[0], list(sub[1:])
    last_start = len(tokens) - n
    i = -1
    while i < last_start:
        try:  # list.index scans in C: most texts hold no error sentence's first word at all
            i = tokens.index(first, i + 1, last_start + 1)
        except ValueError:
            return -1
        if list(tokens[i + 1:i + n]) == rest:
            return i
    return -1


def find_inserted_error(text: str) -> int | None:
    """Index into :data:`ERROR_SENTENCES` of the first inserted error sentence found in ``text``, or ``None``."""
    return _find_error(canonical_tokens(text))


def _find_error(tokens: list[str]) -> int | None:
    for k, sub in enumerate(_ERROR_TOKENS):
        if _find_sub(tokens, sub) >= 0:
            return k
    return None


def _without_errors(tokens: list[str]) -> list[str]:
    changed = True
    while changed:
        changed = False
        for sub in _ERROR_TOKENS:
            i = _find_sub(tokens, sub)
            if i >= 0:
                tokens = tokens[:i] + tokens[i + len(sub):]
                changed = True
    return tokens


def fingerprint(text: str) -> str:
    """Content fingerprint: invariant to formatting, to synonym-table swaps and to inserted error sentences."""
    return _fingerprint_of(canonical_tokens(text))


def _fingerprint_of(tokens: list[str]) -> str:
    return hashlib.sha256(" ".join(_without_errors(tokens)).encode("utf-8")).hexdigest()


def count_markdown(text: str) -> int:
    """Number of markdown features in ``text`` (see the module docstring)."""
    return sum(len(p.findall(text)) for p in _MD_PATTERNS)


@dataclass(frozen=True)
class SyntheticJudgeConfig:
    """Coefficients of the synthetic judge (see the module docstring for the formula).

    All coefficients are finite; probabilities in [0, 1]; ``0 <= tie_threshold <= strong_threshold``.
    """

    seed: int = 0
    quality_sd: float = 1.0
    markdown_bonus: float = 0.15
    markdown_cap: float = 0.6
    length_coef: float = 0.25
    position_bias: float = 0.3
    error_penalty: float = 1.5
    error_detect_prob: float = 0.8
    rubric_focus: float = 0.3
    jitter_sd: float = 0.2
    tie_threshold: float = 0.3
    strong_threshold: float = 1.2
    rating_center: float = 5.5
    rating_scale: float = 1.5
    rating_offset: float = 1.2
    paraphrase_rate: float = 0.7

    def __post_init__(self) -> None:
        where = "SyntheticJudgeConfig"
        check_int(self.seed, "seed", where, **bounds("seed"))
        for name in ("quality_sd", "markdown_bonus", "markdown_cap", "length_coef", "error_penalty", "jitter_sd",
                     "tie_threshold", "rating_scale"):
            check_in_range(getattr(self, name), name, where, low=0)
        for name in ("position_bias", "rubric_focus", "rating_center", "rating_offset"):
            check_in_range(getattr(self, name), name, where)
        for name in ("error_detect_prob", "paraphrase_rate"):
            check_in_range(getattr(self, name), name, where, low=0, high=1)
        check_in_range(self.strong_threshold, "strong_threshold", where, low=self.tie_threshold)

    def to_dict(self) -> dict[str, Any]:
        """The coefficients as a dict."""
        return asdict(self)


@dataclass(frozen=True)
class AnswerTerms:
    """The deterministic terms of one answer (see the module docstring)."""

    fingerprint: str
    words: int
    quality: float
    markdown_features: int
    markdown: float
    length: float
    error_sentence: int | None
    error_detected: bool
    error: float
    focus: float
    base: float
    features: dict[str, float] = field(default_factory=dict)


def _parse_between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    j = text.find(end, i)
    if j < 0:
        return None
    return text[i:j].strip("\n")


def _pairwise_parts(user: str) -> tuple[str, str, str]:
    question = _parse_between(user, "<|User Prompt|>", "<|The Start of Assistant A's Answer|>")
    a = _parse_between(user, "<|The Start of Assistant A's Answer|>", "<|The End of Assistant A's Answer|>")
    b = _parse_between(user, "<|The Start of Assistant B's Answer|>", "<|The End of Assistant B's Answer|>")
    if question is None or a is None or b is None:
        raise InputError("The judge-pairwise user message must hold <|User Prompt|> and both "
                         "<|The Start/End of Assistant A/B's Answer|> blocks.")
    return question.strip(), a, b


def _single_parts(user: str) -> str:
    answer = _parse_between(user, "[The Start of Assistant's Answer]", "[The End of Assistant's Answer]")
    if answer is None:
        raise InputError("The judge-single user message must hold [The Start of Assistant's Answer] ... "
                         "[The End of Assistant's Answer].")
    return answer


#: Fenced code blocks (``` or ~~~, any fence length) and inline code spans, kept by the paraphraser.
_CODE_SPLIT = re.compile(r"((?:^|\n)(?P<fence>`{3,}|~{3,})[^\n]*\n.*?\n(?P=fence)[^\n]*(?=\n|$)|`[^`\n]+`)", re.S)


def _rewrite_variation(messages: Sequence[Mapping[str, Any]]) -> int:
    """The ``biasbound-variation``/``biasbound-attempt`` header lines as one integer (0 when absent).

    A retried rewrite request differs only in these lines; folding them into the seed lets a
    retry get a different rewrite, as a sampled LLM would.
    """
    system = next((str(m.get("content", "")) for m in messages if m.get("role") == "system"), "")
    found = re.findall(r"^biasbound-(?:variation|attempt):\s*(\d+)\s*$", system, flags=re.M)
    return int(hashlib.sha256(":".join(found).encode()).hexdigest()[:12], 16) if found else 0


def _rewrite_input(user: str, task: str) -> str:
    m = re.search(r"^<<<RESPONSE[ \t]*\n(.*?)\n?^RESPONSE>>>[ \t]*$", user, re.M | re.S)
    if m is None:
        raise InputError(f"The {task} user message must hold the text between a '<<<RESPONSE' line and a 'RESPONSE>>>' line.")
    return m.group(1)


def _user_message(messages: Sequence[Mapping[str, Any]]) -> str:
    users = [m.get("content") for m in messages if m.get("role") == "user"]
    if not users or not isinstance(users[-1], str):
        raise InputError("The 'messages' parameter must hold a user message with str content.")
    return users[-1]


class SyntheticJudge:
    """The pure synthetic judge: ``reply(messages, seed)`` is what the HTTP server sends back.

    Parameters
    ----------
    config:
        The coefficients; ``None`` uses the defaults.

    Examples
    --------
    >>> from biasbound.judge.prompts import render_pairwise
    >>> judge = SyntheticJudge()
    >>> msgs = render_pairwise("Q?", "An answer.", "**An** answer.")
    >>> judge.reply(msgs, seed=0).splitlines()[-1].startswith("My final verdict is: [[")
    True
    """

    def __init__(self, config: SyntheticJudgeConfig | None = None) -> None:
        if config is None:
            config = SyntheticJudgeConfig()
        if not isinstance(config, SyntheticJudgeConfig):
            raise TypeError(f"The 'config' parameter of SyntheticJudge must be a SyntheticJudgeConfig. Got {type(config).__name__} instead.")
        self.config = config

    # ------------------------------------------------------------------ hashing helpers

    def _u(self, *parts: object) -> float:
        digest = hashlib.sha256("\x1f".join(str(p) for p in (self.config.seed, *parts)).encode("utf-8")).digest()
        return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64

    def _z(self, *parts: object) -> float:
        return _NORMAL.inv_cdf(self._u(*parts))

    # ------------------------------------------------------------------ the formula

    def terms(self, answer: str, *, first_factor: str | None = None) -> AnswerTerms:
        """The deterministic terms of ``answer`` under a rubric whose first factor is ``first_factor``."""
        c = self.config
        tokens = canonical_tokens(answer)  # tokenised once for the fingerprint, the length and the error search
        fp = _fingerprint_of(tokens)
        words = len(tokens)
        quality = c.quality_sd * self._z("quality", fp)
        n_md = count_markdown(answer)
        md = min(c.markdown_cap, c.markdown_bonus * n_md)
        log_words = math.log1p(words)
        length = c.length_coef * log_words
        err_k = _find_error(tokens)
        detected = err_k is not None and self._u("detect", fp, err_k) < c.error_detect_prob
        err = c.error_penalty if detected else 0.0
        features = {"quality": quality - err, "length": log_words, "brevity": -log_words, "markdown": md}
        feature = _FOCUS_FEATURE.get(first_factor or "", None)
        focus = c.rubric_focus * features[feature] if feature is not None else 0.0
        base = quality + md + length - err + focus
        return AnswerTerms(fp, words, quality, n_md, md, length, err_k, detected, err, focus, base, features)

    def _jitter(self, seed: int, fp: str, slot: str) -> float:
        return self.config.jitter_sd * self._z("jitter", int(seed), fp, slot)

    def _verdict(self, d: float) -> str:
        c = self.config
        if d >= c.strong_threshold:
            return "A>>B"
        if d >= c.tie_threshold:
            return "A>B"
        if d > -c.tie_threshold:
            return "A=B"
        if d > -c.strong_threshold:
            return "B>A"
        return "B>>A"

    def _rating(self, x: float) -> int:
        c = self.config
        return int(min(10, max(1, math.floor(c.rating_center + c.rating_scale * (x - c.rating_offset) + 0.5))))

    def components(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """The deterministic part of the judgment of ``messages`` (no jitter).

        Returns a dict with ``task``, ``factors`` (rubric order) and, for ``judge-pairwise``,
        ``a``/``b`` (:class:`AnswerTerms`) and ``d0 = base(A) + position_bias - base(B)``; for
        ``judge-single``, ``answer`` and ``x0 = base``.
        """
        task = task_of(messages)
        user = _user_message(messages)
        if task == "judge-pairwise":
            factors = rubric_factors(messages) or PAIRWISE_FACTORS
            _, a, b = _pairwise_parts(user)
            ta, tb = self.terms(a, first_factor=factors[0]), self.terms(b, first_factor=factors[0])
            return {"task": task, "factors": factors, "a": ta, "b": tb,
                    "d0": ta.base + self.config.position_bias - tb.base}
        if task == "judge-single":
            factors = rubric_factors(messages) or SINGLE_FACTORS
            t = self.terms(_single_parts(user), first_factor=factors[0])
            return {"task": task, "factors": factors, "answer": t, "x0": t.base}
        raise InputError(f"The 'messages' of SyntheticJudge.components must be a judge-pairwise or judge-single request. Got task {task!r} instead.")

    def verdict_probabilities(self, messages: Sequence[Mapping[str, Any]]) -> dict[Any, float]:
        """Exact distribution of the overall verdict (pairwise) or rating (single) over reruns.

        Pairwise: ``d ~ N(d0, 2 jitter_sd^2)``; single: ``base + j ~ N(base, jitter_sd^2)``.
        A zero ``jitter_sd`` gives a point mass.
        """
        c = self.config
        comp = self.components(messages)
        if comp["task"] == "judge-pairwise":
            mean, sd = comp["d0"], c.jitter_sd * math.sqrt(2.0)
            cuts = [-c.strong_threshold, -c.tie_threshold, c.tie_threshold, c.strong_threshold]
            labels = ["B>>A", "B>A", "A=B", "A>B", "A>>B"]
            # the verdict bins are (-inf, -s], (-s, -t], (-t, t), [t, s), [s, inf); boundaries have probability 0
            if sd == 0.0:
                v = self._verdict(mean)
                return {lab: float(lab == v) for lab in PAIRWISE_VERDICTS}
            cdf = [NormalDist(mean, sd).cdf(x) for x in cuts]
            shares = [cdf[0], cdf[1] - cdf[0], cdf[2] - cdf[1], cdf[3] - cdf[2], 1.0 - cdf[3]]
            out = dict(zip(labels, shares))
            return {lab: out[lab] for lab in PAIRWISE_VERDICTS}
        mean, sd = comp["x0"], c.jitter_sd
        if sd == 0.0 or c.rating_scale == 0.0:
            r = self._rating(mean)
            return {k: float(k == r) for k in range(1, 11)}
        # rating k <=> center + scale*(x - offset) in [k - 1/2, k + 1/2), with 1 and 10 absorbing the tails
        dist = NormalDist(mean, sd)

        def cdf_at(level: float) -> float:
            return dist.cdf(c.rating_offset + (level - c.rating_center) / c.rating_scale)

        probs: dict[Any, float] = {}
        for k in range(1, 11):
            upper = 1.0 if k == 10 else cdf_at(k + 0.5)
            lower = 0.0 if k == 1 else cdf_at(k - 0.5)
            probs[k] = upper - lower
        return probs

    def expected_score(
        self, messages: Sequence[Mapping[str, Any]], *, verdict_scores: Mapping[str, float] | None = None
    ) -> float:
        """Expected score over reruns: pairwise from position A's view, single as the expected rating.

        Parameters
        ----------
        messages:
            A ``judge-pairwise`` or ``judge-single`` request.
        verdict_scores:
            Score of each pairwise verdict from A's view; default ``A>>B: 1, A>B: 0.75, A=B: 0.5,
            B>A: 0.25, B>>A: 0``.
        """
        probs = self.verdict_probabilities(messages)
        if task_of(messages) == "judge-single":
            return float(sum(k * p for k, p in probs.items()))
        scores = verdict_scores or {"A>>B": 1.0, "A>B": 0.75, "A=B": 0.5, "B>A": 0.25, "B>>A": 0.0}
        return float(sum(scores[v] * p for v, p in probs.items()))

    def judgment(self, messages: Sequence[Mapping[str, Any]], seed: int | None) -> dict[str, Any]:
        """The judgment for one rerun ``seed``: overall verdict/rating, factor values and the score."""
        seed = 0 if seed is None else int(seed)
        comp = self.components(messages)
        c = self.config
        if comp["task"] == "judge-pairwise":
            ta, tb = comp["a"], comp["b"]
            d = comp["d0"] + self._jitter(seed, ta.fingerprint, "A") - self._jitter(seed, tb.fingerprint, "B")
            factor_feature = {"correctness": "quality", "accuracy": "quality", "completeness": "length",
                              "conciseness": "brevity", "style": "markdown"}
            factors = {}
            for name in comp["factors"]:
                feat = factor_feature.get(name)
                diff = 0.0 if feat is None else ta.features[feat] - tb.features[feat]
                factors[name] = self._verdict(diff)
            return {"task": comp["task"], "overall": self._verdict(d), "score": d, "factors": factors}
        t = comp["answer"]
        x = t.base + self._jitter(seed, t.fingerprint, "single")
        off = c.rating_offset
        raw = {"helpfulness": x, "relevance": t.quality + off, "accuracy": t.quality - t.error + off,
               "depth": t.quality + t.length, "creativity": t.quality + t.markdown + off, "detail": t.length + t.markdown}
        ratings = {name: self._rating(raw.get(name, x)) for name in comp["factors"]}
        return {"task": comp["task"], "overall": self._rating(x), "score": x, "factors": ratings}

    # ------------------------------------------------------------------ rewrite tasks

    def paraphrase(self, text: str, seed: int | None) -> str:
        """Swap synonym-table words (each occurrence with probability ``paraphrase_rate``, decided by hash)."""
        seed = 0 if seed is None else int(seed)
        counter = iter(range(10**9))

        def swap(m: re.Match[str]) -> str:
            word = m.group(0)
            i = next(counter)
            partner = _PARTNER.get(word.lower())
            if partner is None or self._u("paraphrase", seed, i, word.lower()) >= self.config.paraphrase_rate:
                return word
            if word.isupper() and len(word) > 1:
                return partner.upper()
            if word[0].isupper():
                return partner[0].upper() + partner[1:]
            return partner

        # Like a careful rewriter: code (fenced blocks, inline spans) is never touched.
        out, pos = [], 0
        for code in _CODE_SPLIT.finditer(text):
            out += [re.sub(r"[A-Za-z]+", swap, text[pos : code.start()]), code.group(0)]
            pos = code.end()
        out.append(re.sub(r"[A-Za-z]+", swap, text[pos:]))
        return "".join(out)

    def insert_error(self, text: str, seed: int | None) -> tuple[str, str]:
        """Insert one known false sentence after the first paragraph (or at the end); return (text, description)."""
        seed = 0 if seed is None else int(seed)
        k = int(self._u("insert", seed, fingerprint(text)) * len(ERROR_SENTENCES)) % len(ERROR_SENTENCES)
        sentence = ERROR_SENTENCES[k]
        paragraphs = text.split("\n\n")
        if len(paragraphs) >= 2:
            out = "\n\n".join([paragraphs[0], sentence, *paragraphs[1:]])
        else:
            out = text.rstrip() + "\n\n" + sentence
        return out, f"Inserted the false claim: {sentence}"

    # ------------------------------------------------------------------ the reply

    def reply(self, messages: Sequence[Mapping[str, Any]], seed: int | None = None) -> str:
        """The reply text for a chat request (any of the four protocol tasks)."""
        task = task_of(messages)
        user = _user_message(messages)
        if task in ("paraphrase", "insert-error"):
            seed = (0 if seed is None else int(seed)) + _rewrite_variation(messages)
        if task == "paraphrase":
            return f"<<<RESPONSE\n{self.paraphrase(_rewrite_input(user, task), seed)}\nRESPONSE>>>"
        if task == "insert-error":
            out, desc = self.insert_error(_rewrite_input(user, task), seed)
            return f"<<<RESPONSE\n{out}\nRESPONSE>>>\n<<<INSERTED\n{desc}\nINSERTED>>>"
        if task not in ("judge-pairwise", "judge-single"):
            raise InputError("The system message's first line must be 'biasbound-task: <task>' with task one of "
                             f"judge-pairwise, judge-single, paraphrase, insert-error. Got {task!r} instead.")
        j = self.judgment(messages, seed)
        titles = {name: name.replace("_", " ").capitalize() for name in j["factors"]}
        if task == "judge-pairwise":
            lines = [f"Synthetic judge (biasbound.testing): score difference A - B = {j['score']:+.4f}.", ""]
            lines += [f"{titles[n]}: [[{v}]]" for n, v in j["factors"].items()]
            lines += ["", f"My final verdict is: [[{j['overall']}]]"]
        else:
            lines = [f"Synthetic judge (biasbound.testing): latent score = {j['score']:+.4f}.", ""]
            lines += [f"{titles[n]}: {v}" for n, v in j["factors"].items()]
            lines += ["", f"Rating: [[{j['overall']}]]"]
        return "\n".join(lines)

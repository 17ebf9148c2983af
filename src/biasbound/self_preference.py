"""Self-preference: does a judge favour the answers of its own model family?

What it measures. For a judge whose family is known (``gpt-4o`` → ``openai``) and judged models whose families are
known, the judge's mean score (the model's view: for pairwise data its win rate against the baseline, 1 = win,
0.5 = tie) of its own family's answers minus its mean score of the other families' answers:

    self_preference = mean{ s(m, i) : family(m) = family(judge) } − mean{ s(m, i) : family(m) ≠ family(judge) }

where s(m, i) is the original judgment of model m on item i (variant ``original``, rerun 0), averaged over both
presentation orders when the data hold them (game 1 and game 2: a position preference then cancels). The interval
is a percentile bootstrap over **items** (one draw of items for both groups, seeded; rounds, seed and level are
written into the figure). Models of unknown family are left out and counted.

What it does not separate (confounds). A positive value is what self-preference predicts, but also what a family
that simply makes better models produces: the figure compares *different models*, so quality differences between
the families are inside it. Read it beside a judge of another family on the same answers (a panel): a gap that
appears only under the own-family judge is the self-preference signal. Other confounds: the baseline's family (a
judge of the baseline's family grades every comparison against its own kin), style shared within a family (length,
markdown) that the judge may prefer for itself, an ensemble judge (no single family), and model names that hide
their family (fine-tunes of another family's base model). Families come from a mapping the user gives, else from
names that say it (:data:`DEFAULT_FAMILIES`).
"""

from __future__ import annotations

from biasbound.parameters import validate_params
import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_FAMILIES", "check_families", "family_of", "parse_families", "self_preference"]

#: (pattern on a name's lower-cased tokens, family): the first match names the family. A name says its family when
#: a token starts with one of these words (``gpt-4o-mini`` → openai, ``meta-llama/Llama-3-8B`` → meta).
DEFAULT_FAMILIES: tuple[tuple[str, str], ...] = (
    (r"(chat)?gpt|o1|o3|o4|davinci|text-davinci|openai", "openai"),
    (r"claude|anthropic", "anthropic"),
    (r"gemini|gemma|palm2?|bard|google", "google"),
    (r"llama|meta", "meta"),
    (r"mistral|mixtral|ministral|codestral", "mistral"),
    (r"qwen|qwq|alibaba", "alibaba"),
    (r"deepseek", "deepseek"),
    (r"command|cohere|aya", "cohere"),
    (r"grok|xai", "xai"),
    (r"phi|microsoft", "microsoft"),
    (r"nova|amazon|titan", "amazon"),
    (r"jamba|ai21", "ai21"),
    (r"falcon", "tii"),
)
_RULES = [(re.compile(rf"^(?:{pat})(?:$|[-_.:0-9])"), fam) for pat, fam in DEFAULT_FAMILIES]


def check_families(families: Any, where: str = "certify") -> dict[str, str]:
    """The ``families`` parameter checked: a mapping of non-empty names to non-empty families (one sentence
    otherwise); names are matched exactly (before the name rules of :data:`DEFAULT_FAMILIES`)."""
    from biasbound._exceptions import InputError

    if not isinstance(families, Mapping):
        raise InputError(f"The 'families' parameter of {where} must be a mapping of judge or model names to families. "
                         f"Got {type(families).__name__} instead.")
    out: dict[str, str] = {}
    for name, fam in families.items():
        if not (isinstance(name, str) and name.strip() and isinstance(fam, str) and fam.strip()):
            raise InputError(f"The 'families' parameter of {where} must map names to families, both non-empty text. "
                             f"Got {name!r}: {fam!r} instead.")
        out[name.strip()] = fam.strip()
    return out


def parse_families(pairs: Sequence[str] | None, where: str = "certify") -> dict[str, str] | None:
    """``--family NAME=FAMILY`` (repeated) as a mapping; None when not given; one sentence for a bad pair."""
    from biasbound._exceptions import InputError

    if not pairs:
        return None
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, fam = str(pair).rpartition("=")
        if not sep or not name.strip() or not fam.strip():
            raise InputError(f"The '--family' option of {where} must be NAME=FAMILY (a judge or model name and its "
                             f"family, e.g. my-judge=openai). Got {pair!r} instead.")
        if name.strip() in out and out[name.strip()] != fam.strip():
            raise InputError(f"The '--family' option of {where} gives {name.strip()!r} two families "
                             f"({out[name.strip()]!r} and {fam.strip()!r}); give one.")
        out[name.strip()] = fam.strip()
    return out


def family_of(name: Any, families: Mapping[str, str] | None = None) -> str | None:
    """The family of a judge or model name: the user's mapping first (exact name), else the first
    :data:`DEFAULT_FAMILIES` rule a token of the name matches (a token: a part between ``/``, ``(``, ``)``, spaces);
    None when no rule matches (``ensemble``, ``vicuna-13b``)."""
    text = str(name)
    if families and text in families:
        return str(families[text])
    for token in re.split(r"[/()\s]+", text.lower()):
        for rule, fam in _RULES:
            if token and rule.match(token):
                return fam
    return None


@validate_params
def self_preference(frame: pd.DataFrame, judge: str, *, families: Mapping[str, str] | None = None,
                    level: float = 0.95, rounds: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The self-preference figure of one judge's rows (module docstring).

    Returns
    -------
    dict
        ``known`` False with a ``note`` when the judge's family, or models of its own and of another family, are
        missing; else ``value`` (own − others), ``lo``/``hi`` (item bootstrap), ``own``/``others`` (their means),
        ``judge_family``, ``own_models``/``other_models`` (names), ``unknown_models`` (left out), ``both_orders``,
        ``items``, ``rounds``, ``seed``, ``level``.
    """
    fam = family_of(judge, families)
    if fam is None:
        return {"known": False, "note": f"unknown: the judge's family is not known from its name {judge!r} (give a "
                                        "families mapping)"}
    canon = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & frame["score"].notna()]
    if canon.empty:
        return {"known": False, "judge_family": fam, "note": "unknown: no original judgment"}
    both_orders = bool((canon["game"] == 2).any() and (canon["game"] == 1).any())
    per = canon.groupby([canon["model"].astype(str), canon["item_id"].astype(str)])["score"].mean()
    models = per.index.get_level_values(0)
    fam_of = {m: family_of(m, families) for m in pd.unique(models)}
    own_m = sorted(m for m, f in fam_of.items() if f == fam)
    other_m = sorted(m for m, f in fam_of.items() if f is not None and f != fam)
    unknown = sorted(m for m, f in fam_of.items() if f is None)
    base = {"judge_family": fam, "own_models": own_m, "other_models": other_m, "unknown_models": unknown,
            "both_orders": both_orders}
    if not own_m or not other_m:
        return {"known": False, **base, "note": f"unknown: the judged models hold no {'' if own_m else fam + ' '}"
                                                f"{'model of another known family' if own_m else 'model'} to compare"}
    group = np.where(np.isin(models, own_m), 1, np.where(np.isin(models, other_m), 0, -1))
    keep = group >= 0
    s = per.to_numpy(dtype=float)[keep]
    g = group[keep]
    items, codes = np.unique(per.index.get_level_values(1)[keep], return_inverse=True)
    sums = np.zeros((items.size, 4))  # per item: own sum, own count, others' sum, others' count
    np.add.at(sums, codes, np.column_stack([s * g, g, s * (1 - g), 1 - g]))
    own, other = sums[:, 0].sum() / sums[:, 1].sum(), sums[:, 2].sum() / sums[:, 3].sum()
    rng = np.random.default_rng(seed)
    w = rng.multinomial(items.size, np.full(items.size, 1.0 / items.size), size=int(rounds)).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (w @ sums[:, 0]) / (w @ sums[:, 1]) - (w @ sums[:, 2]) / (w @ sums[:, 3])
    draws = draws[np.isfinite(draws)]
    a = (1.0 - level) / 2.0
    lo, hi = (float(np.quantile(draws, a)), float(np.quantile(draws, 1.0 - a))) if draws.size else (None, None)
    return {"known": True, **base, "value": float(own - other), "lo": lo, "hi": hi, "own": float(own),
            "others": float(other), "items": int(items.size), "rounds": int(rounds), "seed": int(seed),
            "level": float(level),
            "reading": "the judge's mean score of its own family's answers minus the other families' (both orders "
                       "averaged when present); confounded with the families' quality: compare with a judge of "
                       "another family on the same answers"}

"""Paired comparison of two judges (or two versions of one judge) scored on the same items.

``biasbound compare`` calls a card figure *moved* when the OLD and NEW 95% intervals are disjoint. For two
judges scored on the same (model, item) pairs that rule wastes the pairing: the two sides share the items'
difficulty, so the difference is far better determined than either figure alone. This module answers the
paired questions:

* **verdict changes** — per (model, item), the original verdict (variant ``original``, rerun 0, first
  presentation) of OLD against NEW's; the exact McNemar test (:func:`scipy.stats.binomtest` with p = 1/2 on
  the discordant pairs: ``up`` = NEW's verdict above OLD's, ``down`` = below). With more than two verdict
  levels (ties) this is the exact sign test on the changed pairs, McNemar's test read as "as many changes
  up as down";
* **flip rates** — per neighbour generator both sides hold (``swap``, ``variant:NAME``, ``rerun``), per
  (model, item, rerun) pair present on both sides: did the verdict flip under OLD, under NEW? Exact McNemar on
  the pairs that flip under one side only, and the flip-rate difference NEW − OLD with its paired bootstrap
  interval;
* **scores** — per model, the mean original score NEW − OLD over the items both hold, with its paired bootstrap
  interval.

The bootstrap resamples **items** (one item is one unit across models and reruns: the same draw of items for
both sides and every model), seeded, percentile interval at ``level``; rounds, seed and level are written into
the result. A verdict is the score level, or for continuous scores (more than
:data:`biasbound.card.DISCRETE_LEVELS` distinct values) the side of 0.5, as on the judge card.

A paired figure *moved* when its test rejects at ``1 − level`` (McNemar's p below it, or the bootstrap interval
of a score difference excluding 0). Each figure is tested at that level on its own (no correction over
figures), as the disjoint-interval rule does.

``--fail-if`` figures (:data:`PAIRED_FIGURES`): ``paired_verdict_p``, ``paired_flip_rate_diff[:GEN]``,
``paired_flip_rate_p[:GEN]``, ``paired_score_diff`` (the model difference largest in size, signed).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from biasbound._exceptions import InputError
from biasbound.parameters import validate_params

__all__ = [
    "PAIRED_FIGURES",
    "check_paired",
    "compare_paired",
    "exact_mcnemar",
    "is_paired_condition",
    "judge_pairs",
    "paired_comparison",
    "paired_figure",
    "paired_moves",
    "parse_paired",
    "print_paired",
]

#: ``--fail-if`` figures of the paired comparison (``NAME`` or ``NAME:GENERATOR``).
PAIRED_FIGURES = ("paired_verdict_p", "paired_flip_rate_diff", "paired_flip_rate_p", "paired_score_diff")
LEVEL = 0.95
ROUNDS = 2000
_KEY = ["model", "item_id"]


def exact_mcnemar(up: int, down: int) -> float:
    """Two-sided exact McNemar p-value: the binomial test of ``up`` among ``up + down`` discordant pairs at 1/2
    (1.0 when no pair is discordant)."""
    n = int(up) + int(down)
    if n == 0:
        return 1.0
    return float(stats.binomtest(int(up), n, 0.5).pvalue)


def _continuous(scores: pd.Series) -> bool:
    from biasbound.card import DISCRETE_LEVELS

    return int(scores.nunique()) > DISCRETE_LEVELS


def _verdict(x: np.ndarray, continuous: bool) -> np.ndarray:
    return np.sign(x - 0.5) if continuous else x


def _flipped(o: np.ndarray, n: np.ndarray, continuous: bool) -> np.ndarray:
    if continuous:
        return np.sign(o - 0.5) != np.sign(n - 0.5)
    return np.abs(o - n) > 1e-12


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    from biasbound.neighbors.observed import canonical_mask

    c = frame.loc[canonical_mask(frame).to_numpy(dtype=bool) & frame["score"].notna().to_numpy(), _KEY + ["score"]]
    c = c.astype({"model": str, "item_id": str})
    return c.drop_duplicates(_KEY)


def _flips(frame: pd.DataFrame, generator: str, continuous: bool) -> pd.DataFrame:
    from biasbound.card import neighbor_pairs

    nb = neighbor_pairs(frame, generator)
    out = pd.DataFrame({"model": nb["model"].astype(str).to_numpy(), "item_id": nb["item_id"].astype(str).to_numpy(),
                        "rerun": nb["rerun"].to_numpy(dtype=np.int64),
                        "flip": _flipped(nb["original"].to_numpy(dtype=float), nb["neighbor"].to_numpy(dtype=float),
                                         continuous)})
    return out.drop_duplicates(["model", "item_id", "rerun"])


def _item_weights(items: np.ndarray, rounds: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Item codes of each row and bootstrap weights (rounds × distinct items: how often each item is drawn)."""
    uniq, codes = np.unique(items, return_inverse=True)
    k = uniq.size
    w = rng.multinomial(k, np.full(k, 1.0 / k), size=rounds).astype(float) if k else np.zeros((rounds, 0))
    return codes, w


def _interval(draws: np.ndarray, level: float) -> tuple[float | None, float | None]:
    draws = draws[np.isfinite(draws)]
    if draws.size == 0:
        return None, None
    a = (1.0 - level) / 2.0
    return float(np.quantile(draws, a)), float(np.quantile(draws, 1.0 - a))


def _judge_rows(frame: pd.DataFrame, judge: str, what: str) -> pd.DataFrame:
    fj = frame[frame["judge"].astype(str) == judge]
    if fj.empty:
        raise InputError(f"The {what} judgments hold no judge {judge!r}.")
    return fj


@validate_params
def paired_comparison(old: pd.DataFrame, new: pd.DataFrame, *, old_judge: str, new_judge: str,
                      rounds: int = ROUNDS, seed: int = 0, level: float = LEVEL) -> dict[str, Any] | None:
    """The paired comparison of OLD's ``old_judge`` and NEW's ``new_judge`` on the (model, item) pairs both hold.

    Parameters
    ----------
    old, new:
        Judgment tables (docs/DESIGN.md "Judgment tables"), or a certify folder's ``scores.parquet`` rows read as
        one (columns ``judge, model, item_id, score``; then only verdicts and scores are compared).
    old_judge, new_judge:
        The judge of each side (the same name when one judge is compared across versions).
    rounds, seed, level:
        The paired bootstrap over items: rounds, the seed of its :class:`numpy.random.Generator`, the level of
        every interval and of the tests' "moved" rule (1 − level).

    Returns
    -------
    dict or None
        JSON types (see the module docstring); None when the two sides hold no (model, item) pair in common.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"The 'level' parameter of paired_comparison must be a float in (0, 1). Got {level!r} instead.")
    if int(rounds) < 100:
        raise ValueError(f"The 'rounds' parameter of paired_comparison must be an int >= 100. Got {rounds!r} instead.")
    fo, fn = _judge_rows(old, old_judge, "OLD"), _judge_rows(new, new_judge, "NEW")
    for f, side in ((fo, "OLD"), (fn, "NEW")):
        for c in ("game", "variant", "rerun"):
            if c not in f.columns:
                raise InputError(f"The {side} judgments have no {c!r} column; a paired comparison needs a judgment "
                                 "table (docs/DESIGN.md 'Judgment tables').")
    co, cn = _canonical(fo), _canonical(fn)
    both = co.merge(cn, on=_KEY, suffixes=("_old", "_new"))
    if both.empty:
        return None
    cont_o, cont_n = _continuous(fo["score"]), _continuous(fn["score"])
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {"old_judge": old_judge, "new_judge": new_judge, "pairs": len(both),
                           "items": int(both["item_id"].nunique()), "models": int(both["model"].nunique()),
                           "only_old": int(len(co) - len(both)), "only_new": int(len(cn) - len(both)),
                           "rounds": int(rounds), "seed": int(seed), "level": float(level),
                           "test": "exact McNemar (binomial test at 1/2 on the discordant pairs)",
                           "bootstrap": "paired, over items (the same item draw for both sides), percentile interval"}
    so, sn = both["score_old"].to_numpy(dtype=float), both["score_new"].to_numpy(dtype=float)
    vo, vn = _verdict(so, cont_o), _verdict(sn, cont_n)
    up, down = int(np.count_nonzero(vn > vo)), int(np.count_nonzero(vn < vo))
    p = exact_mcnemar(up, down)
    out["verdicts"] = {"n": len(both), "changed": up + down, "up": up, "down": down, "p": p,
                       "moved": p < 1.0 - level}
    # scores: per model, mean NEW − OLD, one item draw per round shared by every model
    codes, w = _item_weights(both["item_id"].to_numpy(), int(rounds), rng)
    diff = sn - so
    models = []
    for m, idx in both.groupby("model", sort=True).indices.items():
        d = diff[idx]
        wm = w[:, codes[idx]]
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = (wm @ d) / wm.sum(axis=1)
        lo, hi = _interval(draws, level)
        models.append({"model": str(m), "n": int(idx.size), "old": float(so[idx].mean()), "new": float(sn[idx].mean()),
                       "diff": float(d.mean()), "lo": lo, "hi": hi,
                       "moved": lo is not None and hi is not None and (lo > 0 or hi < 0)})
    out["scores"] = models
    gens: dict[str, Any] = {}
    from biasbound.card import data_generators

    for g in [g for g in data_generators(fo) if g in set(data_generators(fn))]:
        fl = _flips(fo, g, cont_o).merge(_flips(fn, g, cont_n), on=["model", "item_id", "rerun"],
                                         suffixes=("_old", "_new"))
        if fl.empty:
            continue
        a, b = fl["flip_old"].to_numpy(dtype=float), fl["flip_new"].to_numpy(dtype=float)
        up_g, down_g = int(np.count_nonzero((b == 1) & (a == 0))), int(np.count_nonzero((a == 1) & (b == 0)))
        gcodes, gw = _item_weights(fl["item_id"].to_numpy(), int(rounds), rng)
        sums = np.zeros((gw.shape[1], 3))
        np.add.at(sums, gcodes, np.column_stack([b - a, np.ones_like(a), np.zeros_like(a)]))
        with np.errstate(invalid="ignore", divide="ignore"):
            draws = (gw @ sums[:, 0]) / (gw @ sums[:, 1])
        lo, hi = _interval(draws, level)
        pg = exact_mcnemar(up_g, down_g)
        gens[g] = {"n": len(fl), "old": float(a.mean()), "new": float(b.mean()), "diff": float((b - a).mean()),
                   "lo": lo, "hi": hi, "up": up_g, "down": down_g, "p": pg, "moved": pg < 1.0 - level}
    out["generators"] = gens
    return out


def paired_moves(res: Mapping[str, Any]) -> list[str]:
    """The paired figures that moved (their test rejects at 1 − level), one phrase each."""
    out = []
    v = res["verdicts"]
    if v["moved"]:
        out.append(f"verdicts (McNemar p = {v['p']:.3g})")
    for g, r in res["generators"].items():
        if r["moved"]:
            out.append(f"flip_rate:{g} (McNemar p = {r['p']:.3g})")
    for m in res["scores"]:
        if m["moved"]:
            out.append(f"score of {m['model']}")
    return out


def is_paired_condition(text: str) -> bool:
    """Whether a ``--fail-if`` condition names a paired figure."""
    return str(text).strip().startswith("paired_")


def paired_figure(res: Mapping[str, Any], name: str) -> float | None:
    """The value of one paired figure (``paired_flip_rate_diff:swap``; the generator defaults to swap)."""
    base, _, gen = name.partition(":")
    if base == "paired_verdict_p":
        return float(res["verdicts"]["p"])
    if base == "paired_score_diff":
        diffs = [m["diff"] for m in res["scores"]]
        return float(max(diffs, key=abs)) if diffs else None
    if base in ("paired_flip_rate_diff", "paired_flip_rate_p"):
        gens = res["generators"]
        g = gen or ("swap" if "swap" in gens else next(iter(gens), ""))
        if g not in gens:
            raise InputError(f"The figure {name!r} needs {g or 'a neighbour'!r} neighbours on both sides; both hold "
                             f"{', '.join(gens) or 'none'}.")
        return float(gens[g]["diff" if base.endswith("diff") else "p"])
    raise InputError(f"Unknown paired figure {name!r}; the paired figures are {', '.join(PAIRED_FIGURES)}.")


_OPS = {">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt}


def parse_paired(text: str) -> tuple[str, str, float]:
    """``"paired_flip_rate_p<0.01"`` → ``("paired_flip_rate_p", "<", 0.01)``; an InputError naming the flag else."""
    import re

    m = re.match(r"^\s*([A-Za-z_]+(?::[A-Za-z0-9_.:-]+)?)\s*(>=|<=|>|<)\s*([-+0-9.eE]+|inf)\s*$", str(text))
    if not m or m.group(1).partition(":")[0] not in PAIRED_FIGURES:
        raise InputError(f"The '--fail-if' option of compare must read FIGURE>VALUE (or <, >=, <=) with a paired "
                         f"figure among {', '.join(PAIRED_FIGURES)}. Got {text!r} instead.")
    try:
        return m.group(1), m.group(2), float(m.group(3))
    except ValueError:
        raise InputError(f"The '--fail-if' option of compare needs a number after {m.group(2)}. Got {text!r} "
                         "instead.") from None


def check_paired(results: Sequence[Mapping[str, Any]], conditions: Sequence[str]) -> list[str]:
    """Evaluate paired ``--fail-if`` conditions on every paired comparison; one sentence per condition that holds.

    A paired condition with no paired comparison to read (the sides hold no item in common) fails: nothing
    shows the figure is within the bound."""
    failed = []
    parsed = [parse_paired(c) for c in conditions]
    for name, op, bound in parsed:
        if not results:
            failed.append(f"{name}: no paired comparison (the two sides hold no (model, item) pair in common)")
        for r in results:
            v = paired_figure(r, name)
            who = r["new_judge"] if r["old_judge"] == r["new_judge"] else f"{r['old_judge']} → {r['new_judge']}"
            if v is None or _OPS[op](v, bound):
                failed.append(f"judge {who}: {name} = {v:.4g} {op} {bound:g}" if v is not None
                              else f"judge {who}: {name} has no value")
    return failed


def judge_pairs(old_judges: Sequence[str], new_judges: Sequence[str]) -> list[tuple[str, str]]:
    """The judges compared pairwise: those of the same name (two judges of different names are paired by
    ``compare --match OLD=NEW``, which renames NEW's judge first)."""
    return [(j, j) for j in new_judges if j in set(old_judges)]


@validate_params
def compare_paired(old: pd.DataFrame | None, new: pd.DataFrame | None, old_judges: Sequence[str], new_judges: Sequence[str], *,
                   rounds: int = ROUNDS, seed: int = 0, level: float = LEVEL) -> list[dict[str, Any]]:
    """Every paired comparison of ``compare OLD NEW`` (:func:`judge_pairs`) on the (model, item) pairs both sides
    hold, from each side's per-item rows (``commands.compare.side_frame``; None when a side has none); empty when
    no judge pair shares an item."""
    pairs = judge_pairs(list(old_judges), list(new_judges))
    if not pairs:
        return []
    fo, fn = old, new
    if fo is None or fn is None:
        return []
    out = []
    for jo, jn in pairs:
        r = paired_comparison(fo, fn, old_judge=jo, new_judge=jn, rounds=rounds, seed=seed, level=level)
        if r is not None:
            out.append(r)
    return out


def print_paired(results: Sequence[Mapping[str, Any]], console: Any) -> None:
    """The paired comparisons as rich tables."""
    from rich.markup import escape
    from rich.table import Table

    def iv(lo: float | None, hi: float | None) -> str:
        return "—" if lo is None or hi is None else f"[{lo:+.4f}, {hi:+.4f}]"

    for r in results:
        who = r["new_judge"] if r["old_judge"] == r["new_judge"] else f"{r['old_judge']} → {r['new_judge']}"
        pct = round(100 * r["level"])
        t = Table(title=f"Paired comparison — {escape(who)}: {r['pairs']} (model, item) pairs, {r['items']} items in "
                        f"common; {pct}% paired bootstrap over items ({r['rounds']} rounds, seed {r['seed']})")
        t.add_column("figure", no_wrap=True)
        t.add_column("old → new")
        t.add_column(f"new − old [{pct}% interval]")
        t.add_column("McNemar p", no_wrap=True)
        t.add_column("", no_wrap=True)
        v = r["verdicts"]
        t.add_row("verdicts", f"{v['changed']} of {v['n']} changed", f"{v['up']} up, {v['down']} down", f"{v['p']:.3g}",
                  "[bold red]MOVED[/]" if v["moved"] else "")
        for g, x in r["generators"].items():
            t.add_row(f"flip_rate:{escape(g)}", f"{x['old']:.4f} → {x['new']:.4f}", f"{x['diff']:+.4f} {iv(x['lo'], x['hi'])}",
                      f"{x['p']:.3g}", "[bold red]MOVED[/]" if x["moved"] else "")
        for m in r["scores"][:50]:
            t.add_row(f"score {escape(m['model'])}", f"{m['old']:.4f} → {m['new']:.4f}",
                      f"{m['diff']:+.4f} {iv(m['lo'], m['hi'])}", "", "[bold red]MOVED[/]" if m["moved"] else "")
        console.print(t)
        if len(r["scores"]) > 50:
            console.print(f"  ... {len(r['scores']) - 50} more models (summary in --json)", highlight=False)
        if r["only_old"] or r["only_new"]:
            console.print(f"  not paired: {r['only_old']} pair(s) only in OLD, {r['only_new']} only in NEW",
                          highlight=False)

"""``biasbound plan PILOT``: how many neighbours per model, calls, tokens and money reach a target α.

A pilot is the output folder of a ``biasbound run`` (``run_summary.json``, ``judgments.parquet``,
``neighbors.jsonl``, ``judge_cache.sqlite``). For each generator of the pilot and each m on a grid
(up to the neighbours the pilot judged per model), the plan certifies the pilot's own judgments with
that generator alone and only the first m neighbours of each model's draw, through the public
:func:`biasbound.pipeline.certify` with the draw declared as a uniform sample (``sampled=``):

* a generator ``run`` drew (format, paraphrase, schematic, agreeable, rerun) is taken in its recorded
  seeded draw order (``neighbors.jsonl``, field ``draw``): the first m of a uniform draw without
  replacement are themselves a uniform draw of m;
* a census (swap: both games of every item are judged) is put in a seeded random order (the plan's
  ``seed``), so its first m are a uniform draw too, as a run drawing m swap neighbours would judge;
  a pilot that drew swap (``options.swap.drawn``) is taken in its recorded draw order like the others.

The α of the largest m is the reference (the census α when the pilot is a census); the target is
``alpha`` when given, else the reference less ``within`` (5% by default). The plan's answer per
generator is the smallest m on the grid whose α reaches the target, and what judging m neighbours per
model costs: judge calls (plus rewriter calls for paraphrase/agreeable), prompt and completion tokens
and money, at the pilot's measured means per neighbour (read from the pilot's cache).

α(m) is measured on one draw: another draw of m neighbours gives another α (the plan says so); the
certificate of the real run is computed afresh from its own draw.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import BiasboundError, DataFormatError, InputError
from biasbound.parameters import validate_params

__all__ = ["SEQUENTIAL_RULE", "GeneratorPlan", "Plan", "plan", "plan_judgments", "sequential_stops"]

#: The stop rule of sequential judging (``biasbound run`` with ``neighbors.sequential``), as recorded.
SEQUENTIAL_RULE = ("judge the first m of each model's seeded draw at each look declared in advance; certify at "
                   "beta/K (K looks); stop at the first look that meets every stated target, or whose alpha gains less "
                   "than min_gain (relative) over the previous certified look's, else at the last look (the budget)")


def card_radius(card: Mapping[str, Any] | None) -> float | None:
    """The judge card's bias radius at the certificate's δ (None when the card has none)."""
    radius = ((card or {}).get("bias_radius") or {}).get("radius")
    return None if radius is None else float(radius)


def card_flip_width(card: Mapping[str, Any] | None, generator: str) -> float | None:
    """The width of a certify generator's flip-rate interval on the judge card (None when it has none)."""
    fr = (((card or {}).get("generators") or {}).get(generator) or {}).get("flip_rate") or {}
    return None if fr.get("lo") is None or fr.get("hi") is None else float(fr["hi"]) - float(fr["lo"])


def targets_met(target: Mapping[str, float], alpha: float | None, card: Mapping[str, Any] | None,
                generators: Sequence[str]) -> bool:
    """Whether a look meets every stated ``target`` (``neighbors.sequential.target``): ``alpha`` (α at least
    this), ``bias_radius`` (the judge card's bias radius at the certificate's δ at most this) and
    ``flip_rate_width`` (the flip-rate interval of every certify generator in ``generators`` at most this
    wide). A look without the figure (no certificate, no flip rate) does not meet it; no target: False."""
    if not target or alpha is None:
        return False
    if "alpha" in target and alpha < target["alpha"]:
        return False
    if "bias_radius" in target:
        radius = card_radius(card)
        if radius is None or radius > target["bias_radius"]:
            return False
    if "flip_rate_width" in target:
        for g in generators:
            width = card_flip_width(card, g)
            if width is None or width > target["flip_rate_width"]:
                return False
    return True


@validate_params
def sequential_stops(previous: float | None, alpha: float | None, min_gain: float) -> bool:
    """The stop rule: a look stops the run when its α gains less than ``min_gain`` over the previous certified
    look's (a look that could not certify, ``alpha=None``, never stops it; the first certified look neither)."""
    return previous is not None and alpha is not None and alpha < previous * (1.0 + min_gain)

_REWRITE_TASK = {"paraphrase": "paraphrase", "agreeable": "insert-error"}


@dataclass
class GeneratorPlan:
    """The plan for one generator.

    Attributes
    ----------
    generator:
        The generator name (``swap``, ``format``, ...).
    rows:
        One dict per m on the grid: ``m``, ``alpha`` (None when certify failed at that m, with
        ``reason``), ``judge_calls``, ``rewrite_calls``, ``prompt_tokens``, ``completion_tokens``, ``cost``.
    reference_alpha, target_alpha:
        α at the largest m, and the α to reach.
    chosen_m:
        The smallest m on the grid reaching the target (``None``: not reached on the pilot's grid).
    """

    generator: str
    rows: list[dict[str, Any]]
    reference_alpha: float | None
    target_alpha: float | None
    chosen_m: int | None
    census: bool
    per_neighbor: dict[str, Any] = field(default_factory=dict)
    sequential: dict[str, Any] | None = None
    targets: dict[str, float] = field(default_factory=dict)
    why_not: str | None = None

    def chosen(self) -> dict[str, Any] | None:
        """The grid row of ``chosen_m`` (``None`` when not reached)."""
        return next((r for r in self.rows if r["m"] == self.chosen_m), None)


@dataclass
class Plan:
    """The result of :func:`plan`: per-generator plans and the pilot's settings."""

    pilot: Path | str
    models: int
    items: int
    settings: dict[str, Any]
    generators: dict[str, GeneratorPlan]
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "pilot": str(self.pilot), "models": self.models, "items": self.items, "settings": self.settings,
            "generators": {g: {"generator": p.generator, "census": p.census, "reference_alpha": p.reference_alpha,
                               "target_alpha": p.target_alpha, "chosen_m": p.chosen_m, "chosen": p.chosen(),
                               "per_neighbour": p.per_neighbor, "grid": p.rows, "sequential": p.sequential,
                               "targets": p.targets, "why_not": p.why_not}
                           for g, p in self.generators.items()},
            "notes": list(self.notes),
        }


def _read_pilot(pilot: Path) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    need = ["run_summary.json", "judgments.parquet", "neighbors.jsonl"]
    for name in need:
        if not (pilot / name).exists():  # present but not a regular file: said by the readers below
            raise InputError(f"The pilot folder {pilot} lacks {name}; pass the output folder of a finished "
                             "'biasbound run'.")
    from biasbound._untrusted import check_parquet_rows, load_json, regular_file

    summary = load_json(pilot / "run_summary.json", folder=pilot)  # regular, bounded, no duplicate key
    check_parquet_rows(pilot / "judgments.parquet")
    regular_file(pilot / "neighbors.jsonl", folder=pilot)
    if not isinstance(summary, dict):
        raise DataFormatError("run_summary.json is not a 'biasbound run' summary (no 'config').",
                              path=str(pilot / "run_summary.json"))
    try:
        frame = pd.read_parquet(pilot / "judgments.parquet")
        draws = pd.read_json(pilot / "neighbors.jsonl", lines=True, dtype=False)
    except (ValueError, OSError) as exc:
        raise DataFormatError(f"The pilot's files cannot be read ({str(exc)[:200]}); re-run the pilot.",
                              path=str(pilot)) from None
    if "config" not in summary or "judge" not in summary:
        raise DataFormatError("run_summary.json is not a 'biasbound run' summary (no 'config').", path=str(pilot / "run_summary.json"))
    from biasbound.data.unparseable import check_parseable

    check_parseable(frame, pilot / "judgments.parquet", doing="plan")  # not "out of the judge's reach"
    return summary, frame, draws


def _cache_costs(pilot: Path, keys: Sequence[str]) -> dict[str, tuple[int, int, float | None, str | None]]:
    """``{cache_key: (prompt_tokens, completion_tokens, cost, task)}`` of the pilot's cached judge calls
    among ``keys`` and of every rewrite call."""
    import sqlite3

    db = pilot / "judge_cache.sqlite"
    if not db.is_file():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    try:
        rows = con.execute("SELECT key, payload FROM judge_calls").fetchall()
    except sqlite3.DatabaseError as exc:
        raise DataFormatError(f"The judge cache is not a readable SQLite database ({exc}).", path=str(db)) from None
    finally:
        con.close()
    want = set(keys)
    out: dict[str, tuple[int, int, float | None, str | None]] = {}
    for key, payload in rows:
        p = json.loads(payload)
        if key in want or p.get("task") in _REWRITE_TASK.values():
            out[key] = (int(p.get("prompt_tokens") or 0), int(p.get("completion_tokens") or 0), p.get("cost"),
                        p.get("task"))
    return out


def _neighbor_rows(frame: pd.DataFrame, g: str) -> pd.Series:
    """Mask of the judgment rows that are ``g``'s neighbours."""
    if g == "swap":
        return (frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == 2)
    if g == "rerun":
        return (frame["variant"] == "original") & (frame["rerun"] >= 1)
    return frame["variant"] == g


def _grid(top: int, grid: Sequence[int] | None, notes: list[str] | None = None, what: str = "") -> list[int]:
    """The m values planned: the grid's values below ``top`` and ``top`` (the largest m the data support, the
    reference); grid values above ``top`` are dropped and said in ``notes`` (never silently)."""
    if grid is not None:  # the largest m the data support is always last: it is the reference
        beyond = sorted({int(m) for m in grid if int(m) > top})
        if beyond and notes is not None:
            note = (f"{what}--grid asks for m = {', '.join(map(str, beyond[:3]))}{' …' if len(beyond) > 3 else ''}, "
                    f"above the {top} neighbours per model the data support (the items a model holds, or the pilot "
                    f"drew): planned up to m = {top}.")
            if note not in notes:
                notes.append(note)
        return sorted({int(m) for m in grid if 2 <= int(m) < top} | {top})
    ms, m = [], 5
    while m < top:
        ms.append(m)
        m *= 2
    return [*ms, top]


@validate_params
def plan(
    pilot: str | Path,
    *,
    alpha: float | None = None,
    within: float = 0.05,
    grid: Sequence[int] | None = None,
    generators: Sequence[str] | None = None,
    seed: int = 0,
    bootstrap_rounds: int = 200,
    looks: Sequence[int] | None = None,
    min_gain: float | None = None,
    bias_radius: float | None = None,
    flip_width: float | None = None,
) -> Plan:
    """Plan the neighbours per model that reach a target α, from a pilot run (see the module docstring).

    Parameters
    ----------
    pilot:
        The output folder of a finished ``biasbound run``.
    alpha:
        The α to reach (in (0, 1]); ``None``: the α of the pilot's largest m less ``within``.
    within:
        Relative shortfall allowed below the reference α when ``alpha`` is None (in [0, 1)).
    grid:
        The m values to try (default 5, 10, 20, ...); the pilot's largest m is always added (the reference).
    generators:
        The generators to plan (default: every generator of the pilot).
    seed:
        Seed of the random order given to a census generator's items.
    bootstrap_rounds:
        Passed to ``certify`` (the leaderboard intervals; α does not depend on it).
    looks, min_gain:
        Predict a sequential run (``neighbors.sequential``; default: the pilot's own, if it was one): α at
        each look at β/K on the pilot's draw, the look the stop rule (:func:`sequential_stops`) stops at and
        the neighbour calls it spends (``GeneratorPlan.sequential``). Looks beyond the pilot's m cannot be
        evaluated: a rule not stopped by then is reported as undecided. Each generator is replayed alone; a
        run drawing several generators certifies them jointly (β split over them too), so its α per look can
        be lower and its stop later than the forecast.
    bias_radius, flip_width:
        Further targets, in (0, 1]: the judge's bias radius at δ at most ``bias_radius``, the generator's
        flip-rate interval at most ``flip_width`` wide; the chosen m meets every target, and ``why_not`` says
        whether a census would reach a target no m of the grid reaches.

    Returns
    -------
    Plan

    Raises
    ------
    InputError
        A folder that is not a finished run, a generator it did not use, an option out of range.
    """
    from biasbound.config import CERTIFY_NAMES

    folder = Path(pilot)
    targets = _check_target(alpha, within, bias_radius, flip_width)
    summary, frame, draws = _read_pilot(folder)
    cfg = summary["config"]
    cal = cfg["calibration"]
    judge = summary["judge"]
    frame = frame[frame["judge"] == judge]
    pairwise = summary.get("template") == "pairwise"
    game0 = 1 if pairwise else 0
    gens = list(cfg["neighbors"]["generators"] if generators is None else generators)
    unknown = [g for g in gens if g not in cfg["neighbors"]["generators"]]
    if unknown:
        raise InputError(f"The '--generators' option of plan names {unknown[0]!r}, which the pilot did not use "
                         f"(it used {', '.join(cfg['neighbors']['generators'])}).")
    originals = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == game0)]
    models = sorted(set(originals["model"]))
    n_items = {m: int((originals["model"] == m).sum()) for m in models}
    costs = _cache_costs(folder, frame["cache_key"].dropna().tolist())
    notes = ["α(m) is measured on one draw of m neighbours per model; another draw gives another α. "
             "The real run's certificate is computed from its own draw."]
    pilot_seq = cfg["neighbors"].get("sequential") or {}
    looks = _check_looks(looks if looks is not None else pilot_seq.get("looks"))
    min_gain = float(min_gain if min_gain is not None else pilot_seq.get("min_gain", 0.01))
    if not 0.0 <= min_gain <= 1.0:
        raise InputError(f"The '--min-gain' option of plan must be in [0, 1]. Got {min_gain} instead.")
    plans: dict[str, GeneratorPlan] = {}
    base = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == game0)]
    for g in gens:
        name = CERTIFY_NAMES[g]
        mask = _neighbor_rows(frame, g)
        nb = frame[mask]
        # swap is a census unless the pilot drew it (options.swap.drawn): then its recorded draw order, as any generator
        census = g == "swap" and not (cfg["neighbors"].get("options") or {}).get("swap", {}).get("drawn", False)
        order: dict[str, list[str]] = {}
        for model in models:
            if census:
                order[model] = _seeded_order(base.loc[base["model"] == model, "item_id"].tolist(), seed, f"plan/{g}/{model}")
            else:
                d = draws[(draws["generator"] == g) & (draws["model"] == model)].sort_values("draw")
                order[model] = [str(x) for x in d["item_id"]]
        top = min(len(v) for v in order.values()) if order else 0
        if top < 2:
            notes.append(f"{g}: the pilot drew fewer than 2 neighbours per model; not planned.")
            continue
        # per-neighbour cost, measured on the pilot: one judge call per applied neighbour (+ rewrites)
        judged = nb.drop_duplicates("cache_key")
        found = [costs.get(k) for k in judged["cache_key"]]
        c: list[Any] = [x for x in found if x is not None]
        drawn = sum(len(v) for v in order.values())
        applied = len(nb) / max(1, drawn)
        per: dict[str, Any] = {
            "judge_calls": applied,
            "prompt_tokens": float(np.mean([x[0] for x in c])) * applied if c else None,
            "completion_tokens": float(np.mean([x[1] for x in c])) * applied if c else None,
            "cost": (float(np.mean([x[2] for x in c])) * applied if c and all(x[2] is not None for x in c) else None),
            "rewrite_calls": 0.0}
        if g in _REWRITE_TASK:
            rw = [x for x in costs.values() if x[3] == _REWRITE_TASK[g]]
            per["rewrite_calls"] = len(rw) / max(1, drawn)
            if rw and per["prompt_tokens"] is not None:
                per["prompt_tokens"] += sum(x[0] for x in rw) / max(1, drawn)
                per["completion_tokens"] += sum(x[1] for x in rw) / max(1, drawn)
                if per["cost"] is not None and all(x[2] is not None for x in rw):
                    per["cost"] += sum(x[2] for x in rw) / max(1, drawn)
                elif per["cost"] is not None:
                    notes.append(f"{g}: the rewriter has no prices in the pilot; the cost is the judge's alone.")
        certify_kwargs = dict(tau=cal["tau"], delta=cal["delta"], method=cal["method"], combine=cal["combine"],
                              beta=cal["beta"], holdout=cal["holdout"], seed=int(cfg["seed"]), view=cal["view"],
                              center=cal["center"], bootstrap_rounds=bootstrap_rounds,
                              baseline=cfg["data"]["baseline"] if pairwise else None)
        plans[g] = _plan_one(g, name, base, nb, [order], n_items, judge, per, certify_kwargs, _grid(top, grid, notes, f"{g}: "), alpha,
                             within, census, seed, targets)
        if looks:
            plans[g].sequential = _predict_sequential(g, name, base, nb, order, n_items, judge, per, certify_kwargs,
                                                      looks, min_gain, top, census, seed)
    settings = {"targets": targets, "tau": cal["tau"], "delta": cal["delta"], "method": cal["method"], "beta": cal["beta"],
                "view": cal["view"], "alpha": alpha, "within": within if alpha is None else None, "seed": seed,
                "pilot_m": cfg["neighbors"]["neighbors_per_generator"], "looks": looks,
                "min_gain": min_gain if looks else None}
    return Plan(pilot=str(folder), models=len(models), items=max(n_items.values()) if n_items else 0, settings=settings,
                generators=plans, notes=notes)


def _plan_one(g: str, name: str, base: pd.DataFrame, nb: pd.DataFrame, orders: Sequence[dict[str, list[str]]],
              n_items: dict[str, int], judge: str, per: dict[str, Any], certify_kwargs: dict[str, Any],
              ms: Sequence[int], alpha: float | None, within: float, census: bool, seed: int,
              targets: Mapping[str, float] | None = None) -> GeneratorPlan:
    """α at each m (the first m of each model's order, certified with ``name`` alone) and the cost of m.

    With several orders (draws), ``alpha`` is their median, ``alpha_min``/``alpha_max`` the extremes,
    and the chosen m is the smallest whose *every* draw reaches the target. ``targets`` adds
    ``bias_radius`` (the judge's bias radius at δ at most this) and ``flip_rate_width`` (the generator's
    flip-rate interval at most this wide), each read from the judge card of every draw (the worst draw counts);
    ``why_not`` says, when no m reaches them, whether a census would."""
    from biasbound.data.tables import from_frame
    from biasbound.pipeline import certify

    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]
    models = list(orders[0])
    ranks = []
    for order in orders:
        rank = {(model, it): k for model in models for k, it in enumerate(order[model])}
        ranks.append(np.array([rank.get((a, b), len(rank) + 1) for a, b in zip(nb["model"], nb["item_id"])]))
    rows = []
    for m in ms:
        drawn = [model for model in models if m < n_items[model]]
        row: dict[str, Any] = {"m": int(m)}
        alphas: list[float] = []
        radii: list[float] = []
        widths: list[float] = []
        for order, nb_rank in zip(orders, ranks) if drawn else zip(orders[:1], ranks[:1]):  # a census is one
            # the first m of each model's order, declared as the uniform draw it is with its drawn item ids (a
            # drawn item without a neighbour row, e.g. a perturbation that did not apply, counts at the range bound)
            per_model = {model: {"seed": int(seed), "m": int(m), "n": int(n_items[model]),
                                 "items": [str(x) for x in order[model][:m]]} for model in drawn}
            sampled = {name: {"seed": int(seed), "per_model": per_model}} if per_model else None
            fr = pd.concat([base, nb[nb_rank < m]])[cols]
            try:
                res = certify(from_frame(fr, source="plan", scale=(0.0, 1.0), judge=judge), neighbors=[name],
                              progress=False, plots=False, sampled=sampled, **certify_kwargs)
                alphas.append(float(res.judges[judge].calibration.alpha))
                card = (res.judge_card.get("judges") or {}).get(judge)
                radius, width = card_radius(card), card_flip_width(card, name)
                if radius is not None:
                    radii.append(radius)
                if width is not None:
                    widths.append(width)
            except BiasboundError as exc:
                row["reason"] = str(exc)[:300]
                alphas = []
                break
        row["alpha"] = float(np.median(alphas)) if alphas else None
        row["bias_radius"] = max(radii) if alphas and len(radii) == len(alphas) else None  # the worst draw
        row["flip_rate_width"] = max(widths) if alphas and len(widths) == len(alphas) else None
        if len(ranks) > 1:
            row["alpha_min"] = min(alphas) if alphas else None
            row["alpha_max"] = max(alphas) if alphas else None
            row["draws"] = len(alphas)
        n_nb = len(models) * m
        row.update({
            "neighbours": n_nb,
            "judge_calls": round(n_nb * per["judge_calls"]),
            "rewrite_calls": round(n_nb * per["rewrite_calls"]),
            "prompt_tokens": None if per["prompt_tokens"] is None else round(n_nb * per["prompt_tokens"]),
            "completion_tokens": None if per["completion_tokens"] is None else round(n_nb * per["completion_tokens"]),
            "cost": None if per["cost"] is None else n_nb * per["cost"],
        })
        rows.append(row)
    ref = rows[-1].get("alpha")
    target = float(alpha) if alpha is not None else (None if ref is None else ref * (1.0 - within))
    extra = dict(targets or {})

    def meets(r: dict[str, Any]) -> bool:
        if r.get("alpha") is None or target is None:
            return False
        reached: float = r["alpha_min"] if r.get("alpha_min") is not None else r["alpha"]
        if reached < target - 1e-12:
            return False
        return all(r.get(key) is not None and r[key] <= value + 1e-12 for key, value in extra.items())

    chosen = next((r["m"] for r in rows if meets(r)), None)
    why_not = None
    if chosen is None:
        last = rows[-1] if rows else {"m": 0}
        full = all(last["m"] >= n for n in n_items.values())
        wanted = ", ".join([f"α ≥ {target:.4g}" if target is not None else "an α"]
                           + [f"{k.replace('_', ' ')} ≤ {v:g}" for k, v in extra.items()])
        why_not = (f"not reached even by a census (every item's neighbour judged): {wanted} is out of this judge's "
                   "reach at these settings" if full else
                   f"not reached by m ≤ {last['m']} (the pilot's draw): {wanted} needs more neighbours, up to a census "
                   f"of {max(n_items.values())} per model; run a larger pilot to tell")
    for r in rows:
        if r.get("alpha") is not None and ref:
            r["alpha_vs_reference"] = r["alpha"] / ref - 1.0
    return GeneratorPlan(generator=g, rows=rows, reference_alpha=ref, target_alpha=target, chosen_m=chosen,
                         census=census, per_neighbor=per, targets=extra, why_not=why_not)


def _check_looks(looks: Any) -> list[int] | None:
    if looks is None:
        return None
    try:
        out = [int(x) for x in looks]
    except (TypeError, ValueError):
        out = []
    if len(out) < 2 or out != sorted(set(out)) or out[0] < 2:
        shown = ",".join(map(str, looks)) if isinstance(looks, (list, tuple)) else repr(looks)
        raise InputError(f"The '--looks' option of plan must list at least 2 increasing integers >= 2, e.g. 10,20,40. "
                         f"Got {shown} instead.")
    return out


def _predict_sequential(g: str, name: str, base: pd.DataFrame, nb: pd.DataFrame, order: dict[str, list[str]],
                        n_items: dict[str, int], judge: str, per: dict[str, Any], certify_kwargs: dict[str, Any],
                        looks: Sequence[int], min_gain: float, top: int, census: bool, seed: int) -> dict[str, Any]:
    """The sequential rule replayed on the pilot's draw: α at each look (β/K), the look it stops at, its calls."""
    beta = certify_kwargs.get("beta")
    kwargs = {**certify_kwargs, "beta": None if beta is None else beta / len(looks)}
    usable = [m for m in looks if m <= top]
    rows = _plan_one(g, name, base, nb, [order], n_items, judge, per, kwargs, usable, None, 0.05, census,
                     seed).rows if usable else []
    previous, stop = None, None
    for r in rows:
        if sequential_stops(previous, r.get("alpha"), min_gain):
            stop = r
            break
        if r.get("alpha") is not None:
            previous = r["alpha"]
    if stop is None and usable and usable[-1] == looks[-1]:
        stop = rows[-1]  # the last look: the budget
    out: dict[str, Any] = {"looks": list(looks), "min_gain": min_gain, "beta_per_look": kwargs["beta"],
                           "per_look": [{k: r.get(k) for k in ("m", "alpha", "judge_calls", "cost")} for r in rows]}
    if stop is None:
        out.update({"stop_m": None, "judge_calls": None,
                    "reason": f"the rule does not stop by m = {usable[-1] if usable else 0}, the pilot's largest look; "
                              "a pilot with more neighbours per model is needed"})
    else:
        out.update({"stop_m": stop["m"], "judge_calls": stop["judge_calls"], "cost": stop["cost"],
                    "rewrite_calls": stop["rewrite_calls"], "prompt_tokens": stop["prompt_tokens"],
                    "completion_tokens": stop["completion_tokens"]})
    return out


def _check_target(alpha: float | None, within: float, bias_radius: float | None = None,
                  flip_width: float | None = None) -> dict[str, float]:
    """Check the targets; return the ones beyond α (``bias_radius``, ``flip_rate_width``) as a mapping."""
    if alpha is not None and not (0.0 < float(alpha) <= 1.0):
        raise InputError(f"The '--alpha' option of plan must be in (0, 1]. Got {alpha} instead.")
    if not (0.0 <= float(within) < 1.0):
        raise InputError(f"The '--within' option of plan must be in [0, 1). Got {within} instead.")
    out: dict[str, float] = {}
    for flag, key, value in (("--bias-radius", "bias_radius", bias_radius), ("--flip-width", "flip_rate_width", flip_width)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) <= 1.0:
            raise InputError(f"The '{flag}' option of plan must be in (0, 1]. Got {value} instead.")
        out[key] = float(value)
    return out


def _seeded_order(items: Sequence[str], seed: int, label: str) -> list[str]:
    items = sorted(items)
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(label.encode("utf-8"))]))
    return [items[i] for i in rng.permutation(len(items))]


@validate_params
def plan_judgments(
    judgments: Any,
    *,
    neighbors: Sequence[str] = ("swap",),
    tau: float = 0.5,
    delta: float = 0.01,
    beta: float = 0.05,
    method: str = "tight",
    view: str = "model",
    center: str = "fixed:0.5",
    holdout: float = 0.3,
    baseline: str | None = None,
    alpha: float | None = None,
    within: float = 0.05,
    grid: Sequence[int] | None = None,
    seed: int = 0,
    bootstrap_rounds: int = 200,
    label: str = "the judgment set",
    draws: int = 1,
    bias_radius: float | None = None,
    flip_width: float | None = None,
) -> Plan:
    """Plan from a judgment set whose neighbours are a census (every item's neighbour judged, e.g. both
    games of every pairwise judgment): α when only the first m of each model's items (in a seeded random
    order) have their neighbour, for m on a grid up to every item; the reference is the census α.

    ``judgments`` is a :class:`~biasbound.data.JudgmentSet` (e.g. :func:`biasbound.data.load_demo`);
    ``neighbors`` are certify's names (``swap``, ``rerun``, ``variant:NAME``). Calls are counted as one
    judgment per neighbour (no tokens or prices are known here). ``draws`` seeded orders per m (seeds
    ``seed, seed + 1, ...``): α is their median, and the chosen m is the smallest whose every draw
    reaches the target.
    """
    targets = _check_target(alpha, within, bias_radius, flip_width)
    if isinstance(draws, bool) or not isinstance(draws, int) or not 1 <= draws <= 1000:
        raise InputError(f"The '--draws' option of plan must be an integer in [1, 1000]. Got {draws!r} instead.")
    frame = judgments.frame if hasattr(judgments, "frame") else judgments
    judges = list(dict.fromkeys(frame["judge"].tolist()))
    judge = judges[0]
    frame = frame[frame["judge"] == judge]
    game0 = 1 if (frame["game"] == 2).any() else int(frame["game"].min())
    base = frame[(frame["variant"] == "original") & (frame["rerun"] == 0) & (frame["game"] == game0)]
    models = sorted(set(base["model"]))
    n_items = {m: int((base["model"] == m).sum()) for m in models}
    kwargs = dict(tau=tau, delta=delta, method=method, beta=beta, holdout=holdout, seed=seed, view=view, center=center,
                  bootstrap_rounds=bootstrap_rounds, baseline=baseline)
    per = {"judge_calls": 1.0, "rewrite_calls": 0.0, "prompt_tokens": None, "completion_tokens": None, "cost": None}
    grid_notes: list[str] = []
    plans: dict[str, GeneratorPlan] = {}
    for name in neighbors:
        g = name.split(":", 1)[1] if name.startswith("variant:") else name
        nb = frame[_neighbor_rows(frame, g)]
        if nb.empty:
            raise InputError(f"The judgments hold no {name!r} neighbour to plan from.")
        orders = [{model: _seeded_order(base.loc[base["model"] == model, "item_id"].tolist(), seed + k, f"plan/{g}/{model}")
                   for model in models} for k in range(draws)]
        plans[g] = _plan_one(g, name, base, nb, orders, n_items, judge, per, kwargs, _grid(min(n_items.values()), grid, grid_notes),
                             alpha, within, True, seed, targets)
    settings = {"targets": targets, "tau": tau, "delta": delta, "method": method, "beta": beta, "view": view, "alpha": alpha,
                "within": within if alpha is None else None, "seed": seed, "pilot_m": None, "draws": draws}
    notes = [("α(m) is measured on one seeded order of the items per model; another order gives another α (--draws)."
              if draws == 1 else f"α(m) is the median over {draws} seeded orders of the items per model; the chosen m "
                                 "is the smallest whose every draw reaches the target.")
             + " Calls count one judgment per neighbour; tokens and prices need a pilot run."]
    notes += grid_notes
    return Plan(pilot=label, models=len(models),
                items=max(n_items.values()), settings=settings, generators=plans, notes=notes)

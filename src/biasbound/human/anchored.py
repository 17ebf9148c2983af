"""Human-anchored scores beside the certified ones: agreement, PPI++ per model, rank sets, and the anchored release.

:func:`human_report` joins one judgment table with human labels and returns, per judge, the agreement (the judge
card's ``human_agreement``), the flips of agreement per neighbour generator, and per model the PPI++ estimate with
its interval beside the judge-only score and the labels-only interval, and rank sets with simultaneous coverage.

:func:`anchored_judgments` rewrites the judgment table so that each model's mean score IS its PPI++ estimate: the
estimator is the fixed linear map ``θ̂ = Σ_i c_i f_i + mean_L y`` of the judge's scores given the labelled set L and
λ (``_ppi.linear_weights``), so each judgment row (original and neighbour) of item i gets the score
``N c_i · f + mean_L y``, mapped affinely into [0, 1]. Certifying that table in the leaderboard view certifies the
anchored release against every neighbour generator of the judge, with the judge's own neighbour data
(docs/proofs/human_anchored.md).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound.human._agreement import agreement, flip_to_disagree, krippendorff_alpha
from biasbound.human._ppi import SMALL_SAMPLE, AnchoredMean, anchored_mean, linear_weights, rank_sets

__all__ = ["anchored_judgments", "human_report", "labels_digest", "too_few_sentence"]


def _canonical(frame: pd.DataFrame) -> pd.DataFrame:
    mask = (frame["variant"] == "original") & (frame["rerun"] == 0) & frame["game"].isin([0, 1])
    canon = frame.loc[mask, ["judge", "model", "item_id", "score"]].copy()
    for c in ("judge", "model", "item_id"):
        canon[c] = canon[c].astype(str)
    return canon[canon["score"].notna()].drop_duplicates(["judge", "model", "item_id"])


def _per_item(labels: pd.DataFrame) -> pd.DataFrame:
    """One human score per (model, item): the mean over its raters."""
    return labels.groupby(["model", "item_id"], as_index=False, sort=True)["label"].mean()


def labels_digest(labels: pd.DataFrame) -> str:
    """SHA-256 of the normalised per-(model, item) labels (sorted; canonical JSON): binds the anchored release."""
    per = _per_item(labels)
    rows = [[str(m), str(i), float(v)] for m, i, v in zip(per["model"], per["item_id"], per["label"])]
    return hashlib.sha256(json.dumps(rows, separators=(",", ":")).encode("utf-8")).hexdigest()


def small_sample_sentence(n: int) -> str | None:
    """The plain sentence when the labels are too few for the judge to narrow the interval (the anchored interval
    then holds the labels-only one: :data:`biasbound.human._ppi.SMALL_SAMPLE`)."""
    if n >= SMALL_SAMPLE:
        return None
    return (f"{n} labels are fewer than {SMALL_SAMPLE}: the power-tuned interval alone would cover less than its level "
            "this small, so the anchored interval also holds the labels-only one and is no narrower than it; label "
            "more items for the judge to help")


def too_few_sentence(a: AnchoredMean) -> str | None:
    """The plain sentence when the labels are too few (or the judge too weak) for the correction to help."""
    if a.helps:
        return None
    return (f"{a.n} labels are too few for the judge to help: the human-anchored interval (width {a.width:.3f}) is "
            f"not narrower than the labels-only one (width {a.classical_width:.3f}); report the labels-only interval, "
            "or label more items (biasbound plan --labels).")


def _anchored_row(judge: str, model: str, a: AnchoredMean, simultaneous: AnchoredMean) -> dict[str, Any]:
    return {"judge": judge, "model": model, "judge_only": a.judge_only, "anchored": a.estimate, "anchored_lo": a.lo,
            "anchored_hi": a.hi, "lambda": a.lam, "classical": a.classical, "classical_lo": a.classical_lo,
            "classical_hi": a.classical_hi, "labels": a.n, "items": a.n_total, "helps": a.helps,
            "simultaneous_lo": simultaneous.lo, "simultaneous_hi": simultaneous.hi}


def human_report(frame: pd.DataFrame, labels: pd.DataFrame, *, level: float = 0.95,
                 generators: tuple[str, ...] = ()) -> dict[str, Any]:
    """Agreement and human-anchored scores of every judge of a judgment table.

    Parameters
    ----------
    frame : pandas.DataFrame
        The judgment table (normalised scores).
    labels : pandas.DataFrame
        ``item_id, model, rater, label`` on the normalised scale (:func:`biasbound.human.labels.normalise_labels`).
    level : float
        Level of every interval; the rank sets hold simultaneously at this level (Bonferroni over a judge's models).
    generators : tuple of str
        Neighbour generators whose agreement flips are reported (``swap``, ``rerun``, ``variant:NAME``).

    Returns
    -------
    dict
        ``{"level", "labels_sha256", "judges": {judge: {"agreement", "flips", "krippendorff_alpha", "models":
        [rows], "notes"}}}``; a row per model with an anchored estimate (models with fewer than 2 labelled or 2
        unlabelled items are named in the notes).
    """
    from biasbound.neighbors.observed import observed_neighbors

    canon = _canonical(frame)
    per = _per_item(labels)
    joined = canon.merge(per, on=["model", "item_id"], how="left")
    out: dict[str, Any] = {"level": level, "labels_sha256": labels_digest(labels), "judges": {}}
    neighbors: dict[str, dict[str, pd.DataFrame]] = {}  # per generator, the labelled items' neighbours by judge
    for g in generators:
        try:
            nb = observed_neighbors(frame, g, skip_bad=True)  # every judge at once (vectorised)
        except InputError:  # a generator the table has no rows of: nothing to report
            continue
        nb = nb.assign(judge=nb["judge"].astype(str), model=nb["model"].astype(str),
                       item_id=nb["item_id"].astype(str)).merge(per, on=["model", "item_id"], how="inner")
        neighbors[g] = {str(k): v for k, v in nb.groupby("judge", sort=False)}
    for judge, rows in joined.groupby("judge", sort=True):
        lab = rows[rows["label"].notna()]
        card: dict[str, Any] = {"agreement": agreement(lab["score"].to_numpy(), lab["label"].to_numpy(), level=level),
                                "flips": {}, "krippendorff_alpha": None, "models": [], "notes": [],
                                "fully_labelled": []}
        if labels["rater"].notna().any():
            card["krippendorff_alpha"] = _krippendorff(labels, card["agreement"].get("kind") == "categorical")
        for g, by_judge in neighbors.items():
            nb = by_judge.get(str(judge))
            if nb is not None and len(nb):
                card["flips"][g] = flip_to_disagree(nb["original"].to_numpy(), nb["neighbor"].to_numpy(),
                                                    nb["label"].to_numpy(), level=level,
                                                    rule=card["agreement"].get("rule", "exact"))
        fits: dict[str, tuple[AnchoredMean, np.ndarray, np.ndarray, np.ndarray]] = {}
        for model, m_rows in rows.groupby("model", sort=True):
            labelled = m_rows["label"].notna().to_numpy()
            n, big_n = int(labelled.sum()), len(m_rows)
            if n == big_n:  # the human mean is known exactly (the labels' mean): nothing to anchor
                card["fully_labelled"].append(str(model))
                continue
            if n < 2 or big_n - n < 2:
                card["notes"].append(f"model {model}: {n} of {big_n} items labelled; PPI needs at least 2 labelled "
                                     "and 2 unlabelled items, so no anchored score")
                continue
            f = m_rows["score"].to_numpy(dtype=float)
            y = m_rows["label"].to_numpy(dtype=float)[labelled]
            fits[str(model)] = (anchored_mean(y, f, labelled, level=level), y, f, labelled)
        k = max(len(fits), 1)
        simultaneous = {m: anchored_mean(y, f, lab, level=1.0 - (1.0 - level) / k, lam=a.lam)  # [proof:bonferroni]
                        for m, (a, y, f, lab) in fits.items()}
        names = list(fits)
        r_lo, r_hi = rank_sets(np.array([simultaneous[m].lo for m in names]),
                               np.array([simultaneous[m].hi for m in names]))
        for idx, m in enumerate(names):
            row = _anchored_row(str(judge), m, fits[m][0], simultaneous[m])
            row["rank_lo"], row["rank_hi"] = int(r_lo[idx]), int(r_hi[idx])
            row["too_few"] = too_few_sentence(fits[m][0])
            row["small_sample"] = small_sample_sentence(fits[m][0].n)
            card["models"].append(row)
        out["judges"][str(judge)] = card
    return out


def _krippendorff(labels: pd.DataFrame, categorical: bool) -> float | None:
    raters = labels[labels["rater"].notna()]
    units = raters["model"].astype(str) + "\x1f" + raters["item_id"].astype(str)
    table = pd.DataFrame({"r": raters["rater"].astype(str), "u": units, "v": raters["label"]}).pivot_table(
        index="r", columns="u", values="v", aggfunc="first")
    return krippendorff_alpha(table.to_numpy(dtype=float), categorical=categorical)


def anchored_judgments(frame: pd.DataFrame, labels: pd.DataFrame, report: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The judgment table whose per-model mean score is the PPI++ estimate (on an affine [0, 1] scale).

    Every row of (judge, model, item i) — original and neighbours — gets ``g = N c_i f + mean_L y`` (c of
    :func:`biasbound.human._ppi.linear_weights` at the model's recorded λ), then ``(g − lo) / (hi − lo)`` with
    ``[lo, hi]`` the smallest interval holding every g any score in [0, 1] can give. Rows of models without an
    anchored estimate, and of items the judge left unscored, are dropped.

    Returns
    -------
    (frame, mapping) : the rewritten table and ``{"lo", "hi", "models": {judge: {model: {"lambda", "labelled",
    "items", "label_mean"}}}}`` — everything needed to redo the map (``biasbound verify`` does).
    """
    canon = _canonical(frame)
    per = _per_item(labels)
    joined = canon.merge(per, on=["model", "item_id"], how="left")
    lam = {(r["judge"], r["model"]): r["lambda"] for j in report["judges"].values() for r in j["models"]}
    weights: list[pd.DataFrame] = []
    models: dict[str, dict[str, Any]] = {}
    lo, hi = math.inf, -math.inf
    for (judge, model), rows in joined.groupby(["judge", "model"], sort=True):
        if (judge, model) not in lam:
            continue
        labelled = rows["label"].notna().to_numpy()
        c = linear_weights(labelled, lam[(judge, model)]) * len(rows)  # [proof:anchored-table]
        ybar = float(rows["label"].to_numpy(dtype=float)[labelled].mean())
        lo = min(lo, ybar + float(np.minimum(c, 0.0).min()))
        hi = max(hi, ybar + float(np.maximum(c, 0.0).max()))
        weights.append(pd.DataFrame({"judge": judge, "model": model, "item_id": rows["item_id"].to_numpy(),
                                     "_c": c, "_y": ybar}))
        models.setdefault(str(judge), {})[str(model)] = {
            "lambda": lam[(judge, model)], "label_mean": ybar, "items": len(rows),
            "labelled": sorted(rows.loc[labelled, "item_id"].astype(str).tolist())}
    if not weights:
        return frame.iloc[0:0], {"lo": None, "hi": None, "models": models}
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    w = pd.concat(weights, ignore_index=True)
    keys = frame[["judge", "model", "item_id"]].astype(str)
    merged = keys.merge(w, on=["judge", "model", "item_id"], how="left")
    keep = merged["_c"].notna().to_numpy()
    out = frame.loc[keep].copy()
    g = merged.loc[keep, "_c"].to_numpy() * out["score"].to_numpy(dtype=float) + merged.loc[keep, "_y"].to_numpy()
    out["score"] = np.clip((g - lo) / (hi - lo), 0.0, 1.0)  # [proof:affine-scale]  # [lo, hi] holds every g: the clip only removes float noise
    out = out.reset_index(drop=True)
    return out, {"lo": lo, "hi": hi, "models": models}

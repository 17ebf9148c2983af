"""The self-contained HTML report of a certification run.

:func:`write_report` renders ``report.html`` from the Jinja template shipped in
``biasbound/report/templates/report.html.jinja``: every figure is embedded as a
base64 ``data:image/png`` URI and the CSS is inline, so the single file can be
mailed or archived. Autoescaping is on: model names, judge names, titles and every
other user-provided string are escaped, never trusted as markup.

Sections, in order: the guarantee in plain words, the audit verdict, the
certificate parameters, what the certificate cost (retention), the leaderboard
before and after, missing and failed judgments, the plots.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import functools
import math
import numbers
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound.human.report import human_view

__all__ = ["PNG_SIGNATURE", "format_number", "write_report"]

PNG_SIGNATURE: bytes = b"\x89PNG\r\n\x1a\n"
"""The eight bytes every PNG file starts with."""

_WHERE = "write_report"

_PLOT_CAPTIONS: dict[str, str] = {
    "score_distribution": (
        "Per-item judge scores before (top: share of items at each score level) and after the bias-bounded "
        "transformation (bottom, zoomed: the shrunk scores before noise as bars, the certified scores as a histogram)."
    ),
    "score_kde": "Per-item judge scores before and after the bias-bounded transformation (Gaussian KDE).",
    "ranking": (
        "Leaderboard before (left) and after (right, on its own scale) the transformation: mean per-item score "
        "with its 95% bootstrap CI; right margin: rank before → after."
    ),
    "sensitivity": (
        "Measured RMS sensitivity Δ* per neighbour generator, with its upper confidence bound and the number of "
        "neighbours m; dashed: the sensitivity the calibration used; dotted: the largest move one neighbour can cause "
        "(R√k). The tolerance τ is not on this axis: it bounds the certified scores' move, not Δ*."
    ),
    "judges": "Rank correlation between original and certified model scores, per judge and setting.",
    "frontier": (
        "The feasible frontier α*(σ): at each noise scale σ, the largest shrinkage α that still certifies the "
        "folder's (τ, δ) under the certificate's bound (α = 0 where none does); the star is the (σ, α) released."
    ),
    "bias_radius": (
        "Bias radius at δ = 0.01, 0.05 and 0.1: the smallest τ for which the judge itself, unshrunk (α = 1) and "
        "without noise, would be (τ, δ)-bias-bounded, from the same knowledge as the certificate ({rows}; "
        "“>” = no finite radius)."
    ),
    "tradeoff": "Shrinkage α and noise σ as the tolerance τ varies.",
    "rank_pairs": (
        "The order of every model pair (models best first): dark green = its order survives every item perturbed at once, the "
        "question bootstrap (disjoint 95% intervals) and the certified release's noise; light green = the bootstrap "
        "alone separates it; red = perturbing every item (e.g. swapping every answer) reverses it; grey = not separated."
    ),
}

_VERDICT_TEXT: dict[str, str] = {
    "holds": "The audit supports the certificate: the upper confidence bound on the failure probability is at most δ.",
    "violated": "The audit contradicts the certificate: even the lower confidence bound on the failure probability exceeds δ.",
    "inconclusive": "The audit is inconclusive: the confidence interval on the failure probability contains δ.",
    "not contradictable": ("The certificate rests on an almost-sure bound whose worst neighbour already fails with "
                           "probability at most δ: no neighbour within the bound can contradict it, and none of the "
                           "held-out neighbours lies beyond it."),
    "exact": "The failure probability was computed over the generator's whole population of neighbours: nothing is estimated, and it is at most δ.",
}

_RECHECK_TEXT = ("The certificate's bound, recomputed from the recorded neighbours it rests on, is at most δ; with "
                 "none held out, no data beyond those the bound already uses could contradict it.")


def _is_recheck(audit: Mapping[str, Any]) -> bool:
    """True for an audit record that recomputes the certificate's own bound (no held-out neighbours exist)."""
    return str(audit.get("kind", "")) in ("bound", "recheck")


#: CSS class of each verdict (the colours of holds / violated / inconclusive).
_VERDICT_CSS: dict[str, str] = {"holds": "holds", "not contradictable": "holds", "exact": "holds",
                                "violated": "violated", "inconclusive": "inconclusive"}

# (key, label) in display order; keys not listed are shown after these as they come.
_CERT_FIELDS: tuple[tuple[str, str], ...] = (
    ("scope", "scope"),
    ("view", "view"),
    ("tau", "τ (tolerance)"),
    ("delta", "δ (failure probability)"),
    ("delta_B", "δ_B (noise share of δ)"),
    ("delta_Delta", "δ_Δ (sensitivity share of δ)"),
    ("tau_split", "τ split (sensitivity share of τ)"),
    ("beta", "β (failure probability over the neighbour samples, summed over every record — each model's own claim spends its share)"),
    ("dim", "d (items)"),
    ("method", "calibration method"),
    ("bound_used", "bound used"),
    ("bound_value", "bound on the failure probability at the released α, σ"),
    ("exact", "exact (nothing estimated)"),
    ("radius", "noise radius"),
    ("sensitivity", "sensitivity used"),
    ("sensitivity_ucb", "sensitivity UCB"),
    ("combination", "generator combination"),
    ("alpha", "α (spread kept)"),
    ("alpha_max", "α_max (largest feasible α)"),
    ("center", "shrinkage center"),
    ("sigma", "σ (noise std per item)"),
    ("sigma_max", "σ_max"),
    ("seed", "seed"),
    ("data_sha256", "data SHA-256"),
    ("biasbound_version", "biasbound version"),
    ("created", "created"),
)
_CERT_SKIP = {"guarantee", "generators", "audit"}

_AUDIT_FIELDS: tuple[tuple[str, str], ...] = (
    ("tau", "τ"),
    ("delta", "δ"),
    ("n_neighbors", "held-out neighbours"),
    ("exact_probability", "failure probability (exact, mean over neighbours)"),
    ("exact_ucb", "upper confidence bound (exact)"),
    ("mc_probability", "failure probability (Monte Carlo)"),
    ("mc_ucb", "upper confidence bound (Monte Carlo)"),
    ("n_mc", "Monte Carlo draws"),
    ("confidence", "confidence level"),
    ("seed", "seed"),
)

_RETENTION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("spearman", "Spearman ρ"),
    ("kendall_tau_b", "Kendall τ_b"),
    ("pearson", "Pearson r"),
    ("pair_keep", "pair-keep probability (adjacent pairs, mean)"),
    ("alpha", "spread kept (α)"),
    ("expected_distortion", "expected distortion E‖M(D) − f(D)‖²"),
)
_PAIR_KEEP_KEYS = (
    "pairs_kept_mean",
    "pairs_kept_probability_mean",
    "mean_pairs_kept_probability",
    "pair_keep_probability",
    "pair_keep_mean",
    "pairs_kept_probability",
)
_RETENTION_MARKERS = {"spearman", "kendall_tau_b", "pearson"}


# ----------------------------------------------------------------------------- formatting


def format_number(value: Any) -> str:
    """Format a value for a human reader: no 17-digit floats.

    Parameters
    ----------
    value : Any
        ``None`` → "—"; booleans → "yes"/"no"; integers as they are; NaN → "n/a";
        ±inf → "∞"/"−∞"; other reals with 4 significant digits (scientific notation
        below 1e-3 or from 1e6 on; integral floats below 1e6 without decimals);
        anything else → ``str(value)``.

    Returns
    -------
    str
        The text to display.
    """
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0.0:
            return "0"
        a = abs(v)
        if a < 1e-3 or a >= 1e6:
            return f"{v:.3e}"
        if v.is_integer():
            return str(int(v))
        return f"{v:.4g}"
    return str(value)


def format_correlation(value: Any) -> str:
    """A correlation with four decimals, so 0.99997 reads "1.0000" and not a perfect "1"."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and math.isfinite(float(value)):
        return f"{float(value):.4f}"
    return format_number(value)


def _ci(lo: Any, hi: Any) -> str:
    if lo is None and hi is None:
        return ""
    return f"[{format_number(lo)}, {format_number(hi)}]"


def _as_mapping(value: Any, name: str) -> Mapping[str, Any]:
    """Accept a Mapping, an object with ``to_dict()`` or a dataclass instance."""
    if isinstance(value, Mapping):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        out = to_dict()
        if isinstance(out, Mapping):
            return out
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"The {name!r} parameter of {_WHERE} must be a mapping (or have to_dict()). Got {type(value).__name__} instead.")


def _inline(value: Any) -> str:
    """One-line text for a nested value (``key value, …``; zero counts left out)."""
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items() if not (isinstance(v, numbers.Number) and not isinstance(v, bool) and v == 0)]
        return ", ".join(f"{str(k).replace('_', ' ')} {_inline(v)}" for k, v in items) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(_inline(v) for v in value)
    return format_number(value)


# ----------------------------------------------------------------------------- sections


def _num(value: Any) -> float | None:
    """A finite float, or None."""
    if value is None or isinstance(value, (bool, np.bool_)):
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _audit_block(audit: Mapping[str, Any], label: str, tau: Any = None) -> dict[str, Any]:
    """One audit in prose: the verdict, its reading, and the numbers it rests on (``tau``: the certificate's τ,
    used when the audit record does not repeat it)."""
    verdict = str(audit.get("verdict", "unknown"))
    n = audit.get("n_neighbors")
    conf = _num(audit.get("confidence"))
    conf_txt = f"{100 * conf:g}%" if conf is not None else "the stated"
    parts = []
    recheck = _is_recheck(audit)
    if n is not None:
        parts.append(f"The bound was recomputed from the {format_number(n)} recorded neighbours it rests on "
                     "(a recomputation, not independent evidence)" if recheck else
                     f"On {format_number(n)} held-out neighbours")
    tau = audit.get("tau", tau)
    tau_txt = f"τ = {format_number(tau)}" if tau is not None else "τ"
    if "exact_probability" in audit and recheck:
        delta_txt = f"δ = {format_number(audit.get('delta'))}" if audit.get("delta") is not None else "δ"
        parts.append(f"it bounds the probability that the certified scores move by more than {tau_txt} by "
                     f"{format_number(audit.get('exact_probability'))}, against {delta_txt}")
    elif "exact_probability" in audit:
        parts.append(f"the probability that the certified scores move by more than {tau_txt} "
                     f"is {format_number(audit.get('exact_probability'))} (exact, averaged over the neighbours)")
    if "exact_ucb" in audit and not recheck:
        delta_txt = f"δ = {format_number(audit.get('delta'))}" if audit.get("delta") is not None else "δ"
        parts.append(f"its {conf_txt} upper confidence bound is {format_number(audit.get('exact_ucb'))}, against {delta_txt}")
    sentence = ", ".join(parts) + "." if parts else ""
    mc = ""
    if "mc_probability" in audit:
        mc = (f"A Monte Carlo check with {format_number(audit.get('n_mc'))} draws of the noise finds "
              f"{format_number(audit.get('mc_probability'))} (upper bound {format_number(audit.get('mc_ucb'))}).")
    known = {k for k, _ in _AUDIT_FIELDS} | {"verdict", "exact_lcb", "sigma", "alpha", "dim", "center", "max_distance",
                                               "p_max", "bound_violations"}
    extra = [(str(k), _inline(v)) for k, v in audit.items() if k not in known]
    return {
        "label": label,
        "verdict": verdict,
        "css": _VERDICT_CSS.get(verdict, "unknown"),
        "text": (_RECHECK_TEXT if recheck and verdict == "not contradictable" else
                 _VERDICT_TEXT.get(verdict, "The audit returned no recognised verdict.")),
        "recheck": recheck,
        "prose": " ".join(x for x in (sentence, mc) if x),
        "rows": extra,
    }


def _audit_blocks(audit: Mapping[str, Any] | None, tau: Any = None) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Split the run-level audit into verdict blocks and plain facts (e.g. per-model verdict counts)."""
    if audit is None:
        return [], []
    if "verdict" in audit:
        return [_audit_block(audit, "audit", tau)], []
    blocks, facts = [], []
    for key, value in audit.items():
        if isinstance(value, Mapping) and "verdict" in value:
            blocks.append(_audit_block(value, str(key), tau))
        else:
            facts.append((str(key), _inline(value)))
    return blocks, facts


def _scope_tau(certs: Sequence[Mapping[str, Any]]) -> Any:
    """The certificates' common τ, or None when they differ or there are none."""
    taus = {c.get("tau") for c in certs}
    return next(iter(taus)) if len(taus) == 1 else None


def _scope_value(certs: Sequence[Mapping[str, Any]], key: str) -> Any:
    """A scope field of the first certificate that records it."""
    for c in certs:
        scope = c.get("scope")
        if isinstance(scope, Mapping) and scope.get(key) is not None:
            return scope[key]
    return None


def _certificate_name(cert: Mapping[str, Any], index: int) -> str:
    """A short name from the scope's judge and model."""
    scope = cert.get("scope")
    parts = []
    if isinstance(scope, Mapping):
        for key in ("judge", "model"):
            value = scope.get(key)
            if value is not None and not isinstance(value, (Mapping, list, tuple)) and str(value) not in ("", "*"):
                parts.append(f"{key} {value}")
    return ", ".join(parts) if parts else f"certificate {index + 1}"


_BOUND_TEXT = {
    "markov": "the paper's Markov bound on the sensitivity (Δ ≤ Δ*/√δ_Δ with probability 1 − δ_Δ)",
    "deterministic": "the deterministic bound: a neighbour changes one item's score on a known range, so ‖Δ‖ ≤ R√k always",
    "order-statistic": "an order-statistic bound on the (1 − δ_Δ) quantile of ‖Δ‖ with confidence 1 − β",
}
_RADIUS_TEXT = {
    "laurent-massart": "the Laurent–Massart χ² tail bound",
    "chi2-exact": "the exact χ²_d quantile",
}


def _mechanism(cert: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The mechanism M(D) = α f(D) + (1 − α)c + N(0, σ² I) with this certificate's numbers, and its calibration in prose."""
    alpha, sigma, dim = cert.get("alpha"), cert.get("sigma"), cert.get("dim")
    center = cert.get("center")
    if isinstance(center, Mapping):
        c_value, c_kind = center.get("value"), str(center.get("kind", ""))
    else:
        c_value, c_kind = None, str(center or "")
    c_text = format_number(c_value) if _num(c_value) is not None else "c"
    a = format_number(alpha)
    one_minus = format_number(1 - a_num) if (a_num := _num(alpha)) is not None else "1 − α"
    formula = (f"M(D) = {a} · f(D) + {one_minus} · {c_text} + N(0, {format_number(sigma)}² · I_{format_number(dim)})")
    centre_prose = {
        "fixed": f"a fixed, public centre c = {c_text}",
        "ema": f"a frozen moving-average centre c = {c_text}",
        "holdout": "the mean of held-out items as centre c",
        "batch": "the batch mean as centre c (its movement is added to the sensitivity)",
    }.get(c_kind, f"centre c ({c_kind or 'unspecified'})")
    prose = [
        f"f(D) is the vector of the judge's {format_number(dim)} per-item scores on [0, 1]. The mechanism shrinks it "
        f"towards {centre_prose} with Lipschitz constant α = {a} (the share of the score spread kept; the largest "
        f"feasible α is α_max = {format_number(cert.get('alpha_max'))}) and adds independent Gaussian noise with "
        f"standard deviation σ = {format_number(sigma)} per item (largest admissible σ_max = {format_number(cert.get('sigma_max'))}).",
        _calibration_prose(cert),
    ]
    return {"name": _certificate_name(cert, index), "formula": formula, "prose": prose,
            "record": _certificate_record(cert)}


def _confidence(cert: Mapping[str, Any]) -> str | None:
    """The certificate's confidence over its neighbour sample, per model when it covers several."""
    from biasbound.bounds import knowledge_from_dict
    from biasbound.certificate import confidence_phrase

    try:
        return confidence_phrase(knowledge_from_dict(cert["knowledge"]))
    except (KeyError, TypeError, ValueError):
        beta = _num(cert.get("beta"))
        return None if not beta else f"with confidence {format_number(1 - beta)} over the neighbour sample"


def _calibration_prose(cert: Mapping[str, Any]) -> str:
    """How the calibration reached α and σ, from the certificate's fields (the knowledge-based record, or the older one)."""
    delta = format_number(cert.get("delta"))
    parts: list[str] = []
    relation = cert.get("neighbor_relation")
    if relation:
        parts.append(f"A neighbour D′ of D: {relation}.")
    bound, value = cert.get("bound_used"), cert.get("bound_value")
    beta = _num(cert.get("beta"))
    if value is not None:  # the knowledge-based certificate (what is known about Δ → the bound it supports)
        ri = cert.get("range_implied")
        conf = _confidence(cert) if beta else None
        how = ("computed exactly over every neighbour (nothing estimated)" if cert.get("exact") else
               "valid surely: it follows from the score range alone" if conf and isinstance(ri, Mapping) and ri.get("holds") else
               f"valid {conf}" if conf else
               "from the point estimate of the sensitivity (no confidence statement)" if cert.get("point_estimate") else
               "from what is known about the sensitivity")
        chose = ("used the paper's bound (Corollary 3.2)" if cert.get("method") == "paper" else
                 f"chose the {bound} bound, the smallest valid one")
        parts.append(f"The calibration ({cert.get('method', '—')} method) {chose}: at the released α and σ it bounds "
                     f"the failure probability by {format_number(value)} ≤ δ = {delta}, {how}.")
        paper = cert.get("paper")
        if isinstance(paper, Mapping):
            parts.append(f"As in the paper (Corollary 3.2), δ is split into δ_B = {format_number(paper.get('delta_B'))} "
                         f"(noise) and δ_Δ = {format_number(paper.get('delta_Delta'))} (sensitivity, Markov), with the "
                         f"sensitivity {format_number(paper.get('sensitivity'))} and "
                         f"{_RADIUS_TEXT.get(str(paper.get('radius')), str(paper.get('radius')))} for the noise.")
        rng = cert.get("range")
        if isinstance(rng, Mapping) and _num(rng.get("A")) is not None:
            parts.append(f"On its score range a neighbour moves the scores by at most A = {format_number(rng['A'])}.")
        return " ".join(parts)
    gens = cert.get("generators") or {}
    gen_names = ", ".join(str(g) for g in gens) if isinstance(gens, Mapping) and gens else "the observed neighbours"
    ucb_txt = (f"its upper confidence bound at confidence {format_number(1 - beta)}"
               if beta is not None else "its point estimate (no confidence bound, as in the paper)")
    parts.append(
        f"The calibration ({format_number(cert.get('method'))} method) uses the sensitivity {format_number(cert.get('sensitivity'))} "
        f"measured on {gen_names} ({format_number(cert.get('combination'))} over generators; {ucb_txt}), "
        f"{_BOUND_TEXT.get(str(bound), str(bound))}, and "
        f"{_RADIUS_TEXT.get(str(cert.get('radius')), str(cert.get('radius')))} for the noise. "
        f"The failure probability δ = {delta} is split into δ_B = {format_number(cert.get('delta_B'))} "
        f"(noise) and δ_Δ = {format_number(cert.get('delta_Delta'))} (sensitivity).")
    return " ".join(parts)


def _certificate_record(cert: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The certificate's scalar fields as (label, value) rows: what a reader needs to re-check it."""
    rows: list[tuple[str, str]] = []
    for key, label in _CERT_FIELDS:
        if key not in cert or key in ("scope", "center"):
            continue
        value = cert[key]
        if isinstance(value, (Mapping, list, tuple)):
            continue
        rows.append((label, format_number(value)))
    center = cert.get("center")
    if isinstance(center, Mapping):
        rows.append(("shrinkage centre", f"{center.get('kind', '?')} ({format_number(center.get('value'))})"))
    scope = cert.get("scope")
    if isinstance(scope, Mapping):
        for key, label in (("judge", "judge"), ("model", "model"), ("holdout_share", "share of neighbours held out"),
                           ("neighbors_calibration", "neighbours used for calibration"),
                           ("neighbors_audit", "neighbours held out for the audit")):
            if key in scope and not isinstance(scope[key], (Mapping, list, tuple)):
                value = scope[key]
                rows.append((label, "all models" if key == "model" and value == "*" else format_number(value)))
        if isinstance(scope.get("score_range"), (list, tuple)) and len(scope["score_range"]) == 2:
            lo, hi = scope["score_range"]
            rows.append(("score range", f"[{format_number(lo)}, {format_number(hi)}]"))
    return rows


# --- certificate figures: one function per figure; each reads the certificate dict and returns a
# section ({"title", "prose", "headers", "rows"}) or None when the certificate lacks the field. New
# figures are added by appending a function to _CERT_FIGURES.


#: Figures with more rows than this are summarised (one row per model would fill pages).
_LONG = 24


def _figure_sensitivity(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    gens = cert.get("generators") or _cert_value(cert, "generators_table")
    if not isinstance(gens, Mapping) or not gens:
        return None
    rows = []
    for name, g in gens.items():
        g = g if isinstance(g, Mapping) else {}
        rows.append([str(name), format_number(g.get("delta_star")), format_number(g.get("ucb")), format_number(g.get("m"))])
    return {
        "title": "Measured sensitivity per neighbour generator",
        "prose": ("Δ* is the root-mean-square distance ‖f(D) − f(D′)‖₂ between the scores of the batch and of a neighbour, "
                  "over m observed neighbours (the largest over the models, with its upper confidence bound)."
                  + (f" The calibration uses {format_number(cert.get('sensitivity'))} "
                     f"({format_number(cert.get('combination'))} over the generators)." if cert.get("sensitivity") is not None else "")),
        "headers": ["generator", "Δ* (RMS)", "upper confidence bound", "m (neighbours)"],
        "rows": rows,
    }


def _cert_value(cert: Mapping[str, Any], key: str) -> Any:
    """A certificate field, looked up at the top level, then under ``figures``, then in the scope."""
    for holder in (cert, cert.get("figures"), cert.get("scope")):
        if isinstance(holder, Mapping) and holder.get(key) is not None:
            return holder[key]
    return None


def _figure_fields(cert: Mapping[str, Any], key: str, title: str, prose: str, value: Any = None) -> dict[str, Any] | None:
    """A generic figure: a scalar, a mapping of scalars, a mapping of mappings or a list of mappings (one row each)."""
    value = _cert_value(cert, key) if value is None else value
    if value is None:
        return None
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Mapping) for v in value):
        cols = list(dict.fromkeys(k for v in value for k in v if not isinstance(v[k], (Mapping, list, tuple))))
        rows = [[format_number(v.get(c)) for c in cols] for v in value]
        return {"title": title, "prose": prose, "headers": [c.replace("_", " ") for c in cols], "rows": rows}
    if isinstance(value, Mapping):
        if value and all(isinstance(v, Mapping) for v in value.values()):
            cols = list(dict.fromkeys(k for v in value.values() for k in v if not isinstance(v[k], (Mapping, list, tuple))))
            rows = [[str(name), *[format_number(v.get(c)) for c in cols]] for name, v in value.items()]
            return {"title": title, "prose": prose, "headers": ["", *[c.replace("_", " ") for c in cols]], "rows": rows}
        rows = [[str(k).replace("_", " "), _inline(v)] for k, v in value.items()]
        return {"title": title, "prose": prose, "headers": ["quantity", "value"], "rows": rows}
    return {"title": title, "prose": prose, "headers": ["quantity", "value"], "rows": [[key.replace("_", " "), _inline(value)]]}


def _figure_range_implied(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "range_implied")
    if value is None:
        return None
    flag = value.get("holds", value.get("implied", value.get("value"))) if isinstance(value, Mapping) else value
    if isinstance(flag, (bool, np.bool_)):
        prose = ("Yes: at this α and σ the guarantee would hold for any judge whose neighbours stay within the score "
                 "range, so it says nothing specific about this judge's bias." if flag else
                 "No: the score range alone would not give this guarantee at this α and σ; it rests on what was "
                 "measured about this judge.")
    else:
        prose = "Whether the score range alone implies the guarantee at the certified α and σ."
    if isinstance(value, Mapping) and _num(value.get("A")) is not None and _num(value.get("bound")) is not None:
        prose += (f" A neighbour moves the scores by at most A = {format_number(value['A'])}; at that worst case the "
                  f"failure probability is {format_number(value['bound'])}, against δ = {format_number(cert.get('delta'))}.")
    return _figure_fields(cert, "range_implied", "Is the guarantee implied by the score range alone?", prose, value)


def _figure_original_scale(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "original_scale")
    if value is None:
        return None
    prose = ("With a centre fixed within the batch, (M(D) − (1 − α)c)/α = f(D) + N(0, (σ/α)² I): releasing M(D) is "
             "releasing the unshrunk judge with noise σ/α, and the (τ, δ) statement is a (τ/α, δ) statement about it.")
    if isinstance(value, Mapping) and _num(value.get("tau")) is not None and _num(value.get("sigma")) is not None:
        prose += (f" Here: τ/α = {format_number(value['tau'])} and σ/α = {format_number(value['sigma'])} on the judge's "
                  "[0, 1] scale.")
    return _figure_fields(cert, "original_scale", "The guarantee on the original score scale", prose, value)


def _figure_bias_radius(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "bias_radius")
    if value is None:
        return None
    radius = value.get("radius") if isinstance(value, Mapping) else value
    at = value.get("delta", cert.get("delta")) if isinstance(value, Mapping) else cert.get("delta")
    prose = ("The bias radius is the smallest τ for which the judge itself — unshrunk (α = 1) and without noise — "
             f"would be (τ, δ)-bias-bounded at δ = {format_number(at)}: an upper quantile of ‖f(D) − f(D′)‖₂.")
    if _num(radius) is not None:
        prose += f" Here it is {format_number(radius)}, against the certified τ = {format_number(cert.get('tau'))}."
    note = _radius_note([cert])
    if note:
        prose += " " + note
    if isinstance(value, Mapping):
        per = value.get("per_generator") or {}
        if len(per) > _LONG:  # one entry per model and generator: the spread, with the models at both ends
            finite = {g: _num(r) for g, r in per.items() if _num(r) is not None}
            rows = []
            if finite:
                ordered = sorted(finite, key=finite.get)
                rows = [[f"smallest ({ordered[0]})", format_number(finite[ordered[0]])],
                        ["median", format_number(float(np.median(list(finite.values()))))],
                        [f"largest ({ordered[-1]})", format_number(finite[ordered[-1]])]]
            rows.append(["all together", format_number(radius)])
            prose += f" Over the {len(per)} model and generator entries:"
            return {"title": "Bias radius of the judge", "prose": prose, "headers": ["", "bias radius"], "rows": rows}
        rows = [[str(g), format_number(r)] for g, r in per.items()]
        rows.append(["all generators together", format_number(radius)])
        return {"title": "Bias radius of the judge", "prose": prose, "headers": ["generator", "bias radius"], "rows": rows}
    return _figure_fields(cert, "bias_radius", "Bias radius of the judge", prose, value)


def _figure_bias_radius_curve(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "bias_radius")
    curve = value.get("curve") if isinstance(value, Mapping) else _cert_value(cert, "bias_radius_curve")
    if not isinstance(curve, (list, tuple)) or not curve:
        return None
    return _figure_fields(cert, "bias_radius_curve", "Bias radius over δ",
                          "The bias radius at each failure probability δ (— where the knowledge gives no finite radius).",
                          curve)


def _figure_frontier(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "frontier")
    points = value.get("points") if isinstance(value, Mapping) else value
    if not isinstance(points, (list, tuple)) or not points:
        return None
    return _figure_fields(cert, "frontier", "The frontier: the largest α for each σ",
                          "Every (σ, α) pair on this frontier certifies the same (τ, δ); the certificate uses one point "
                          "of it. More noise buys more of the score spread.", points)


def _figure_candidates(cert: Mapping[str, Any]) -> dict[str, Any] | None:
    value = _cert_value(cert, "candidates")
    if not isinstance(value, (list, tuple)) or not value:
        return None
    if len(value) > _LONG and all(isinstance(c, Mapping) for c in value):  # one per model, generator and bound: by bound
        units: dict[str, dict[str, Any]] = {}
        for c in value:
            u = units.setdefault(str(c.get("unit", "—")), {"n": 0, "applicable": 0, "selected": 0, "reasons": {}})
            u["n"] += 1
            u["applicable"] += bool(c.get("applicable"))
            u["selected"] += bool(c.get("selected"))
            r = str(c.get("reason", ""))
            u["reasons"][r] = u["reasons"].get(r, 0) + 1
        rows = [[unit, f"{u['applicable']} of {u['n']}", str(u["selected"]),
                 max(u["reasons"], key=u["reasons"].get) if u["reasons"] else ""] for unit, u in units.items()]
        return {"title": "Bounds considered",
                "prose": (f"Every bound the calibration tried on what is known about each of the {len(value)} "
                          "(model, generator, bound) combinations, grouped by bound: where it applies, how often it "
                          "was selected (the smallest valid one), and the most common reason."),
                "headers": ["bound", "applies", "selected", "most common reason"], "rows": rows}
    return _figure_fields(cert, "candidates", "Bounds considered",
                          "Every bound the calibration tried on what is known about the judge, whether it applies, "
                          "and which one was selected (the smallest valid one).", value)


_CERT_FIGURES: tuple[Any, ...] = (
    _figure_sensitivity,
    _figure_range_implied,
    _figure_original_scale,
    _figure_bias_radius,
    _figure_bias_radius_curve,
    _figure_frontier,
    _figure_candidates,
    lambda c: _figure_fields(c, "leaderboard_cost", "Leaderboard cost",
                             "What the certificate costs the leaderboard."),
    lambda c: _figure_fields(c, "bound_details", "Details of the bound used", "The quantities the bound was computed from."),
)


def _certificate_figures(cert: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for fn in _CERT_FIGURES:
        fig = fn(cert)
        if fig is not None and fig["rows"]:
            out.append(fig)
    return out


def _model_rows(model_certs: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """One row per per-model certificate: its batch, its own sensitivity and its audit."""
    rows = []
    for c in model_certs:
        scope: Any = c.get("scope") if isinstance(c.get("scope"), Mapping) else {}
        ms: Any = (scope.get("model_sensitivity") if isinstance(scope.get("model_sensitivity"), Mapping)
                                 else {})
        audit = c.get("audit")
        a = None
        if isinstance(audit, Mapping):
            a = audit.get("model") if isinstance(audit.get("model"), Mapping) else (audit if "verdict" in audit else None)
        rows.append([
            str(scope.get("model", "—")),
            format_number(c.get("dim")),
            format_number(scope.get("n_missing")),
            format_number(ms.get("delta_star")),
            format_number(ms.get("ucb")),
            format_number(a.get("n_neighbors")) if a else "—",
            format_number(a.get("exact_probability")) if a else "—",
            format_number(a.get("exact_ucb")) if a else "—",
            str(a.get("verdict")) if a else "not audited",
        ])
    return rows


_MODEL_HEADERS = ["model", "d (items)", "missing", "model Δ*", "model Δ* UCB", "neighbours checked",
                  "P(move > τ)", "upper bound", "verdict"]


def _summary_cell(value: Any) -> str:
    """One table cell for a metric that may be a scalar, a list (per pair) or a dict (per model)."""
    if isinstance(value, Mapping):
        parts = []
        if "mean" in value:
            parts.append(f"mean {format_number(value['mean'])}")
        if "total" in value:
            parts.append(f"total {format_number(value['total'])}")
        if not parts:
            parts = [f"{k} {format_number(v)}" for k, v in value.items() if not isinstance(v, (Mapping, list, tuple, np.ndarray))]
        nested = [v for v in value.values() if isinstance(v, Mapping)]
        if nested:
            parts.append(f"{len(nested[0])} values")
        return ", ".join(parts) if parts else "—"
    if isinstance(value, (list, tuple, np.ndarray)):
        return _mean_min_cell(value, "values")
    return format_number(value)


def _mean_min_cell(values: Any, unit: str) -> str:
    """``mean (min m, n <unit>)`` over the finite entries; "n/a" when there are none."""
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size == 0:
        return "n/a"
    return f"{format_number(float(arr.mean()))} (min {format_number(float(arr.min()))}, {arr.size} {unit})"


def _pair_keep(metrics: Mapping[str, Any]) -> str:
    for key in _PAIR_KEEP_KEYS:
        if key not in metrics:
            continue
        value = metrics[key]
        if isinstance(value, (list, tuple, np.ndarray)):
            return _mean_min_cell(value, "pairs")
        return format_number(value)
    return "—"


def _retention_rows(retention: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Flatten a retention dict (single, per judge, or per judge and setting) into table rows."""
    rows: list[dict[str, Any]] = []

    def walk(node: Mapping[str, Any], path: list[str]) -> None:
        if _RETENTION_MARKERS & set(node):
            cells = []
            for key, _ in _RETENTION_COLUMNS:
                if key == "pair_keep":
                    cells.append(_pair_keep(node))
                elif key in _RETENTION_MARKERS:
                    cells.append(format_correlation(node.get(key)))
                else:
                    cells.append(_summary_cell(node.get(key)))
            pairs = node.get("adjacent_pairs")
            weakest = None
            if isinstance(pairs, list) and pairs and all(isinstance(p, Mapping) for p in pairs):
                w = min(pairs, key=lambda p: _num(p.get("kept_probability")) if _num(p.get("kept_probability")) is not None else 2.0)
                weakest = (f"The adjacent pair most likely to swap is {w.get('higher')} above {w.get('lower')} "
                           f"(original gap {format_number(w.get('original_gap'))}): the noise keeps their order with "
                           f"probability {format_number(w.get('kept_probability'))}.")
            rows.append({"label": " / ".join(path) if path else "all models", "cells": cells, "weakest": weakest,
                         "note": node.get("note") if isinstance(node.get("note"), str) else None})
            return
        for key, value in node.items():
            if isinstance(value, Mapping):
                walk(value, [*path, str(key)])

    if retention is not None:
        walk(retention, [])
    return rows


#: Leaderboard columns of the report: (key, header, kind). ``ci``: value with its ``_lo``/``_hi`` interval.
_LEADERBOARD_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("rank_original", "rank", "rank"),
    ("judge", "judge", "name"),
    ("model", "model", "name"),
    ("n_items", "items", "plain"),
    ("n_missing", "missing", "plain"),
    ("original", "original (95% CI)", "ci"),
    ("original_both_orders", "both orders", "plain"),
    ("certified", "certified (95% CI)", "ci"),
    ("rank_certified", "rank after", "rank"),
    ("change", "change", "change"),
    ("win_rate_pct", "win rate % (95% CI)", "ci"),
    ("winrate", "win rate % (95% CI)", "ci"),
    ("preference_pct", "mean preference % (95% CI)", "ci"),
    ("preference", "mean preference % (95% CI)", "ci"),
    ("bt_elo", "Bradley–Terry Elo (95% CI)", "ci"),
    ("bt", "Bradley–Terry Elo (95% CI)", "ci"),
)


def _rank_text(value: Any) -> str:
    v = _num(value)
    if v is None:
        return "—"
    return str(int(v)) if v.is_integer() else format_number(v)


def _leaderboard_spec(leaderboard: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The leaderboard table's columns as (key, header, kind), in display order."""
    cols = set(leaderboard.columns)
    has_ranks = {"rank_original", "rank_certified"} <= cols
    several_judges = "judge" in cols and leaderboard["judge"].nunique() > 1
    spec = []
    seen_headers = set()
    for key, header, kind in _LEADERBOARD_COLUMNS:
        if key == "change":
            if has_ranks:
                spec.append((key, header, kind))
            continue
        if key == "judge" and not several_judges:
            continue
        if key in cols and header not in seen_headers:
            spec.append((key, header, kind))
            seen_headers.add(header)
    from biasbound.leaderboard import is_native

    # the tools' own headline numbers, beside the certified column (their rules are under "What the scores mean")
    spec.extend((c, c, "plain") for c in leaderboard.columns
                if is_native(c) and pd.to_numeric(leaderboard[c], errors="coerce").notna().any())
    return spec


def _rank_change(rec: Mapping[str, Any]) -> tuple[str, str]:
    """The "change" cell's text and the row's move (``same``, ``up`` or ``down``) from its two ranks."""
    r0, r1 = _num(rec.get("rank_original")), _num(rec.get("rank_certified"))
    if r0 is None or r1 is None:
        return "—", "same"
    if r0 == r1:
        return "=", "same"
    return f"{'▲' if r0 > r1 else '▼'} {_rank_text(abs(r0 - r1))}", "up" if r0 > r1 else "down"


def _leaderboard_cell(rec: Mapping[str, Any], key: str, kind: str, cols: set[str], is_base: bool) -> dict[str, str]:
    """One cell of the leaderboard table (not the "change" column)."""
    if kind == "name":
        return {"text": str(rec[key]), "ci": "baseline" if key == "model" and is_base else "", "css": "name"}
    if kind == "rank":
        return {"text": _rank_text(rec.get(key)), "ci": "", "css": ""}
    if kind == "plain":
        return {"text": format_number(rec.get(key)), "ci": "", "css": ""}
    ci = _ci(rec.get(f"{key}_lo"), rec.get(f"{key}_hi")) if f"{key}_lo" in cols else ""
    return {"text": format_number(rec.get(key)), "ci": ci, "css": ""}


def _leaderboard_view(leaderboard: pd.DataFrame) -> dict[str, Any]:
    cols = set(leaderboard.columns)
    frame = leaderboard
    sort_cols = [c for c in ("judge", "rank_original") if c in cols]
    if sort_cols:
        frame = frame.sort_values(sort_cols, kind="stable", na_position="last")
    spec = _leaderboard_spec(leaderboard)
    rows = []
    baseline = None
    for rec in frame.to_dict(orient="records"):
        cells: list[dict[str, str]] = []
        move = "same"
        is_base = bool(rec.get("is_baseline")) if "is_baseline" in cols else False
        if is_base:
            baseline = str(rec["model"])
        for key, _, kind in spec:
            if kind == "change":
                text, move = _rank_change(rec)
                cells.append({"text": text, "ci": "", "css": "change"})
            else:
                cells.append(_leaderboard_cell(rec, key, kind, cols, is_base))
        rows.append({"cells": cells, "move": move, "baseline": is_base})
    n_missing = None
    if "n_missing" in cols:
        n_missing = int(pd.to_numeric(leaderboard["n_missing"], errors="coerce").fillna(0).sum())
    return {"headers": [h for _, h, _ in spec], "name_cols": [i for i, (_, _, k) in enumerate(spec) if k == "name"],
            "rows": rows, "n_missing": n_missing, "baseline": baseline}


def _score_meaning(leaderboard: pd.DataFrame, baseline: str | None, load_report: Mapping[str, Any] | None) -> list[str]:
    """What each number on the leaderboard means, in sentences, with the top model as the worked example."""
    cols = set(leaderboard.columns)
    out = []
    scale = None
    if load_report is not None:
        reports = [load_report] if "scale" in load_report else [v for v in load_report.values() if isinstance(v, Mapping)]
        scales = {tuple(r["scale"]) for r in reports if isinstance(r.get("scale"), (list, tuple)) and len(r["scale"]) == 2}
        inferred = any(bool(r.get("scale_inferred")) for r in reports)
        if len(scales) == 1 and next(iter(scales)) != (0.0, 1.0):
            lo, hi = next(iter(scales))
            scale = (f"Raw scores on [{format_number(lo)}, {format_number(hi)}] were mapped linearly onto [0, 1]"
                     f"{' (scale inferred from the data)' if inferred else ''}.")
    def has(*names: str) -> bool:
        return any(n in cols and pd.to_numeric(leaderboard[n], errors="coerce").notna().any() for n in names)

    pairwise = has("original_both_orders", "win_rate_pct", "winrate", "preference_pct", "preference")
    if pairwise:
        base = f"the baseline {baseline}" if baseline else "the baseline"
        out.append(
            f"Every item is a pairwise comparison of a model's answer with {base}'s. “original” is the model's mean score "
            "over items in the original presentation order only (game 1; in Arena-Hard the baseline's answer is shown "
            "first, as assistant A); 1 means the judge preferred the model, 0 the baseline, 0.5 a tie. The swapped order "
            "(game 2) is the position-swap neighbour, so it is not part of f(D).")
        if "original_both_orders" in cols and len(leaderboard):
            top = leaderboard.sort_values("original", ascending=False, kind="stable").iloc[0]
            if _num(top.get("original_both_orders")) is not None:
                out.append(
                    f"“both orders” is the mean over both presentation orders, for context only: for {top['model']}, "
                    f"{format_number(top['original'])} in the original order only against "
                    f"{format_number(top['original_both_orders'])} over both. The difference is the judge's position bias.")
        if has("win_rate_pct", "winrate"):
            out.append(
                "“win rate %” is Arena-Hard's win rate against the baseline in percent (both orders, decisive verdicts "
                "counted three times, ties as half), and “Bradley–Terry Elo” its Bradley–Terry rating on the Elo scale "
                "(the baseline at 1000); both are computed from the original judgments, not from the certified scores.")
        elif has("preference_pct", "preference"):
            out.append(
                "“mean preference %” is the mean preference for the model over both orders in percent (the scores are "
                "not on Arena-Hard's five verdict levels, so no Arena-Hard win rate is given), and “Bradley–Terry Elo” "
                "is fitted on fractional wins (a preference p counts as p win and 1 − p loss); both come from the "
                "original judgments, not from the certified scores.")
    else:
        out.append("“original” is the model's mean per-item score on [0, 1] over its judged items (the original "
                   "variant, first run).")
    out.append(
        "“certified” is the mean of the released scores M(D) = α f(D) + (1 − α)c + noise: it sits near the centre c "
        "because the shrinkage keeps only the share α of the spread, so compare certified scores with each other, "
        "not with the original ones. Intervals are 95% percentile bootstrap intervals over items; ranks are "
        "competition ranks (ties share the better rank).")
    if baseline:
        out.append(f"The baseline {baseline} is marked on its row.")
    if scale:
        out.append(scale)
    out.extend(_native_rules(load_report))
    return out


def _native_rules(load_report: Mapping[str, Any] | None) -> list[str]:
    """One sentence per tool's own number on the leaderboard: its column and the rule it follows (the readers'
    ``integration.native`` records in the load report)."""
    if load_report is None:
        return []
    reports = [load_report] if "integration" in load_report else [v for v in load_report.values() if isinstance(v, Mapping)]
    out, seen = [], set()
    for r in reports:
        for nat in ((r.get("integration") or {}).get("native") or []):
            column, rule = nat.get("column"), nat.get("rule")
            if column and rule and column not in seen:
                seen.add(column)
                out.append(f"“{column}” is the tool's own number by its own rule, beside the certified column: {rule}")
    return out


def _load_view(load_report: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The load report as sentences and tables (missing per model and per source, skipped lines)."""
    if load_report is None:
        return None
    reports = ([("", load_report)] if ("rows" in load_report or "missing" in load_report)
               else [(str(k), v) for k, v in load_report.items() if isinstance(v, Mapping)])
    if not reports:
        reports = [("", load_report)]
    sentences, tables = [], []
    for name, rep in reports:
        where = f" from {name}" if name else ""
        rows, missing = rep.get("rows"), rep.get("missing")
        if rows is not None or missing is not None:
            sentences.append(f"Read {format_number(rows)} judgment rows{where}; {format_number(missing)} are missing "
                             f"(unparseable, absent or failed), excluded and never scored as ties.")
        for key, title in (("missing_by_model", "missing per model"), ("missing_per_model", "missing per model"),
                           ("missing_by_source", "missing per file")):
            value = rep.get(key)
            if isinstance(value, Mapping) and value:
                tables.append({"title": f"{title}{where}", "headers": [title.split()[-1], "missing"],
                               "rows": [[str(k), format_number(v)] for k, v in value.items()]})
        skipped = rep.get("skipped")
        if isinstance(skipped, (list, tuple)) and skipped:
            srows = []
            for s in skipped:
                if isinstance(s, Mapping):
                    srows.append([str(s.get("source", "")), format_number(s.get("line")), str(s.get("reason", ""))])
                elif isinstance(s, (list, tuple)) and len(s) == 3:
                    srows.append([str(s[0]), format_number(s[1]), str(s[2])])
                else:
                    srows.append(["", "", str(s)])
            tables.append({"title": f"bad lines skipped{where}", "headers": ["file", "line", "reason"], "rows": srows})
        else:
            sentences.append(f"No bad line was skipped{where}.")
    return {"sentences": sentences, "tables": tables}


def _with_coverage(load: dict[str, Any] | None, coverage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Add the missing and absent neighbours per model and generator (``summary.json`` → ``coverage``)."""
    judges = (coverage or {}).get("judges") or {}
    if not judges:
        return load
    load = load or {"sentences": [], "tables": []}
    for judge, cov in judges.items():
        models = cov.get("models") or {}
        gens = sorted({g for rec in models.values() for g in (rec.get("neighbors") or {})})
        rows = [[str(m), format_number(rec.get("items")), format_number(rec.get("missing")),
                 *[" / ".join(format_number((rec["neighbors"].get(g) or {}).get(k)) for k in ("observed", "missing", "absent"))
                   for g in gens]]
                for m, rec in models.items()]
        if rows:
            load["tables"].append({"title": f"neighbours per model, judge {judge} (observed / missing / absent)",
                                   "headers": ["model", "items", "missing", *gens], "rows": rows})
        for m, why in (cov.get("not_certified") or {}).items():
            load["sentences"].append(f"Model {m} (judge {judge}) is not certified: {why}.")
        load["sentences"] += [str(n) for n in cov.get("notes") or [] if "different item sets" in str(n)]
    return load


_LEADERBOARD_SCORES = (
    "Leaderboard view: f(D) holds one mean score per model, so both panels count models, not items. Top: the "
    "models' original mean scores (share of models per bin); bottom, zoomed: the shrunk means before noise and "
    "the certified means."
)


def _radius_note(certs: Sequence[Mapping[str, Any]], deltas: Sequence[float] = (0.01, 0.05, 0.1)) -> str:
    """Why a moment-bound certificate's bias radius sits at the score range: Markov's √(U2/δ), capped at A.

    Read from the certificate itself (its knowledge records with their notes, and its range bound A), so the
    sentence states the numbers the figure shows.
    """
    for cert in certs:
        gens = (cert.get("knowledge") or {}).get("generators") or {}
        records = [r for recs in gens.values() for r in (recs or []) if isinstance(r, Mapping)]
        if not records or any(r.get("kind") != "moments" or _num(r.get("U2")) is None for r in records):
            continue
        u2 = max(float(r["U2"]) for r in records)
        caps = [_num(r.get("A")) for r in records] + [_num((cert.get("range") or {}).get("A"))]
        caps = [a for a in caps if a is not None]
        notes = "; ".join(dict.fromkeys(str(r["note"]) for r in records if r.get("note")))
        raw = [(d, math.sqrt(u2 / d)) for d in deltas]
        text = (f"This certificate knows the sensitivity only through a moment bound, U2 = {format_number(u2)} on "
                f"E‖f(D) − f(D′)‖²{f' ({notes})' if notes else ''}; Markov's inequality gives the radius √(U2/δ) = "
                + ", ".join(f"{format_number(r)} at δ = {format_number(d)}" for d, r in raw))
        if caps:
            a_cap = min(caps)
            text += f", capped at the largest move a neighbour can cause, A = {format_number(a_cap)}"
            if all(r >= a_cap for _, r in raw):
                text += (f". At every δ shown the cap binds, so every radius is {format_number(a_cap)}: this knowledge "
                         "bounds the judge's bias no better than the score range does")
        if cert.get("method") == "paper":
            text += (". A route that reads every recorded verdict (the tight calibration) can give smaller radii "
                     "from the same judgments")
        return text + "."
    return ""


def _caption(name: str, certs: Sequence[Mapping[str, Any]] = (), per_model: bool = False) -> str:
    """The caption of a plot, from its kind and the folder's certificates.

    ``<plot>-<judge>`` names (one plot per judge) get the judge appended; ``<plot>_p<k>`` names (page k of a
    long plot, see :func:`biasbound.report.plots.pages`) are marked as continued.
    """
    import re

    page = re.search(r"_p(\d+)$", name)
    base = name[: page.start()] if page else name
    judge = ""
    if base not in _PLOT_CAPTIONS:
        for key in _PLOT_CAPTIONS:
            if base.startswith(key + "-"):
                base, judge = key, base[len(key) + 1:]
                break
    if base == "score_distribution" and any(c.get("view") == "leaderboard" for c in certs):
        caption = _LEADERBOARD_SCORES
    elif base == "bias_radius":
        rows = ("one row per model, from that model's certificate" if per_model else
                "one row per judge, from its certificate")
        caption = " ".join(x for x in (_PLOT_CAPTIONS[base].format(rows=rows), _radius_note(certs)) if x)
    else:
        caption = _PLOT_CAPTIONS.get(base, "")
    if not caption:
        return f"Plot {name}."
    if page:  # the full caption is under page 1; a continued page repeats its first clause only
        caption = (f"(continued, page {page.group(1)}; full caption under page 1) "
                   f"{caption.split(': ')[0].split('. ')[0].rstrip('.')}.")
    return caption + (f" Judge: {judge}." if judge else "")


def _printed_width_in(data: bytes) -> float | None:
    """A PNG's width in inches from its pixel width (IHDR) and resolution (pHYs, pixels per metre); None without pHYs.

    The report prints each figure at this width (capped at the page), so a 7 pt label prints at 7 pt.
    """
    import struct

    width_px = struct.unpack(">I", data[16:20])[0] if len(data) >= 24 else 0
    pos = 8
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"pHYs" and length >= 9:
            ppm_x, _, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
            if unit != 1 or ppm_x <= 0 or not width_px:
                return None
            dpi = ppm_x * 0.0254  # pHYs stores whole pixels per metre: 150 dpi is 5906, i.e. 150.01 dpi
            return width_px / (round(dpi) if abs(dpi - round(dpi)) < 0.05 else dpi)
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + length
    return None


def _embed_plot(name: str, path: Any, certs: Sequence[Mapping[str, Any]] = (), per_model: bool = False) -> dict[str, str]:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"The 'plots' parameter of {_WHERE} must map {name!r} to a file path. Got {type(path).__name__} instead.")
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"The 'plots' parameter of {_WHERE} must name readable PNG files. Got {str(p)!r} for {name!r} ({exc.strerror}).") from exc
    if not data.startswith(PNG_SIGNATURE):
        raise InputError(f"The 'plots' parameter of {_WHERE} must name PNG files. Got {str(p)!r} for {name!r}, which is not a PNG.")
    width = _printed_width_in(data)
    return {
        "name": name,
        "caption": _caption(name, certs, per_model),
        "uri": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
        "width": f"{width:.3f}in" if width else "",
    }


def _card_view(card: Mapping[str, Any] | None, plots: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge card section: per judge its rows and rank intervals, the judges side by side, the pair plots."""
    if not card or not card.get("judges"):
        return None
    from biasbound.card import card_rows

    judges = []
    for name, c in card["judges"].items():
        rk = c.get("ranks") or {}
        ranks = [(m, f"{lo}–{hi}" if lo != hi else str(lo)) for m, (lo, hi) in (rk.get("rank_interval") or {}).items()]
        reversed_rows = [(g, hi_, lo_) for g, pairs in (rk.get("reversed_by") or {}).items() for hi_, lo_ in pairs]
        counts = rk.get("reversed_count") or {}
        capped = {g: n for g, n in counts.items() if n > len((rk.get("reversed_by") or {}).get(g) or [])}
        reversed_note = ("Every model pair whose order a bias alone reverses: the neighbour applied to every item at once, "
                         "exact from the data (pairs it only ties are counted in the card above).")
        if capped:
            reversed_note = ("The model pairs whose order a bias alone reverses (the neighbour applied to every item at once, "
                             f"exact from the data), at most {rk.get('pairs_listed')} per neighbour: those with the largest "
                             "original margins, in leaderboard order — " + "; ".join(
                                 f"{g}: {len((rk.get('reversed_by') or {}).get(g) or [])} of {n} shown" for g, n in capped.items())
                             + " (summary.json counts every pair).")
        judges.append({"name": name, "rows": card_rows(c), "reversed": reversed_rows, "reversed_note": reversed_note,
                       "head": f"{c['models']} model(s) × {c['items']} item(s), {c['judgments']} judgments, "
                               f"{c['missing']} missing; 95% intervals",
                       "ranks": ranks if len(ranks) > 1 else [],
                       "rank_note": (f"95% percentile interval of each model's rank over {rk.get('rounds')} item-bootstrap "
                                     f"rounds (seed {rk.get('seed')}), models best first.") if rk else ""})
    from biasbound.card import PANEL_COLUMNS

    panel = card.get("panel") or []
    cols = [c for c in PANEL_COLUMNS if any(r.get(c[0]) is not None for r in panel)]
    panel_rows = [[r["judge"]] + ["—" if r.get(k) is None else f"{100 * r[k]:.1f}%" if pct else format_number(r[k])
                                  for k, _, pct in cols] for r in panel]
    return {"judges": judges, "panel_headers": ["judge"] + [h for _, h, _ in cols],
            "panel_rows": panel_rows if len(panel_rows) > 1 else [],
            "plots": [_embed_plot(str(k), v) for k, v in plots.items() if str(k).startswith("rank_pairs")]}


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    """The report's template environment, built once per process (it compiles and caches the template)."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("biasbound.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


# ----------------------------------------------------------------------------- public


def write_report(
    out_dir: str | os.PathLike[str],
    *,
    title: str,
    summary: Mapping[str, Any],
    leaderboard: pd.DataFrame,
    certificates: Sequence[Mapping[str, Any]],
    retention: Mapping[str, Any] | None,
    plots: Mapping[str, str | os.PathLike[str]],
    load_report: Mapping[str, Any] | None,
    audit: Mapping[str, Any] | None,
    model_certificates: Sequence[Mapping[str, Any]] | None = None,
    comparison: Mapping[str, Any] | None = None,
    baseline: str | None = None,
    coverage: Mapping[str, Any] | None = None,
    judge_card: Mapping[str, Any] | None = None,
    human: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``report.html``: what was certified, how it was checked and what it cost, ready to print.

    Parameters
    ----------
    out_dir : str or os.PathLike
        Folder to write ``report.html`` into (created if needed).
    title : str
        Report title (escaped).
    summary : Mapping[str, Any]
        The run's settings shown first, in the given order (label → value).
    leaderboard : pandas.DataFrame
        Rows of ``leaderboard.csv`` (needs ``model``; ``judge``, ``is_baseline``, ``n_items``,
        ``n_missing``, ``original``/``certified`` with ``_lo``/``_hi``, ``original_both_orders``,
        ``rank_original``, ``rank_certified``, ``win_rate_pct`` and ``bt_elo`` with their CIs are
        shown when present). Every row is shown; nothing scrolls or collapses.
    certificates : Sequence[Mapping[str, Any]]
        Judge-level certificate dicts (``Certificate.to_dict()``-like; objects with ``to_dict()`` are
        accepted). May be empty when no certificate could be issued; the report says so. Each gets
        its mechanism as a formula with its numbers, and one section per certificate figure found
        in the dict (see ``_CERT_FIGURES``).
    retention : Mapping[str, Any] or None
        Retention metrics: one dict with ``spearman``, ``kendall_tau_b``, ``pearson``,
        pair-keep probabilities (``adjacent_pairs`` names the pairs), ``alpha``,
        ``expected_distortion``; or such dicts nested under judge (and setting) names.
    plots : Mapping[str, str or os.PathLike]
        Plot name (``score_distribution``, ``ranking``, ``sensitivity``, ``judges``, …) → PNG path;
        each file is embedded as a base64 data URI.
    load_report : Mapping[str, Any] or None
        The loader's counts of missing and failed judgments.
    audit : Mapping[str, Any] or None
        A run-level audit: one ``AuditResult.to_dict()`` (has ``verdict``), or a mapping of
        labelled audits (e.g. ``pooled``) and plain facts (e.g. per-model verdict counts).
    model_certificates : Sequence[Mapping[str, Any]], optional
        Per-model certificate dicts; one table row each (batch, sensitivity, audit verdict).
    comparison : Mapping[str, Any], optional
        A side-by-side comparison of settings (the demo's paper vs tight):
        ``{"title": str, "columns": [str, ...], "rows": [(label, [value, ...]), ...], "note": str}``.
    baseline : str, optional
        The baseline model of pairwise data (named in the text; rows are marked from ``is_baseline``).
    human : Mapping[str, Any], optional
        The human-labels report (``human.json``: agreement, anchored scores, the anchored release), shown after the
        judge card.
    judge_card : Mapping[str, Any], optional
        The judge card (:func:`biasbound.card.judge_card`), shown first; plots named ``rank_pairs*`` are
        shown in its section.

    Returns
    -------
    pathlib.Path
        The path of ``report.html``.

    Raises
    ------
    InputError
        If ``leaderboard`` lacks a ``model`` column or a plot file is missing or not a PNG.
    TypeError
        If an argument has the wrong type.
    """
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"The 'out_dir' parameter of {_WHERE} must be a str or os.PathLike. Got {type(out_dir).__name__} instead.")
    if not isinstance(title, str):
        raise TypeError(f"The 'title' parameter of {_WHERE} must be a str. Got {type(title).__name__} instead.")
    summary = _as_mapping(summary, "summary")
    if not isinstance(leaderboard, pd.DataFrame):
        raise TypeError(f"The 'leaderboard' parameter of {_WHERE} must be a pandas DataFrame. Got {type(leaderboard).__name__} instead.")
    if "model" not in leaderboard.columns:
        raise InputError(f"The 'leaderboard' parameter of {_WHERE} must have a 'model' column. Got columns {list(leaderboard.columns)} instead.")
    for name, seq in (("certificates", certificates), ("model_certificates", model_certificates)):
        if seq is None and name == "model_certificates":
            continue
        if isinstance(seq, (str, bytes, Mapping)) or not isinstance(seq, Sequence):
            raise TypeError(f"The {name!r} parameter of {_WHERE} must be a sequence of mappings. Got {type(seq).__name__} instead.")
    certs = [_as_mapping(c, "certificates") for c in certificates]
    model_certs = [_as_mapping(c, "model_certificates") for c in (model_certificates or [])]
    retention = None if retention is None else _as_mapping(retention, "retention")
    load_report = None if load_report is None else _as_mapping(load_report, "load_report")
    audit = None if audit is None else _as_mapping(audit, "audit")
    comparison = None if comparison is None else _as_mapping(comparison, "comparison")
    if baseline is not None and not isinstance(baseline, str):
        raise TypeError(f"The 'baseline' parameter of {_WHERE} must be a str or None. Got {type(baseline).__name__} instead.")
    if not isinstance(plots, Mapping):
        raise TypeError(f"The 'plots' parameter of {_WHERE} must be a mapping of name to path. Got {type(plots).__name__} instead.")

    guarantees: dict[str, int] = {}
    for c in certs:
        g = c.get("guarantee")
        if g:
            guarantees[str(g)] = guarantees.get(str(g), 0) + 1
    run_audits, audit_facts = _audit_blocks(audit, _scope_tau(certs))
    cert_audits = []
    for i, c in enumerate(certs):
        a = c.get("audit")
        if isinstance(a, Mapping) and "verdict" in a:
            cert_audits.append(_audit_block(a, _certificate_name(c, i), c.get("tau")))
    blocks = run_audits or cert_audits
    rechecks = bool(blocks) and all(b["recheck"] for b in blocks)
    held_out = _scope_value(certs, "neighbors_audit")
    lb_view = _leaderboard_view(leaderboard)
    baseline = baseline or lb_view["baseline"]
    context = {
        "title": title,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": [(str(k), _inline(v)) for k, v in summary.items()],
        "guarantees": list(guarantees.items()),
        "mechanisms": [_mechanism(c, i) for i, c in enumerate(certs)],
        "figures": [(_certificate_name(c, i), _certificate_figures(c)) for i, c in enumerate(certs)],
        "meaning": _score_meaning(leaderboard, baseline, load_report),
        "audit_title": "Audit: the certificate's bound rechecked" if rechecks else "Audit on held-out neighbours",
        "audit_intro": (f"No neighbour was held out of the calibration (neighbours held out for the audit: "
                        f"{format_number(held_out if held_out is not None else 0)}), so the audit recomputes the "
                        "certificate's bound from the recorded neighbours it rests on." if rechecks else
                        "Neighbours held out of the calibration are used to check the certificate."),
        "model_audit_text": ("the recheck of its bound on its recorded neighbours (none held out)" if rechecks else
                             "the audit on its held-out neighbours"),
        "run_audits": run_audits,
        "audit_facts": audit_facts,
        "cert_audits": cert_audits,
        "certificates": certs,
        "model_headers": _MODEL_HEADERS,
        "model_rows": _model_rows(model_certs),
        "retention_headers": [lab for _, lab in _RETENTION_COLUMNS],
        "retention_rows": _retention_rows(retention),
        "comparison": comparison,
        "leaderboard": lb_view,
        "load": _with_coverage(_load_view(load_report), coverage),
        "plots": [_embed_plot(str(k), v, certs, len(certs) == 1 and len(model_certs) > 1)
                  for k, v in plots.items() if not str(k).startswith("rank_pairs")],
        "card": _card_view(judge_card, plots),
        "human": human_view(human),
    }
    html = _environment().get_template("report.html.jinja").render(**context)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text(html, encoding="utf-8")
    return path

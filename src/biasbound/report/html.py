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

__all__ = ["PNG_SIGNATURE", "format_number", "write_report"]

PNG_SIGNATURE: bytes = b"\x89PNG\r\n\x1a\n"
"""The eight bytes every PNG file starts with."""

_WHERE = "write_report"

_PLOT_CAPTIONS: dict[str, str] = {
    "score_kde": "Per-item judge scores before and after the bias-bounded transformation (Gaussian KDE).",
    "ranking": (
        "Leaderboard before (left) and after (right, on its own scale) the transformation: mean per-item score "
        "with its 95% bootstrap CI; right margin: rank before → after."
    ),
    "sensitivity": "Measured RMS sensitivity Δ* per neighbour generator, with its upper confidence bound and the number of neighbours m.",
    "judges": "Rank correlation between original and certified model scores, per judge and setting.",
    "tradeoff": "Shrinkage α and noise σ as the tolerance τ varies.",
}

_VERDICT_TEXT: dict[str, str] = {
    "holds": "The audit supports the certificate: the upper confidence bound on the failure probability is at most δ.",
    "violated": "The audit contradicts the certificate: even the lower confidence bound on the failure probability exceeds δ.",
    "inconclusive": "The audit is inconclusive: the confidence interval on the failure probability contains δ.",
}

# (key, label) in display order; keys not listed are shown after these as they come.
_CERT_FIELDS: tuple[tuple[str, str], ...] = (
    ("scope", "scope"),
    ("view", "view"),
    ("tau", "τ (tolerance)"),
    ("delta", "δ (failure probability)"),
    ("delta_B", "δ_B (noise share of δ)"),
    ("delta_Delta", "δ_Δ (sensitivity share of δ)"),
    ("tau_split", "τ split (sensitivity share of τ)"),
    ("beta", "β (confidence of the sensitivity bound)"),
    ("dim", "d (items)"),
    ("method", "calibration method"),
    ("bound_used", "bound used"),
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


def _tree(value: Any, depth: int = 0) -> dict[str, Any]:
    """Turn nested data into a display tree the template's ``render`` macro draws."""
    if depth < 4 and (isinstance(value, Mapping) or (dataclasses.is_dataclass(value) and not isinstance(value, type))):
        items = value.items() if isinstance(value, Mapping) else dataclasses.asdict(value).items()
        return {"kind": "map", "items": [(str(k), _tree(v, depth + 1)) for k, v in items]}
    if isinstance(value, (list, tuple, np.ndarray)) and depth < 4:
        seq = list(value.tolist() if isinstance(value, np.ndarray) else value)
        if seq and all(isinstance(x, Mapping) for x in seq):
            cols = list(dict.fromkeys(k for x in seq for k in x))
            rows = [[format_number(x.get(c)) if not isinstance(x.get(c), (Mapping, list, tuple)) else str(x.get(c)) for c in cols] for x in seq]
            return {"kind": "records", "columns": [str(c) for c in cols], "rows": rows}
        return {"kind": "scalar", "text": ", ".join(format_number(x) for x in seq) if seq else "(none)"}
    return {"kind": "scalar", "text": format_number(value)}


def _inline(value: Any) -> str:
    """One-line text for a nested value (``k=v, …``)."""
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_inline(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_inline(v) for v in value)
    return format_number(value)


# ----------------------------------------------------------------------------- sections


def _audit_block(audit: Mapping[str, Any], label: str) -> dict[str, Any]:
    verdict = str(audit.get("verdict", "unknown"))
    rows = [(lab, format_number(audit[key])) for key, lab in _AUDIT_FIELDS if key in audit]
    known = {k for k, _ in _AUDIT_FIELDS} | {"verdict"}
    rows += [(str(k), _inline(v)) for k, v in audit.items() if k not in known]
    return {
        "label": label,
        "verdict": verdict,
        "css": verdict if verdict in _VERDICT_TEXT else "unknown",
        "text": _VERDICT_TEXT.get(verdict, "The audit returned no recognised verdict."),
        "rows": rows,
    }


def _audit_blocks(audit: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """Split the run-level audit into verdict blocks and plain facts (e.g. per-model verdict counts)."""
    if audit is None:
        return [], []
    if "verdict" in audit:
        return [_audit_block(audit, "audit")], []
    blocks, facts = [], []
    for key, value in audit.items():
        if isinstance(value, Mapping) and "verdict" in value:
            blocks.append(_audit_block(value, str(key)))
        else:
            facts.append((str(key), _inline(value)))
    return blocks, facts


def _certificate_name(cert: Mapping[str, Any], index: int) -> str:
    """A short name from the scope's judge and model (the full scope is shown in the table)."""
    scope = cert.get("scope")
    parts = []
    if isinstance(scope, Mapping):
        for key in ("judge", "model"):
            value = scope.get(key)
            if value is not None and not isinstance(value, (Mapping, list, tuple)) and str(value) not in ("", "*"):
                parts.append(f"{key} {value}")
    return ", ".join(parts) if parts else f"certificate {index + 1}"


def _certificate_view(cert: Mapping[str, Any], index: int) -> dict[str, Any]:
    rows: list[tuple[str, dict[str, Any]]] = []
    for key, label in _CERT_FIELDS:
        if key not in cert:
            continue
        value = cert[key]
        if key == "center" and isinstance(value, Mapping):
            node = {"kind": "scalar", "text": f"{value.get('kind', '?')} ({format_number(value.get('value'))})"}
        else:
            node = _tree(value)
        rows.append((label, node))
    known = {k for k, _ in _CERT_FIELDS} | _CERT_SKIP
    rows += [(str(k), _tree(v)) for k, v in cert.items() if k not in known]
    generators = []
    gens = cert.get("generators") or {}
    if isinstance(gens, Mapping):
        for name, g in gens.items():
            g = g if isinstance(g, Mapping) else {}
            generators.append(
                {
                    "name": str(name),
                    "delta_star": format_number(g.get("delta_star")),
                    "ucb": format_number(g.get("ucb")),
                    "m": format_number(g.get("m")),
                }
            )
    name = _certificate_name(cert, index)
    audit = cert.get("audit")
    return {
        "name": name,
        "rows": rows,
        "generators": generators,
        "audit": _audit_block(audit, name) if isinstance(audit, Mapping) and "verdict" in audit else None,
        "summary": [
            name,
            format_number(cert.get("tau")),
            format_number(cert.get("delta")),
            str(cert.get("method", "—")),
            str(cert.get("bound_used", "—")),
            format_number(cert.get("alpha")),
            format_number(cert.get("sigma")),
            format_number(cert.get("sensitivity")),
            str(audit.get("verdict", "—")) if isinstance(audit, Mapping) else "—",
        ],
    }


def _summary_cell(value: Any) -> str:
    """One table cell for a metric that may be a scalar, a list (per pair) or a dict (per model)."""
    if isinstance(value, Mapping):
        parts = []
        if "mean" in value:
            parts.append(f"mean {format_number(value['mean'])}")
        if "total" in value:
            parts.append(f"total {format_number(value['total'])}")
        if not parts:
            parts = [f"{k}={format_number(v)}" for k, v in value.items() if not isinstance(v, (Mapping, list, tuple, np.ndarray))]
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
            known = {k for k, _ in _RETENTION_COLUMNS} | set(_PAIR_KEEP_KEYS)
            extra = ", ".join(
                f"{k}={_inline(v)}" for k, v in node.items() if k not in known and not isinstance(v, (list, tuple, np.ndarray, Mapping))
            )
            rows.append({"label": " / ".join(path) if path else "all models", "cells": cells, "extra": extra})
            return
        for key, value in node.items():
            if isinstance(value, Mapping):
                walk(value, [*path, str(key)])

    if retention is not None:
        walk(retention, [])
    return rows


def _leaderboard_view(leaderboard: pd.DataFrame) -> dict[str, Any]:
    cols = set(leaderboard.columns)
    frame = leaderboard
    sort_cols = [c for c in ("judge", "rank_original") if c in cols]
    if sort_cols:
        frame = frame.sort_values(sort_cols, kind="stable", na_position="last")
    headers: list[str] = []
    if "judge" in cols:
        headers.append("judge")
    headers.append("model")
    plain = [("n_items", "items"), ("n_missing", "missing")]
    headers += [lab for key, lab in plain if key in cols]
    pairs = [
        ("original", "original (95% CI)"),
        ("certified", "certified (95% CI)"),
    ]
    headers += [lab for key, lab in pairs if key in cols]
    has_ranks = {"rank_original", "rank_certified"} <= cols
    if has_ranks:
        headers += ["rank before", "rank after", "change"]
    extras = [("winrate", "win rate vs baseline (95% CI)"), ("bt", "Bradley–Terry (95% CI)")]
    headers += [lab for key, lab in extras if key in cols]

    def cell(row: Mapping[str, Any], key: str) -> str:
        text = format_number(row.get(key))
        ci = _ci(row.get(f"{key}_lo"), row.get(f"{key}_hi")) if f"{key}_lo" in cols else ""
        return f"{text} {ci}".strip()

    rows = []
    for rec in frame.to_dict(orient="records"):
        cells: list[str] = []
        if "judge" in cols:
            cells.append(str(rec["judge"]))
        cells.append(str(rec["model"]))
        cells += [format_number(rec.get(key)) for key, _ in plain if key in cols]
        cells += [cell(rec, key) for key, _ in pairs if key in cols]
        move = "same"
        if has_ranks:
            r0, r1 = rec.get("rank_original"), rec.get("rank_certified")
            cells += [format_number(r0), format_number(r1)]
            try:
                d = float(r0) - float(r1)
            except (TypeError, ValueError):
                d = math.nan
            if math.isnan(d):
                cells.append("—")
            elif d == 0:
                cells.append("=")
            else:
                move = "up" if d > 0 else "down"
                cells.append(f"{'▲' if d > 0 else '▼'} {format_number(abs(d))}")
        cells += [cell(rec, key) for key, _ in extras if key in cols]
        rows.append({"cells": cells, "move": move})
    n_missing = None
    if "n_missing" in cols:
        n_missing = int(pd.to_numeric(leaderboard["n_missing"], errors="coerce").fillna(0).sum())
    return {"headers": headers, "rows": rows, "n_missing": n_missing, "change_col": headers.index("change") if has_ranks else -1}


def _caption(name: str) -> str:
    """The caption of a known plot; ``<plot>-<judge>`` names (one plot per judge) get the judge appended."""
    if name in _PLOT_CAPTIONS:
        return _PLOT_CAPTIONS[name]
    for key, caption in _PLOT_CAPTIONS.items():
        if name.startswith(key + "-"):
            return f"{caption} Judge: {name[len(key) + 1:]}."
    return name


def _embed_plot(name: str, path: Any) -> dict[str, str]:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"The 'plots' parameter of {_WHERE} must map {name!r} to a file path. Got {type(path).__name__} instead.")
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"The 'plots' parameter of {_WHERE} must name readable PNG files. Got {str(p)!r} for {name!r} ({exc.strerror}).") from exc
    if not data.startswith(PNG_SIGNATURE):
        raise InputError(f"The 'plots' parameter of {_WHERE} must name PNG files. Got {str(p)!r} for {name!r}, which is not a PNG.")
    return {
        "name": name,
        "caption": _caption(name),
        "uri": "data:image/png;base64," + base64.b64encode(data).decode("ascii"),
    }


def _environment() -> jinja2.Environment:
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
) -> Path:
    """Write ``report.html``: what was certified, how it was checked and what it cost.

    Parameters
    ----------
    out_dir : str or os.PathLike
        Folder to write ``report.html`` into (created if needed).
    title : str
        Report title (escaped).
    summary : Mapping[str, Any]
        Headline facts shown first, in the given order (e.g. judges, models, items, τ, δ).
    leaderboard : pandas.DataFrame
        Rows of ``leaderboard.csv`` (needs ``model``; ``judge``, ``n_items``, ``n_missing``,
        ``original``/``certified`` with ``_lo``/``_hi``, ``rank_original``, ``rank_certified``,
        ``winrate``, ``bt`` and their CIs are shown when present).
    certificates : Sequence[Mapping[str, Any]]
        Certificate dicts (``Certificate.to_dict()``-like; objects with ``to_dict()`` are
        accepted). May be empty when no certificate could be issued; the report says so.
    retention : Mapping[str, Any] or None
        Retention metrics: one dict with ``spearman``, ``kendall_tau_b``, ``pearson``,
        pair-keep probabilities, ``alpha``, ``expected_distortion``; or such dicts nested
        under judge (and setting) names.
    plots : Mapping[str, str or os.PathLike]
        Plot name (``score_kde``, ``ranking``, ``sensitivity``, ``judges``, …) → PNG path;
        each file is embedded as a base64 data URI.
    load_report : Mapping[str, Any] or None
        The loader's counts of missing and failed judgments, shown as nested tables.
    audit : Mapping[str, Any] or None
        A run-level audit: one ``AuditResult.to_dict()`` (has ``verdict``), or a mapping of
        labelled audits (e.g. ``pooled``) and plain facts (e.g. per-model verdict counts).

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
    if isinstance(certificates, (str, bytes, Mapping)) or not isinstance(certificates, Sequence):
        raise TypeError(f"The 'certificates' parameter of {_WHERE} must be a sequence of mappings. Got {type(certificates).__name__} instead.")
    certs = [_as_mapping(c, "certificates") for c in certificates]
    retention = None if retention is None else _as_mapping(retention, "retention")
    load_report = None if load_report is None else _as_mapping(load_report, "load_report")
    audit = None if audit is None else _as_mapping(audit, "audit")
    if not isinstance(plots, Mapping):
        raise TypeError(f"The 'plots' parameter of {_WHERE} must be a mapping of name to path. Got {type(plots).__name__} instead.")

    guarantees: dict[str, int] = {}
    for c in certs:
        g = c.get("guarantee")
        if g:
            guarantees[str(g)] = guarantees.get(str(g), 0) + 1
    cert_views = [_certificate_view(c, i) for i, c in enumerate(certs)]
    run_audits, audit_facts = _audit_blocks(audit)
    context = {
        "title": title,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "summary": [(str(k), _inline(v)) for k, v in summary.items()],
        "guarantees": list(guarantees.items()),
        "run_audits": run_audits,
        "audit_facts": audit_facts,
        "cert_audits": [v["audit"] for v in cert_views if v["audit"] is not None],
        "certificates": cert_views,
        "cert_summary_headers": ["scope", "τ", "δ", "method", "bound", "α", "σ", "sensitivity", "audit"],
        "retention_headers": [lab for _, lab in _RETENTION_COLUMNS],
        "retention_rows": _retention_rows(retention),
        "leaderboard": _leaderboard_view(leaderboard),
        "load_report": None if load_report is None else _tree(load_report),
        "plots": [_embed_plot(str(k), v) for k, v in plots.items()],
    }
    html = _environment().get_template("report.html.jinja").render(**context)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.html"
    path.write_text(html, encoding="utf-8")
    return path

"""`biasbound audit CERTIFICATE --neighbors FILE...`: re-audit a certificate on new neighbour data.

The certificate's judge (and model, for a per-model certificate) is looked up in the new
judgment files; the observed neighbours of the certificate's generators (swap, variant:NAME,
rerun) give fresh distances ``||f(D) − f(D')||`` that :func:`biasbound.audit.audit_certificate`
checks against the certified (τ, δ), σ and α.

Exit codes (the README's table): 0 = the audit does not contradict the certificate ("holds":
its confidence bound is <= δ; "not contradictable": the certificate rests on an almost-sure bound
that no neighbour within the score range can break), 1 = it contradicts it ("violated"),
3 = inconclusive (the confidence interval contains δ; more neighbours needed), 2 = bad input
(printed as one sentence by the CLI).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import DataFormatError, InputError

__all__ = ["EXIT_CODES", "audit_on_files", "read_certificate", "register"]

#: Exit code per audit verdict.
EXIT_CODES: dict[str, int] = {"holds": 0, "not contradictable": 0, "exact": 0, "violated": 1, "inconclusive": 3}


def read_certificate(path: str | Path, *, model: str | None = None, judge: str | None = None) -> dict[str, Any]:
    """Read one certificate dict from ``certificate*.json`` or pick one from ``certificates.json``.

    Parameters
    ----------
    path:
        A certificate JSON file, or the list of per-model certificates (``certificates.json``).
    model, judge:
        Select the per-model certificate from a list.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"The 'CERTIFICATE' argument of audit names {str(p)!r}, which is not a file.")
    from biasbound.data._io import read_text

    try:
        data = json.loads(read_text(p))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"not a JSON certificate ({exc.msg}).", path=str(p), line=exc.lineno) from None
    except RecursionError:
        raise DataFormatError("not a JSON certificate (nested too deeply to read).", path=str(p)) from None
    if isinstance(data, list):
        certs = [c for c in data if isinstance(c, Mapping) and "tau" in c and isinstance(c.get("scope", {}), Mapping)]
        if not certs:
            raise DataFormatError("not a list of biasbound certificates (no element has a 'tau' field).", path=str(p))
        pick = [c for c in certs
                if (model is None or c.get("scope", {}).get("model") == model)
                and (judge is None or c.get("scope", {}).get("judge") == judge)]
        if len(pick) != 1:
            held = sorted({f"{c.get('scope', {}).get('model')!s} (judge {c.get('scope', {}).get('judge')!s})"
                           for c in certs})
            shown = ", ".join(held[:6]) + (", …" if len(held) > 6 else "")
            asked = " ".join(f"--{k} {v!r}" for k, v in (("model", model), ("judge", judge)) if v is not None)
            raise InputError(
                f"The '--model' option of audit must select exactly one certificate of {str(p)!r}; "
                + (f"{asked} matches {len(pick)}" if asked else f"it holds {len(certs)}, give --model (and --judge)")
                + f" — it certifies {shown}."
            )
        data = pick[0]
    if not isinstance(data, Mapping) or "tau" not in data or "sigma" not in data:
        raise DataFormatError("not a biasbound certificate (no 'tau'/'sigma' fields).", path=str(p))
    if model is not None or judge is not None:  # one certificate: --model/--judge must name what it certifies
        scope = data.get("scope") if isinstance(data.get("scope"), Mapping) else {}
        models = {str(m) for m in (scope.get("models") or {})} | ({str(scope["model"])} if scope.get("model") not in
                                                                  (None, "*") else set())
        for flag, want, have in (("--model", model, models), ("--judge", judge, {str(scope.get("judge"))})):
            if want is not None and have and want not in have:
                raise InputError(f"The '{flag}' option of audit names {want!r}, but {str(p)!r} certifies "
                                 f"{', '.join(repr(h) for h in sorted(have)[:6])}{', …' if len(have) > 6 else ''}.")
    from biasbound.certificate import SCHEMA_VERSION

    version = data.get("schema_version", 1)
    if isinstance(version, bool) or version not in (1, SCHEMA_VERSION):
        raise DataFormatError(f"the certificate's 'schema_version' is {version!r}; this biasbound reads versions 1 and "
                              f"{SCHEMA_VERSION} (upgrade biasbound, or re-create the certificate with biasbound certify).",
                              path=str(p))
    if data.get("view", "model") not in ("model", "leaderboard"):
        raise DataFormatError(f"the certificate's 'view' must be 'model' or 'leaderboard'; got {data.get('view')!r}. "
                              "Re-create the certificate with biasbound certify rather than editing it.", path=str(p))
    _check_certificate_fields(data, p)
    return dict(data)


#: The certificate fields audit reads, with the numbers they must hold (a hand-edited file is checked here,
#: so that a text tau is one sentence naming the file and the field, not an error deep inside the audit).
_CERT_FIELDS: dict[str, tuple[str, float | None, float | None, bool]] = {
    "tau": ("a number > 0", 0.0, None, True),
    "delta": ("a number in (0, 1)", 0.0, 1.0, True),
    "sigma": ("a number >= 0", 0.0, None, False),
    "alpha": ("a number in (0, 1]", 0.0, 1.0, True),
}


def _check_certificate_fields(data: Mapping[str, Any], path: Path) -> None:
    for name, (what, low, high, low_open) in _CERT_FIELDS.items():
        v = data.get(name)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
        if ok and low is not None:
            ok = v > low if low_open else v >= low
        if ok and high is not None:
            ok = v < high if name == "delta" else v <= high
        if not ok:
            raise DataFormatError(f"the certificate's {name!r} must be {what}; got {v!r}. Re-create the certificate "
                                  "with biasbound certify rather than editing it.", path=str(path))
    dim = data.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise DataFormatError(f"the certificate's 'dim' must be an int >= 1; got {dim!r}.", path=str(path))
    for name in ("scope", "center"):
        if name in data and data[name] is not None and not isinstance(data[name], Mapping) and not (
                name == "center" and isinstance(data[name], str)):
            raise DataFormatError(f"the certificate's {name!r} must be a JSON object; got {data[name]!r}.",
                                  path=str(path))


def _distances(cert: Mapping[str, Any], frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    import numpy as np
    import pandas as pd

    from biasbound.neighbors.observed import observed_neighbors

    scope = cert.get("scope") or {}
    judge = scope.get("judge")
    if judge is not None:
        frame = frame[frame["judge"].astype(str) == str(judge)]
        if frame.empty:
            raise InputError(f"The '--neighbors' files of audit hold no judgment by the certificate's judge {judge!r}.")
    gens = scope.get("generators_in_combination") or list((cert.get("generators") or {}).keys())
    if not gens:
        raise InputError("The 'CERTIFICATE' argument of audit records no neighbour generator to audit.")
    parts, used = [], []
    for g in gens:
        present = (
            (g == "swap" and frame["game"].eq(2).any())
            or (g == "rerun" and frame["rerun"].gt(0).any())
            or (g.startswith("variant:") and frame["variant"].eq(g.split(":", 1)[1]).any())
        )
        if present:
            parts.append(observed_neighbors(frame, g))
            used.append(g)
    if not parts:
        raise InputError(
            f"The '--neighbors' files of audit hold no neighbours of the certificate's generators ({', '.join(gens)})."
        )
    nb = pd.concat(parts, ignore_index=True)
    model = scope.get("model")
    if model not in (None, "*"):
        nb = nb[nb["model"].astype(str) == str(model)]
    if len(nb) < 2:
        raise InputError(f"The '--neighbors' files of audit hold {len(nb)} neighbour(s) for the certificate's scope; at least 2 are needed.")
    diff = np.abs(nb["difference"].to_numpy(dtype=float))
    dim = int(cert["dim"])
    view = cert.get("view", "model")
    if view == "leaderboard":
        n_items = scope.get("n_items") or {}
        per = nb["model"].astype(str).map(lambda m: n_items.get(m, np.nan)).to_numpy(dtype=float)
        if np.isnan(per).any():
            raise InputError("The '--neighbors' files of audit hold models that the leaderboard certificate does not cover.")
        dist = diff / per
        shifts = dist / math.sqrt(dim)
    else:
        dist = diff
        if model not in (None, "*"):
            shifts = dist / math.sqrt(dim)
        else:
            models = scope.get("models") or {}
            dims = nb["model"].astype(str).map(lambda m: (models.get(m) or {}).get("dim", dim)).to_numpy(dtype=float)
            shifts = dist / np.sqrt(dims)
    center = cert.get("center") or {}
    kind = center.get("kind") if isinstance(center, Mapping) else center
    return dist, (shifts if kind == "batch" else None), used


def audit_on_files(
    certificate: str | Path,
    neighbors: Sequence[str | Path],
    *,
    confidence: float = 0.99,
    seed: int | None = 0,
    model: str | None = None,
    judge: str | None = None,
    skip_bad: bool = False,
    progress: bool = False,
) -> tuple[Any, dict[str, Any], list[str]]:
    """Audit a certificate on neighbour data loaded from files.

    ``progress=True`` shows each step on stderr.

    Returns
    -------
    (AuditResult, certificate dict, generators audited)
    """
    from biasbound.audit import audit_certificate
    from biasbound.commands.certify import load_inputs

    from biasbound._progress import step

    cert = read_certificate(certificate, model=model, judge=judge)
    # new neighbour tables are read on the scale the certificate's data were read on (recorded in its scope),
    # so that their normalised scores are comparable with the certified ones
    scales = {tuple(e["scale"]) for e in ((cert.get("scope") or {}).get("score_scale") or [])
              if isinstance(e, Mapping) and isinstance(e.get("scale"), list) and len(e["scale"]) == 2}
    with step(f"reading {len(neighbors)} neighbour file(s)", enabled=progress):
        loaded = load_inputs(neighbors, skip_bad=skip_bad, scale=next(iter(scales)) if len(scales) == 1 else None)
    with step("auditing: exact violation probability and Monte Carlo check", enabled=progress):
        dist, shifts, used = _distances(cert, loaded.frame)
        result = audit_certificate(cert, dist, shifts, confidence=confidence, rng=seed)
    return result, cert, used


def register(app: typer.Typer) -> None:
    """Add the ``audit`` command to ``app``."""

    @app.command("audit")
    def audit_command(
        certificate: Path = typer.Argument(..., help="certificate.json (or certificates.json with --model)."),
        neighbors: list[Path] = typer.Option(..., "--neighbors", help="Judgment files holding new neighbours."),
        confidence: float = typer.Option(0.99, "--confidence", help="Confidence level of the audit bounds."),
        seed: int = typer.Option(0, "--seed", help="Seed of the Monte Carlo check (recorded)."),
        model: str | None = typer.Option(None, "--model", help="Pick this model's certificate from a list."),
        judge: str | None = typer.Option(None, "--judge", help="Pick this judge's certificate from a list."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and count bad lines."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress display (stderr)."),
    ) -> None:
        """Re-audit a certificate on new neighbour data. Exit 0 holds / not contradictable, 1 violated, 3 inconclusive."""
        res, cert, used = audit_on_files(certificate, neighbors, confidence=confidence, seed=seed,
                                         model=model, judge=judge, skip_bad=skip_bad, progress=not no_progress)
        scope = cert.get("scope") or {}
        color = {"holds": "green", "not contradictable": "green", "violated": "red"}.get(res.verdict, "yellow")
        t = Table(title=f"Audit of {certificate} (judge {scope.get('judge')}, model {scope.get('model')})", show_header=False)
        t.add_column("", style="bold")
        t.add_column("")
        t.add_row("verdict", f"[{color}]{res.verdict}[/] (exit {EXIT_CODES[res.verdict]})")
        if res.verdict == "not contradictable":
            t.add_row("", "the certificate rests on the almost-sure bound: every neighbour within the score range has "
                          f"P(exceed) <= {res.p_max:.3g} <= δ, so these data cannot contradict it")
        t.add_row("τ, δ, σ, α, d", f"{res.tau:g}, {res.delta:g}, {res.sigma:.4g}, {res.alpha:.4g}, {res.dim}")
        t.add_row("neighbours audited", f"{res.n_neighbors} ({', '.join(used)})")
        t.add_row("P(||M(D) − M(D')|| > τ)", f"{res.exact_probability:.3g}  [{res.exact_lcb:.3g}, {res.exact_ucb:.3g}] "
                  f"at {res.confidence:g}")
        t.add_row("Monte Carlo", f"{res.mc_probability:.3g} (upper {res.mc_ucb:.3g}, {res.n_mc} draws, seed {res.seed})")
        Console().print(t)
        raise typer.Exit(EXIT_CODES[res.verdict])

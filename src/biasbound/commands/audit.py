"""`biasbound audit CERTIFICATE --neighbor-file FILE...`: verify a certificate, then re-audit it on neighbour data.

The certificate is verified first (:meth:`biasbound.certificate.Certificate.verify`: every derived field
recomputed from its inputs); one that does not verify is reported and not audited. The certificate's
judge (and model, for a per-model certificate) is looked up in the new judgment files; the observed
neighbours of its generators (swap, variant:NAME, rerun) give distances ``||f(D) − f(D')||`` that
:func:`biasbound.audit.audit_certificate_parts` checks part by part: a judge's model-view certificate is
every model's own claim at once, so each (model, generator) is audited on its own and the worst leads
(a mean over models could hide one whose claim fails). Neighbours that are the certificate's own census
make a "recheck" (the probability recomputed exactly, not new evidence).

Exit codes (the README's table): 0 = no part contradicts the certificate ("holds": its confidence bound
is <= δ; "recheck": the recomputed probability over the calibration census is <= δ; "exact": the
certified batch with a neighbour for every item gives the probability over T exactly, <= δ; "not
contradictable": the certificate rests on an almost-sure bound that no neighbour within the score range
can break), 1 = the certificate does not verify, or any one part is "violated", 3 = inconclusive (no
part violated, one undecided; more neighbours needed), 2 = bad input (one sentence from the CLI).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: pandas and numpy load when a command runs
    import numpy as np
    import pandas as pd

import typer

from biasbound.parameters import old_option, option, renamed, validate
from rich.console import Console
from rich.table import Table

from biasbound._exceptions import DataFormatError, InputError
from biasbound.parameters import validate_params

__all__ = ["EXIT_CODES", "AuditOutcome", "audit_on_files", "read_certificate", "register", "verify_certificate"]

#: Exit code per audit verdict.
EXIT_CODES: dict[str, int] = {"holds": 0, "not contradictable": 0, "exact": 0, "recheck": 0, "violated": 1,
                              "does not verify": 1, "inconclusive": 3}


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
    data = _json_certificate(p)
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
        scope: Any = data.get("scope") if isinstance(data.get("scope"), Mapping) else {}
        models = {str(m) for m in (scope.get("models") or {})} | ({str(scope["model"])} if scope.get("model") not in
                                                                  (None, "*") else set())
        for flag, want, have in (("--model", model, models), ("--judge", judge, {str(scope.get("judge"))})):
            if want is not None and have and want not in have:
                raise InputError(f"The '{flag}' option of audit names {want!r}, but {str(p)!r} certifies "
                                 f"{', '.join(repr(h) for h in sorted(have)[:6])}{', …' if len(have) > 6 else ''}.")
    from biasbound.certificate import SCHEMA_VERSION, V1_REFUSED

    version = data.get("schema_version", 1)
    if version == 1 and not isinstance(version, bool):
        raise DataFormatError(f"the certificate cannot be audited: {V1_REFUSED}.", path=str(p))
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        raise DataFormatError(f"the certificate's 'schema_version' is {version!r}; this biasbound audits version "
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
        v: Any = data.get(name)
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


def _parts(cert: Mapping[str, Any], frame: pd.DataFrame) -> tuple[dict[tuple[str | None, str], tuple[np.ndarray, np.ndarray | None]],
                                                          list[str], list[str], list[str], set[tuple[str | None, str]]]:
    """The neighbour distances of each part of the certificate's claim: per (model, generator) in the model
    view (a judge's certificate is every model's claim at once), per generator in the leaderboard view.

    Returns ``(parts, generators used, parts of the claim without neighbours, models in the files the
    certificate does not cover, census parts)``: a census part holds the certified batch itself (the model's
    canonical scores hash to the certificate's ``data_sha256``) with one neighbour for each of its items, so
    the probability over T is computed exactly from it."""
    import numpy as np

    from biasbound.neighbors.observed import observed_neighbors

    scope = cert.get("scope") or {}
    judge = scope.get("judge")
    if judge is not None:
        frame = frame[frame["judge"].astype(str) == str(judge)]
        if frame.empty:
            raise InputError(f"The '--neighbor-file' files of audit hold no judgment by the certificate's judge {judge!r}.")
    gens = scope.get("generators_in_combination") or list((cert.get("generators") or {}).keys())
    if not gens:
        raise InputError("The 'CERTIFICATE' argument of audit records no neighbour generator to audit.")
    view = cert.get("view", "model")
    model = scope.get("model")
    models = scope.get("models") or {}
    wanted = _wanted(view, model, models)
    center = cert.get("center") or {}
    batch = (center.get("kind") if isinstance(center, Mapping) else center) == "batch"
    dim = int(cert["dim"])
    parts: dict[tuple[str | None, str], tuple[np.ndarray, np.ndarray | None]] = {}
    used: list[str] = []
    absent: list[str] = []
    outside: set[str] = set()
    census: set[tuple[str | None, str]] = set()
    n_scope = 0
    for g in gens:
        if not _present(frame, g):
            absent += [g if m is None else f"{m} / {g}" for m in wanted]
            continue
        used.append(g)
        nb = observed_neighbors(frame, g)
        names = nb["model"].astype(str)
        diff = np.abs(nb["difference"].to_numpy(dtype=float))
        if view == "leaderboard":
            n_items = scope.get("n_items") or {}
            per = names.map(lambda m, n_items=n_items: n_items.get(m, np.nan)).to_numpy(dtype=float)
            outside |= set(names[np.isnan(per)])
            keep = ~np.isnan(per)
            dist = diff[keep] / per[keep]
            n_scope += int(dist.size)
            if dist.size < 2:
                absent.append(g)
                continue
            parts[(None, g)] = (dist, dist / math.sqrt(dim) if batch else None)
            continue
        if wanted != [None]:
            outside |= set(names) - set(wanted)
        for m in wanted:
            sel = np.ones(len(nb), dtype=bool) if m is None else (names == m).to_numpy()
            n_scope += int(sel.sum())
            if sel.sum() < 2:  # one neighbour bounds nothing: the part is listed as not audited
                absent.append(g if m is None else f"{m} / {g}")
                continue
            dist = diff[sel]
            d_m = (models.get(m) or {}).get("dim", dim) if m is not None else dim
            parts[(m, g)] = (dist, dist / math.sqrt(d_m) if batch else None)
            if _is_census(cert, frame, nb["item_id"][sel], m, g, d_m):
                census.add((m, g))
    if not used:
        raise InputError(
            f"The '--neighbor-file' files of audit hold no neighbours of the certificate's generators ({', '.join(gens)})."
        )
    if not parts:
        raise InputError(f"The '--neighbor-file' files of audit hold {n_scope} neighbour(s) for the certificate's scope"
                         + (f" (model {model!r})" if model not in (None, "*") else "")
                         + "; at least 2 are needed for a part to be audited.")
    return parts, used, absent, sorted(outside), census


def _wanted(view: str, model: Any, models: Mapping[str, Any]) -> list[str | None]:
    """The models whose parts are audited: none by name in the leaderboard view (one population), the certificate's
    model, or every model of a judge's certificate."""
    if view == "leaderboard":
        return [None]
    if model not in (None, "*"):
        return [str(model)]
    return [str(m) for m in models] or [None]


def _present(frame: pd.DataFrame, g: str) -> bool:
    """Whether the files hold any neighbour of generator ``g``."""
    return bool(
        (g == "swap" and frame["game"].eq(2).any())
        or (g == "rerun" and frame["rerun"].gt(0).any())
        or (g.startswith("variant:") and frame["variant"].eq(g.split(":", 1)[1]).any())
    )


def _is_census(cert: Mapping[str, Any], frame: pd.DataFrame, items: pd.Series, m: str | None, g: str, d_m: int) -> bool:
    """One neighbour for each item of model ``m``'s certified batch, whose canonical scores hash to the certificate's
    (the model's own ``data_sha256`` in a judge's certificate)."""
    if m is None or len(items) != d_m or items.nunique() != d_m:
        return False
    scope = cert.get("scope") or {}
    models = scope.get("models") or {}
    digest = (models.get(m) or {}).get("data_sha256") if scope.get("model") in (None, "*") else cert.get("data_sha256")
    return digest is not None and _batch_digest(frame, m, g) == digest


def _recorded_model_digests(path: Path, root: str, judge: Any) -> dict[str, str]:
    """Each model's judgments digest from the per-model certificates beside a judge certificate, kept only when
    together they hash to the judge's ``judgments_sha256`` (the digest tree :func:`judgments_digest` builds)."""
    from biasbound._integrity import canonical_json, sha256_text
    from biasbound._untrusted import load_json

    beside = path.parent / "certificates.json"
    try:
        data = load_json(beside, folder=path.parent)
    except InputError:
        return {}
    if not isinstance(data, list):
        return {}
    per = {str((d.get("scope") or {}).get("model")): d.get("judgments_sha256") for d in data
           if isinstance(d, dict) and str((d.get("scope") or {}).get("judge")) == str(judge)}
    if not all(isinstance(v, str) for v in per.values()) or sha256_text(canonical_json(per)) != root:
        return {}
    return {k: str(v) for k, v in per.items()}


def _json_certificate(p: Path) -> Any:
    """The JSON of a certificate file through the shared bounded reader (a regular file, no duplicate key, no huge
    integer, no deep nesting), its refusal worded as a certificate's."""
    from biasbound._untrusted import load_json

    try:
        return load_json(p)
    except DataFormatError as exc:
        raise DataFormatError(f"not a JSON certificate: it {exc.reason}", path=exc.path, line=exc.line) from None


def _own_parts(cert: Mapping[str, Any], frame: Any, parts: Mapping[tuple[str | None, str], Any],
               path: Path) -> set[tuple[str | None, str]]:
    """The parts whose rows are the certificate's own data: the judge's judgment rows in the files (originals and
    every neighbour: item ids and answers) hash to the certificate's ``judgments_sha256`` (the judge's digest for a
    judge certificate, the model's for a per-model one; a model's part of a judge certificate by the per-model
    digests beside it, checked against the judge's). Equal counts and level sums are not enough: fresh
    neighbours can match them by chance, and would then be discarded as a "recheck" instead of audited."""
    from biasbound._integrity import judgments_digest

    recorded = cert.get("judgments_sha256")
    scope = cert.get("scope") or {}
    if not isinstance(recorded, str) or "judge" not in frame.columns:
        return set()
    rows = frame[frame["judge"].astype(str) == str(scope.get("judge"))]
    if rows.empty:
        return set()
    root, per_model = judgments_digest(rows.drop(columns=[c for c in ("source", "line", "verdict") if c in rows.columns]))
    model = scope.get("model")
    if model not in (None, "*"):
        return set(parts) if per_model.get(str(model)) == recorded else set()
    if root == recorded:
        return set(parts)
    models = _recorded_model_digests(path, recorded, scope.get("judge"))
    return {(m, g) for m, g in parts if m is not None and models.get(str(m)) is not None
            and per_model.get(str(m)) == models[str(m)]}


def _batch_digest(frame: pd.DataFrame, model: str, generator: str) -> str:
    """SHA-256 of one model's canonical scores f(D) in the files, as the pipeline hashes them (judged items
    in sorted item order)."""
    import numpy as np

    from biasbound.certificate import sha256_of_array
    from biasbound.neighbors.observed import canonical_scores

    canon = canonical_scores(frame, generator)
    canon = canon[(canon["model"].astype(str) == model) & canon["score"].notna()]
    order = np.argsort(canon["item_id"].astype(str).to_numpy(), kind="stable")
    return sha256_of_array(canon["score"].to_numpy(dtype=float)[order])


@dataclass(frozen=True)
class AuditOutcome:
    """What ``biasbound audit`` found: the certificate's verification, then (if it verifies) the audit."""

    certificate: dict[str, Any]
    verification_error: str | None
    audit: Any  # biasbound.audit.CertificateAudit, or None when the certificate does not verify
    generators: list[str]
    outside: list[str]

    @property
    def verdict(self) -> str:
        return "does not verify" if self.verification_error else self.audit.verdict

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    def __iter__(self) -> Any:
        """Unpacks as ``(audit, certificate, generators)``, what :func:`audit_on_files` returned before."""
        return iter((self.audit, self.certificate, self.generators))


def verify_certificate(data: Mapping[str, Any]) -> str | None:
    """None when the certificate verifies (every derived field recomputed from its inputs), else the reason."""
    from biasbound.certificate import Certificate, CertificateVerificationError

    try:
        Certificate.from_dict(dict(data)).verify()
    except CertificateVerificationError as exc:
        return str(exc)
    except (InputError, TypeError, KeyError, ValueError) as exc:
        return f"The certificate does not verify: its fields do not make a certificate ({exc})."
    return None


@validate_params
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
) -> AuditOutcome:
    """Verify a certificate, then audit each part of its claim on neighbour data loaded from files.

    A certificate that does not verify is not audited (``verification_error`` says why). A judge's
    model-view certificate is audited model by model (and generator by generator): never a mean over
    models. ``progress=True`` shows each step on stderr.
    """
    from biasbound.audit import audit_certificate_parts
    from biasbound.data.loading import load_inputs

    from biasbound._progress import step

    v = validate("audit", confidence=confidence, **({} if seed is None else {"seed": seed}))  # biasbound.parameters
    confidence, seed = v["confidence"], v.get("seed")
    cert = read_certificate(certificate, model=model, judge=judge)
    # new neighbour tables are read on the scale the certificate's data were read on (recorded in its scope),
    # so that their normalised scores are comparable with the certified ones
    scales = {tuple(e["scale"]) for e in ((cert.get("scope") or {}).get("score_scale") or [])
              if isinstance(e, Mapping) and isinstance(e.get("scale"), list) and len(e["scale"]) == 2}
    with step(f"reading {len(neighbors)} neighbour file(s)", enabled=progress):
        loaded = load_inputs(neighbors, skip_bad=skip_bad, scale=next(iter(scales)) if len(scales) == 1 else None)
        parts, used, absent, outside, census = _parts(cert, loaded.frame)  # bad input is reported before anything else
    with step("verifying the certificate", enabled=progress):
        why = verify_certificate(cert)
    if why is not None:  # nothing is audited against a certificate that does not verify
        return AuditOutcome(certificate=cert, verification_error=why, audit=None, generators=used, outside=outside)
    with step("auditing each model's claim: exact violation probability and Monte Carlo check", enabled=progress):
        result = audit_certificate_parts(cert, parts, confidence=confidence, rng=seed, not_audited=tuple(absent),
                                         census=census, own=_own_parts(cert, loaded.frame, parts, Path(certificate)))
    return AuditOutcome(certificate=cert, verification_error=None, audit=result, generators=used, outside=outside)


#: How many parts the terminal lists (the worst first; every part is in --json).
_SHOWN = 12


def _print(outcome: AuditOutcome, certificate: Path) -> None:
    from rich.markup import escape

    cert = outcome.certificate
    scope = cert.get("scope") or {}
    console = Console()
    title = (f"Audit of {escape(str(certificate))} (judge {escape(str(scope.get('judge')))}, "
             f"model {escape(str(scope.get('model')))})")
    if outcome.verification_error:
        console.print(f"[bold red]{title}: the certificate does not verify — not audited (exit 1).[/]", soft_wrap=True)
        console.print(escape(outcome.verification_error), soft_wrap=True, highlight=False)
        return
    res = outcome.audit
    w = res.worst.result
    colors = {"holds": "green", "not contradictable": "green", "recheck": "green", "exact": "green", "violated": "red"}
    t = Table(title=title, show_header=False)
    t.add_column("", style="bold")
    t.add_column("")
    t.add_row("certificate", "verifies (every derived field recomputed from its inputs)")
    t.add_row("verdict", f"[{colors.get(res.verdict, 'yellow')}]{res.verdict}[/] (exit {EXIT_CODES[res.verdict]}) — the "
              f"worst of {len(res.parts)} part(s): {escape(res.worst.label)}")
    counts = ", ".join(f"{v} {n}" for v, n in sorted(res.counts().items(), key=lambda x: x[0]))
    t.add_row("parts", f"{counts}; each model's claim audited on its own (never a mean over models)"
              + (f"; Bonferroni: each statistical part at {res.part_confidence:.6g}, family-wise {res.confidence:g}"
                 if res.part_confidence != res.confidence else ""))
    if res.not_audited:
        shown = ", ".join(res.not_audited[:6]) + (", …" if len(res.not_audited) > 6 else "")
        t.add_row("not audited", f"{len(res.not_audited)} part(s) without neighbours in the files: {escape(shown)}")
    if outcome.outside:
        t.add_row("left out", f"{len(outcome.outside)} model(s) in the files that the certificate does not cover")
    t.add_row("τ, δ, σ, α", f"{w.tau:g}, {w.delta:g}, {w.sigma:.4g}, {w.alpha:.4g}")
    t.add_row("worst part", escape(res.worst.reason))
    if res.worst.verdict == "not contradictable":
        t.add_row("", "the certificate rests on the almost-sure bound: every neighbour within the score range has "
                      f"P(exceed) <= {w.p_max:.3g} <= δ, so these data cannot contradict it")
    t.add_row("Monte Carlo (worst part)", f"{w.mc_probability:.3g} (upper {w.mc_ucb:.3g}, {w.n_mc} draws, seed {w.seed})")
    console.print(t)
    t2 = Table(title=f"Parts, worst first ({min(_SHOWN, len(res.parts))} of {len(res.parts)}; all in --json)")
    for c in ("model / generator", "kind", "verdict", "P(||M(D) − M(D')|| > τ) [lower, upper]", "neighbours", "d"):
        t2.add_column(c)
    for p in res.parts[:_SHOWN]:
        r = p.result
        interval = ("recomputed, as certified" if p.kind == "recheck" else "computed exactly" if p.kind == "census"
                    else f"[{r.exact_lcb:.3g}, {r.exact_ucb:.3g}] at {r.confidence:.6g}")
        t2.add_row(escape(p.label), p.kind, f"[{colors.get(r.verdict, 'yellow')}]{r.verdict}[/]",
                   f"{r.exact_probability:.3g} {interval}", str(r.n_neighbors), str(r.dim))
    console.print(t2)


def register(app: typer.Typer) -> None:
    """Add the ``audit`` command to ``app``."""

    @app.command("audit", help=_HELP)
    def audit_command(
        certificate: Path = typer.Argument(..., help="certificate.json (or certificates.json with --model)."),
        neighbor_file: list[Path] = option("neighbor_file", []),
        old_neighbors: list[Path] | None = old_option("neighbor_file"),
        confidence: float = option("confidence", help="Family-wise confidence level of the audit (Bonferroni over the "
                                   "models' and generators' parts), in (0, 1)"),
        seed: int = option("seed", help="Seed of the Monte Carlo check (recorded)"),
        model: str | None = typer.Option(None, "--model", help="Pick this model's certificate from a list."),
        judge: str | None = typer.Option(None, "--judge", help="Pick this judge's certificate from a list."),
        skip_bad: bool = typer.Option(False, "--skip-bad", help="Skip and count bad lines."),
        as_json: bool = typer.Option(False, "--json", help="Print the verification and every part's audit as JSON."),
        no_progress: bool = typer.Option(False, "--no-progress", help="Hide the progress display (stderr)."),
    ) -> None:
        neighbors = renamed(neighbor_file, old_neighbors, name="neighbor_file", command="audit", default=[])
        outcome = audit_on_files(certificate, neighbors, confidence=confidence, seed=seed,
                                 model=model, judge=judge, skip_bad=skip_bad, progress=not no_progress)
        if as_json:
            doc = {"verdict": outcome.verdict, "exit_code": outcome.exit_code,
                   "verification": outcome.verification_error or "verifies",
                   "audit": None if outcome.audit is None else outcome.audit.to_dict(),
                   "generators": outcome.generators, "models_not_covered": outcome.outside}
            typer.echo(json.dumps(doc, indent=2, allow_nan=False, default=float))
        else:
            _print(outcome, certificate)
        raise typer.Exit(outcome.exit_code)


_HELP = (
    "Verify a certificate, then re-audit each model's claim on new neighbour data.\n\n"
    "Exit codes: 0 = no part contradicts the certificate (holds, recheck, exact, not contradictable); "
    "1 = the certificate does not verify (it is then not audited), or any one model's claim is violated; "
    "2 = bad input; 3 = inconclusive (no part violated, at least one undecided: more neighbours needed).\n\n"
    "A judge's certificate is each model's claim at once: every model (and generator) is audited on its own "
    "and the worst leads, never a mean over models. Checked against the very judgments it was calibrated on, "
    "a certificate gets a \"recheck\": the probability over its census recomputed exactly (not new evidence)."
)

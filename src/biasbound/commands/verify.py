"""`biasbound verify OUTDIR_OR_CERTIFICATE [--scores P] [--judgments INPUT]... [--public-key PATH]`.

Re-checks what `certify` wrote, in up to four layers (the README's table "which check proves what"):

1. every certificate (the judge's ``certificate*.json`` and the per-model ``certificates.json``) is
   re-derived by :meth:`biasbound.certificate.Certificate.verify`: every derived field from the recorded
   inputs, the bound against δ, σ against σ_max, ``records_sha256`` (mandatory in schema 3), the judge's
   seed and centre against its models'; the per-model certificates' seeds, centres and data digests
   against the judge's record of them. When ``scores.parquet`` is there (beside the certificate unless
   ``--scores`` names it), each certificate's ``f(D)`` is rebuilt from it exactly as the pipeline built it
   (:func:`certificate_data`), so ``data_sha256`` and the seeded noise re-draw are checked too;
2. every file of the folder against the outputs manifest (``.biasbound-outputs.json``: SHA-256 per file),
   so an edited ``leaderboard.csv``, ``summary.json`` or ``retention.json`` fails, named;
3. with ``--public-key``, the manifest's Ed25519 signature (every signed byte);
4. with ``--judgments``, certification re-run from those judgment files with the call recorded in the
   certificates (``scope.reproduce``), every output compared with the folder's (apart from ``created``
   and report.html's time stamps): a certificate that does not follow from those judgments fails.

Exit codes (the README's table): 0 = everything verifies, 1 = anything does not (its line names the
certificate or file and the field), 2 = bad input (printed as one sentence by the CLI).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: pandas and numpy load when a command runs
    import numpy as np
    import pandas as pd

import typer

from biasbound._exceptions import DataFormatError, InputError

__all__ = ["certificate_data", "check_files", "read_scores", "recertify", "register", "verify_outputs"]

#: Columns scores.parquet must hold for each view.
_NEEDED = {"model": ("judge", "model", "original", "certified", "in_batch"),
           "leaderboard": ("judge", "model", "original", "certified_model", "in_batch")}


def read_scores(path: Path) -> pd.DataFrame:
    """scores.parquet as written by ``certify`` (rows in the pipeline's canonical (model, item) order)."""
    import pandas as pd

    from biasbound._untrusted import check_parquet_rows

    check_parquet_rows(path)
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        raise DataFormatError(f"not a readable parquet table ({str(exc).splitlines()[0] if str(exc) else exc}).",
                              path=str(path)) from None
    return frame


def certificate_data(cert: Any, scores: pd.DataFrame, path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(f(D), M(D))`` of one certificate, rebuilt from scores.parquet in the pipeline's order.

    Model view: the certified batch (``in_batch``) rows of the certificate's model in file order
    (items sorted), and for the judge's certificate the models concatenated in ``scope.models``
    order. Leaderboard view: each model's mean batch score (pandas' groupby mean, as the pipeline
    computes it) in ``scope.models`` order, and its ``certified_model``.
    """
    import numpy as np
    import pandas as pd

    view = str(cert.view)
    need = _NEEDED.get(view)
    if need is None:
        raise DataFormatError(f"the certificate's view {view!r} is neither 'model' nor 'leaderboard'.", path=str(path))
    missing = [c for c in need if c not in scores.columns]
    if missing:
        raise DataFormatError(f"lacks the column(s) {missing} that a {view}-view certificate is checked against.",
                              path=str(path))
    scope = cert.scope if isinstance(cert.scope, Mapping) else {}
    judge = scope.get("judge")
    rows = scores[(scores["judge"].astype(str) == str(judge)) & scores["in_batch"].astype(bool)]
    model = scope.get("model")
    if view == "model":
        models = [str(model)] if model not in (None, "*") else [str(m) for m in (scope.get("models") or {})]
        parts = [rows[rows["model"].astype(str) == m] for m in models]
        x = np.concatenate([p["original"].to_numpy(dtype=float) for p in parts]) if parts else np.zeros(0)
        y = np.concatenate([p["certified"].to_numpy(dtype=float) for p in parts]) if parts else np.zeros(0)
        return x, y
    models = [str(m) for m in (scope.get("models") or [])]
    # the pipeline's means: pd.Series(score).groupby(model code).mean(), codes in sorted-name order
    g = pd.Series(rows["original"].to_numpy(dtype=float)).groupby(rows["model"].astype(str).to_numpy()).mean()
    x = np.array([g.get(m, np.nan) for m in models], dtype=float)
    y = np.array([rows.loc[rows["model"].astype(str) == m, "certified_model"].iloc[0]
                  if (rows["model"].astype(str) == m).any() else np.nan for m in models], dtype=float)
    return x, y


def _read_json(path: Path) -> Any:
    """A certificate file of a folder: a regular file (no link out of its folder), bounded, duplicate keys refused."""
    from biasbound._untrusted import load_json

    try:
        return load_json(path, folder=path.parent)
    except DataFormatError as exc:
        raise DataFormatError(f"not a JSON certificate: it {exc.reason}", path=exc.path, line=exc.line) from None


def _listed(folder: Path) -> set[str] | None:
    """The names the folder's manifest lists (None without a readable manifest)."""
    from biasbound._integrity import read_manifest

    rec, _ = read_manifest(folder)
    return None if rec is None else {str(n) for n in rec["sha256"]}


def _certificates(target: Path) -> tuple[list[tuple[str, Any, Path]], Path]:
    """``[(label, Certificate, file)]`` from an output folder or one certificate file, and its folder."""
    from biasbound._untrusted import shown
    from biasbound.certificate import Certificate
    from biasbound.pipeline._staging import CERTIFICATE_NAMES

    if target.is_dir():
        # one naming rule for what is read and what is checked: with a manifest, the certificates it lists (any other
        # certificate-like file fails the manifest check); without one, the names certify writes
        listed = _listed(target)
        names = sorted(listed) if listed is not None else sorted(p.name for p in target.iterdir())
        files = [target / n for n in names if CERTIFICATE_NAMES.match(n)]
        files = [f for f in files if f.name != "certificates.json"] + [f for f in files if f.name == "certificates.json"]
        if not files:
            raise InputError(f"The 'OUTDIR_OR_CERTIFICATE' argument of verify names the folder {str(target)!r}, which "
                             "holds no certificate.json, certificate-*.json or certificates.json"
                             f"{' that its manifest lists' if listed is not None else ''}.")
        folder = target
    elif target.exists() or target.is_symlink():
        files, folder = [target], target.parent
    else:
        raise InputError(f"The 'OUTDIR_OR_CERTIFICATE' argument of verify names {str(target)!r}, which does not exist.")
    out: list[tuple[str, Any, Path]] = []
    for f in files:
        data = _read_json(f)
        items = data if isinstance(data, list) else [data]
        if not items:
            raise DataFormatError("not a biasbound certificate (an empty list).", path=str(f))
        for k, d in enumerate(items):
            if not isinstance(d, dict) or "tau" not in d or "sigma" not in d:
                where = f" (element {k})" if isinstance(data, list) else ""
                raise DataFormatError(f"not a biasbound certificate{where} (no 'tau'/'sigma' fields).", path=str(f))
            if d.get("schema_version", 1) == 1:
                from biasbound.certificate import V1_REFUSED

                raise DataFormatError(f"{V1_REFUSED}.", path=str(f))
            try:
                cert = Certificate.from_dict(d)
            except (InputError, TypeError, KeyError, ValueError) as exc:
                raise DataFormatError(f"not a biasbound certificate ({exc})", path=str(f)) from None
            scope = cert.scope if isinstance(getattr(cert, "scope", None), Mapping) else {}
            who = f"judge {shown(scope.get('judge'))}"
            if scope.get("model") not in (None, "*"):
                who += f", model {shown(scope.get('model'))}"
            out.append((f"{shown(f.name)}: {who}", cert, f))
    return out, folder


def _prompt_lines(target: Path) -> list[str]:
    """The judge prompts and parsers the certificates record (``scope.judge_prompt``, written by biasbound run), one
    line each (empty when none records one or the certificates cannot be read: that is reported elsewhere)."""
    from biasbound.judge.custom import describe_prompt_record

    try:
        certs, _ = _certificates(target)
    except (InputError, DataFormatError):
        return []
    seen: dict[str, str] = {}
    for _, cert, _ in certs:
        scope = cert.scope if isinstance(getattr(cert, "scope", None), Mapping) else {}
        rec = scope.get("judge_prompt")
        if isinstance(rec, Mapping) and str(rec.get("sha256")) not in seen:
            seen[str(rec.get("sha256"))] = f"judge {scope.get('judge')}: {describe_prompt_record(rec)}"
    return list(seen.values())


def _cross_check(certs: list[tuple[str, Any, Path]]) -> dict[int, str]:
    """Per-model certificates against their judge's model-view record of them (seed, centre, data digest, size)."""
    judges = {}
    for _, c, f in certs:
        scope = c.scope if isinstance(getattr(c, "scope", None), Mapping) else {}
        if f.name != "certificates.json" and getattr(c, "view", None) == "model" and isinstance(scope.get("models"), Mapping):
            judges[str(scope.get("judge"))] = scope
    out: dict[int, str] = {}
    for k, (_, c, f) in enumerate(certs):
        scope = c.scope if isinstance(getattr(c, "scope", None), Mapping) else {}
        js = judges.get(str(scope.get("judge")))
        if f.name != "certificates.json" or js is None or getattr(c, "view", None) != "model":
            continue
        rec = js["models"].get(str(scope.get("model")))
        if not isinstance(rec, Mapping):
            out[k] = "The certificate does not verify: its model is not among the judge certificate's scope.models."
            continue
        centre = (js.get("centers") or {}).get(str(scope.get("model")))
        for name, mine, theirs in (("seed", c.seed, rec.get("seed")), ("data_sha256", c.data_sha256, rec.get("data_sha256")),
                                   ("dim", c.dim, rec.get("dim")), ("center.value", c.center.get("value"), centre)):
            if theirs is not None and mine != theirs:
                out[k] = (f"The certificate does not verify: its {name} {mine!r} differs from the judge certificate's "
                          f"record of this model ({theirs!r}).")
                break
    return out


def verify_outputs(target: Path, scores_path: Path | None = None) -> list[tuple[str, str | None, list[str]]]:
    """Verify every certificate of ``target``; ``[(label, failure sentence or None, fields checked)]``.

    A schema-2 certificate that verifies has ``"warning: ..."`` among its checked entries."""
    from biasbound._untrusted import regular_file
    from biasbound.certificate import CertificateVerificationError

    certs, folder = _certificates(Path(target))
    if scores_path is not None and not Path(scores_path).exists():
        raise InputError(f"The '--scores' option of verify names {str(scores_path)!r}, which is not a file.")
    sp = Path(scores_path) if scores_path is not None else folder / "scores.parquet"
    listed = _listed(folder)
    if scores_path is not None:
        scores = read_scores(regular_file(sp))
    elif os.path.lexists(sp) and (listed is None or sp.name in listed):  # an unlisted one is never read (named)
        scores = read_scores(regular_file(sp, folder=folder))
    else:
        scores = None
    crossed = _cross_check(certs)
    results: list[tuple[str, str | None, list[Any]]] = []
    for k, (label, cert, _) in enumerate(certs):
        kw: dict[str, Any] = {}
        if scores is not None and cert.schema_version >= 2:
            x, y = certificate_data(cert, scores, sp)
            kw = {"scores": x, "certified": y}
        try:
            res = cert.verify(**kw)
        except CertificateVerificationError as exc:
            results.append((label, str(exc), []))
            continue
        if k in crossed:
            results.append((label, crossed[k], []))
            continue
        checked = list(res.get("checked", []))
        if res.get("warning"):
            checked.append(f"warning: {res['warning']}")
        results.append((label, None, checked))
    return results


def check_files(target: Path, public_key: Any = None,
                scores: Path | None = None) -> tuple[list[tuple[str, str]], str]:
    """The folder's files against its outputs manifest: ``([(EDITED or MISSING, sentence)], summary line)``.

    A folder target must hold the manifest; a single certificate file is checked against the manifest beside it
    when there is one (and must be listed there; else, without ``public_key``, nothing is checked and the summary
    says so). ``--scores`` given is checked like the rest: its SHA-256 must be the one the manifest records for
    scores.parquet. A signed manifest checked without a key says so (the signature is present, not checked)."""
    from biasbound._integrity import (
        MANIFEST,
        check_manifest,
        file_sha256,
        manifest_signed,
    )
    from biasbound._untrusted import regular_file, shown
    from biasbound.pipeline._staging import OUTPUT_LIKE

    target = Path(target)
    folder = target if target.is_dir() else target.parent
    if not target.is_dir() and not os.path.lexists(folder / MANIFEST) and public_key is None:
        return [], f"files     not checked: no {MANIFEST} beside {shown(target.name)} (only the certificate itself was)"
    problems, checked, signed = check_manifest(folder, public_key, owned=OUTPUT_LIKE)
    listed = _listed(folder)
    if listed is not None and not target.is_dir() and target.name not in listed and \
            not any(shown(target.name) in p for _, p in problems):
        problems.append(("EDITED", f"{shown(target.name)} is not listed in {MANIFEST} (it was not written by the "
                                   "certify run whose outputs these are)"))
    if scores is not None and listed is not None:
        recorded = (_manifest_digests(folder) or {}).get("scores.parquet")
        if recorded is None or file_sha256(regular_file(scores)) != recorded:
            problems.append(("EDITED", f"--scores {shown(scores)} is not the scores.parquet {MANIFEST} records (its "
                                       "SHA-256 differs)"))
    if not target.is_dir() and not problems:
        checked = [n for n in checked if n == target.name]
    how = " and its Ed25519 signature by the public key given" if signed else ""
    if public_key is None and manifest_signed(folder):
        how = "; the manifest is signed: signature present, not checked (give --public-key to check it)"
    return problems, f"files     {len(checked)} file(s) match {MANIFEST}{how}"


def _manifest_digests(folder: Path) -> dict[str, str] | None:
    from biasbound._integrity import read_manifest

    rec, _ = read_manifest(folder)
    return None if rec is None else {str(k): str(v) for k, v in rec["sha256"].items()}


#: report.html's time stamps (the run's and each certificate's ``created``), masked when outputs are compared.
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:\d\d|Z)?")


def _strip_created(obj: Any) -> Any:
    if isinstance(obj, list):
        return [_strip_created(x) for x in obj]
    if isinstance(obj, dict):
        return {k: v for k, v in obj.items() if k != "created"}
    return obj


def _first_difference(a: Any, b: Any, path: str) -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                return f"{path}.{key}".lstrip(".")
            w = _first_difference(a[key], b[key], f"{path}.{key}")
            if w:
                return w
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path.lstrip('.') or 'the whole file'} (length {len(a)} vs {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            w = _first_difference(x, y, f"{path}[{i}]")
            if w:
                return w
        return None
    return None if (a == b and type(a) is type(b)) else (path.lstrip(".") or "the whole file")


def _certificate_difference(a: Any, b: Any) -> str | None:
    """The fields of a certificate file (one certificate or a list) that differ, inputs first (the field order)."""
    import dataclasses

    from biasbound.certificate import Certificate

    order = [f.name for f in dataclasses.fields(Certificate)]
    pairs = list(zip(a, b)) if isinstance(a, list) and isinstance(b, list) and len(a) == len(b) else [(a, b)]
    for k, (x, y) in enumerate(pairs):
        if not (isinstance(x, dict) and isinstance(y, dict)):
            where = _first_difference(x, y, "")
            return None if where is None else f"{where} differs from the re-certification"
        keys = sorted(set(x) | set(y), key=lambda n: (order.index(n) if n in order else len(order), n))
        diff = [n for n in keys if _first_difference(x.get(n), y.get(n), n) is not None]
        if diff:
            at = f"[{k}] " if len(pairs) > 1 else ""
            shown = ", ".join(diff[:6]) + (f" and {len(diff) - 6} more" if len(diff) > 6 else "")
            return (f"{at}{shown} differ{'s' if len(diff) == 1 else ''} from the re-certification (first: "
                    f"{_first_difference(x.get(diff[0]), y.get(diff[0]), diff[0])})")
    return None if len(pairs) == 1 or len(a) == len(b) else "the number of certificates differs from the re-certification"


def _compare(name: str, mine: Path, redone: Path) -> str | None:
    """Why ``mine`` is not what re-certification wrote (``redone``), or None."""
    if name.endswith(".json"):
        a, b = json.loads(mine.read_text(encoding="utf-8")), json.loads(redone.read_text(encoding="utf-8"))
        if name == "load_report.json" and isinstance(a, dict) and isinstance(b, dict):
            a, b = list(a.values()), list(b.values())  # keyed by the input paths as typed
        elif name.startswith("certificate"):
            return _certificate_difference(_strip_created(a), _strip_created(b))
        where = _first_difference(a, b, "")
        return None if where is None else f"{where} differs from the re-certification"
    if name == "report.html":
        same = _STAMP.sub("T", mine.read_text(encoding="utf-8")) == _STAMP.sub("T", redone.read_text(encoding="utf-8"))
        return None if same else "differs from the re-certification (time stamps aside)"
    return None if mine.read_bytes() == redone.read_bytes() else "differs from the re-certification"


def _read_frame(inputs: Sequence[Path], load: Mapping[str, Any]) -> Any:
    """One table certified as an in-memory JudgmentSet (``biasbound run``): read with pandas and passed to
    :func:`biasbound.data.tables.from_frame` with the recorded source name and scale, as the runner does."""
    import pandas as pd

    from biasbound.data.tables import COLUMNS, from_frame

    if len(inputs) != 1:
        raise InputError(f"The '--judgments' option of verify must name one table for these certificates (made from one "
                         f"in-memory table, {load.get('source')!r}). Got {len(inputs)}.")
    from biasbound._untrusted import check_parquet_rows

    path = Path(inputs[0])
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        check_parquet_rows(path)
    try:
        if name.endswith((".parquet", ".pq")):
            raw = pd.read_parquet(path)
        elif name.endswith((".csv", ".csv.gz")):
            raw = pd.read_csv(path)
        else:
            raise InputError(f"The '--judgments' option of verify names {str(path)!r}; these certificates were made from "
                             f"one in-memory table ({load.get('source')!r}), re-read from a .parquet or .csv file.")
    except (OSError, ValueError) as exc:
        raise DataFormatError(f"not a readable table ({str(exc).splitlines()[0] if str(exc) else exc}).",
                              path=str(path)) from None
    cols = [c for c in COLUMNS if c in raw.columns and c not in ("source", "line")]
    js = from_frame(raw[cols], source=str(load.get("source")), scale=tuple(load["scale"]))
    if isinstance(raw.attrs.get("usage"), Mapping):  # the judging cost biasbound run stores with its table
        js.frame.attrs["usage"] = dict(raw.attrs["usage"])
    return js


def recertify(target: Path, inputs: Sequence[Path], notes: list[str] | None = None) -> list[tuple[str, str | None]]:
    """Certify ``inputs`` again with the call recorded in the certificates and compare every output.

    Returns ``[(file name, failure sentence or None)]``. The re-run writes into a temporary folder (under
    ``tempfile.gettempdir()``), removed afterwards. The files given are matched to the inputs the certificates
    record by content (any name, any order); ``notes`` receives what was applied (the matching, the reading
    options), for the caller to print.
    """
    notes = [] if notes is None else notes

    from biasbound._reproduce import checked_reproduce
    from biasbound.data._inputs import check_input

    certs, folder = _certificates(Path(target))
    for p in inputs:
        if not Path(p).exists():
            raise InputError(f"The '--judgments' option of verify names {str(p)!r}, which does not exist.")
        check_input(p)
    judge_certs = [c for _, c, f in certs if f.name != "certificates.json"]
    calls: list[Any] = [c.scope.get("reproduce") if isinstance(getattr(c, "scope", None), Mapping) else None for c in judge_certs]
    if not judge_certs or any(not isinstance(r, Mapping) or not isinstance(r.get("certify"), Mapping) for r in calls):
        raise InputError(f"The '--judgments' option of verify needs the judge certificate(s) of {str(folder)!r} to record "
                         "the certify call (scope.reproduce, written since certificate schema 3); re-run certify.")
    if any(r != calls[0] for r in calls):
        return [("certificates", "The judge certificates record different certify calls (scope.reproduce); they were "
                                 "not written by one certify run.")]
    if not isinstance(calls[0].get("load"), Mapping):
        raise InputError(f"The '--judgments' option of verify re-reads input files, but the certificates of "
                         f"{str(folder)!r} were made from an in-memory table (a Python call of pipeline.certify on a "
                         "DataFrame), which records no reading options; re-run that call.")
    call, load = checked_reproduce(calls[0])  # untrusted: only certify's own keys, each in range, no path
    scratch = Path(tempfile.mkdtemp(prefix="biasbound-verify-"))
    try:
        return _recertify_in(scratch, folder, list(inputs), call, load, notes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _match_inputs(given: list[Path], recorded: list[Mapping[str, Any]],
                  scratch: Path) -> tuple[list[Path] | None, list[tuple[str, str | None]], list[str]]:
    """The given judgment files matched to the recorded inputs by content (SHA-256): links in ``scratch`` under the
    recorded display names, in the recorded order, and the failures (an input recorded whose content no file has,
    a file given that no record has). When as many files are given as recorded, the ones left over are paired in
    the order given (so the re-certification still names the outputs they change); otherwise ``None``."""
    from biasbound._untrusted import shown
    from biasbound.data._inputs import content_record

    digests: dict[str, list[Path]] = {}
    for p in given:
        digests.setdefault(content_record(p, p.name, "")["sha256"], []).append(p)
    failures: list[tuple[str, str | None]] = []
    pairs: list[tuple[Mapping[str, Any], Path | None]] = []
    used: set[Path] = set()
    for r in recorded:
        cands = [p for p in digests.get(str(r["sha256"]), []) if p not in used]
        if cands:
            used.add(cands[0])
        pairs.append((r, cands[0] if cands else None))
    left = [p for p in given if p not in used]
    for r, found in pairs:
        if found is None:
            failures.append((shown(r["name"]), f"no file given has the content recorded for this input (SHA-256 "
                                               f"{str(r['sha256'])[:12]}…, {int(r['bytes']):,} bytes)"))
    for p in left:
        failures.append((shown(p.name), "its content matches no input the certificates record"))
    if failures and len(given) != len(recorded):
        return None, failures, []
    matched, lines = [], []
    for r, found in pairs:
        p = found if found is not None else left.pop(0)
        link = scratch / "inputs" / str(r["name"])
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(p.absolute(), link, target_is_directory=p.is_dir())
        matched.append(link)
        lines.append(f"{shown(r['name'])} = {shown(p)}")
    return matched, failures, lines


def _options_line(load: Mapping[str, Any]) -> str:
    """The reading options verify applied, in words."""
    parts = []
    if load.get("columns"):
        parts.append("columns " + ", ".join(f"{k}={v}" for k, v in dict(load["columns"]).items()))
    if load.get("scale") is not None:
        parts.append(f"scale {load['scale'][0]:g},{load['scale'][1]:g}")
    if load.get("skip_bad"):
        parts.append("skip bad lines")
    if load.get("score_map"):
        parts.append("score map " + ", ".join(f"{k}={v:g}" for k, v in dict(load["score_map"]).items()))
    if load.get("llmbar_view") not in (None, "output_1"):
        parts.append(f"LLMBar view {load['llmbar_view']}")
    if load.get("ties") not in (None, "missing"):
        parts.append(f"ties {load['ties']}")
    if load.get("neighbors_auto"):
        parts.append("generators auto (" + ", ".join(load["neighbors_auto"]) + ")")
    return "; ".join(parts) or "the defaults (no column mapping, scale inferred)"


def _labels_among(inputs: list[Path], call: dict[str, Any], notes: list[str], scratch: Path
                  ) -> tuple[list[Path], dict[str, Any], tuple[str, str | None] | None]:
    """The recorded human labels found among the files given to ``--judgments`` by their content (a labels file is
    recorded by name and SHA-256, never by path): ``(the judgment files, the certify call with the labels file's
    path — a link in ``scratch`` under the recorded name —, None)``, or a failure when no file given has the labels'
    content."""
    from biasbound._untrusted import shown
    from biasbound.data._inputs import content_record

    rec = call.get("human_labels")
    if not isinstance(rec, Mapping):
        return inputs, call, None
    if set(rec) == {"column"}:
        return inputs, {**call, "human_labels": rec["column"]}, None
    for p in inputs:
        if p.is_file() and content_record(p, p.name, "labels")["sha256"] == rec["sha256"]:
            notes.append(f"human labels matched by content: {shown(p.name)} as {shown(rec['name'])}")
            link = scratch / "labels" / str(rec["name"])
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(p.absolute(), link)
            return [q for q in inputs if q != p], {**call, "human_labels": link}, None
    return inputs, call, (shown(str(rec["name"])), f"no file given has the content recorded for the human labels (SHA-256 "
                                                   f"{str(rec['sha256'])[:12]}…); give the labels file with --judgments too")


def _recertify_in(scratch: Path, folder: Path, inputs: list[Path], call: dict[str, Any], load: dict[str, Any],
                  notes: list[str]) -> list[tuple[str, str | None]]:
    from biasbound._exceptions import BiasboundError
    from biasbound._integrity import MANIFEST
    from biasbound._untrusted import shown
    from biasbound.data.loading import load_inputs, restrict_to_groups_with
    from biasbound.pipeline import certify

    failures: list[tuple[str, str | None]] = []
    inputs, call, missing_labels = _labels_among(inputs, call, notes, scratch)
    if missing_labels is not None:
        return [missing_labels]
    if load.get("inputs") is not None:
        matched, failures, lines = _match_inputs(inputs, load["inputs"], scratch)
        if matched is None:
            return failures
        notes.append(("inputs read as: " if failures else "inputs matched by content: ") + "; ".join(lines))
        inputs = matched
    if load.get("reader") == "frame":  # biasbound run's judgments.parquet, or a Python from_frame table
        notes.append(f"read as one table named {shown(load.get('source'))!r}, scale {load['scale'][0]:g},"
                     f"{load['scale'][1]:g}")
        loaded = _read_frame(inputs, load)
    else:
        notes.append("reading options applied (recorded): " + shown(_options_line(load)))
        loaded = load_inputs(list(inputs), scale=None if load.get("scale") is None else tuple(load["scale"]),
                             skip_bad=bool(load.get("skip_bad", False)), columns=load.get("columns"),
                             llmbar_view=load.get("llmbar_view", "output_1"), ties=load.get("ties", "missing"),
                             score_map=load.get("score_map"), winner_map=load.get("winner_map"))
        if load.get("neighbors_auto"):
            loaded = restrict_to_groups_with(loaded, load["neighbors_auto"])
    redo = scratch / "out"
    try:
        certify(loaded, **{**call, "out": redo, "progress": False})
    except BiasboundError as exc:
        if not redo.is_dir():
            return [*failures, ("re-certification", f"certify fails on these judgments with the recorded call: {exc}")]
    mine_names = {p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink()}  # never through a link
    redone_names = {p.name for p in redo.iterdir() if p.is_file()} - {MANIFEST}
    results: list[tuple[str, str | None]] = []
    for name in sorted(redone_names):
        if name not in mine_names:
            results.append((name, f"re-certification writes {name}, which the folder lacks"))
        else:
            results.append((name, _compare(name, folder / name, redo / name)))
    from biasbound.pipeline._staging import OWNED_NAMES, SUBFOLDER

    for name in sorted(n for n in mine_names - redone_names if OWNED_NAMES.match(n)):
        results.append((name, "re-certification of these judgments does not write this file"))
    if (redo / SUBFOLDER).is_dir() or (folder / SUBFOLDER).is_dir():  # the anchored release (human labels)
        results += _compare_anchored(folder / SUBFOLDER, redo / SUBFOLDER)
    return failures + results


def _compare_anchored(mine: Path, redone: Path) -> list[tuple[str, str | None]]:
    """The anchored release's folder compared file by file with its re-certification (names prefixed ``anchored/``)."""
    from biasbound._integrity import MANIFEST

    if not mine.is_dir() or not redone.is_dir():
        return [(mine.name, "re-certification " + ("writes" if redone.is_dir() else "does not write") +
                 " the anchored release's folder, which " + ("the folder lacks" if redone.is_dir() else "is here"))]
    names = {p.name for p in mine.iterdir() if p.is_file()} | {p.name for p in redone.iterdir() if p.is_file()}
    out: list[tuple[str, str | None]] = []
    for name in sorted(names - {MANIFEST}):
        if not (mine / name).is_file() or not (redone / name).is_file():
            out.append((f"{mine.name}/{name}", "written by only one of the runs"))
        else:
            out.append((f"{mine.name}/{name}", _compare(name, mine / name, redone / name)))
    return out


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify_command(
        target: Path = typer.Argument(..., metavar="OUTDIR_OR_CERTIFICATE",
                                      help="A certify output folder, or one certificate*.json / certificates.json."),
        more: list[Path] | None = typer.Argument(None, metavar="INPUT", show_default=False,
                                                 help="More judgment files after the first --judgments INPUT."),
        scores: Path | None = typer.Option(None, "--scores",
                                           help="scores.parquet to check the data hash and noise against "
                                                "(default: beside the certificate, when present)."),
        judgments: list[Path] | None = typer.Option(None, "--judgments", metavar="INPUT",
                                                    help="The judgment files certify read, in its order (--judgments "
                                                         "A B C, or repeated): certify again with the recorded call and "
                                                         "compare every output."),
        public_key: Path | None = typer.Option(None, "--public-key", envvar="BIASBOUND_PUBLIC_KEY", show_envvar=True,
                                               help="Ed25519 public key (biasbound keygen): the outputs manifest must "
                                                    "carry a valid signature by it."),
    ) -> None:
        """Re-check certificates, the files against their manifest, optionally the signature and the re-certification
        from the judgments. Exit 0 all verify, 1 any fails, 2 bad input."""
        from biasbound._integrity import load_public_key
        from biasbound._untrusted import shown

        if more and not judgments:
            raise InputError(f"The 'OUTDIR_OR_CERTIFICATE' argument of verify takes one folder or file. Got "
                             f"{len(more) + 1} (name judgment files after --judgments).")
        judgments = [*(judgments or []), *(more or [])]
        key = None if public_key is None else load_public_key(public_key)
        problems, files_line = check_files(target, key, scores)
        try:
            results = verify_outputs(target, scores)
        except DataFormatError as exc:
            # outputs the manifest (or its signature) shows were edited: an unreadable file among them is a failed
            # check, not bad input
            folder = target if target.is_dir() else target.parent
            if exc.path is None or not any(tag == "EDITED" for tag, _ in problems) or \
                    Path(exc.path).resolve().parent != folder.resolve():
                raise
            results = [(shown(Path(exc.path).name), f"cannot be read any more ({exc})", [])]
            judgments = []  # nothing to compare a re-certification with
        from biasbound.pipeline._staging import SUBFOLDER

        if target.is_dir() and (target / SUBFOLDER).is_dir():  # the anchored release's certificates (human labels)
            sub_problems, _ = check_files(target / SUBFOLDER, key)
            problems += [(tag, f"{SUBFOLDER}/{p}") for tag, p in sub_problems]
            results += [(f"{SUBFOLDER}/{label}", err, checked) for label, err, checked in verify_outputs(target / SUBFOLDER)]
        notes: list[str] = []
        redone = recertify(target, judgments, notes) if judgments else []
        failed = 0
        for label, err, checked in results:
            if err is None:
                extra = " incl. data_sha256 and the noise re-draw" if "data_sha256" in checked else \
                    " (no scores.parquet: derived fields only)"
                typer.echo(f"verified  {label}{extra}")
                for w in (c for c in checked if c.startswith("warning: ")):
                    typer.echo(f"          {shown(w)}")
            else:
                failed += 1
                typer.echo(f"FAILED    {label}: {shown(err)}")
        for tag, p in problems:
            typer.echo(f"{tag:<9} {shown(p)}")
        if not problems:
            typer.echo(files_line)
        for line in _prompt_lines(target):
            typer.echo(f"prompt    {shown(line)}")
        for note in notes:
            typer.echo(f"judgments {note}")
        bad_redo = [(n, e) for n, e in redone if e is not None]
        for name, err in bad_redo:
            typer.echo(f"DIFFERS   {shown(name)}: {shown(err)}")
        if redone and not bad_redo:
            typer.echo(f"reproduced {len(redone)} output file(s) from the judgments given (apart from 'created')")
        tail = "" if not bad_redo else (f" on their own, but {len(bad_redo)} output file(s) re-certified from the "
                                        "judgments given differ: these are not the judgments the outputs were "
                                        "certified from")
        typer.echo(f"{len(results) - failed} of {len(results)} certificates verify{tail}.")
        raise typer.Exit(1 if (failed or problems or bad_redo) else 0)

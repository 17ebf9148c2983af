"""`biasbound verify OUTDIR_OR_CERTIFICATE [--scores scores.parquet]`: re-check what `certify` wrote.

Every certificate (the judge's ``certificate*.json`` and the per-model ``certificates.json``) is
re-derived by :meth:`biasbound.certificate.Certificate.verify`: every derived field from the recorded
inputs, the bound against δ and σ against σ_max. When ``scores.parquet`` is there (beside the
certificate unless ``--scores`` names it), each certificate's ``f(D)`` is rebuilt from it exactly as
the pipeline built it (:func:`certificate_data`), so ``data_sha256`` and the seeded noise re-draw of
the released scores are checked too: any edited number fails.

Exit codes (the README's table): 0 = every certificate verifies, 1 = at least one does not (its line
names the field), 2 = bad input (printed as one sentence by the CLI).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from biasbound._exceptions import DataFormatError, InputError

__all__ = ["certificate_data", "read_scores", "register", "verify_outputs"]

#: Columns scores.parquet must hold for each view.
_NEEDED = {"model": ("judge", "model", "original", "certified", "in_batch"),
           "leaderboard": ("judge", "model", "original", "certified_model", "in_batch")}


def read_scores(path: Path) -> pd.DataFrame:
    """scores.parquet as written by ``certify`` (rows in the pipeline's canonical (model, item) order)."""
    import pandas as pd

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
    from biasbound.data._io import read_text

    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"not a JSON certificate ({exc.msg}).", path=str(path), line=exc.lineno) from None
    except (RecursionError, UnicodeDecodeError):
        raise DataFormatError("not a JSON certificate.", path=str(path)) from None


def _certificates(target: Path) -> tuple[list[tuple[str, Any, Path]], Path]:
    """``[(label, Certificate, file)]`` from an output folder or one certificate file, and its folder."""
    from biasbound.certificate import Certificate

    if target.is_dir():
        files = sorted(target.glob("certificate*.json"))
        files = [f for f in files if f.name != "certificates.json"] + [f for f in files if f.name == "certificates.json"]
        if not files:
            raise InputError(f"The 'OUTDIR_OR_CERTIFICATE' argument of verify names the folder {str(target)!r}, which "
                             "holds no certificate.json, certificate-*.json or certificates.json.")
        folder = target
    elif target.is_file():
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
            try:
                cert = Certificate.from_dict(d)
            except (InputError, TypeError, KeyError, ValueError) as exc:
                raise DataFormatError(f"not a biasbound certificate ({exc})", path=str(f)) from None
            scope = cert.scope if isinstance(getattr(cert, "scope", None), Mapping) else {}
            who = f"judge {scope.get('judge')}"
            if scope.get("model") not in (None, "*"):
                who += f", model {scope.get('model')}"
            out.append((f"{f.name}: {who}", cert, f))
    return out, folder


def verify_outputs(target: Path, scores_path: Path | None = None) -> list[tuple[str, str | None, list[str]]]:
    """Verify every certificate of ``target``; ``[(label, failure sentence or None, fields checked)]``."""
    from biasbound._certificate_v1 import CertificateVerificationError

    certs, folder = _certificates(Path(target))
    if scores_path is not None and not Path(scores_path).is_file():
        raise InputError(f"The '--scores' option of verify names {str(scores_path)!r}, which is not a file.")
    sp = Path(scores_path) if scores_path is not None else folder / "scores.parquet"
    scores = read_scores(sp) if sp.is_file() else None
    results = []
    for label, cert, _ in certs:
        kw: dict[str, Any] = {}
        if scores is not None and getattr(cert, "schema_version", 1) >= 2:
            x, y = certificate_data(cert, scores, sp)
            kw = {"scores": x, "certified": y}
        try:
            res = cert.verify(**kw)
            results.append((label, None, list(res.get("checked", []))))
        except CertificateVerificationError as exc:
            results.append((label, str(exc), []))
    return results


def register(app: typer.Typer) -> None:
    @app.command("verify")
    def verify_command(
        target: Path = typer.Argument(..., metavar="OUTDIR_OR_CERTIFICATE",
                                      help="A certify output folder, or one certificate*.json / certificates.json."),
        scores: Path | None = typer.Option(None, "--scores",
                                           help="scores.parquet to check the data hash and noise against "
                                                "(default: beside the certificate, when present)."),
    ) -> None:
        """Re-check certificates (and, with scores.parquet, their data hash and noise). Exit 0 all verify, 1 any fails."""
        results = verify_outputs(target, scores)
        failed = 0
        for label, err, checked in results:
            if err is None:
                extra = " incl. data_sha256 and the noise re-draw" if "data_sha256" in checked else \
                    " (no scores.parquet: derived fields only)"
                typer.echo(f"verified  {label}{extra}")
            else:
                failed += 1
                typer.echo(f"FAILED    {label}: {err}")
        typer.echo(f"{len(results) - failed} of {len(results)} certificates verify.")
        raise typer.Exit(1 if failed else 0)

"""Output folders that never mix two runs: stage in a fresh folder, then move into place.

A certify run writes every file into a new folder beside the target (``.NAME.XXXX.partial``)
and only then moves it into place:

* a target that does not exist yet is the staged folder, renamed (one atomic ``os.replace``);
* an existing target folder keeps every file the run cannot prove it wrote: a file is removed (or replaced)
  only when the folder's manifest (:data:`MANIFEST`) records it as certify's own output — a name certify
  writes, the SHA-256 it still has, and the file identity (device, inode) certify recorded when it moved the
  file there. A manifest planted in the folder, or copied with it, names no file certify moved there, so it
  removes nothing; a folder without a manifest loses nothing. A new output whose name is already taken by
  a file certify cannot prove it wrote is refused in one sentence before anything is moved. Inputs,
  caches, notes and anything else the user keeps there are never touched.

The manifest also holds each file's SHA-256 and, with a signing key, an Ed25519 signature over them
(:func:`biasbound._integrity.manifest_record`): ``biasbound verify`` checks the folder against it.

A run that fails before its outputs are complete removes its staged folder and leaves the
target as it was; a run that completes with some judges failed replaces the previous
outputs, so no certificate of an earlier run stays beside a summary reporting the failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typing import Any

from biasbound._exceptions import InputError
from biasbound._integrity import MANIFEST, manifest_record
from biasbound._validation import arg, cli_command

__all__ = ["CERTIFICATE_NAMES", "MANIFEST", "OUTPUT_LIKE", "OWNED_NAMES", "check_out", "seal_outputs", "staged_output"]

#: The subfolder a certify run with human labels writes the anchored release's outputs into
SUBFOLDER = "anchored"

#: Names a certify run writes: removed from a folder that has no manifest (written before manifests); a file of
#: such a name that the manifest does not list fails ``biasbound verify``.
OWNED_NAMES = re.compile(
    r"^(certificate(-.+)?\.json|certificates\.json|summary\.json|load_report\.json|scores\.parquet|leaderboard\.csv|"
    r"panel_leaderboard\.csv|retention\.json|report\.html|report\.pdf|human\.json|anchored_judgments\.parquet|"
    r"(score_kde|score_distribution|ranking|rank_pairs|sensitivity|judges|frontier|bias_radius)(-.+)?\.png)$"
)

#: The certificate files among them: what ``biasbound verify`` reads from a folder (only those its manifest lists).
CERTIFICATE_NAMES = re.compile(r"^(certificate(-.+)?\.json|certificates\.json)$")
#: Names that look like outputs (any spelling starting with an output's stem, in any case): such a file that the
#: manifest does not list fails ``biasbound verify`` (``certificate_final.json``, ``leaderboard_final.csv``,
#: ``summary_v2.json``, ``report-final.html``), since a reader would take it for one of the outputs.
OUTPUT_LIKE = re.compile(
    r"^(certificate|summary|load_report|scores|leaderboard|panel_leaderboard|retention|report|score_kde|rank_pairs|"
    r"score_distribution|ranking|sensitivity|judges|frontier|bias_radius|run_summary|neighbors)",
    re.IGNORECASE)


def check_out(out: str | Path | None, where: str = "certify") -> Path | None:
    """``out`` as a Path after checking it can be an output folder (not an existing file, no file in the way)."""
    if out is None:
        return None
    name = arg("out", "--out")
    kind = "option" if cli_command() else "parameter"
    where = cli_command() or where
    if not str(out).strip():  # Path("") is ".": the outputs would land in the current folder unasked
        raise InputError(f"The {name!r} {kind} of {where} must name an output folder. Got an empty name instead.")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise InputError(f"The {name!r} {kind} of {where} names {str(path)!r}, which is an existing file; "
                         "give a folder (it is created if needed).")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise InputError(f"The {name!r} {kind} of {where} names {str(path)!r}, but {str(parent)!r} is a file, "
                             "not a folder.")
    return path


def _identity(path: Path) -> list[int] | None:
    """``[device, inode]`` of a regular file (not a link), None otherwise."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return [int(st.st_dev), int(st.st_ino)] if stat.S_ISREG(st.st_mode) else None


def _owned(target: Path) -> list[Path]:
    """The files of ``target`` that an earlier certify run provably wrote there: named in its manifest's digests
    under a name certify writes, with the SHA-256 recorded, and the very file (device, inode) certify moved in.
    Anything else — every file of a folder without a manifest, every file a planted manifest names — is kept."""
    from biasbound._integrity import file_sha256

    manifest = target / MANIFEST
    if _identity(manifest) is None:
        return []
    try:
        rec = json.loads(manifest.read_text(encoding="utf-8"))
    except (ValueError, OSError, RecursionError):
        return []
    digests = rec.get("sha256") if isinstance(rec, dict) else None
    placed = rec.get("placed") if isinstance(rec, dict) else None
    if not isinstance(digests, dict) or not isinstance(placed, dict):
        return []
    files = []
    for name, digest in digests.items():
        p = target / str(name)
        if not OWNED_NAMES.match(str(name)) or p.parent != target:  # never a path out of the folder
            continue
        if _identity(p) is not None and _identity(p) == placed.get(name) and file_sha256(p) == digest:
            files.append(p)
    return files


@contextmanager
def staged_output(out: Path, private_key: Any = None) -> Iterator[Path]:
    """Yield a fresh folder to write a run's outputs into; on success move them into ``out``.

    The manifest lists every file written with its SHA-256 (:func:`biasbound._integrity.manifest_record`),
    signed with ``private_key`` (Ed25519) when given. On an exception the staged folder is removed and
    ``out`` is left untouched.
    """
    out = Path(out)
    check_out(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    except OSError as exc:  # a read-only or virtual file system (/proc), no permission: say which option
        where = cli_command() or "certify"
        what = arg("'out' parameter", "'--out' option")
        raise InputError(f"The {what} of {where} names {str(out)!r}, but no folder can be written in "
                         f"{str(out.parent)!r} ({exc.strerror or exc}); give a writable folder.") from None
    try:
        yield stage
        files = sorted(p.name for p in stage.iterdir() if p.is_file())
        existed = out.exists()
        owned = {p.name for p in _owned(out)} if existed else set()
        if existed:
            for name in files:
                if os.path.lexists(out / name) and name not in owned:
                    raise InputError(f"The {arg(repr('out') + ' parameter', repr('--out') + ' option')} of "
                                     f"{cli_command() or 'certify'} names {str(out)!r}, which holds {name!r}, a file "
                                     f"certify cannot prove it wrote there (not recorded in the folder's {MANIFEST} as the "
                                     "file certify moved in: a user's file, a copied folder, or outputs of an older "
                                     "biasbound); move it away or give another folder.")
        # each file keeps its identity (device, inode) when moved within a file system: recorded, it tells the next
        # run which files of the folder it may replace
        target_dev = os.stat(out if existed else out.parent).st_dev
        record = manifest_record(stage, files, private_key,
                                 placed={n: [target_dev, int(os.lstat(stage / n).st_ino)] for n in files}
                                 if os.stat(stage).st_dev == target_dev else None)
        (stage / MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if not existed:
            os.replace(stage, out)
            return
        for name in sorted(owned - set(files)):
            (out / name).unlink(missing_ok=True)
        for name in [*files, MANIFEST]:
            os.replace(stage / name, out / name)
        # the anchored release's own outputs folder (certify with human labels): replaced whole; one left by an
        # earlier run of this folder (it holds a manifest) goes, so the folder never mixes two runs
        sub, old_sub = stage / SUBFOLDER, out / SUBFOLDER
        if old_sub.is_dir() and (old_sub / MANIFEST).is_file():
            shutil.rmtree(old_sub)
        if sub.is_dir() and not old_sub.exists():
            os.replace(sub, old_sub)
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def seal_outputs(folder: Path, paths: Any, private_key: Any = None) -> None:
    """Add the files ``paths`` that lie directly in ``folder`` (``biasbound run``'s judgments.parquet,
    neighbors.jsonl, run_summary.json, ...) to the folder's manifest beside certify's outputs, re-hash every listed
    file and sign the whole with ``private_key`` when given, so that the manifest lists every file the run wrote."""
    from biasbound._integrity import read_manifest

    folder = Path(folder)
    rec, _ = read_manifest(folder)
    names = set(map(str, rec["sha256"])) if rec is not None else set()
    placed = dict(rec.get("placed") or {}) if rec is not None and isinstance(rec.get("placed"), dict) else {}
    root = folder.resolve()
    for p in paths:
        if not isinstance(p, (str, Path)) or _identity(Path(p)) is None:
            continue
        try:  # a file of the folder or of a subfolder (model_judgment/JUDGE/MODEL.jsonl), never one outside it
            rel = Path(p).resolve().relative_to(root)
        except ValueError:
            continue
        names.add(rel.as_posix())
    names.discard(MANIFEST)
    names = {n for n in names if _identity(folder / n) is not None}
    placed = {n: placed[n] for n in names if n in placed}
    record = manifest_record(folder, sorted(names), private_key, placed=placed)
    (folder / MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

"""Output folders that never mix two runs: stage in a fresh folder, then move into place.

A certify run writes every file into a new folder beside the target (``.NAME.XXXX.partial``)
and only then moves it into place:

* a target that does not exist yet is the staged folder, renamed (one atomic ``os.replace``);
* an existing target folder keeps every file the run does not own: the files listed in its
  manifest (:data:`MANIFEST`, written by the previous run) are removed — and, for a folder
  written before manifests existed, the names a certify run writes — then the new files are
  moved in and the new manifest is written. Inputs, caches and anything else the user keeps
  there are never touched.

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
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typing import Any

from biasbound._exceptions import InputError
from biasbound._integrity import MANIFEST, manifest_record
from biasbound._validation import arg, cli_command

__all__ = ["MANIFEST", "OWNED_NAMES", "check_out", "staged_output"]

#: The subfolder a certify run with human labels writes the anchored release's outputs into
SUBFOLDER = "anchored"

#: Names a certify run writes: removed from a folder that has no manifest (written before manifests); a file of
#: such a name that the manifest does not list fails ``biasbound verify``.
OWNED_NAMES = re.compile(
    r"^(certificate(-.+)?\.json|certificates\.json|summary\.json|load_report\.json|scores\.parquet|leaderboard\.csv|"
    r"panel_leaderboard\.csv|retention\.json|report\.html|report\.pdf|human\.json|anchored_judgments\.parquet|"
    r"(score_kde|score_distribution|ranking|sensitivity|judges|frontier|bias_radius)(-.+)?\.png)$"
)


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


def _owned(target: Path) -> list[Path]:
    """The files of ``target`` that the previous run wrote (its manifest), or that a certify run writes."""
    manifest = target / MANIFEST
    if manifest.is_file():
        try:
            listed = json.loads(manifest.read_text(encoding="utf-8")).get("files", [])
        except (ValueError, OSError, AttributeError):
            listed = []
        files = []
        for rel in listed:
            p = (target / str(rel)).resolve()
            if p.parent == target.resolve() and p.is_file():  # never follow a path outside the folder
                files.append(p)
        return files + [manifest]
    return [p for p in target.iterdir() if p.is_file() and OWNED_NAMES.match(p.name)]


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
        record = manifest_record(stage, files, private_key)
        (stage / MANIFEST).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        if not out.exists():
            os.replace(stage, out)
            return
        for old in _owned(out):
            old.unlink(missing_ok=True)
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

"""What binds a certify run's outputs to its data and to whoever issued them.

* :func:`judgments_digest` — SHA-256 of every judgment a judge's certification used (originals and
  every neighbour row: swaps, variants, reruns), canonicalised (rows sorted; names as sorted JSON lists,
  row fields as fixed-width little-endian arrays, the score as float64 with one NaN): one digest per model
  and the judge's digest over them (a two-level tree), written as ``judgments_sha256`` in the certificates.
* The outputs manifest :data:`MANIFEST` (``.biasbound-outputs.json``): the files a run wrote and the
  SHA-256 of each; :func:`check_manifest` re-hashes them (an edited ``leaderboard.csv`` fails, named).
* Optional Ed25519 signatures (the ``cryptography`` package): :func:`generate_keypair` writes a
  private key (PKCS#8 PEM, mode 0600) and its public key (SubjectPublicKeyInfo PEM); a signed manifest
  carries ``signature`` = Ed25519 over the canonical JSON of its other fields, so every byte of every
  listed file is signed through its digest. The private key is read, used and never written anywhere.

Keyless digests catch accidents only (anyone can recompute them); ``biasbound verify --judgments``
proves a certificate follows from the judgments; a signature proves who issued the outputs.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from biasbound._exceptions import InputError

__all__ = [
    "MANIFEST",
    "PUBLIC_KEY_ENV",
    "SIGN_KEY_ENV",
    "check_manifest",
    "file_sha256",
    "generate_keypair",
    "judgments_digest",
    "load_private_key",
    "load_public_key",
    "manifest_record",
    "manifest_signed",
    "read_manifest",
    "reading_options",
    "rewrite_listed",
]

#: The file listing what the last run wrote into an output folder, with each file's SHA-256.
MANIFEST = ".biasbound-outputs.json"
#: Environment variables naming the key files when ``--sign-key`` / ``--public-key`` are not given.
SIGN_KEY_ENV = "BIASBOUND_SIGN_KEY"
PUBLIC_KEY_ENV = "BIASBOUND_PUBLIC_KEY"
#: Manifest format (``files`` alone, without digests, was written before it).
MANIFEST_VERSION = 1

_KEYS = ("model", "item_id", "variant", "rerun", "game")


# --------------------------------------------------------------------------- judgments
def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=True)


def _lex_order(keys: tuple[Any, ...]) -> tuple[Any, bool]:
    """``(np.lexsort(keys), whether two rows have every key equal)`` (integer keys, the last one primary).

    When the keys fit one int64 in mixed radix (each offset by its minimum), that combined key, which orders rows
    exactly as the tuple does, is sorted once (a stable argsort, as lexsort is stable: the same permutation) and
    compared once — or, when its range is at most twice the rows and no key repeats, placed in a table over the range
    (the same permutation, found in O(rows + range)); otherwise lexsort and a comparison per key."""
    import numpy as np

    n = len(keys[0])
    if n:
        lows = [int(k.min()) for k in keys]
        spans = [int(k.max()) - lo + 1 for k, lo in zip(keys, lows)]
        if math.prod(spans) < 2**62:
            combined = np.zeros(n, dtype=np.int64)
            for k, lo, span in zip(keys[::-1], lows[::-1], spans[::-1]):  # the primary key first
                if span == 1:  # one value: no digit
                    continue
                combined *= span
                combined += k
                if lo:
                    combined -= lo
            span = math.prod(spans)
            if span <= 2 * n:  # a table over the key range: distinct keys are placed in order, no sort of the rows
                index = np.int32 if n < 2**31 else np.int64  # row numbers in half the memory when they fit
                table = np.full(span, -1, dtype=index)
                table[combined] = np.arange(n, dtype=index)
                placed = table[table >= 0]
                if len(placed) == n:  # no key repeats: ``placed`` is the (unique) sorted order
                    return placed, False
                del table, placed
            order = np.argsort(combined, kind="stable")
            c = combined[order]
            return order, bool(n > 1 and (c[1:] == c[:-1]).any())
    order = np.lexsort(keys)
    return order, bool(n > 1 and np.logical_and.reduce([k[order][1:] == k[order][:-1] for k in keys]).any())


def judgments_digest(frame: Any, codes: Mapping[str, tuple[Any, Any]] | None = None) -> tuple[str, dict[str, str]]:
    """``(judge digest, {model: digest})`` of one judge's judgment rows (pandas DataFrame in the contract schema).

    A model's digest is the SHA-256 of: the compact JSON ``{"judge", "model", "item_ids", "variants"}`` (the sorted
    distinct item ids and variants of its rows), a newline, then its rows sorted by (item_id, variant, rerun, game,
    score) as five little-endian arrays — item and variant as int64 indices into those lists, rerun and game int64,
    the score float64 (``NaN`` for a missing judgment, ``-0.0`` written as ``0.0``). The judge's digest is the
    SHA-256 of the compact, key-sorted JSON ``{model: digest}``, so one model's digest is checked without the
    others' rows. Row order in the input does not matter; every other difference in a row does.

    ``codes`` optionally maps ``model``, ``item_id`` or ``variant`` to ``(row codes, sorted distinct texts)`` made
    by the caller (the pipeline's one factorisation of the judge's table); a column's are used when it holds no
    missing value, where they equal the sorted factorisation of its text below.
    """
    import numpy as np
    import pandas as pd

    n = len(frame)

    def column(c: str, default: Any) -> Any:
        return frame[c] if c in frame.columns else pd.Series([default] * n, index=frame.index)

    judge_col = column("judge", "")
    if isinstance(judge_col.dtype, pd.CategoricalDtype) and not judge_col.hasnans:  # a coded column: its texts
        present = np.flatnonzero(np.bincount(judge_col.array.codes, minlength=len(judge_col.cat.categories)))
        judge_col = pd.Series(judge_col.cat.categories[present])
    judges = sorted(set(map(str, pd.unique(judge_col.astype(str)))))

    def sorted_codes(c: str, default: str) -> tuple[Any, Any]:
        values = column(c, default)
        if codes is not None and c in codes and not values.hasnans:
            return codes[c][0], codes[c][1].tolist()  # each row's index into the sorted distinct texts, as below
        return pd.factorize(values.astype(str), sort=True)

    m_codes, models = sorted_codes("model", "")
    i_codes, items = sorted_codes("item_id", "")
    v_codes, variants = sorted_codes("variant", "original")
    rerun = column("rerun", 0).to_numpy(dtype="<i8")
    game = column("game", 0).to_numpy(dtype="<i8")
    score = column("score", np.nan).to_numpy(dtype="<f8") + 0.0  # -0.0 -> 0.0
    score[np.isnan(score)] = np.nan  # one bit pattern for a missing judgment
    models, items, variants = (np.asarray(list(x), dtype=object) for x in (models, items, variants))
    # (model, item, variant, rerun, game) is unique in a judgment table (pipeline.certify refuses a key given twice);
    # the score breaks ties all the same, so the order never depends on the input's row order
    keys = (game, rerun, v_codes, i_codes, m_codes)
    order, tied = _lex_order(keys)
    if n > 1 and tied:
        order = np.lexsort((score, *keys))
    per_model: dict[str, str] = {}
    sm, si = m_codes[order], i_codes[order]
    sv = v_codes[order] if len(variants) != 1 else None  # one variant: every row's is it
    cuts = [0, *(np.flatnonzero(sm[1:] != sm[:-1]) + 1).tolist(), n] if n else [0]
    # a model's sorted distinct items and each row's index among them: its rows are sorted by item within the
    # model, so the distinct ones are where the item changes; its variants through a (model × variant) table
    first = np.ones(n, dtype=bool)
    first[1:] = (sm[1:] != sm[:-1]) | (si[1:] != si[:-1])
    starts = np.asarray(cuts[:-1], dtype=np.int64)
    seen = np.zeros((len(models), len(variants)), dtype=bool)
    if len(variants) == 1:  # one variant: every model's list is it, every row's index 0
        seen[sm[starts], 0] = True  # the models present: where each model's sorted rows start
        local_v = np.zeros(n, dtype=np.int64)
    else:
        if sv is None:  # cannot happen: made above unless there is exactly one variant
            raise RuntimeError("variant codes missing for a table of several variants")
        seen[sm, sv] = True
        local_v = (np.cumsum(seen, axis=1) - 1)[sm, sv] if n else sv
    judge_text, ids_codes, ids_text = canonical_json(judges[0] if len(judges) == 1 else judges), None, ""
    one_variant, no_rerun = len(variants) == 1, not rerun.any()
    zero = np.zeros(int(np.diff(cuts).max()) if n else 0, dtype="<i8")
    for a, b in zip(cuts[:-1], cuts[1:]):
        idx = order[a:b]
        it, vt = si[a:b][first[a:b]], np.flatnonzero(seen[sm[a]])  # sorted global codes = sorted names
        if ids_codes is None or not np.array_equal(it, ids_codes):  # models judged on the same items: encoded once
            ids_codes, ids_text = it, canonical_json(items[it].tolist())
        # canonical_json({"judge", "model", "item_ids", "variants"}) written out: its keys in sorted order, each value's text
        head = (f'{{"item_ids":{ids_text},"judge":{judge_text},"model":{canonical_json(str(models[sm[a]]))},'
                f'"variants":{canonical_json(variants[vt].tolist())}}}')
        h = hashlib.sha256((head + "\n").encode("utf-8"))
        # each array's bytes straight from its buffer (no copy); an all-zero column as a view of one zero block
        # each row's index among its model's distinct items: the item changes count from the model's first row
        local_i = np.cumsum(first[a:b], dtype="<i8")
        local_i -= 1
        h.update(local_i.data)
        h.update((zero[:b - a] if one_variant else np.ascontiguousarray(local_v[a:b], dtype="<i8")).data)
        h.update((zero[:b - a] if no_rerun else np.ascontiguousarray(rerun[idx], dtype="<i8")).data)
        h.update(np.ascontiguousarray(game[idx], dtype="<i8").data)
        h.update(np.ascontiguousarray(score[idx], dtype="<f8").data)
        per_model[str(models[sm[a]])] = h.hexdigest()
    return digest_root(per_model), per_model


def digest_root(per_model: Mapping[str, str]) -> str:
    """A judge's digest from its models' digests (:func:`judgments_digest`): the SHA-256 of their compact, key-sorted
    JSON, so a judge read in blocks of whole models has the digest of its whole table."""
    return sha256_text(canonical_json(dict(per_model)))


def reading_options(judgments: Any) -> dict[str, Any] | None:
    """How ``biasbound verify --judgments`` can read the inputs again as ``pipeline.certify`` got them: the CLI's
    reading options (``reader: "certify"``), or for a one-source JudgmentSet (``biasbound run``'s judgments.parquet,
    a Python ``from_frame``) its source name and scale (``reader: "frame"``); None for a bare DataFrame."""
    opts = getattr(judgments, "options", None)
    if isinstance(opts, Mapping):
        return {"reader": "certify", **opts}
    reading = getattr(judgments, "reading", None)  # a table read in blocks (biasbound.data.blocked): its own record
    if isinstance(reading, Mapping):
        return dict(reading)
    rep = getattr(judgments, "report", None)
    sources, scale = getattr(rep, "sources", None), getattr(rep, "scale", None)
    if sources is not None and len(sources) == 1 and scale is not None:
        return {"reader": "frame", "source": str(sources[0]), "scale": [float(scale[0]), float(scale[1])]}
    return None


# --------------------------------------------------------------------------- files and the manifest
def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _payload(files: Mapping[str, str]) -> dict[str, Any]:
    return {"manifest_version": MANIFEST_VERSION, "files": sorted(files), "sha256": dict(sorted(files.items()))}


def manifest_record(folder: Path, names: Iterable[str], private_key: Any = None, *,
                    placed: Mapping[str, list[int]] | None = None) -> dict[str, Any]:
    """The manifest of ``names`` in ``folder``: their digests, signed with ``private_key`` when given.

    ``placed`` records each file's ``[device, inode]`` where certify moved it: the next certify run into the folder
    replaces only files that are still those very files with those digests (a manifest copied or planted there
    names none)."""
    rec = _payload({n: file_sha256(folder / n) for n in names})
    if placed is not None:
        rec["placed"] = {n: list(placed[n]) for n in sorted(placed)}
    if private_key is not None:
        from cryptography.hazmat.primitives import serialization

        pub = private_key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        rec["signature"] = {"algorithm": "ed25519", "public_key": base64.b64encode(pub).decode("ascii"),
                            "value": base64.b64encode(private_key.sign(canonical_json(rec).encode("utf-8"))).decode("ascii")}
    return rec


def rewrite_listed(folder: Path, name: str, write: Any) -> Any:
    """Call ``write()`` to re-write the file ``name`` of a finished output folder on purpose (the demo's report.html
    with its comparison) and record its new digest in the manifest; returns what ``write()`` returns. A file of a
    signed manifest is refused before anything is written: re-writing it would break the signature."""
    path = folder / MANIFEST
    rec: Any = None
    if path.is_file():
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            rec = None
    listed = isinstance(rec, dict) and isinstance(rec.get("sha256"), dict) and name in rec["sha256"]
    if listed and "signature" in rec:
        raise InputError(f"{folder / name} is part of signed outputs and is never re-written; re-run certify.")
    result = write()
    if listed:
        rec["sha256"][name] = file_sha256(folder / name)
        if isinstance(rec.get("placed"), dict) and name in rec["placed"]:
            st = os.lstat(folder / name)
            rec["placed"][name] = [int(st.st_dev), int(st.st_ino)]
        path.write_text(json.dumps(rec, indent=2) + "\n", encoding="utf-8")
    return result


def read_manifest(folder: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(manifest record, None)`` of ``folder``, or ``(None, why not)`` (absent, not a regular file, not readable
    JSON under the rules of :func:`biasbound._untrusted.load_json`, no digests)."""
    from biasbound._exceptions import DataFormatError
    from biasbound._untrusted import load_json

    path = folder / MANIFEST
    if not os.path.lexists(path):
        return None, (f"the folder has no {MANIFEST} (the outputs manifest certify writes), so its files cannot be "
                      "checked")
    try:
        rec = load_json(path, folder=folder)
    except DataFormatError as exc:
        return None, f"{MANIFEST} cannot be read as a manifest ({exc.reason})"
    if not isinstance(rec, dict) or not isinstance(rec.get("sha256"), dict) or not isinstance(rec.get("files"), list):
        return None, (f"{MANIFEST} lists no file digests (written by a biasbound before outputs were hashed; "
                      "re-run certify)")
    return rec, None


def check_manifest(folder: Path, public_key: Any = None, *,
                   owned: Any = None) -> tuple[list[tuple[str, str]], list[str], bool]:
    """Re-hash every file the folder's manifest lists.

    Returns ``(problems, checked, signed)``: one ``(tag, sentence)`` per problem — ``EDITED`` for a file changed,
    a file not listed although its name looks like an output, a signature that does not verify; ``MISSING`` for
    no manifest, no digests, no signature, a listed file absent — the names whose digest matched, and whether a
    signature was checked. ``owned`` is a compiled pattern of the names that look like outputs (unlisted ones are
    problems, whatever kind of file they are). With ``public_key`` a manifest without a valid signature by that key
    is a problem.
    """
    import stat

    from biasbound._untrusted import shown

    rec, why = read_manifest(folder)
    if rec is None:
        return [("MISSING", str(why))], [], False
    digests = rec["sha256"]
    problems: list[tuple[str, str]] = []
    if sorted(map(str, rec["files"])) != sorted(map(str, digests)):
        problems.append(("EDITED", f"{MANIFEST}: its 'files' and 'sha256' lists name different files"))
    signed = False
    if public_key is not None:
        sig = rec.get("signature")
        if not isinstance(sig, dict) or not isinstance(sig.get("value"), str):
            problems.append(("MISSING", f"{MANIFEST} is not signed, and --public-key asks for a signature"))
        else:
            from cryptography.exceptions import InvalidSignature

            payload = {k: v for k, v in rec.items() if k != "signature"}
            try:
                public_key.verify(base64.b64decode(sig["value"], validate=True), canonical_json(payload).encode("utf-8"))
                signed = True
            except (InvalidSignature, ValueError):
                problems.append(("EDITED", f"{MANIFEST}: the signature does not verify with the public key given (the "
                                           "manifest was edited after signing, or another key signed it)"))
    checked: list[str] = []
    root = folder.resolve()
    for name, digest in sorted(digests.items()):
        p = folder / str(name)
        try:
            st = os.lstat(p)
        except OSError:
            st = None
        if not _inside(str(name)) or (st is not None and p.resolve() != root.joinpath(*str(name).split("/"))):
            problems.append(("EDITED", f"{MANIFEST} lists {shown(name)!r}, which is not a file of this folder"))
        elif st is None:
            problems.append(("MISSING", f"{shown(name)} is listed in {MANIFEST} but missing"))
        elif not stat.S_ISREG(st.st_mode):
            problems.append(("EDITED", f"{shown(name)} is listed in {MANIFEST} but is no longer a regular file (a link, "
                                       "a pipe or a device stands in its place)"))
        elif file_sha256(p) != digest:
            problems.append(("EDITED", f"{shown(name)} was changed after certify wrote it (its SHA-256 differs from "
                                       f"{MANIFEST})"))
        else:
            checked.append(str(name))
    if owned is not None:
        for p in sorted(folder.iterdir()):
            if owned.match(p.name) and p.name not in digests and not p.is_dir():
                problems.append(("EDITED", f"{shown(p.name)} is not listed in {MANIFEST} (it was not written by this "
                                           "certify run; remove it, or it would be read as one of the outputs)"))
    return problems, checked, signed


def _inside(name: str) -> bool:
    """Whether a manifest name is a relative path inside its folder (``model_judgment/judge/model.jsonl`` for the
    files ``biasbound run`` writes into subfolders): no absolute path, no ``..`` or ``.`` part, no empty part."""
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and "\\" not in name and all(q not in ("", ".", "..") for q in parts)


def manifest_signed(folder: Path) -> bool:
    """Whether the folder's manifest carries a signature (checked or not)."""
    rec, _ = read_manifest(folder)
    return isinstance(rec, dict) and isinstance(rec.get("signature"), dict)


# --------------------------------------------------------------------------- keys
def _load_key(path: str | Path, private: bool, where: str) -> Any:
    """The Ed25519 key (private or public) of a PEM file, or one sentence naming the option and the file."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

    option, env, kind, what = (("--sign-key", SIGN_KEY_ENV, Ed25519PrivateKey,
                                "an unencrypted Ed25519 private key in PEM form (the .key file 'biasbound keygen' writes)")
                               if private else
                               ("--public-key", PUBLIC_KEY_ENV, Ed25519PublicKey,
                                "an Ed25519 public key in PEM form (the .pub file 'biasbound keygen' writes)"))
    p = Path(path)
    if p.exists():  # a pipe or a device would block or never end (a missing file is said below)
        from biasbound._exceptions import DataFormatError
        from biasbound._untrusted import regular_file

        try:
            regular_file(p)
        except DataFormatError as exc:
            raise InputError(f"The {option!r} option of {where} names {str(p)!r}, which {exc.reason}") from None
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"The {option!r} option of {where} names {str(p)!r}, which cannot be read "
                         f"({exc.strerror or exc}).") from None
    try:
        key = (serialization.load_pem_private_key(data, password=None) if private
               else serialization.load_pem_public_key(data))
    except (ValueError, TypeError, UnicodeDecodeError):
        key = None
    if not isinstance(key, kind):
        raise InputError(f"The {option!r} option of {where} (or {env}) names {str(path)!r}, which is not {what}.")
    mode = p.stat().st_mode & 0o777
    if private and mode & 0o077 and str(p.resolve()) not in _WARNED:
        _WARNED.add(str(p.resolve()))  # once per key and process (certify reads it where it checks and where it signs)
        _warn(f"the private key {str(p)!r} ({option}) can be read by other users (mode {mode:04o}); "
              f"restrict it with 'chmod 600 {p}'.")
    return key


_WARNED: set[str] = set()


def _warn(message: str) -> None:
    """A warning on stderr for a command-line user, a Python warning otherwise."""
    from biasbound._validation import cli_command

    if cli_command() is None:
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)
    else:
        import sys

        print(f"warning: {message}", file=sys.stderr)


def load_private_key(path: str | Path, *, where: str = "certify") -> Any:
    """The Ed25519 private key of a PEM file (``--sign-key``, or the :data:`SIGN_KEY_ENV` variable)."""
    return _load_key(path, True, where)


def load_public_key(path: str | Path, *, where: str = "verify") -> Any:
    """The Ed25519 public key of a PEM file (``--public-key``, or the :data:`PUBLIC_KEY_ENV` variable)."""
    return _load_key(path, False, where)


def generate_keypair(folder: str | Path, name: str = "biasbound-signing") -> tuple[Path, Path]:
    """Write ``NAME.key`` (private, mode 0600, created exclusively) and ``NAME.pub`` into ``folder``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    if not str(folder).strip():  # Path("") is ".": the keys would land in the current folder unasked
        raise InputError("The '--out' option of keygen must name a folder for the keys. Got an empty name instead.")
    out = Path(folder)
    if out.exists() and not out.is_dir():
        raise InputError(f"The '--out' option of keygen names {str(out)!r}, which is an existing file; give a folder.")
    try:
        out.mkdir(parents=True, exist_ok=True)
        if not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise InputError(f"The '--out' option of keygen names {str(out)!r}, where no key can be written "
                         f"({exc.strerror or exc}); give a writable folder.") from None
    priv_path, pub_path = out / f"{name}.key", out / f"{name}.pub"
    for p in (priv_path, pub_path):
        if p.exists():
            raise InputError(f"The '--out' option of keygen names a folder that already holds {p.name}; keys are never "
                             "overwritten (move it away or give another folder).")
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    fd = os.open(priv_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
    os.chmod(priv_path, 0o600)  # whatever the umask
    pub_path.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv_path, pub_path

"""AlpacaEval annotations → judgment tables.

AlpacaEval writes one ``annotations.json`` per (model, annotator): ``results/<model>/<annotator>/``
in its repository, ``<output_path>/<annotator>/`` (or ``<output_path>/``) from its CLI. Each
file is a JSON array of records with ``instruction``, ``output_1``, ``generator_1`` (the
baseline), ``output_2``, ``generator_2`` (the evaluated model), ``annotator`` and
``preference``.

Mapping onto the judgment table:

==================  =========================================================================
judge               ``annotator`` (the folder name when a record has none)
model               ``generator_2``; ``<m>_verbose`` / ``<m>_concise`` become model ``<m>``
                    with variant ``verbose`` / ``concise`` when ``<m>`` is loaded too
item_id             ``i`` + the first 12 hex digits of SHA-1(instruction): AlpacaEval has no
                    item id and matches outputs by instruction text
variant             ``original``, or ``verbose`` / ``concise`` (above)
rerun, game         0, 0: one judgment per pair; AlpacaEval randomises the presentation
                    order per annotation and does not record it, so there is no swap pair
score               ``preference - 1`` for a preference in [1, 2] (2 = the model's output
                    preferred; the weighted annotators' continuous preferences keep their
                    value); 0 (AlpacaEval's legacy draw code) → 0.5; null / NaN → missing
==================  =========================================================================

Model names are the records' ``generator_2``; when a file sits in AlpacaEval's
``results/<model>/<annotator>/`` layout and the folder names another model, the reader says so.
Native number ``alpaca_eval_win_rate`` (AlpacaEval's ``get_winrate``): 100 × the mean of
``preference − 1`` over the (annotator, model)'s preferences in [1, 2] (0 counted as 1.5), the
original runs only. Native number ``alpaca_eval_length_controlled_win_rate`` (AlpacaEval 2's headline): see
:mod:`biasbound.data.alpaca_lc`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biasbound._exceptions import DataFormatError
from biasbound._validation import arg
from biasbound.data.tables import JudgmentSet, check_duplicates, finish_table
from biasbound.data._common import Native, Notes, attach, iter_json_array
from biasbound.data.alpaca_lc import add_length_controlled

__all__ = ["SCORE_RULE", "VARIANT_SUFFIXES", "find_annotation_files", "is_annotation_file", "item_id", "load_alpaca_eval"]

#: Model-name suffixes AlpacaEval uses for its length-controlled prompt variants.
VARIANT_SUFFIXES: tuple[str, ...] = ("verbose", "concise")

WIN_RATE_RULE = ("alpaca_eval_win_rate: AlpacaEval get_winrate: 100 x mean(preference - 1) over the preferences in [1, 2] "
                 "(0 = draw counted as 1.5; null dropped), per annotator and model, the original run only")

SCORE_RULE = ("AlpacaEval preference p in [1, 2] -> score p - 1 (1 = the model's output (generator_2) preferred over "
              "the baseline (generator_1); continuous for weighted annotators); p = 0 (legacy draw code) -> 0.5; "
              "null/NaN -> missing")

_NAMES = ("annotations.json", "annotations.json.gz")


def item_id(instruction: str) -> str:
    """The item id of an AlpacaEval instruction: ``i`` + 12 hex digits of its SHA-1."""
    return "i" + hashlib.sha1(instruction.encode("utf-8")).hexdigest()[:12]


def is_annotation_file(path: Path) -> bool:
    """Whether ``path`` looks like an AlpacaEval annotations file (a JSON array of records with
    ``generator_1``, ``generator_2`` and ``preference``), judged from its first record."""
    from biasbound.data._io import open_text

    try:
        with open_text(path) as fh:
            head = fh.read(65536)
    except (OSError, UnicodeDecodeError):
        return False
    s = head.lstrip()
    if not s.startswith("["):
        return False
    return all(f'"{k}"' in head for k in ("generator_1", "generator_2", "preference"))


def find_annotation_files(path: Path) -> list[Path]:
    """Every ``annotations.json`` under ``path`` (a results root, a model or annotator folder)."""
    if path.is_file():
        return [path]
    found = sorted(p for name in _NAMES for p in path.rglob(name) if p.is_file())
    return found


def _text_len(value: Any) -> float:
    """``len`` of an output text as AlpacaEval's GLM takes it (``str.len()``); NaN when it is no text."""
    return float(len(value)) if isinstance(value, str) else math.nan


def _preference(value: Any) -> float | None:
    """Score of one preference; None when the value is not a preference AlpacaEval writes."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    if math.isnan(v):
        return math.nan
    if v == 0.0:
        return 0.5
    if 1.0 <= v <= 2.0:
        return v - 1.0
    return None


def load_alpaca_eval(path: str | Path | Sequence[str | Path], *, skip_bad: bool = False) -> JudgmentSet:
    """Load AlpacaEval annotation files as a judgment table.

    Parameters
    ----------
    path:
        An ``annotations.json`` file, a folder searched recursively for them (AlpacaEval's
        ``results/`` root, a ``results/<model>/`` or ``results/<model>/<annotator>/`` folder,
        the output folder of ``alpaca_eval evaluate``), or a list of such paths.
    skip_bad:
        Skip (and list) malformed records instead of raising.

    Returns
    -------
    JudgmentSet
        One row per record (game 0, rerun 0); the mapping is in the module docstring. The
        reader's notes (score rule, what it could not map) are in ``frame.attrs["integration"]``.

    Raises
    ------
    DataFormatError
        Naming the file and line of a record that is not an object, lacks ``generator_2``,
        ``instruction`` or ``preference``, or holds a preference outside {0} ∪ [1, 2]; a
        duplicated (annotator, model, instruction) judgment; a folder without annotations.
    """
    paths = [Path(p) for p in ([path] if isinstance(path, (str, Path)) else path)]
    files: list[Path] = []
    for p in paths:
        if not p.exists():
            raise DataFormatError("no such file or folder.", path=str(p))
        found = find_annotation_files(p)
        if not found:
            raise DataFormatError("holds no AlpacaEval annotations.json (searched its sub-folders too).", path=str(p))
        files.extend(found)
    notes = Notes("alpaca_eval", rule=SCORE_RULE)
    notes.remark("presentation order: AlpacaEval randomises which output is shown first and does not record it, "
                 "so there is no swap neighbour")
    cols, skipped = _read_annotations(files, skip_bad, notes)
    frame = pd.DataFrame(cols)
    if frame.empty:
        raise DataFormatError("holds no usable annotation record.", path=str(paths[0]))
    _models_and_variants(frame, notes)
    baselines = frame.dropna(subset=["baseline"]).groupby(["judge", "model"])["baseline"].nunique()
    several = baselines[baselines > 1]
    if len(several):
        (j, m) = several.index[0]
        raise DataFormatError(
            f"model {m!r} is compared with {int(several.iloc[0])} different baselines (generator_1) by annotator {j!r}; "
            "load the annotations of one baseline at a time.", path=str(paths[0]))
    for b in sorted(frame["baseline"].dropna().unique()):
        notes.baselines.append(str(b))
        notes.remark(f"baseline (generator_1): {b}")
    native = Native("alpaca_eval_win_rate", WIN_RATE_RULE)
    orig = frame[(frame["variant"] == "original") & frame["score"].notna()]
    for (j, m), sc in orig.groupby(["judge", "model"])["score"]:
        native.values[(str(j), str(m))] = 100.0 * float(sc.mean())
    notes.native.append(native)
    add_length_controlled(frame, [p if p.is_dir() else p.parent for p in paths], notes)
    frame["rerun"] = 0
    frame["game"] = 0
    frame = frame.drop(columns=["generator", "baseline", "position", "len_1", "len_2", "preference"])
    frame = check_duplicates(frame, skip_bad, skipped)
    js = finish_table(frame, skipped=skipped, scale=(0.0, 1.0), scale_inferred=False, sources=[str(f) for f in files])
    return attach(js, notes)


def _read_annotations(files: list[Path], skip_bad: bool, notes: Notes) -> tuple[dict[str, list[Any]],
                                                                              list[tuple[str, int | None, str]]]:
    """The records of ``files`` as columns (judge, generator, baseline, item_id, score, verdict, source, line), and
    the records skipped; what the folders and the records say differently is remarked."""
    cols: dict[str, list[Any]] = {k: [] for k in ("judge", "generator", "baseline", "item_id", "score", "verdict", "source", "line",
                                                  "position", "len_1", "len_2", "preference")}
    skipped: list[tuple[str, int | None, str]] = []
    folder_mismatch: dict[tuple[str, str], int] = {}
    other_annotator: dict[tuple[str, str], int] = {}  # (the annotator folder's name, the record's annotator) -> records
    for file in files:
        src = str(file)
        folder_annotator = file.parent.name
        # results/<model>/<annotator>/annotations.json: the folder names the model too
        folder_model = file.parent.parent.name if file.parent.parent != file.parent else None
        for position, (ln, rec) in enumerate(iter_json_array(file)):
            why, score = _check_record(rec)
            if why is not None:
                if not skip_bad:
                    raise DataFormatError(f"{why}; fix the record or {arg('pass skip_bad=True', 'pass --skip-bad')}.",
                                          path=src, line=ln)
                skipped.append((src, ln, why))
                continue
            annotator = rec.get("annotator")
            if isinstance(annotator, str) and annotator and annotator != folder_annotator:
                other_annotator[(folder_annotator, annotator)] = other_annotator.get((folder_annotator, annotator), 0) + 1
            if (folder_model and isinstance(annotator, str) and annotator == folder_annotator
                    and rec["generator_2"] != folder_model):
                key = (folder_model, rec["generator_2"])
                folder_mismatch[key] = folder_mismatch.get(key, 0) + 1
            cols["judge"].append(str(annotator) if isinstance(annotator, str) and annotator else folder_annotator)
            cols["generator"].append(rec["generator_2"])
            base = rec.get("generator_1")
            cols["baseline"].append(None if base is None else str(base))
            cols["item_id"].append(item_id(rec["instruction"]))
            cols["score"].append(score)
            pref = rec["preference"]
            cols["verdict"].append(None if pref is None else f"preference={pref}")
            cols["source"].append(src)
            cols["line"].append(ln)
            cols["position"].append(position)
            cols["len_1"].append(_text_len(rec.get("output_1")))
            cols["len_2"].append(_text_len(rec.get("output_2")))
            cols["preference"].append(pref)
            if isinstance(pref, float) and math.isnan(pref) or pref is None:
                notes.count("preference null or NaN (missing judgment)")
            elif pref == 0:
                notes.count("preference 0, AlpacaEval's legacy draw code (read as 0.5)")
    for (folder, name), n in sorted(other_annotator.items()):
        notes.remark(f"{n} record(s) in the folder {folder!r} name the annotator {name!r}: certified as judge {name!r}, "
                     "as the records say")
    for (folder, name), n in sorted(folder_mismatch.items()):
        notes.remark(f"{n} record(s) in the folder of model {folder!r} name the model {name!r} (generator_2): read as "
                     f"{name!r}, as the records say")
    return cols, skipped


def _check_record(rec: Any) -> tuple[str | None, float | None]:
    """Why an annotation record cannot be read (None when it can), and its score."""
    why, score = None, None
    if not isinstance(rec, dict):
        why = f"a record must be a JSON object, got {type(rec).__name__}"
    else:
        missing = [k for k in ("instruction", "generator_2", "preference") if k not in rec]
        if missing:
            why = f"the record lacks {', '.join(repr(k) for k in missing)} (an AlpacaEval annotation has them)"
        elif not isinstance(rec["instruction"], str) or not isinstance(rec["generator_2"], str) or not rec["generator_2"]:
            why = "'instruction' and 'generator_2' must be non-empty strings"
        else:
            score = _preference(rec["preference"])
            if score is None:
                why = (f"preference {rec['preference']!r} is not an AlpacaEval preference "
                       "(a number in [1, 2], 0 for a draw, or null)")
    return why, score


def _models_and_variants(frame: pd.DataFrame, notes: Notes) -> None:
    """``frame``'s ``model`` and ``variant`` columns: a generator ``<model>_verbose``/``_concise`` whose base model is
    loaded is that model's variant; otherwise its own model (counted)."""
    generators = set(frame["generator"])
    model = frame["generator"].to_numpy(dtype=object).copy()
    variant = np.full(len(frame), "original", dtype=object)
    for g in sorted(generators):
        for suffix in VARIANT_SUFFIXES:
            tail = f"_{suffix}"
            if g.endswith(tail):
                stem = g[: -len(tail)]
                rows = (frame["generator"] == g).to_numpy()
                if stem in generators:
                    model[rows] = stem
                    variant[rows] = suffix
                else:
                    notes.count(f"model {g!r} read as its own model: its base {stem!r} is not loaded, so it is no "
                                f"'{suffix}' variant", int(rows.sum()))
    frame["model"] = model
    frame["variant"] = variant

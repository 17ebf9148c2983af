"""The parameters of :func:`biasbound.pipeline.certify`: generator and centre parsing, their validation
into one settings record, seeds spawned from the master seed, and the checks of the judgments table.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import pandas as pd

from biasbound._exceptions import InputError
from biasbound._validation import arg, resolve_rng
from biasbound.parameters import PARAMETERS, RULES, settings_record, validate
from biasbound.pipeline._results import jsonable

__all__ = ["check_settings", "describe_generator", "parse_center", "parse_neighbors"]


_WHERE = "certify"
_SCORE_RANGE = 1.0  # certified per-item scores live on [0, 1]
_GEN_RE = re.compile(r"^(swap|rerun|variant:[^,\s]+)$")
#: The pseudo-generator of ``range_bound``: no observed neighbour, any change of one item's score within
#: the score range (the knowledge is the range's almost-sure bound alone)
RANGE_GENERATOR = "range"
_GEN_TEXT = {
    "swap": "one item's presentation order swapped",
    "rerun": "one item re-judged with a new sampling seed",
    "range": "any change of one item's score within the score range (no specific perturbation observed)",
}


def _named(name: str) -> str:
    """``The 'tau' parameter`` to a Python caller, ``The '--tau' option`` to a command-line user of certify."""
    p = PARAMETERS.get(name)
    flag = p.flag if p is not None and p.flag else f"--{name.replace('_', '-')}"
    return arg(f"The {name!r} parameter", f"The '{flag}' option")


def parse_neighbors(spec: str | Sequence[str]) -> tuple[str, ...]:
    """Parse a generator list such as ``"swap,variant:bold,rerun"``.

    Parameters
    ----------
    spec:
        Comma-separated string or a sequence of generator names: ``swap``, ``rerun``,
        ``variant:NAME``.

    Returns
    -------
    tuple of str
        The generator names, duplicates removed, order kept.
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for raw in items:
        name = str(raw).strip()
        if not name:
            continue
        if name != RANGE_GENERATOR and not _GEN_RE.match(name):
            raise InputError(
                f"{_named('neighbors')} of {_WHERE} must list generators among 'swap', 'rerun' and "
                f"'variant:NAME'. Got {name!r} instead."
            )
        if name not in out:
            out.append(name)
    if not out:
        raise InputError(f"{_named('neighbors')} of {_WHERE} must name at least one generator. Got {spec!r} instead.")
    if RANGE_GENERATOR in out and len(out) > 1:
        raise InputError(f"{_named('neighbors')} of {_WHERE} must name 'range' alone (it already bounds every other "
                         f"generator). Got {spec!r} instead.")
    return tuple(out)


def parse_center(spec: str, where: str = _WHERE) -> tuple[str, float | None]:
    """Parse a centre specification: ``fixed:X``, ``ema:X``, ``holdout`` or ``batch``.

    Returns
    -------
    (kind, value)
        ``value`` is the public centre for ``fixed``/``ema`` and ``None`` otherwise.
    """
    if not isinstance(spec, str):
        raise TypeError(f"{_named('center')} of {where} must be a str. Got {type(spec).__name__} instead.")
    s = spec.strip().lower()
    if s in ("holdout", "batch"):
        return s, None
    m = re.match(r"^(fixed|ema):(.+)$", s)
    if m:
        try:
            value = float(m.group(2))
        except ValueError:
            value = math.nan
        if not (0.0 <= value <= 1.0):
            raise InputError(
                f"{_named('center')} of {where} must hold a value in [0, 1] (scores are normalised). "
                f"Got {spec!r} instead."
            )
        return m.group(1), value
    raise InputError(
        f"{_named('center')} of {where} must be one of 'fixed:X', 'ema:X', 'holdout', 'batch'. Got {spec!r} instead."
    )


def describe_generator(name: str) -> str:
    """A plain-words description of a generator for the certificate's guarantee sentence."""
    if name.startswith("variant:"):
        return f"one item's response replaced by its '{name.split(':', 1)[1]}' variant"
    return _GEN_TEXT.get(name, name)


def _as_frame(judgments: Any) -> tuple[pd.DataFrame, dict[str, Any] | None]:
    if isinstance(judgments, pd.DataFrame):
        return judgments, None
    frame = getattr(judgments, "frame", None)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(
            f"The 'judgments' parameter of {_WHERE} must be a JudgmentSet or a pandas DataFrame. "
            f"Got {type(judgments).__name__} instead."
        )
    report = getattr(judgments, "report", None)
    rep: dict[str, Any] | None
    if report is None:
        rep = None
    elif hasattr(report, "to_dict"):
        rep = jsonable(report.to_dict())
    elif dataclasses.is_dataclass(report):
        rep = jsonable(dataclasses.asdict(cast(Any, report)))  # an instance: the report is never a class
    else:
        rep = jsonable(dict(report))
    return frame, rep


def _check_frame(frame: pd.DataFrame, generators: tuple[str, ...], reruns_elsewhere: bool = False
                 ) -> tuple[pd.DataFrame, Any]:
    """The checked working table and the integer codes of its id columns (``pipeline._codes._ColumnCodes``,
    made here for the repeated-key check and handed on to ``prepare``: each id column factorised once).
    ``reruns_elsewhere``: the table's rerun > 0 rows were read apart (the blocked route) and exist."""
    from biasbound.data.coded import coded_frame, duplicated_keys
    from biasbound.pipeline._codes import _ColumnCodes

    need = {"judge", "model", "item_id", "score"}
    miss = sorted(need - set(frame.columns))
    if miss:
        raise InputError(
            f"The 'judgments' parameter of {_WHERE} must have columns judge, model, item_id, score. Missing {miss}."
        )
    frame = coded_frame(frame).copy(deep=False)  # columns may be added below; the caller's frame is never changed
    for col, default in (("variant", "original"), ("rerun", 0), ("game", 0)):
        if col not in frame.columns:
            frame[col] = default
    if len(frame) == 0:
        raise InputError(f"The 'judgments' parameter of {_WHERE} must hold at least one judgment. Got 0 rows instead.")
    # The almost-sure bounds of the certificate (Hamming-1 neighbours move one score by at most 1,
    # a model mean by at most 1/d) hold only for scores on [0, 1]; anything else is refused, never clipped.
    score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isnan(score) & ~((score >= 0.0) & (score <= _SCORE_RANGE))
    if bad.any():
        at = int(np.argmax(bad))
        where = ""
        if "source" in frame.columns and "line" in frame.columns:
            where = f" (file {frame['source'].iloc[at]!s}, line {frame['line'].iloc[at]!s})"
        raise InputError(
            f"The 'judgments' parameter of {_WHERE} must hold scores in [0, 1] (NaN = missing): the certificate's "
            f"almost-sure bound on a neighbour's change rests on that range. Got {int(bad.sum())} score(s) outside it, "
            f"the first {score[at]!r}{where}."
        )
    key = ["judge", "model", "item_id", "variant", "rerun", "game"]
    ids = _ColumnCodes(frame)
    if all(pd.api.types.is_integer_dtype(frame[c].dtype) for c in ("rerun", "game")):
        # coded ids and integers: equal key tuples <=> equal codes (a missing id one more value, as duplicated has it)
        dup = duplicated_keys(ids)
    else:  # other rerun/game dtypes (1 and "1" in one object column) through pandas' own comparison
        dup = frame.duplicated(key, keep=False).to_numpy()
    if dup.any():  # one judgment given twice cannot be paired with its neighbours
        row = frame[dup].iloc[0]
        where = ""
        if "source" in frame.columns and "line" in frame.columns:
            places = frame[dup & (frame[key] == row[key]).all(axis=1).to_numpy()]
            where = " (at " + " and ".join(f"{s}:{ln}" for s, ln in zip(places["source"], places["line"])) + ")"
        shown = ", ".join(f"{k}={row[k].item() if hasattr(row[k], 'item') else row[k]!r}" for k in key)
        raise InputError(f"The 'judgments' parameter of {_WHERE} holds the judgment ({shown}) more than once{where}; "
                         "give each judgment once.")
    variants = set(ids.column("variant")[1].tolist())  # the distinct texts (as astype(str).unique() has them)
    for g in generators:
        if g == "swap" and not frame["game"].isin([2]).any():
            raise InputError(
                f"{_named('neighbors')} of {_WHERE} asks for 'swap', but the judgments hold no game-2 "
                f"(position-swapped) judgments; use a generator present in the data, {arg(*RANGE_BOUND_HINT)}."
            )
        if g == "rerun" and not reruns_elsewhere and not (frame["rerun"] > 0).any():
            raise InputError(
                f"{_named('neighbors')} of {_WHERE} asks for 'rerun', but the judgments hold no rerun > 0; "
                f"use a generator present in the data, {arg(*RANGE_BOUND_HINT)}."
            )
        if g.startswith("variant:") and g.split(":", 1)[1] not in variants:
            have = sorted(variants - {"original"}) or ["none"]
            raise InputError(
                f"{_named('neighbors')} of {_WHERE} asks for {g!r}, but that variant is not in the judgments "
                f"(variants present: {', '.join(have)})."
            )
    return frame, ids


#: How a caller opts in to the range bound, in the caller's words (appended to "no neighbour" errors).
RANGE_BOUND_HINT = ("or pass range_bound=True to certify on the score range alone",
                    "or pass --range-bound to certify on the score range alone")


def holds_neighbors(frame: pd.DataFrame, generators: Sequence[str]) -> bool:
    """Whether the judgments hold a neighbour row of any of the generators (game 2, rerun > 0, the variant); a column
    left out holds none (a table of original judgments needs no variant, rerun or game column)."""
    from biasbound.data.coded import text_values

    variants = set(text_values(frame["variant"])) if "variant" in frame.columns else set()
    for g in generators:
        if g == "swap" and "game" in frame.columns and frame["game"].isin([2]).any():
            return True
        if g == "rerun" and "rerun" in frame.columns and (frame["rerun"] > 0).any():
            return True
        if g.startswith("variant:") and g.split(":", 1)[1] in variants:
            return True
    return False


#: The settings record's fields, in the key order of summary.json's ``settings`` (pinned here: the order is output
#: bytes). A table name is typed and defaults as :mod:`biasbound.parameters` declares it; the others (:func:`_derived`)
#: are parsed from one or given by the caller.
SETTINGS_FIELDS: tuple[str, ...] = ("tau", "delta", "generators", "method", "combine", "alpha", "beta", "holdout", "seed",
                                    "view", "center_kind", "center_value", "jitter_adjust", "bootstrap_rounds",
                                    "confidence", "n_mc", "hamming", "sigma", "sampled", "deterministic_judge")


def _derived() -> dict[str, tuple[Any, Any]]:
    """The fields that are not table names, with their types and defaults (the defaults the table's, parsed): the
    generators parsed from ``neighbors``, the centre's kind and value from ``center``; ``sampled`` (``biasbound run``'s
    generators whose neighbours are a recorded uniform draw, ``{generator: {"seed": int}}``) is Python only."""
    kind, value = parse_center(PARAMETERS["center"].default)
    return {"generators": (tuple[str, ...], parse_neighbors(PARAMETERS["neighbors"].default)),
            "center_kind": (str, kind), "center_value": (float | None, value),
            "sampled": (dict[str, dict[str, Any]] | None, None)}


def _used(self: Any) -> tuple[str, ...]:
    """Generators entering the combination: all of them.

    Rerun jitter is a generator like the others: the certificate is about the scores released, which carry the
    jitter. ``jitter_adjust`` only adds a diagnostic (the jitter-free sensitivity), reported and never used to
    calibrate.
    """
    return cast(tuple[str, ...], self.generators)


def _settings_dict(self: Any) -> dict[str, Any]:
    """The JSON-ready settings (summary.json's ``settings``): the fields in :data:`SETTINGS_FIELDS`' order, ``hamming``
    'all' for every item, then the centre as given (``fixed:0.5``)."""
    d = dataclasses.asdict(self)
    d["hamming"] = "all" if self.hamming is None else self.hamming
    d["center"] = self.center_kind if self.center_value is None else f"{self.center_kind}:{self.center_value:g}"
    return d


if TYPE_CHECKING:
    class _Settings:
        """The type checker's view of the generated record: one attribute per name of :data:`SETTINGS_FIELDS`."""

        __dataclass_fields__: ClassVar[dict[str, Any]]

        def __init__(self, **values: Any) -> None: ...
        def __getattr__(self, name: str) -> Any: ...
        @property
        def used(self) -> tuple[str, ...]: ...
        def to_dict(self) -> dict[str, Any]: ...
else:
    _Settings = settings_record(
        "_Settings", SETTINGS_FIELDS,
        "The validated parameters of :func:`biasbound.pipeline.certify` (:func:`check_settings`): one field per name of "
        ":data:`SETTINGS_FIELDS`, typed and defaulting as the parameter table declares it.",
        derived=_derived(), used=property(_used), to_dict=_settings_dict)
    _Settings.__module__ = __name__


#: The table names :func:`check_settings` reads, in the table's order: the settings record's table names and those
#: parsed into its other fields (``neighbors``: the generators, ``center``: the centre's kind and value). The rest of
#: certify's parameters (``plots``, ``range_bound``...) certify reads itself.
SETTINGS_PARAMETERS: tuple[str, ...] = tuple(n for n in PARAMETERS if n in SETTINGS_FIELDS or n in ("neighbors", "center"))
#: Parsed by their own readers (after the one ``validate`` call): a generator list may be a sequence, a seed a Generator
_PARSED = ("neighbors", "seed", "hamming")


class _Labels:
    """``{label[NAME]}`` in a rule's sentence: NAME as the reader knows it (the flag on the command line)."""

    def __getitem__(self, name: str) -> str:
        p = PARAMETERS[name]
        return arg(name, p.flag or name)


def cross_check(values: dict[str, Any], given: dict[str, Any] | None = None) -> None:
    """Refuse settings that do not fit together: the first rule of :data:`biasbound.parameters.RULES` that refuses
    ``values`` (the checked settings' fields) raises its sentence (``given``: the values as the caller gave them)."""
    for rule in RULES:
        if rule.refuses(values):
            words = rule.says.format(**values, given=given or {}, listed=",".join(values["generators"]), label=_Labels())
            raise InputError(f"{_named(rule.name)} of {_WHERE} {words}")


def check_settings(*, sampled: Any = None, **given: Any) -> _Settings:
    """Validate the parameters of :func:`biasbound.pipeline.certify` before any data is read.

    The same checks, with the same one-sentence errors, as ``certify`` runs at its entry (``certify`` calls this
    function); the keyword arguments are :data:`SETTINGS_PARAMETERS`, each defaulting to the table's default
    (``certify``'s); the signature shown (``inspect.signature``) is generated from the table. The ``certify`` command
    calls it before loading its inputs, so a bad option fails at once.

    Parameters
    ----------
    sampled
        ``{generator: {"seed": int}}``: generators whose neighbours are a recorded uniform draw (``biasbound run``).
    **given
        Any of :data:`SETTINGS_PARAMETERS`, as in :func:`biasbound.pipeline.certify`.

    Returns
    -------
    _Settings
        The validated settings, with the master seed resolved (``seed=None`` draws a fresh one).

    Raises
    ------
    InputError
        For a parameter outside its range, or settings that do not fit together (:data:`biasbound.parameters.RULES`).
    TypeError
        For a parameter of the wrong type or a name that is not a settings parameter.
    """
    unknown = sorted(set(given) - set(SETTINGS_PARAMETERS))
    if unknown:
        raise TypeError(f"check_settings takes the certify settings {', '.join(SETTINGS_PARAMETERS)} and sampled. "
                        f"Got {', '.join(map(repr, unknown))} instead.")
    given = {n: given.get(n, PARAMETERS[n].default) for n in SETTINGS_PARAMETERS}
    v = validate(_WHERE, **{n: x for n, x in given.items() if n not in _PARSED})
    v["beta"] = None if v["beta"] == "none" else v["beta"]
    v["generators"] = gens = parse_neighbors(given["neighbors"])
    v["center_kind"], v["center_value"] = parse_center(v.pop("center"))
    seed = given["seed"]
    if seed is not None and not isinstance(seed, np.random.Generator):
        seed = validate(_WHERE, seed=seed)["seed"]
    v["hamming"] = parse_hamming(given["hamming"])
    v["sampled"] = None
    if sampled is not None:
        if not isinstance(sampled, dict) or not all(isinstance(x, dict) for x in sampled.values()):
            raise TypeError(f"The 'sampled' parameter of {_WHERE} must be a dict generator -> {{'seed': int}}. "
                            f"Got {type(sampled).__name__} instead.")
        unknown = sorted(set(sampled) - set(gens))
        if unknown:
            raise InputError(f"The 'sampled' parameter of {_WHERE} names generators not in 'neighbors': {unknown}.")
        v["sampled"] = {str(g): dict(x) for g, x in sampled.items()}
    cross_check(v, given)
    _, v["seed"] = resolve_rng(seed)
    return _Settings(**v)


check_settings.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=PARAMETERS[n].default) for n in SETTINGS_PARAMETERS]
    + [inspect.Parameter("sampled", inspect.Parameter.KEYWORD_ONLY, default=None)], return_annotation="_Settings")


def parse_hamming(value: Any) -> int | None:
    """``--hamming K``: an int ``K >= 1`` or ``"all"`` (every item perturbed; returned as None)."""
    k = PARAMETERS["hamming"].check(value, _WHERE)
    return None if k == "all" else k

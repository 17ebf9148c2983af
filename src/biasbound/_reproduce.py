"""A certificate's recorded certify call (``scope.reproduce``) read as untrusted input.

``biasbound verify --judgments`` certifies again with the call a certificate records. That record comes from a
file a stranger may have written, so it is read through the parameter table (:mod:`biasbound.parameters`) before
anything runs: only the keys certify records are accepted, each value in its declared range; ``sign_key``,
``out`` or any other path is refused (the verifier never opens a file a certificate names), and the audit's Monte
Carlo size is capped at :data:`MAX_VERIFY_N_MC` (a recorded ``n_mc = 2e9`` would run for hours). Every refusal is
one sentence naming the certificate field and the allowed values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from biasbound._exceptions import InputError

__all__ = ["MAX_VERIFY_N_MC", "checked_reproduce"]

#: The largest audit Monte Carlo size a re-certification runs (certify's default is 20,000).
MAX_VERIFY_N_MC = 1_000_000

#: Recorded certify keys that the parameter table declares (checked there).
_TABLE_KEYS = ("tau", "delta", "method", "combine", "alpha", "beta", "holdout", "seed", "view", "center",
               "jitter_adjust", "bootstrap_rounds", "confidence", "n_mc", "plots", "hamming", "sigma", "range_bound",
               "deterministic_judge", "human_level")
#: Recorded certify keys checked here (their own shapes).
_OTHER_KEYS = ("neighbors", "baseline", "skip_bad", "sampled", "schedule", "human_labels", "judge_prompt",
               "families")
#: Reading options of the judgment files (``scope.reproduce.load``).
_LOAD_KEYS = ("reader", "scale", "skip_bad", "columns", "llmbar_view", "ties", "score_map", "neighbors_auto",
              "source", "inputs", "winner_map")


def _bad(field: str, what: str, value: Any) -> InputError:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return InputError(f"The certificate's scope.reproduce.{field} must be {what}. Got {text} instead; the recorded "
                      "call is not one certify writes, so it is not run.")


def _text_list(value: Any, field: str, limit: int = 1000) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or len(value) > limit or not all(isinstance(v, str) and len(v) < 1000 for v in value):
        raise _bad(field, f"a name or a list of at most {limit} names", value)
    return list(value)


def _str_map(value: Any, field: str, numbers: bool = False) -> dict[str, Any] | None:
    if value is None:
        return None
    ok = isinstance(value, Mapping) and len(value) <= 10_000 and all(
        isinstance(k, str) and (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                if numbers else isinstance(v, str)) for k, v in value.items())
    if not ok:
        raise _bad(field, "null or an object of " + ("finite numbers" if numbers else "names"), value)
    return dict(value)


def checked_reproduce(rec: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(certify keyword arguments, reading options)`` of a recorded ``scope.reproduce``, every value checked."""
    out = _checked_call(rec.get("certify"))
    load = rec.get("load")
    if load is None:
        return out, {}
    return out, _checked_load(load)


def _checked_call(call: Any) -> dict[str, Any]:
    """The recorded certify keyword arguments, each through the parameter table or its own shape check."""
    from biasbound.parameters import PARAMETERS

    if not isinstance(call, Mapping):
        raise _bad("certify", "an object of certify's parameters", call)
    unknown = sorted(set(map(str, call)) - set(_TABLE_KEYS) - set(_OTHER_KEYS))
    if unknown:
        raise InputError(f"The certificate's scope.reproduce.certify holds {unknown[0]!r}, which is not a parameter "
                         "certify records (a path, a key or an option of another command is never run by verify).")
    out: dict[str, Any] = {}
    for key in _TABLE_KEYS:
        if key not in call:
            continue
        value = call[key]
        if key == "neighbors":
            continue
        try:
            out[key] = PARAMETERS[key].check(value, "verify")
        except (InputError, TypeError) as exc:
            raise _bad(f"certify.{key}", PARAMETERS[key].allowed(), value) from exc
    if isinstance(out.get("n_mc"), int) and out["n_mc"] > MAX_VERIFY_N_MC:
        raise _bad("certify.n_mc", f"an int in [1, {MAX_VERIFY_N_MC:,}] (verify runs the audit again)", call["n_mc"])
    _checked_others(call, out)
    return out


def _checked_others(call: Mapping[str, Any], out: dict[str, Any]) -> None:
    """The recorded keys the parameter table does not declare, each by its own shape."""
    if "neighbors" in call:
        out["neighbors"] = _text_list(call["neighbors"], "certify.neighbors", limit=100)
        if isinstance(call["neighbors"], str):
            out["neighbors"] = call["neighbors"]
    if "baseline" in call:
        if call["baseline"] is not None and not isinstance(call["baseline"], str):
            raise _bad("certify.baseline", "null or a model name", call["baseline"])
        out["baseline"] = call["baseline"]
    if "skip_bad" in call:
        if not isinstance(call["skip_bad"], bool):
            raise _bad("certify.skip_bad", "true or false", call["skip_bad"])
        out["skip_bad"] = call["skip_bad"]
    if "human_labels" in call:
        out["human_labels"] = _labels_record(call["human_labels"])
    if "families" in call:
        out["families"] = _str_map(call["families"], "certify.families")
    if "judge_prompt" in call:
        out["judge_prompt"] = _prompt_record(call["judge_prompt"])
    for key in ("sampled", "schedule"):
        if key in call:
            value = call[key]
            if value is not None and not isinstance(value, Mapping):
                raise _bad(f"certify.{key}", "null or an object", value)
            out[key] = value


def _prompt_record(value: Any) -> dict[str, Any] | None:
    """A recorded judge prompt (``biasbound run``): null or an object whose ``sha256`` is the digest of the rest
    (an edited template or parser with its old digest is refused)."""
    if value is None:
        return None
    from biasbound.judge.custom import prompt_record_digest

    if not isinstance(value, Mapping) or not isinstance(value.get("sha256"), str):
        raise _bad("certify.judge_prompt", "null or the judge prompt record biasbound run writes (with its sha256)", value)
    if prompt_record_digest(value) != value["sha256"]:
        raise _bad("certify.judge_prompt", "a record whose sha256 is the digest of its templates and parser (it is not: "
                   "the record was edited)", value.get("name"))
    return dict(value)


def _content_record_ok(rec: Any) -> bool:
    """The shape of a recorded input's content record: a name, a SHA-256 and a size."""
    return (isinstance(rec, Mapping) and isinstance(rec.get("name"), str) and isinstance(rec.get("sha256"), str)
            and len(rec["sha256"]) == 64 and isinstance(rec.get("bytes"), int) and not isinstance(rec.get("bytes"), bool))


def _checked_file_name(name: str, field: str) -> None:
    """A recorded file name, never a path out of a folder."""
    if not name or name.startswith(("/", "\\")) or ".." in name.replace("\\", "/").split("/") or "\x00" in name:
        raise _bad(field, "a file name (never a path out of a folder)", name)


def _labels_record(value: Any) -> dict[str, Any] | None:
    """The recorded human labels: null, a column of the judgments ``{column}``, or a labels file by its content
    (``verify --judgments`` finds the file among those it is given; it never opens a recorded path)."""
    if value is None:
        return None
    if isinstance(value, Mapping) and set(value) == {"column"} and isinstance(value["column"], str) \
            and len(value["column"]) < 1000:
        return {"column": value["column"]}
    if _content_record_ok(value):
        _checked_file_name(str(value["name"]), "certify.human_labels.name")
        return dict(value)
    raise _bad("certify.human_labels", "null, {column: NAME} or a labels file's {name, sha256, bytes} record", value)


def _checked_load(load: Any) -> dict[str, Any]:
    """The recorded reading options of the judgment files, each checked."""
    if not isinstance(load, Mapping):
        raise _bad("load", "an object of reading options", load)
    unknown = sorted(set(map(str, load)) - set(_LOAD_KEYS))
    if unknown:
        raise InputError(f"The certificate's scope.reproduce.load holds {unknown[0]!r}, which is not a reading option "
                         "certify records.")
    opts: dict[str, Any] = {}
    reader = load.get("reader", "certify")
    if reader not in ("certify", "frame"):
        raise _bad("load.reader", "'certify' or 'frame'", reader)
    opts["reader"] = reader
    scale = load.get("scale")
    if scale is not None:
        if not (isinstance(scale, list) and len(scale) == 2 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in scale)
                and scale[0] < scale[1]):
            raise _bad("load.scale", "null or [low, high] with low < high", scale)
        opts["scale"] = [float(scale[0]), float(scale[1])]
    else:
        opts["scale"] = None
    if reader == "frame" and opts["scale"] is None:
        raise _bad("load.scale", "[low, high] for a table certified in memory", scale)
    if not isinstance(load.get("skip_bad", False), bool):
        raise _bad("load.skip_bad", "true or false", load.get("skip_bad"))
    opts["skip_bad"] = bool(load.get("skip_bad", False))
    opts["columns"] = _str_map(load.get("columns"), "load.columns")
    opts["score_map"] = _str_map(load.get("score_map"), "load.score_map", numbers=True)
    if "winner_map" in load:
        opts["winner_map"] = _str_map(load.get("winner_map"), "load.winner_map")
    for key, allowed in (("llmbar_view", ("output_1", "gold")), ("ties", ("missing", "half"))):
        value = load.get(key, allowed[0])
        if value not in allowed:
            raise _bad(f"load.{key}", " or ".join(map(repr, allowed)), value)
        opts[key] = value
    _checked_names(load, opts)
    return opts


def _checked_names(load: Mapping[str, Any], opts: dict[str, Any]) -> None:
    """The recorded auto-neighbour names, source name and input records (names only, never paths)."""
    auto = load.get("neighbors_auto")
    opts["neighbors_auto"] = None if auto is None else _text_list(auto, "load.neighbors_auto", limit=100)
    source = load.get("source")
    if source is not None and not isinstance(source, str):
        raise _bad("load.source", "a name", source)
    opts["source"] = source
    inputs = load.get("inputs")
    if inputs is not None:
        ok = isinstance(inputs, list) and len(inputs) <= 10_000 and all(_content_record_ok(i) for i in inputs)
        if not ok:
            raise _bad("load.inputs", "a list of {name, sha256, bytes, format} records", inputs)
        for i in inputs:
            _checked_file_name(str(i["name"]), "load.inputs[].name")
        opts["inputs"] = [dict(i) for i in inputs]

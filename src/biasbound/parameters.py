"""Every user-facing parameter declared once: name, type, allowed range or choices, default, meaning,
command-line flag and ``biasbound run`` config key (constraints as data, as scikit-learn's
``_parameter_constraints``).

From this one table come

- the Python validation (:func:`validate`: one call at the top of ``certify`` and ``calibrate``; the same ranges
  everywhere, e.g. ``delta=1e-15`` is refused by all of them);
- the command-line options (:func:`option`: the same flag, default and help text in ``certify``, ``run``,
  ``calibrate``, ``audit`` and ``demo``; an old spelling stays a hidden alias that warns, :func:`renamed`);
- the run-config keys (:func:`biasbound.config.parse_config` reads every key of :data:`CERTIFY` through
  the table, so ``run`` accepts every ``certify`` parameter);
- the bad-parameter tests (tests/cli/test_parameters.py walks the table).

Messages keep the house format (:mod:`biasbound._validation`): a Python caller reads
"The 'delta' parameter of calibrate must be a float in [1e-12, 1). Got 1e-15 instead.", a
command-line user "The '--delta' option of certify ...", a config file "run.yaml: The key 'delta' must
be a number in [1e-12, 1). Got 1e-15 instead.".
"""

from __future__ import annotations

import functools
import inspect
import numbers
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from biasbound._exceptions import InputError
from biasbound._validation import (
    Range,
    check_in_range,
    check_int,
    check_one_of,
    cli_command,
)

__all__ = ["AT_A_POINT", "CERTIFY", "ENGINES",
           "PARAMETERS", "RULES", "Parameter", "Rule", "bounds", "checked_names", "checked_records", "exempt_names",
           "old_option", "option", "renamed", "settings_record", "table_options", "validate", "validate_params"]


@dataclass(frozen=True)
class Parameter:
    """One parameter: what it means and which values it takes.

    ``kind`` is ``"float"``, ``"int"``, ``"bool"``, ``"choice"`` or ``"text"`` (a spec parsed by its own
    reader, e.g. ``center``); ``words`` are literal values accepted besides the range (``hamming='all'``,
    ``beta='none'``); ``optional`` admits None (chosen when omitted). ``flag`` is the command-line option
    (None: Python only), ``old_flags`` its deprecated spellings, ``config_key`` the dotted key of the
    ``biasbound run`` YAML (None: not in the config).
    """

    name: str
    kind: str
    meaning: str
    default: Any = None
    range: Range | None = None
    choices: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    optional: bool = False
    flag: str | None = None
    old_flags: tuple[str, ...] = ()
    config_key: str | None = None

    def allowed(self, cli: bool = False) -> str:
        """The allowed values in words, e.g. ``a float in [1e-12, 1)`` or ``one of 'tight', 'paper'`` (``or None``
        for an optional parameter, except on the command line, where it is left out)."""
        if self.kind == "choice":
            text = "one of " + ", ".join(map(repr, self.choices))
        elif self.kind == "bool":
            text = "true or false"
        elif self.kind in ("float", "int") and self.range is not None:
            text = f"{'an int' if self.kind == 'int' else 'a float'} in {self.range.text()}"
        else:
            text = f"a {self.kind}"
        text += "".join(f" or {w!r}" for w in self.words)
        return text + (" or None" if self.optional and not cli else "")

    def label(self, where: str) -> str:
        """The name shown in a message: the flag to a command-line user of ``where``, else the Python name."""
        return self.flag if (self.flag is not None and cli_command() == where) else self.name

    def check(self, value: Any, where: str) -> Any:
        """``value`` checked against the declaration (ints and floats converted); one sentence otherwise."""
        if value is None and self.optional:
            return None
        if isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        shown = self.label(where)
        kind = "option" if shown.startswith("--") else "parameter"
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise TypeError(f"The {shown!r} {kind} of {where} must be a bool. Got {type(value).__name__} instead.")
            return value
        if self.kind == "choice":
            return check_one_of(value, shown, where, self.choices)
        if self.kind == "text":
            if not isinstance(value, str):
                raise TypeError(f"The {shown!r} {kind} of {where} must be a str. Got {type(value).__name__} instead.")
            return value
        if isinstance(value, str) and self.words:  # "3" typed for an int-or-word option (--hamming 3)
            try:
                value = int(value) if self.kind == "int" else float(value)
            except ValueError:
                raise InputError(f"The {shown!r} {kind} of {where} must be {self.allowed(kind == 'option')}. "
                                 f"Got {value!r} instead.") from None
        r = self.range or Range()
        try:
            if self.kind == "int":
                return check_int(value, shown, where, **r.bounds())
            return check_in_range(value, shown, where, **r.bounds())
        except InputError:
            if not (self.words or self.optional):
                raise
            raise InputError(f"The {shown!r} {kind} of {where} must be {self.allowed(kind == 'option')}. "
                             f"Got {value!r} instead.") from None


#: Engines that read and reduce judgment tables (:mod:`biasbound.engine`, which re-exports this): DuckDB, embedded, the
#: default route; Spark, on a cluster.
ENGINES: tuple[str, ...] = ("duckdb", "spark")


def _p(name: str, kind: str, meaning: str, default: Any = None, **kw: Any) -> Parameter:
    return Parameter(name=name, kind=kind, meaning=meaning, default=default, **kw)


_TABLE = (
    # --- the certificate: pipeline.certify, the certify and run commands, the run config ------------------
    # Scores are normalised to [0, 1]: two score vectors of up to 10^12 items are never more than 10^6 apart,
    # so a larger tolerance says nothing more, and its square would overflow downstream.
    _p("tau", "float", "Tolerance τ on ||M(D) − M(D')||₂", 0.5, range=Range(0.0, 1e6, low_open=True),
       flag="--tau", config_key="tau"),
    # Below 1e-12 no audit (it would need ~1e12 neighbour draws) or Monte Carlo check can ever speak to the
    # claim, and the Gaussian tails it rests on are below the rounding error of the scores themselves.
    _p("delta", "float", "Failure probability δ", 0.01, range=Range(1e-12, 1.0, high_open=True),
       flag="--delta", config_key="delta"),
    _p("neighbors", "text", "Generators: swap, rerun, variant:NAME (comma-separated), or auto (those the data hold)",
       ("swap",), flag="--generators", old_flags=("--neighbors",)),
    _p("method", "choice", "Calibration: tight (exact bounds) or paper (Cor. 3.2 exactly)", "tight",
       choices=("tight", "paper"), flag="--method", config_key="calibration.method"),
    _p("combine", "choice", "Combination over generators: max (each generator) or rms (one picked uniformly at "
       "random, for each model)", "max", choices=("max", "rms"), flag="--combine", config_key="calibration.combine"),
    _p("alpha", "float", "Shrinkage α; chosen when omitted", None, range=Range(0.0, 1.0, low_open=True), optional=True,
       flag="--alpha", config_key="calibration.alpha"),
    _p("beta", "float", "Confidence parameter of the sensitivity bound, or 'none' (point estimate)", 0.05,
       range=Range(0.0, 1.0, low_open=True, high_open=True), words=("none",), optional=True, flag="--beta",
       config_key="calibration.beta"),
    _p("holdout", "float", "Share of neighbours held out for the audit", 0.3, range=Range(0.0, 0.9),
       flag="--holdout", config_key="calibration.holdout"),
    _p("center", "text", "Public centre: fixed:X, ema:X, holdout or batch", "fixed:0.5", flag="--center",
       config_key="calibration.center"),
    _p("view", "choice", "model (per-item scores) or leaderboard (model means)", "model",
       choices=("model", "leaderboard"), flag="--view", config_key="view"),
    _p("seed", "int", "Master seed (recorded)", 0, range=Range(0, None, integer=True), flag="--seed", config_key="seed"),
    _p("jitter_adjust", "bool", "Also report the jitter-free sensitivity (a diagnostic; never used to calibrate)",
       False, flag="--jitter-adjust", config_key="jitter_adjust"),
    # Each round holds one count per item in memory; 10^5 rounds of 1,000 items are already 800 MB.
    _p("bootstrap_rounds", "int", "Item-bootstrap rounds for the leaderboard's CIs", 1000,
       range=Range(1, 100_000, integer=True), flag="--bootstrap-rounds", config_key="bootstrap_rounds"),
    _p("hamming", "int", "Neighbour size: K items perturbed at once (drawn uniformly), or 'all' (every item: for "
       "swaps, the position bias of the whole leaderboard)", 1, range=Range(1, None, integer=True), words=("all",),
       flag="--hamming", config_key="calibration.hamming"),
    _p("sigma", "float", "Noise scale σ (0 = deterministic, tight only); chosen on the frontier when omitted", None,
       range=Range(0.0, None), optional=True, flag="--sigma", config_key="calibration.sigma"),
    _p("range_bound", "bool", "Data without any neighbour: certify on the score range alone (any change of one "
       "item's score; holds for ANY judge on the range)", False, flag="--range-bound",
       config_key="calibration.range_bound"),
    _p("deterministic_judge", "bool", "Declare the judge deterministic: each recorded neighbour verdict is its only "
       "answer (exact probability over a census); an assumption stated in the certificate. Default: every recorded "
       "verdict is one draw of a random judge", False, flag="--deterministic-judge",
       config_key="calibration.deterministic_judge"),
    _p("human_labels", "text", "Human labels: a table of item_id, label (the judge's scale; optional model, rater) or "
       "the name of a judgments column; adds agreement, human-anchored (PPI++) scores and the anchored release's "
       "certificate", None, optional=True, flag="--human-labels"),
    _p("human_level", "float", "Level of the agreement and human-anchored intervals", 0.95,
       range=Range(0.0, 1.0, low_open=True, high_open=True), flag="--human-level"),
    _p("families", "text", "Model families for the judge card's self-preference, NAME=FAMILY (repeat the option) for "
       "a judge or model whose name does not say its family (gpt-4o, claude, gemini, llama, ... need none)", None,
       optional=True, flag="--family"),
    _p("plots", "bool", "Write plots and report.html", True, flag="--plots/--no-plots", config_key="plots"),
    # a reading option (how the judgment tables are read), never recorded: the certificate is the same on each
    _p("engine", "choice", "Engine that reads the judgment tables: duckdb (embedded, every format) or spark (judgment "
       "tables in the contract schema read on a Spark cluster: local mode, or Spark Connect with SPARK_REMOTE); the "
       "certificate is the same on each", ENGINES[0], choices=ENGINES, flag="--engine"),
    _p("confidence", "float", "Family-wise confidence level of the audit", 0.99,
       range=Range(0.0, 1.0, low_open=True, high_open=True), flag="--confidence"),
    _p("neighbor_file", "text", "Judgment files holding new neighbours (repeat the option for several)", None,
       flag="--neighbor-file", old_flags=("--neighbors",)),
    _p("n_mc", "int", "Monte Carlo draws of the audit", 20000, range=Range(1, None, integer=True)),
    # --- the planner: calibrate, the calibrate command --------------------------------
    _p("dim", "int", "Number of scores d (judged items)", None, range=Range(1, None, integer=True), flag="--dim"),
    # normalised scores of up to 10^12 items never move further
    _p("sensitivity", "float", "RMS sensitivity Δ* (point estimate)", None, range=Range(0.0, 1e6), optional=True,
       flag="--sensitivity"),
    _p("sensitivity_ucb", "float", "Upper (1 − β) confidence bound on Δ* (needs --beta)", None, range=Range(0.0, 1e6),
       optional=True, flag="--sensitivity-ucb"),
    _p("score_range", "float", "Score range R: every neighbour moves at most R·sqrt(hamming)", None,
       range=Range(0.0, None, low_open=True), optional=True, flag="--score-range", old_flags=("--range",)),
    _p("tau_split", "float", "Default point: the noise's share of the most noise any certificate allows", 0.5,
       range=Range(0.0, 1.0, low_open=True, high_open=True), flag="--tau-split"),
    _p("frontier_points", "int", "Points of the frontier α*(σ) to report (0: none, else >= 2; each is a root search "
       "of the bound, about 13 ms: 1,000 points take about 13 s)", 9,
       range=Range(0, 1_000, integer=True), flag="--frontier"),
    _p("max_attempts", "int", "HTTP attempts per judge call", 6, range=Range(1, None, integer=True)),
)

#: Every parameter, by Python name.
PARAMETERS: dict[str, Parameter] = {p.name: p for p in _TABLE}

#: The parameters of :func:`biasbound.pipeline.certify` a user sets (``certify`` and ``run`` accept each of them).
CERTIFY: tuple[str, ...] = ("tau", "delta", "neighbors", "method", "combine", "alpha", "beta", "holdout", "center",
                            "view", "seed", "jitter_adjust", "bootstrap_rounds", "plots", "hamming", "sigma",
                            "range_bound", "deterministic_judge")


@dataclass(frozen=True)
class Rule:
    """A cross-check of certify's settings (values that are each in range but do not fit together): when ``refuses``
    holds of the checked settings, the parameter ``name`` is refused with the sentence ``says``, formatted with the
    settings' fields, ``given`` (the values as the caller gave them), ``listed`` (the generators, comma-separated) and
    ``label`` (``{label[method]}``: a name as the reader knows it, the Python name or the command-line flag)."""

    name: str
    refuses: Callable[[Mapping[str, Any]], bool]
    says: str


#: The cross-checks of :data:`CERTIFY`'s settings, evaluated in this order by
#: :func:`biasbound.pipeline._settings.check_settings` after each value is checked against its own range (and again
#: by certify when the data hold no neighbour and ``range_bound`` puts the score range's generator in their place).
RULES: tuple[Rule, ...] = (
    Rule("holdout", lambda v: v["center_kind"] == "holdout" and v["holdout"] <= 0,
         "must be > 0 with center='holdout'. Got {holdout!r} instead."),
    Rule("jitter_adjust", lambda v: v["jitter_adjust"] and ("rerun" not in v["generators"] or len(v["generators"]) < 2),
         "needs a 'rerun' generator and at least one other generator. Got neighbors={listed!r} instead."),
    Rule("hamming", lambda v: v["hamming"] != 1 and v["method"] == "paper",
         "must be 1 with {label[method]}='paper' (the paper's Hamming-1 neighbours). Got {given[hamming]!r} instead."),
    Rule("sigma", lambda v: v["sigma"] == 0 and v["method"] == "paper",
         "must be > 0 with {label[method]}='paper' (Cor. 3.2 needs noise). Got 0 instead."),
    Rule("method", lambda v: "range" in v["generators"] and v["method"] != "tight",
         "must be 'tight' to certify on the score range alone. Got {method!r} instead."),
)


def validate(where: str, **values: Any) -> dict[str, Any]:
    """Check every ``name=value`` against :data:`PARAMETERS`; return the checked values (one sentence otherwise).

    ``where`` names the entry point in the message (``"calibrate"``, ``"certify"``); to a command-line
    user of that command the message names the flag.
    """
    return {name: PARAMETERS[name].check(value, where) for name, value in values.items()}


def option(name: str, default: Any = ..., *, flag: str | None = None, help: str | None = None, **kw: Any) -> Any:
    """The ``typer.Option`` of parameter ``name`` (table flag, default and meaning unless overridden).

    ``default=...`` takes the table's default; pass ``None`` for "from elsewhere" (``run``: the config's value)
    or ``...`` with ``required=True`` for a required option.
    """
    import typer

    p = PARAMETERS[name]
    text = help or p.meaning
    if p.kind in ("float", "int") and p.range is not None and help is None:
        text += f"; in {p.range.text()}"
    decl = cast(str, flag or p.flag)  # option() is called for parameters that have a flag
    if kw.pop("required", False):
        return typer.Option(..., decl, help=text + ".", **kw)
    return typer.Option(p.default if default is ... else default, decl, help=text + ".", **kw)


def bounds(name: str) -> dict[str, Any]:
    """The keyword arguments of ``check_in_range`` (or ``check_int``) for ``name``'s declared range: an inline check
    of a table name takes its range from here, never writes it again."""
    return (PARAMETERS[name].range or Range()).bounds()


def old_option(name: str, *, flag: str | None = None) -> Any:
    """The hidden ``typer.Option`` of a deprecated spelling of ``name``'s flag (None when not given)."""
    import typer

    return typer.Option(None, flag or PARAMETERS[name].old_flags[0], hidden=True)


def renamed(new: Any, old: Any, *, name: str, command: str, default: Any = None, flag: str | None = None,
            old_flag: str | None = None) -> Any:
    """The value of an option that has an old, hidden spelling: the old one warns (FutureWarning, one release)
    and is used when the new one is left at ``default``; both given is an error."""
    p = PARAMETERS[name]
    new_flag, old_flag = flag or p.flag, old_flag or p.old_flags[0]
    if old is None or (isinstance(old, (list, tuple)) and not old):
        return new
    if new != default and new is not None and not (isinstance(new, (list, tuple)) and not new):
        raise InputError(f"The '{old_flag}' option of {command} is the old spelling of '{new_flag}'; give one of "
                         "the two. Got both.")
    message = f"'{old_flag}' of {command} is renamed '{new_flag}'; the old spelling goes in the next release."
    if cli_command() is None:
        warnings.warn(message, FutureWarning, stacklevel=2)
    else:  # the command-line user reads stderr (Python's warning filters would hide or decorate it)
        import sys

        print(f"warning: {message}", file=sys.stderr)
    return old


# --- every public function with a table name validates through the table ---------------------------------------
#: The kinds a function's argument is checked for: a number against its range, a word against its choices (a spec of
#: kind "text" is parsed by its own reader, a bool's type is the function's own business).
_CHECKED_KINDS = ("float", "int", "choice")


def _refused(p: Parameter, value: Any, where: str) -> None:
    """Raise the table's one sentence when ``value`` is a number outside ``p``'s range or a word outside its choices;
    any other type (None, arrays, generators, words of the range) is left to the function, which knows its types."""
    if p.kind == "choice":
        if isinstance(value, str):
            p.check(value, where)
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return
    if p.kind == "int" and not isinstance(value, numbers.Integral):
        r = p.range or Range()
        try:  # a float given for an int (dim=2.0): its range still holds, its type is the function's business
            check_in_range(value, p.label(where), where, low=r.low, high=r.high)
        except InputError:
            raise InputError(f"The {p.label(where)!r} parameter of {where} must be {p.allowed()}. "
                             f"Got {value!r} instead.") from None
        return
    p.check(value, where)


#: ``validate_params(exempt=AT_A_POINT)``: the bounds, the audit and the retention/distortion curves evaluate a point
#: of the domain, where ``alpha = 0`` (every score released as the centre) is a point like any other; their own check
#: takes [0, 1].
AT_A_POINT = {"alpha": "a point of the bound's domain, alpha in [0, 1] (0: every score released as the centre)"}


def checked_names(func: Any) -> frozenset[str]:
    """The table names ``func``'s :func:`validate_params` checks (empty for a function it does not wrap; a class:
    its constructor's)."""
    return cast(frozenset[str], getattr(_callable(func), "__validated__", frozenset()))


def exempt_names(func: Any) -> dict[str, str]:
    """The table names that mean something else in ``func`` (``validate_params(exempt=...)``), with that meaning."""
    return cast(dict[str, str], getattr(_callable(func), "__exempt__", {}))


def checked_records(func: Any) -> dict[str, tuple[str, ...]]:
    """The record arguments of ``func`` whose fields :func:`validate_params` checks, with those fields."""
    return cast(dict[str, tuple[str, ...]], getattr(_callable(func), "__records__", {}))


def _callable(func: Any) -> Any:
    return func.__init__ if inspect.isclass(func) else func


def validate_params(func: Any = None, *, exempt: dict[str, str] | None = None,
                    records: dict[str, tuple[str, ...]] | None = None) -> Any:
    """Check every argument whose name is in :data:`PARAMETERS` against the table before ``func`` runs (as
    scikit-learn's ``validate_params``): a number outside its range or a word outside its choices is refused with the
    table's one sentence (:class:`InputError` naming the parameter, the function and the allowed range).

    ``exempt`` maps a name that means something else in ``func`` to what it means there (``method`` of
    :func:`biasbound.sensitivity.sensitivity_ucb` is the bound's method, not the calibration's); ``records`` maps an
    argument holding a record (a dict or an object) to the table names of its fields checked the same way
    (``audit_certificate``'s certificate). Values are checked, never changed: what the table allows reaches ``func``
    as given.
    """
    def wrap(f: Any) -> Any:
        sig = inspect.signature(f)
        skip = dict(exempt or {})
        names = tuple(n for n in sig.parameters if n in PARAMETERS and n not in skip
                      and PARAMETERS[n].kind in _CHECKED_KINDS)
        kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        index = {n: i for i, (n, p) in enumerate(sig.parameters.items()) if p.kind in kinds}
        fields = {arg: tuple(keys) for arg, keys in (records or {}).items()}
        qual = f.__qualname__.split(".")
        where = qual[-2] if qual[-1] == "__init__" and len(qual) > 1 else f.__name__

        def value_of(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if name in kwargs:
                return kwargs[name]
            i = index.get(name)
            return args[i] if i is not None and i < len(args) else None  # left at its default: the function's own

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for name in names:
                _refused(PARAMETERS[name], value_of(name, args, kwargs), where)
            for arg, keys in fields.items():
                record = value_of(arg, args, kwargs)
                for key in keys:
                    field = record.get(key) if isinstance(record, Mapping) else getattr(record, key, None)
                    _refused(PARAMETERS[key], field, where)
            return f(*args, **kwargs)

        wrapper.__validated__ = frozenset(names)  # type: ignore[attr-defined]
        wrapper.__exempt__ = skip  # type: ignore[attr-defined]
        wrapper.__records__ = fields  # type: ignore[attr-defined]
        return wrapper

    return wrap if func is None else wrap(func)


# --- the settings object and the command-line options, generated from the table -------------------------------
def _python_type(p: Parameter, cli: bool) -> Any:
    """The type of ``p``'s value: its kind's type (a word besides the range, ``hamming 'all'``, makes it a str on the
    command line, where the option reads text)."""
    if p.kind == "bool":
        return bool
    if p.kind in ("choice", "text") or (cli and p.words):
        return str
    return int if p.kind == "int" else float


def settings_record(name: str, names: Sequence[str], doc: str, *, derived: Mapping[str, tuple[Any, Any]] | None = None,
                    **methods: Any) -> type:
    """A frozen dataclass ``name`` with one field per name of ``names`` (in that order: the order of its ``asdict``),
    a table name typed and defaulting as the table declares it: the record is declared by the table, never written out
    again. ``derived`` maps a name that is not the table's (a value parsed from a table name, e.g. the generators from
    ``neighbors``, or a Python-only argument) to its type and default."""
    import dataclasses

    extra = dict(derived or {})
    fields = [(n, *((extra[n][0], dataclasses.field(default=extra[n][1])) if n in extra else
                    (_python_type(PARAMETERS[n], cli=False) | None, dataclasses.field(default=PARAMETERS[n].default))))
              for n in names]
    cls = dataclasses.make_dataclass(name, fields, frozen=True, namespace=dict(methods))
    cls.__doc__ = doc
    return cls


def table_options(names: Sequence[str], *, into: str = "settings", given_only: bool = False,
                  panel: str | None = None, defaults: dict[str, Any] | None = None) -> Any:
    """Decorate a typer command with one option per table name of ``names`` (the table's flag, default and help,
    :func:`option`), placed after the command's own parameters; the command receives their values as one dict, its
    parameter ``into``. ``given_only``: every option defaults to None and only the options given reach the dict
    (``run``: a given option replaces the config's key; a bool option gets its ``--no-`` form). ``defaults``
    overrides the command-line default of some names (``--generators auto``)."""
    def wrap(f: Any) -> Any:
        sig = inspect.signature(f)
        own = [p for p in sig.parameters.values() if p.name != into]
        added, hints = [], {}
        for n in names:
            p = PARAMETERS[n]
            kind = _python_type(p, cli=True)
            optional = given_only or p.optional or p.default is None
            hints[n] = kind | None if optional else kind
            kw: dict[str, Any] = {} if panel is None else {"rich_help_panel": panel}
            flag = p.flag
            if given_only and p.kind == "bool" and flag is not None and "/" not in flag:
                flag = f"{flag}/--no-{flag[2:]}"
            if given_only:
                default: Any = None
            elif defaults is not None and n in defaults:
                default = defaults[n]
            else:
                default = str(p.default) if (p.words and p.default is not None) else ...
            added.append(inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=hints[n],
                                           default=option(n, default, flag=flag, **kw)))
        taken = [p for p in own if p.kind is not inspect.Parameter.VAR_KEYWORD]

        @functools.wraps(f)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in names if n in kwargs}
            if given_only:
                values = {n: v for n, v in values.items() if v is not None}
            return f(*args, **kwargs, **{into: values})

        wrapper.__signature__ = sig.replace(parameters=[*taken, *added])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {**{k: v for k, v in f.__annotations__.items() if k != into}, **hints}
        return wrapper

    return wrap

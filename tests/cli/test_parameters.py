"""Parameters declared once (biasbound.parameters): every out-of-range value the table implies is refused with
one sentence naming the parameter (Python), the flag (command line) or the key (run config) and the allowed
range, exit code 2 and no traceback; the same ranges through every door. Deterministic: no randomness."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest
import yaml

from biasbound._exceptions import DataFormatError, InputError
from biasbound.cli import app, main
from biasbound.parameters import CERTIFY, PARAMETERS, Parameter


def _bad_values(p: Parameter) -> list[Any]:
    """Values just outside the declared range (both sides where there are two), or an unknown choice."""
    if p.kind == "choice":
        return ["nope"]
    if p.kind not in ("float", "int") or p.range is None:
        return []
    r, out = p.range, []
    if r.low is not None:
        if p.kind == "int":
            out.append(int(r.low) - 1)
        elif r.low > 0:
            out.append(r.low / 1000)  # delta: 1e-15
        else:
            out.append(r.low if r.low_open else r.low - 1)
    if r.high is not None:
        if p.kind == "int":
            out.append(int(r.high) * 10)
        else:
            out.append(r.high if r.high_open else r.high * 10)  # tau: 1e7
    return out


def _allowed_words(p: Parameter) -> str:
    """The part of the sentence that states the allowed values (as each door words it)."""
    return ", ".join(map(repr, p.choices)) if p.kind == "choice" else p.range.text()  # type: ignore[union-attr]


def _cases(names: list[str]) -> list[tuple[str, Any]]:
    return [(n, v) for n in names for v in _bad_values(PARAMETERS[n])]


#: The kinds of parameter the table refuses values of (a spec of kind "text" is read by its own parser; a bool's
#: wrong type is a TypeError, not a range).
_RANGED = ("float", "int", "choice")


def _public_functions() -> list[tuple[str, Any]]:
    """Every public function: the names of ``biasbound.__all__`` and of each public submodule's ``__all__`` (no
    part of the module path starting with "_"), and the constructors of their classes that are not records
    (dataclasses: results and knowledge records, each checked by its own ``__post_init__`` in its own terms, e.g.
    a knowledge record's ``beta`` in [0, 1))."""
    import dataclasses
    import importlib
    import pkgutil

    import biasbound

    modules = ["biasbound"] + sorted(m.name for m in pkgutil.walk_packages(biasbound.__path__, "biasbound.")
                                     if not any(part.startswith("_") for part in m.name.split(".")))
    out, seen = [], set()
    for name in modules:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", ()):
            obj = getattr(module, attr)
            if inspect.isclass(obj):
                if (dataclasses.is_dataclass(obj) or issubclass(obj, BaseException)
                        or not inspect.isfunction(obj.__init__)):
                    continue  # records, exceptions and classes without a constructor of their own
                fn, shown = obj, f"{name}.{attr}"
            elif inspect.isfunction(obj):
                fn, shown = obj, f"{name}.{attr}"
            else:
                continue
            key = id(inspect.unwrap(fn.__init__ if inspect.isclass(fn) else fn))
            if key not in seen:
                seen.add(key)
                out.append((shown, fn))
    return out


def _table_names(fn: Any) -> list[str]:
    """The parameters of ``fn`` whose name the table declares with a range or choices, less those ``fn`` declares
    to mean something else (``validate_params(exempt=...)``, each with what it means there)."""
    from biasbound.parameters import exempt_names

    sig = inspect.signature(fn)
    return [n for n in sig.parameters if n in PARAMETERS and PARAMETERS[n].kind in _RANGED
            and n not in exempt_names(fn)]


def _api_cases() -> list[Any]:
    """(function, parameter, bad value) for every table parameter of every public function, and for every table field
    of a record argument it checks (``audit_certificate``'s certificate)."""
    from biasbound.parameters import checked_records

    out = []
    for shown, fn in _public_functions():
        names = [(n, None) for n in _table_names(fn)]
        names += [(n, arg) for arg, keys in checked_records(fn).items() for n in keys]
        out += [pytest.param(fn, n, v, arg, id=f"{shown}-{arg + '.' if arg else ''}{n}-{v}")
                for n, arg in names for v in _bad_values(PARAMETERS[n])]
    return out


def _valid(name: str) -> Any:
    """A value the table accepts (its default, else the low end of its range, else 1)."""
    p = PARAMETERS[name]
    if p.default is not None:
        return p.default
    r = p.range
    if r is not None and r.low is not None:
        return r.low + (1 if p.kind == "int" else 0.5) * (r.low_open or r.low == 0)
    return 1


class _Placeholder:
    """Stands for an argument the table does not declare: the table's check must fire before it is used."""


def _api_call(fn: Any, name: str, value: Any, record: str | None = None) -> None:
    sig = inspect.signature(fn)
    args, kwargs = [], {}
    for pname, prm in sig.parameters.items():
        if prm.kind in (prm.VAR_POSITIONAL, prm.VAR_KEYWORD):
            continue
        if pname == name and record is None:
            given = value
        elif pname == record:
            given = {**{k: _valid(k) for k in ("tau", "delta", "sigma", "alpha", "dim")}, name: value}
        elif prm.default is not prm.empty:
            continue
        elif pname in PARAMETERS and PARAMETERS[pname].kind in _RANGED:
            given = _valid(pname)
        else:
            given = _Placeholder()
        if prm.kind is prm.POSITIONAL_ONLY:
            args.append(given)
        else:
            kwargs[pname] = given
    fn(*args, **kwargs)


def test_every_public_function_checks_its_table_names() -> None:
    """The enumeration above reaches the API (a decorator dropped from a function would leave it unchecked)."""
    from biasbound.parameters import checked_names, checked_records

    names = {shown for shown, _ in _public_functions()}
    assert {"biasbound.range_implied", "biasbound.bias_radius", "biasbound.audit_certificate", "biasbound.certify",
            "biasbound.calibrate"} <= names
    unchecked = [(shown, n) for shown, fn in _public_functions() for n in _table_names(fn)
                 if n not in checked_names(fn)]
    assert unchecked == []
    assert checked_records(_function("biasbound.audit_certificate"))["certificate"]
    assert len(_api_cases()) > 200


def _function(shown: str) -> Any:
    return dict(_public_functions())[shown]


def test_the_table_is_consistent() -> None:
    for p in PARAMETERS.values():
        if p.kind in ("float", "int") and p.default is not None:
            assert p.check(p.default, "t") == p.default, p.name  # every default lies in its own range
        if p.kind == "choice":
            assert p.default in p.choices, p.name
        assert p.meaning and not p.meaning.endswith("."), p.name  # option() ends the help sentence
    for name in CERTIFY:
        assert PARAMETERS[name].flag, name  # every certify parameter is a certify option
        assert name == "neighbors" or PARAMETERS[name].config_key, name  # and a run-config key


@pytest.mark.parametrize(("fn", "name", "value", "record"), _api_cases())
def test_api_refuses_out_of_range(fn: Any, name: str, value: Any, record: str | None) -> None:
    with pytest.raises(InputError) as info:
        _api_call(fn, name, value, record)
    msg = str(info.value)
    assert f"The {name!r} parameter of " in msg and _allowed_words(PARAMETERS[name]) in msg, msg
    assert msg.count(". ") <= 1 and msg.endswith("instead."), msg


def test_the_same_ranges_everywhere() -> None:
    """The issue's examples: delta=1e-15 and tau=1e7 are refused by calibrate exactly as by certify."""
    from biasbound.bounds import Moments
    from biasbound.calibration import calibrate
    from biasbound.pipeline._settings import check_settings

    for kw in ({"delta": 1e-15}, {"tau": 1e7}):
        with pytest.raises(InputError) as a:
            calibrate(Moments(0.01, A=1.0), **{"tau": 0.5, "delta": 0.01, "dim": 10, **kw})
        with pytest.raises(InputError) as b:
            check_settings(**kw)
        assert str(a.value).replace("calibrate", "X") == str(b.value).replace("certify", "X")


def _command_options(command: str) -> dict[str, str]:
    """parameter name -> flag for every option of ``command`` the table declares."""
    import typer

    click_cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    out = {}
    for prm in click_cmd.params:
        p = PARAMETERS.get(str(prm.name))
        if p is not None and p.kind in ("float", "int", "choice"):
            assert p.flag.split("/")[0] in prm.opts, (command, p.name)  # type: ignore[union-attr]  # the table's flag
            out[p.name] = str(p.flag)
    return out


@pytest.fixture()
def judgments(tmp_path: Path) -> Path:
    rows = [f"j,m{m},q{i},original,0,{g},0.{(i * 7 + g + m) % 10}" for m in (1, 2) for i in range(6) for g in (1, 2)]
    path = tmp_path / "t.csv"
    path.write_text("judge,model,item_id,variant,rerun,game,score\n" + "\n".join(rows) + "\n")
    return path


@pytest.fixture()
def run_config(tmp_path: Path) -> Path:
    (tmp_path / "answers.csv").write_text("item_id,question,model,answer\nq1,What?,m1,Yes.\nq2,Why?,m1,No.\n")
    cfg = {"data": {"table": "answers.csv"}, "template": "single", "neighbors": {"generators": ["format"]},
           "judge": {"base_url": "http://127.0.0.1:9/v1", "model": "judge"}, "output": "out"}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, " ".join(err.split())


def _one_sentence(err: str, flag: str, p: Parameter, command: str) -> None:
    assert err.startswith("error: ") and err.count("error: ") == 1, err
    assert f"'{flag}' option of {command}" in err and _allowed_words(p) in err, err


_COMMANDS = {
    "certify": lambda d, j, c: ["certify", str(j), "--out", str(d / "o"), "--no-plots", "--no-progress"],
    "calibrate": lambda d, j, c: ["calibrate", "--tau", "0.5", "--delta", "0.01", "--dim", "100", "--sensitivity", "0.1"],
    "run": lambda d, j, c: ["run", str(c), "--no-progress"],
    "audit": lambda d, j, c: ["audit", str(d / "c.json"), "--neighbor-file", str(j), "--no-progress"],
}


def _cli_cases() -> list[Any]:
    return [pytest.param(cmd, n, v, id=f"{cmd}-{n}-{v}") for cmd in _COMMANDS
            for n, v in _cases(sorted(_command_options(cmd)))]


@pytest.mark.parametrize(("command", "name", "value"), _cli_cases())
def test_cli_refuses_out_of_range(command: str, name: str, value: Any, tmp_path: Path, judgments: Path,
                                  run_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = PARAMETERS[name]
    argv = _COMMANDS[command](tmp_path, judgments, run_config) + [p.flag, str(value)]
    code, err = _cli(argv, capsys)
    assert code == 2, err
    _one_sentence(err, str(p.flag), p, command)
    assert not (tmp_path / "o").exists() and not (tmp_path / "out").exists()  # refused before any work


def test_every_certify_parameter_is_a_run_option() -> None:
    numeric = {n for n in CERTIFY if PARAMETERS[n].kind in ("float", "int", "choice")}
    assert numeric <= set(_command_options("run")) and numeric <= set(_command_options("certify"))
    import typer

    run_flags = {o for prm in typer.main.get_command(app).commands["run"].params  # type: ignore[attr-defined]
                 for o in getattr(prm, "opts", [])}
    for n in CERTIFY:
        if n != "neighbors":  # run's generators are neighbors.generators of its config
            assert PARAMETERS[n].flag.split("/")[0] in run_flags, n  # type: ignore[union-attr]


def _config_cases() -> list[Any]:
    names = [n for n in CERTIFY if PARAMETERS[n].config_key]
    # a YAML file can also hold a word where a switch belongs, or an unknown spec
    other = [(n, "maybe") for n in names if PARAMETERS[n].kind == "bool"] + [("center", "middle")]
    return [pytest.param(n, v, id=f"{n}-{v}") for n, v in _cases(names) + other]


@pytest.mark.parametrize(("name", "value"), _config_cases())
def test_run_config_refuses_out_of_range(name: str, value: Any, run_config: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from biasbound.config import load_config

    p = PARAMETERS[name]
    cfg = yaml.safe_load(run_config.read_text())
    head, _, leaf = str(p.config_key).rpartition(".")
    (cfg.setdefault(head, {}) if head else cfg)[leaf] = value
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    with pytest.raises(DataFormatError) as info:
        load_config(bad)
    assert f"The key {p.config_key!r} must be" in str(info.value) and str(bad) in str(info.value)
    code, err = _cli(["run", str(bad)], capsys)
    allowed = {"bool": "true or false", "text": "'fixed:X'"}.get(p.kind) or _allowed_words(p)
    assert code == 2 and err.startswith(f"error: {bad}: The key {p.config_key!r}") and allowed in err, err
    assert err.endswith((f"Got {value!r} instead.", f"Got {value} instead.")), err


def test_run_config_takes_every_certify_key(run_config: Path, tmp_path: Path) -> None:
    from biasbound.config import load_config

    cfg = yaml.safe_load(run_config.read_text())
    cfg["calibration"] = {"sigma": 0.05, "hamming": "all", "range_bound": True, "deterministic_judge": True,
                          "method": "tight", "combine": "rms", "beta": None}
    cfg.update(tau=0.7, delta=0.02, view="leaderboard", seed=3, bootstrap_rounds=50, plots=False)
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump(cfg))
    c = load_config(path)
    kw = c.calibration.certify_kwargs()
    assert kw == {"tau": 0.7, "delta": 0.02, "method": "tight", "combine": "rms", "alpha": None, "beta": None,
                  "holdout": 0.3, "center": "fixed:0.5", "view": "leaderboard", "jitter_adjust": False,
                  "bootstrap_rounds": 50, "plots": False, "hamming": "all", "sigma": 0.05, "range_bound": True,
                  "deterministic_judge": True}
    assert c.seed == 3
    from biasbound.pipeline import certify

    assert set(kw) | {"seed", "neighbors"} == {n for n in CERTIFY}
    assert set(kw) <= set(inspect.signature(certify).parameters)


@pytest.mark.parametrize(("argv", "old", "new"), [
    (["certify", "{j}", "--out", "{d}/o", "--no-plots", "--no-progress", "--tau", "0", "--neighbors", "swap"],
     "--neighbors", "--generators"),
    (["calibrate", "--tau", "0.5", "--delta", "0.01", "--dim", "100", "--range", "0"], "--range", "--score-range"),
    (["audit", "{d}/missing.json", "--neighbors", "{j}"], "--neighbors", "--neighbor-file"),
])
def test_old_spellings_still_work_and_warn(argv: list[str], old: str, new: str, tmp_path: Path, judgments: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a.format(j=judgments, d=tmp_path) for a in argv]
    code, err = _cli(argv, capsys)
    assert f"warning: '{old}' of {argv[0]} is renamed '{new}'" in err, err
    assert code == 2 and err.count("error: ") == 1  # the value was used: the command went on to its next check
    both = argv + [new, "x" if new != "--score-range" else "1"]
    code, err = _cli(both, capsys)
    assert code == 2 and f"The '{old}' option of {argv[0]} is the old spelling of '{new}'; give one of the two" in err


def test_old_generators_spelling_certifies_the_same(tmp_path: Path, judgments: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    import json

    base = ["certify", str(judgments), "--no-plots", "--no-progress", "--seed", "4"]
    assert main([*base, "--out", str(tmp_path / "a"), "--generators", "swap"]) == 0
    assert main([*base, "--out", str(tmp_path / "b"), "--neighbors", "swap"]) == 0
    capsys.readouterr()
    a, b = (json.loads((tmp_path / x / "certificate.json").read_text()) for x in "ab")
    for doc in (a, b):
        doc.pop("created")
    assert a == b


def test_markup_in_a_config_name_is_printed_verbatim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "[bold]x.yaml"
    path.write_text("tau: 0.5\n")
    code, err = _cli(["run", str(path)], capsys)
    assert code == 2 and f"error: {path}: The key 'data'" in err, err
    code, err = _cli(["run", str(tmp_path / "[red]missing[/].yaml")], capsys)
    assert code == 2 and "[red]missing[/].yaml: The config file does not exist" in err, err


@pytest.mark.parametrize(("calibration", "options", "words"), [
    ({"method": "paper", "sigma": 0}, [], "> 0 with"),
    ({"method": "paper"}, ["--hamming", "2"], "must be 1 with"),
    ({"center": "holdout", "holdout": 0}, [], "must be > 0 with center='holdout'"),
    ({}, ["--method", "paper", "--range-bound"], "needs method 'tight'"),
])
def test_run_settings_that_do_not_fit_together_fail_before_judging(
        calibration: dict, options: list[str], words: str, run_config: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The certify stage's cross-checks run when the config is read (the judge at 127.0.0.1:9 is never called)."""
    cfg = yaml.safe_load(run_config.read_text())
    cfg["calibration"] = calibration
    path = tmp_path / "x.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code, err = _cli(["run", str(path), "--no-progress", *options], capsys)
    assert code == 2 and err.startswith(f"error: {path}: The certify settings do not fit together") and words in err, err
    assert not (tmp_path / "out").exists()


def test_the_public_functions_that_accepted_what_the_table_refuses() -> None:
    """The issue's three: each now refuses with the table's sentence, before reading its other arguments."""
    import biasbound as bb

    calls = [
        ("delta", "range_implied", lambda: bb.range_implied(tau=0.5, delta=1e-15, alpha=0.5, sigma=0.1, dim=10, A=1.0)),
        ("delta", "bias_radius", lambda: bb.bias_radius(1e-15, bb.AlmostSure(A=1.0))),
        ("tau", "audit_certificate", lambda: bb.audit_certificate(
            {"tau": 1e7, "delta": 0.01, "sigma": 0.1, "alpha": 0.5, "dim": 10, "center": "fixed"}, [0.1, 0.2])),
    ]
    for name, where, call in calls:
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value).startswith(f"The {name!r} parameter of {where} must be a float in "
                                          f"{PARAMETERS[name].range.text()}."), str(info.value)  # type: ignore[union-attr]


def test_what_the_table_allows_reaches_the_function_unchanged() -> None:
    """validate_params checks and never converts: a numpy integer stays one, None and arrays pass to the function."""
    import numpy as np

    from biasbound.parameters import validate_params

    @validate_params
    def f(dim: int, sigma: float | None = None, delta: object = None) -> tuple[object, object, object]:
        return dim, sigma, delta

    d = np.int64(3)
    out = f(d, delta=np.array([0.5, 2.0]))
    assert out[0] is d and out[1] is None and isinstance(out[2], np.ndarray)
    with pytest.raises(InputError, match=r"The 'dim' parameter of f must be an int in \[1, inf\)"):
        f(0)


def test_the_commands_and_the_config_record_are_generated_from_the_table() -> None:
    """certify's and run's options and the config's record come from the table: one declaration per name (a name
    added to CERTIFY reaches the three without another line)."""
    import dataclasses

    import typer

    from biasbound.commands.certify import CERTIFY_OPTIONS
    from biasbound.config import CONFIG_SETTINGS, CalibrationConfig

    group: Any = typer.main.get_command(app)
    for command, names in (("certify", CERTIFY_OPTIONS), ("run", [n for n in CERTIFY if n != "neighbors"])):
        params = {p.name: p for p in group.commands[command].params}
        for name in names:
            p = PARAMETERS[name]
            assert name in params and p.flag.split("/")[0] in params[name].opts, (command, name)  # type: ignore[union-attr]
            assert params[name].help.startswith(p.meaning), (command, name)
            if command == "run":
                assert params[name].default is None, name  # given: replaces the config's key
    assert group.commands["certify"].params[0].name == "inputs"  # the command's own arguments keep their places
    fields = dataclasses.fields(CalibrationConfig)
    assert [f.name for f in fields] == list(CONFIG_SETTINGS) == [n for n in CERTIFY if n not in ("neighbors", "seed")]
    assert all(f.default == PARAMETERS[f.name].default for f in fields)


def test_the_settings_record_is_generated_from_the_table() -> None:
    """pipeline certify's settings record: its fields are SETTINGS_FIELDS in that order (summary.json's ``settings``
    keys, then ``center``), a table name typed and defaulting as the table declares it, the parsed fields defaulting to
    the table's defaults parsed; a name check_settings validates is a field or parsed into one."""
    import dataclasses

    from biasbound.pipeline._settings import SETTINGS_FIELDS, _Settings, check_settings, parse_center

    fields = {f.name: f for f in dataclasses.fields(_Settings)}
    assert list(fields) == list(SETTINGS_FIELDS)
    assert list(check_settings().to_dict()) == [*SETTINGS_FIELDS, "center"]  # the key order of summary.json
    table = [n for n in SETTINGS_FIELDS if n in PARAMETERS]
    assert all(fields[n].default == PARAMETERS[n].default for n in table)
    assert fields["generators"].default == tuple(PARAMETERS["neighbors"].default)
    assert (fields["center_kind"].default, fields["center_value"].default) == parse_center(PARAMETERS["center"].default)
    assert set(inspect.signature(check_settings).parameters) - set(table) == {"neighbors", "center", "sampled"}
    assert check_settings() == _Settings()  # the defaults of the record are the checked defaults


@pytest.mark.parametrize(("given", "said"), [
    ({"center": "holdout", "holdout": 0}, "The 'holdout' parameter of certify must be > 0 with center='holdout'. "
                                          "Got 0.0 instead."),
    ({"jitter_adjust": True, "neighbors": "swap"}, "The 'jitter_adjust' parameter of certify needs a 'rerun' generator "
                                                   "and at least one other generator. Got neighbors='swap' instead."),
    ({"jitter_adjust": True, "neighbors": ["rerun"]}, "The 'jitter_adjust' parameter of certify needs a 'rerun' "
                                                      "generator and at least one other generator. Got "
                                                      "neighbors='rerun' instead."),
    ({"method": "paper", "hamming": "all"}, "The 'hamming' parameter of certify must be 1 with method='paper' (the "
                                            "paper's Hamming-1 neighbours). Got 'all' instead."),
    ({"method": "paper", "sigma": 0}, "The 'sigma' parameter of certify must be > 0 with method='paper' (Cor. 3.2 "
                                      "needs noise). Got 0 instead."),
    ({"method": "paper", "neighbors": "range"}, "The 'method' parameter of certify must be 'tight' to certify on the "
                                                "score range alone. Got 'paper' instead."),
])
def test_the_cross_checks_are_the_rules_of_the_table(given: dict[str, Any], said: str) -> None:
    """Each rule of RULES refuses with its own sentence, and only when its settings meet (each value alone is allowed;
    the other parameter changed, the same values pass)."""
    from biasbound.parameters import RULES
    from biasbound.pipeline._settings import check_settings

    with pytest.raises(InputError) as info:
        check_settings(**given)
    assert str(info.value) == said
    assert sum(said.startswith(f"The {r.name!r} parameter of certify {r.says.split('{')[0]}") for r in RULES) == 1
    loosened = {"holdout": {"holdout": 0.1}, "neighbors": {"neighbors": "swap,rerun"}, "method": {"method": "tight"}}
    fix = loosened["holdout"] if "holdout" in given else loosened["method"] if "method" in given else loosened["neighbors"]
    check_settings(**{**given, **fix})


def test_check_settings_takes_the_table_names_and_refuses_others() -> None:
    """check_settings' signature is generated from the table (each default the table's); another name is refused in
    one sentence naming it."""
    from biasbound.pipeline._settings import SETTINGS_PARAMETERS, check_settings

    params = inspect.signature(check_settings).parameters
    assert list(params) == [*SETTINGS_PARAMETERS, "sampled"]
    assert all(params[n].default == PARAMETERS[n].default for n in SETTINGS_PARAMETERS)
    with pytest.raises(TypeError) as info:
        check_settings(tau=0.5, plots=False, taus=0.5)
    msg = str(info.value)
    assert msg.endswith("Got 'plots', 'taus' instead.") and msg.count(". ") == 1, msg
    from biasbound.pipeline._certify import _ANCHORED_KEYS

    assert set(_ANCHORED_KEYS) <= set(SETTINGS_PARAMETERS)  # the anchored release's shared settings: table names


def _docstring_parameters(doc: str) -> dict[str, tuple[str, str]]:
    """The numpydoc Parameters section of ``doc``: each name -> (its type text, its description), an entry
    ``tau, delta : float`` giving both names."""
    import re
    import textwrap

    lines = textwrap.dedent("\n".join(doc.splitlines()[1:])).splitlines()
    start = lines.index("Parameters") + 2
    end = next(i for i in range(start, len(lines)) if i + 1 < len(lines) and set(lines[i + 1]) == {"-"})
    out: dict[str, tuple[str, str]] = {}
    names: list[str] = []
    for line in lines[start:end]:
        head = re.fullmatch(r"(\w+(?:, \w+)*)(?: : (.*))?", line)
        if head:
            names = head.group(1).split(", ")
            for n in names:
                assert n not in out, f"{n} is described twice"
                out[n] = (head.group(2) or "", "")
        elif line.strip():
            for n in names:
                out[n] = (out[n][0], f"{out[n][1]} {line.strip()}".strip())
    return out


def test_certify_signature_and_docstring_agree_with_the_table() -> None:
    """bb.certify writes its signature out (IDEs and the docs read it), checked here against the table: every certify
    and settings name is a keyword parameter, defaulting to the table's default; the docstring describes each
    parameter once (and nothing else), a choice's braces are the table's choices, a stated interval (``in [0, 0.9]``)
    and a stated default (``default ``fixed:0.5````) are the table's."""
    import re

    import biasbound as bb
    from biasbound.pipeline._settings import SETTINGS_PARAMETERS

    params = {n: p for n, p in inspect.signature(bb.certify).parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert set(CERTIFY) | set(SETTINGS_PARAMETERS) <= set(params)
    table = [n for n in params if n in PARAMETERS]
    wrong = [(n, params[n].default, PARAMETERS[n].default) for n in table if params[n].default != PARAMETERS[n].default]
    assert wrong == []
    doc = _docstring_parameters(bb.certify.__doc__ or "")
    assert set(doc) == set(params) | {"judgments"}
    for n in table:
        p, (kind, text) = PARAMETERS[n], doc[n]
        if p.kind == "choice":
            assert kind == "{" + ", ".join(f'"{c}"' for c in p.choices) + "}", n
        for interval in re.findall(r"\bin ([\[(][^\])]*[\])])", text):
            assert p.range is not None and interval == p.range.text(), (n, interval)
        for default in re.findall(r"default ``([^`]*)``", text):
            assert default == str(p.default), (n, default)


def test_run_config_keys_and_their_documentation_agree_with_the_table() -> None:
    """The run config's certify keys are the table's: each config key is allowed where the table puts it (top level
    or under 'calibration'), and the schema in biasbound.config's docstring shows every one of them with the table's
    default (the 'calibration' mapping in CERTIFY's order, each top-level key's value and its [default])."""
    import re

    import biasbound.config as config

    keys = {n: PARAMETERS[n].config_key for n in CERTIFY if PARAMETERS[n].config_key}
    top = {n: k for n, k in keys.items() if "." not in k}
    calibration = {n: k.split(".", 1)[1] for n, k in keys.items() if k.startswith("calibration.")}
    assert set(keys) == set(top) | set(calibration)
    assert set(top.values()) <= set(config._TOP_KEYS) and "calibration" in config._TOP_KEYS
    assert config._CALIBRATION_KEYS == tuple(calibration.values())
    doc = config.__doc__ or ""
    block = re.search(r"^    calibration: (\{[^}]*\})", doc, re.M)
    assert block is not None
    shown = yaml.safe_load(block.group(1))
    assert list(shown) == list(calibration.values())
    assert shown == {k: PARAMETERS[n].default for n, k in calibration.items()}
    for name, key in top.items():
        line = re.search(rf"^    {key}: (\S+)\s+# \[([^\]]*)\]", doc, re.M)
        assert line is not None, key
        assert yaml.safe_load(line.group(1)) == yaml.safe_load(line.group(2)) == PARAMETERS[name].default, key


def test_the_range_rule_holds_when_range_bound_replaces_the_generators() -> None:
    """range_bound on data without a neighbour puts the range generator in place after the data are read: the same
    rule (the tight method only) refuses it there, with the same sentence; with the tight method it certifies."""
    import pandas as pd

    from biasbound.pipeline import certify

    frame = pd.DataFrame({"judge": "j", "model": ["a"] * 3 + ["b"] * 3, "item_id": [1, 2, 3] * 2,
                          "score": [0.2, 0.5, 0.9, 0.4, 0.6, 0.1], "source": "t.csv", "line": range(2, 8)})
    with pytest.raises(InputError) as info:
        certify(frame, range_bound=True, method="paper", progress=False, plots=False)
    assert str(info.value) == ("The 'method' parameter of certify must be 'tight' to certify on the score range alone. "
                               "Got 'paper' instead.")
    assert certify(frame, range_bound=True, progress=False, plots=False).judges

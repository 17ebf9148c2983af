"""`biasbound certify` checks its parameters before reading any input, with certify's own error sentence."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from biasbound import InputError
from biasbound.cli import main
from biasbound.data import loading
from biasbound.pipeline import certify
from biasbound.pipeline._settings import check_settings

_FRAME = pd.DataFrame({"judge": ["j"], "model": ["m"], "item_id": ["q"], "score": [0.5], "game": [2]})


@pytest.fixture()
def no_loading(monkeypatch):
    """Make load_inputs fail the test if the command reaches it."""
    calls: list[object] = []

    def load_inputs(*args: object, **kwargs: object) -> None:
        calls.append(args)
        raise InputError("load_inputs was called")

    monkeypatch.setattr(loading, "load_inputs", load_inputs)  # certify reads it from there when it runs
    return calls


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (["--tau", "0"], {"tau": 0.0}),
        (["--delta", "1.5"], {"delta": 1.5}),
        (["--generators", "shuffle"], {"neighbors": "shuffle"}),
        (["--method", "exact"], {"method": "exact"}),
        (["--combine", "mean"], {"combine": "mean"}),
        (["--alpha", "1.5"], {"alpha": 1.5}),
        (["--beta", "1"], {"beta": 1.0}),
        (["--holdout", "0.95"], {"holdout": 0.95}),
        (["--view", "items"], {"view": "items"}),
        (["--center", "fixed:2"], {"center": "fixed:2"}),
        (["--center", "holdout", "--holdout", "0"], {"center": "holdout", "holdout": 0.0}),
        (["--generators", "swap", "--jitter-adjust"], {"neighbors": "swap", "jitter_adjust": True}),
        (["--bootstrap-rounds", "0"], {"bootstrap_rounds": 0}),
    ],
)
def test_bad_parameter_fails_before_loading(no_loading, tmp_path, capsys, args, kwargs):
    from biasbound._validation import speaking_cli

    with pytest.raises(InputError) as py_exc:  # a Python caller is told the Python parameter ...
        certify(_FRAME, **kwargs)
    assert "' parameter of certify" in str(py_exc.value)
    with speaking_cli("certify"), pytest.raises(InputError) as exc:  # ... a CLI user the option, same check
        certify(_FRAME, **kwargs)
    assert "' option of certify" in str(exc.value)
    code = main(["certify", str(tmp_path / "never-read.jsonl"), "--out", str(tmp_path / "o"), *args])
    err = capsys.readouterr().err
    assert code == 2 and no_loading == []
    # the same sentence, in the command line's words ('--tau' option rather than 'tau' parameter)
    from biasbound.cli import _in_cli_words

    assert " ".join(err.split()) == f"error: {' '.join(_in_cli_words(str(exc.value), 'certify').split())}"


def test_good_parameters_reach_loading(no_loading, tmp_path, capsys):
    code = main(["certify", str(tmp_path / "x.jsonl"), "--out", str(tmp_path / "o"), "--beta", "none"])
    assert code == 2 and len(no_loading) == 1
    assert "load_inputs was called" in capsys.readouterr().err


def test_check_settings_has_certifys_defaults_and_result():
    cert_params = inspect.signature(certify).parameters
    shared = inspect.signature(check_settings).parameters
    assert set(shared) <= set(cert_params)
    for name, p in shared.items():
        assert p.default == cert_params[name].default, name
    s = check_settings(neighbors="swap,rerun", center="fixed:0.25", seed=3)
    assert (s.generators, s.center_kind, s.center_value, s.seed) == (("swap", "rerun"), "fixed", 0.25, 3)

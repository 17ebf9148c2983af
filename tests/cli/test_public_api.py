"""The public surface: a sorted __all__ whose every name resolves, and a light import."""

from __future__ import annotations

import subprocess
import sys

import pytest

import biasbound


def test_all_is_sorted_and_unique():
    names = [n for n in biasbound.__all__ if n != "__version__"]
    assert names == sorted(names)
    assert len(set(biasbound.__all__)) == len(biasbound.__all__)


def test_every_public_name_resolves():
    for name in biasbound.__all__:
        assert getattr(biasbound, name) is not None, name


def test_unknown_attribute_raises():
    try:
        biasbound.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_does_not_load_pandas_or_http():
    code = "import sys, biasbound; print(sorted(m for m in ('pandas', 'openai', 'matplotlib', 'sklearn') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.slow  # end to end: a fresh interpreter
def test_judge_package_loads_the_openai_sdk_only_when_the_client_is_used():
    code = (
        "import sys\n"
        "import biasbound.judge, biasbound.testing\n"
        "before = 'openai' in sys.modules\n"
        "from biasbound.judge import judge_many_sync\n"
        "print(before, 'openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.split() == ["False", "True"]


def test_one_calibrator_and_no_legacy_names():
    import importlib.util

    from biasbound.calibration import calibrate

    assert biasbound.calibrate is calibrate and not hasattr(biasbound, "calibrate_knowledge")  # one name
    assert "Calibration" not in biasbound.__all__  # the legacy calibrator's record went with it
    for gone in ("biasbound.abb", "biasbound._bounds", "biasbound._certificate_v1"):
        assert importlib.util.find_spec(gone) is None, gone

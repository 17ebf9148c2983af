"""biasbound.neighbors loads the generators and the registry on first access only."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import biasbound.neighbors as nb

_WHERE = {
    "AgreeableGenerator": "agreeable", "FormatGenerator": "formatting", "GENERATORS": "registry",
    "ParaphraseGenerator": "paraphrase", "RerunGenerator": "rerun", "SchematicGenerator": "schematic",
    "SwapGenerator": "swap", "apply_neighbor": "registry", "make_generator": "registry",
    "sample_neighbors": "registry", "sample_neighbors_async": "registry",
}


def test_import_does_not_load_the_generators() -> None:
    code = (
        "import sys, biasbound.neighbors as nb\n"
        "from biasbound.neighbors import observed_neighbors, canonical_scores, JudgeItem\n"
        "mods = ['jinja2', 'biasbound.neighbors.registry'] + "
        "['biasbound.neighbors.' + m for m in ('agreeable', 'formatting', 'paraphrase', 'rerun', 'schematic', 'swap')]\n"
        "print(sorted(m for m in mods if m in sys.modules))\n"
        "from biasbound.neighbors import ParaphraseGenerator\n"
        "print('biasbound.neighbors.paraphrase' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "True"]


@pytest.mark.parametrize("name", sorted(_WHERE))
def test_every_lazy_name_is_the_defining_modules_object(name: str) -> None:
    module = importlib.import_module(f"biasbound.neighbors.{_WHERE[name]}")
    assert getattr(nb, name) is getattr(module, name)
    ns: dict[str, object] = {}
    exec(f"from biasbound.neighbors import {name}", ns)  # noqa: S102 - the import form users write
    assert ns[name] is getattr(module, name)


def test_all_names_resolve_and_unknown_raises() -> None:
    assert set(nb._LAZY) == set(_WHERE) and set(_WHERE) <= set(nb.__all__)
    ns: dict[str, object] = {}
    exec("from biasbound.neighbors import *", ns)  # noqa: S102
    assert set(nb.__all__) <= set(ns) and set(nb.__all__) <= set(dir(nb))
    with pytest.raises(AttributeError, match="no_such_name"):
        nb.no_such_name  # noqa: B018

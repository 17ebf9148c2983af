"""The certificate's JSON routes made faster give the values of the plain code they replaced.

Compared with verbatim copies of the plain references on seeded random JSON-like trees (numpy scalars and
arrays, tuples, non-string keys, nesting); the comparisons are exact (== and type), so a failure means a
changed value, never noise. No statistical test here (false-failure rate 0).
"""

from __future__ import annotations

import numpy as np

from biasbound.certificate import _plain


def _reference_plain(value):
    """`_plain` as it was: one call per value at every level."""
    kind = type(value)
    if value is None or kind is str or kind is float or kind is int or kind is bool:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): _reference_plain(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_reference_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _reference_plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _reference_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_reference_plain(v) for v in value]
    return value


def _random_tree(rng: np.random.Generator, depth: int):
    """A JSON-like tree mixing built-in scalars, numpy scalars and arrays, tuples and non-string keys."""
    scalars = [lambda: float(rng.normal()), lambda: int(rng.integers(-5, 5)), lambda: bool(rng.integers(2)),
               lambda: None, lambda: f"s{int(rng.integers(100))}", lambda: np.float64(rng.normal()),
               lambda: np.int64(rng.integers(9)), lambda: np.bool_(rng.integers(2)), lambda: np.float32(0.5)]
    pick = int(rng.integers(0, 6 if depth > 0 else 1))
    if pick == 0:
        return scalars[int(rng.integers(len(scalars)))]()
    n = int(rng.integers(0, 5))
    if pick == 1:  # a leaf list: built-in scalars only (the fast copy), or one numpy value among them
        out = [scalars[int(rng.integers(5))]() for _ in range(n)]
        if n and rng.integers(2):
            out[int(rng.integers(n))] = np.float64(1.25)
        return out if rng.integers(2) else tuple(out)
    if pick == 2:
        return np.round(rng.normal(size=n), 3) if rng.integers(2) else np.arange(n)
    keys = [f"k{i}" if rng.integers(4) else (i if rng.integers(2) else float(i) + 0.5) for i in range(n)]
    if pick == 3:  # a leaf dict
        return {k: scalars[int(rng.integers(5))]() for k in keys}
    return {k: _random_tree(rng, depth - 1) for k in keys} if pick == 4 else [_random_tree(rng, depth - 1) for _ in keys]


def _same(a, b) -> bool:
    """Equal values of equal types at every level (1 == 1.0 == True would hide a changed type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b or (a != a and b != b)


def test_plain_equals_the_reference_on_random_trees():
    rng = np.random.default_rng(20261126)
    for _ in range(2000):
        tree = _random_tree(rng, 3)
        assert _same(_plain(tree), _reference_plain(tree)), tree


def test_plain_returns_new_containers():
    """A leaf copied by the fast route is a new list/dict, as before: editing the result leaves the input as it was."""
    leaf_list, leaf_dict = [1.0, 2, "a"], {"a": 1.0, "b": None}
    out_list, out_dict = _plain(leaf_list), _plain({"x": leaf_dict})["x"]
    out_list.append(3.0)
    out_dict["c"] = 1
    assert leaf_list == [1.0, 2, "a"] and leaf_dict == {"a": 1.0, "b": None}
    assert _plain((1.0, 2)) == [1.0, 2] and type(_plain((1.0, 2))) is list


def test_shared_radii_give_the_certificates_computed_alone(demo_set, monkeypatch):
    """The pipeline shares one ``shared_radii`` dict among a judge's certificates (a model's records come again in
    the judge's): every certificate is the one computed with each curve recomputed (exact equality)."""
    import biasbound.certificate as bc
    from biasbound.pipeline import certify

    def certificates():
        res = certify(demo_set, method="tight", out=None, progress=False, plots=False, seed=0)
        out = []
        for j in res.judges.values():
            for c in (j.certificate, *j.model_certificates.values()):
                d = c.to_dict()
                d.pop("created"), d.pop("records_sha256")
                out.append(d)
        return out

    shared = certificates()
    calls = []
    make = bc.make_certificate

    def alone(*args, **kwargs):
        calls.append(kwargs.get("shared_radii"))
        return make(*args, **{**kwargs, "shared_radii": None})

    monkeypatch.setattr(bc, "make_certificate", alone)
    assert certificates() == shared
    assert len(calls) > 2 and all(isinstance(c, dict) for c in calls)  # the pipeline did pass a shared dict
    assert len({id(c) for c in calls}) < len(calls)  # one dict for several certificates (else nothing is shared)
    assert any(d["bias_radius"]["per_record_curve"] for d in shared)
    judge = [d for d in shared if d["scope"].get("model") == "*"]
    assert judge and any(len(d["bias_radius"]["per_generator"]) > 1 for d in judge)  # the judge's radii were shared

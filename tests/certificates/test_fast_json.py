"""The certificate's and the judgments digest's JSON routes made faster give the values of the plain code they replaced.

Compared with verbatim copies of the plain references on seeded random JSON-like trees (numpy scalars and
arrays, tuples, non-string keys, nesting); the comparisons are exact (== and type), so a failure means a
changed value, never noise. No statistical test here (false-failure rate 0).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import numpy as np

from biasbound._integrity import _lex_order, canonical_json, sha256_text, judgments_digest
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
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


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


# ------------------------------------------------------------------ judgments digest: the plain reference (as it was)
def _reference_judgments_digest(frame):
    """`judgments_digest` as it was: the head JSON of every model encoded whole."""
    import pandas as pd

    n = len(frame)

    def column(c: str, default: Any) -> Any:
        return frame[c] if c in frame.columns else pd.Series([default] * n, index=frame.index)

    judges = sorted(set(map(str, pd.unique(column("judge", "").astype(str)))))
    m_codes, models = pd.factorize(column("model", "").astype(str), sort=True)
    i_codes, items = pd.factorize(column("item_id", "").astype(str), sort=True)
    v_codes, variants = pd.factorize(column("variant", "original").astype(str), sort=True)
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
    sm, si, sv = m_codes[order], i_codes[order], v_codes[order]
    cuts = [0, *(np.flatnonzero(sm[1:] != sm[:-1]) + 1).tolist(), n] if n else [0]
    # a model's sorted distinct items and each row's index among them: its rows are sorted by item within the
    # model, so the distinct ones are where the item changes; its variants through a (model × variant) table
    first = np.ones(n, dtype=bool)
    first[1:] = (sm[1:] != sm[:-1]) | (si[1:] != si[:-1])
    rank = np.cumsum(first) - 1
    starts = np.asarray(cuts[:-1], dtype=np.int64)
    local_i = rank - np.repeat(rank[starts], np.diff(cuts)) if n else rank
    seen = np.zeros((len(models), len(variants)), dtype=bool)
    seen[sm, sv] = True
    local_v = (np.cumsum(seen, axis=1) - 1)[sm, sv] if n else sv
    for a, b in zip(cuts[:-1], cuts[1:]):
        idx = order[a:b]
        it, vt = si[a:b][first[a:b]], np.flatnonzero(seen[sm[a]])  # sorted global codes = sorted names
        head = {"judge": judges[0] if len(judges) == 1 else judges, "model": str(models[sm[a]]),
                "item_ids": items[it].tolist(), "variants": variants[vt].tolist()}
        h = hashlib.sha256((canonical_json(head) + "\n").encode("utf-8"))
        for arr in (local_i[a:b], local_v[a:b], rerun[idx], game[idx]):
            h.update(np.ascontiguousarray(arr, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(score[idx], dtype="<f8").tobytes())
        per_model[str(models[sm[a]])] = h.hexdigest()
    return sha256_text(canonical_json(per_model)), per_model


def _random_judgments(rng: np.random.Generator):
    """A judgment table: models on the same items or on their own subsets, odd ids (quotes, backslashes, non-ASCII,
    digits), one or two judges, some columns left out."""
    import pandas as pd

    names = ["q1", "q2", 'say "hi"', "back\\slash", "é-ü", "10", "2", "ß", "emoji 🙂", " lead"]
    rows = []
    same = bool(rng.integers(2))
    for m in range(int(rng.integers(1, 6))):
        items = names if same else [x for x in names if rng.random() < 0.6] or names[:1]
        for it in items:
            for v in ("original", "swap", "para")[: int(rng.integers(1, 4))]:
                rows.append({"judge": "j" if rng.random() < 0.9 else "k", "model": f"m{m}" if m % 2 else f"модель {m}",
                             "item_id": it, "variant": v, "rerun": int(rng.integers(2)), "game": int(rng.integers(1, 3)),
                             "score": float(rng.choice([np.nan, -0.0, 0.25, 1.0]))})
    frame = pd.DataFrame(rows).drop_duplicates(["model", "item_id", "variant", "rerun", "game"])
    drop = [c for c in ("variant", "rerun", "game") if rng.random() < 0.2]
    return frame.drop(columns=drop).sample(frac=1.0, random_state=int(rng.integers(1000)))


def test_judgments_digest_equals_the_reference_on_random_tables():
    rng = np.random.default_rng(7)
    for _ in range(150):
        frame = _random_judgments(rng)
        assert judgments_digest(frame) == _reference_judgments_digest(frame)
    empty = _random_judgments(rng).iloc[:0]
    assert judgments_digest(empty) == _reference_judgments_digest(empty)

"""Property-based fuzzing of every loader: whatever the bytes, a loader returns data or raises a biasbound
error (one sentence) — never another exception type. Hypothesis runs derandomized (a fixed seed derived
from each test) with a bounded number of examples, so the run is reproducible and fast.

Plus one exact property: the line a CSV row is reported at is the physical line an editor shows,
whatever blank lines and quoted newlines come before it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from biasbound import BiasboundError
from biasbound.commands.audit import read_certificate
from biasbound.config import load_config
from biasbound.data import load_arena_hard, load_llmbar, load_table
from biasbound.data.factors import load_factor_table

pytestmark = pytest.mark.slow  # property-based fuzzing of every loader (~14 s on a loaded machine)

FUZZ = settings(derandomize=True, max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)
KEYS = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict", "question_id", "games", "uid"]
records = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=7)
cells = st.one_of(st.sampled_from(["", "0", "1", "0.5", "2", "-1", "inf", "nan", "x", "m", "q1", "original",
                                   '"a,b"', '"x\ny"', '"', " "]), st.text(max_size=5))


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _must_be_clean(fn, *args, **kwargs):
    """Call a loader; a biasbound error is a fine answer to bad input, any other exception is a bug."""
    try:
        return fn(*args, **kwargs)
    except BiasboundError as exc:
        text = str(exc)
        assert text and "\n" not in text.strip() and "Traceback" not in text
        assert "np.float64(" not in text and "np.int64(" not in text
        return None


@FUZZ
@given(data=st.binary(max_size=300), name=st.sampled_from(["t.csv", "t.tsv", "t.jsonl", "t.parquet", "t.csv.gz",
                                                          "t.jsonl.gz", "t.csv.bz2", "t.csv.xz"]),
       skip_bad=st.booleans())
def test_load_table_on_arbitrary_bytes(tmp_path, data, name, skip_bad) -> None:
    _must_be_clean(load_table, _write(tmp_path, name, data), skip_bad=skip_bad)


@FUZZ
@given(rows=st.lists(st.lists(cells, min_size=1, max_size=8), max_size=8), skip_bad=st.booleans(),
       header=st.sampled_from(["judge,model,item_id,variant,rerun,game,score", "item_id,model,score",
                               "model,score", "item_id,model,score,score"]))
def test_load_table_on_csv_shaped_text(tmp_path, rows, skip_bad, header) -> None:
    text = header + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    js = _must_be_clean(load_table, _write(tmp_path, "t.csv", text.encode()), skip_bad=skip_bad)
    if js is not None:  # loaded: every score normalised into [0, 1] (or missing), every line a real line
        score = js.frame["score"].to_numpy(dtype=float)
        assert np.all(np.isnan(score) | ((score >= 0) & (score <= 1)))
        assert js.frame["line"].between(2, text.count("\n") + 1).all()


@FUZZ
@given(lines=st.lists(records | json_values, max_size=6), skip_bad=st.booleans())
def test_load_table_on_jsonl_records(tmp_path, lines, skip_bad) -> None:
    text = "\n".join(json.dumps(r) for r in lines) + "\n"
    _must_be_clean(load_table, _write(tmp_path, "t.jsonl", text.encode()), skip_bad=skip_bad)


@FUZZ
@given(lines=st.lists(records | json_values, max_size=6), skip_bad=st.booleans(), gz=st.booleans())
def test_load_arena_hard_on_json_lines(tmp_path, lines, skip_bad, gz) -> None:
    text = ("\n".join(json.dumps(r) for r in lines) + "\n").encode()
    path = _write(tmp_path, "a.jsonl.gz" if gz else "a.jsonl", gzip.compress(text) if gz else text)
    _must_be_clean(load_arena_hard, path, skip_bad=skip_bad)


@FUZZ
@given(games=st.lists(json_values | st.dictionaries(st.sampled_from(["score", "judgment"]), json_values, max_size=2),
                      max_size=3), skip_bad=st.booleans())
def test_load_arena_hard_on_odd_games(tmp_path, games, skip_bad) -> None:
    rec = {"question_id": "q", "model": "m", "games": games}
    _must_be_clean(load_arena_hard, _write(tmp_path, "a.jsonl", (json.dumps(rec) + "\n").encode()), skip_bad=skip_bad)


@FUZZ
@given(data=st.binary(max_size=200), rows=st.lists(st.lists(cells, min_size=7, max_size=7), max_size=5))
def test_load_llmbar_on_bad_input(tmp_path, data, rows) -> None:
    _must_be_clean(load_llmbar, _write(tmp_path, "b.csv", data))
    head = "subset,item,gold_label,judge,strategy,winner_orig_order,winner_swapped_order\n"
    text = head + "\n".join(",".join(r) for r in rows) + "\n"
    _must_be_clean(load_llmbar, _write(tmp_path, "l.csv", text.encode()))


@FUZZ
@given(lines=st.lists(records | json_values, max_size=5), data=st.binary(max_size=120))
def test_load_factor_table_on_bad_input(tmp_path, lines, data) -> None:
    text = "\n".join(json.dumps(r) for r in lines) + "\n"
    _must_be_clean(load_factor_table, _write(tmp_path, "f.jsonl", text.encode()), factors=["score"], overall="rerun")
    _must_be_clean(load_factor_table, _write(tmp_path, "f.csv", data), factors=["a"], overall="b")


@FUZZ
@given(cert=json_values | st.dictionaries(st.sampled_from(["tau", "delta", "sigma", "alpha", "dim", "scope", "center",
                                                            "view"]), json_values, max_size=8))
def test_read_certificate_on_arbitrary_json(tmp_path, cert) -> None:
    _must_be_clean(read_certificate, _write(tmp_path, "c.json", json.dumps(cert).encode()))


@FUZZ
@given(doc=st.dictionaries(st.sampled_from(["tau", "delta", "seed", "data", "judge", "template", "neighbors",
                                            "calibration", "output", "bootstrap_rounds"]), json_values, max_size=6),
       raw=st.binary(max_size=80))
def test_load_config_on_arbitrary_yaml(tmp_path, doc, raw) -> None:
    import yaml

    _must_be_clean(load_config, _write(tmp_path, "r.yaml", yaml.safe_dump(doc).encode()))
    _must_be_clean(load_config, _write(tmp_path, "s.yaml", raw))


@settings(derandomize=True, max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(layout=st.lists(st.tuples(st.integers(0, 2), st.booleans()), min_size=1, max_size=12), bad_at=st.integers(0, 11))
def test_reported_line_is_the_physical_line(tmp_path, layout, bad_at) -> None:
    """Rows separated by 0-2 blank lines, some with a quoted two-line note: the bad row's error names
    exactly the line its record starts on."""
    lines = ["item_id,model,note,score"]
    starts = []
    bad_at = bad_at % len(layout)
    for k, (blanks, two_line_note) in enumerate(layout):
        lines += [""] * blanks
        starts.append(sum(line.count("\n") + 1 for line in lines) + 1)  # physical lines so far, plus one
        note = '"first\nsecond"' if two_line_note else "plain"
        lines.append(f"q{k},m,{note},{'oops' if k == bad_at else 0.5}")
    path = _write(tmp_path, "t.csv", ("\n".join(lines) + "\n").encode())
    with pytest.raises(BiasboundError) as info:
        load_table(path, scale=(0, 1))
    assert info.value.line == starts[bad_at]
    js = load_table(path, scale=(0, 1), skip_bad=True)
    assert js.frame["line"].tolist() == [s for k, s in enumerate(starts) if k != bad_at]


ALPACA_KEYS = ["instruction", "output_1", "output_2", "generator_1", "generator_2", "annotator", "preference"]
MT_KEYS = ["question_id", "model", "model_1", "model_2", "judge", "score", "g1_winner", "g2_winner", "turn", "games"]


@FUZZ
@given(recs=st.lists(st.dictionaries(st.sampled_from(ALPACA_KEYS), json_values, max_size=7), max_size=4),
       skip_bad=st.booleans())
def test_load_alpaca_eval_on_odd_records(tmp_path, recs, skip_bad) -> None:
    from biasbound.data.alpaca_eval import load_alpaca_eval

    _must_be_clean(load_alpaca_eval, _write(tmp_path, "annotations.json", json.dumps(recs).encode()), skip_bad=skip_bad)


@FUZZ
@given(recs=st.lists(st.dictionaries(st.sampled_from(MT_KEYS), json_values, max_size=8), max_size=4),
       kind=st.sampled_from(["gpt-4_single.jsonl", "gpt-4_pair.jsonl"]), skip_bad=st.booleans())
def test_load_mt_bench_on_odd_records(tmp_path, recs, kind, skip_bad) -> None:
    from biasbound.data.mt_bench import load_mt_bench

    text = "\n".join(json.dumps(r) for r in recs) + "\n"
    _must_be_clean(load_mt_bench, _write(tmp_path, kind, text.encode()), skip_bad=skip_bad)


@settings(derandomize=True, max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200), doc=json_values)
def test_load_inspect_log_on_bad_input(tmp_path, data, doc) -> None:
    from biasbound.data.inspect_log import load_inspect_log

    _must_be_clean(load_inspect_log, _write(tmp_path, "log.eval", data))
    _must_be_clean(load_inspect_log, _write(tmp_path, "log.json", json.dumps({"eval": doc, "version": 2}).encode()))

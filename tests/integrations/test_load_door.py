"""``bb.load``, the one Python door for inputs, reads every format ``biasbound certify`` reads, as certify reads it.

For each format: the input (a vendored fixture under tests/data, or a small table the test writes) is detected as that
format, and ``bb.load`` returns the very judgments its reader returns (the same rows and scores; only the ``source``
column names the input by its display name instead of the path as typed).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import biasbound as bb
from biasbound import InputError
from biasbound.data import (
    detect_format,
    load_alpaca_eval,
    load_arena_hard,
    load_battles,
    load_llmbar,
    load_mt_bench,
    load_table,
)

DATA = Path(__file__).resolve().parents[1] / "data"

_LONG = pd.DataFrame({
    "judge": ["j"] * 6, "model": ["m1", "m1", "m2", "m2", "m1", "m2"], "item_id": ["q1", "q2", "q1", "q2", "q1", "q1"],
    "game": [1, 1, 1, 1, 2, 2], "score": [7.0, 3.0, 5.0, 9.0, 6.0, 4.0],
})
_BATTLES = pd.DataFrame({"question_id": ["q1", "q1", "q2", "q2"], "model_a": ["x", "y", "x", "y"],
                         "model_b": ["y", "x", "y", "x"], "winner": ["model_a", "model_b", "tie", "model_a"]})


def _write_long(fmt: str) -> Callable[[Path], Path]:
    def write(tmp: Path) -> Path:
        path = tmp / f"judgments.{fmt}"
        if fmt == "csv":
            _LONG.to_csv(path, index=False)
        elif fmt == "tsv":
            _LONG.to_csv(path, sep="\t", index=False)
        elif fmt == "jsonl":
            _LONG.to_json(path, orient="records", lines=True)
        elif fmt == "json":
            _LONG.to_json(path, orient="records")
        else:
            _LONG.to_parquet(path, index=False)
        return path
    return write


def _battles(tmp: Path) -> Path:
    path = tmp / "battles.csv"
    _BATTLES.to_csv(path, index=False)
    return path


def _vendored(relative: str) -> Callable[[Path], Path]:
    def copy(tmp: Path) -> Path:  # a copy under the test's own folder (the display name is its file or folder name)
        src = DATA / relative
        dst = tmp / src.name
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copyfile(src, dst)
        return dst
    return copy


CASES: list[tuple[str, Callable[[Path], Path], str, Callable[[Path], Any]]] = [
    *[(f"long table {fmt}", _write_long(fmt), "table", lambda p: load_table(p, scale=(1.0, 10.0)))
      for fmt in ("csv", "tsv", "jsonl", "json", "parquet")],
    ("battle table", _battles, "battles", load_battles),
    ("FastChat MT-Bench single", _vendored("mt_bench/phi-3/model_judgment/gpt-4_single.jsonl"), "mt_bench",
     load_mt_bench),
    ("FastChat MT-Bench pair", _vendored("mt_bench/phi-3/model_judgment/gpt-4_pair.jsonl"), "mt_bench", load_mt_bench),
    ("AlpacaEval folder", _vendored("alpaca_eval/results/alpaca-7b"), "alpaca_eval", load_alpaca_eval),
    ("Arena-Hard judgments", _vendored("ko-arena-hard-v0.1/judgments_ensemble.jsonl.gz"), "arena-hard",
     load_arena_hard),
    ("LLMBar both-order CSV", _vendored("llmbar/judgments.csv.gz"), "llmbar", load_llmbar),
]


def _same_judgments(got: pd.DataFrame, want: pd.DataFrame, tmp: Path) -> None:
    assert len(got) > 0
    pd.testing.assert_frame_equal(got.drop(columns="source"), want.drop(columns="source"))
    assert not any(str(tmp) in s for s in got["source"].astype(str)), "the path as typed never reaches the outputs"


@pytest.mark.parametrize(("what", "make", "fmt", "reader"), CASES, ids=[c[0] for c in CASES])
def test_bb_load_reads_each_format_as_its_reader_does(what, make, fmt, reader, tmp_path):
    path = make(tmp_path)
    assert detect_format(path) == fmt, what
    options = {"scale": (1.0, 10.0)} if fmt == "table" else {}
    loaded = bb.load(path, **options)
    assert isinstance(loaded, bb.LoadedInputs)
    (report,) = loaded.report.values()
    assert report["format"] == fmt
    _same_judgments(loaded.frame, reader(path).frame, tmp_path)
    assert [r["format"] for r in loaded.options["inputs"]] == [fmt]


def test_bb_load_reads_an_inspect_log(tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_helpers import graded_task, run_eval

    from biasbound.data import load_inspect_log

    log = run_eval(graded_task("CIPC"), [str(2 * i) for i in range(4)], tmp_path)
    assert detect_format(log) == "inspect"
    loaded = bb.load(log)
    (report,) = loaded.report.values()
    assert report["format"] == "inspect" and report["integration"]["score_rule"]
    _same_judgments(loaded.frame, load_inspect_log(log).frame, tmp_path)


def test_bb_load_concatenates_inputs_and_takes_options_as_certify_types_them(tmp_path):
    csv, tsv = _write_long("csv")(tmp_path), _write_long("tsv")(tmp_path)
    (tmp_path / "b").mkdir()
    other = _write_long("csv")(tmp_path / "b")
    _LONG.assign(model=_LONG["model"] + "-b").to_csv(other, index=False)
    typed = bb.load([csv, other], scale="1,10", columns="judge=judge")
    given = bb.load([str(csv), str(other)], scale=(1, 10), columns={"judge": "judge"})
    assert len(typed.frame) == 2 * len(_LONG)
    assert list(typed.report) == [f"{tmp_path.name}/judgments.csv", "b/judgments.csv"]  # told apart by their folders
    pd.testing.assert_frame_equal(typed.frame, given.frame)
    assert typed.options["scale"] == [1.0, 10.0] == given.options["scale"]
    # the same judgment in two inputs is an error naming both, as certify says it
    with pytest.raises(InputError):
        bb.load([csv, tsv], scale=(1, 10))


@pytest.mark.parametrize(("options", "words"), [
    ({"scael": (1, 10)}, "'scael'"),
    ({"scale": (10, 1)}, "lo < hi"),
    ({"scale": "1,x"}, "'--scale'"),
    ({"columns": "judge"}, "NAME=COLUMN"),
])
def test_bb_load_refuses_a_bad_option_in_one_sentence(options, words, tmp_path):
    with pytest.raises(InputError) as err:
        bb.load(_write_long("csv")(tmp_path), **options)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_bb_load_names_a_missing_input(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        bb.load(tmp_path / "nowhere.csv")

"""The coded judgment frame: every route through it gives what the string frame gave.

``coded_frame`` against the texts it codes, the Parquet reader's coded route against a plain read of the same
file, the repeated-key check on codes against ``DataFrame.duplicated``, the judgments digest of a coded frame
against the digest of the same strings, and the errors that name a file and line. Seeded tables, exact
comparisons (no statistical test: false-failure rate 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from biasbound._exceptions import DataFormatError, InputError
from biasbound._integrity import judgments_digest
from biasbound.data.coded import ColumnCodes, coded_frame, duplicated_keys, is_coded
from biasbound.data.tables import from_frame, load_table, sorted_codes
from biasbound.pipeline._settings import _check_frame

KEY = ["judge", "model", "item_id", "variant", "rerun", "game"]


def _table(seed: int, *, int_items: bool = False, missing_ids: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    items = rng.integers(0, 40, n) if int_items else rng.choice([f"q{k}" for k in range(40)] + ["Q", "é", "e\u0301"], n)
    frame = pd.DataFrame({
        "judge": rng.choice(["jB", "jA"], n),
        "model": rng.choice([f"m{k}" for k in range(12)] + ["modèle", "M"], n),
        "item_id": items,
        "variant": rng.choice(["original", "bold", "paraphrase"], n),
        "rerun": rng.integers(0, 3, n), "game": rng.integers(0, 3, n),
        "score": np.where(rng.random(n) < 0.1, np.nan, np.round(rng.random(n), 2)),
    })
    if missing_ids:
        frame["model"] = frame["model"].astype(object)
        frame.loc[rng.random(n) < 0.1, "model"] = None
    return frame


@pytest.mark.parametrize("seed", range(12))
def test_coded_frame_holds_the_texts_of_the_string_frame(seed: int) -> None:
    frame = _table(seed, int_items=seed % 3 == 1, missing_ids=seed % 4 == 3)
    coded = coded_frame(frame)
    assert is_coded(coded) and not is_coded(frame)
    assert coded_frame(coded) is coded  # idempotent, no copy
    for col in ("judge", "model", "item_id", "variant"):
        cats = coded[col].cat.categories
        assert list(cats) == sorted(set(cats)) and all(isinstance(c, str) for c in cats)
        missing = frame[col].isna().to_numpy()
        assert np.array_equal(coded[col].isna().to_numpy(), missing)
        want = np.asarray([str(v) for v in frame[col].to_numpy(dtype=object)], dtype=object)
        got = coded[col].astype(object).to_numpy()
        assert np.array_equal(got[~missing], want[~missing])
        if not missing.any():  # the codes are sorted_codes' of the texts
            codes, names = sorted_codes(coded[col])
            plain_codes, plain_names = sorted_codes(frame[col])
            assert np.array_equal(codes, plain_codes) and np.array_equal(names, plain_names)
    for col in ("rerun", "game", "score"):
        assert coded[col] is frame[col] or coded[col].equals(frame[col])
    frame_before = frame.copy()
    coded_frame(frame)
    pd.testing.assert_frame_equal(frame, frame_before)  # the caller's frame is never changed


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("keep", [False, "first"])
def test_repeated_keys_on_codes_equal_duplicated(seed: int, keep: str | bool) -> None:
    frame = _table(seed, int_items=seed % 2 == 1, missing_ids=seed % 3 == 2)
    want = frame.duplicated(KEY, keep=keep).to_numpy()
    got = duplicated_keys(ColumnCodes(coded_frame(frame)), keep=keep)
    assert np.array_equal(got, want)
    assert np.array_equal(duplicated_keys(ColumnCodes(frame), keep=keep), want)  # a string frame: the same marks


@pytest.mark.parametrize("seed", range(8))
def test_digest_of_a_coded_frame_equals_the_digest_of_its_strings(seed: int) -> None:
    frame = _table(seed, int_items=seed % 2 == 1).drop_duplicates(KEY)
    text = frame.astype({"judge": "str", "model": "str", "item_id": "str", "variant": "str"})
    coded = coded_frame(frame)
    for judge in ("jA", "jB"):
        assert judgments_digest(coded[coded["judge"] == judge]) == judgments_digest(text[text["judge"] == judge])
    assert judgments_digest(coded) == judgments_digest(text)


def _write_groups(path, frame: pd.DataFrame, rows_per_group: int) -> None:
    """A Parquet file of several row groups, each with its own dictionaries (the reader unifies them)."""
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path, row_group_size=rows_per_group)


@pytest.mark.parametrize("seed", range(4))
def test_the_readers_coded_route_equals_the_plain_read(tmp_path, seed: int) -> None:
    frame = _table(seed).drop_duplicates(KEY).reset_index(drop=True)
    frame["verdict"] = np.where(np.arange(len(frame)) % 3 == 0, None, "A>B")
    originals = frame.index[frame["variant"] == "original"]
    frame.loc[originals[::3], "variant"] = None  # a missing variant reads as 'original'
    path = tmp_path / "t.parquet"
    _write_groups(path, frame, rows_per_group=max(len(frame) // 5, 1))
    assert pq.ParquetFile(path).num_row_groups > 1
    got = load_table(path, scale=(0.0, 1.0))
    plain = from_frame(pd.read_parquet(path), source=str(path), scale=(0.0, 1.0), judge="t")
    pd.testing.assert_frame_equal(got.frame, plain.frame, check_exact=True)
    assert got.report == plain.report
    assert is_coded(got.frame)
    assert str(got.frame["line"].dtype) == "int32" and got.frame["line"].tolist() == list(range(1, len(frame) + 1))
    # the same table as CSV: the same coded frame but for the file's name and line numbers
    csv = tmp_path / "t.csv"
    frame.to_csv(csv, index=False)
    from_csv = load_table(csv, scale=(0.0, 1.0)).frame
    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score"]
    pd.testing.assert_frame_equal(from_csv[cols], got.frame[cols], check_exact=True)


def test_a_repeated_key_names_both_lines_in_a_parquet_file(tmp_path) -> None:
    frame = _table(1).drop_duplicates(KEY).reset_index(drop=True)
    frame = pd.concat([frame, frame.iloc[[3]]], ignore_index=True)
    path = tmp_path / "dup.parquet"
    _write_groups(path, frame, rows_per_group=50)
    with pytest.raises(DataFormatError, match="duplicated judgment") as err:
        load_table(path, scale=(0.0, 1.0))
    assert f"dup.parquet:{len(frame)}" in str(err.value) and "also at" in str(err.value)
    assert f"{path}:4" in str(err.value)
    kept = load_table(path, scale=(0.0, 1.0), skip_bad=True)
    assert kept.report.skipped == ((str(path), len(frame), "duplicated judgment key (first copy kept)"),)


def test_a_bad_score_and_an_empty_model_name_their_lines(tmp_path) -> None:
    frame = _table(2).drop_duplicates(KEY).reset_index(drop=True)
    bad = frame.copy()
    bad.loc[5, "score"] = 7.0
    path = tmp_path / "bad.parquet"
    _write_groups(path, bad, rows_per_group=40)
    with pytest.raises(DataFormatError, match=r"score 7 is outside the scale") as err:
        load_table(path, scale=(0.0, 1.0))
    assert "bad.parquet:6" in str(err.value)
    empty = frame.copy()
    empty["model"] = empty["model"].astype(object)
    empty.loc[9, "model"] = "  "
    path = tmp_path / "empty.parquet"
    _write_groups(path, empty, rows_per_group=40)
    with pytest.raises(DataFormatError, match="empty model") as err:
        load_table(path, scale=(0.0, 1.0))
    assert "empty.parquet:10" in str(err.value)


def test_certify_checks_keys_on_the_codes_of_any_frame() -> None:
    frame = _table(5).drop_duplicates(KEY).reset_index(drop=True)
    checked, ids = _check_frame(frame, ())
    assert is_coded(checked) and ids.frame is checked
    twice = pd.concat([frame, frame.iloc[[0]]], ignore_index=True)
    with pytest.raises(InputError, match="more than once"):
        _check_frame(coded_frame(twice), ())


@pytest.mark.parametrize("seed", range(6))
def test_judge_groups_and_texts_of_a_coded_frame_equal_the_string_route(seed: int) -> None:
    from biasbound.data.coded import judge_groups, text_values

    frame = _table(seed, missing_ids=seed % 2 == 1)
    coded = coded_frame(frame)
    want = {str(k): g for k, g in frame.groupby(frame["judge"].astype(str), sort=True)}
    got = judge_groups(coded)
    assert list(got) == list(want)
    for k in want:
        assert got[k].index.equals(want[k].index)
    for col in ("variant", "model"):
        assert sorted(text_values(coded[col])) == sorted(str(v) for v in frame[col].astype(str).unique())


def test_a_file_written_from_a_coded_frame_holds_plain_strings(tmp_path) -> None:
    from biasbound.data.coded import text_frame

    frame = _table(3).drop_duplicates(KEY).reset_index(drop=True)
    text = frame.astype({c: "str" for c in ("judge", "model", "item_id", "variant")})
    coded = coded_frame(frame)
    pd.testing.assert_frame_equal(text_frame(coded), text)
    text.to_parquet(tmp_path / "a.parquet", index=False)
    text_frame(coded).to_parquet(tmp_path / "b.parquet", index=False)
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()


def test_inputs_concatenated_stay_coded_and_equal_the_string_concat() -> None:
    from biasbound.data.coded import concat_coded

    a, b = _table(1), _table(2)
    b = b.assign(model=b["model"].str.upper())  # texts the other input lacks
    got = concat_coded([coded_frame(a), coded_frame(b)])
    want = pd.concat([a, b], ignore_index=True)
    assert is_coded(got)
    pd.testing.assert_frame_equal(got, coded_frame(want))


def test_inputs_read_through_load_inputs_keep_source_coded_and_relabelled(tmp_path) -> None:
    """load_inputs names each input by its display name; a coded ``source`` column is relabelled on its categories
    (one text per input), never turned into one Python string per row."""
    from biasbound.data.coded import is_coded_column
    from biasbound.data.loading import load_inputs

    path = tmp_path / "judged.csv"
    pd.DataFrame({"judge": ["j"] * 4, "model": ["a", "a", "b", "b"], "item_id": ["1", "2", "1", "2"],
                  "score": [1, 2, 3, 4]}).to_csv(path, index=False)
    loaded = load_inputs([str(path)], scale=(1, 10))
    source = loaded.frame["source"]
    assert is_coded_column(source)
    assert list(source.cat.categories) == list(loaded.report) == ["judged.csv"]  # the path as typed is gone
    assert source.astype(str).tolist() == ["judged.csv"] * 4


@pytest.mark.parametrize(("top", "want"), [(2, "int8"), (127, "int8"), (128, "int16"), (2**15 - 1, "int16"), (2**15, "int32"),
                                           (2**31 - 1, "int32"), (2**31, "int64")])
def test_rerun_and_game_are_the_narrowest_integers_holding_them(top: int, want: str) -> None:
    """rerun in the narrowest signed type holding its largest value (one more would wrap), game int8; the values and
    the judgments digest (which writes them as int64) are those of the int64 table."""
    frame = pd.DataFrame({"model": ["a", "a", "b"], "item_id": ["q1", "q2", "q1"], "rerun": [0, top, 1],
                          "game": [0, 1, 2], "score": [0.0, 1.0, 0.5]})
    got = from_frame(frame, scale=(0.0, 1.0)).frame
    assert str(got["rerun"].dtype) == want and got["rerun"].tolist() == [0, top, 1]
    assert str(got["game"].dtype) == "int8" and got["game"].tolist() == [0, 1, 2]
    wide = got.astype({"rerun": "int64", "game": "int64"})
    assert judgments_digest(got) == judgments_digest(wide)


def test_verdict_is_coded_and_an_absent_verdict_costs_a_byte_a_row() -> None:
    frame = pd.DataFrame({"model": ["a", "b", "c"], "item_id": ["q1"] * 3, "score": [0.0, 1.0, 0.5],
                          "verdict": ["B>A", None, "A>B"]})
    got = from_frame(frame, scale=(0.0, 1.0)).frame["verdict"]
    assert isinstance(got.dtype, pd.CategoricalDtype) and got.cat.categories.tolist() == ["A>B", "B>A"]
    assert got.astype("str").tolist()[::2] == ["B>A", "A>B"] and got.isna().tolist() == [False, True, False]
    absent = from_frame(frame.drop(columns="verdict"), scale=(0.0, 1.0)).frame["verdict"]
    assert absent.isna().all() and absent.array.codes.dtype == np.int8 and len(absent.cat.categories) == 0


def test_a_file_written_from_a_narrow_frame_holds_int64_reruns_and_games(tmp_path) -> None:
    """``text_frame`` gives what a judgment file holds: strings and 8-byte integers, whatever the frame's encoding."""
    from biasbound.data.coded import text_frame

    frame = from_frame(pd.DataFrame({"model": ["a", "b"], "item_id": ["q1", "q1"], "rerun": [0, 3], "game": [1, 2],
                                     "score": [0.0, 1.0]}), scale=(0.0, 1.0)).frame
    assert str(frame["rerun"].dtype) == "int8"
    text_frame(frame).to_parquet(tmp_path / "t.parquet", index=False)
    schema = pq.read_schema(tmp_path / "t.parquet")
    assert str(schema.field("rerun").type) == "int64" and str(schema.field("game").type) == "int64"
    assert str(schema.field("verdict").type) in ("string", "large_string")


def test_first_shown_choice_of_a_coded_verdict_equals_its_texts() -> None:
    from biasbound.card import first_shown_choice
    from biasbound.data.coded import text_categorical

    verdicts = ["A>B", "[[B>>A]]", None, "A=B", "model_1", "1", "2", "junk", "A>B"]
    frame = pd.DataFrame({"game": [1, 2, 1, 1, 2, 1, 2, 1, 0], "score": [1.0, 0.0, 0.5, 0.5, 1.0, 1.0, 0.0, np.nan, 1.0],
                          "verdict": pd.Series(verdicts, dtype="str")})
    want = first_shown_choice(frame)
    got = first_shown_choice(frame.assign(verdict=text_categorical(frame["verdict"])))
    assert np.array_equal(got, want, equal_nan=True) and np.isfinite(want).sum() >= 4

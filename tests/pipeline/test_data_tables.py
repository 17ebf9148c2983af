"""Generic long-table loader, scale inference and the LLMBar adapter."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasbound import DataFormatError, InputError
from biasbound.data import COLUMNS, infer_scale, load_llmbar, load_table
from biasbound.neighbors import observed_neighbors_for

CSV = """item,system,rating,helpfulness
i1,m1,1,2
i2,m1,10,10
i3,m1,,5
i1,m2,4,4
i2,m2,7,1
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_csv_with_column_mapping_inferred_scale_and_factors(tmp_path: Path) -> None:
    path = write(tmp_path, "judge-a.csv", CSV)
    js = load_table(path, columns={"item_id": "item", "model": "system", "score": "rating"}, factors=["helpfulness"])
    f = js.frame
    assert list(f.columns) == list(COLUMNS) + ["factor_helpfulness"]
    assert js.report.scale == (1.0, 10.0) and js.report.scale_inferred
    # (x - 1) / 9 by hand; the empty cell is a missing judgment, kept and counted
    np.testing.assert_allclose(f["score"].to_numpy(), [0.0, 1.0, np.nan, 3 / 9, 6 / 9])
    np.testing.assert_allclose(f["factor_helpfulness"].to_numpy(), [1 / 9, 1.0, 4 / 9, 3 / 9, 0.0])
    assert js.report.missing == 1 and js.report.missing_by_model == {"m1": 1}
    assert f["line"].tolist() == [2, 3, 4, 5, 6]
    assert set(f["judge"]) == {"judge-a"} and set(f["variant"]) == {"original"}
    assert set(f["game"]) == {0} and set(f["rerun"]) == {0}


def test_jsonl_and_parquet_give_the_same_frame_as_csv(tmp_path: Path) -> None:
    raw = pd.read_csv(write(tmp_path, "t.csv", CSV))
    raw.to_json(tmp_path / "t.jsonl", orient="records", lines=True)
    raw.to_parquet(tmp_path / "t.parquet")
    kw = {"columns": {"item_id": "item", "model": "system", "score": "rating"}, "judge": "j", "scale": (1, 10)}
    a = load_table(tmp_path / "t.csv", **kw).frame
    b = load_table(tmp_path / "t.jsonl", **kw).frame
    c = load_table(tmp_path / "t.parquet", **kw).frame
    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score"]
    pd.testing.assert_frame_equal(a[cols], b[cols])
    pd.testing.assert_frame_equal(a[cols], c[cols])
    assert b["line"].tolist() == [1, 2, 3, 4, 5]  # JSONL: line k holds row k


@pytest.mark.parametrize(
    ("scores", "expected"),
    [([0.2, 0.9], (0, 1)), ([0, 1], (0, 1)), ([0, 0], (0, 1)), ([1, 10], (1, 10)), ([1, 4, 10], (1, 10)),
     ([0, 100], (0, 100))],
)
def test_infer_scale(scores: list[float], expected: tuple[float, float]) -> None:
    assert infer_scale(scores + [np.nan]) == expected


@pytest.mark.parametrize(
    ("scores", "words"),
    [([np.nan], "no finite score"), ([200, 200], "every score equals 200"), ([1, 1], "every score equals 1"),
     ([2, 4], "could be [1, 5] or [1, 7]"), ([1, 9], "run from 1 to 9"), ([-2, 3], "run from -2 to 3"),
     ([0, 55], "could be [0, 100]"), ([-0.05, 0.5, 1], "run from -0.05 to 1"),
     # a part of a scale is never taken for the scale: a 1-10 judge that never gave 8-10 (or 6-10) looks like a
     # 1-7 (1-5) judge; the bottom unreached leaves 0- or 1-based open; 0-10 could be a 0-100 judge's low end
     ([1, 7], "a judge on [1, 10] that never gave more than 7"), ([1, 3, 7], "ends of [1, 7]"),
     ([1, 5], "never gave more than 5"), ([2, 5], "not its bottom"), ([3, 7], "not its bottom"),
     ([3, 10], "could be [1, 10] or [0, 10]"), ([0, 10], "[0, 100] that never gave more than 10"),
     ([0, 3, 10], "ends of [0, 10]")],
)
def test_infer_scale_asks_when_the_data_do_not_say(scores: list[float], words: str) -> None:
    with pytest.raises(InputError, match="scale") as info:
        infer_scale(scores)
    assert words in str(info.value)


def test_one_odd_score_never_changes_the_scale(tmp_path: Path) -> None:
    """A [0, 1] table with one 1.2 (or one -0.05) keeps [0, 1]: the odd row is an error naming its line,
    or with skip_bad skipped and counted, and every other score is unchanged."""
    rng = np.random.default_rng(3)
    scores = np.round(rng.uniform(0.01, 0.99, 120), 3)
    for odd in (1.2, -0.05):
        s = scores.astype(object)
        s[41] = odd
        text = "item_id,model,score\n" + "".join(f"q{i},m{i % 3},{v}\n" for i, v in enumerate(s))
        path = write(tmp_path, "t.csv", text)
        with pytest.raises(DataFormatError, match=rf"t.csv:43: score {odd:g} is outside the scale \[0, 1\]"):
            load_table(path)
        js = load_table(path, skip_bad=True)
        assert js.report.scale == (0.0, 1.0) and js.report.n_skipped == 1
        assert js.report.skipped[0][1] == 43
        kept = np.delete(scores, 41)
        np.testing.assert_array_equal(js.frame["score"].to_numpy(), kept)


def test_out_of_scale_score_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "item_id,model,score\na,m,3\nb,m,6\nc,m,2\n")
    with pytest.raises(DataFormatError, match="outside the scale") as err:
        load_table(path, scale=(1, 5))
    assert (err.value.path, err.value.line) == (str(path), 3)
    js = load_table(path, scale=(1, 5), skip_bad=True)
    assert len(js.frame) == 2 and js.report.skipped == ((str(path), 3, "score 6 is outside the scale [1, 5]"),)


def test_non_numeric_score_and_empty_model_name_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "item_id,model,score\na,m,3\nb,m,good\nc,,2\n")
    with pytest.raises(DataFormatError, match="not a finite number") as err:
        load_table(path)
    assert err.value.line == 3
    with pytest.raises(InputError, match="every score equals 3"):  # the one row kept cannot tell the scale
        load_table(path, skip_bad=True)
    js = load_table(path, skip_bad=True, scale=(1, 5))
    assert [s[1] for s in js.report.skipped] == [3, 4]
    assert js.report.scale == (1.0, 5.0) and not js.report.scale_inferred


def test_missing_column_names_the_header(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "item,model,score\na,m,3\n")
    with pytest.raises(DataFormatError, match="'item_id'") as err:
        load_table(path)
    assert (err.value.path, err.value.line) == (str(path), 1)
    with pytest.raises(DataFormatError, match="factor column 'depth'"):
        load_table(path, columns={"item_id": "item"}, factors=["depth"])


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "item_id,model,score,rerun\na,m,3,0\nb,m,4,0\na,m,5,0\na,m,5,1\n")
    with pytest.raises(DataFormatError, match="duplicated") as err:
        load_table(path, scale=(1, 5))
    assert err.value.line == 4 and f"{path}:2" in str(err.value)


def test_game_and_rerun_must_be_valid(tmp_path: Path) -> None:
    path = write(tmp_path, "t.csv", "item_id,model,score,game\na,m,0.5,1\nb,m,0.5,3\n")
    with pytest.raises(DataFormatError, match="game") as err:
        load_table(path)
    assert err.value.line == 3
    with pytest.raises(InputError, match="'scale'"):
        load_table(path, scale=(1, 1))
    with pytest.raises(InputError, match="'columns'"):
        load_table(path, columns={"question": "item_id"})
    with pytest.raises(DataFormatError, match="unknown table format"):
        load_table(write(tmp_path, "t.txt", "x"))


# ------------------------------------------------------------------ LLMBar


@pytest.fixture(scope="module")
def llmbar_raw(shared_data: Path) -> pd.DataFrame:
    return pd.read_csv(shared_data / "llmbar" / "judgments.csv.gz")


def test_llmbar_loads_as_two_games_with_missing_winners_counted(shared_data: Path, llmbar_raw: pd.DataFrame) -> None:
    js = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz")
    f = js.frame
    assert js.report.rows == 2 * len(llmbar_raw)
    n_nan = int(llmbar_raw["winner_orig_order"].isna().sum() + llmbar_raw["winner_swapped_order"].isna().sum())
    assert js.report.missing == n_nan
    assert set(f["game"]) == {1, 2} and set(f["model"]) == {"output_1"}
    # game 1 score is 1 exactly when the CSV says output 1 won in the original order
    g1 = f[f["game"] == 1].reset_index(drop=True)
    expected = np.where(llmbar_raw["winner_orig_order"].isna(), np.nan, (llmbar_raw["winner_orig_order"] == 1).astype(float))
    np.testing.assert_array_equal(g1["score"].to_numpy(), expected)
    assert g1["line"].tolist() == list(range(2, len(llmbar_raw) + 2))


def test_llmbar_gold_label_reproduces_the_published_accuracy(shared_data: Path) -> None:
    """The gold label rides along as the human label; the agreement of GPT-4 Vanilla is LLMBar's published one."""
    from biasbound.human import agreement

    f = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz").frame
    sub = f[(f["judge"] == "GPT-4/Vanilla") & f["item_id"].str.startswith("LLMBar/Natural#")]
    correct = sub.assign(right=sub["score"] == sub["human"]).groupby("game")["right"].sum()
    assert (correct[1], correct[2]) == (95, 96)  # LLMBar's data README (tests/data): 95/100 and 96/100
    g1 = sub[sub["game"] == 1]
    assert agreement(g1["score"].to_numpy(), g1["human"].to_numpy())["accuracy"] == 0.95


def test_llmbar_gold_view_is_gone_with_one_sentence(shared_data: Path) -> None:
    with pytest.raises(InputError, match="no longer takes 'gold'.*human_agreement"):
        load_llmbar(shared_data / "llmbar" / "judgments.csv.gz", view="gold")


def test_llmbar_gpt4_vanilla_has_nonzero_swap_sensitivity(shared_data: Path, llmbar_raw: pd.DataFrame) -> None:
    f = load_llmbar(shared_data / "llmbar" / "judgments.csv.gz").frame
    nb = observed_neighbors_for(f, judge="GPT-4/Vanilla", model="output_1", generator="swap")
    raw = llmbar_raw[(llmbar_raw["judge"] == "GPT-4") & (llmbar_raw["strategy"] == "Vanilla")]
    raw = raw.dropna(subset=["winner_orig_order", "winner_swapped_order"])
    flips = int((raw["winner_orig_order"] != raw["winner_swapped_order"]).sum())
    assert flips > 0
    assert int(np.count_nonzero(nb.differences)) == flips
    rms = float(np.sqrt(np.mean(nb.distances**2)))
    assert rms == pytest.approx(np.sqrt(flips / len(raw)))  # |Δ| is 0 or 1
    assert rms > 0


@pytest.mark.parametrize(
    "values",
    [
        pd.Series(["b", "a", "é", "Z", "a", "10", "2"], dtype="str"),
        pd.Series([3, 1, 10, 2, 1], dtype=object),
        pd.Series(["x", None, "a", "x"], dtype=object),
        pd.Series(["x", None, "a"], dtype="str"),
        # a missing id in a string column: its texts were once cut to one character ("model-4", "model-17" -> "m")
        pd.Series(["model-4", "model-17", None, "model-4"], dtype="str"),
        pd.Index(["x", None, "y"], dtype="str"),
        pd.Series([1.5, np.nan, 2.0]),
        pd.Series([], dtype="str"),
    ],
)
def test_sorted_codes_equal_numpy_unique_of_the_text(values: pd.Series) -> None:
    """``sorted_codes`` is ``np.unique`` of every value through ``str`` (its docstring's definition)."""
    from biasbound.data.tables import sorted_codes

    codes, names = sorted_codes(values)
    names_ref, codes_ref = np.unique(np.asarray(values).astype(str), return_inverse=True)
    np.testing.assert_array_equal(names, names_ref)
    np.testing.assert_array_equal(codes, codes_ref)


def test_compact_equals_numpy_unique() -> None:
    from biasbound.data.tables import compact_codes

    codes = np.random.default_rng(0).integers(0, 50, 1000) * 3
    uniq, inverse = compact_codes(codes, 150)
    uniq_ref, inverse_ref = np.unique(codes, return_inverse=True)
    np.testing.assert_array_equal(uniq, uniq_ref)
    np.testing.assert_array_equal(inverse, inverse_ref)


@pytest.mark.parametrize("name, text", [("empty.jsonl", ""), ("header.csv", "item_id,model,score\n")])
def test_a_file_without_rows_is_named_as_empty(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFormatError, match="holds no judgment rows") as info:
        load_table(path, scale=(0.0, 1.0))
    assert info.value.path == str(path)


def test_json_lines_reader_handles_gzip_and_names_the_bad_line(tmp_path):
    import gzip

    from biasbound.data._io import iter_json_records

    good = tmp_path / "ok.jsonl.gz"
    with gzip.open(good, "wt", encoding="utf-8") as fh:
        fh.write('{"a": 1}\n\n{"a": 2}\n')
    assert list(iter_json_records(good)) == [(1, {"a": 1}), (3, {"a": 2})]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": 1}\n[1, 2]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match="JSON object") as info:
        list(iter_json_records(bad))
    assert info.value.line == 2 and info.value.path == str(bad)


def test_messages_name_the_python_argument_to_python_callers(tmp_path: Path) -> None:
    """The same bad row: a Python caller reads skip_bad=True / scale=(lo, hi), a CLI user --skip-bad / --scale."""
    from biasbound._validation import speaking_cli

    path = write(tmp_path, "t.csv", "item_id,model,score\n" + "".join(f"q{i},m,{i % 10 / 10}\n" for i in range(30))
                 + "q99,m,1.5\n")
    with pytest.raises(DataFormatError) as py:
        load_table(path)
    with speaking_cli("certify"), pytest.raises(DataFormatError) as cli:
        load_table(path)
    assert "pass skip_bad=True" in str(py.value) and "scale=(lo, hi)" in str(py.value)
    assert "pass --skip-bad" in str(cli.value) and "--scale LO,HI" in str(cli.value)
    assert "skip_bad" not in str(cli.value)

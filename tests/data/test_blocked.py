"""A Parquet table read in blocks of whole models (biasbound.data.blocked) reads as the table loader reads it:
the blocks' rows together are load_table's frame (columns, dtypes, categories, values, order), the merged report is
load_table's, and a bad row is the same sentence naming the file and line. Seeded tables; deterministic
(false-failure rate 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import InputError
from biasbound.data.blocked import can_block, merge_blocks, open_blocked
from biasbound.data.tables import load_table


def _raw(seed: int, *, judges: int = 2, models: int = 6, items: int = 15, reruns: int = 3, raw_scale: int = 10
         ) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(f"judge-{j}", f"model-{m}", f"item-{i:03d}", v, r, g, float(rng.integers(1, raw_scale + 1)))
            for j in range(judges) for m in range(models) for i in range(items) for g in (1, 2)
            for r in range(reruns) for v in ("original", "bold") if not (v == "bold" and (r or g == 2))]
    f = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    f.loc[rng.random(len(f)) < 0.05, "score"] = np.nan
    return f.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # a model's rows spread over the file


def _same_as_loader(path: Path, **kw: Any) -> None:
    rows = load_table(path, **kw)
    with open_blocked(path, block_rows=97, **kw) as table:
        frames = [js.frame for js in table.blocks()]
        assert table.n_blocks > 2 and len(frames) == table.n_blocks
        merged = merge_blocks(frames)
        assert table.report == rows.report
    for frame in frames:  # every block holds whole models, in file order
        assert np.all(np.diff(frame["line"].to_numpy()) > 0)
    models = [set(f["model"].astype(str)) for f in frames]
    assert sum(len(m) for m in models) == len(set().union(*models))
    pd.testing.assert_frame_equal(merged, rows.frame.reset_index(drop=True), check_exact=True)


def _refusals(path: Path) -> tuple[str, str]:
    """The sentences with which load_table and the blocks refuse ``path``."""
    with pytest.raises(InputError) as rows:
        load_table(path)
    with pytest.raises(InputError) as blocks:
        with open_blocked(path, block_rows=97) as table:
            list(table.blocks())
    return str(rows.value), str(blocks.value)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_blocks_are_the_loaders_rows(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "judgments.parquet"
    _raw(seed).to_parquet(path)
    _same_as_loader(path)  # the scale [1, 10] inferred from the value counts
    _same_as_loader(path, scale=(0.0, 10.0))


def test_a_table_without_judge_column_and_renamed_columns(tmp_path: Path) -> None:
    path = tmp_path / "grades.parquet"
    _raw(2, judges=1).drop(columns=["judge"]).rename(columns={"item_id": "question", "score": "rating"}).to_parquet(path)
    kw = {"columns": {"item_id": "question", "score": "rating"}}
    _same_as_loader(path, **kw)
    with open_blocked(path, block_rows=97, **kw) as table:
        frames = [js.frame for js in table.blocks()]
    assert {f.attrs.get("judge_from_file") for f in frames} == {"grades"}


def test_a_bad_row_is_named_by_its_file_and_line(tmp_path: Path) -> None:
    raw = _raw(3)
    raw.loc[200, "score"] = 11.0  # outside the inferred [1, 10] (one of 20+ scores: an outlier to name)
    path = tmp_path / "judgments.parquet"
    raw.to_parquet(path)
    rows, blocks = _refusals(path)
    assert blocks == rows and f"{path}:201" in blocks
    _same_as_loader(path, skip_bad=True)  # skipped, listed and counted as the loader does


def test_a_key_given_twice_is_refused_in_its_block(tmp_path: Path) -> None:
    raw = _raw(4)
    raw = pd.concat([raw, raw.iloc[[7]]], ignore_index=True)
    path = tmp_path / "judgments.parquet"
    raw.to_parquet(path)
    rows, blocks = _refusals(path)
    assert blocks == rows


def test_the_block_files_are_removed_and_other_tables_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "judgments.parquet"
    _raw(5).to_parquet(path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    with open_blocked(path, block_rows=97, tmpdir=scratch) as table:
        assert any(scratch.rglob("*.parquet"))
        list(table.blocks())
    assert not any(scratch.iterdir())
    csv = tmp_path / "judgments.csv"
    _raw(5).to_csv(csv, index=False)
    texts = tmp_path / "text_scores.parquet"
    _raw(5).astype({"score": str}).to_parquet(texts)
    assert can_block(path) and not can_block(csv) and not can_block(texts)
    with pytest.raises(InputError, match="read it whole"):
        open_blocked(texts)


def test_of_several_bad_rows_in_several_blocks_the_loaders_error_is_raised(tmp_path: Path) -> None:
    """The loader checks a row's faults, then the scale, then repeated keys, and names the first line of the first
    check that fails: so do the blocks, whichever block holds which bad row."""
    raw = _raw(6)
    # the repeated key in the first block (the first model by name), the score outside the scale in the last one
    early = int(np.flatnonzero(raw["model"] == raw["model"].min())[3])
    raw.loc[int(np.flatnonzero(raw["model"] == raw["model"].max())[-1]), "score"] = 11.0  # outside [1, 10]
    raw = pd.concat([raw.iloc[: early + 1], raw.iloc[[early]], raw.iloc[early + 1:]], ignore_index=True)  # a repeat
    path = tmp_path / "judgments.parquet"
    raw.to_parquet(path)
    rows, blocks = _refusals(path)
    assert "outside the scale" in rows and blocks == rows

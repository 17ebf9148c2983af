"""The blocked route of certify (a table read in blocks of whole models, its reruns folded block by block) against
the row route on the same file: every output file byte for byte, after the creation stamp and what follows from it.

Tables are seeded (several judges, both orders, reruns, a variant, ~5% missing scores, rows without an original
judgment); the blocks are made small so that every table is several blocks. Deterministic: false-failure rate 0.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from biasbound._exceptions import InputError
from biasbound.data.blocked import open_blocked
from biasbound.data.tables import load_table
from biasbound.pipeline import certify

_STAMP = re.compile(rb'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?\+00:00')
_RECORDS = re.compile(rb'"records_sha256": ?"[0-9a-f]{64}"')


def _table(path: Path, seed: int, *, judges: int = 2, models: int = 5, items: int = 30, reruns: int = 3,
           holes: float = 0.0, shuffle: bool = True) -> Path:
    """Judges × models × items, games 1 and 2, ``reruns`` reruns, a 'terse' variant of game 1; ``holes``: the share
    of original judgments left out (their neighbours then have no original), and every original of one model."""
    rng = np.random.default_rng(seed)
    rows = []
    for j in range(judges):
        strength = rng.normal(0, 1, models)
        for m in range(models):
            for i in range(items):
                base = 1 / (1 + math.exp(-(strength[m] + rng.normal())))
                for game in (1, 2):
                    for r in range(reruns):
                        for variant in ("original", "terse"):
                            if variant == "terse" and (r > 0 or game == 2):
                                continue
                            z = base + 0.1 * (game == 2) + 0.05 * (variant == "terse")
                            if r > 0 and rng.random() < 0.6:
                                z = base
                            score = float(np.clip(np.round(4 * z + rng.normal(0, 0.4)), 0, 4)) / 4
                            if rng.random() < 0.05:
                                score = float("nan")
                            rows.append((f"j{j}", f"m{m}", f"q{i}", variant, r, game, score))
    f = pd.DataFrame(rows, columns=["judge", "model", "item_id", "variant", "rerun", "game", "score"])
    if holes:
        canon = (f["rerun"] == 0) & (f["variant"] == "original") & (f["game"] == 1)
        drop = canon & ((rng.random(len(f)) < holes) | ((f["model"] == "m0") & (f["judge"] == "j0")))
        f = f[~drop]
    if shuffle:  # the rows of a model spread over the file, as logs written rerun by rerun are
        f = f.sample(frac=1.0, random_state=seed)
    f.reset_index(drop=True).to_parquet(path)
    return path


def _outputs(folder: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != ".biasbound-outputs.json":
            out[str(p.relative_to(folder))] = _RECORDS.sub(b"H", _STAMP.sub(b"STAMP", p.read_bytes()))
    return out


def _same(a: Path, b: Path) -> None:
    x, y = _outputs(a), _outputs(b)
    assert sorted(x) == sorted(y)
    differ = [k for k in x if x[k] != y[k]]
    assert not differ, differ


CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("swap_rerun", {}, {"neighbors": ("swap", "rerun")}),
    ("rerun_paper_holdout", {}, {"neighbors": "rerun", "method": "paper", "center": "holdout"}),
    ("variant_rerun_leaderboard", {"judges": 1}, {"neighbors": ("variant:terse", "rerun"), "view": "leaderboard",
                                                   "combine": "rms"}),
    ("holes_skip_bad", {"holes": 0.05}, {"neighbors": ("swap", "rerun"), "skip_bad": True}),
]


@pytest.mark.parametrize(("name", "shape", "kw"), CASES, ids=[c[0] for c in CASES])
def test_blocked_certify_writes_the_row_routes_outputs(tmp_path: Path, name: str, shape: dict[str, Any],
                                                         kw: dict[str, Any]) -> None:
    path = _table(tmp_path / "judgments.parquet", seed=len(name), **shape)
    certify(load_table(path), out=tmp_path / "rows", progress=False, seed=3, plots=False, bootstrap_rounds=200, **kw)
    with open_blocked(path, block_rows=300) as table:
        certify(table, out=tmp_path / "blocks", progress=False, seed=3, plots=False, bootstrap_rounds=200, **kw)
    _same(tmp_path / "rows", tmp_path / "blocks")


def test_an_unmatched_rerun_names_its_file_and_line_in_blocks_too(tmp_path: Path) -> None:
    path = _table(tmp_path / "judgments.parquet", seed=5, holes=0.05)
    with pytest.raises(Exception) as rows:
        certify(load_table(path), progress=False, neighbors=("swap", "rerun"))
    with open_blocked(path, block_rows=300) as table, pytest.raises(type(rows.value)) as blocks:
        certify(table, progress=False, neighbors=("swap", "rerun"))
    said = re.match(re.escape(str(path)) + r":(\d+): (\w+) neighbour of judge (\w+), model (\w+), item (\w+) has no",
                    str(blocks.value))
    assert said is not None, str(blocks.value)
    row = pd.read_parquet(path).iloc[int(said.group(1)) - 1]  # the line named: a neighbour row without its original
    assert (row["judge"], row["model"], row["item_id"]) == said.group(3, 4, 5)
    assert row["game"] == 2 if said.group(2) == "swap" else row["rerun"] > 0


def test_human_labels_are_refused_in_blocks(tmp_path: Path) -> None:
    path = _table(tmp_path / "judgments.parquet", seed=6, judges=1)
    labels = pd.DataFrame({"item_id": [f"q{i}" for i in range(30)], "label": np.linspace(0, 1, 30)})
    with open_blocked(path, block_rows=300) as table, pytest.raises(InputError, match="in blocks"):
        certify(table, progress=False, neighbors="rerun", human_labels=labels)


def test_the_command_reads_a_large_table_in_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``biasbound certify`` takes the blocked route above BLOCKED_ABOVE rows (lowered here): the same outputs as the
    row route, ``--generators auto`` included (a group without reruns left out by both)."""
    import biasbound.data.blocked as blocked
    from biasbound.cli import main

    path = _table(tmp_path / "judgments.parquet", seed=8, holes=0.03)
    f = pd.read_parquet(path)
    f = f[~((f["judge"] == "j1") & (f["model"] == "m4") & (f["rerun"] > 0))]  # one group without reruns
    f.reset_index(drop=True).to_parquet(path)
    args = ["--no-plots", "--no-progress", "--skip-bad", "--bootstrap-rounds", "200", "--seed", "3"]
    assert main(["certify", str(path), "--out", str(tmp_path / "rows"), *args]) == 0
    rows_said = capsys.readouterr().out
    monkeypatch.setattr(blocked, "BLOCKED_ABOVE", 100)
    monkeypatch.setattr(blocked, "BLOCK_ROWS", 300)
    assert main(["certify", str(path), "--out", str(tmp_path / "blocks"), *args]) == 0
    blocks_said = capsys.readouterr().out
    assert "read in blocks" in blocks_said and "read in blocks" not in rows_said
    assert "left out (no swap / variant:terse / rerun neighbour in the data): judge j1, 1 model(s): m4" in blocks_said
    _same(tmp_path / "rows", tmp_path / "blocks")


def test_a_refuted_deterministic_judge_reads_the_same_in_blocks(tmp_path: Path) -> None:
    """The declaration's refusal counts the questions of every block and names the table's first refuting row."""
    path = _table(tmp_path / "judgments.parquet", seed=9)
    with pytest.raises(InputError) as rows:
        certify(load_table(path), progress=False, neighbors="rerun", deterministic_judge=True)
    with open_blocked(path, block_rows=300) as table, pytest.raises(InputError) as blocks:
        certify(table, progress=False, neighbors="rerun", deterministic_judge=True)
    assert str(blocks.value) == str(rows.value)

"""Arena-Hard-Auto loader and the embedded demo dataset."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from biasbound import DataFormatError, InputError
from biasbound.data import COLUMNS, demo_leaderboard, demo_path, load_arena_hard, verdict_score

# The mapping as written in the task statement, typed by hand (not imported from the module).
GAME1 = {"B>>A": 1.0, "B>A": 0.75, "A=B": 0.5, "A>B": 0.25, "A>>B": 0.0}


def write_jsonl(path: Path, records: list, *, raw_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) for r in records]
    for i, text in (raw_lines or {}).items():
        lines.insert(i, text)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def rec(qid: str, model: str, g1: object, g2: object, **extra: object) -> dict:
    return {"question_id": qid, "model": model, "games": [{"score": g1}, {"score": g2}], **extra}


def test_orientation_always_wins_and_always_loses(tmp_path: Path) -> None:
    recs = [rec(f"q{i}", "winner", "B>>A", "A>>B") for i in range(5)] + [rec(f"q{i}", "loser", "A>>B", "B>>A") for i in range(5)]
    f = load_arena_hard(write_jsonl(tmp_path / "judge-x" / "m.jsonl", recs)).frame
    assert set(f.loc[f.model == "winner", "score"]) == {1.0}
    assert set(f.loc[f.model == "loser", "score"]) == {0.0}
    assert sorted(f.loc[f.model == "winner", "game"].unique()) == [1, 2]
    assert set(f["judge"]) == {"judge-x"}  # no judge field: the folder name


@pytest.mark.parametrize("verdict", sorted(GAME1))
def test_each_verdict_maps_to_the_stated_score_in_both_games(tmp_path: Path, verdict: str) -> None:
    f = load_arena_hard(write_jsonl(tmp_path / "j" / "m.jsonl", [rec("q", "m", verdict, verdict)])).frame
    got = dict(zip(f["game"], f["score"]))
    assert got[1] == GAME1[verdict]
    assert got[2] == 1.0 - GAME1[verdict]  # game 2: positions swapped, mirrored


@pytest.mark.parametrize(("alias", "meaning"), [("A<<B", "B>>A"), ("B<<A", "A>>B"), ("A<B", "B>A"), ("B<A", "A>B"), ("[[A>B]]", "A>B")])
def test_aliases(alias: str, meaning: str) -> None:
    assert verdict_score(alias, 1) == GAME1[meaning]
    assert verdict_score(alias, 2) == 1.0 - GAME1[meaning]


def test_factor_verdicts_become_factor_columns(tmp_path: Path) -> None:
    r = {"question_id": "q", "model": "m",
         "games": [{"score": "A>B", "style_score": "B>>A", "safety_score": "A=B"}, {"score": "A>B", "style_score": "A<<B"}]}
    raw = load_arena_hard(write_jsonl(tmp_path / "j" / "m.jsonl", [r])).frame
    assert list(raw.columns) == list(COLUMNS) + ["factor_safety", "factor_style"]
    f = raw.set_index("game")
    assert f.loc[1, "factor_style"] == 1.0 and f.loc[2, "factor_style"] == 0.0  # A<<B in game 2 = baseline (B) much better
    assert f.loc[1, "factor_safety"] == 0.5 and math.isnan(f.loc[2, "factor_safety"])


def test_missing_game_and_null_verdict_are_kept_as_nan_and_counted(tmp_path: Path) -> None:
    recs = [
        {"question_id": "q1", "model": "a", "games": [{"score": "A>B"}]},  # game 2 missing
        {"question_id": "q2", "model": "a", "games": [{"score": None}, {"score": "B>A"}]},  # null verdict
        {"question_id": "q3", "model": "b", "games": [{"score": "A=B"}, None]},  # null game
        rec("q4", "b", "A=B", "A=B"),
    ]
    js = load_arena_hard(write_jsonl(tmp_path / "j" / "m.jsonl", recs))
    f = js.frame
    assert len(f) == 8
    assert js.report.missing == 3
    assert js.report.missing_by_model == {"a": 2, "b": 1}
    assert f["score"].isna().sum() == 3
    assert f.loc[(f.item_id == "q2") & (f.game == 1), "verdict"].isna().all()


def test_real_file_missing_count_matches_an_independent_count(shared_data: Path) -> None:
    path = shared_data / "ko-arena-hard-v0.1" / "judgments_ensemble.jsonl.gz"
    n_records = 0
    n_missing = 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for text in fh:
            r = json.loads(text)
            n_records += 1
            games = r.get("games") or []
            n_missing += 2 - len(games)
            n_missing += sum(1 for g in games if g is None or g.get("score") is None)
    js = load_arena_hard(path)
    assert js.report.rows == 2 * n_records == 76_000
    assert js.report.missing == n_missing
    assert n_missing >= 1  # the file has a record without game 2 (o4-mini-high)
    assert js.report.judges == ("ensemble",)
    assert js.report.items == 500 and len(js.report.models) == 76
    assert js.report.skipped == ()


def test_gz_and_folder_and_judge_field(tmp_path: Path) -> None:
    folder = tmp_path / "model_judgment" / "gpt-judge"
    write_jsonl(folder / "a.jsonl", [rec("q1", "a", "A>B", "B>A")])
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps(rec("q1", "b", "B>A", "A>B", judge="named")) + "\n")
    js = load_arena_hard(tmp_path / "model_judgment")  # root with one folder per judge
    f = js.frame
    assert dict(zip(f.model, f.judge)) == {"a": "gpt-judge", "b": "named"}
    assert len(js.report.sources) == 2
    assert f.loc[f.model == "b", "score"].tolist() == [0.75, 0.75]


@pytest.mark.parametrize(
    ("bad_line", "fragment"),
    [
        ('{"question_id": "q2", "model": "m", "games": [', "malformed JSON"),
        (json.dumps(rec("q2", "m", "A>B", "A>?B")), "unknown verdict"),
        (json.dumps({"model": "m", "games": []}), "question_id"),
        (json.dumps({"question_id": "q2", "games": []}), "model"),
        (json.dumps({"question_id": "q2", "model": "m", "games": "A>B"}), "games"),
    ],
)
def test_bad_lines_name_file_and_line(tmp_path: Path, bad_line: str, fragment: str) -> None:
    path = write_jsonl(tmp_path / "j" / "m.jsonl", [rec("q1", "m", "A>B", "A>B"), rec("q3", "m", "A>B", "A>B")], raw_lines={1: bad_line})
    with pytest.raises(DataFormatError, match=fragment) as err:
        load_arena_hard(path)
    assert err.value.line == 2 and err.value.path == str(path)
    assert f"{path}:2:" in str(err.value)
    js = load_arena_hard(path, skip_bad=True)
    assert len(js.frame) == 4
    assert [(s[0], s[1]) for s in js.report.skipped] == [(str(path), 2)]


def test_duplicate_key_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "j" / "m.jsonl", [rec("q1", "m", "A>B", "A>B"), rec("q2", "m", "A>B", "A>B"), rec("q1", "m", "B>A", "B>A")])
    with pytest.raises(DataFormatError, match="duplicated") as err:
        load_arena_hard(path)
    assert err.value.line == 3
    assert f"{path}:1" in str(err.value)
    js = load_arena_hard(path, skip_bad=True)
    assert len(js.frame) == 4 and js.report.n_skipped == 2  # both games of line 3
    assert js.frame.loc[js.frame.item_id == "q1", "score"].tolist() == [0.25, 0.75]  # the first copy is kept


def test_missing_path_raises(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError):
        load_arena_hard(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFormatError, match="no .jsonl"):
        load_arena_hard(tmp_path / "empty")
    assert issubclass(DataFormatError, InputError)


# ------------------------------------------------------------------ embedded demo


def test_embedded_files_match_the_upstream_hashes_recorded_in_provenance() -> None:
    """Every embedded data file hashes to the SHA-256 that PROVENANCE.md records for the upstream bytes."""
    prov = (demo_path() / "PROVENANCE.md").read_text(encoding="utf-8")
    assert "qwopqwop200/ko-arena-hard-auto" in prov and "9d139328755a" in prov and "Apache-2.0" in prov
    recorded = dict(
        (line.split()[1], line.split()[0]) for line in prov.splitlines() if re.fullmatch(r"[0-9a-f]{64}  \S+", line)
    )
    files = ["judgments_ensemble.jsonl.gz",
             *(f"leaderboard_20250423/{k}.csv" for k in ("no_control", "style_control", "markdown_control", "length_control"))]
    assert sorted(recorded) == sorted(files)
    for rel in files:
        assert hashlib.sha256((demo_path() / rel).read_bytes()).hexdigest() == recorded[rel], rel
    assert "Apache License" in (demo_path() / "LICENSE").read_text(encoding="utf-8")


def test_load_demo_matches_the_shared_file(demo_set, shared_data: Path) -> None:
    other = load_arena_hard(shared_data / "ko-arena-hard-v0.1" / "judgments_ensemble.jsonl.gz").frame
    cols = [c for c in COLUMNS if c != "source"]
    pd.testing.assert_frame_equal(demo_set.frame[cols], other[cols])
    assert demo_set.report.missing_by_model == {"o4-mini-high": 1}


def test_demo_leaderboard() -> None:
    lb = demo_leaderboard()
    assert len(lb) == 76 and {"model", "score", "rating_q025", "rating_q975"} <= set(lb.columns)
    assert lb.loc[lb.model == "claude-3.7-sonnet", "score"].item() == 50.0
    assert not lb.equals(demo_leaderboard("style_control"))
    with pytest.raises(InputError, match="'kind'"):
        demo_leaderboard("nope")



def test_shipped_arena_hard_subset_is_whole_and_licensed(shared_data: Path) -> None:
    """The 198-question subset: every question has both answers, nothing else, and the licence ships."""
    folder = shared_data / "arena-hard-v0.1"
    uids = [json.loads(line)["uid"] for line in (folder / "question.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(uids) == len(set(uids)) == 198 and "0122ab60646b4961bc39e9c03bdf6bcc" in uids
    for name in ("gpt-4-0314", "gpt-3.5-turbo-0125"):
        recs = [json.loads(line) for line in (folder / "model_answer" / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert sorted(r["uid"] for r in recs) == sorted(uids) and {r["model"] for r in recs} == {name}
    assert "Apache License" in (folder / "LICENSE").read_text(encoding="utf-8")
    assert "lmarena/arena-hard-auto @ 196f6b826783" in (folder / "PROVENANCE.md").read_text(encoding="utf-8")

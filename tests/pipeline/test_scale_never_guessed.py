"""A score scale is never guessed from the values present (issue 16, item 7).

The format declares it, the values reach both ends of a common scale that no wider one with the same
bottom also holds, or one sentence asks for ``--scale`` (exit 2, no traceback, nothing written).
"""

from __future__ import annotations

import json

from biasbound.cli import main

HEADER = "judge,model,item_id,variant,rerun,game,score\n"


def table(scores: list[int]) -> str:
    rows = []
    for i, s in enumerate(scores):
        rows.append(f"j,m,q{i},original,0,0,{s}\n")
        rows.append(f"j,m,q{i},original,1,0,{s}\n")
    return HEADER + "".join(rows)


def test_a_1_to_10_judge_that_never_gave_8_to_10_is_asked_about(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(table([1 + i % 7 for i in range(40)]))  # 1..7 only
    code = main(["certify", str(path), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in err and "--scale" in err and "[1, 10]" in err and "never gave more than 7" in err
    assert len([ln for ln in err.strip().splitlines() if ln.strip()]) <= 3  # one sentence (wrapped at most)
    assert not (tmp_path / "out").exists()
    # with the scale given it certifies, and the scale is recorded as given
    code = main(["certify", str(path), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress", "--scale", "1,10",
                 "--bootstrap-rounds", "50"])
    assert code == 0
    rep = json.loads((tmp_path / "out" / "load_report.json").read_text())
    first = next(iter(rep.values())) if "scale" not in rep else rep
    assert first["scale"] == [1.0, 10.0] and first["scale_inferred"] is False


def test_scores_reaching_both_ends_of_1_to_10_are_read_on_it(tmp_path, capsys):
    path = tmp_path / "t.csv"
    path.write_text(table([1 + i % 10 for i in range(40)]))
    code = main(["certify", str(path), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress",
                 "--bootstrap-rounds", "50"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "score scale [1, 10] mapped to [0, 1] (inferred" in " ".join(out.split())

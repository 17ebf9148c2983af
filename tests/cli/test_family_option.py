"""``certify --family NAME=FAMILY`` (repeated): the judge card's self-preference families from the command line,
for a judge or model whose name does not say its family; recorded in scope.reproduce, so verify --judgments
re-makes the card; a bad pair is one sentence, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biasbound.cli import main


def _table(path: Path) -> Path:
    rows = []
    for m, base in (("gpt-x", 0.8), ("claude-y", 0.4), ("acme-1", 0.5)):
        for i in range(8):
            for g in (1, 2):
                rows.append(f"house-judge,{m},q{i},original,0,{g},{base + 0.01 * ((i + g) % 3):.2f}")
    path.write_text("judge,model,item_id,variant,rerun,game,score\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _card(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())["judge_card"]["judges"]["house-judge"]["self_preference"]


def _certify(table: Path, out: Path, *extra: str) -> int:
    return main(["certify", str(table), "--generators", "swap", "--out", str(out), "--bootstrap-rounds", "50",
                 "--no-plots", "--no-progress", *extra])


def test_family_option_names_the_judges_family(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _table(tmp_path / "t.csv")
    assert _certify(table, tmp_path / "plain") == 0
    plain = _card(tmp_path / "plain")
    assert plain["known"] is False and "family is not known" in plain["note"]  # 'house-judge' says no family
    assert _certify(table, tmp_path / "fam", "--family", "house-judge=openai", "--family", "acme-1=anthropic") == 0
    fam = _card(tmp_path / "fam")
    assert fam["known"] is True and fam["judge_family"] == "openai"
    assert fam["own_models"] == ["gpt-x"] and sorted(fam["other_models"]) == ["acme-1", "claude-y"]
    assert fam["unknown_models"] == []  # acme-1 named by the option; without it, it would be left out
    capsys.readouterr()  # the families travel in scope.reproduce: verify re-makes the same card
    code = main(["verify", str(tmp_path / "fam"), "--judgments", str(table)])
    text = capsys.readouterr().out
    assert code == 0 and "reproduced" in text and "DIFFERS" not in text, text


@pytest.mark.parametrize("bad", ["house-judge", "=openai", "house-judge="])
def test_a_bad_family_pair_is_one_sentence(bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = _table(tmp_path / "t.csv")
    assert _certify(table, tmp_path / "o", "--family", bad) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "The '--family' option of certify must be NAME=FAMILY" in err and repr(bad) in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # refused before anything was read or written

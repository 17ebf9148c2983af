"""Bad inputs of issue 16 (item 8): one sentence each, exit code 2, no traceback, nothing lost.

Also: the example run config written by ``biasbound demo --write-config`` runs from any folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from biasbound.cli import main

BIASBOUND = shutil.which("biasbound") or shutil.which("biasbound", path=str(Path(sys.executable).parent))


def cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def one_sentence(err: str) -> bool:
    text = " ".join(err.split())
    return "Traceback" not in err and text.count(". ") <= 2 and len(text) < 600


def ah_record(model: str, q: int, v1: str = "A>B", v2: str = "B>A") -> str:
    return json.dumps({"question_id": f"q{q}", "model": model, "judge": "j", "games": [{"score": v1}, {"score": v2}]}) + "\n"


def test_empty_model_file_in_an_arena_hard_folder_is_named(tmp_path, capsys):
    folder = tmp_path / "model_judgment" / "j"
    folder.mkdir(parents=True)
    (folder / "m1.jsonl").write_text("".join(ah_record("m1", q) for q in range(20)))
    (folder / "m2.jsonl").write_text("")  # an interrupted run
    code, out, err = cli(capsys, "certify", str(folder), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress")
    assert code == 2 and one_sentence(err)
    assert "m2.jsonl" in err and "no judgment record" in err and "--skip-bad" in err
    assert not (tmp_path / "out").exists()
    code, out, err = cli(capsys, "certify", str(folder), "--out", str(tmp_path / "out"), "--no-plots", "--no-progress",
                         "--skip-bad", "--bootstrap-rounds", "50")
    assert code == 0, err
    assert "m2.jsonl" in " ".join(out.split())  # counted and shown, not dropped unseen
    rep = json.loads((tmp_path / "out" / "load_report.json").read_text())
    assert any("m2.jsonl" in k for r in rep.values() for k in (r.get("integration") or {}).get("not_mapped", {}))


def test_empty_out_is_refused_and_nothing_is_written_here(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text("".join(ah_record("m1", q) for q in range(20)))
    code, out, err = cli(capsys, "certify", str(tmp_path / "t.jsonl"), "--out", "", "--no-plots", "--no-progress")
    assert code == 2 and one_sentence(err) and "'--out' option" in err and "empty" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.jsonl"]


def test_truncated_judge_cache_is_one_sentence_and_left_in_place(tmp_path):
    from biasbound.judge.cache import JudgeCache

    from biasbound import InputError

    db = tmp_path / "judge_cache.sqlite"
    with JudgeCache(db) as cache:
        for k in range(300):
            cache.put(f"{k:064d}", "ok", {"verdict": "A>B", "text": "x" * 200})
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])  # truncated mid-file
    with pytest.raises(InputError) as info:
        JudgeCache(db)
    msg = str(info.value)
    assert str(db) in msg and "not a readable SQLite database" in msg and "move the file away" in msg
    assert db.read_bytes() == data[: len(data) // 3]  # the file is left as it was


def _small_config(path: Path, url: str, out: str, **judge: object) -> Path:
    from biasbound.commands.demo import example_run_config

    cfg = example_run_config(url, out, n_items=4, generators=["swap"])
    cfg["judge"]["retry"] = {"max_attempts": 2, "max_parse_attempts": 2, "timeout": 5, "backoff_initial": 0.01,
                             "backoff_max": 0.02, "backoff_jitter": 0.0}
    cfg["judge"].update(judge)
    cfg["plots"] = False
    cfg["bootstrap_rounds"] = 50
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


@pytest.mark.slow  # end to end: a run through the CLI
def test_run_with_a_truncated_cache_is_exit_2_without_traceback(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    (out / "judge_cache.sqlite").write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)  # a header and nothing else
    cfg = _small_config(tmp_path / "c.yaml", "http://127.0.0.1:9/v1", str(out))
    r = subprocess.run([BIASBOUND, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and "judge_cache.sqlite" in r.stderr and "SQLite" in r.stderr


def test_every_judge_call_failing_names_the_endpoint(tmp_path, capsys):
    from biasbound.testing import SyntheticServerConfig, serve_in_thread

    server_cfg = SyntheticServerConfig(fault_rate=1.0, fault_kinds=("garbage",))
    with serve_in_thread(server_cfg) as server:
        cfg = _small_config(tmp_path / "c.yaml", server.url, str(tmp_path / "run"))
        cfg.write_text(cfg.read_text() + "\npreflight: {calls: 0}\n")  # the preflight would stop first (tests/judge)
        code, out, err = cli(capsys, "run", str(cfg), "--no-progress")
    assert code == 2, err
    text = " ".join(err.split())
    assert "Traceback" not in err and server.url in text and "biasbound-synthetic-judge" in text
    assert "but no reply held a verdict the parser accepts" in text  # the server answered: not blamed on the URL
    assert "give the original judgments too" not in text
    # nothing lost: the judgments and the run summary are written
    assert (tmp_path / "run" / "judgments.parquet").exists()
    assert json.loads((tmp_path / "run" / "run_summary.json").read_text())["certify"]["status"] == "failed"


def test_written_example_config_runs_from_another_folder(tmp_path, capsys, monkeypatch):
    from biasbound.testing import serve_in_thread

    cfg_path = tmp_path / "conf" / "my-run.yaml"
    cfg_path.parent.mkdir()
    code, out, err = cli(capsys, "demo", "--write-config", str(cfg_path))
    assert code == 0, err
    cfg = yaml.safe_load(cfg_path.read_text())
    assert Path(cfg["data"]["questions"]).is_absolute() and Path(cfg["data"]["questions"]).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with serve_in_thread() as server:
        cfg["judge"]["base_url"] = server.url
        cfg["rewriter"]["base_url"] = server.url
        cfg["data"]["n_items"] = 4
        cfg["neighbors"]["generators"] = ["swap"]
        cfg["plots"] = False
        cfg["bootstrap_rounds"] = 50
        cfg_path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
        code, out, err = cli(capsys, "run", str(cfg_path), "--no-progress")
    assert code == 0, err
    assert (cfg_path.parent / "biasbound-run" / "leaderboard.csv").exists()  # output relative to the config file
    code, out, err = cli(capsys, "demo", "--write-config", str(cfg_path))
    assert code == 2 and "never overwritten" in err

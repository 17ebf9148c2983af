"""Output folders never mix two runs: staged writing, the manifest, a failed run, --out naming a file."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from biasbound import InputError
from biasbound.cli import main
from biasbound.pipeline import certify
from biasbound.pipeline._staging import MANIFEST, staged_output
from table_helpers import pairwise_table

pytestmark = pytest.mark.slow  # end to end: certify's outputs written, failed and rerun (~5 s on a loaded machine)


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    path = tmp_path_factory.mktemp("staging") / "t.csv"
    pairwise_table("preferences", n_items=30).to_csv(path, index=False)
    return path


def test_rerun_without_plots_removes_the_old_plots_and_keeps_user_files(table, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["certify", str(table), "--out", str(out), "--bootstrap-rounds", "100"]) == 0
    assert (out / "report.html").is_file() and (out / "ranking.png").is_file()
    (out / "my-notes.txt").write_text("mine")
    assert main(["certify", str(table), "--out", str(out), "--no-plots", "--bootstrap-rounds", "100"]) == 0
    names = {p.name for p in out.iterdir()}
    assert "report.html" not in names and not any(n.endswith(".png") for n in names)
    assert {"certificate.json", "summary.json", "my-notes.txt", MANIFEST} <= names
    assert set(json.loads((out / MANIFEST).read_text())["files"]) == names - {"my-notes.txt", MANIFEST}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_failed_run_leaves_no_stale_certificate(table, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(["certify", str(table), "--out", str(out), "--no-plots", "--bootstrap-rounds", "100"]) == 0
    assert (out / "certificate.json").is_file()
    code = main(["certify", str(table), "--out", str(out), "--no-plots", "--tau", "0.001", "--alpha", "1"])
    assert code == 2
    assert not (out / "certificate.json").exists() and not (out / "certificates.json").exists()
    assert json.loads((out / "summary.json").read_text())["failures"]


def test_folder_without_a_manifest_loses_nothing(table, tmp_path, capsys) -> None:
    """Issue 28, class 2: files whose names look like outputs are a user's own unless certify recorded them."""
    out = tmp_path / "old"
    out.mkdir()
    mine = ("report.html", "ranking-my-slides.png", "score_distribution.png", "certificate-important.json", "data.csv")
    for name in mine:
        (out / name).write_text("mine")
    assert main(["certify", str(table), "--out", str(out), "--no-plots", "--bootstrap-rounds", "100"]) == 0
    assert all((out / name).read_text() == "mine" for name in mine)


def test_an_exception_while_writing_leaves_the_target_untouched(tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "certificate.json").write_text("previous run")
    with pytest.raises(RuntimeError):
        with staged_output(out) as stage:
            (stage / "certificate.json").write_text("half")
            raise RuntimeError("disk full")
    assert (out / "certificate.json").read_text() == "previous run"
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


@pytest.mark.parametrize("command", [["certify", "{table}"], ["demo"]])
def test_out_naming_an_existing_file_is_one_sentence(table, tmp_path, capsys, command) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = [a.replace("{table}", str(table)) for a in command]
    for out, words in ((afile, "which is an existing file"), (afile / "sub", "is a file, not a folder")):
        assert main([*argv, "--out", str(out)]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert f"The '--out' option of {command[0]}" in err and words in err and "Traceback" not in err
    with pytest.raises(InputError, match="The 'out' parameter of certify"):
        certify(pd.read_csv(table).assign(source="t", line=1), out=afile, progress=False)

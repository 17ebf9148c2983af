"""`biasbound demo`: the embedded data certified in paper and tight calibration, every output written."""

from __future__ import annotations

import json
from html import unescape

import pandas as pd
import pytest
from scipy import stats

from biasbound.certificate import Certificate
from biasbound.cli import app, main
from biasbound.commands import demo as demo_cmd

pytestmark = pytest.mark.slow  # end to end: the demo certifies the embedded data three times

if "demo" not in {c.name for c in app.registered_commands}:  # until the integrator wires it in
    demo_cmd.register(app)

EXPECTED = (
    "certificate.json", "certificates.json", "scores.parquet", "leaderboard.csv", "retention.json",
    "load_report.json", "summary.json", "score_distribution.png", "ranking.png", "sensitivity.png", "report.html",
)


def test_demo_writes_every_output_and_compares_paper_with_tight(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    alphas = {}
    for method in ("paper", "tight"):
        folder = tmp_path / method
        for name in EXPECTED:
            assert (folder / name).is_file() and (folder / name).stat().st_size > 0, f"{method}/{name}"
        cert = Certificate.read(folder / "certificate.json")
        assert cert.verify()["holds"] is True and cert.method == method and cert.tau == 0.5 and cert.delta == 0.01
        assert cert.audit is not None and cert.audit["pooled"]["verdict"] in ("holds", "not contradictable", "inconclusive")
        alphas[method] = cert.alpha
        lb = pd.read_csv(folder / "leaderboard.csv")
        ret = json.loads((folder / "retention.json").read_text())
        assert ret["spearman"] == stats.spearmanr(lb["original"], lb["certified"]).statistic
        assert ret["spearman"] > 0
        html = (folder / "report.html").read_text()
        assert "o3-high" in html and cert.guarantee.split(",")[0][:40] in unescape(html)
        assert f"{cert.alpha:.4g}" in printed
    assert alphas["tight"] >= alphas["paper"]
    assert "Spearman" in printed and "audit" in printed


# ----------------------------------------------------------------------------- demo --run
def _without_local_parts(cfg: dict) -> dict:
    """The example's settings without what legitimately differs: file paths, server URLs, key variable, output."""
    cfg = json.loads(json.dumps(cfg))
    for key in ("questions", "answers"):
        cfg["data"].pop(key)
    for ep in ("judge", "rewriter"):
        cfg[ep].pop("base_url")
        cfg[ep].pop("api_key_env")
    cfg.pop("output")
    return cfg


def test_demo_run_config_is_the_example_config():
    """`demo --run` runs examples/run-synthetic.yaml: same settings; only paths, URL, key variable and output differ."""
    import yaml
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "run-synthetic.yaml"
    from_file = yaml.safe_load(example.read_text(encoding="utf-8"))
    ours = demo_cmd.example_run_config("http://127.0.0.1:1/v1", "out")
    assert _without_local_parts(ours) == _without_local_parts(from_file)
    # the shipped data the demo uses is the data the example points at (resolved through the package)
    shipped = demo_cmd.example_data_path()
    # (from a checkout the two are one file; from an installed package, the installed copy of it)
    for rel, name in ((from_file["data"]["questions"], "question.jsonl"),
                      (from_file["data"]["answers"] + "/gpt-4-0314.jsonl", "model_answer/gpt-4-0314.jsonl")):
        assert (example.parent / rel).read_bytes() == (shipped / name).read_bytes()
    assert len((shipped / "question.jsonl").read_text(encoding="utf-8").splitlines()) == 198


def test_demo_run_judges_certifies_and_stops_the_server(tmp_path, capsys, monkeypatch):
    """`biasbound demo --run` end to end on a small slice: server up, judged, certified, server down, outputs listed."""
    import socket

    from biasbound.testing import server as server_mod

    urls = []
    real = server_mod.serve_in_thread

    def spy(*args, **kwargs):  # record the URL the demo's own server listened on
        cm = real(*args, **kwargs)
        running = cm.__enter__()
        urls.append(running.url)

        class _CM:
            def __enter__(self):
                return running

            def __exit__(self, *exc):
                return cm.__exit__(*exc)

        return _CM()

    monkeypatch.setattr(server_mod, "serve_in_thread", spy)
    monkeypatch.chdir(tmp_path)
    code = main(["demo", "--run", "--n-items", "20", "--generators", "swap,format,rerun", "--out", "demo-out",
                 "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0
    out = tmp_path / "demo-out" / "run"
    for name in ("judgments.parquet", "neighbors.jsonl", "run_summary.json", "certificate.json", "leaderboard.csv",
                 "report.html"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    cert = Certificate.read(out / "certificate.json")
    assert cert.verify()["holds"] is True and cert.tau == 0.5 and cert.delta == 0.01
    assert set(cert.scope["generators"]) == {"swap", "variant:format", "rerun"}
    summary = json.loads((out / "run_summary.json").read_text())
    assert summary["items"] == 20 and summary["certify"]["status"] == "ok"
    lb = pd.read_csv(out / "leaderboard.csv")
    assert set(lb["model"]) == {"gpt-3.5-turbo-0125", "gpt-4-0314"}
    assert lb.loc[lb["model"] == "gpt-4-0314", "is_baseline"].item()
    assert str(out) in printed and "judge calls:" in printed
    # the server the demo started is gone: its port refuses connections
    (url,) = urls
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.socket() as s:
        assert s.connect_ex((host, int(port))) != 0


def test_demo_run_options_need_run_and_valid_generators(capsys):
    assert main(["demo", "--n-items", "20"]) == 2
    assert "--run" in capsys.readouterr().err
    assert main(["demo", "--run", "--generators", "swap,bold"]) == 2  # refused before any server starts
    err = capsys.readouterr().err
    assert "'--generators' option of demo" in err and "'swap,bold'" in err

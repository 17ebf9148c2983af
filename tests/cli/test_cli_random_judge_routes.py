"""The random judge's concentration routes through the CLI: `certify` writes their records, `verify` recomputes them.

A long table of 12 models x 40 items with both presentation orders (swap neighbours), the swapped verdict differing
for a fifth of the items (seeded). Every answer swapped at once in the leaderboard view gives the three records
(moments, Bernstein per model, the norm route) at a third of beta each, the selected candidate being the smallest;
Hamming-3 in the model view gives each model the moment record and the per-level record with k = 3 at half of beta
each. `verify` recomputes every bound from the certificate and exits 0; an edited record fails it. Nothing here is
statistical: the table is fixed by its seed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from biasbound.cli import main

pytestmark = pytest.mark.slow  # end to end: certify and verify through the CLI


@pytest.fixture(scope="module")
def swap_table(tmp_path_factory):
    rng = np.random.default_rng(22)
    path = tmp_path_factory.mktemp("routes") / "swaps.csv"
    rows = ["judge,model,item_id,game,score"]
    for m in range(12):
        for i in range(40):
            b = float(rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]))
            s = 1.0 - b if rng.random() < 0.2 else b
            rows += [f"j,m{m},q{i},1,{b}", f"j,m{m},q{i},2,{s}"]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_every_answer_swapped_records_the_three_routes_and_verifies(swap_table, tmp_path, capsys):
    out = tmp_path / "all"
    code, text = _run(["certify", swap_table, "--out", out, "--view", "leaderboard", "--hamming", "all", "--no-plots",
                       "--no-progress"], capsys)
    assert code == 0, text
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    recs = cert["knowledge"]["generators"]["swap"]
    assert [r["kind"] for r in recs] == ["moments", "high-probability", "high-probability"]
    assert "Bernstein per model mean" in recs[1]["note"] and "norm concentration" in recs[2]["note"]
    assert all(r["beta"] == pytest.approx(cert["beta"] / 3) for r in recs)
    applicable = [c for c in cert["candidates"] if c["applicable"]]
    chosen = [c for c in applicable if c["selected"]]
    assert len(chosen) == 1 and chosen[0]["value"] == min(c["value"] for c in applicable)
    code, text = _run(["verify", out], capsys)
    assert code == 0, text
    # an edited A (the norm route's, made smaller) no longer verifies
    recs[2]["A"] = recs[2]["A"] / 2
    (out / "certificate.json").write_text(json.dumps(cert), encoding="utf-8")
    code, text = _run(["verify", out], capsys)
    assert code != 0, text


def test_hamming_3_records_the_chernoff_route_and_verifies(swap_table, tmp_path, capsys):
    out = tmp_path / "h3"
    code, text = _run(["certify", swap_table, "--out", out, "--hamming", "3", "--no-plots", "--no-progress"], capsys)
    assert code == 0, text
    cert = json.loads((out / "certificate.json").read_text(encoding="utf-8"))
    for name, recs in cert["knowledge"]["generators"].items():
        assert [r["kind"] for r in recs] == ["moments", "random-judge"], name
        assert recs[1]["k"] == 3 and recs[0]["beta"] == pytest.approx(recs[1]["beta"])
    code, text = _run(["verify", out], capsys)
    assert code == 0, text

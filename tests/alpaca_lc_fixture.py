"""The AlpacaEval length-controlled fixture (tests/data/alpaca_eval_lc, see its PROVENANCE.md), shared by the
reader's tests and the CLI's: AlpacaEval's own numbers, the records' features, and a writer of results trees."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from conftest import SHARED_DATA

LC = SHARED_DATA / "alpaca_eval_lc"
#: alpaca_eval 0.6.6's own output per model (the truth)
NATIVE = json.loads((LC / "native_lc.json").read_text(encoding="utf-8"))["models"]
FEATURES = pd.read_csv(LC / "features.csv.gz")
ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
BASELINE = "gpt4_1106_preview"


def write_model(root: Path, records_of: str, name: str) -> None:
    """``results/<name>/<annotator>/annotations.json`` with the fixture's records of ``records_of`` (output texts of
    the recorded lengths; AlpacaEval's GLM reads only their lengths, positions and preferences)."""
    grp = FEATURES[FEATURES["model"] == records_of].sort_values("index")
    recs = [{"instruction": f"instruction {int(r.index)}", "output_1": "a" * int(r.len_1), "generator_1": BASELINE,
             "output_2": "b" * int(r.len_2), "generator_2": name, "annotator": ANNOTATOR,
             "preference": None if pd.isna(r.preference) else float(r.preference)} for r in grp.itertuples()]
    d = root / name / ANNOTATOR
    d.mkdir(parents=True)
    (d / "annotations.json").write_text(json.dumps(recs), encoding="utf-8")


def write_results(root: Path, models: list[str]) -> Path:
    """An AlpacaEval ``results/`` tree holding the fixture's records of ``models``, each under its own name."""
    for m in models:
        write_model(root, m, m)
    return root

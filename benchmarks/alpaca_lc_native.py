"""AlpacaEval's own length-controlled win rate on real annotations: the fixture of the LC tests.

Run once, in an environment where ``pip install alpaca-eval`` (0.6.6) succeeded, over an unpacked
``results/`` tree of tatsu-lab/alpaca_eval (the ``weighted_alpaca_eval_gpt4_turbo`` annotations):

    python benchmarks/alpaca_lc_native.py RESULTS_DIR tests/data/alpaca_eval_lc

It writes, into the output folder,

* ``features.csv.gz``: per model and record, what AlpacaEval's GLM reads from an annotation —
  the record's position (``index``), ``len_1``/``len_2`` (``str.len()`` of ``output_1``/``output_2``)
  and ``preference`` (unchanged);
* ``df_gamed.csv``: a **stand-in** for AlpacaEval's ``df_gamed.csv`` (the hub file is not reachable
  here): the rows of two real prompt-gamed runs (``gpt-3.5-turbo-1106_verbose`` and ``_concise``),
  with an instruction difficulty computed by the first step of AlpacaEval's
  ``notebooks/instruction_difficulty.ipynb`` (``make_data``: logit of the mean preference per
  instruction over every complete original run of the tree);
* ``native_lc.json``: what ``alpaca_eval.metrics.glm_winrate.get_length_controlled_winrate`` returns
  for each model on its full annotations, with ``hf_hub_download`` pointed at the stand-in file.

The stand-in inputs make the comparison "same inputs, same rule": they are not AlpacaEval's published
instruction difficulty, so ``native_lc.json`` is not the published leaderboard.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ANNOTATOR = "weighted_alpaca_eval_gpt4_turbo"
GAMED = ("gpt-3.5-turbo-1106_verbose", "gpt-3.5-turbo-1106_concise")
MODELS = ("alpaca-7b", "gpt-3.5-turbo-1106", "claude-2.1", "gpt4_gamed", "NullModel", "text_davinci_003",
          "gemma-7b-it", "Qwen-14B-Chat", "vicuna-7b", "phi-2", "gpt4_1106_preview")


def _records(results: Path, model: str) -> list[dict]:
    return json.loads((results / model / ANNOTATOR / "annotations.json").read_text(encoding="utf-8"))


def main(results: Path, out: Path) -> None:
    import alpaca_eval
    import sklearn
    from alpaca_eval.metrics import glm_winrate

    out.mkdir(parents=True, exist_ok=True)
    order = [r["instruction"] for r in _records(results, "gpt4_1106_preview")]
    position = {t: i for i, t in enumerate(order)}
    # instruction difficulty: AlpacaEval's notebook, make_data(instruction_difficulty=None)
    prefs = []
    for d in sorted(p.parent.parent.name for p in results.glob(f"*/{ANNOTATOR}/annotations.json")):
        if d.endswith(("_verbose", "_concise")):
            continue
        recs = _records(results, d)
        if len(recs) != len(order):
            continue
        prefs.append(pd.DataFrame({"index": [position[r["instruction"]] for r in recs],
                                   "preference": [r["preference"] for r in recs]}))
    allp = pd.concat(prefs)
    allp = allp[allp["preference"] >= 0]
    allp["preference"] = allp["preference"].astype(float).replace({0.0: 1.5}) - 1
    mean = allp.groupby("index")["preference"].mean().sort_index()
    difficulty = np.log(mean / (1 - mean))
    gamed = []
    for g in GAMED:
        recs = _records(results, g)
        d = pd.DataFrame({"model": g, "index": [position[r["instruction"]] for r in recs],
                          "len_1": [len(r["output_1"]) for r in recs], "len_2": [len(r["output_2"]) for r in recs],
                          "preference": [r["preference"] for r in recs]}).sort_values("index")
        delta = d["len_1"] - d["len_2"]
        d["std_delta_len"] = delta / delta.std()
        d["preference"] = d["preference"].astype(float).replace({0.0: 1.5}) - 1
        d["instruction_difficulty"] = difficulty.loc[d["index"]].to_numpy()
        d["not_gamed_baseline"] = False
        gamed.append(d.drop(columns=["len_1", "len_2"]))
    gamed_path = out / "df_gamed.csv"
    pd.concat(gamed, ignore_index=True).to_csv(gamed_path, index=False, float_format="%.17g")

    glm_winrate.hf_hub_download = lambda **kw: str(gamed_path)  # the stand-in instead of the hub's file
    features, native = [], {}
    for m in MODELS:
        recs = _records(results, m)
        features.append(pd.DataFrame({"model": m, "index": range(len(recs)),
                                      "len_1": [len(r["output_1"]) for r in recs],
                                      "len_2": [len(r["output_2"]) for r in recs],
                                      "preference": [r["preference"] for r in recs]}))
        metrics = glm_winrate.get_length_controlled_winrate(recs, save_weights_dir=None)
        native[m] = {k: float(metrics[k]) for k in ("length_controlled_winrate", "win_rate")}
        print(f"{m:28s} LC {native[m]['length_controlled_winrate']:9.5f}  WR {native[m]['win_rate']:9.5f}")
    pd.concat(features, ignore_index=True).to_csv(out / "features.csv.gz", index=False, float_format="%.17g")
    (out / "native_lc.json").write_text(json.dumps({
        "computed_by": f"alpaca_eval {alpaca_eval.__version__} get_length_controlled_winrate(annotations, "
                       "save_weights_dir=None), glm length_controlled_v1",
        "environment": {"python": platform.python_version(), "scikit-learn": sklearn.__version__,
                        "pandas": pd.__version__, "numpy": np.__version__},
        "annotations": f"tatsu-lab/alpaca_eval @ cd543a149df89434d8a54582c0151c0b945c3d20 results/<model>/{ANNOTATOR}",
        "df_gamed": "stand-in (see benchmarks/alpaca_lc_native.py), not the hub's df_gamed.csv",
        "models": native}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))

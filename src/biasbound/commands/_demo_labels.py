"""``biasbound demo --labels``: the embedded LLMBar judgments with 50 gold labels drawn at random.

Writes the two inputs (``DIR/labels-demo/inputs/judgments.parquet``, ``.../labels.csv``), certifies them exactly as
``biasbound certify INPUTS --human-labels LABELS`` does (so ``biasbound verify DIR/labels-demo/out --judgments
.../judgments.parquet`` re-derives everything), and prints the agreement, the human-anchored scores and the anchored
release's certificate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

__all__ = ["LABELS_DEMO", "run_labels_demo"]

#: the demo's settings: the paper's τ and δ, swap neighbours, 50 gold labels drawn with seed 0
LABELS_DEMO: dict[str, Any] = {"tau": 0.5, "delta": 0.01, "neighbors": "swap", "seed": 0, "n_labels": 50}


def run_labels_demo(out: str | Path = "biasbound-demo", *, progress: bool = True, plots: bool = False,
                    console: Console | None = None) -> Any:
    """Certify the embedded LLMBar judgments of four judges with 50 random gold labels; return the CertifyResult."""
    from biasbound.commands.certify import print_summary
    from biasbound.data.loading import load_inputs
    from biasbound.data.embedded import load_llmbar_demo
    from biasbound.human.show import print_human
    from biasbound.pipeline import certify

    console = console or Console()
    root = Path(out) / "labels-demo"
    inputs = root / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    js, labels = load_llmbar_demo(n_labels=LABELS_DEMO["n_labels"], seed=LABELS_DEMO["seed"])
    cols = ["judge", "model", "item_id", "variant", "rerun", "game", "score", "verdict"]
    judgments, labels_file = inputs / "judgments.parquet", inputs / "labels.csv"
    from biasbound.data.coded import text_frame

    text_frame(js.frame[cols]).to_parquet(judgments, index=False)
    labels.to_csv(labels_file, index=False)
    loaded = load_inputs([judgments], scale=(0.0, 1.0))
    console.print(f"LLMBar (embedded, MIT): {js.frame['judge'].nunique()} judge configurations, "
                  f"{js.frame['item_id'].nunique()} items, both presentation orders; {len(labels)} gold labels drawn "
                  f"uniformly at random (seed {LABELS_DEMO['seed']}) play the human labels.", highlight=False,
                  soft_wrap=True, markup=False)
    result = certify(loaded, tau=LABELS_DEMO["tau"], delta=LABELS_DEMO["delta"], neighbors=LABELS_DEMO["neighbors"],
                     seed=LABELS_DEMO["seed"], out=root / "out", plots=plots, progress=progress,
                     human_labels=str(labels_file))
    print_summary(result, console)
    print_human(result, console)
    console.print(f"Re-derive it: biasbound verify {root / 'out'} --judgments {judgments} --judgments {labels_file}; audit the anchored release: "
                  f"biasbound audit {root / 'out' / 'anchored'}/certificate-<judge>.json --neighbor-file "
                  f"{root / 'out' / 'anchored_judgments.parquet'}", highlight=False, soft_wrap=True, markup=False)
    return result

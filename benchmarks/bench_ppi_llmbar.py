"""Benchmark: coverage and width of the human-anchored intervals on LLMBar, every judge configuration.

For each of LLMBar's 65 judge configurations (the embedded judgments, game 1 = the canonical verdicts) and each
label budget n ∈ {25, 50, 100, 200}, ``--draws`` (default 500) seeded uniform draws of n labelled items:

* the PPI++ interval (``biasbound.human.anchored_mean``: ppi-python, power-tuned) and the classical labels-only
  interval for the share of items whose gold output is output 1 (the gold-label preference), against its value on
  all the configuration's items (every item carries its gold label, so the truth is known);
* the judge card's accuracy interval (Wilson, from the n labelled items) for the share of items where the judge's
  preferred output is the gold one, against the accuracy on all items.

Reported per (configuration, n): the coverage of each interval (Monte Carlo standard error sqrt(p(1 − p)/draws),
0.0097 at p = 0.95 and 500 draws), the median PPI++ and classical widths and their ratio; then per n the share
of configurations whose coverage is below the nominal level less 3 Monte Carlo standard errors, the range of
coverage, and the configurations where PPI++ helps most and least (the judge's accuracy beside it).

Sampling is without replacement from a finite set (n = 200 of 419 items is about half): the intervals, built for
independent draws, are then conservative, which the coverage shows.

``--known-truth``: instead, the synthetic judge with known error and known human truth
(``biasbound.testing.human.known_truth``: 2,000 binary items, human share 0.6, the judge right with probability
0.55, 0.7, 0.85 or 0.95) and 1,000 seeded label draws of n = 50 and 200: coverage of the human mean, the median
width ratio and the largest per-draw ratio PPI++/classical.

Run: nice python benchmarks/bench_ppi_llmbar.py [--draws 500] [--level 0.95] [--json out.json] [--known-truth]
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from biasbound.data.embedded import llmbar_path
from biasbound.data.tables import load_llmbar
from biasbound.human import anchored_mean
from biasbound.human._agreement import proportion_interval
from biasbound.testing.human import label_draw

BUDGETS = (25, 50, 100, 200)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="write every row to this file")
    ap.add_argument("--known-truth", action="store_true", help="the synthetic known-truth judge instead of LLMBar")
    args = ap.parse_args()
    if args.known_truth:
        known(args.draws if args.draws != 500 else 1000, args.level, args.seed)
        return
    frame = load_llmbar(llmbar_path()).frame
    canon = frame[(frame["game"] == 1) & frame["score"].notna() & frame["human"].notna()]
    rows = []
    t0, cpu0 = time.perf_counter(), time.process_time()
    for k, (judge, g) in enumerate(canon.groupby("judge", sort=True)):
        f, y = g["score"].to_numpy(dtype=float), g["human"].to_numpy(dtype=float)
        right = (f == y).astype(float)
        truth, acc_truth = float(y.mean()), float(right.mean())
        rng = np.random.default_rng([args.seed, k])
        for n in BUDGETS:
            cov = ccov = acov = 0
            widths, cwidths = [], []
            for _ in range(args.draws):
                lab = label_draw(f.size, n, rng)
                a = anchored_mean(y[lab], f, lab, level=args.level)
                cov += a.lo <= truth <= a.hi
                ccov += a.classical_lo <= truth <= a.classical_hi
                widths.append(a.width)
                cwidths.append(a.classical_width)
                lo, hi = proportion_interval(int(right[lab].sum()), n, args.level)
                acov += lo <= acc_truth <= hi
            rows.append({"judge": judge, "items": int(f.size), "n": n, "accuracy": acc_truth, "truth": truth,
                         "coverage_ppi": cov / args.draws, "coverage_classical": ccov / args.draws,
                         "coverage_accuracy": acov / args.draws, "median_width_ppi": float(np.median(widths)),
                         "median_width_classical": float(np.median(cwidths)),
                         "width_ratio": float(np.median(np.asarray(widths) / np.asarray(cwidths)))})
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    mc = (args.level * (1 - args.level) / args.draws) ** 0.5
    floor = args.level - 3 * mc
    print(f"{len(rows) // len(BUDGETS)} configurations × n ∈ {BUDGETS} × {args.draws} draws, level {args.level}; "
          f"Monte Carlo s.e. {mc:.4f}; floor (nominal − 3 s.e.) {floor:.3f}; {wall:.0f} s wall, {cpu:.0f} s CPU")
    print("n    | PPI++ coverage min / median | below floor | classical min / median | accuracy (Wilson) min / median"
          " | median width ratio PPI++/classical: min / median / max")
    for n in BUDGETS:
        sub = [r for r in rows if r["n"] == n]
        c = np.array([r["coverage_ppi"] for r in sub])
        cc = np.array([r["coverage_classical"] for r in sub])
        ca = np.array([r["coverage_accuracy"] for r in sub])
        w = np.array([r["width_ratio"] for r in sub])
        print(f"{n:<4} | {c.min():.3f} / {np.median(c):.3f} | {int((c < floor).sum())} of {len(sub)} | "
              f"{cc.min():.3f} / {np.median(cc):.3f} | {ca.min():.3f} / {np.median(ca):.3f} | "
              f"{w.min():.3f} / {np.median(w):.3f} / {w.max():.3f}")
    sub = sorted((r for r in rows if r["n"] == 100), key=lambda r: r["width_ratio"])
    print("n = 100, where PPI++ helps most (judge, accuracy, median width PPI++ / classical):")
    for r in sub[:5]:
        print(f"  {r['judge']:<34} acc {r['accuracy']:.3f}  {r['median_width_ppi']:.3f} / "
              f"{r['median_width_classical']:.3f} ({r['width_ratio']:.2f})")
    print("n = 100, where it does not help (ratio ≥ 0.98):", sum(r["width_ratio"] >= 0.98 for r in sub), "of", len(sub),
          "configurations; their accuracy ≤", f"{max((r['accuracy'] for r in sub if r['width_ratio'] >= 0.98), default=float('nan')):.3f}")
    accs = np.array([r["accuracy"] for r in sub])
    ratios = np.array([r["width_ratio"] for r in sub])
    for lo, hi in ((0.0, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 1.01)):
        m = (accs >= lo) & (accs < hi)
        if m.any():
            print(f"  accuracy in [{lo:.1f}, {min(hi, 1):.1f}): {int(m.sum())} configurations, median width ratio "
                  f"{np.median(ratios[m]):.3f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=1)


def known(draws: int, level: float, seed: int) -> None:
    from biasbound.testing.human import known_truth

    mc = (level * (1 - level) / draws) ** 0.5
    print(f"known truth: 2,000 items, {draws} label draws each, level {level}; Monte Carlo s.e. {mc:.4f}, floor "
          f"{level - 3 * mc:.3f}")
    print("judge accuracy | n   | PPI++ coverage | classical coverage | width ratio median / max")
    for k, acc in enumerate((0.55, 0.7, 0.85, 0.95)):
        kt = known_truth(2000, accuracy=acc, prevalence=0.6, rng=np.random.default_rng([seed, k]))
        for n in (50, 200):
            rng = np.random.default_rng([seed, k, n])
            cov = ccov = 0
            ratios = []
            for _ in range(draws):
                lab = label_draw(2000, n, rng)
                a = anchored_mean(kt.y[lab], kt.f, lab, level=level)
                cov += a.lo <= kt.truth <= a.hi
                ccov += a.classical_lo <= kt.truth <= a.classical_hi
                ratios.append(a.width / a.classical_width)
            print(f"{acc:<14} | {n:<3} | {cov / draws:.3f}          | {ccov / draws:.3f}              | "
                  f"{np.median(ratios):.3f} / {max(ratios):.4f}")


if __name__ == "__main__":
    main()

"""The judge card and a ``compare`` outcome as GitHub-flavoured Markdown (a CI job summary, a PR comment), and the
outcome as JSON (``compare --json``) for CI tools that read results rather than logs.

``biasbound compare OLD NEW --markdown FILE`` appends it to FILE; the GitHub Action passes
``$GITHUB_STEP_SUMMARY``, so the card shows on the workflow run's page. Plain text only: the figures are those of
:func:`biasbound.card.card_rows` and :mod:`biasbound.paired`, rendered, never recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["compare_markdown", "write_markdown", "write_outcome_json"]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _iv(lo: float | None, hi: float | None) -> str:
    return "—" if lo is None or hi is None else f"[{lo:+.4f}, {hi:+.4f}]"


def compare_markdown(old: Mapping[str, Any], new: Mapping[str, Any], res: Mapping[str, Any], *, verdict: str,
                     failed: bool) -> str:
    """The Markdown of one ``compare`` run: the verdict, each NEW judge's card, the moved figures and the paired
    comparisons."""
    from biasbound.card import card_rows

    head = "❌ biasbound gate failed" if failed else "✅ biasbound gate passed"
    lines = [f"## {head}", "", _cell(verdict), ""]
    for line in res.get("failed") or []:
        lines.append(f"- **FAIL** {_cell(line)}")
    moved = res.get("moved") or []
    for m in moved:
        lines.append(f"- **moved** judge {_cell(m['judge'])}: {_cell(m['figure'])} (95% intervals disjoint)")
    for m in res.get("paired_moved") or []:
        lines.append(f"- **moved (paired)** {_cell(m)}")
    if lines[-1] != "":
        lines.append("")
    for r in res.get("paired") or []:
        who = r["new_judge"] if r["old_judge"] == r["new_judge"] else f"{r['old_judge']} → {r['new_judge']}"
        pct = round(100 * r["level"])
        lines += [f"### Paired comparison — {_cell(who)}",
                  (f"{r['pairs']} (model, item) pairs on {r['items']} items in common; {pct}% paired bootstrap over "
                   f"items ({r['rounds']} rounds, seed {r['seed']}); exact McNemar."), "",
                  f"| figure | old → new | new − old [{pct}% interval] | McNemar p |", "|---|---|---|---|"]
        v = r["verdicts"]
        lines.append(f"| verdicts | {v['changed']} of {v['n']} changed | {v['up']} up, {v['down']} down | {v['p']:.3g} |")
        for g, x in r["generators"].items():
            lines.append(f"| flip_rate:{_cell(g)} | {x['old']:.4f} → {x['new']:.4f} | {x['diff']:+.4f} "
                         f"{_iv(x['lo'], x['hi'])} | {x['p']:.3g} |")
        for m in r["scores"][:50]:
            lines.append(f"| score {_cell(m['model'])} | {m['old']:.4f} → {m['new']:.4f} | {m['diff']:+.4f} "
                         f"{_iv(m['lo'], m['hi'])} | |")
        lines.append("")
    for judge, card in (new.get("judges") or {}).items():
        lines += [f"### Judge card — {_cell(judge)}", "", "| figure | value (95% interval) |", "|---|---|"]
        lines += [f"| {_cell(label)} | {_cell(text)} |" for label, text in card_rows(card)]
        lines.append("")
    return "\n".join(lines) + "\n"


def write_markdown(path: str | Path, text: str) -> Path:
    """Append ``text`` to ``path`` (GitHub's step summary is appended to, step after step)."""
    p = Path(path)
    with p.open("a", encoding="utf-8") as fh:
        fh.write(text)
    return p



def write_outcome_json(path: str | Path, res: Mapping[str, Any], *, verdict: str, exit_code: int, old: str,
                       new: str) -> Path:
    """``compare``'s outcome as one JSON object: ``exit_code``, ``passed``, ``verdict``, ``old``, ``new``, ``failed``
    (one sentence per condition that holds), ``moved`` (disjoint 95% intervals), ``rank_moves``, ``paired`` (the paired
    comparisons), ``paired_moved``, ``audits``, ``common``/``only_old``/``only_new`` judges."""
    import json

    keys = ("failed", "moved", "rank_moves", "orders", "paired", "paired_moved", "audits", "common", "only_old",
            "only_new")
    doc = {"exit_code": int(exit_code), "passed": exit_code == 0, "verdict": verdict, "old": old, "new": new,
           **{k: res.get(k) for k in keys}}
    p = Path(path)
    p.write_text(json.dumps(doc, indent=2, ensure_ascii=False, default=float) + "\n", encoding="utf-8")
    return p

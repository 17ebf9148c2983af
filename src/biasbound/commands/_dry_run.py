"""``biasbound run --dry-run``: render every prompt of the run against its data without calling the judge.

Every original item is rendered, in both orders for a pairwise template (game 1: the model's answer shown second;
game 2: first), with the config's own templates (``prompt``) or the built-in ones. A field the templates use that
an item lacks (``reference``, or an empty answer) and a template that fails to render (a Jinja error) are each one
sentence naming the item; one rendered prompt is printed. Nothing is sent: no endpoint is opened.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jinja2

__all__ = ["DryRun", "dry_run"]


@dataclass
class DryRun:
    """What the dry run rendered and found."""

    rendered: int = 0
    problems: list[str] = field(default_factory=list)
    example: list[dict[str, str]] | None = None
    example_of: str = ""


def _used_fields(prompt: Any) -> dict[str, set[str]]:
    """``{template name: fields it uses}`` of a user prompt (empty for the built-in templates, which use the
    question and the answers only)."""
    from jinja2 import meta

    if prompt is None:
        return {}
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    out: dict[str, set[str]] = {}
    for name, text in (("system", prompt.system), ("user", prompt.user)):
        if text:
            out[name] = set(meta.find_undeclared_variables(env.parse(text)))
    return out


def _where(item: Any) -> str:
    order = {1: "game 1, the model's answer second", 2: "game 2, the model's answer first"}.get(item.game, "single grading")
    return f"item {item.item_id!r} (model {item.model!r}, {order})"


def _short(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def dry_run(cfg: Any) -> DryRun:
    """Render every original prompt of ``cfg`` (a :class:`~biasbound.config.RunConfig`); no judge call."""
    from biasbound._exceptions import DataFormatError
    from biasbound.runner import item_fields, item_messages, original_items

    report = DryRun()
    used = _used_fields(cfg.prompt)
    for item in original_items(cfg):
        fields = item_fields(item)
        lacking = sorted({f for names in used.values() for f in names
                          if fields.get(f) is None or (isinstance(fields.get(f), str) and not fields[f].strip())})
        for f in lacking:
            who = " and ".join(f"{t} template" for t in sorted(used) if f in used[t])
            report.problems.append(f"{_where(item)}: the {who} uses {f!r}, which this item does not have "
                                   f"(it would render as {fields.get(f)!r}).")
        try:
            messages = item_messages(item, cfg.prompt)
        except (jinja2.TemplateError, DataFormatError, TypeError, ValueError, ArithmeticError) as exc:
            report.problems.append(f"{_where(item)}: the template cannot be rendered ({type(exc).__name__}: "
                                   f"{_short(str(exc))}).")
            continue
        report.rendered += 1
        if report.example is None:
            report.example, report.example_of = messages, _where(item)
    return report

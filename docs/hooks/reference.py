"""mkdocs hook: the reference pages generated from the code, so that they cannot drift from it.

- ``<!-- generated: parameters -->``: every parameter of :data:`biasbound.parameters.PARAMETERS` (name, flag, run-config
  key, allowed values, default, meaning), the one table the API, the CLI options and the config keys are built from;
- ``<!-- generated: commands -->``: every command of the ``biasbound`` CLI with its options, read from the typer app
  itself (whose certify/run options come from the same table);
- ``<!-- generated: changelog -->``: the repository's CHANGELOG.md (mkdocs reads only ``docs/``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(v: object) -> str:
    if v is None:
        return "—"
    if isinstance(v, tuple):
        v = ",".join(map(str, v))
    return f"`{v}`"


def parameters_table() -> str:
    from biasbound.parameters import CERTIFY, PARAMETERS

    rows = ["| name | option | run-config key | allowed | default | meaning |", "|---|---|---|---|---|---|"]
    for name, p in PARAMETERS.items():
        rows.append("| " + " | ".join([
            f"`{name}`" + (" (certify, run)" if name in CERTIFY else ""),
            " ".join(f"`{f}`" for f in [p.flag, *p.old_flags] if f) or "Python only",
            _value(p.config_key),
            _cell(p.allowed()),
            _value(p.default),
            _cell(p.meaning),
        ]) + " |")
    return "\n".join(rows)


def commands_reference() -> str:
    import typer

    from biasbound.cli import app

    group: Any = typer.main.get_command(app)
    out = []
    for name in sorted(group.commands):
        cmd = group.commands[name]
        if cmd.hidden:
            continue
        out.append(f"## `biasbound {name}`\n")
        out.append(_cell((cmd.help or "").strip().split("\n\n")[0]) + "\n")
        rows = ["| argument / option | default | help |", "|---|---|---|"]
        for param in cmd.params:
            if getattr(param, "hidden", False):
                continue
            names = " ".join(f"`{o}`" for o in [*param.opts, *getattr(param, "secondary_opts", [])])
            argument = getattr(param, "param_type_name", "") == "argument"
            if argument:
                names = f"`{param.name.upper() if param.name else ''}`" + ("…" if param.nargs == -1 else "")
            default = param.default if not callable(param.default) else None
            shown = "—" if default in (None, (), []) or argument else _value(default)
            rows.append(f"| {names} | {shown} | {_cell(getattr(param, 'help', '') or '')} |")
        out.append("\n".join(rows) + "\n")
    return "\n".join(out)


def changelog() -> str:
    path = ROOT / "CHANGELOG.md"
    if not path.is_file():
        return "*There is no CHANGELOG.md at the root of this checkout yet.*"
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[0].startswith("# "):  # the page has its own title
        lines = lines[1:]
    # links written from the repository root (docs/guides/x.md) point from this page (docs/project/) as ../guides/x.md
    return "\n".join(lines).replace("](docs/", "](../")


GENERATORS = {"parameters": parameters_table, "commands": commands_reference, "changelog": changelog}


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    for key, make in GENERATORS.items():
        marker = f"<!-- generated: {key} -->"
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown

"""Every bash and Python block of the README and of the documentation site (docs/) runs, as a user would run it.

The blocks are found by their fence (```bash, ```sh, ```python, ```py). A block that must not run (it installs the
package, needs the user's own folders, a real model API or a server) is marked on the line just above its fence:

    <!-- docs-test: skip (the reason) -->

and counted: ``EXPECTED_SKIPS`` is the number of such marks, so a new skip is a deliberate change of this file.
docs/DESIGN.md's Python blocks are module contracts (signatures), not examples, and are not run.

Each block runs in a fresh folder of its own (under the test's tmp_path) that holds ``my_judgments.csv`` (a 1–10
pairwise table made from the embedded Arena-Hard verdicts: 6 models × 120 items, both presentation orders) and
``new_neighbours.csv`` (the same table), with HOME pointing into it; a bash block runs with ``set -euo pipefail``,
so any failing command fails the test. A block repeated on several pages (the README's recipe, the Python example)
runs once. Blocks cost about 25 s of CPU together (two certify runs of the small table and their verify runs).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from table_helpers import readme_table

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)]
NOT_EXAMPLES = {ROOT / "docs" / "DESIGN.md"}  # signatures of the module contracts, not code to run
LANGUAGES = {"bash": "bash", "sh": "bash", "python": "python", "py": "python"}
SKIP = re.compile(r"^<!-- docs-test: skip \((?P<reason>[^)]+)\) -->$")
EXPECTED_SKIPS = 23

pytestmark = pytest.mark.slow  # subprocesses: certify and verify of a small table (~25 s of CPU together)


def blocks() -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """(code -> (language, first place it appears)) of the blocks to run, and (place, reason) of the skipped ones."""
    run: dict[str, tuple[str, str]] = {}
    skipped: list[tuple[str, str]] = []
    for page in PAGES:
        if page in NOT_EXAMPLES:
            continue
        lines = page.read_text(encoding="utf-8").split("\n")
        k = 0
        while k < len(lines):
            m = re.match(r"^```(\w*)\s*$", lines[k])
            if not m:
                k += 1
                continue
            end = next(j for j in range(k + 1, len(lines)) if lines[j].startswith("```"))
            language = LANGUAGES.get(m.group(1))
            if language is not None:
                place = f"{page.relative_to(ROOT)}:{k + 1}"
                mark = SKIP.match(lines[k - 1].strip()) if k > 0 else None
                code = "\n".join(lines[k + 1:end]) + "\n"
                if mark:
                    skipped.append((place, mark.group("reason")))
                else:
                    run.setdefault(code, (language, place))
            k = end + 1
    return run, skipped


RUN, SKIPPED = blocks()


def test_the_blocks_are_found_and_every_skip_is_counted():
    assert len(SKIPPED) == EXPECTED_SKIPS, f"skipped blocks (update EXPECTED_SKIPS deliberately): {SKIPPED}"
    places = [place for _, place in RUN.values()]
    assert any(p.startswith("README.md") for p in places) and len(RUN) >= 4, places
    # the README's own-table recipe is among the blocks run
    assert any("biasbound certify my_judgments.csv" in code for code in RUN)


@pytest.fixture(scope="module")
def judgments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's table of the README recipe: the embedded verdicts of 6 models on 120 items, on a 1–10 scale."""
    table, _ = readme_table()
    path = tmp_path_factory.mktemp("table") / "my_judgments.csv"
    table.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("code", list(RUN), ids=[place for _, place in RUN.values()])
def test_block_runs(code: str, judgments: Path, tmp_path: Path) -> None:
    language, place = RUN[code]
    work = tmp_path / "work"
    work.mkdir()
    for name in ("my_judgments.csv", "new_neighbours.csv"):
        (work / name).write_bytes(judgments.read_bytes())
    env = {**os.environ, "HOME": str(work), "COLUMNS": "120", "PATH": f"{Path(sys.executable).parent}{os.pathsep}"
           f"{os.environ.get('PATH', '')}", "MPLBACKEND": "Agg"}
    if language == "bash":
        cmd = ["bash", "-c", "set -euo pipefail\n" + code]
    else:
        cmd = [sys.executable, "-c", code]
    done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{place} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

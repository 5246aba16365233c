"""README's first plan still runs and still gives the plan README shows.

The command under "A first plan" is run as a newcomer would paste it (on the files in examples/), and every row
of the printed plan (task, node, start, finish, outcome) and every metric but the machine's decision latencies
must be what README's pasted output says: a change of scheduler, simulator or example that moves the plan
fails here until README shows the new one.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dagsched.cli import app

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.index("\n## ", start + 1)
    return README[start:end]


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row in Rich's box drawing (lines starting with a vertical bar)."""
    return [
        [c.strip() for c in line.strip().strip("│").split("│")]
        for line in text.splitlines()
        if line.strip().startswith("│")
    ]


def test_the_first_plan_in_readme_is_what_the_command_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pasted plan and metrics equal a fresh run's, row by row (decision latencies aside)."""
    section = _section("A first plan")
    command = next(line for line in section.splitlines() if line.startswith("dagsched simulate"))
    shown = re.search(r"```text\n(.*?)```", section, re.S)
    assert shown, "README's first plan shows no output"
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, shlex.split(command)[1:], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output

    def keep(rows: list[list[str]]) -> list[list[str]]:
        return [r for r in rows if not r[0].startswith("decision_latency")]

    assert keep(_rows(result.output)) == keep(_rows(shown.group(1)))
    assert ["daily_report", "cpu-0", "300", "700", "done"] in _rows(result.output)  # a CPU node is used


def test_the_first_plan_uses_the_files_it_names() -> None:
    """The YAML README shows is the example file the command reads, line for line."""
    section = _section("A first plan")
    shown = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert shown
    example = (ROOT / "examples" / "nightly-etl.yaml").read_text(encoding="utf-8")
    body = [line for line in example.splitlines() if line and not line.startswith("#")]
    assert shown.group(1).splitlines() == body

"""README's tour, pasted from the repository root, writes only into folders git ignores (`tour/`, `results/`,
`runs/`), never beside the sources; its first commands make the files the later ones read."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dagsched.cli import app

ROOT = Path(__file__).resolve().parents[2]
WRITES = ("--out", "--out-dir", "--gantt", "--trace", "-o", "--model-out")
"""The flags by which a tour command names what it writes."""


def _commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("```bash\n", readme.index("## A short tour")) + len("```bash\n")
    block = readme[start : readme.index("```", start)].replace("\\\n", " ")
    lines = [line.split("  #")[0].strip() for line in block.splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line and not line.startswith("#")]


def _written(command: list[str]) -> list[str]:
    return [command[i + 1] for i, word in enumerate(command[:-1]) if word in WRITES]


def test_every_file_the_tour_writes_is_in_an_ignored_folder() -> None:
    """Each output flag of each tour command names a path under a folder .gitignore ignores."""
    outputs = [path for command in _commands() for path in _written(command)]
    assert len(outputs) >= 8, outputs
    assert {"tour/ml.yaml", "tour/heft.png", "tour/stream/"} <= set(outputs), outputs
    check = subprocess.run(["git", "check-ignore", "--no-index", *outputs], cwd=ROOT, capture_output=True, text=True)
    assert sorted(check.stdout.split()) == sorted(outputs), f"not ignored: {set(outputs) - set(check.stdout.split())}"


def test_the_tour_reads_what_it_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tour's generate commands, run where nothing exists yet, make the files its simulate commands read."""
    monkeypatch.chdir(tmp_path)
    generate = [c for c in _commands() if c[:2] == ["dagsched", "generate"] and c[2] in ("workflow", "cluster")]
    assert len(generate) == 2, generate
    for command in generate:
        result = CliRunner().invoke(app, command[1:])
        assert result.exit_code == 0, result.output
    simulate = next(c for c in _commands() if c[:2] == ["dagsched", "simulate"] and "--gantt" in c)
    assert all((tmp_path / p).exists() for p in re.findall(r"tour/[\w.]+\.yaml", " ".join(simulate))), simulate
    assert (tmp_path / "tour" / "ml.yaml").exists() and (tmp_path / "tour" / "cluster.yaml").exists()

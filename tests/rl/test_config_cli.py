"""A trainer's command line generated from its config dataclass (`dagsched.rl.config_cli`): each field an option
with the field's default and docstring, every supported type parsed and written back the same, and a bad value
refused with exit status 2 naming the option."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
import typer
from typer.testing import CliRunner

from dagsched.rl.config_cli import command_from_config, command_line


@dataclass
class Config:
    """A config with one field of each supported kind."""

    name: str = "run"
    """the run's name"""
    seed: int = 0
    """seed"""
    fast: bool = False
    """go fast"""
    method: Literal["a", "b"] = "a"
    """which method"""
    sizes: tuple[int, ...] = (10, 50)
    """sizes"""
    ccr: tuple[float, float] | None = field(default=None, metadata={"flag": "ratio"})
    """a range"""
    stages: tuple[tuple[int, int], ...] = ((10, 30), (20, 60))
    """stages"""
    weights: dict[str, float] | None = None
    """weights"""

    def __post_init__(self) -> None:
        if self.ccr is not None and not 0 < self.ccr[0] <= self.ccr[1]:
            raise ValueError(f"--ratio must have 0 < LO <= HI, got {self.ccr}")


def _app() -> tuple[typer.Typer, list[Any]]:
    seen: list[Any] = []
    app = typer.Typer()
    app.command("run")(command_from_config(Config, seen.append))
    app.command("other")(lambda: None)  # two commands: `run` is then named on the command line
    return app, seen


def test_defaults_are_the_dataclass_s_and_the_help_its_docstrings() -> None:
    app, seen = _app()
    assert CliRunner().invoke(app, ["run"]).exit_code == 0 and seen[-1] == Config()
    help_text = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"}).output
    assert "--ratio" in help_text and "--ccr" not in help_text and "the run's name" in help_text


def test_every_kind_parses_and_writes_back_the_same() -> None:
    app, seen = _app()
    argv = ["run", "--seed", "3", "--fast", "--method", "b", "--sizes", "5,6,7", "--ratio", "0.1-10"]
    argv += ["--stages", "10-30,40,50-100", "--weights", "makespan=1,cost=0.5"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    cfg = seen[-1]
    assert cfg == Config(
        seed=3, fast=True, method="b", sizes=(5, 6, 7), ccr=(0.1, 10.0), stages=((10, 30), (40, 40), (50, 100)),
        weights={"makespan": 1.0, "cost": 0.5},
    )  # fmt: skip
    again = CliRunner().invoke(app, ["run", *command_line(cfg).split()])
    assert again.exit_code == 0 and seen[-1] == cfg
    assert CliRunner().invoke(app, ["run", "--ratio", "0.5,2"]).exit_code == 0 and seen[-1].ccr == (0.5, 2.0)


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--ratio", "ten"], "--ratio"),
        (["--ratio", "5-1"], "--ratio"),
        (["--ratio", "1,2,3"], "--ratio"),
        (["--ratio", "1"], "--ratio"),
        (["--stages", "10-x"], "--stages"),
        (["--weights", "makespan"], "--weights"),
        (["--weights", "makespan=fast"], "--weights"),
        (["--method", "c"], "--method"),
    ],
)
def test_a_bad_value_exits_2_naming_the_option(argv: list[str], names: str) -> None:
    app, _ = _app()
    result = CliRunner().invoke(app, ["run", *argv], env={"COLUMNS": "200"})
    assert result.exit_code == 2 and names in result.output, result.output

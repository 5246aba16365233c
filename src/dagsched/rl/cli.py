"""`dagsched train` and `dagsched evaluate`: call `register(app)` on the main Typer app.

`train`'s options are generated from `rl.train.TrainConfig` (`rl.config_cli`): the defaults and the help are the
dataclass's, written once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from dagsched.rl.config_cli import command_from_config


def _run_train(cfg: Any) -> None:
    from dagsched.rl.train import main_command
    from dagsched.rl.train import train as run

    record = run(cfg, command=main_command())
    typer.echo(
        f"policy written to {record['weights']} in {record['wall_time_s']} s; "
        f"validation makespan / HEFT {record['validation_makespan_over_heft']:.3f}"
    )


def register(app: typer.Typer) -> None:
    """Add the `train` and `evaluate` commands to `app`."""

    from dagsched.rl.train_config import TrainConfig

    app.command("train")(command_from_config(TrainConfig, _run_train))

    @app.command()
    def evaluate(
        out: Annotated[Path, typer.Option(help="folder for results.json and report.md")] = Path("runs/evaluate"),
        policy: Annotated[Optional[Path], typer.Option(help="policy stem (default: shipped model)")] = None,  # noqa: UP045
        seeds: Annotated[int, typer.Option(help="seeds per problem")] = 10,
        scales: Annotated[str, typer.Option(help="etl_star task counts")] = "20,50,100",
        traces: Annotated[int, typer.Option(help="held-out real traces (smallest first)")] = 4,
        workers: Annotated[int, typer.Option(help="processes")] = 2,
    ) -> None:
        """DRL vs the heuristics on held-out workloads (etl_star, real traces), classic and cloud, 95 % CIs."""
        from dagsched.rl.evaluate import evaluate as run

        report = run(
            out,
            policy_path=str(policy) if policy else None,
            seeds=seeds,
            scales=tuple(int(x) for x in scales.split(",")),
            n_traces=traces,
            workers=workers,
        )
        typer.echo(report)
        typer.echo(json.dumps({"written": str(out)}))

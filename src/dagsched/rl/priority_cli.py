"""`dagsched train-priority`: the priority policy's trainer, its options generated from `PriorityTrainConfig`."""

from __future__ import annotations

from typing import Any

import typer

from dagsched.rl.config_cli import command_from_config


def _run(cfg: Any) -> None:
    from rich.console import Console

    from dagsched.rl.priority_expert import ResumeMismatch
    from dagsched.rl.priority_train import train

    console = Console()
    try:
        _, record = train(cfg)
    except ResumeMismatch as err:
        console.print(f"error: {err}")
        raise typer.Exit(2) from None
    training = record["training"]
    if cfg.method == "expert":
        rows = training["history"]
        console.print(
            f"{cfg.name}: {training['generations_run']} expert generations in {training['cpu_s']:.0f} CPU s "
            f"({training['labels_computed']} problems labelled, {training['labels_cached']} from the cache); "
            f"selected generation {training['selected_generation']}"
        )
        for row in rows:
            console.print(
                f"  generation {row['generation']}: validation greedy {row['val_greedy_vs_heft']:.4f} x HEFT, sampled "
                f"{row['val_sampled_vs_heft']:.4f}, sampled / untrained sampling {row['val_sampled_vs_untrained']:.4f}"
                + (f"; teacher {row['teacher_vs_heft']:.4f} x HEFT" if "teacher_vs_heft" in row else "")
            )
        if cfg.model_out:
            console.print(f"model: {cfg.model_out}.safetensors (+ .json)")
        return
    last = next((h for h in reversed(training["history"]) if "val_sampled_vs_heft" in h), {})
    console.print(
        f"{cfg.name}: {training['iterations_run']} iterations in {training['cpu_s']:.0f} CPU s; selected iteration "
        f"{training['selected_iteration']}; last validation: greedy {last.get('val_greedy_vs_heft', float('nan')):.4f}"
        f" x HEFT, sampled {last.get('val_sampled_vs_heft', float('nan')):.4f}, untrained sampling "
        f"{last.get('val_untrained_vs_heft', float('nan')):.4f}"
    )
    if cfg.model_out:
        console.print(f"model: {cfg.model_out}.safetensors (+ .json)")


def register(app: typer.Typer) -> None:
    """Add `train-priority` to `app`."""
    from dagsched.rl.priority_config import PriorityTrainConfig

    app.command("train-priority")(command_from_config(PriorityTrainConfig, _run))

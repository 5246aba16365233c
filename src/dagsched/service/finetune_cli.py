"""The `dagsched finetune` command: its report and refusals printed with Rich, its exit status (the work itself is
`service.finetune.run`)."""

from __future__ import annotations

import os
from functools import partial

from dagsched.model.errors import InputError
from dagsched.rl.finetune import FinetuneConfig
from dagsched.service.finetune import LogRefused, Outcome, check_store_url, run, upload

STAT_LABELS = {
    "problems": "{:.0f} problems",
    "loss": "loss {:.4f}",
    "entropy": "entropy {:.4f}",
    "best_sample_vs_heft": "best sample / HEFT {:.4f}",
}
"""How `report` words a trainer's last-round statistics (the priority policy's POMO passes); others are printed by
name."""


def train_summary(stats: dict[str, float]) -> str:
    """A trainer's statistics in words, the known ones first."""
    known = [STAT_LABELS[k].format(stats[k]) for k in STAT_LABELS if k in stats]
    return ", ".join(known + [f"{k} {v:.4g}" for k, v in stats.items() if k not in STAT_LABELS])


def report(outcome: Outcome, cfg: FinetuneConfig) -> None:
    """The Rich table of old vs new on the held-out problems, then the decision."""
    from rich.table import Table

    from dagsched.console import console

    console.print(
        f"[bold]{cfg.env}[/]: {len(outcome.train) + len(outcome.held_out)} plans "
        f"({len(outcome.train)} train, {len(outcome.held_out)} held out, {len(outcome.skipped)} skipped)"
        + (f"; fine-tune: {train_summary(outcome.train_stats)}" if outcome.train_stats else "")
    )
    if outcome.reality:
        r = outcome.reality
        cal, left = r["calibration"], ", ".join(f"{n} {k}" for k, n in r["faults"].items() if n)
        console.print(
            f"executed runtimes: {r['runs']} runs ({r['clean_runs']} clean, {r['observations']} task runs); "
            f"calibration {'active' if cal['active'] else 'not active'}: {len(cal['node'])} node and "
            f"{len(cal['task_name'])} task factors" + (f"; left out: {left}" if left else "")
        )
    if outcome.results:
        table = Table(title="held-out plans: makespan of the serving (old) and fine-tuned (new) model")
        for col in ("plan", "workflow", "tasks", "nodes", "old s", "new s", "new/old"):
            table.add_column(col, justify="left" if col in ("plan", "workflow") else "right")
        for res in outcome.results:
            makespans = (f"{res.old_makespan:.2f}", f"{res.new_makespan:.2f}", f"{res.ratio:.4f}")
            table.add_row(res.plan_id[:12], res.workflow, str(res.n_tasks), str(res.n_nodes), *makespans)
        table.add_section()
        table.add_row("mean", "", "", "", "", "", f"{outcome.mean_ratio:.4f}")
        console.print(table)
    for line in outcome.skipped[:3]:
        console.print(f"skipped plan {line}")
    console.print(("[bold green]" if outcome.shipped else "[bold yellow]") + outcome.reason + "[/]")
    if outcome.destination:
        console.print(f"written to {outcome.destination}")


def print_refusal(err: LogRefused) -> None:
    """The audit's report: faults by kind, then examples."""
    from rich.table import Column, Table

    from dagsched.console import err_console

    table = Table("fault", Column("count", justify="right"), title="event log audit: refused")
    for kind, n in err.faults.items():
        table.add_row(kind.replace("_", " "), str(n))
    err_console.print(table)
    for line in err.examples[:10]:
        err_console.print(f"  {line}")


def run_command(cfg: FinetuneConfig) -> None:
    """`dagsched finetune`: exit 0 whether or not it ships, 2 on bad input, 1 if an upload fails."""
    import httpx
    import typer

    from dagsched.console import fail

    try:
        cfg.check()
        token = os.environ.get("DAGSCHED_API_TOKEN") or None
        if cfg.service is not None and token is None:
            raise InputError("DAGSCHED_API_TOKEN", "set it to the service's bearer token to upload with --service")
        check_store_url(cfg.store)
        if cfg.service is None:
            outcome = run(cfg)
        else:
            with httpx.Client(base_url=cfg.service.rstrip("/"), timeout=60.0) as http:
                outcome = run(cfg, ship=partial(upload, http, token or ""))
    except LogRefused as err:
        print_refusal(err)
        raise fail(err) from None
    except InputError as err:
        raise fail(err) from None
    report(outcome, cfg)
    if outcome.upload_error is not None:
        raise typer.Exit(1)

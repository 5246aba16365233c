"""The gap between plan and reality, measured on executed runs (`service.reality`): the one report that
`dagsched gap`, `GET /v1/gap` and the dashboard's Reality page read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dagsched.service.calibration import Factors
from dagsched.service.chain import OVERRUN_RATIO, overran
from dagsched.service.reality import RunLog, TaskRun

POINTS = 500  # Newest runs drawn in the plan-vs-achieved scatter.

SUMMARY = ("median", "p10", "p90", "p25", "p75", "min", "max")

GROUPS: dict[str, tuple[str, Callable[[TaskRun], str]]] = {
    "by_task": ("per task name", lambda t: t.name),
    "by_workflow": ("per workflow", lambda t: t.workflow),
    "by_node": ("per node", lambda t: t.node),
    "by_node_class": ("per node class", lambda t: t.node_class),
}
"""The report's groups of task runs: their key in the report, their title in its tables, and what they group by."""


def summarise(values: Iterable[float]) -> dict[str, Any]:
    """count, median, p10, p90 (and p25, p75, min, max for the dashboard's box plots) of ratios."""
    a = np.asarray(list(values), dtype=np.float64)
    if len(a) == 0:
        return {"count": 0, **dict.fromkeys(SUMMARY)}
    q = np.quantile(a, [0.5, 0.1, 0.9, 0.25, 0.75])
    return {"count": int(len(a)), **dict(zip(SUMMARY, map(float, [*q, a.min(), a.max()]), strict=True))}


def _group(tasks: Iterable[TaskRun], key: Callable[[TaskRun], str]) -> list[dict[str, Any]]:
    groups: dict[str, list[TaskRun]] = {}
    for t in tasks:
        groups.setdefault(key(t), []).append(t)
    return [
        {
            "key": k,
            **summarise(t.actual_s / t.predicted_s for t in ts),
            "planned_median": summarise(t.actual_s / t.planned_s for t in ts if t.planned_s)["median"],
        }
        for k, ts in sorted(groups.items())
    ]


def gap_report(log: RunLog, factors: Factors) -> dict[str, Any]:
    """The whole report as JSON-ready data, with the calibration `factors` it is given."""
    tasks = log.observations()
    clean = [r for r in log.runs if r.clean]
    complete = [r for r in clean if r.achieved_makespan is not None and r.planned_makespan > 0]
    started = sum(r.ran.started for r in clean)
    failed = sum(r.ran.failed for r in clean)
    over = sum(1 for t in tasks if overran(t.actual_s, t.predicted_s))
    transfers = [(p, s) for r in clean for p, s in r.transfers if p > 0]
    return {
        "since": log.since,
        "environment": log.environment,
        "other_environments": log.other_environments,
        "runs": {"read": len(log.runs), "clean": len(clean), "complete": len(complete)},
        "observations": len(tasks),
        "ratio": summarise(t.actual_s / t.predicted_s for t in tasks),
        "planned_ratio": summarise(t.actual_s / t.planned_s for t in tasks if t.planned_s),
        **{key: _group(tasks, by) for key, (_, by) in GROUPS.items()},
        "transfers": {
            "count": len(transfers),
            "planned_median_s": summarise(p for p, _ in transfers)["median"],
            "seen_median_s": summarise(s for _, s in transfers)["median"],
            "ratio": summarise(s / p for p, s in transfers),
        },
        "failures": {"started": started, "failed": failed, "rate": failed / started if started else None},
        "overruns": {
            "over_2x": over,
            "rate": over / len(tasks) if tasks else None,
            "events": sum(r.ran.overran for r in clean),
        },
        "makespan": {
            "runs": len(complete),
            "planned_median": summarise(r.planned_makespan for r in complete)["median"],
            "achieved_median": summarise(r.achieved_makespan or 0.0 for r in complete)["median"],
            "ratio": summarise((r.achieved_makespan or 0.0) / r.planned_makespan for r in complete),
            "points": [
                {
                    "root_id": r.root_id,
                    "workflow": r.workflow,
                    "scheduler": r.scheduler,
                    "arm": r.response.get("arm"),
                    "calibrated": bool((r.response.get("calibration") or {}).get("active")),
                    "planned": r.planned_makespan,
                    "achieved": r.achieved_makespan,
                    "created_at": r.created_at,
                }
                for r in complete[-POINTS:]
            ],
        },
        "faults": {
            "counts": log.fault_counts(),
            "examples": [
                {"kind": f.kind, "root_id": f.root_id, "task": f.task, "detail": f.detail} for f in log.faults[:20]
            ],
        },
        "calibration": factors.to_json(),
    }


def print_report(report: dict[str, Any]) -> None:
    """The report as Rich tables (`dagsched gap`)."""
    from rich.table import Table

    from dagsched.console import console

    def num(x: float | None, digits: int = 3) -> str:
        return "–" if x is None else f"{x:.{digits}f}"

    def spread(ratio: dict[str, Any]) -> str:
        return f"{num(ratio['median'])} ({num(ratio['p10'])}, {num(ratio['p90'])})"

    def show(title: str, columns: tuple[str, ...], rows: Iterable[tuple[str, ...]], text: int = 1) -> None:
        """One table: its first `text` columns left-justified, the figures after them right-justified."""
        table = Table(title=title)
        for i, col in enumerate(columns):
            table.add_column(col, justify="left" if i < text else "right")
        for row in rows:
            table.add_row(*row)
        console.print(table)

    runs = report["runs"]
    env = report["environment"] or "every environment"
    console.print(
        f"[bold]{env}[/]: {runs['read']} executed runs ({runs['clean']} clean, {runs['complete']} complete), "
        f"{report['observations']} task runs; actual/declared median {num(report['ratio']['median'])}, "
        f"actual/planned median {num(report['planned_ratio']['median'])}"
    )
    for key, (title, _) in GROUPS.items():
        figures = ("median", "p10", "p90", "planned_median")
        rows = [(row["key"], str(row["count"]), *(num(row[k]) for k in figures)) for row in report[key]]
        show(f"actual / declared runtime, {title}", ("", "count", "median", "p10", "p90", "actual/planned"), rows)
    t, f, o, m = report["transfers"], report["failures"], report["overruns"], report["makespan"]
    overruns = f"{o['over_2x']} ({num(o['rate'])}); {o['events']} overrun events"
    summary = [
        ("cross-node hand-offs with data", str(t["count"])),
        ("planned transfer, median s", num(t["planned_median_s"], 2)),
        ("seen parent finish -> child start, median s", num(t["seen_median_s"], 2)),
        ("seen / planned, median (p10, p90)", spread(t["ratio"])),
        ("failed attempts / started", f"{f['failed']} / {f['started']} ({num(f['rate'])})"),
        (f"tasks over {OVERRUN_RATIO:g} x declared", overruns),
        ("complete runs", str(m["runs"])),
        ("makespan planned, median s", num(m["planned_median"], 2)),
        ("makespan achieved, median s", num(m["achieved_median"], 2)),
        ("achieved / planned, median (p10, p90)", spread(m["ratio"])),
    ]
    show("transfers, failures, overruns, makespan", ("", "value"), summary)
    left = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in report["faults"]["counts"].items() if v)
    others = ", ".join(f"{k} ({v})" for k, v in report["other_environments"].items())
    if left or others:
        console.print(f"[yellow]left out:[/] {left}" + (f"; runs of other environments: {others}" if others else ""))
    cal = report["calibration"]
    state = "active" if cal["active"] else "not active"
    factor = [("node", r["node"], num(r["factor"]), num(r["raw"]), str(r["count"])) for r in cal["node"]]
    factor += [
        ("task", f"{r['task']} on {r['node_class']}", num(r["factor"]), num(r["raw"]), str(r["count"]))
        for r in cal["task"]
    ]
    title = f"calibration factors ({state}: {cal['runs']} runs, floor {cal['min_runs']})"
    show(title, ("kind", "key", "factor", "raw", "count"), factor, text=2)

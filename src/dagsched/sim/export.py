"""Trace export (JSON, CSV) and a Gantt chart per run (matplotlib)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.metrics import Metrics
from dagsched.sim.trace import Trace


def trace_rows(cp: CompiledProblem, trace: Trace) -> list[dict[str, Any]]:
    """One row per attempt with readable names, in start order."""
    rows = []
    for a in sorted(trace.attempts, key=lambda a: (a.start, a.task)):
        rows.append(
            {
                "workflow": cp.wf_names[int(cp.task_wf[a.task])],
                "task": cp.task_ids[a.task],
                "node": cp.node_ids[a.node],
                "start": a.start,
                "finish": a.end,
                "outcome": a.outcome,
                "attempt": 0,
            }
        )
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        key = (str(row["workflow"]), str(row["task"]))
        seen[key] = seen.get(key, 0) + 1
        row["attempt"] = seen[key]
    return rows


def trace_document(cp: CompiledProblem, trace: Trace, metrics: Metrics | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "scheduler": trace.scheduler,
        "seed": trace.seed,
        "classic": trace.classic,
        "noise_cv": trace.noise_cv,
        "attempts": trace_rows(cp, trace),
        "outages": [
            {"node": cp.node_ids[o.node], "start": o.start, "end": None if o.end == float("inf") else o.end}
            for o in trace.outages
        ],
        "slowdowns": [
            {"node": cp.node_ids[s.node], "start": s.start, "end": s.end, "factor": s.factor} for s in trace.slowdowns
        ],
    }
    if metrics is not None:
        doc["metrics"] = metrics.as_dict()
    return doc


def write_trace(cp: CompiledProblem, trace: Trace, path: Path, metrics: Metrics | None = None) -> None:
    """JSON for `.json`, CSV (attempts only) for `.csv`."""
    path = Path(path)
    if path.suffix == ".csv":
        rows = trace_rows(cp, trace)
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(
                fh, fieldnames=["workflow", "task", "node", "start", "finish", "outcome", "attempt"]
            )
            writer.writeheader()
            writer.writerows(rows)
    else:
        path.write_text(json.dumps(trace_document(cp, trace, metrics), indent=1))


def draw_gantt(ax: Any, cp: CompiledProblem, trace: Trace, nodes: list[int] | None = None) -> list[int]:
    """The one Gantt plotter: one row per node, one bar per attempt (failed or stopped ones hatched and pale),
    outages shaded red; bars coloured by workflow when there are several, else by task; task names on bars wide
    enough to hold them in problems of up to 60 tasks. `nodes` are the rows (default every node used); returns
    them."""
    import matplotlib.pyplot as plt

    used = nodes if nodes is not None else sorted({a.node for a in trace.attempts} | {o.node for o in trace.outages})
    row = {nd: i for i, nd in enumerate(used)}
    cmap = plt.get_cmap("tab20")
    horizon = max((a.end for a in trace.attempts), default=1.0) or 1.0
    for a in trace.attempts:
        if a.node not in row:
            continue
        colour = cmap(int(cp.task_wf[a.task]) % 20) if cp.n_workflows > 1 else cmap(a.task % 20)
        done = a.outcome == "done"
        ax.barh(
            row[a.node],
            a.end - a.start,
            left=a.start,
            height=0.8,
            color=colour,
            edgecolor="black",
            linewidth=0.3,
            hatch=None if done else "//",
            alpha=0.9 if done else 0.5,
        )
        if cp.n_tasks <= 60 and a.end - a.start > 0.04 * horizon:
            ax.text((a.start + a.end) / 2, row[a.node], cp.task_ids[a.task][:8], ha="center", va="center", fontsize=5)
    for o in trace.outages:
        if o.node in row:
            ax.barh(row[o.node], min(o.end, horizon) - o.start, left=o.start, height=0.9, color="red", alpha=0.2)
    ax.set_yticks(range(len(used)))
    ax.set_yticklabels([cp.node_ids[nd] for nd in used], fontsize=6)
    ax.invert_yaxis()
    return used


def write_gantt(cp: CompiledProblem, trace: Trace, path: Path, title: str | None = None) -> None:
    """A Gantt chart of one run as a PNG (`draw_gantt`), titled with its scheduler, seed and makespan."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    used = sorted({a.node for a in trace.attempts} | {o.node for o in trace.outages})
    fig, ax = plt.subplots(figsize=(11, max(2.5, 0.35 * len(used) + 1.2)))
    draw_gantt(ax, cp, trace, used)
    horizon = max((a.end for a in trace.attempts), default=1.0)
    ax.set_xlabel("time (s)")
    ax.set_title(title or f"{trace.scheduler} (seed {trace.seed}): makespan {horizon:.1f} s")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

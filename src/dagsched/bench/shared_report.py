"""The shared-cluster part of the report: streams of workflows at several offered loads.

Stream rows (`stats.is_stream`) are ranked by their steady-state mean completion time. The report gets
one table per offered load (completion-time ratio to the per-instance best, p95, SLA hit, cost,
utilisation, W/T/L and Wilcoxon against HEFT), the margin of the best scheduler over HEFT and
kube_default at each load, and the curve every queueing person looks at first: mean completion time
against offered load, per scheduler.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dagsched.bench import stats

Row = Mapping[str, Any]
Section = tuple[str, str, list[str], list[list[str]]]

README_SECTIONS = ("Shared cluster: margins per load", "Shared cluster: completion-time ratio to the best, per load")
"""The shared-cluster tables the README shows."""

PLATFORM_DEFAULT = "kube_default"
"""The platform's own scheduler: every margin is also given against it."""

STREAM_VIEW: list[tuple[str, Callable[[Mapping[str, Any]], str]]] = [
    ("scheduler", lambda e: str(e["scheduler"])),
    ("n", lambda e: str(e["n"])),
    ("excluded", lambda e: str(e["excluded"])),
    ("completion ratio to best [95% CI]", lambda e: stats._with_ci(e, "ratio_best")),
    ("completion mean (s)", lambda e: stats.fmt(e["completion_mean_mean"])),
    ("completion p95 (s)", lambda e: stats.fmt(e["completion_p95_mean"])),
    ("slowdown mean", lambda e: stats.fmt(e["slowdown_mean_mean"])),
    ("SLA hit [95% CI]", lambda e: stats._with_ci(e, "sla_steady")),
    ("cost mean", lambda e: stats.fmt(e["cost_mean"])),
    ("util cpu", lambda e: stats.fmt(e["util_cpu_mean"], 3)),
    ("util gpu", lambda e: stats.fmt(e["util_gpu_mean"], 3)),
    ("fairness", lambda e: stats.fmt(e["fairness_mean"], 3)),
    ("objective mean", lambda e: stats.fmt(e["objective_mean"])),
    (
        f"W/T/L vs {stats.BASELINE}",
        lambda e: "–" if e["wins"] is None else f"{e['wins']}/{e['ties']}/{e['losses']}",
    ),
    (f"p (Wilcoxon vs {stats.BASELINE})", lambda e: stats._p(e["p_value"])),
]
"""How a stream group_stats row is shown."""


def stream_rows(rows: Sequence[Row]) -> list[Row]:
    return [r for r in rows if stats.is_stream(r)]


def loads(rows: Sequence[Row]) -> list[float]:
    return sorted({float(r["load"]) for r in rows if r.get("load") is not None})


def _at_load(rows: Sequence[Row], load: float) -> list[Row]:
    return [r for r in rows if r.get("load") is not None and float(r["load"]) == load]


def view_cells(table: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[list[str]]]:
    return stats.view_cells(table, STREAM_VIEW)


def paired_ratio(rows: Sequence[Row], scheduler: str, other: str, key: str = "completion_mean") -> float:
    """Geometric mean over the instances both ran of `key` of `scheduler` / of `other` (nan if none)."""
    per: dict[Any, dict[str, float]] = defaultdict(dict)
    for r in rows:
        if stats.is_ok(r) and r.get(key) is not None:
            per[stats.instance_key(r)][str(r["scheduler"])] = float(r[key])
    logs = [math.log(p[scheduler] / p[other]) for p in per.values() if scheduler in p and other in p and p[other] > 0]
    return math.exp(float(np.mean(logs))) if logs else math.nan


NOT_HEURISTICS = frozenset({"drl", "drl_stream", "drl_stream_levers", "mcts_uct", "tabu"})
"""The learned policies and the search planners: the margin lines name the best of the others, the heuristics."""


def margin_line(rows: Sequence[Row]) -> str:
    """The best heuristic (and the best scheduler, if another) with their margins over HEFT and the platform default."""
    table = [e for e in stats.summary_table(rows) if e["n"]]
    if not table:
        return "no completed runs"
    sla = {str(e["scheduler"]): e["sla_steady_mean"] for e in table}
    heuristics = [str(e["scheduler"]) for e in table if str(e["scheduler"]) not in NOT_HEURISTICS]
    best = [heuristics[0]] if heuristics else []
    if str(table[0]["scheduler"]) not in best:
        best.append(str(table[0]["scheduler"]))
    lines = []
    for i, name in enumerate(best):
        parts = []
        for other in (stats.BASELINE, PLATFORM_DEFAULT):
            if other != name and other in sla:
                ratio = paired_ratio(rows, name, other)
                gap = 100.0 * (sla[name] - sla[other])
                parts.append(
                    f"{100.0 * (ratio - 1.0):+.1f} % mean completion time and {gap:+.1f} points of SLA hit vs {other}"
                )
        what = "best heuristic" if i == 0 and heuristics else "best overall"
        lines.append(f"{what} **{name}**" + (": " + "; ".join(parts) if parts else ""))
    return "; ".join(lines)


def sections(rows: Sequence[Row]) -> list[Section]:
    """(heading, explanation, headers, cells) for every shared-cluster table."""
    rows = stream_rows(rows)
    if not rows:
        return []
    out: list[Section] = [
        (
            "Shared cluster: margins per load",
            "Per offered load, the heuristic with the lowest mean steady-state completion time (and the best "
            f"scheduler of all, if another) and its margin over {stats.BASELINE} and {PLATFORM_DEFAULT}: the "
            "geometric mean over the streams both ran of the ratio of their mean completion times (negative: "
            "faster), and the difference of their SLA hit rates.",
            ["load", "margin"],
            [[f"{load:g}", margin_line(_at_load(rows, load))] for load in loads(rows)],
        ),
        (
            "Shared cluster: completion-time ratio to the best, per load",
            "Mean over streams of the steady-state mean completion time / the best scheduler's on the same "
            "stream (cluster, arrival process, seed).",
            *ratio_by_load(rows),
        ),
    ]
    for load in loads(rows):
        table = stats.summary_table(_at_load(rows, load))
        out.append(
            (
                f"Shared cluster at offered load {load:g}",
                "One row per scheduler, best first by mean ratio of its steady-state mean completion time to the "
                "best on the same stream. Completion time = finish - submission; slowdown = completion time / "
                "critical path on the fastest nodes; SLA hit and utilisation over the steady state (the first "
                "and last 10 % of each stream's workflows left out, utilisation over the window between the "
                "first and last counted submissions, speed-weighted: work delivered / capacity); fairness: "
                f"Jain's index of the tenants' mean slowdowns. W/T/L and p against {stats.BASELINE} on the "
                "mean completion time, paired by stream. Brackets: 95 % bootstrap intervals.",
                *view_cells(table),
            )
        )
    return out


def ratio_by_load(rows: Sequence[Row]) -> tuple[list[str], list[list[str]]]:
    """Scheduler x load: mean completion ratio to the best (schedulers in overall order), and the SLA hit."""
    order = [str(e["scheduler"]) for e in stats.summary_table(rows)]
    levels = loads(rows)
    ratios = {load: stats.with_ratios(_at_load(rows, load)) for load in levels}
    headers = ["scheduler"] + [f"load {load:g}" for load in levels] + [f"SLA @ {load:g}" for load in levels]
    cells = []
    for name in order:
        line = [name]
        for load in levels:
            vals = [r["ratio_best"] for r in ratios[load] if r["scheduler"] == name]
            line.append(stats.fmt(float(np.mean(vals))) if vals else "–")
        for load in levels:
            vals = [float(r["sla_steady"]) for r in ratios[load] if r["scheduler"] == name]
            line.append(stats.fmt(float(np.mean(vals)), 3) if vals else "–")
        cells.append(line)
    return headers, cells

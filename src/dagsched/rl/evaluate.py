"""Generalisation evaluation of `drl` against the heuristics on workloads it never trained on.

A benchmark suite (run by `dagsched.bench.runner.run_suite`, stored in `<out>/results.sqlite`):
the held-out synthetic family `etl_star` at several scales (one fresh instance per seed) and the
smallest real WfCommons traces of the held-out families, on hetero-16, in classic and cloud mode,
over `seeds` seeds. The report gives, per (family, mode), mean makespan, cost and SLA hit rate with
95 % percentile-bootstrap intervals for each scheduler, and the ratio of drl's mean makespan to the
best heuristic's (the heuristic with the lowest mean on that family and mode), with a bootstrap
interval over the paired per-instance ratios.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dagsched.bench.stats import bootstrap_ci
from dagsched.bench.suites import CLASSIC, CLOUD, Entry, ProblemSpec, Suite, trace_spec
from dagsched.generate.traces import real_traces, wfinstances_root

HEURISTICS = ("heft", "cpop", "peft", "min_min", "fcfs", "kube_default")
HELD_OUT_TRACE_FAMILIES = ("montage", "epigenomics", "1000genome", "srasearch", "nextflow")


def held_out_suite(
    seeds: int = 10, scales: Sequence[int] = (20, 50, 100), n_traces: int = 4, cluster: str = "hetero-16"
) -> Suite:
    """etl_star at `scales` (instance seed = run seed) + the `n_traces` smallest held-out real traces."""
    seed_list = tuple(range(1, seeds + 1))
    entries = [
        Entry(ProblemSpec("synthetic", "etl_star", cluster, n_tasks=n, gen_seed=s, cluster_id=cluster), (s,))
        for n in scales
        for s in seed_list
    ]
    root = wfinstances_root()
    traces = [t for t in real_traces(root) if t.family in HELD_OUT_TRACE_FAMILIES and t.n_tasks >= 20]
    by_family: dict[str, Any] = {}
    for t in sorted(traces, key=lambda t: t.n_tasks):
        by_family.setdefault(t.family, t)  # the smallest of each family first
    chosen = sorted(by_family.values(), key=lambda t: t.n_tasks)[:n_traces]
    entries += [Entry(trace_spec(t, root, cluster), seed_list) for t in chosen]
    return Suite(
        "drl-held-out",
        tuple(entries),
        modes=(CLASSIC, CLOUD),
        schedulers=("drl_step", *HEURISTICS),
        seeds=seed_list,
        description=held_out_suite.__doc__ or "",
    )


def _ci(values: list[float]) -> tuple[float, float, float]:
    lo, hi = bootstrap_ci(values)
    return float(np.mean(values)), lo, hi


def family_report(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (family, mode, scheduler): means and 95 % CIs; per (family, mode): drl / best heuristic."""
    ok = [r for r in rows if r.get("valid") and r.get("makespan") is not None]
    by: dict[tuple[str, str], dict[str, dict[tuple[str, int], dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for r in ok:
        by[(r["family"], r["mode"])][r["scheduler"]][(r["problem_id"], int(r["seed"]))] = r
    out = []
    for (family, mode), per in sorted(by.items()):
        entry: dict[str, Any] = {"family": family, "mode": mode, "schedulers": {}}
        for name, cells in sorted(per.items()):
            vals = list(cells.values())
            entry["schedulers"][name] = {
                "n": len(vals),
                "makespan": _ci([float(v["makespan"]) for v in vals]),
                "cost": _ci([float(v["cost"]) for v in vals]),
                "sla_hit_rate": _ci([float(v["sla_hit_rate"]) for v in vals]),
            }
        heur = {h: per[h] for h in HEURISTICS if h in per}
        if "drl_step" in per and heur:
            best = min(heur, key=lambda h: float(np.mean([c["makespan"] for c in heur[h].values()])))
            keys = sorted(set(per["drl_step"]) & set(heur[best]))
            ratios = [per["drl_step"][k]["makespan"] / heur[best][k]["makespan"] for k in keys]
            entry["best_heuristic"] = best
            entry["ratio_of_means"] = float(
                np.mean([per["drl_step"][k]["makespan"] for k in keys])
                / np.mean([heur[best][k]["makespan"] for k in keys])
            )
            entry["ratio_paired"] = _ci(ratios)
        out.append(entry)
    return out


def format_report(report: list[dict[str, Any]]) -> str:
    """Markdown: one table of makespans with CIs, one of drl / best heuristic."""
    names = ["drl_step", *HEURISTICS]
    lines = ["| family | mode | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for e in report:
        cells = []
        for n in names:
            s = e["schedulers"].get(n)
            cells.append(
                "-" if s is None else f"{s['makespan'][0]:.0f} [{s['makespan'][1]:.0f}, {s['makespan'][2]:.0f}]"
            )
        lines.append(f"| {e['family']} | {e['mode']} | " + " | ".join(cells) + " |")
    lines += ["", "| family | mode | best heuristic | drl / best (ratio of means) | paired ratio mean [95 % CI] |"]
    lines.append("|---|---|---|---|---|")
    all_ratios = []
    for e in report:
        if "best_heuristic" in e:
            r = e["ratio_paired"]
            all_ratios.append(e["ratio_of_means"])
            lines.append(
                f"| {e['family']} | {e['mode']} | {e['best_heuristic']} | {e['ratio_of_means']:.3f} | "
                f"{r[0]:.3f} [{r[1]:.3f}, {r[2]:.3f}] |"
            )
    if all_ratios:
        lines.append(
            f"\nmean over (family, mode) of drl / best heuristic: {np.mean(all_ratios):.3f} (max {max(all_ratios):.3f})"
        )
    return "\n".join(lines)


def evaluate(
    out: str | Path,
    policy_path: str | None = None,
    seeds: int = 10,
    scales: Sequence[int] = (20, 50, 100),
    n_traces: int = 4,
    workers: int = 2,
) -> str:
    """Run the held-out suite (resumable: stored cells are skipped) and write results.json and report.md."""
    from dagsched.bench.runner import run_suite
    from dagsched.bench.store import load_results
    from dagsched.policy import POLICY_ENV

    if policy_path:
        os.environ[POLICY_ENV] = str(Path(policy_path).resolve())  # the workers inherit it
    out = Path(out)
    suite = held_out_suite(seeds, scales, n_traces)
    run_suite(suite, out, workers=workers, progress=False)
    rows = load_results(out, suite.name)
    report = family_report(rows)
    text = format_report(report)
    (out / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(text + "\n")
    return text

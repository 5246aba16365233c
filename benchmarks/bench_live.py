"""Real runs on a loopback Ray cluster against the simulator and against Ray's own scheduler.

- **Real against simulated**: single workflows (generated families and WfCommons recipes) under `heft` and `drl`,
  and one stream at load 0.85 under `srpt_hold` and `drl_stream`, each run for real (`dagsched.live`) and in the
  simulator (same problem, scheduler, seed): achieved / predicted - 1 of the makespan (and of the mean completion
  on the stream); median and p90 of |gap|.
- **Live dispatch against Ray's own scheduler** (`-s ray`): the same workflows and stream, paired; the geometric
  mean ratio of makespans with its 95 % interval (t on the log ratios) on the single workflows, and the ratio of
  mean completions on the stream with its 95 % bootstrap interval over workflows.
- **Overhead**: per task, from the event a decision answered to the task's start on its node (dispatch: decision
  plus launch), and from submitting the Ray task to its start (Ray's own launch); median and p99.
- **The largest run**: a stream of `--largest-tasks` tasks under `srpt_hold`.

One Ray cluster serves every run (one Ray node per dagsched node, started once). Task times are emulated sleeps
at a time scale set per problem so that a typical task lasts about a second. Prints the figures; `--out` also
writes them as JSON.

    python benchmarks/bench_live.py                       # 10 workflows, a 30-workflow stream, 4 nodes
    python benchmarks/bench_live.py --workflows 4 --stream 12 --largest-tasks 0   # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from dagsched.generate import generate_workflow
from dagsched.generate.recipes import recipe_workflow
from dagsched.generate.streams import generate_stream
from dagsched.live.cluster import start_local
from dagsched.live.run import LiveResult, run_live, run_ray_baseline
from dagsched.model import Cluster, Node, Problem, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem

CLUSTER = Cluster(
    name="live-4",
    nodes=[
        Node(id="std-0", cpu=4, mem=16, speed=1.0, bandwidth=1.25e8),
        Node(id="std-1", cpu=4, mem=16, speed=1.0, bandwidth=1.25e8),
        Node(id="fast", cpu=4, mem=16, speed=1.5, bandwidth=1.25e8),
        Node(id="fastest", cpu=4, mem=16, speed=2.0, bandwidth=1.25e8),
    ],
)
"""Four heterogeneous nodes (speeds 1, 1, 1.5, 2; 4 cores and 16 GiB each; 1 Gb/s links)."""

SOURCES = [
    ("layered", 20),
    ("ml_pipeline", 16),
    ("etl_star", 16),
    ("random", 20),
    ("recipe:srasearch", 24),
    ("recipe:epigenomics", 43),
    ("recipe:blast", 45),
    ("layered", 30),
    ("random", 30),
    ("ml_pipeline", 24),
    ("etl_star", 24),
    ("recipe:1000genome", 54),
]


def fit(wf: Workflow, cluster: Cluster) -> Workflow:
    """The workflow with each request capped at the largest node (recipes ask up to 32 cores)."""
    cpu = max(n.cpu for n in cluster.nodes)
    mem = max(n.mem for n in cluster.nodes)
    tasks = [t.model_copy(update={"cpu": min(t.cpu, cpu), "mem": min(t.mem, mem), "gpu": 0}) for t in wf.tasks]
    return wf.model_copy(update={"tasks": tasks})


def single(source: str, n: int, seed: int) -> CompiledProblem:
    if source.startswith("recipe:"):
        wf = recipe_workflow(source.split(":", 1)[1], n, seed)
    else:
        wf = generate_workflow(source, n, seed)
    return compile_problem(Problem(workflows=[fit(wf, CLUSTER)], cluster=CLUSTER))


def time_scale_for(cp: CompiledProblem, task_s: float, max_wall_s: float) -> float:
    """Wall seconds per problem second so that the median task lasts `task_s` at speed 1, and the problem's span
    (critical path, or the stream's last submission) stays under `max_wall_s`."""
    from dagsched.model.graph import critical_path_s

    median = float(np.median(cp.exec_s.mean(axis=1)))
    span = float(cp.wf_submit_s.max()) + float(critical_path_s(cp).max())
    return min(task_s / max(median, 1e-9), max_wall_s / max(span, 1e-9))


def gap(real: float, predicted: float) -> float:
    return real / predicted - 1 if predicted > 0 else math.nan


def completions(cp: CompiledProblem, result: LiveResult) -> np.ndarray:
    ends = np.zeros(cp.n_workflows)
    for a in result.trace.attempts:
        if a.outcome == "done":
            w = int(cp.task_wf[a.task])
            ends[w] = max(ends[w], a.end)
    return ends - cp.wf_submit_s


def log_ratio_interval(ratios: list[float]) -> tuple[float, float, float]:
    """Geometric mean of paired ratios and its 95 % t interval."""
    logs = np.log(np.asarray(ratios))
    mean = float(logs.mean())
    if len(logs) < 2:
        return math.exp(mean), math.nan, math.nan
    half = float(stats.t.ppf(0.975, len(logs) - 1) * logs.std(ddof=1) / math.sqrt(len(logs)))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def bootstrap_ratio(a: np.ndarray, b: np.ndarray, seed: int = 0, rounds: int = 2000) -> tuple[float, float, float]:
    """mean(a) / mean(b) over paired workflows, with a 95 % bootstrap interval."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(rounds, len(a)))
    boot = a[idx].mean(axis=1) / b[idx].mean(axis=1)
    return float(a.mean() / b.mean()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))


def quantiles_ms(values: list[float]) -> dict[str, float]:
    if not values:
        return {"median": math.nan, "p99": math.nan, "n": 0}
    arr = np.asarray(values) * 1e3
    return {"median": float(np.median(arr)), "p99": float(np.quantile(arr, 0.99)), "n": len(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workflows", type=int, default=10, help="single workflows (at most 12)")
    parser.add_argument("--stream", type=int, default=30, help="workflows in the loaded stream (0: none)")
    parser.add_argument("--load", type=float, default=0.85)
    parser.add_argument("--task-s", type=float, default=1.0, help="wall seconds of a median task at speed 1")
    parser.add_argument("--single-wall-s", type=float, default=40.0, help="longest critical path, wall seconds")
    parser.add_argument("--stream-wall-s", type=float, default=240.0, help="longest stream span, wall seconds")
    parser.add_argument("--largest-tasks", type=int, default=0, help="tasks of the largest run (0: none)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()

    t0 = time.time()
    cluster = start_local(CLUSTER)
    print(f"Ray cluster of {len(CLUSTER.nodes)} nodes up in {time.time() - t0:.1f} s")
    figures: dict[str, Any] = {"cluster": CLUSTER.name, "singles": [], "stream": {}, "overhead": {}}
    dispatch: list[float] = []
    launch: list[float] = []
    gaps: list[float] = []
    try:
        for k, (source, n) in enumerate(SOURCES[: args.workflows]):
            cp = single(source, n, args.seed + k)
            ts = time_scale_for(cp, args.task_s, args.single_wall_s)
            row: dict[str, Any] = {"workflow": f"{source}-{n}", "tasks": cp.n_tasks, "time_scale": ts}
            for name in ("heft", "drl"):
                r = run_live(cp, name, cluster, seed=args.seed, time_scale=ts)
                assert r.predicted is not None
                row[name] = r.metrics["makespan"]
                row[f"{name}_predicted"] = r.predicted["makespan"]
                row[f"{name}_gap"] = gap(r.metrics["makespan"], r.predicted["makespan"])
                row[f"{name}_valid"] = r.valid
                lat = r.trace.decision_latency_s
                row[f"{name}_decide_wall_s"] = float(sum(lat))  # wall time spent deciding (the simulator's is free)
                row[f"{name}_first_decide_wall_s"] = float(lat[0]) if lat else 0.0
                row[f"{name}_wall_s"] = r.wall_s
                gaps.append(row[f"{name}_gap"])
                dispatch += r.dispatch_latency_s
                launch += r.launch_latency_s
            b = run_ray_baseline(cp, cluster, seed=args.seed, time_scale=ts)
            row["ray"] = b.metrics["makespan"]
            row["ray_valid"] = b.valid
            figures["singles"].append(row)
            print(
                f"{row['workflow']:>22} {cp.n_tasks:3d} tasks  ts {ts:.4f}  heft {row['heft']:8.1f} "
                f"(gap {row['heft_gap']:+.3f})  drl {row['drl']:8.1f} (gap {row['drl_gap']:+.3f})  "
                f"ray {row['ray']:8.1f}  deciding heft {row['heft_decide_wall_s']:.2f} s, "
                f"drl {row['drl_decide_wall_s']:.2f} s of {row['drl_wall_s']:.1f} s"
            )
        if args.stream:
            stream = generate_stream(CLUSTER, args.stream, args.load, "poisson", args.seed)
            flows = [fit(wf, CLUSTER) for wf in stream.workflows]
            cp = compile_problem(Problem(workflows=flows, cluster=CLUSTER))
            ts = time_scale_for(cp, args.task_s, args.stream_wall_s)
            task_wall = cp.exec_s.mean(axis=1) * ts
            out: dict[str, Any] = {
                "workflows": cp.n_workflows,
                "tasks": cp.n_tasks,
                "time_scale": ts,
                "task_wall_s_p10_median_p90": [float(np.quantile(task_wall, q)) for q in (0.1, 0.5, 0.9)],
            }
            done: dict[str, np.ndarray] = {}
            for name in ("srpt_hold", "drl_stream"):
                r = run_live(cp, name, cluster, seed=args.seed, time_scale=ts)
                assert r.predicted is not None
                out[name] = {
                    "makespan": r.metrics["makespan"],
                    "completion_mean": float(completions(cp, r).mean()),
                    "predicted_makespan": r.predicted["makespan"],
                    "predicted_completion_mean": r.predicted["completion_mean"],
                    "valid": r.valid,
                    "wall_s": r.wall_s,
                    "decide_wall_s": float(sum(r.trace.decision_latency_s)),
                    "dispatch_ms": quantiles_ms(r.dispatch_latency_s),
                    "report_ms": quantiles_ms(r.report_latency_s),
                }
                out[name]["gap"] = gap(r.metrics["makespan"], r.predicted["makespan"])
                out[name]["gap_completion"] = gap(r.metrics["completion_mean"], r.predicted["completion_mean"])
                gaps += [out[name]["gap"], out[name]["gap_completion"]]
                done[name] = completions(cp, r)
                dispatch += r.dispatch_latency_s
                launch += r.launch_latency_s
                print(f"stream {name}: {json.dumps(out[name])}")
            b = run_ray_baseline(cp, cluster, seed=args.seed, time_scale=ts)
            done["ray"] = completions(cp, b)
            out["ray"] = {
                "makespan": b.metrics["makespan"],
                "completion_mean": float(done["ray"].mean()),
                "valid": b.valid,
            }
            print(f"stream ray: {json.dumps(out['ray'])}")
            for name in ("srpt_hold", "drl_stream"):
                out[f"{name}_vs_ray_completion"] = bootstrap_ratio(done[name], done["ray"])
            figures["stream"] = out
        if args.largest_tasks:
            per = max(args.largest_tasks // 12, 1)
            big = generate_stream(CLUSTER, per, args.load, "poisson", args.seed + 7, mix="synthetic")
            flows = [fit(wf, CLUSTER) for wf in big.workflows]
            cp = compile_problem(Problem(workflows=flows, cluster=CLUSTER))
            ts = time_scale_for(cp, 0.2, 1e9)
            r = run_live(cp, "srpt_hold", cluster, seed=args.seed, time_scale=ts)
            figures["largest"] = {
                "tasks": cp.n_tasks,
                "workflows": cp.n_workflows,
                "time_scale": ts,
                "wall_s": r.wall_s,
                "valid": r.valid,
                "gap": gap(r.metrics["makespan"], r.predicted["makespan"] if r.predicted else math.nan),
                "dispatch_ms": quantiles_ms(r.dispatch_latency_s),
            }
            print(f"largest run: {json.dumps(figures['largest'])}")
    finally:
        cluster.stop()

    singles = figures["singles"]
    if singles:
        for name in ("heft", "drl"):
            figures[f"{name}_vs_ray_makespan"] = log_ratio_interval([row[name] / row["ray"] for row in singles])
    abs_gaps = np.abs(np.asarray([g for g in gaps if math.isfinite(g)]))
    figures["gap_abs"] = {
        "median": float(np.median(abs_gaps)) if len(abs_gaps) else math.nan,
        "p90": float(np.quantile(abs_gaps, 0.9)) if len(abs_gaps) else math.nan,
        "runs": len(abs_gaps),
    }
    figures["overhead"] = {"dispatch_ms": quantiles_ms(dispatch), "launch_ms": quantiles_ms(launch)}
    figures["all_valid"] = all(row[f"{k}_valid"] for row in singles for k in ("heft", "drl", "ray")) and all(
        v.get("valid", True) for v in figures["stream"].values() if isinstance(v, dict)
    )
    print()
    print(
        f"|gap| over {figures['gap_abs']['runs']} real runs: median {figures['gap_abs']['median']:.3f}, "
        f"p90 {figures['gap_abs']['p90']:.3f}"
    )
    for name in ("heft", "drl"):
        if f"{name}_vs_ray_makespan" in figures:
            m, lo, hi = figures[f"{name}_vs_ray_makespan"]
            print(f"{name} / ray makespan, geometric mean of {len(singles)}: {m:.3f} [{lo:.3f}, {hi:.3f}]")
    for name in ("srpt_hold", "drl_stream"):
        if f"{name}_vs_ray_completion" in figures["stream"]:
            m, lo, hi = figures["stream"][f"{name}_vs_ray_completion"]
            print(f"{name} / ray mean completion on the stream: {m:.3f} [{lo:.3f}, {hi:.3f}]")
    d, la = figures["overhead"]["dispatch_ms"], figures["overhead"]["launch_ms"]
    print(
        f"dispatch (decision + launch) per task: median {d['median']:.1f} ms, p99 {d['p99']:.1f} ms (n={d['n']}); "
        f"Ray's own launch: median {la['median']:.1f} ms, p99 {la['p99']:.1f} ms"
    )
    print(f"every trace valid: {figures['all_valid']}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

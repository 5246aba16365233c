"""Real runs on a loopback Ray cluster against the simulator and against Ray's own scheduler.

- **Real against simulated**: single workflows (generated families and WfCommons recipes) under `heft` and `drl`,
  and one stream at load 0.85 under `srpt_hold` and `drl_stream`, each run for real (`dagsched.live`) and in the
  simulator (same problem, scheduler, seed; every task longer by the cluster's per-task launch and report latency,
  measured by a probe before each run, or `--task-overhead-ms`): achieved / predicted - 1 of the makespan (and of
  the mean completion on the stream), per run and as median and p90 of |gap|, beside the gap of a prediction
  without that overhead.
- **What makes the gap**, per run and over all: per task, dispatch (from the event a decision answered to the
  task's start on its node), Ray's launch within it (from submitting the Ray task to its start), report (from its
  end on its node to the engine's knowing it); per decision, the scheduler's own time; medians and p99.
- **Live dispatch against Ray's own scheduler** (`-s ray`): the same workflows and stream, paired; the geometric
  mean ratio of makespans with its 95 % interval (t on the log ratios) on the single workflows, and the ratio of
  mean completions on the stream with its 95 % bootstrap interval over workflows.
- **The largest run**: a stream of at least `--largest-tasks` short emulated tasks under `srpt_hold`.

One Ray cluster serves every run (one Ray node per dagsched node, started once). Task times are emulated sleeps.
Every task of the single workflows and the stream lasts 0.2 to 5 s of wall time on the node it runs on: the time
scale sets the median task (at speed 1) to `--task-s`, and runtimes are clipped to 0.4-5 s at speed 1 (0.2-2.5 s on
the fastest node). The stream's workflows are small (6 to 16 tasks of the synthetic families), so 30 of them at
load 0.85 arrive over about 75 s of wall time. Emulated payloads are small (`--data-scale`): the engine waits out
each modelled transfer itself, and a payload only has to move. Prints the figures; `--out` also writes them as
JSON.

    python benchmarks/bench_live.py                       # 10 workflows, a 30-workflow stream, 4 nodes
    python benchmarks/bench_live.py --workflows 3 --stream 10      # a quick look
    python benchmarks/bench_live.py --workflows 0 --stream 0 --largest-tasks 10000   # the largest run alone
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
from dagsched.generate.streams import Source, generate_stream, rate_for_load
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


TASK_WALL_S = (0.4, 5.0)
"""Every task's wall time at speed 1 is clipped into this band (0.2-5 s on nodes of speed 1 to 2)."""

STREAM_MIX = (
    Source("etl", "synthetic", ("etl_star",), (6, 10, 16), 0.35),
    Source("analytics", "synthetic", ("random",), (6, 10, 16), 0.25),
    Source("ml", "synthetic", ("ml_pipeline",), (6, 10), 0.15),
    Source("science", "synthetic", ("layered",), (8, 12, 16), 0.25),
)
"""The stream's workflows: small instances of the synthetic families."""

ROOMY = CLUSTER.model_copy(
    update={"nodes": [n.model_copy(update={"cpu": 64, "mem": 512, "gpu": 8}) for n in CLUSTER.nodes]}
)
"""CLUSTER with room for any generated task: streams are drawn on it, then fitted to CLUSTER and their arrival
rate set again for CLUSTER (the synthetic families ask up to 8 cores, more than a node here has)."""


def fit(wf: Workflow, cluster: Cluster) -> Workflow:
    """The workflow with each request capped at the largest node (recipes ask up to 32 cores)."""
    cpu = max(n.cpu for n in cluster.nodes)
    mem = max(n.mem for n in cluster.nodes)
    tasks = [t.model_copy(update={"cpu": min(t.cpu, cpu), "mem": min(t.mem, mem), "gpu": 0}) for t in wf.tasks]
    return wf.model_copy(update={"tasks": tasks})


def clipped(wf: Workflow, lo_s: float, hi_s: float) -> Workflow:
    """The workflow with each runtime (speed 1, problem seconds) clipped into [lo_s, hi_s]."""
    tasks = [t.model_copy(update={"runtime": min(max(t.runtime, lo_s), hi_s)}) for t in wf.tasks]
    return wf.model_copy(update={"tasks": tasks})


def in_band(flows: list[Workflow], task_s: float, max_wall_s: float) -> tuple[CompiledProblem, float]:
    """The problem of `flows` on CLUSTER and its time scale: the median task lasts `task_s` at speed 1 (less where
    the span would pass `max_wall_s`), and every task's wall time at speed 1 is clipped into TASK_WALL_S."""
    ts = time_scale_for(compile_problem(Problem(workflows=flows, cluster=CLUSTER)), task_s, max_wall_s)
    lo, hi = TASK_WALL_S[0] / ts, TASK_WALL_S[1] / ts
    return compile_problem(Problem(workflows=[clipped(wf, lo, hi) for wf in flows], cluster=CLUSTER)), ts


def single(source: str, n: int, seed: int, task_s: float, max_wall_s: float) -> tuple[CompiledProblem, float]:
    if source.startswith("recipe:"):
        wf = recipe_workflow(source.split(":", 1)[1], n, seed)
    else:
        wf = generate_workflow(source, n, seed)
    return in_band([fit(wf, CLUSTER)], task_s, max_wall_s)


def stream_problem(n: int, load: float, seed: int, task_s: float) -> tuple[CompiledProblem, float]:
    """`n` small workflows (STREAM_MIX) arriving by a Poisson process at offered load `load` on CLUSTER, their
    tasks in the wall-time band; the arrival times are those of the drawn stream, scaled to the rate that offers
    `load` once the tasks are fitted to CLUSTER and clipped (a Poisson process scaled stays one)."""
    drawn = generate_stream(ROOMY, n, load, "poisson", seed, mix=STREAM_MIX)
    cp, ts = in_band([fit(wf, CLUSTER) for wf in drawn.workflows], task_s, math.inf)
    flows = cp.problem.workflows
    stretch = drawn.rate_per_s / rate_for_load(flows, CLUSTER, load)
    flows = [wf.model_copy(update={"submit_time": wf.submit_time * stretch}) for wf in flows]
    return compile_problem(Problem(workflows=flows, cluster=CLUSTER)), ts


def largest_problem(tasks: int, load: float, seed: int, span_wall_s: float) -> tuple[CompiledProblem, float]:
    """A stream of at least `tasks` short emulated tasks (STREAM_MIX) at load `load`, the time scale set so that
    its arrivals span `span_wall_s` of wall time."""
    per = 10.0  # tasks per workflow of STREAM_MIX, about
    drawn = generate_stream(ROOMY, math.ceil(tasks / per * 1.2) + 1, load, "poisson", seed, mix=STREAM_MIX)
    kept, total = [], 0
    for wf in drawn.workflows:
        if total >= tasks:
            break
        kept.append(fit(wf, CLUSTER))
        total += len(wf.tasks)
    stretch = drawn.rate_per_s / rate_for_load(kept, CLUSTER, load)
    kept = [wf.model_copy(update={"submit_time": wf.submit_time * stretch}) for wf in kept]
    cp = compile_problem(Problem(workflows=kept, cluster=CLUSTER))
    return cp, span_wall_s / max(float(cp.wf_submit_s.max()), 1e-9)


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
        return {"median": math.nan, "p99": math.nan, "mean": math.nan, "n": 0}
    arr = np.asarray(values) * 1e3
    return {
        "median": float(np.median(arr)),
        "p99": float(np.quantile(arr, 0.99)),
        "mean": float(arr.mean()),
        "n": len(values),
    }


class Latencies:
    """Every run's per-task dispatch, launch and report latencies and per-decision times, pooled."""

    def __init__(self) -> None:
        self.dispatch: list[float] = []
        self.launch: list[float] = []
        self.report: list[float] = []
        self.decide: list[float] = []

    def add(self, r: LiveResult) -> dict[str, Any]:
        """Pool a run's latencies; its own quantiles."""
        self.dispatch += r.dispatch_latency_s
        self.launch += r.launch_latency_s
        self.report += r.report_latency_s
        self.decide += r.trace.decision_latency_s
        return self.of(r.dispatch_latency_s, r.launch_latency_s, r.report_latency_s, r.trace.decision_latency_s)

    @staticmethod
    def of(dispatch: list[float], launch: list[float], report: list[float], decide: list[float]) -> dict[str, Any]:
        return {
            "dispatch_ms": quantiles_ms(dispatch),
            "launch_ms": quantiles_ms(launch),
            "report_ms": quantiles_ms(report),
            "decide_ms": quantiles_ms(decide),
        }

    def pooled(self) -> dict[str, Any]:
        return self.of(self.dispatch, self.launch, self.report, self.decide)


def live_row(r: LiveResult, cp: CompiledProblem, ts: float, stream: bool, lat: Latencies) -> dict[str, Any]:
    """One live run's figures: achieved and predicted (with and without the per-task overhead), gaps, latencies."""
    assert r.predicted is not None
    bare = r.predicted_no_overhead or r.predicted
    row: dict[str, Any] = {
        "makespan": r.metrics["makespan"],
        "predicted_makespan": r.predicted["makespan"],
        "predicted_makespan_no_overhead": bare["makespan"],
        "gap": gap(r.metrics["makespan"], r.predicted["makespan"]),
        "gap_no_overhead": gap(r.metrics["makespan"], bare["makespan"]),
        "task_overhead_ms": r.task_overhead_s * 1e3,
        "valid": r.valid,
        "wall_s": r.wall_s,
        "decide_wall_s": float(sum(r.trace.decision_latency_s)),
    }
    if stream:
        row["completion_mean"] = float(completions(cp, r).mean())
        row["predicted_completion_mean"] = r.predicted["completion_mean"]
        row["predicted_completion_mean_no_overhead"] = bare["completion_mean"]
        row["gap_completion"] = gap(row["completion_mean"], r.predicted["completion_mean"])
        row["gap_completion_no_overhead"] = gap(row["completion_mean"], bare["completion_mean"])
    return row | lat.add(r)


def latency_line(row: dict[str, Any]) -> str:
    d, la, rp, dc = (row[k] for k in ("dispatch_ms", "launch_ms", "report_ms", "decide_ms"))
    return (
        f"dispatch {d['median']:.1f}/{d['p99']:.0f} ms (launch {la['median']:.1f}/{la['p99']:.0f}), "
        f"report {rp['median']:.1f}/{rp['p99']:.0f}, decide {dc['median']:.2f}/{dc['p99']:.1f} (median/p99)"
    )


def abs_quantiles(values: list[float]) -> dict[str, float]:
    arr = np.abs(np.asarray([v for v in values if math.isfinite(v)]))
    if not len(arr):
        return {"median": math.nan, "p90": math.nan, "runs": 0}
    return {"median": float(np.median(arr)), "p90": float(np.quantile(arr, 0.9)), "runs": len(arr)}


def peak_rss_mib() -> float:
    """This process's peak resident memory (the driver: engine, executor, scheduler), MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workflows", type=int, default=10, help="single workflows (at most 12)")
    parser.add_argument("--stream", type=int, default=30, help="workflows in the loaded stream (0: none)")
    parser.add_argument("--load", type=float, default=0.85)
    parser.add_argument("--task-s", type=float, default=1.0, help="wall seconds of a median task at speed 1")
    parser.add_argument("--single-wall-s", type=float, default=40.0, help="longest critical path, wall seconds")
    parser.add_argument(
        "--task-overhead-ms",
        type=float,
        default=None,
        help="per-task latency the predictions add, wall ms (default: a probe of the cluster before each run)",
    )
    parser.add_argument(
        "--data-scale",
        type=float,
        default=1e-5,
        help="bytes of an emulated payload per byte of an edge (1e-5: the stream's largest 1.7 MB; the object "
        "stores, 96 MiB a node, do not spill)",
    )
    parser.add_argument("--largest-tasks", type=int, default=0, help="tasks of the largest run (0: none)")
    parser.add_argument("--largest-wall-s", type=float, default=240.0, help="the largest run's arrivals, wall s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON here")
    args = parser.parse_args()
    overhead_s = None if args.task_overhead_ms is None else args.task_overhead_ms / 1e3

    t0 = time.time()
    cluster = start_local(CLUSTER)
    print(f"Ray cluster of {len(CLUSTER.nodes)} nodes up in {time.time() - t0:.1f} s")
    figures: dict[str, Any] = {"cluster": CLUSTER.name, "singles": [], "stream": {}}
    lat = Latencies()
    gaps: list[float] = []
    bare_gaps: list[float] = []
    try:
        for k, (source, n) in enumerate(SOURCES[: args.workflows]):
            cp, ts = single(source, n, args.seed + k, args.task_s, args.single_wall_s)
            task_wall = cp.exec_s.mean(axis=1) * ts
            row: dict[str, Any] = {
                "workflow": f"{source}-{n}",
                "tasks": cp.n_tasks,
                "time_scale": ts,
                "median_task_wall_s": float(np.median(task_wall)),
            }
            for name in ("heft", "drl"):
                r = run_live(
                    cp,
                    name,
                    cluster,
                    seed=args.seed,
                    time_scale=ts,
                    data_scale=args.data_scale,
                    task_overhead_s=overhead_s,
                )
                row[name] = live_row(r, cp, ts, False, lat)
                gaps.append(row[name]["gap"])
                bare_gaps.append(row[name]["gap_no_overhead"])
                x = row[name]
                print(
                    f"{row['workflow']:>22} {name:>4}: {x['makespan']:8.1f} / predicted {x['predicted_makespan']:8.1f} "
                    f"gap {x['gap']:+.3f} (without the {x['task_overhead_ms']:.1f} ms overhead "
                    f"{x['gap_no_overhead']:+.3f}); " + latency_line(x)
                )
            b = run_ray_baseline(cp, cluster, seed=args.seed, time_scale=ts, data_scale=args.data_scale)
            row["ray"] = {"makespan": b.metrics["makespan"], "valid": b.valid}
            figures["singles"].append(row)
            print(f"{row['workflow']:>22}  ray: {row['ray']['makespan']:8.1f}  ({cp.n_tasks} tasks, ts {ts:.4f})")
        if args.stream:
            cp, ts = stream_problem(args.stream, args.load, args.seed, args.task_s)
            wall = cp.exec_s * ts
            out: dict[str, Any] = {
                "workflows": cp.n_workflows,
                "tasks": cp.n_tasks,
                "time_scale": ts,
                "arrivals_wall_s": float(cp.wf_submit_s.max()) * ts,
                "task_wall_s_min_p10_median_p90_max": [float(np.quantile(wall, q)) for q in (0, 0.1, 0.5, 0.9, 1)],
            }
            print(
                f"stream: {cp.n_workflows} workflows, {cp.n_tasks} tasks arriving over {out['arrivals_wall_s']:.0f} s; "
                "task wall s min/p10/median/p90/max "
                + "/".join(f"{v:.2f}" for v in out["task_wall_s_min_p10_median_p90_max"])
            )
            done: dict[str, np.ndarray] = {}
            for name in ("srpt_hold", "drl_stream"):
                r = run_live(
                    cp,
                    name,
                    cluster,
                    seed=args.seed,
                    time_scale=ts,
                    data_scale=args.data_scale,
                    task_overhead_s=overhead_s,
                )
                x = out[name] = live_row(r, cp, ts, True, lat)
                gaps += [x["gap"], x["gap_completion"]]
                bare_gaps += [x["gap_no_overhead"], x["gap_completion_no_overhead"]]
                done[name] = completions(cp, r)
                print(
                    f"stream {name}: makespan {x['makespan']:.1f} / {x['predicted_makespan']:.1f} gap {x['gap']:+.3f} "
                    f"({x['gap_no_overhead']:+.3f} without the {x['task_overhead_ms']:.1f} ms overhead), "
                    "mean completion "
                    f"{x['completion_mean']:.1f} / {x['predicted_completion_mean']:.1f} gap {x['gap_completion']:+.3f} "
                    f"({x['gap_completion_no_overhead']:+.3f}); {x['wall_s']:.0f} s; " + latency_line(x)
                )
            b = run_ray_baseline(cp, cluster, seed=args.seed, time_scale=ts, data_scale=args.data_scale)
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
            cp, ts = largest_problem(args.largest_tasks, args.load, args.seed + 7, args.largest_wall_s)
            wall = cp.exec_s * ts
            print(
                f"largest run: {cp.n_tasks} tasks in {cp.n_workflows} workflows, task wall s median "
                f"{float(np.median(wall)):.3f}, p90 {float(np.quantile(wall, 0.9)):.3f}"
            )
            r = run_live(
                cp,
                "srpt_hold",
                cluster,
                seed=args.seed,
                time_scale=ts,
                data_scale=args.data_scale,
                task_overhead_s=overhead_s,
            )
            per_run = Latencies().add(r)
            figures["largest"] = {
                "tasks": cp.n_tasks,
                "workflows": cp.n_workflows,
                "time_scale": ts,
                "task_wall_s_median": float(np.median(wall)),
                "wall_s": r.wall_s,
                "valid": r.valid,
                "done": sum(1 for a in r.trace.attempts if a.outcome == "done"),
                "makespan": r.metrics["makespan"],
                "predicted_makespan": r.predicted["makespan"] if r.predicted else math.nan,
                "gap": gap(r.metrics["makespan"], r.predicted["makespan"] if r.predicted else math.nan),
                "task_overhead_ms": r.task_overhead_s * 1e3,
                "decide_wall_s": float(sum(r.trace.decision_latency_s)),
                "driver_peak_rss_mib": peak_rss_mib(),
                **per_run,
            }
            print(f"largest run: {json.dumps(figures['largest'])}")
    finally:
        cluster.stop()

    singles = figures["singles"]
    if singles:
        for name in ("heft", "drl"):
            ratios = [row[name]["makespan"] / row["ray"]["makespan"] for row in singles]
            figures[f"{name}_vs_ray_makespan"] = log_ratio_interval(ratios)
    figures["gap_abs"] = abs_quantiles(gaps)
    figures["gap_abs_no_overhead"] = abs_quantiles(bare_gaps)
    figures["latency"] = lat.pooled()
    stream_runs = [v for v in figures["stream"].values() if isinstance(v, dict)]
    figures["all_valid"] = all(row[k]["valid"] for row in singles for k in ("heft", "drl", "ray")) and all(
        v.get("valid", True) for v in stream_runs
    )
    print()
    g, gb = figures["gap_abs"], figures["gap_abs_no_overhead"]
    print(
        f"|gap| over {g['runs']} real runs: median {g['median']:.3f}, p90 {g['p90']:.3f} "
        f"(predictions without the per-task overhead: median {gb['median']:.3f}, p90 {gb['p90']:.3f})"
    )
    for name in ("heft", "drl"):
        if f"{name}_vs_ray_makespan" in figures:
            m, lo, hi = figures[f"{name}_vs_ray_makespan"]
            print(f"{name} / ray makespan, geometric mean of {len(singles)}: {m:.3f} [{lo:.3f}, {hi:.3f}]")
    for name in ("srpt_hold", "drl_stream"):
        if f"{name}_vs_ray_completion" in figures["stream"]:
            m, lo, hi = figures["stream"][f"{name}_vs_ray_completion"]
            print(f"{name} / ray mean completion on the stream: {m:.3f} [{lo:.3f}, {hi:.3f}]")
    pooled = figures["latency"]
    print(f"over every live run ({pooled['dispatch_ms']['n']} tasks): " + latency_line(pooled))
    print(f"every trace valid: {figures['all_valid']}")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

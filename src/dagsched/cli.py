"""The `dagsched` command: generate, inspect, simulate and compare.

Bad input (files, fields, names) prints one clear message and exits with status 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from dagsched.console import comma_list, console, err_console, number, workflows_label
from dagsched.console import fail as _fail
from dagsched.model.errors import InputError

if TYPE_CHECKING:
    from dagsched.model import Workflow

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)
generate_app = typer.Typer(no_args_is_help=True, help="Write synthetic workflows and clusters.")
app.add_typer(generate_app, name="generate")


def resolve_cluster(spec: str | None):  # -> Cluster | None
    """A preset name or a cluster file; None stays None (classic files carry their own)."""
    if spec is None:
        return None
    from dagsched.generate.clusters import cluster_from_spec

    return cluster_from_spec(spec)


def load_compiled(workflows: list[Path], cluster: str | None):  # -> CompiledProblem
    from dagsched.io import read_problem
    from dagsched.model.compiled import compile_problem

    if not workflows:
        raise InputError("--workflow", "give at least one workflow file")
    for path in workflows:
        if not Path(path).exists():
            raise InputError("--workflow", f"file not found: {path}")
    return compile_problem(read_problem(list(workflows), resolve_cluster(cluster)))


def _is_classic_file(path: Path) -> bool:
    from dagsched.io import detect_format, read_document

    return detect_format(read_document(path)) == "classic"


def sim_config(
    classic: bool,
    noise_cv: float,
    mtbf: float | None,
    mttr: float | None,
    stragglers: float,
    overrun: float | None,
    contention: bool = False,
):  # -> SimConfig
    from pydantic import ValidationError

    from dagsched.model.errors import from_pydantic
    from dagsched.sim.config import SimConfig

    try:
        return SimConfig(
            classic=classic,
            noise_cv=noise_cv,
            mtbf_s=mtbf,
            mttr_s=mttr,
            straggler_rate_per_h=stragglers,
            overrun_factor=overrun,
            network_contention=contention,
        )
    except ValidationError as err:
        raise from_pydantic(err, "config") from None


WorkflowOpt = Annotated[
    list[Path], typer.Option("--workflow", "-w", help="workflow file (native, WfFormat or classic); repeat for several")
]
ClusterOpt = Annotated[
    str | None, typer.Option("--cluster", "-c", help="cluster preset name or file; classic files need none")
]
ClassicOpt = Annotated[
    bool | None, typer.Option("--classic/--cloud", help="textbook model (default for classic-format files)")
]
NoiseOpt = Annotated[float, typer.Option(help="runtime noise CV (cloud mode)")]
MtbfOpt = Annotated[float | None, typer.Option("--mtbf", help="mean time between node failures, s")]
MttrOpt = Annotated[float | None, typer.Option("--mttr", help="mean time to repair, s")]
StragOpt = Annotated[float, typer.Option("--stragglers", help="straggler episodes per node per hour")]
OverrunOpt = Annotated[
    float | None, typer.Option("--overrun", help="migrate tasks running past this multiple of prediction")
]


def _mode(classic: bool | None, workflows: list[Path]) -> bool:
    if classic is not None:
        return classic
    return any(_is_classic_file(p) for p in workflows)


@app.command()
def info(
    path: Annotated[Path, typer.Argument(help="workflow file")],
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Tasks, edges, levels, critical path, total work and width of a workflow."""
    try:
        from dagsched.io import detect_format, read_document, read_problem, workflow_from_dict
        from dagsched.model.compiled import compile_problem
        from dagsched.model.entities import Cluster, Node, Problem
        from dagsched.model.graph import critical_path_s, levels, total_work_s, width

        if not path.exists():
            raise InputError("path", f"file not found: {path}")
        doc = read_document(path)
        if detect_format(doc) == "classic":
            problem = read_problem(path, None)
        else:
            wf = workflow_from_dict(doc)
            big = Node(id="any", cpu=1e9, mem=1e9, gpu=10**6)
            problem = Problem(workflows=[wf], cluster=Cluster(nodes=[big]))
        cp = compile_problem(problem)
    except InputError as err:
        raise _fail(err) from None
    lv = levels(cp)
    summary: dict[str, Any] = {
        "name": problem.workflows[0].name,
        "tasks": cp.n_tasks,
        "edges": int(len(cp.succ_idx)),
        "levels": int(lv.max()) if len(lv) else 0,
        "critical_path": float(critical_path_s(cp).max()),
        "total_work": total_work_s(cp),
        "width": width(cp),
        "data_bytes": float(cp.succ_data.sum()),
        "entry_tasks": int((cp.pred_ptr[1:] == cp.pred_ptr[:-1]).sum()),
        "exit_tasks": int((cp.succ_ptr[1:] == cp.succ_ptr[:-1]).sum()),
    }
    if as_json:
        print(json.dumps(summary))
        return
    table = Table(title=str(path), show_header=False)
    for key, value in summary.items():
        table.add_row(key, number(value) if isinstance(value, float) else str(value))
    console.print(table)


@app.command()
def schedulers() -> None:
    """List the registered schedulers, one a line: its name, what it is, and where it is best (docs/schedulers.md
    gives the figures)."""
    from dagsched.schedulers import registered_names
    from dagsched.schedulers.base import describe

    names = registered_names()
    width = max(map(len, names), default=0)
    for name in names:
        what, best = describe(name)
        print(f"{name:<{width}}  {what}" + (f" Best for: {best}." if best else ""))


@app.command()
def simulate(
    workflow: WorkflowOpt,
    cluster: ClusterOpt = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler", "-s", help="default: fair_cap_gpu_first for several workflows (a stream), heft for one"
        ),
    ] = None,
    seed: int = 1,
    classic: ClassicOpt = None,
    noise_cv: NoiseOpt = 0.0,
    mtbf: MtbfOpt = None,
    mttr: MttrOpt = 600.0,
    stragglers: StragOpt = 0.0,
    overrun: OverrunOpt = None,
    contention: Annotated[
        bool, typer.Option("--contention", help="cloud mode: transfers share the nodes' links max-min fair")
    ] = False,
    gantt: Annotated[Path | None, typer.Option(help="write a Gantt chart PNG")] = None,
    trace: Annotated[Path | None, typer.Option(help="write the trace (.json or .csv)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
    plan: Annotated[bool, typer.Option("--plan", help="also print where and when each task ran")] = False,
) -> None:
    """Simulate one scheduler on a problem and print its metrics (with --plan, each task's node and times)."""
    from dagsched.sim.export import write_gantt, write_trace
    from dagsched.sim.run import simulate as run_one

    try:
        cp = load_compiled(workflow, cluster)
        classic_model = _mode(classic, workflow)  # reads every workflow file: once
        config = sim_config(classic_model, noise_cv, mtbf, mttr, stragglers, overrun, contention)
        from dagsched.schedulers import default_scheduler, make_scheduler

        scheduler = scheduler or default_scheduler(cp.n_workflows, classic_model)
        sched = make_scheduler(scheduler)
    except InputError as err:
        raise _fail(err) from None
    result = run_one(cp, sched, config, seed)
    if trace:
        write_trace(cp, result.trace, trace, result.metrics)
    if gantt:
        write_gantt(cp, result.trace, gantt)
    from dagsched.sim.metrics import summary_metrics

    # a stream on a shared cluster: its steady-state figures too
    out = {"scheduler": scheduler, "seed": seed, **summary_metrics(cp, result.trace, config), "valid": result.valid}
    if not as_json:
        out.pop("workflow_makespans")
    runs = [
        {
            "task": cp.task_ids[a.task],
            "node": cp.node_ids[a.node],
            "start": a.start,
            "finish": a.end,
            "outcome": a.outcome,
        }
        for a in sorted(result.trace.attempts, key=lambda a: (a.start, a.task))
    ]
    if as_json:
        print(json.dumps(out | ({"plan": runs} if plan else {})))
    else:
        table = Table(title=f"{scheduler} on {workflows_label(workflow)} (seed {seed})", show_header=False)
        for key, value in out.items():
            table.add_row(key, number(value) if isinstance(value, float) else str(value))
        console.print(table)
        if plan:
            runs_table = Table("task", "node", "start s", "finish s", "outcome", title="plan, by start time")
            for r in runs:
                runs_table.add_row(r["task"], r["node"], number(r["start"]), number(r["finish"]), r["outcome"])
            console.print(runs_table)
    if not result.valid:
        err_console.print("[bold red]trace failed validation:[/] " + "; ".join(result.violations[:5]))
        raise typer.Exit(1)


@app.command()
def compare(
    workflow: WorkflowOpt,
    cluster: ClusterOpt = None,
    schedulers: Annotated[str, typer.Option(help="comma-separated names, or 'all'")] = "all",
    seeds: Annotated[int, typer.Option(min=1, help="seeds 1..N per scheduler")] = 3,
    together: Annotated[bool, typer.Option(help="run all workflow files as one problem instead of one each")] = False,
    classic: ClassicOpt = None,
    noise_cv: NoiseOpt = 0.0,
    mtbf: MtbfOpt = None,
    mttr: MttrOpt = 600.0,
    stragglers: StragOpt = 0.0,
    overrun: OverrunOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Run several schedulers on the same problems and seeds; print one table (means over seeds)."""
    from dagsched.schedulers import make_scheduler, registered_names
    from dagsched.schedulers.base import unknown_scheduler
    from dagsched.sim.run import simulate as run_one

    groups = [list(workflow)] if together else [[p] for p in workflow]
    try:
        names = registered_names() if schedulers == "all" else comma_list(schedulers)
        for name in names:
            if name not in registered_names():
                raise unknown_scheduler(name, "--schedulers")
            make_scheduler(name)
        problems = [(workflows_label(g), load_compiled(g, cluster), _mode(classic, g)) for g in groups]
        configs = [sim_config(mode, noise_cv, mtbf, mttr, stragglers, overrun) for _, _, mode in problems]
    except InputError as err:
        raise _fail(err) from None
    results: list[dict[str, Any]] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err_console, transient=True, disable=as_json or not sys.stderr.isatty()) as bar:
        job = bar.add_task("simulating", total=len(problems) * len(names) * seeds)
        for (label, cp, _), config in zip(problems, configs, strict=True):
            for name in names:
                for seed in range(1, seeds + 1):
                    bar.update(job, description=f"{label}: {name} seed {seed}")
                    r = run_one(cp, make_scheduler(name), config, seed)
                    m = r.metrics
                    results.append(
                        {
                            "workflow": label,
                            "scheduler": name,
                            "seed": seed,
                            "makespan": m.makespan,
                            "cost": m.cost,
                            "sla_hit_rate": m.sla_hit_rate,
                            "utilisation": m.utilisation,
                            "slr": m.slr,
                            "latency_ms": m.decision_latency_mean_ms,
                            "latency_first_ms": m.decision_latency_first_ms,
                            "valid": r.valid,
                        }
                    )
                    bar.advance(job)
    if as_json:
        print(json.dumps({"results": results}))
    else:
        for (label, cp, _), config in zip(problems, configs, strict=True):
            console.print(_compare_table(label, cp, config.classic, seeds, names, results))
    if not all(r["valid"] for r in results):
        raise typer.Exit(1)


def _compare_table(label: str, cp: Any, classic: bool, seeds: int, names: list[str], results: list[dict]) -> Table:
    import numpy as np

    mode = "classic" if classic else "cloud"
    table = Table(title=f"{label}: {cp.n_tasks} tasks on {cp.n_nodes} nodes, {mode} mode, means of {seeds} seeds")
    columns = ("scheduler", "makespan (s)", "SLR", "cost", "SLA hit", "utilisation", "decision ms", "first ms", "valid")
    for col in columns:
        table.add_column(col, justify="right" if col != "scheduler" else "left")
    table.caption = "decision ms: mean time per decision after the first; first ms: the first (one-time work)"
    keys = ("makespan", "slr", "cost", "sla_hit_rate", "utilisation", "latency_ms", "latency_first_ms")
    rows = []
    for name in names:
        mine = [r for r in results if r["scheduler"] == name and r["workflow"] == label]
        mean = {k: float(np.mean([r[k] for r in mine])) for k in keys}
        rows.append((mean["makespan"], name, mean, all(r["valid"] for r in mine)))
    for _, name, mean, valid in sorted(rows):
        table.add_row(
            name,
            *(number(mean[k]) for k in keys),
            "yes" if valid else "[red]NO[/]",
        )
    return table


@generate_app.command("workflow")
def generate_workflow_cmd(
    family: Annotated[str, typer.Option(help="layered, ml_pipeline, etl_star, random or stages")],
    tasks: Annotated[int, typer.Option(help="number of tasks")],
    out: Annotated[Path, typer.Option(help="output file (.yaml or .json)")],
    seed: int = 0,
    ccr: Annotated[float, typer.Option(help="communication-to-computation ratio")] = 0.5,
    density: Annotated[float, typer.Option(help="edge density of the random family")] = 0.3,
) -> None:
    """A synthetic workflow from a topology family."""
    from dagsched.generate import generate_workflow

    _write_generated(lambda: generate_workflow(family, tasks, seed, ccr=ccr, density=density), out)


@generate_app.command("recipe")
def generate_recipe_cmd(
    recipe: Annotated[str, typer.Option(help="WfCommons recipe: montage, epigenomics, 1000genome, blast, ...")],
    tasks: Annotated[int, typer.Option(help="upper bound on the number of tasks")],
    out: Annotated[Path, typer.Option(help="output file (.yaml or .json)")],
    seed: int = 0,
) -> None:
    """A workflow from a WfCommons recipe (offline)."""
    from dagsched.generate import recipe_workflow

    _write_generated(lambda: recipe_workflow(recipe, tasks, seed), out)


def _write_generated(make: Callable[[], Workflow], out: Path) -> None:
    from dagsched.io import write_workflow

    try:
        wf = make()
        write_workflow(wf, out)
    except InputError as err:
        raise _fail(err) from None
    console.print(f"wrote {out}: {len(wf.tasks)} tasks, {len(wf.edges)} edges")


@generate_app.command("cluster")
def generate_cluster_cmd(
    preset: Annotated[str, typer.Option(help="preset name, e.g. homog-8, hetero-16, large-100")],
    out: Annotated[Path, typer.Option(help="output file (.yaml or .json)")],
) -> None:
    """A cluster file from a named preset."""
    from dagsched.io import write_cluster

    try:
        cluster = resolve_cluster(preset)
        if Path(preset).exists():
            raise InputError("--preset", f"'{preset}' is a file, not a preset name")
        write_cluster(cluster, out)
    except InputError as err:
        raise _fail(err) from None
    console.print(f"wrote {out}: {len(cluster.nodes)} nodes")


@generate_app.command("stream")
def generate_stream_cmd(
    out_dir: Annotated[Path, typer.Option("--out-dir", help="folder for one file per workflow and cluster.yaml")],
    cluster: Annotated[str, typer.Option("--cluster", "-c", help="cluster preset or file the load is set for")] = (
        "hetero-16"
    ),
    workflows: Annotated[int, typer.Option(help="number of workflows")] = 100,
    load: Annotated[float, typer.Option(help="target offered load of the binding resource (e.g. 0.85)")] = 0.85,
    arrival: Annotated[str, typer.Option(help="poisson, bursty (MMPP-2) or diurnal")] = "poisson",
    mix: Annotated[
        str, typer.Option(help="workload mix: default, synthetic or stages (analytics jobs alone)")
    ] = "default",
    seed: int = 0,
) -> None:
    """A stream of tenants' workflows arriving over time at a target offered load on one cluster.

    Writes each workflow (with its submit time, deadline, tenant and priority class) and the cluster;
    `dagsched simulate -c OUT/cluster.yaml -w OUT/w*.yaml` runs it.
    """
    from dagsched.generate.streams import generate_stream
    from dagsched.io import write_cluster, write_workflow

    try:
        stream = generate_stream(resolve_cluster(cluster), workflows, load, arrival, seed, mix=mix)
        out_dir.mkdir(parents=True, exist_ok=True)
        for wf in stream.workflows:
            write_workflow(wf, out_dir / f"{wf.name}.yaml")
        write_cluster(stream.cluster, out_dir / "cluster.yaml")
    except InputError as err:
        raise _fail(err) from None
    offered = ", ".join(f"{r} {v:.3f}" for r, v in stream.offered.items())
    tasks = sum(len(wf.tasks) for wf in stream.workflows)
    console.print(
        f"wrote {len(stream.workflows)} workflows ({tasks} tasks) and cluster.yaml to {out_dir}: "
        f"{stream.rate_per_s * 3600:.2f} arrivals per hour ({arrival}), offered load {offered}"
    )


def _register_subcommands() -> None:
    from dagsched.bench import adversarial, budget, report
    from dagsched.bench.cli import register as register_bench
    from dagsched.explain.cli import register as register_explain
    from dagsched.live.cli import register as register_live
    from dagsched.rl.priority_cli import register as register_priority
    from dagsched.service.cli import register as register_service

    register_bench(app)
    register_service(app)
    register_priority(app)
    register_explain(app)
    register_live(app)
    report.register(app)
    adversarial.register(app)
    budget.register(app)


_register_subcommands()


def main() -> None:  # pragma: no cover
    app()

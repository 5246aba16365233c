"""`dagsched run`: execute workflows for real on a Ray cluster, a registered scheduler deciding live."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from rich.table import Table

from dagsched.console import console, err_console
from dagsched.console import fail as _fail
from dagsched.model.errors import InputError

if TYPE_CHECKING:
    from dagsched.live.run import LiveResult


@contextmanager
def stdout_to_stderr(active: bool) -> Iterator[None]:
    """While active, file descriptor 1 is stderr's, so nothing Ray or its processes print reaches stdout."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM stops the run as Ctrl-C does (the running Ray tasks are cancelled, the cluster stopped)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ms(values: list[float], q: float) -> float | None:
    return float(np.quantile(values, q) * 1e3) if values else None


def register(app: Any) -> None:
    """Add `dagsched run` to a Typer app."""

    @app.command("run")  # type: ignore[untyped-decorator]
    def run_cmd(
        workflow: Annotated[
            list[Path] | None,
            typer.Option("--workflow", "-w", help="workflow file (native, WfFormat); repeat for several"),
        ] = None,
        cluster: Annotated[str | None, typer.Option("--cluster", "-c", help="cluster preset name or file")] = None,
        scheduler: Annotated[
            str | None,
            typer.Option(
                "--scheduler",
                "-s",
                help="a registered scheduler, or 'ray' (default: fair_cap_gpu_first for several workflows, heft for "
                "one)",
            ),
        ] = None,
        ray_address: Annotated[
            str, typer.Option("--ray", help="'local': start a loopback Ray cluster shaped like --cluster; or ADDRESS")
        ] = "local",
        time_scale: Annotated[
            float, typer.Option(min=1e-6, help="wall seconds per problem second (0.01: a 100 s task takes 1 s)")
        ] = 1.0,
        data_scale: Annotated[
            float, typer.Option(min=0.0, help="bytes of an emulated payload per byte of an edge's data")
        ] = 1e-4,
        noise_cv: Annotated[
            float, typer.Option(min=0.0, max=5.0, help="hidden runtime noise CV of emulated tasks")
        ] = 0.0,
        seed: int = 1,
        task_overhead_ms: Annotated[
            float | None,
            typer.Option(
                min=0.0,
                help="per-task launch and report latency the prediction adds, wall ms (default: measured by a "
                "probe of the cluster before the run; 0: none)",
            ),
        ] = None,
        store: Annotated[
            str | None, typer.Option(help="SQLAlchemy URL of the run journal (e.g. sqlite:///runs.sqlite)")
        ] = None,
        resume: Annotated[
            str | None, typer.Option(help="RUN_ID of a journalled run (--store): run only what it had not finished")
        ] = None,
        service: Annotated[
            str | None, typer.Option(help="URL of a dagsched service to record the plans and task events in")
        ] = None,
        token: Annotated[
            str | None, typer.Option(envvar="DAGSCHED_API_TOKEN", help="the service's bearer token (--service)")
        ] = None,
        record: Annotated[
            bool, typer.Option(help="with --store alone: record through a local `dagsched serve` on that store")
        ] = True,
        trace: Annotated[Path | None, typer.Option(help="write the trace (.json or .csv), on the run's times")] = None,
        gantt: Annotated[Path | None, typer.Option(help="write a Gantt chart PNG of what ran")] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print one JSON object on one line")] = False,
    ) -> None:
        """Run workflows for real on Ray: tasks launched on their nodes as the scheduler decides, live.

        Tasks with `run: {command: [...]}` run that command, `run: {python: "module:function"}` call it with their
        parents' outputs; the others are emulated (they sleep their runtime / node speed x hidden noise x
        --time-scale, and hand their children payloads of their edges' sizes x --data-scale). Prints the metrics
        of `simulate`, the simulator's prediction of the same run (predicted_makespan, predicted_completion_mean)
        and sim_real_gap (achieved / predicted - 1); the prediction adds to every task the cluster's per-task
        launch and report latency, measured by a probe before the run (or --task-overhead-ms). `-s ray` leaves
        the placement to Ray's own scheduler.
        With --store every finished attempt is journalled; Ctrl-C or SIGTERM cancels the running tasks, and
        `--resume RUN_ID` later runs only what had not finished.
        """
        from dagsched.live.cluster import join, start_local
        from dagsched.live.journal import Journal
        from dagsched.live.recorder import LocalService, ServiceRecorder
        from dagsched.live.run import RAY_BASELINE, check_payloads, resumed_tasks, run_live, run_ray_baseline
        from dagsched.schedulers import default_scheduler, make_scheduler

        journal, done_before, resumed_from = None, None, None
        try:
            if resume is not None and store is None:
                raise InputError("--resume", "give the --store the run was journalled in")
            if store is not None:
                journal = Journal(store)
            if resume is not None:
                assert journal is not None
                earlier = journal.load(resume)
                if earlier.status == "done":
                    raise InputError("--resume", f"run {resume} finished: nothing is left to run")
                a = earlier.args
                workflow = [Path(p) for p in a["workflows"]]
                cluster, scheduler, ray_address = a["cluster"], a["scheduler"], a["ray"]
                time_scale, data_scale, noise_cv, seed = a["time_scale"], a["data_scale"], a["noise_cv"], a["seed"]
                resumed_from = resume
            if not workflow:
                raise InputError("--workflow", "give at least one workflow file")
            if cluster is None:
                raise InputError("--cluster", "give the cluster the workflows run on (a preset name or a file)")
            cp = _load(workflow, cluster)
            scheduler = scheduler or default_scheduler(cp.n_workflows)
            if scheduler != RAY_BASELINE:
                make_scheduler(scheduler)
            elif resume is not None:
                raise InputError("--resume", "Ray's own scheduler runs a DAG whole: it cannot resume one")
            check_payloads(cp, data_scale)
            _check_functions(cp)
            if resume is not None:
                assert journal is not None
                before = journal.load(resume)
                done_before = resumed_tasks(cp, before.done, before.outputs)
        except InputError as err:
            raise _fail(err) from None
        args = {
            "workflows": [str(Path(p).resolve()) for p in workflow],
            "cluster": str(Path(cluster).resolve()) if Path(cluster).exists() else cluster,
            "scheduler": scheduler,
            "ray": ray_address,
            "time_scale": time_scale,
            "data_scale": data_scale,
            "noise_cv": noise_cv,
            "seed": seed,
        }
        recorder, local_service = None, None
        try:
            if service is not None:
                if not token:
                    raise InputError("--token", "the service's bearer token is needed to record events (--service)")
                recorder = ServiceRecorder(service, token, cp, None if scheduler == RAY_BASELINE else scheduler)
            elif store is not None and record:
                with stdout_to_stderr(as_json):
                    local_service = LocalService(store)
                recorder = ServiceRecorder(
                    local_service.url, local_service.token, cp, None if scheduler == RAY_BASELINE else scheduler
                )
            if recorder is not None:
                recorder.plan_all()
        except InputError as err:
            if local_service is not None:
                local_service.stop()
            raise _fail(err) from None
        run_id = journal.start(args, resumed_from) if journal is not None else None
        listeners: list[Any] = []
        if journal is not None and run_id is not None:
            listeners.append(_journal_listener(journal, run_id))
        if recorder is not None and scheduler != RAY_BASELINE:
            listeners.append(recorder)
        out: dict[str, Any] = {"scheduler": scheduler, "seed": seed, "ray": ray_address, "time_scale": time_scale}
        if run_id is not None:
            out["run_id"] = run_id
        interrupted = False
        result: LiveResult | None = None
        stack = ExitStack()
        with stdout_to_stderr(as_json), _Progress(cp, as_json) as bar:
            try:
                ray_cluster = (
                    start_local(cp.problem.cluster) if ray_address == "local" else join(ray_address, cp.problem.cluster)
                )
            except InputError as err:
                raise _fail(err) from None
            try:
                # after Ray's start-up, which installs a SIGTERM handler of its own
                stack.enter_context(sigterm_interrupts())
                bar.started()
                if scheduler == RAY_BASELINE:
                    result = run_ray_baseline(
                        cp,
                        ray_cluster,
                        seed=seed,
                        time_scale=time_scale,
                        data_scale=data_scale,
                        noise_cv=noise_cv,
                        on_progress=bar.baseline,
                    )
                else:
                    result = run_live(
                        cp,
                        scheduler,
                        ray_cluster,
                        seed=seed,
                        time_scale=time_scale,
                        data_scale=data_scale,
                        noise_cv=noise_cv,
                        on_step=bar.live,
                        listeners=listeners,
                        done_before=done_before,
                        journal_outputs=journal is not None,
                        task_overhead_s=None if task_overhead_ms is None else task_overhead_ms / 1e3,
                    )
            except KeyboardInterrupt:
                interrupted = True
            finally:
                stack.close()
                ray_cluster.stop()
                if recorder is not None:
                    if result is not None and scheduler == RAY_BASELINE:
                        recorder(_trace_events(cp, result.trace))
                    recorder.close()
                if local_service is not None:
                    local_service.stop()
        if interrupted:
            if journal is not None and run_id is not None:
                journal.finish(run_id, "interrupted")
                err_console.print(
                    f"interrupted: the running Ray tasks were cancelled and the Ray cluster stopped; "
                    f"dagsched run --resume {run_id} --store {store} runs what is left"
                )
            else:
                err_console.print("interrupted: the running Ray tasks were cancelled and the Ray cluster stopped")
            raise typer.Exit(130)
        assert result is not None
        if journal is not None and run_id is not None:
            journal.finish(run_id, "failed" if result.failures else "done")
        out |= result.metrics | {"valid": result.valid}
        if result.predicted is not None:
            guess = result.predicted
            out["predicted_makespan"] = guess["makespan"]
            out["predicted_completion_mean"] = guess["completion_mean"]
            out["sim_real_gap"] = out["makespan"] / guess["makespan"] - 1 if guess["makespan"] > 0 else None
            out["sim_real_gap_completion"] = (
                out["completion_mean"] / guess["completion_mean"] - 1 if guess["completion_mean"] > 0 else None
            )
            out["task_overhead_ms"] = result.task_overhead_s * 1e3
            out["task_overhead_from"] = "probe" if result.overhead_probe is not None else "--task-overhead-ms"
            if result.predicted_no_overhead is not None:
                out["predicted_makespan_no_overhead"] = result.predicted_no_overhead["makespan"]
                out["predicted_completion_mean_no_overhead"] = result.predicted_no_overhead["completion_mean"]
        out["wall_s"] = result.wall_s
        out["launch_ms_median"] = _ms(result.launch_latency_s, 0.5)
        out["launch_ms_p99"] = _ms(result.launch_latency_s, 0.99)
        out["dispatch_ms_median"] = _ms(result.dispatch_latency_s, 0.5)
        out["dispatch_ms_p99"] = _ms(result.dispatch_latency_s, 0.99)
        out["report_ms_median"] = _ms(result.report_latency_s, 0.5)
        out["report_ms_p99"] = _ms(result.report_latency_s, 0.99)
        if recorder is not None:
            out["plan_ids"] = dict(recorder.plan_ids)
            out["recorded_events"] = recorder.posted
            out["refused_events"] = recorder.refused[:10]
        out["failed_workflows"] = [f.__dict__ for f in result.failures]
        if trace:
            from dagsched.live.run import live_config
            from dagsched.sim.export import write_trace
            from dagsched.sim.metrics import compute_metrics

            write_trace(cp, result.trace, trace, compute_metrics(cp, result.trace, live_config(noise_cv)))
        if gantt:
            from dagsched.sim.export import write_gantt

            write_gantt(cp, result.trace, gantt)
        if as_json:
            print(json.dumps(out))
        else:
            out.pop("workflow_makespans", None)
            failures = out.pop("failed_workflows")
            table = Table(title=f"{scheduler} on Ray ({ray_address}), seed {seed}", show_header=False)
            for key, value in out.items():
                table.add_row(key, f"{value:,.4g}" if isinstance(value, float) else str(value))
            console.print(table)
            for f in failures:
                err_console.print(
                    f"[bold red]workflow {f['workflow']} failed:[/] task {f['task']} on node {f['node']}: {f['reason']}"
                )
        if not result.valid:
            err_console.print("[bold red]trace failed validation:[/] " + "; ".join(result.violations[:5]))
            raise typer.Exit(1)
        if result.failures:
            raise typer.Exit(1)


def _trace_events(cp: Any, trace: Any) -> list[tuple[str, dict[str, Any]]]:
    """A finished trace's attempts as an attempt feed's events: each start, then each end."""
    events: list[tuple[str, dict[str, Any]]] = []
    for a in trace.attempts:
        row = {
            "workflow": cp.wf_names[int(cp.task_wf[a.task])],
            "task": cp.task_ids[a.task],
            "node": cp.node_ids[a.node],
        }
        events += [
            ("started", row | {"start_s": a.start, "end_s": None}),
            (a.outcome, row | {"start_s": a.start, "end_s": a.end}),
        ]
    return events


def _journal_listener(journal: Any, run_id: str) -> Any:
    """Journal each attempt that ended, a done one with its output (starts are not journalled: a run resumes from
    what finished)."""
    from dagsched.live.run import ATTEMPT_OUTCOMES

    def listen(events: list[tuple[str, dict[str, Any]]]) -> None:
        journal.record(run_id, [row | {"outcome": kind} for kind, row in events if kind in ATTEMPT_OUTCOMES])

    return listen


def _load(workflows: list[Path], cluster: str) -> Any:
    """The compiled problem of the workflow files on the cluster (a preset name or a file)."""
    from dagsched.generate.clusters import cluster_from_spec
    from dagsched.io import read_problem
    from dagsched.model.compiled import compile_problem

    for path in workflows:
        if not Path(path).exists():
            raise InputError("--workflow", f"file not found: {path}")
    return compile_problem(read_problem(list(workflows), cluster_from_spec(cluster)))


def _check_functions(cp: Any) -> None:
    """Every `run: {python: ...}` names a function this process can import (its workers import it alike)."""
    from dagsched.live.worker import resolve_function

    for w, wf in enumerate(cp.problem.workflows):
        for i, task in enumerate(wf.tasks):
            if task.run is not None and task.run.python is not None:
                try:
                    resolve_function(task.run.python)
                except (ImportError, AttributeError, TypeError) as err:
                    where = f"workflows[{w}].tasks[{i}].run.python" if cp.n_workflows > 1 else f"tasks[{i}].run.python"
                    raise InputError(where, f"cannot load {task.run.python!r}: {err}") from None


class _Progress:
    """A Rich progress bar on stderr while the run goes: tasks done, running, ready; workflows done."""

    def __init__(self, cp: Any, quiet: bool) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.cp = cp
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} tasks"),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            disable=quiet or not sys.stderr.isatty(),
        )
        self.job: Any = None
        self._last = 0.0

    def __enter__(self) -> _Progress:
        self.bar.__enter__()
        self.job = self.bar.add_task("starting Ray", total=self.cp.n_tasks, detail="")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bar.__exit__(*exc)

    def started(self) -> None:
        self.bar.update(self.job, description="running")

    def live(self, engine: Any) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and not engine.done:
            return
        self._last = now
        s = engine.stats()
        detail = f"{s['running']} running, {s['ready']} ready, {s['workflows_done']}/{self.cp.n_workflows} workflows"
        self.bar.update(self.job, completed=s["done"], detail=detail)

    def baseline(self, done: int, running: int) -> None:
        self.bar.update(self.job, completed=done, detail=f"{running} submitted, not done")

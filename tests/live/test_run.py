"""Real runs on a local Ray cluster: commands, Python functions, an emulated stream decided live by srpt_hold,
and Ray's own scheduler; each trace, on the run's measured times, passes the validator with every task done once."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

from dagsched.generate import generate_workflow
from dagsched.io import read_problem
from dagsched.io.native import workflow_from_native
from dagsched.live.cluster import RayCluster
from dagsched.live.run import predicted, run_live, run_ray_baseline
from dagsched.model import Problem, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem

from .conftest import SMALL_CLUSTER

pytestmark = pytest.mark.xdist_group("ray")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _problem(*workflows: Workflow) -> CompiledProblem:
    return compile_problem(Problem(workflows=list(workflows), cluster=SMALL_CLUSTER))


def _done_once(cp: CompiledProblem, result) -> None:
    done = Counter(a.task for a in result.trace.attempts if a.outcome == "done")
    assert sorted(done) == list(range(cp.n_tasks))
    assert set(done.values()) == {1}


def test_commands_run_on_their_nodes_in_dependency_order(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """Each command runs once, after its parents (b reads the file a wrote); an exit task's stdout is its output."""
    write = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text(sys.argv[2])"
    copy = "import pathlib, sys; pathlib.Path(sys.argv[2]).write_text(pathlib.Path(sys.argv[1]).read_text() + '!')"
    wf = workflow_from_native(
        {
            "name": "commands",
            "tasks": [
                {"id": "a", "runtime": 1, "run": {"command": [sys.executable, "-c", write, str(tmp_path / "a"), "hi"]}},
                {
                    "id": "b",
                    "runtime": 1,
                    "dependencies": ["a"],
                    "run": {"command": [sys.executable, "-c", copy, str(tmp_path / "a"), str(tmp_path / "b")]},
                },
                {"id": "c", "runtime": 1, "dependencies": ["b"], "run": {"command": ["echo", "finished"]}},
            ],
        }
    )
    cp = _problem(wf)
    result = run_live(cp, "heft", ray_cluster, time_scale=0.1)
    assert result.valid, result.violations
    _done_once(cp, result)
    assert (tmp_path / "b").read_text() == "hi!"
    assert result.outputs == {"c": "finished\n"}
    a, b, c = sorted((a for a in result.trace.attempts), key=lambda a: a.task)
    assert a.end <= b.start and b.end <= c.start


def test_python_functions_get_their_parents_outputs(ray_cluster: RayCluster) -> None:
    """numbers -> squares, evens -> total: the exit task returns sum(x^2, 1..100) + sum(evens to 100)."""
    cp = compile_problem(read_problem([EXAMPLES / "python-steps.yaml"], SMALL_CLUSTER))
    result = run_live(cp, "fcfs", ray_cluster, time_scale=0.1)
    assert result.valid, result.violations
    _done_once(cp, result)
    assert result.outputs == {"total": 338350 + 2550}


def _stream() -> CompiledProblem:
    """Four 5-task workflows 40 s apart, 20-100 s tasks asking 1-2 cores (0.2-1 s at time scale 0.01)."""
    flows = []
    for i in range(4):
        wf = generate_workflow("layered", 5, seed=i, ccr=0.1)
        tasks = [
            t.model_copy(
                update={"cpu": 1.0 + (k + i) % 2, "mem": 1.0, "gpu": 0, "runtime": 20.0 + 16 * ((k * 7 + i) % 6)}
            )
            for k, t in enumerate(wf.tasks)
        ]
        flows.append(wf.model_copy(update={"name": f"w{i}", "submit_time": 40.0 * i, "tasks": tasks}))
    return _problem(*flows)


def test_an_emulated_stream_runs_live_under_srpt_hold(ray_cluster: RayCluster) -> None:
    """Workflows arrive on the wall clock, srpt_hold decides at each event; the run ends as the simulator
    predicted, within the launch overheads (loosely: this test shares two cores with the others; the gap on a
    quiet machine is what benchmarks/bench_live.py measures)."""
    cp = _stream()
    result = run_live(cp, "srpt_hold", ray_cluster, time_scale=0.04, noise_cv=0.2, seed=3)
    assert result.valid, result.violations
    _done_once(cp, result)
    for a in result.trace.attempts:  # no task started before its workflow arrived
        assert a.start >= float(cp.wf_submit_s[cp.task_wf[a.task]]) - 1e-9
    guess = result.predicted
    assert guess is not None
    # the prediction adds the per-task overhead a probe measured before the run (10 empty tasks per node)
    probe = result.overhead_probe
    assert probe is not None and len(probe.launch_s) == len(probe.report_s) == 3 * 10
    assert result.task_overhead_s == pytest.approx(probe.per_task_s) and 0 < result.task_overhead_s < 1.0
    overhead = result.task_overhead_s / 0.04
    assert guess["makespan"] == predicted(cp, "srpt_hold", 3, 0.2, overhead)["makespan"]
    bare = result.predicted_no_overhead
    assert bare is not None and bare["makespan"] == predicted(cp, "srpt_hold", 3, noise_cv=0.2)["makespan"]
    assert guess["makespan"] > bare["makespan"]
    assert result.metrics["makespan"] >= guess["makespan"] * 0.95
    assert result.metrics["makespan"] < guess["makespan"] * 1.5
    assert len(result.dispatch_latency_s) == cp.n_tasks


def test_rays_own_scheduler_runs_the_whole_dag(ray_cluster: RayCluster) -> None:
    """`-s ray`: every task submitted with its dependencies and resources; Ray places them; the trace is valid."""
    cp = _stream()
    result = run_ray_baseline(cp, ray_cluster, time_scale=0.02, noise_cv=0.2, seed=3)
    assert result.valid, result.violations
    _done_once(cp, result)
    assert result.metrics["makespan"] > 0


def test_a_failing_command_is_retried_then_its_workflow_fails_and_the_others_go_on(ray_cluster: RayCluster) -> None:
    bad = workflow_from_native(
        {
            "name": "bad",
            "tasks": [
                {"id": "breaks", "runtime": 1, "retries": 1, "run": {"command": ["sh", "-c", "exit 3"]}},
                {"id": "after", "runtime": 1, "dependencies": ["breaks"], "run": {"command": ["true"]}},
            ],
        }
    )
    good = workflow_from_native(
        {"name": "good", "tasks": [{"id": "echo", "runtime": 1, "run": {"command": ["echo", "ok"]}}]}
    )
    cp = _problem(bad, good)
    result = run_live(cp, "fcfs", ray_cluster, time_scale=0.1)
    assert [(f.workflow, f.task) for f in result.failures] == [("bad", "breaks")]
    assert result.failures[0].node in {n.id for n in SMALL_CLUSTER.nodes}
    assert "exited with status 3" in result.failures[0].reason
    outcomes = Counter((cp.task_name(a.task), a.outcome) for a in result.trace.attempts)
    assert outcomes == {("bad/breaks", "error"): 2, ("good/echo", "done"): 1}
    assert result.outputs == {"good/echo": "ok\n"}
    assert result.valid, result.violations


def test_a_node_lost_mid_run_its_tasks_run_again_elsewhere(ray_cluster: RayCluster) -> None:
    """The fast node's raylet is killed while tasks run on it: they fail with it, the scheduler sees it down and
    places them elsewhere, the run's listeners are told `node_down`, and the run completes with every task done once
    (this test runs last: the node stays lost)."""
    cp = _stream()
    fast = 1
    killed: list[float] = []

    def kill_fast(engine) -> None:  # type: ignore[no-untyped-def]
        if not killed and engine.n_done >= 2 and engine.running_on[fast]:
            killed.append(engine.now)
            ray_cluster.remove_node(fast)

    told: list[tuple[str, dict[str, object]]] = []
    result = run_live(cp, "heft", ray_cluster, time_scale=0.02, on_step=kill_fast, listeners=[told.extend])
    assert killed
    assert result.valid, result.violations
    _done_once(cp, result)
    failed = [a for a in result.trace.attempts if a.outcome == "failed"]
    assert failed and {a.node for a in failed} == {fast}
    assert [o.node for o in result.trace.outages] == [fast]
    outage = result.trace.outages[0].start
    assert all(a.node != fast for a in result.trace.attempts if a.start >= outage)
    # the listeners (the journal, the service's recorder) were told of the loss, once, when it happened
    assert [row for kind, row in told if kind == "node_down"] == [{"node": "fast", "at_s": outage}]


def test_local_nodes_keep_idle_workers_for_the_run(ray_cluster: RayCluster) -> None:
    """Ray's default kills a worker idle for 1 s past the node's core count, and the task that next needs one waits
    for a new Python process (1-2 s): each local raylet is started keeping idle workers for the cluster's life."""
    from dagsched.live.cluster import IDLE_WORKER_KEEP_MS

    raylets = [p.process.pid for node in ray_cluster.local.worker_nodes for p in node.all_processes["raylet"]]
    assert raylets  # the nodes left (a test before may have removed one of the module's cluster)
    for pid in raylets:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"RAY_idle_worker_killing_time_threshold_ms={IDLE_WORKER_KEEP_MS}".encode() in environ

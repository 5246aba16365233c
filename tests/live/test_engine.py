"""The engine on the wall clock with a stand-in executor (no Ray): the simulator's handlers and decision point
drive it, a failed task goes back to the scheduler until its retries are spent and then its workflow fails (the
others go on), a lost node's running tasks run again elsewhere, and a planner's fork is a plain simulator."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from dagsched.live.engine import LiveClock, LiveEngine
from dagsched.live.executor import NodeLost, TaskEnded, problem_tasks
from dagsched.live.run import live_config
from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.model.entities import Edge, TaskRun
from dagsched.schedulers import make_scheduler
from dagsched.sim.engine import Simulator
from dagsched.sim.validate import validate_trace

SCALE = 0.002  # wall seconds per problem second


@dataclass
class FakeExecutor:
    """Ends each launched task after its work at the time scale; fails the first `fails[t]` runs of task t; loses
    node `lose_node` at the first wait after problem time `lose_at` while a task runs on it."""

    cp: CompiledProblem
    fails: dict[int, int] = field(default_factory=dict)
    lose_node: int | None = None
    lose_at: float = 0.0
    tasks: list[Task] = field(init=False)
    running: dict[int, tuple[float, int, int]] = field(default_factory=dict)
    launched: list[tuple[int, int]] = field(default_factory=list)
    start: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tasks = problem_tasks(self.cp)

    def launch(self, t: int, nd: int, version: int, work_s: float, event_wall: float) -> None:
        self.running[t] = (time.monotonic() + work_s * SCALE, version, nd)
        self.launched.append((t, nd))

    def poll(self, timeout_s: float) -> list[Any]:
        deadline = time.monotonic() + min(timeout_s, 1.0)
        while True:
            now = time.monotonic()
            on_it = self.lose_node is not None and any(r[2] == self.lose_node for r in self.running.values())
            if on_it and now - self.start >= self.lose_at * SCALE:
                nd, self.lose_node = self.lose_node, None
                self.running = {t: r for t, r in self.running.items() if r[2] != nd}
                return [NodeLost(nd)]
            ended = [t for t, (end, _, _) in self.running.items() if end <= now]
            if ended:
                out = []
                for t in ended:
                    _, version, nd = self.running.pop(t)
                    failing = self.fails.get(t, 0) > 0
                    if failing:
                        self.fails[t] -= 1
                    out.append(TaskEnded(t, version, not failing, "exit status 3" if failing else "", False, {}))
                return out
            if now >= deadline:
                return []
            time.sleep(0.0005)

    def task_done(self, t: int) -> None:
        pass

    def cancel(self, t: int) -> None:
        self.running.pop(t, None)


def _problem(retries: int = 0) -> CompiledProblem:
    def chain(name: str, submit: float) -> Workflow:
        tasks = [
            Task(id="a", runtime=10, cpu=1, run=TaskRun(command=["true"]), retries=retries),
            Task(id="b", runtime=20, cpu=1),
            Task(id="c", runtime=10, cpu=1),
        ]
        return Workflow(
            name=name, tasks=tasks, edges=[Edge(src="a", dst="b"), Edge(src="b", dst="c")], submit_time=submit
        )

    nodes = [Node(id="n0", cpu=2, mem=4), Node(id="n1", cpu=2, mem=4, speed=2.0)]
    return compile_problem(Problem(workflows=[chain("w0", 0.0), chain("w1", 5.0)], cluster=Cluster(nodes=nodes)))


def _run(cp: CompiledProblem, executor: FakeExecutor, scheduler: str = "heft") -> LiveEngine:
    engine = LiveEngine(cp, live_config(), 1, executor, LiveClock(SCALE))  # type: ignore[arg-type]
    sched = make_scheduler(scheduler)
    sched.reset(cp, engine.decision_point(), 1)
    engine.run(sched)
    return engine


def test_a_live_run_completes_valid_and_its_fork_is_a_simulator() -> None:
    cp = _problem()
    executor = FakeExecutor(cp)
    engine = _run(cp, executor)
    assert engine.done and engine.n_done == cp.n_tasks
    report = validate_trace(cp, engine.trace)
    assert report.ok, report.violations
    assert type(engine.fork()) is Simulator
    # workflow w1 arrives at 5 s on the wall clock: none of its tasks began before
    assert min(a.start for a in engine.trace.attempts if cp.task_wf[a.task] == 1) >= 5.0


def test_a_failed_task_is_retried_then_its_workflow_fails_and_the_other_goes_on() -> None:
    cp = _problem(retries=1)
    w0_a = 0
    executor = FakeExecutor(cp, fails={w0_a: 2})  # two failures, one retry: w0 fails
    engine = _run(cp, executor, "fcfs")
    assert [f.workflow for f in engine.failures] == ["w0"]
    failure = engine.failures[0]
    assert failure.task == "a" and failure.node in ("n0", "n1") and "exit status 3" in failure.reason
    errors = [a for a in engine.trace.attempts if a.outcome == "error"]
    assert [a.task for a in errors] == [w0_a, w0_a]
    done = Counter(a.task for a in engine.trace.attempts if a.outcome == "done")
    assert sorted(done) == [3, 4, 5]  # w1 whole
    assert engine.n_dropped == 3


def test_one_failure_within_its_retries_is_rerun() -> None:
    cp = _problem(retries=1)
    executor = FakeExecutor(cp, fails={3: 1})
    engine = _run(cp, executor)
    assert engine.failures == []
    assert Counter(a.outcome for a in engine.trace.attempts) == {"done": 6, "error": 1}


def test_a_lost_nodes_tasks_run_again_elsewhere() -> None:
    cp = _problem()
    executor = FakeExecutor(cp, lose_node=1, lose_at=3.0)  # the fast node, while w0's first task runs on it
    engine = _run(cp, executor)
    assert engine.done and not engine.node_up[1]
    report = validate_trace(cp, engine.trace)
    assert report.ok, report.violations
    failed = [a for a in engine.trace.attempts if a.outcome == "failed"]
    assert failed and all(a.node == 1 for a in failed)
    after = [a for a in engine.trace.attempts if a.start >= engine.trace.outages[0].start]
    assert after and all(a.node == 0 for a in after)
    assert Counter(a.task for a in engine.trace.attempts if a.outcome == "done") == dict.fromkeys(range(6), 1)

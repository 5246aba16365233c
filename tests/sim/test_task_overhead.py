"""A per-task overhead (`SimConfig.task_overhead_s`, a real cluster's launch and report latency) lengthens every
attempt by exactly that much, holds the node like the work itself, and is hidden: the schedulers decide as without
it, a fork does not have it, and classic mode refuses it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.entities import Edge
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator


def _problem() -> Problem:
    """a -> b -> c (10 s each at speed 1) and a lone d (10 s), each asking the node's 2 cores."""
    tasks = [Task(id=t, runtime=10, cpu=2) for t in "abcd"]
    chain = Workflow(name="w", tasks=tasks, edges=[Edge(src="a", dst="b"), Edge(src="b", dst="c")])
    return Problem(workflows=[chain], cluster=Cluster(nodes=[Node(id="n0", cpu=2, mem=4), Node(id="n1", cpu=2, mem=4)]))


def test_every_attempt_is_longer_by_the_overhead_and_decisions_do_not_change() -> None:
    cp = compile_problem(_problem())
    bare = simulate(cp, "heft", SimConfig(), 1)
    slow = simulate(cp, "heft", SimConfig(task_overhead_s=2.0), 1)
    assert bare.metrics.makespan == pytest.approx(30.0)
    assert slow.metrics.makespan == pytest.approx(36.0)  # the chain's three tasks, 2 s each
    by_task = {a.task: a for a in slow.trace.attempts}
    assert {t: (a.node, a.end - a.start) for t, a in by_task.items()} == {
        a.task: (a.node, pytest.approx(a.end - a.start + 2.0)) for a in bare.trace.attempts
    }


def test_a_fork_predicts_without_the_overhead_and_classic_mode_refuses_it() -> None:
    cp = compile_problem(_problem())
    sim = Simulator(cp, SimConfig(task_overhead_s=2.0), 1)
    assert sim.disruptions.task_overhead_s == 2.0
    assert sim.fork().disruptions.task_overhead_s == 0.0
    with pytest.raises(ValidationError, match="task_overhead_s"):
        SimConfig(classic=True, task_overhead_s=1.0)
    with pytest.raises(ValidationError):
        SimConfig(task_overhead_s=-1.0)

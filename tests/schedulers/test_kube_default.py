"""Kubernetes default: FIFO pods, NodeResourcesFit filter, LeastAllocated + BalancedAllocation scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dagsched.model import Cluster, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.kube_default import KubeDefault


def test_score_formula() -> None:
    """Node (4 cpu, 8 GiB) left with (3, 7) free: LeastAllocated mean(75, 87.5) = 81.25; fractions used
    (0.25, 0.125), std 0.0625, BalancedAllocation 93.75; total 175."""
    assert KubeDefault.score(np.array([4.0, 8.0]), np.array([3.0, 7.0])) == pytest.approx(175.0)


def test_score_handles_missing_and_unlimited_memory() -> None:
    """No memory at all: memory is left out (75 + 100). Unlimited memory (classic mode): fraction 0,
    so a full one-slot node scores mean(0, 100) = 50 plus (1 - |1 - 0| / 2) x 100 = 50."""
    assert KubeDefault.score(np.array([4.0, 0.0]), np.array([3.0, 0.0])) == pytest.approx(175.0)
    assert KubeDefault.score(np.array([1.0, math.inf]), np.array([0.0, math.inf])) == pytest.approx(100.0)


def test_least_allocated_spreads_pods_over_identical_nodes() -> None:
    """Three 1-core pods on three identical 4-core nodes land one per node (FCFS would pack node 0)."""
    tasks = [Task(id=f"p{i}", runtime=5.0, cpu=1, mem=1) for i in range(3)]
    nodes = [Node(id=f"n{k}", cpu=4, mem=8) for k in range(3)]
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "kube_default")
    assert result.valid, result.violations
    assert sorted((a.task, a.node) for a in result.trace.attempts) == [(0, 0), (1, 1), (2, 2)]
    assert [a.node for a in simulate(cp, "fcfs").trace.attempts] == [0, 0, 0]


def test_balanced_allocation_breaks_a_least_allocated_tie() -> None:
    """Pods a (2 cpu, 0 GiB), b and c (1 cpu, 2 GiB each) on two (4, 8) nodes: a -> n0 (tie), b -> n1 (empty).
    For c, n0 would hold (3, 2) and n1 (2, 4): LeastAllocated ties at mean(25, 75) = mean(50, 50) = 50, but
    BalancedAllocation gives n0 (1 - |0.75 - 0.25| / 2) x 100 = 75 and n1 100, so c goes to n1."""
    tasks = [
        Task(id="a", runtime=5.0, cpu=2, mem=0),
        Task(id="b", runtime=5.0, cpu=1, mem=2),
        Task(id="c", runtime=5.0, cpu=1, mem=2),
    ]
    nodes = [Node(id=f"n{k}", cpu=4, mem=8) for k in range(2)]
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))
    got = {cp.task_ids[a.task]: a.node for a in simulate(cp, "kube_default").trace.attempts}
    assert got == {"a": 0, "b": 1, "c": 1}
    assert KubeDefault.score(np.array([4.0, 8.0]), np.array([1.0, 6.0])) == pytest.approx(50.0 + 75.0)
    assert KubeDefault.score(np.array([4.0, 8.0]), np.array([2.0, 4.0])) == pytest.approx(50.0 + 100.0)


def test_binds_blind_to_data_and_waits_for_it() -> None:
    """The child of p goes where the scores say, not where p's output is, and waits there for the transfer.

    At 0: long0 (1 core) -> n0 (tie), p (0.5 core) -> n1 (empty), long1 (1 core) -> n1 (it would hold 1.5
    cores against n0's 2). At 1, p ends: n0 and n1 both hold 1 core, a tie, so child goes to n0, away from
    p's output, and starts only when p's 10 bytes have crossed the 1 byte/s link, at 11.
    """
    tasks = [
        Task(id="long0", runtime=100.0, cpu=1),
        Task(id="p", runtime=1.0, cpu=0.5),
        Task(id="long1", runtime=100.0, cpu=1),
        Task(id="child", runtime=1.0, cpu=1),
    ]
    nodes = [Node(id=f"n{k}", cpu=4, mem=8, bandwidth=1.0) for k in range(2)]
    wf = Workflow(name="w", tasks=tasks, edges=[Edge(src="p", dst="child", data=10.0)])
    cp = compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "kube_default")
    assert result.valid, result.violations
    got = {cp.task_ids[a.task]: (a.node, a.start) for a in result.trace.attempts}
    assert got == {"long0": (0, 0.0), "p": (1, 0.0), "long1": (1, 0.0), "child": (0, 11.0)}

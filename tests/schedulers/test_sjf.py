"""Shortest job first: shortest predicted runtime first, each on the startable node that finishes it first."""

from __future__ import annotations

from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig


def test_shortest_first_on_the_fastest_free_node() -> None:
    """Runtimes t0 6, t1 2, t2 4 on a slow node (index 0) and a fast one (speed 2): at 0, t1 takes the fast
    node (1 s), t2 the slow one (only one left, 4 s); at 1 the fast node frees and t0 runs there (3 s)."""
    tasks = [Task(id=f"t{i}", runtime=r) for i, r in enumerate((6.0, 2.0, 4.0))]
    nodes = [Node(id="slow", cpu=1, mem=0), Node(id="fast", cpu=1, mem=0, speed=2.0)]
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "sjf", SimConfig(classic=True))
    assert result.valid, result.violations
    got = {cp.task_ids[a.task]: (cp.node_ids[a.node], a.start, a.end) for a in result.trace.attempts}
    assert got == {"t1": ("fast", 0.0, 1.0), "t2": ("slow", 0.0, 4.0), "t0": ("fast", 1.0, 4.0)}
    assert result.metrics.makespan == 4.0


def test_order_uses_the_mean_over_nodes() -> None:
    """With unrelated costs, 'shortest' is the mean over nodes: x (1, 9; mean 5) waits behind y (4, 4; mean 4)."""
    tasks = [Task(id="x", runtime=5.0, costs={"n0": 1.0, "n1": 9.0}), Task(id="y", runtime=4.0)]
    nodes = [Node(id="n0", cpu=1, mem=0), Node(id="n1", cpu=1, mem=0)]
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "sjf", SimConfig(classic=True))
    got = {cp.task_ids[a.task]: (cp.node_ids[a.node], a.start, a.end) for a in result.trace.attempts}
    # y first, on n0 (4 = 4 on n1: lowest index); then x on n1, the only free node, 9 s
    assert got == {"y": ("n0", 0.0, 4.0), "x": ("n1", 0.0, 9.0)}

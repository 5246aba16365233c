"""Round robin: tasks in index order to the next node of the cycle, the position kept across decisions."""

from __future__ import annotations

from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import simulate


def test_cycle_continues_across_decisions() -> None:
    """Four tasks at 0 on three nodes of 2 cores go to nodes 0, 1, 2, 0; two more arriving at 10 continue
    the cycle at nodes 1, 2 (not back at 0)."""
    first = Workflow(name="first", tasks=[Task(id=f"a{i}", runtime=1.0) for i in range(4)])
    second = Workflow(name="second", tasks=[Task(id=f"b{i}", runtime=1.0) for i in range(2)], submit_time=10.0)
    nodes = [Node(id=f"n{k}", cpu=2, mem=4) for k in range(3)]
    cp = compile_problem(Problem(workflows=[first, second], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "round_robin")
    assert result.valid, result.violations
    sequence = [a.node for a in sorted(result.trace.attempts, key=lambda a: (a.start, a.task))]
    assert sequence == [0, 1, 2, 0, 1, 2]


def test_skips_nodes_that_cannot_start_the_task() -> None:
    """A task too big for node 1 skips it: big0 -> n0, big1 -> n2 (n1 has 1 core), small -> n0 (next after n2)."""
    tasks = [Task(id="big0", runtime=1.0, cpu=2), Task(id="big1", runtime=1.0, cpu=2), Task(id="small", runtime=1.0)]
    nodes = [Node(id="n0", cpu=4, mem=4), Node(id="n1", cpu=1, mem=4), Node(id="n2", cpu=4, mem=4)]
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))
    result = simulate(cp, "round_robin")
    got = {cp.task_ids[a.task]: cp.node_ids[a.node] for a in result.trace.attempts}
    assert got == {"big0": "n0", "big1": "n2", "small": "n0"}

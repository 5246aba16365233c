"""Shared fixtures: the textbook example of the HEFT paper, built from dagsched.model objects."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dagsched.model import Cluster, CompiledProblem, Edge, Link, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import Scheduler, simulate
from dagsched.sim.config import SimConfig

# Topcuoglu, Hariri and Wu (IEEE TPDS 2002), Fig. 2: execution time of each task on P1, P2, P3 ...
HEFT_COSTS = {
    1: (14, 16, 9),
    2: (13, 19, 18),
    3: (11, 13, 19),
    4: (13, 8, 17),
    5: (12, 13, 10),
    6: (13, 16, 9),
    7: (7, 15, 11),
    8: (5, 11, 14),
    9: (18, 12, 20),
    10: (21, 7, 16),
}
# ... and the communication cost of each edge (data over unit bandwidth).
HEFT_EDGES = {
    (1, 2): 18,
    (1, 3): 12,
    (1, 4): 9,
    (1, 5): 11,
    (1, 6): 14,
    (2, 8): 19,
    (2, 9): 16,
    (3, 7): 23,
    (4, 8): 27,
    (4, 9): 23,
    (5, 9): 13,
    (6, 8): 15,
    (7, 10): 17,
    (8, 10): 11,
    (9, 10): 13,
}


def heft_example_problem() -> Problem:
    """10 tasks on 3 unrelated processors linked at bandwidth 1, as in the HEFT paper."""
    tasks = [
        Task(id=f"T{i}", runtime=sum(w) / 3, costs={f"P{k + 1}": float(c) for k, c in enumerate(w)})
        for i, w in HEFT_COSTS.items()
    ]
    edges = [Edge(src=f"T{a}", dst=f"T{b}", data=float(d)) for (a, b), d in HEFT_EDGES.items()]
    nodes = [Node(id=f"P{k}", cpu=1, mem=0) for k in (1, 2, 3)]
    links = [Link(a=a, b=b, bandwidth=1) for a, b in (("P1", "P2"), ("P1", "P3"), ("P2", "P3"))]
    return Problem(
        name="heft-paper",
        workflows=[Workflow(name="heft", tasks=tasks, edges=edges)],
        cluster=Cluster(nodes=nodes, links=links),
    )


@pytest.fixture(scope="session")
def heft_problem() -> Problem:
    return heft_example_problem()


@pytest.fixture(scope="session")
def heft_example() -> CompiledProblem:
    return compile_problem(heft_example_problem())


@pytest.fixture(scope="session")
def heft_example_tables() -> tuple[dict[int, tuple[int, int, int]], dict[tuple[int, int], int]]:
    """The example's raw tables (task -> cost per processor, edge -> communication cost), for independent checks."""
    return HEFT_COSTS, HEFT_EDGES


@pytest.fixture(scope="session")
def two_speed_tasks() -> CompiledProblem:
    """Independent tasks a, b, c of runtimes 3, 4, 10 on a fast node (speed 2, index 0) and a slow one (speed 1)."""
    tasks = [Task(id=name, runtime=r) for name, r in (("a", 3.0), ("b", 4.0), ("c", 10.0))]
    nodes = [Node(id="fast", cpu=1, mem=0, speed=2.0), Node(id="slow", cpu=1, mem=0, speed=1.0)]
    return compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes)))


def nodes_of(workflows: list[Workflow], nodes: list[Node], scheduler: str | Scheduler) -> dict[str, tuple[str, float]]:
    """Where and when each task of `workflows` on `nodes` starts under `scheduler` (cloud mode, no noise)."""
    cp = compile_problem(Problem(workflows=workflows, cluster=Cluster(nodes=nodes)))
    result = simulate(cp, scheduler, SimConfig())
    assert result.valid, result.violations
    return {cp.task_name(a.task): (cp.node_ids[a.node], a.start) for a in result.trace.attempts}


def _room_case(s_first: bool = False) -> list[Workflow]:
    """P: p (10 s) then c (10 s), 100 GB between them (80 s at 1.25 GB/s); F: f (100 s); S at 10: s1 (5 s). Every
    task takes one core. `s_first` lists S first, so fair's order (ties of share to the lowest workflow) serves s1
    before c."""
    p_then_c = [Task(id="p", runtime=10.0), Task(id="c", runtime=10.0)]
    p = Workflow(name="P", tasks=p_then_c, edges=[Edge(src="p", dst="c", data=1e11)])
    s = Workflow(name="S", tasks=[Task(id="s1", runtime=5.0)], submit_time=10.0)
    f = Workflow(name="F", tasks=[Task(id="f", runtime=100.0)])
    return [s, p, f] if s_first else [p, f, s]


RoomCase = Callable[..., dict[str, tuple[str, float]]]


@pytest.fixture
def room_beside_the_data() -> RoomCase:
    """`_room_case` on two 2-cpu nodes of one speed, placed by a scheduler named: task -> (node, start)."""
    nodes = [Node(id="n0", cpu=2, mem=8), Node(id="n1", cpu=2, mem=8)]
    return lambda scheduler, s_first=False: nodes_of(_room_case(s_first), nodes, scheduler)

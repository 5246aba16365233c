"""Small problems with a known optimum within reach: random DAGs of a few tasks on a few unrelated nodes.

What the exact solver (`dagsched.schedulers.exact`) is measured on, and what tests of the search planners
draw their cases from.
"""

from __future__ import annotations

import numpy as np

from dagsched.model.compiled import CompiledProblem


def small_problems(count: int, seed: int = 0, max_tasks: int = 8, max_nodes: int = 3) -> list[CompiledProblem]:
    """Random DAGs of 5 to `max_tasks` tasks on 2 to `max_nodes` unrelated nodes (classic costs)."""
    from dagsched.model import Cluster, Edge, Link, Node, Problem, Task, Workflow, compile_problem

    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n, m = int(rng.integers(5, max_tasks + 1)), int(rng.integers(2, max_nodes + 1))
        nodes = [Node(id=f"P{k}", cpu=1, mem=0) for k in range(m)]
        tasks = [
            Task(id=f"T{t}", runtime=10.0, costs={f"P{k}": float(rng.integers(2, 20)) for k in range(m)})
            for t in range(n)
        ]
        edges = [
            Edge(src=f"T{a}", dst=f"T{b}", data=float(rng.integers(0, 15)))
            for b in range(n)
            for a in range(b)
            if rng.random() < 0.35
        ]
        links = [Link(a=f"P{a}", b=f"P{b}", bandwidth=1) for a in range(m) for b in range(a + 1, m)]
        wf = Workflow(name=f"w{i}", tasks=tasks, edges=edges)
        out.append(
            compile_problem(Problem(name=f"small-{i}", workflows=[wf], cluster=Cluster(nodes=nodes, links=links)))
        )
    return out

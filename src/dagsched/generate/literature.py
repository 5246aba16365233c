"""Classic instances of the list-scheduling literature's kind: DAG shapes and unrelated-machine cost matrices.

The shapes the HEFT/CPOP/PEFT papers and their successors draw (Topcuoglu, Hariri and Wu 2002; Arabnejad and
Barbosa 2014): parallel `chain`s, `fork_join` stages, `out_tree`s and `in_tree`s, Topcuoglu's random
`layered` graphs (height sqrt(v) / alpha, out-degree 1 to 4 into the next layers) and `random` DAGs (each
pair i < j an edge with a set probability). Costs follow Topcuoglu's range-based model: a task's mean cost
w̄_i is uniform in [0, 2 w_dag], its cost on machine j uniform in [w̄_i (1 - beta/2), w̄_i (1 + beta/2)]
(beta: heterogeneity), and an edge's data uniform in [0, 2 CCR w_dag] over links of bandwidth 1, so the
communication-to-computation ratio is CCR. Classic mode reads these as they are (one task at a time per
machine, `time = cost`, `comm = data / bandwidth`).

The learned planner never trains on these shapes or this cost model: they are kept out for judging it.
"""

from __future__ import annotations

import numpy as np

from dagsched.model import Cluster, Edge, Link, Node, Problem, Task, Workflow

SHAPES = ("chain", "fork_join", "out_tree", "in_tree", "layered", "random")
W_DAG = 50.0
"""Mean task cost of a generated instance (seconds)."""


def _edges(shape: str, n: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    """Edges (parent, child) of a `shape` DAG of exactly n tasks, parents before children in index order."""
    if shape == "chain":
        k = int(rng.integers(1, 5)) if n >= 6 else 1  # parallel chains between one entry and one exit
        if k == 1:
            return [(i, i + 1) for i in range(n - 1)]
        inner = list(range(1, n - 1))
        chains = [inner[c::k] for c in range(k)]
        out = []
        for ch in chains:
            if not ch:
                continue
            out.append((0, ch[0]))
            out += [(a, b) for a, b in zip(ch, ch[1:], strict=False)]
            out.append((ch[-1], n - 1))
        return out
    if shape == "fork_join":
        width = int(rng.integers(2, max(3, min(16, n // 3) + 1)))
        out, join, t = [], 0, 1
        while t < n:
            fan = list(range(t, min(t + width, n - 1))) if n - t > 1 else []
            if not fan:
                out.append((join, t))
                break
            out += [(join, f) for f in fan]
            t = fan[-1] + 1
            out += [(f, t) for f in fan]
            join = t
            t += 1
        return [(a, b) for a, b in out if b < n]
    if shape in ("out_tree", "in_tree"):
        b = int(rng.integers(2, 5))
        pairs = [((i - 1) // b, i) for i in range(1, n)]
        if shape == "out_tree":
            return pairs
        return sorted((n - 1 - c, n - 1 - p) for p, c in pairs)
    if shape == "layered":
        alpha = float(rng.choice([0.5, 1.0, 2.0]))
        height = int(np.clip(round(np.sqrt(n) / alpha), 2, n))
        cuts = np.sort(rng.choice(np.arange(1, n), size=height - 1, replace=False))
        layers = np.split(np.arange(n), cuts)
        out = set()
        for li, layer in enumerate(layers[:-1]):
            for t in layer:
                for _ in range(int(rng.integers(1, 5))):
                    ahead = min(len(layers) - 1, li + 1 + int(rng.integers(0, 2)))
                    out.add((int(t), int(rng.choice(layers[ahead]))))
            for t in layers[li + 1]:  # every task of a later layer has a parent
                if not any(c == t for _, c in out):
                    out.add((int(rng.choice(layer)), int(t)))
        return sorted(out)
    if shape == "random":
        p = min(1.0, 3.0 / max(n - 1, 1) * 2)
        out = [(i, j) for j in range(1, n) for i in range(max(0, j - 40), j) if rng.random() < p / 2]
        have = {j for _, j in out}
        out += [(int(rng.integers(0, j)), j) for j in range(1, n) if j not in have and rng.random() < 0.7]
        return sorted(set(out))
    raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")


def literature_problem(shape: str, n_tasks: int, n_machines: int, ccr: float, beta: float, seed: int) -> Problem:
    """One instance: a `shape` DAG of `n_tasks` tasks on `n_machines` unrelated machines (heterogeneity `beta` in
    [0, 2]) at communication-to-computation ratio `ccr`."""
    if n_tasks < 2 or n_machines < 1 or ccr < 0 or not 0 <= beta <= 2:
        raise ValueError("n_tasks >= 2, n_machines >= 1, ccr >= 0 and beta in [0, 2] are required")
    rng = np.random.default_rng(seed)
    edges = _edges(shape, n_tasks, rng)
    mean_cost = rng.uniform(0.0, 2.0 * W_DAG, n_tasks)
    lo, hi = mean_cost * (1 - beta / 2), mean_cost * (1 + beta / 2)
    costs = rng.uniform(lo[:, None], hi[:, None], (n_tasks, n_machines))
    costs = np.maximum(np.round(costs, 3), 0.001)
    data = np.round(rng.uniform(0.0, 2.0 * ccr * W_DAG, len(edges)), 3)
    machines = [f"P{k}" for k in range(n_machines)]
    tasks = [
        Task(id=f"T{i}", runtime=float(costs[i].mean()), costs=dict(zip(machines, costs[i].tolist(), strict=True)))
        for i in range(n_tasks)
    ]
    wf = Workflow(
        name=f"{shape}-{n_tasks}-s{seed}",
        tasks=tasks,
        edges=[Edge(src=f"T{a}", dst=f"T{b}", data=float(d)) for (a, b), d in zip(edges, data, strict=True)],
    )
    nodes = [Node(id=p, cpu=1, mem=0) for p in machines]
    links = [
        Link(a=machines[a], b=machines[b], bandwidth=1) for a in range(n_machines) for b in range(a + 1, n_machines)
    ]
    return Problem(name=wf.name, workflows=[wf], cluster=Cluster(nodes=nodes, links=links))

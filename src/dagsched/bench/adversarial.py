"""Adversarial worst cases: simulated annealing over small problems to maximise makespan(A) / makespan(B).

This is PISA (Problem-Instance Simulated Annealing) from the SAGA project: Coleman and
Krishnamachari, "PISA: An Adversarial Approach To Comparing Task Graph Scheduling Algorithms",
arXiv 2403.07120. Averages over benchmark suites hide the instances on which a heuristic is far
worse than another; PISA searches for them directly.

The search space is the classic textbook model (one task at a time per node, exact runtimes,
time = cost / speed, transfer = data / bandwidth): 3 to 12 tasks and 2 to 4 nodes fully
connected by undirected links. A step perturbs one thing: a task's cost, a node's speed, an
edge's data size, a link's bandwidth, or adds / removes a dependency (the DAG stays acyclic).
Weights stay in (0, 1] as in PISA; lower bounds on cost, speed and bandwidth keep every
makespan positive and finite. The acceptance rule is Metropolis on the ratio: a worse ratio is
taken with probability exp(delta / T), T cooling geometrically from `t_max` to `t_min` over the
iteration budget. Everything is drawn from one seeded generator, so a run is reproducible.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from itertools import permutations
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from dagsched.console import fail
from dagsched.model.compiled import CompiledProblem, compile_problem
from dagsched.model.entities import Problem
from dagsched.model.errors import InputError

TASKS = (3, 12)
"""Inclusive range of the number of tasks of a search instance."""
NODES = (2, 4)
"""Inclusive range of the number of nodes."""
COST_MIN, SPEED_MIN, BANDWIDTH_MIN = 0.01, 0.1, 0.1
"""Lower bounds that keep execution and transfer times finite; every weight is at most 1."""
STEP = 0.1
"""Largest change of a weight in one perturbation, as in PISA."""
EDGE_PROB = 0.3
"""Density of the random initial DAG."""
SIM_SEED = 0
"""Seed of every simulation (classic mode is exact; only a randomised scheduler reads it)."""


@dataclass(frozen=True)
class Instance:
    """A classic problem as arrays: task costs, dependencies with data sizes, node speeds, link bandwidths."""

    cost: tuple[float, ...]
    edges: tuple[tuple[int, int, float], ...]  # (src, dst, data), sorted
    speed: tuple[float, ...]
    bandwidth: tuple[tuple[int, int, float], ...]  # (a, b, bandwidth) for a < b, sorted

    @property
    def n_tasks(self) -> int:
        return len(self.cost)

    @property
    def n_nodes(self) -> int:
        return len(self.speed)

    def classic_dict(self, name: str = "adversarial") -> dict[str, Any]:
        """The classic-format document (tasks, edges, machines, one undirected link per pair)."""
        return {
            "name": name,
            "tasks": [{"id": f"t{i}", "cost": c} for i, c in enumerate(self.cost)],
            "edges": [{"src": f"t{s}", "dst": f"t{d}", "data": x} for s, d, x in self.edges],
            "machines": [{"id": f"m{j}", "speed": s} for j, s in enumerate(self.speed)],
            "links": [{"a": f"m{a}", "b": f"m{b}", "bandwidth": w} for a, b, w in self.bandwidth],
        }

    def problem(self, name: str = "adversarial") -> Problem:
        """The validated Problem, built by the classic reader so that a written file reads back equal."""
        from dagsched.io.classic import problem_from_classic

        return problem_from_classic(self.classic_dict(name))

    def compiled(self) -> CompiledProblem:
        return compile_problem(self.problem())


@dataclass
class AdversarialResult:
    """The worst instance found for A against B, and how the search went."""

    a: str
    b: str
    ratio: float
    makespan_a: float
    makespan_b: float
    instance: Instance
    iterations: int
    seed: int
    best_by_iteration: list[float] = field(default_factory=list, repr=False)


def random_instance(rng: np.random.Generator) -> Instance:
    """A random start: 3-12 tasks, a DAG of density EDGE_PROB in index order, 2-4 nodes."""
    n = int(rng.integers(TASKS[0], TASKS[1] + 1))
    m = int(rng.integers(NODES[0], NODES[1] + 1))
    cost = tuple(float(x) for x in rng.uniform(COST_MIN, 1.0, n))
    edges = tuple(
        (i, j, float(rng.uniform(0.0, 1.0))) for i in range(n) for j in range(i + 1, n) if rng.random() < EDGE_PROB
    )
    speed = tuple(float(x) for x in rng.uniform(SPEED_MIN, 1.0, m))
    links = tuple((a, b, float(rng.uniform(BANDWIDTH_MIN, 1.0))) for a in range(m) for b in range(a + 1, m))
    return Instance(cost, edges, speed, links)


def _nudge(rng: np.random.Generator, value: float, low: float) -> float:
    return float(np.clip(value + rng.uniform(-STEP, STEP), low, 1.0))


def _reaches(edges: tuple[tuple[int, int, float], ...], src: int, dst: int) -> bool:
    succ: dict[int, list[int]] = {}
    for s, d, _ in edges:
        succ.setdefault(s, []).append(d)
    stack, seen = [src], {src}
    while stack:
        u = stack.pop()
        if u == dst:
            return True
        for v in succ.get(u, []):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return False


def perturb(inst: Instance, rng: np.random.Generator) -> Instance:
    """One random change (PISA's six moves); a move that cannot apply falls back to a task cost change."""
    move = int(rng.integers(6))
    if move == 1:  # node speed
        j = int(rng.integers(inst.n_nodes))
        speed = list(inst.speed)
        speed[j] = _nudge(rng, speed[j], SPEED_MIN)
        return Instance(inst.cost, inst.edges, tuple(speed), inst.bandwidth)
    if move == 2 and inst.bandwidth:  # link bandwidth
        k = int(rng.integers(len(inst.bandwidth)))
        links = list(inst.bandwidth)
        a, b, w = links[k]
        links[k] = (a, b, _nudge(rng, w, BANDWIDTH_MIN))
        return Instance(inst.cost, inst.edges, inst.speed, tuple(links))
    if move == 3 and inst.edges:  # data size
        k = int(rng.integers(len(inst.edges)))
        edges = list(inst.edges)
        s, d, x = edges[k]
        edges[k] = (s, d, _nudge(rng, x, 0.0))
        return Instance(inst.cost, tuple(edges), inst.speed, inst.bandwidth)
    if move == 4:  # add a dependency that keeps the graph acyclic
        present = {(s, d) for s, d, _ in inst.edges}
        candidates = [
            (s, d)
            for s in range(inst.n_tasks)
            for d in range(inst.n_tasks)
            if s != d and (s, d) not in present and (d, s) not in present
        ]
        rng.shuffle(candidates)
        for s, d in candidates:
            if not _reaches(inst.edges, d, s):
                grown = tuple(sorted((*inst.edges, (int(s), int(d), float(rng.uniform(0.0, 1.0))))))
                return Instance(inst.cost, grown, inst.speed, inst.bandwidth)
    if move == 5 and inst.edges:  # remove a dependency
        k = int(rng.integers(len(inst.edges)))
        return Instance(inst.cost, inst.edges[:k] + inst.edges[k + 1 :], inst.speed, inst.bandwidth)
    i = int(rng.integers(inst.n_tasks))  # move 0, or a move that could not apply: task cost
    cost = list(inst.cost)
    cost[i] = _nudge(rng, cost[i], COST_MIN)
    return Instance(tuple(cost), inst.edges, inst.speed, inst.bandwidth)


def makespan(inst: Instance | CompiledProblem, scheduler: str, validate: bool = False) -> float:
    """Classic-mode makespan of `scheduler` on the instance; with `validate`, an invalid trace raises."""
    from dagsched.schedulers import simulate
    from dagsched.sim.config import MODES

    cp = inst.compiled() if isinstance(inst, Instance) else inst
    result = simulate(cp, scheduler, MODES["classic"], SIM_SEED, validate=validate)
    if validate and not result.valid:
        raise RuntimeError(f"{scheduler} produced an invalid trace: {'; '.join(result.violations[:3])}")
    return result.metrics.makespan


def ratio(inst: Instance | CompiledProblem, a: str, b: str) -> tuple[float, float, float]:
    """(makespan(A) / makespan(B), makespan(A), makespan(B)) on one instance."""
    cp = inst.compiled() if isinstance(inst, Instance) else inst
    ma, mb = makespan(cp, a), makespan(cp, b)
    return (ma / mb if mb > 0 else math.inf), ma, mb


def worst_case(
    a: str,
    b: str,
    iterations: int = 500,
    seed: int = 0,
    t_max: float = 0.5,
    t_min: float = 0.005,
    start: Instance | None = None,
) -> AdversarialResult:
    """Simulated annealing for the instance maximising makespan(A) / makespan(B); returns the best seen.

    Temperatures are in units of the ratio: at `t_max` a step that loses 0.1 is taken 4 times in
    5, at `t_min` almost never, so the walk explores first and then climbs.
    """
    from dagsched.schedulers import make_scheduler

    make_scheduler(a), make_scheduler(b)  # unknown names fail here with the list of known ones
    if iterations < 0:
        raise InputError("iterations", f"must be >= 0, got {iterations}")
    rng = np.random.default_rng(seed)
    current = start or random_instance(rng)
    cur_ratio, ma, mb = ratio(current, a, b)
    best, best_ratio, best_ma, best_mb = current, cur_ratio, ma, mb
    history = [best_ratio]
    for it in range(iterations):
        temp = t_max * (t_min / t_max) ** (it / max(iterations - 1, 1))
        candidate = perturb(current, rng)
        new_ratio, ma, mb = ratio(candidate, a, b)
        if new_ratio >= cur_ratio or rng.random() < math.exp((new_ratio - cur_ratio) / temp):
            current, cur_ratio = candidate, new_ratio
            if new_ratio > best_ratio:
                best, best_ratio, best_ma, best_mb = candidate, new_ratio, ma, mb
        history.append(best_ratio)
    cp = best.compiled()
    makespan(cp, a, validate=True), makespan(cp, b, validate=True)
    return AdversarialResult(a, b, best_ratio, best_ma, best_mb, best, iterations, seed, history)


def pairwise_worst(names: list[str], iterations: int = 500, seed: int = 0) -> dict[tuple[str, str], float]:
    """Worst ratio makespan(A) / makespan(B) found for every ordered pair of distinct schedulers.

    Each pair searches with its own seed, `seed * 1_000_003 + k` for the k-th ordered pair, so
    pairs do not share one random walk and the whole table is reproducible from `seed`.
    """
    out: dict[tuple[str, str], float] = {}
    for k, (a, b) in enumerate(permutations(names, 2)):
        out[(a, b)] = worst_case(a, b, iterations, seed * 1_000_003 + k).ratio
    return out


def write_instance(inst: Instance, path: Path, name: str = "adversarial") -> None:
    """The instance as a classic-format file (the io writer when present, else plain JSON)."""
    path = Path(path)
    if not path.parent.exists():
        raise InputError("--out", f"folder does not exist: {path.parent}")
    try:
        from dagsched.io import write_classic
    except ImportError:  # pragma: no cover - the io package predates this module in practice
        path.write_text(json.dumps(inst.classic_dict(name), indent=1))
        return
    write_classic(inst.problem(name), path)


def register(app: typer.Typer) -> None:
    """Add `dagsched adversarial A B` to the CLI."""

    @app.command()
    def adversarial(
        a: Annotated[str, typer.Argument(help="scheduler whose makespan is maximised")],
        b: Annotated[str, typer.Argument(help="scheduler it is compared with")],
        iterations: Annotated[int, typer.Option(min=0, help="annealing steps")] = 500,
        seed: Annotated[int, typer.Option(help="seed of the search")] = 0,
        out: Annotated[Path | None, typer.Option(help="write the worst instance here (classic JSON)")] = None,
    ) -> None:
        """Search small classic problems for the worst makespan(A) / makespan(B) (PISA, arXiv 2403.07120)."""
        try:
            result = worst_case(a, b, iterations, seed)
            if out is not None:
                write_instance(result.instance, out, name=f"adversarial-{a}-vs-{b}")
        except InputError as err:
            raise fail(err) from None
        inst = result.instance
        typer.echo(
            f"worst makespan({a}) / makespan({b}) = {result.ratio:.4f} "
            f"({result.makespan_a:.4g} vs {result.makespan_b:.4g}; {inst.n_tasks} tasks, "
            f"{len(inst.edges)} edges, {inst.n_nodes} nodes; {iterations} iterations, seed {seed})"
        )
        if out is not None:
            typer.echo(f"wrote {out}")

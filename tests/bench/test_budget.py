"""The exact optimum by branch and bound, and the budget-curve table."""

from __future__ import annotations

import itertools
import math

import pytest

from dagsched.bench.budget import CLASSIC, budget_curve, markdown_table
from dagsched.generate.small import small_problems
from dagsched.model import Cluster, CompiledProblem, Edge, Link, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.exact import exact_makespan
from dagsched.schedulers.static import PlanState, StaticPlanner
from dagsched.sim.engine import Simulator
from dagsched.sim.slots import NodeTimeline


def _brute_force(cp: CompiledProblem) -> float:
    """Every topological order x every assignment, each task appended to its node's end."""
    n, m = cp.n_tasks, cp.n_nodes
    best = math.inf
    preds = [
        [(int(cp.pred_idx[k]), float(cp.pred_data[k])) for k in range(cp.pred_ptr[t], cp.pred_ptr[t + 1])]
        for t in range(n)
    ]
    for order in itertools.permutations(range(n)):
        pos = {t: i for i, t in enumerate(order)}
        if any(pos[p] > pos[t] for t in range(n) for p, _ in preds[t]):
            continue
        for assign in itertools.product(range(m), repeat=n):
            free, finish = [0.0] * m, [0.0] * n
            for t in order:
                nd = assign[t]
                ready = max(
                    [finish[p] + (0 if assign[p] == nd else d / cp.bandwidth[assign[p], nd]) for p, d in preds[t]],
                    default=0.0,
                )
                finish[t] = max(ready, free[nd]) + float(cp.exec_s[t, nd])
                free[nd] = finish[t]
            best = min(best, max(finish))
    return best


def _four_tasks() -> CompiledProblem:
    costs = {"a": (3, 5), "b": (4, 2), "c": (6, 3), "d": (2, 4)}
    tasks = [Task(id=k, runtime=5.0, costs={"P0": float(v[0]), "P1": float(v[1])}) for k, v in costs.items()]
    edges = [Edge(src="a", dst="b", data=2.0), Edge(src="a", dst="c", data=4.0), Edge(src="b", dst="d", data=1.0)]
    nodes = [Node(id="P0", cpu=1, mem=0), Node(id="P1", cpu=1, mem=0)]
    cluster = Cluster(nodes=nodes, links=[Link(a="P0", b="P1", bandwidth=1)])
    return compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks, edges=edges)], cluster=cluster))


def test_exact_equals_brute_force_on_four_tasks() -> None:
    """Branch and bound finds the same optimum as enumerating every order and assignment."""
    cp = _four_tasks()
    assert exact_makespan(cp).makespan == pytest.approx(_brute_force(cp))


class _Replay(StaticPlanner):
    name = "replay"
    plan: tuple[list[int], list[int]] = ([], [])

    def plan_tasks(self, sim: Simulator, tasks: list[int], lines: list[NodeTimeline], state: PlanState) -> None:
        order, node = self.plan
        for t in order:
            nd = node[t]
            dur = float(self.cp.exec_s[t, nd])
            self.assign(
                lines, state, t, nd, lines[nd].earliest_start(float(state.arrival_s(t)[nd]), dur, (1.0, 0.0, 0.0))
            )


@pytest.mark.parametrize("index", range(5))
def test_exact_is_achievable_and_below_every_heuristic(index: int) -> None:
    """The optimum is <= HEFT, CPOP, PEFT and min_min, and replaying its schedule in the simulator gives it."""
    cp = small_problems(5, seed=9)[index]
    result = exact_makespan(cp)
    for name in ("heft", "cpop", "peft", "min_min"):
        assert result.makespan <= simulate(cp, name, CLASSIC).metrics.makespan + 1e-9
    replay = _Replay()
    replay.plan = (result.order, result.node)
    run = simulate(cp, replay, CLASSIC)
    assert run.valid and run.metrics.makespan == pytest.approx(result.makespan)


def test_budget_curve_rows_and_table() -> None:
    """One row per (scheduler, budget) with the mean inside its bootstrap interval; the table lists them."""
    cp = small_problems(1, seed=4)[0]
    rows = budget_curve([("p", cp)], [1.0], [1, 2], CLASSIC)
    assert {r["scheduler"] for r in rows} == {"mcts_uct", "tabu"}
    for r in rows:
        assert r["n"] == 2 and r["lo"] - 1e-12 <= r["mean"] <= r["hi"] + 1e-12 and r["mean"] <= 1.0 + 1e-9
    assert "| mcts_uct | 1 |" in markdown_table(rows)

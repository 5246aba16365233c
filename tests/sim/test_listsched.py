"""The compiled list-scheduling decoder makes the Python planners' plans to the bit.

HEFT, CPOP and PEFT (and their `*_keep` variants) plan through `sim.listsched` by default; with
`compiled = False` they run their own Python loop over `sim.slots` timelines, the reference. Whole runs
must give identical traces in classic and cloud mode, with noise, failures, stragglers and migrations
(re-plans from live states), boot delays, placement rules, streams of workflows and zero-length tasks.
`decode_many` keeps the plan of least makespan and leaves its starting timelines as they were.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.small import small_problems
from dagsched.generate.streams import generate_stream
from dagsched.model import Cluster, CompiledProblem, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.ranks import upward_rank
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.static import PlanState
from dagsched.sim import listsched
from dagsched.sim.config import MODES, SimConfig
from dagsched.sim.engine import Simulator

pytestmark = pytest.mark.skipif(not listsched.AVAILABLE, reason="numba is not installed")

PLANNERS = ("heft", "cpop", "peft", "heft_keep", "peft_keep")
HARSH = SimConfig(noise_cv=0.5, mtbf_s=400.0, mttr_s=60.0, straggler_rate_per_h=20.0, overrun_factor=1.5)
BOOTING = SimConfig(noise_cv=0.2, boot_delay=True)


def _attempts(result: Any) -> list[tuple[int, int, float, float, str]]:
    return [(a.task, a.node, a.start, a.end, a.outcome) for a in result.trace.attempts]


def _same_runs(cp: CompiledProblem, name: str, config: SimConfig, seed: int) -> None:
    fast, slow = make_scheduler(name), make_scheduler(name)
    fast.compiled, slow.compiled = True, False  # type: ignore[attr-defined]
    a, b = simulate(cp, fast, config, seed), simulate(cp, slow, config, seed)
    assert a.valid, a.violations[:3]
    assert _attempts(a) == _attempts(b), f"{name}: compiled and Python plans differ"
    assert len(a.trace.decision_latency_s) == len(b.trace.decision_latency_s)


def _problem(family: str, n: int, seed: int, cluster: str, ccr: float) -> CompiledProblem:
    wf = generate_workflow(family, n, seed=seed, ccr=ccr)
    return compile_problem(Problem(workflows=[wf], cluster=cluster_preset(cluster)))


@pytest.mark.parametrize("name", PLANNERS)
@pytest.mark.parametrize(
    "config", [MODES["classic"], MODES["cloud"], HARSH, BOOTING], ids=["classic", "cloud", "harsh", "boot"]
)
def test_generated_workflows_plan_the_same(name: str, config: SimConfig) -> None:
    """Synthetic workflows of every family on a heterogeneous cluster: the same trace from both paths."""
    for family, n, seed in (("layered", 60, 1), ("etl_star", 40, 2), ("random", 50, 3), ("ml_pipeline", 30, 4)):
        _same_runs(_problem(family, n, seed, "hetero-16", 2.0), name, config, seed)


@pytest.mark.parametrize("name", ("heft", "cpop", "peft", "heft_keep"))
def test_streams_replan_the_same(name: str) -> None:
    """A bursty stream of workflows (re-planning on every arrival, or planning around the committed slots)."""
    cp = compile_problem(generate_stream(cluster_preset("hetero-16"), 8, 0.9, "bursty", seed=5).problem())
    _same_runs(cp, name, MODES["cloud"], 1)


def _with_zero_tasks(cp: CompiledProblem, seed: int) -> CompiledProblem:
    """The problem's workflow with some tasks of no duration (zero-length uses: points on the timelines)."""
    rng = np.random.default_rng(seed)
    wf = cp.problem.workflows[0]
    zero = set(rng.choice(len(wf.tasks), size=max(1, len(wf.tasks) // 4), replace=False).tolist())
    tasks = [
        t.model_copy(update={"runtime": 0.0, "costs": dict.fromkeys(t.costs, 0.0) if t.costs else None})
        if i in zero
        else t
        for i, t in enumerate(wf.tasks)
    ]
    problem = cp.problem.model_copy(update={"workflows": [wf.model_copy(update={"tasks": tasks})]})
    return compile_problem(problem)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10_000), name=st.sampled_from(("heft", "cpop", "peft")), zeros=st.booleans())
def test_small_classic_problems_plan_the_same(seed: int, name: str, zeros: bool) -> None:
    """Random small DAGs on unrelated machines (classic costs), some with zero-length tasks."""
    cp = small_problems(1, seed=seed, max_tasks=14, max_nodes=4)[0]
    if zeros:
        cp = _with_zero_tasks(cp, seed)
    for config in (MODES["classic"], MODES["cloud"]):
        _same_runs(cp, name, config, seed)


def test_cloud_zero_length_tasks_and_placement_rules() -> None:
    """Multi-core nodes with zero-length tasks that take room, and a placement matrix that forbids pairs."""
    wf = generate_workflow("layered", 40, seed=7, ccr=1.0)
    cp = _with_zero_tasks(compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16"))), 7)
    rng = np.random.default_rng(7)
    allowed = rng.random((cp.n_tasks, cp.n_nodes)) < 0.6
    allowed[np.arange(cp.n_tasks), rng.integers(0, cp.n_nodes, cp.n_tasks)] = True
    cp = cp.with_allowed(allowed)
    for name in ("heft", "cpop", "peft"):
        _same_runs(cp, name, MODES["cloud"], 3)
        _same_runs(cp, name, HARSH, 3)


def _inputs(cp: CompiledProblem, config: SimConfig) -> tuple[listsched.DecodeInputs, Any]:
    sim = Simulator(cp, config)
    sim.step()
    dp = sim.decision_point()
    heft = make_scheduler("heft")
    heft.reset(cp, dp)
    tasks = list(range(cp.n_tasks))
    return heft.decode_inputs(dp, tasks, dp.node_timelines(), PlanState(dp)), heft  # type: ignore[attr-defined]


def test_decode_many_keeps_the_best_row_and_its_start() -> None:
    """Each row is decoded from the same timelines: a row repeated gives the same makespan, and the plan kept is
    the first row of least makespan, the same as decoding that row alone."""
    cp = _problem("layered", 80, 3, "hetero-16", 5.0)
    inputs, _ = _inputs(cp, MODES["classic"])
    before = inputs.lines.seg_t.copy(), inputs.lines.nseg.copy()
    rank = upward_rank(cp)
    rng = np.random.default_rng(0)
    rows = np.vstack([rank + rng.gumbel(size=cp.n_tasks) * rank.mean() for _ in range(6)] + [rank, rank])
    out = listsched.decode_many(inputs, rows)
    assert out.spans[-1] == out.spans[-2]
    assert out.best == int(np.argmin(out.spans))
    alone = listsched.decode(inputs, rows[out.best])
    assert alone.spans[0] == out.spans[out.best]
    assert np.array_equal(alone.node, out.node) and np.array_equal(alone.start, out.start)
    assert np.array_equal(inputs.lines.nseg, before[1])
    assert np.array_equal(inputs.lines.seg_t[:, 0], before[0][:, 0])
    # every task placed once, parents before children, and each became ready before it was placed
    order = out.orders[out.best]
    assert sorted(order.tolist()) == list(range(cp.n_tasks))
    pos = np.empty(cp.n_tasks, dtype=np.int64)
    pos[order] = np.arange(cp.n_tasks)
    for t in range(cp.n_tasks):
        for p in cp.preds(t):
            assert pos[p] < pos[t]
        assert 0 <= out.ready_steps[out.best, t] <= pos[t]


def test_upward_rank_scores_reproduce_heft() -> None:
    """Scores equal to the upward rank, decoded, are HEFT's plan: the same nodes and starts as the heft
    scheduler's first plan in both modes."""
    cp = _problem("random", 120, 5, "hetero-16", 1.0)
    for config in (MODES["classic"], MODES["cloud"]):
        inputs, heft = _inputs(cp, config)
        out = listsched.decode(inputs, upward_rank(cp))
        sim = Simulator(cp, config)
        sim.step()
        ref = make_scheduler("heft")
        ref.compiled = False  # type: ignore[attr-defined]
        ref.reset(cp, sim.decision_point())
        ref.decide(sim.decision_point())
        assert np.array_equal(out.node, ref.node)  # type: ignore[attr-defined]
        assert np.array_equal(out.start, ref.planned_start)  # type: ignore[attr-defined]
        assert out.spans[0] == float(np.max(ref.planned_finish))  # type: ignore[attr-defined]


def test_a_heterogeneous_cluster_with_links() -> None:
    """Links of their own bandwidth between some nodes (the bandwidth matrix is not the nodes' minimum)."""
    nodes = [Node(id=f"n{k}", cpu=2, mem=8, speed=1.0 + k, bandwidth=1e6 * (k + 1)) for k in range(4)]
    tasks = [Task(id=f"t{i}", runtime=5.0 + i, cpu=1.0) for i in range(12)]
    edges = [Edge(src=f"t{i}", dst=f"t{j}", data=2e6 * ((i + j) % 3)) for i in range(12) for j in range(i + 1, 12)
             if (i * 7 + j) % 4 == 0]  # fmt: skip
    cluster = Cluster(nodes=nodes, links=[{"a": "n0", "b": "n3", "bandwidth": 5e7}])
    cp = compile_problem(Problem(workflows=[Workflow(name="w", tasks=tasks, edges=edges)], cluster=cluster))
    for name in ("heft", "cpop", "peft"):
        for config in (MODES["classic"], MODES["cloud"]):
            _same_runs(cp, name, config, 0)

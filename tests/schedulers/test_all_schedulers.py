"""Every registered scheduler, on random small problems: completes, validates, is reproducible.

Random DAGs of 2 to 25 tasks in one or two workflows (the second arriving later) on 1 to 5
heterogeneous nodes, in classic mode and in cloud mode with and without runtime noise,
node failures (with repair), stragglers and the overrun guard.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.model import Cluster, CompiledProblem, Edge, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import registered_names, simulate
from dagsched.sim.config import SimConfig

SCHEDULERS = registered_names()


@st.composite
def problems(draw: st.DrawFn) -> tuple[CompiledProblem, SimConfig]:
    classic = draw(st.booleans())
    nodes = [
        Node(
            id=f"n{k}",
            cpu=draw(st.sampled_from([1.0, 2.0, 4.0, 8.0])),
            mem=draw(st.sampled_from([0.0, 4.0, 16.0])),
            gpu=draw(st.integers(0, 2)),
            speed=draw(st.floats(0.5, 3.0)),
            bandwidth=draw(st.sampled_from([1e6, 1e8, 1.25e9])),
            boot_delay=0.0 if classic else draw(st.sampled_from([0.0, 0.0, 3.0])),
            price_per_hour=1.0,
        )
        for k in range(draw(st.integers(1, 5)))
    ]
    n_tasks = draw(st.integers(2, 25))
    split = draw(st.integers(1, n_tasks)) if n_tasks > 2 and draw(st.booleans()) else n_tasks
    workflows = []
    for w, (lo, hi) in enumerate([(0, split), (split, n_tasks)]):
        if hi <= lo:
            continue
        tasks = []
        for i in range(lo, hi):
            host = nodes[draw(st.integers(0, len(nodes) - 1))]  # some node must fit the request
            costs = None
            if classic and draw(st.integers(0, 3)) == 0:
                costs = {n.id: draw(st.floats(0.0, 20.0)) for n in nodes}
            tasks.append(
                Task(
                    id=f"t{i}",
                    runtime=draw(st.sampled_from([0.0, 1.0, 5.0, 20.0]) | st.floats(0.1, 20.0)),
                    cpu=draw(st.floats(0.1, host.cpu)),
                    mem=draw(st.floats(0.0, host.mem)),
                    gpu=draw(st.integers(0, host.gpu)),
                    priority=draw(st.integers(0, 2)),
                    costs=costs,
                )
            )
        edges = [
            Edge(src=f"t{a}", dst=f"t{b}", data=draw(st.sampled_from([0.0, 1e6, 1e8, 1e9])))
            for b in range(lo, hi)
            for a in range(lo, b)
            if draw(st.integers(0, 3)) == 0
        ]
        submit = 0.0 if w == 0 else draw(st.floats(0.0, 50.0))
        workflows.append(Workflow(name=f"w{w}", tasks=tasks, edges=edges, submit_time=submit))
    cluster = Cluster(nodes=nodes, latency=draw(st.sampled_from([0.0, 0.5])))
    cp = compile_problem(Problem(workflows=workflows, cluster=cluster))
    if classic:
        return cp, SimConfig(classic=True)
    failures = draw(st.booleans())
    return cp, SimConfig(
        noise_cv=draw(st.sampled_from([0.0, 0.3])),
        mtbf_s=draw(st.floats(30.0, 200.0)) if failures else None,
        mttr_s=draw(st.floats(1.0, 30.0)),
        straggler_rate_per_h=draw(st.sampled_from([0.0, 0.0, 60.0])),
        straggler_duration_s=5.0,
        overrun_factor=draw(st.sampled_from([None, None, 1.5])),
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=problems(), seed=st.integers(0, 2**16))
@pytest.mark.parametrize("name", SCHEDULERS)
def test_every_scheduler_completes_a_valid_reproducible_schedule(
    name: str, case: tuple[CompiledProblem, SimConfig], seed: int
) -> None:
    """Each task ends done exactly once, the independent validator finds nothing, the makespan is at least
    the lower bound (checked without noise: noise may make a run faster than predicted), and the same seed
    gives the same attempts."""
    cp, config = case
    result = simulate(cp, name, config, seed=seed)
    assert result.valid, result.violations[:5]
    done = Counter(a.task for a in result.trace.attempts if a.outcome == "done")
    assert sorted(done) == list(range(cp.n_tasks)) and set(done.values()) == {1}
    if config.noise_cv == 0:
        assert result.metrics.makespan >= result.metrics.lower_bound - 1e-6 * max(1.0, result.metrics.lower_bound)
    again = simulate(cp, name, config, seed=seed)
    assert again.trace.attempts == result.trace.attempts

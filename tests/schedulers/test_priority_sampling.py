"""drl (learned priorities sampled and decoded by list scheduling): never a longer plan than HEFT's, valid runs in
every mode, reproducible from its seed, and its ablations' semantics."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.literature import SHAPES, literature_problem
from dagsched.generate.small import small_problems
from dagsched.generate.streams import generate_stream
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.policy.priority_net import PriorityPolicy
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.priority_sampling import PrioritySampling, samples_for
from dagsched.sim.config import MODES, SimConfig

torch.manual_seed(0)
RANDOM_NET = PriorityPolicy(head_init=1.0).eval()
"""A network that orders tasks quite unlike HEFT: the guarantee must not depend on a good policy."""


def _problem(family: str, n: int, seed: int, cluster: str = "hetero-16", ccr: float = 2.0) -> CompiledProblem:
    return compile_problem(
        Problem(workflows=[generate_workflow(family, n, seed, ccr=ccr)], cluster=cluster_preset(cluster))
    )


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 10_000),
    shape=st.sampled_from(SHAPES),
    n=st.integers(5, 60),
    m=st.integers(2, 6),
    ccr=st.sampled_from([0.1, 1.0, 10.0]),
    k=st.sampled_from([0, 1, 8]),
)
def test_never_longer_than_heft_cpop_or_peft_in_classic_mode(
    seed: int, shape: str, n: int, m: int, ccr: float, k: int
) -> None:
    """On predicted runtimes (classic mode: the plan is the run) drl's makespan is at most HEFT's, CPOP's and
    PEFT's, whatever the network and K, and the trace is valid."""
    cp = compile_problem(literature_problem(shape, n, m, ccr, 1.0, seed))
    drl = simulate(cp, PrioritySampling(policy=RANDOM_NET, samples=k), MODES["classic"], seed)
    assert drl.valid, drl.violations[:3]
    for name in ("heft", "cpop", "peft"):
        assert drl.metrics.makespan <= simulate(cp, name, MODES["classic"]).metrics.makespan + 1e-9


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 1000), family=st.sampled_from(["layered", "etl_star", "random", "ml_pipeline"]))
def test_cloud_plan_never_longer_than_heft_without_noise(seed: int, family: str) -> None:
    """Cloud mode on predicted runtimes (no noise): the plan drl picks is at most HEFT's plan, and so is the run."""
    cp = _problem(family, 40, seed, "small-3" if family == "ml_pipeline" else "hetero-16")
    sched = PrioritySampling(policy=RANDOM_NET, samples=8)
    drl = simulate(cp, sched, SimConfig(), seed)
    heft = simulate(cp, "heft", SimConfig())
    assert drl.valid
    assert sched.last is not None
    assert sched.last.spans[sched.last.chosen] <= sched.last.spans[0]  # the candidate HEFT's plan is first
    assert drl.metrics.makespan <= heft.metrics.makespan + 1e-6


@pytest.mark.parametrize(
    "config", [MODES["classic"], MODES["cloud"], SimConfig(noise_cv=0.5, mtbf_s=400.0, mttr_s=60.0, overrun_factor=1.5)]
)
def test_valid_in_every_mode_and_reproducible(config: SimConfig) -> None:
    """Noise, failures and overrun migrations make it re-plan; every trace is valid and a seed repeats a run."""
    cp = _problem("layered", 60, 4)
    a = simulate(cp, PrioritySampling(policy=RANDOM_NET, samples=6), config, 3)
    b = simulate(cp, PrioritySampling(policy=RANDOM_NET, samples=6), config, 3)
    assert a.valid, a.violations[:3]
    assert [(x.task, x.node, x.start) for x in a.trace.attempts] == [
        (x.task, x.node, x.start) for x in b.trace.attempts
    ]


def test_a_stream_of_workflows() -> None:
    """On a shared cluster each arrival re-plans the unstarted tasks; the run is valid."""
    cp = compile_problem(generate_stream(cluster_preset("hetero-16"), 6, 0.8, "poisson", seed=2).problem())
    assert simulate(cp, PrioritySampling(policy=RANDOM_NET, samples=4), MODES["cloud"], 1).valid


def test_rank_u_greedy_is_heft_and_samples_follow_the_budget() -> None:
    """The untrained ablation without noise is HEFT's plan; K follows the budget and the cap."""
    cp = small_problems(1, seed=5, max_tasks=12, max_nodes=3)[0]
    greedy = simulate(cp, PrioritySampling(scores="rank_u", samples=0, seeds=False), MODES["classic"])
    assert greedy.metrics.makespan == simulate(cp, "heft", MODES["classic"]).metrics.makespan
    assert samples_for(1000, 100, 0.6, 10_000) == 160
    assert samples_for(20, 16, 0.6, 64) == 64
    assert samples_for(1000, 100, 0.0, 64) == 0


def test_registered_as_drl_with_the_shipped_model() -> None:
    """`drl` is this planner with the shipped priority policy."""
    sched = make_scheduler("drl")
    assert isinstance(sched, PrioritySampling) and sched.name == "drl"
    cp = small_problems(1, seed=1)[0]
    assert simulate(cp, sched, MODES["classic"], 1).valid


def test_features_do_not_depend_on_the_time_unit() -> None:
    """The same problem in milliseconds instead of seconds gives the same network input rows."""
    from dagsched.policy.priority_features import task_features

    wf = generate_workflow("random", 30, 2, ccr=1.0)
    slow = wf.model_copy(
        update={
            "tasks": [t.model_copy(update={"runtime": t.runtime * 1000}) for t in wf.tasks],
            "edges": [e.model_copy(update={"data": e.data * 1000}) for e in wf.edges],
        }
    )
    a = task_features(compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16"))), False)
    b = task_features(compile_problem(Problem(workflows=[slow], cluster=cluster_preset("hetero-16"))), False)
    assert np.allclose(a.x, b.x, atol=1e-4)

"""`sampling`, the service's default planner: drl's sampler around the upward rank, with no network. It must plan as
the untrained ablation of drl plans (the same candidates, the same plan for a seed), never longer than HEFT on
predictions, and without importing PyTorch, in the service's planning path as well."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.schedulers import make_scheduler, scheduler_class, simulate
from dagsched.schedulers.priority_sampling import PrioritySampling
from dagsched.sim.config import MODES, SimConfig


def _problem(family: str, n: int, seed: int, cluster: str = "hetero-16"):  # type: ignore[no-untyped-def]
    wf = generate_workflow(family, n, seed=seed)
    return compile_problem(Problem(workflows=[wf], cluster=cluster_preset(cluster)))


def test_sampling_is_the_untrained_ablation_of_drl() -> None:
    cp = _problem("layered", 40, seed=3)
    mine = simulate(cp, make_scheduler("sampling", samples=32), seed=5)
    ablation = simulate(cp, PrioritySampling(scores="rank_u", samples=32), seed=5)
    assert mine.valid
    assert mine.metrics.makespan == ablation.metrics.makespan
    assert [(a.task, a.node, a.start) for a in mine.trace.attempts] == [
        (a.task, a.node, a.start) for a in ablation.trace.attempts
    ]


def test_sampling_declares_no_policy_and_takes_the_service_budget() -> None:
    cls = scheduler_class("sampling")
    assert cls.needs == frozenset()
    sched = make_scheduler("sampling", service=True, policy=object())  # a policy it does not declare is not handed
    assert isinstance(sched, PrioritySampling)
    assert sched.policy is None and sched.scores_from == "rank_u"
    assert (sched.budget_s, sched.max_samples) == (0.3, 64)


@settings(max_examples=12, deadline=None)
@given(
    family=st.sampled_from(["layered", "random", "etl_star", "ml_pipeline"]),
    n=st.integers(5, 40),
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["classic", "cloud"]),
)
def test_sampling_is_never_longer_than_heft_on_predictions(family: str, n: int, seed: int, mode: str) -> None:
    """On predicted runtimes (classic mode, or cloud mode without noise) the run is the plan, and the plan chosen
    is at most HEFT's; with noise a run may fall either way, so it is not asked there."""
    cp = _problem(family, n, seed, cluster="small-3")
    config = MODES["classic"] if mode == "classic" else SimConfig()
    heft = simulate(cp, "heft", config, seed=seed)
    mine = simulate(cp, make_scheduler("sampling", samples=8), config, seed=seed)
    assert mine.valid
    assert mine.metrics.makespan <= heft.metrics.makespan * (1 + 1e-9)


PLAN_WITHOUT_TORCH = """
import sys
from dagsched.service.config import RuntimeConfig
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.models import ModelManager
from dagsched.service.planner import Planner
from dagsched.service.schemas import ScheduleRequest
import tempfile

planner = Planner(ModelManager(tempfile.mkdtemp(), 1 << 20), ServiceMetrics(), "test", 10_000)
request = ScheduleRequest.model_validate({
    "workflow": {"name": "etl", "tasks": [
        {"id": "a", "runtime": 10}, {"id": "b", "runtime": 20, "dependencies": ["a"]},
        {"id": "c", "runtime": 5, "dependencies": [{"task": "b", "data": 1e9}]}]},
    "nodes": [{"id": "n1", "cpu": 8, "mem": 32}, {"id": "n2", "cpu": 16, "mem": 64, "speed": 2.0}],
})
planned = planner.plan(request, RuntimeConfig())
print(planned.response["scheduler"], planned.response["fallback"], "torch" in sys.modules)
"""


def test_the_services_default_plans_without_importing_torch() -> None:
    out = subprocess.run([sys.executable, "-c", PLAN_WITHOUT_TORCH], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["sampling", "False", "False"]


def test_sampling_samples_around_the_upward_rank() -> None:
    cp = _problem("random", 30, seed=2)
    sched = make_scheduler("sampling", samples=0, seeds=False)
    simulate(cp, sched, seed=0)
    expected = sched.inputs.rank_u / sched.inputs.scale_s * 20.0
    assert np.allclose(sched.score, expected)

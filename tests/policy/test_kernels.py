"""The compiled feature kernels give numpy's features to the bit, on every decision of whole runs."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy import kernels
from dagsched.policy.features import FeatureBuilder
from dagsched.schedulers import simulate
from dagsched.schedulers.base import Decision, Scheduler
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import DecisionPoint

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


def _same(a: Any, b: Any) -> bool:
    """Equal to the bit: arrays by dtype, shape and bytes (so -0.0 differs from 0.0, nan equals nan)."""
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return bool(np.float64(a).tobytes() == np.float64(b).tobytes())


def _assert_same(x: Any, y: Any) -> None:
    for f in dataclasses.fields(x):
        assert _same(getattr(x, f.name), getattr(y, f.name)), f.name


class TwinFeatures(Scheduler):
    """Plays random legal pairs while a numpy and a compiled FeatureBuilder watch every decision."""

    name = "twin-features"

    def reset(self, cp: Any, view: Any, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.numpy = FeatureBuilder(cp, view.classic, 6, history_len=2, compiled=False)
        self.compiled = FeatureBuilder(cp, view.classic, 6, history_len=2, compiled=True)
        self.rng = np.random.default_rng(seed)
        self.checked = 0

    def decide(self, dp: DecisionPoint) -> Decision:
        shown = dp
        if len(dp.ready) > 1 and self.rng.random() < 0.3:  # a deferred window: some ready tasks taken out
            keep = self.rng.random(len(dp.ready)) < 0.5
            shown = dp.without(dp.ready[~keep])
        da, db = self.numpy.decision(shown), self.compiled.decision(shown)
        _assert_same(da, db)
        assert self.numpy._opened.tobytes() == self.compiled._opened.tobytes()
        self.checked += 1
        pairs = np.argwhere(dp.legal)
        if len(pairs) and (self.rng.random() < 0.8 or not dp.can_advance):
            i, nd = pairs[self.rng.integers(len(pairs))]
            return Decision([(int(dp.ready[i]), int(nd))], None)
        return Decision([], dp.wake_s if np.isfinite(dp.wake_s) else None)


def _run(family: str, n_tasks: int, preset: str, seed: int, **sim: Any) -> int:
    workflows = [generate_workflow(family, n_tasks, seed)]
    if sim.pop("two_workflows", False):  # a second workflow submitted later
        second = generate_workflow("etl_star", 12, seed + 1, name="later")
        workflows.append(second.model_copy(update={"submit_time": 40.0}))
    cp = compile_problem(Problem(workflows=workflows, cluster=cluster_preset(preset)))
    twin = TwinFeatures()
    result = simulate(cp, twin, SimConfig(**sim), seed=seed, validate=True)
    assert result.valid
    return twin.checked


@pytest.mark.parametrize(
    ("family", "n_tasks", "preset", "sim"),
    [
        ("layered", 30, "hetero-16", {}),
        ("ml_pipeline", 30, "hetero-16", {"classic": True}),
        ("etl_star", 40, "small-3", {"noise_cv": 0.4, "straggler_rate_per_h": 20.0, "mtbf_s": 300.0}),
        ("random", 30, "hetero-16", {"overrun_factor": 1.5, "noise_cv": 0.8, "two_workflows": True}),
        ("layered", 400, "large-100", {"noise_cv": 0.2}),  # pairwise sums past 128 tasks, many tasks running
    ],
)
def test_compiled_features_equal_numpy_on_every_decision(family, n_tasks, preset, sim):
    assert _run(family, n_tasks, preset, 3, **sim) > 10


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    family=st.sampled_from(["layered", "ml_pipeline", "etl_star", "random"]),
    n_tasks=st.integers(2, 60),
    preset=st.sampled_from(["small-3", "homog-8", "hetero-16"]),
    classic=st.booleans(),
    noise_cv=st.sampled_from([0.0, 0.3]),
    seed=st.integers(0, 10_000),
)
def test_compiled_features_equal_numpy_property(family, n_tasks, preset, classic, noise_cv, seed):
    if family == "ml_pipeline" and preset == "homog-8":
        return  # its training tasks need GPUs; homog-8 has none
    noise_cv = 0.0 if classic else noise_cv  # classic mode is exact
    assert _run(family, n_tasks, preset, seed, classic=classic, noise_cv=noise_cv) >= 1


def test_pairwise_sum_is_numpys_to_the_bit():
    rng = np.random.default_rng(5)
    for n in [*range(0, 300), 1000, 4099]:
        a = rng.lognormal(size=n) * rng.choice([1e-3, 1.0, 1e5], size=n)
        assert _same(np.float64(a.sum()), kernels._pairwise_sum(a, n)), n

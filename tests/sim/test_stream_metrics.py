"""Shared-cluster metrics on hand-built traces whose numbers are worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from dagsched.generate import cluster_preset
from dagsched.generate.streams import Source, generate_stream
from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
from dagsched.schedulers import simulate
from dagsched.sim.config import SimConfig
from dagsched.sim.metrics import jain_index, steady_state, stream_metrics, workflow_outcomes
from dagsched.sim.trace import Attempt, Trace


def _problem():
    """Three one-task workflows on two nodes (slow speed 1, fast speed 2, 4 cpu each).

    a: submitted 0, runtime 10, 2 cpu, tenant x, class gold, deadline 12 s after submission;
    b: submitted 5, runtime 20, 4 cpu, tenant y, class gold, deadline 30;
    c: submitted 10, runtime 8, 1 cpu, tenant y, class lead, deadline 1.
    Critical path on the fastest node: 5, 10 and 4 s.
    """
    wfs = [
        Workflow(
            name="a",
            tasks=[Task(id="t", runtime=10, cpu=2)],
            submit_time=0,
            deadline=12,
            labels={"tenant": "x", "class": "gold"},
        ),
        Workflow(
            name="b",
            tasks=[Task(id="t", runtime=20, cpu=4)],
            submit_time=5,
            deadline=30,
            labels={"tenant": "y", "class": "gold"},
        ),
        Workflow(
            name="c",
            tasks=[Task(id="t", runtime=8, cpu=1)],
            submit_time=10,
            deadline=1,
            labels={"tenant": "y", "class": "lead"},
        ),
    ]
    nodes = [Node(id="slow", cpu=4, mem=8, price_per_hour=3600), Node(id="fast", cpu=4, mem=8, speed=2.0)]
    return compile_problem(Problem(workflows=wfs, cluster=Cluster(nodes=nodes)))


def _trace() -> Trace:
    """a on fast 2-7; b fails on slow 5-6, then runs on slow 6-26; c on fast 12-16."""
    tr = Trace(scheduler="hand", seed=0, classic=False, noise_cv=0.0)
    tr.attempts += [
        Attempt(0, 1, 2.0, 7.0, "done", 5.0),
        Attempt(1, 0, 5.0, 6.0, "failed", 20.0),
        Attempt(1, 0, 6.0, 26.0, "done", 20.0),
        Attempt(2, 1, 12.0, 16.0, "done", 4.0),
    ]
    return tr


def test_per_workflow_outcomes() -> None:
    """completion = finish - submit: 7, 21, 6; slowdown over the fastest-node path 5, 10, 4: 1.4, 2.1, 1.5;
    queueing = first start (the failed attempt counts) - submit: 2, 0, 2; deadlines hit: a (7 <= 12), b (21 <= 30),
    not c (6 > 1)."""
    out = workflow_outcomes(_problem(), _trace())
    np.testing.assert_allclose(out.completion_s, [7.0, 21.0, 6.0])
    np.testing.assert_allclose(out.critical_path_s, [5.0, 10.0, 4.0])
    np.testing.assert_allclose(out.slowdown, [1.4, 2.1, 1.5])
    np.testing.assert_allclose(out.queue_s, [2.0, 0.0, 2.0])
    assert out.hit.tolist() == [True, True, False]
    assert out.tenant == ["x", "y", "y"] and out.klass == ["gold", "gold", "lead"]


def test_stream_figures_without_warmup_or_drain() -> None:
    """All three counted; window = first to last submission, [0, 10].

    completion mean 34/3, p50 7; slowdown mean 5/3; SLA 2/3, gold 1.0, lead 0.0; throughput: only a ends inside
    [0, 10], 1 per 10 s = 360/h; fairness: tenant means x 1.4, y (2.1 + 1.5)/2 = 1.8, Jain = 3.2^2 / (2 x 5.2) =
    0.98462; cpu utilisation over [0, 10]: a 2 cpu x 5 s x speed 2 = 20, b 4 x 1 x 1 (failed) + 4 x 4 x 1 = 20,
    c nothing inside: 40 / ((4 + 8) x 10) = 1/3; cost: slow node billed 5-26 s at 1 $/s = 21.
    """
    cp, tr = _problem(), _trace()
    sm = stream_metrics(cp, tr, SimConfig(), warmup=0.0, drain=0.0)
    assert sm.workflows == 3 and sm.window_s == (0.0, 10.0)
    assert sm.completion_mean == pytest.approx(34 / 3) and sm.completion_p50 == 7.0
    assert sm.completion_p95 == pytest.approx(np.percentile([7, 21, 6], 95))
    assert sm.slowdown_mean == pytest.approx(5 / 3)
    assert sm.queue_mean == pytest.approx(4 / 3) and sm.queue_p50 == 2.0
    assert sm.sla_hit_rate == pytest.approx(2 / 3)
    assert sm.sla_by_class == {"gold": 1.0, "lead": 0.0}
    assert sm.throughput_per_h == pytest.approx(360.0)
    assert sm.fairness == pytest.approx(3.2**2 / (2 * (1.4**2 + 1.8**2)))
    assert sm.utilisation["cpu"] == pytest.approx(1 / 3)
    assert sm.utilisation["mem"] == 0.0 and np.isnan(sm.utilisation["gpu"])
    assert sm.cost == pytest.approx(21.0)


def test_steady_state_drops_the_first_and_last_tenth_by_submission() -> None:
    """20 workflows submitted in reverse index order: the two submitted first and the two last are left out."""
    submit = np.arange(20, dtype=float)[::-1]
    kept = steady_state(submit, 0.1, 0.1)
    assert sorted(submit[kept].tolist()) == list(np.arange(2.0, 18.0))
    assert steady_state(np.array([3.0]), 0.1, 0.1).tolist() == [0]  # too few to trim: all count


def test_jain_index() -> None:
    """Equal values give 1; one of n takes all gives 1/n; (1, 3) gives 16 / 20."""
    assert jain_index(np.array([2.0, 2.0, 2.0])) == pytest.approx(1.0)
    assert jain_index(np.array([5.0, 0.0, 0.0, 0.0])) == pytest.approx(0.25)
    assert jain_index(np.array([1.0, 3.0])) == pytest.approx(0.8)


@pytest.mark.parametrize("load", [0.3, 0.6])
def test_measured_utilisation_matches_the_offered_load(load: float) -> None:
    """A 400-workflow stream of small workflows on homog-8 under FIFO (a stable system at these loads): the
    steady-state cpu utilisation is the target within 4 % (relative) with runtime noise CV 0.3; this is what
    `load: 0.6` promises on any cluster."""
    mix = (
        Source("etl", "synthetic", ("etl_star",), (10, 20), 0.5),
        Source("analytics", "synthetic", ("random",), (10, 20), 0.5),
    )
    stream = generate_stream(cluster_preset("homog-8"), 400, load, "poisson", seed=11, mix=mix)
    cp = compile_problem(stream.problem())
    config = SimConfig(noise_cv=0.3)
    result = simulate(cp, "fifo", config, seed=11)
    assert result.valid, result.violations[:3]
    sm = stream_metrics(cp, result.trace, config)
    assert sm.utilisation["cpu"] == pytest.approx(load, rel=0.04)
    assert sm.throughput_per_h == pytest.approx(stream.rate_per_s * 3600, rel=0.1)

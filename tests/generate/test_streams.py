"""Workflow streams: offered-load arithmetic, arrival processes, classes and deadlines, reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dagsched.generate import arrival_times, cluster_preset, generate_workflow
from dagsched.generate.streams import (
    PRIORITY_CLASSES,
    PRIORITY_STEP,
    Source,
    generate_stream,
    offered_load,
    rate_for_load,
    resource_work,
    speed_capacity,
)
from dagsched.model import Cluster, InputError, Node, Problem, Task, Workflow, compile_problem
from dagsched.model.graph import critical_path_fastest_s

SMALL_MIX = (
    Source("etl", "synthetic", ("etl_star",), (10, 20), 0.5),
    Source("analytics", "synthetic", ("random",), (10, 20), 0.5),
)


def _cluster() -> Cluster:
    """cpu capacity 4 x 1 + 4 x 2 = 12 per second at speed 1; mem 8 x 1 + 4 x 2 = 16; no GPUs."""
    return Cluster(nodes=[Node(id="slow", cpu=4, mem=8), Node(id="fast", cpu=4, mem=4, speed=2.0)])


def test_offered_load_is_work_over_speed_weighted_capacity() -> None:
    """Two workflows of cpu work 60 and 30 (mean 45) and mem work 120 and 0 (mean 60) at 0.1/s: cpu load
    0.1 x 45 / 12 = 0.375, mem 0.1 x 60 / 16 = 0.375; the rate for load 0.75 is then 0.2/s."""
    a = Workflow(name="a", tasks=[Task(id="x", runtime=30, cpu=2, mem=4)])
    b = Workflow(name="b", tasks=[Task(id="y", runtime=10, cpu=3)])
    np.testing.assert_allclose(resource_work(a), [60.0, 120.0, 0.0])
    np.testing.assert_allclose(speed_capacity(_cluster()), [12.0, 16.0, 0.0])
    assert offered_load([a, b], _cluster(), 0.1) == pytest.approx({"cpu": 0.375, "mem": 0.375, "gpu": 0.0})
    assert rate_for_load([a, b], _cluster(), 0.75) == pytest.approx(0.2)


def test_the_binding_resource_sets_the_rate() -> None:
    """Memory-heavy work binds: mem work 400 per workflow against capacity 16 gives 25 s per workflow per unit
    load, cpu only 10 / 12; load 0.5 then needs 0.5 / 25 = 0.02 workflows per second."""
    wf = Workflow(name="m", tasks=[Task(id="x", runtime=10, cpu=1, mem=40)])
    cluster = Cluster(nodes=[Node(id="slow", cpu=4, mem=48), Node(id="fast", cpu=4, mem=48, speed=2.0)])
    cap = speed_capacity(cluster)
    assert cap[1] == pytest.approx(144.0)
    rate = rate_for_load([wf], cluster, 0.5)
    assert rate == pytest.approx(0.5 * 144.0 / 400.0)
    load = offered_load([wf], cluster, rate)
    assert load["mem"] == pytest.approx(0.5) and load["cpu"] < 0.5


def test_work_a_cluster_cannot_host_is_refused() -> None:
    """GPU work on a cluster without GPUs has no rate: InputError on `mix` naming the resource."""
    wf = Workflow(name="g", tasks=[Task(id="x", runtime=10, gpu=1)])
    with pytest.raises(InputError) as err:
        rate_for_load([wf], _cluster(), 0.5)
    assert err.value.field == "mix" and "gpu" in err.value.fault


def test_stream_offers_its_target_load_and_is_reproducible() -> None:
    """The binding resource's offered load equals the target; same seed, equal stream; another seed, another."""
    cluster = cluster_preset("hetero-16")
    one = generate_stream(cluster, 40, 0.85, "bursty", seed=5, mix=SMALL_MIX)
    assert max(one.offered.values()) == pytest.approx(0.85)
    assert one.workflows == generate_stream(cluster, 40, 0.85, "bursty", seed=5, mix=SMALL_MIX).workflows
    other = generate_stream(cluster, 40, 0.85, "bursty", seed=6, mix=SMALL_MIX)
    assert [w.submit_time for w in other.workflows] != [w.submit_time for w in one.workflows]
    submit = [w.submit_time for w in one.workflows]
    assert submit[0] == 0.0 and all(a < b for a, b in zip(submit, submit[1:], strict=False))
    assert len({w.name for w in one.workflows}) == 40


def test_classes_set_priorities_and_deadlines() -> None:
    """Each workflow's tasks are raised by 10 x its class rank, and its deadline is the class slack times its
    critical path on the fastest host of each task (computed here on the workflow alone)."""
    cluster = cluster_preset("hetero-16")
    stream = generate_stream(cluster, 30, 0.6, "poisson", seed=2, mix=SMALL_MIX)
    by_name = {c.name: c for c in PRIORITY_CLASSES}
    seen = set()
    for wf in stream.workflows:
        klass = by_name[wf.labels["class"]]
        seen.add(klass.name)
        assert all(t.priority // PRIORITY_STEP == klass.rank for t in wf.tasks)
        alone = compile_problem(Problem(workflows=[wf.model_copy(update={"submit_time": 0.0})], cluster=cluster))
        assert wf.deadline == pytest.approx(klass.slack * float(critical_path_fastest_s(alone)[0]))
        assert wf.labels["tenant"] in ("etl", "analytics")
    assert seen == {"high", "standard", "batch"}


def test_sources_that_cannot_run_are_left_out() -> None:
    """homog-8 has no GPUs: the ML tenant of the synthetic mix drops out and the others share its weight."""
    stream = generate_stream(cluster_preset("homog-8"), 60, 0.5, seed=1, mix="synthetic")
    tenants = {w.labels["tenant"] for w in stream.workflows}
    assert "ml" not in tenants and {"etl", "analytics", "science"} <= tenants
    assert stream.offered["gpu"] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"load": 0.0}, "load"),
        ({"load": math.nan}, "load"),
        ({"arrival": "weekly"}, "arrival"),
        ({"mix": "nope"}, "mix"),
        ({"n_workflows": 0}, "workflows"),
    ],
)
def test_bad_stream_arguments_name_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"n_workflows": 5, "load": 0.5, "arrival": "poisson", "mix": SMALL_MIX}
    args.update(kwargs)
    with pytest.raises(InputError) as err:
        generate_stream(cluster_preset("hetero-16"), **args)  # type: ignore[arg-type]
    assert err.value.field == field


def _window_counts(times: np.ndarray, width: float) -> np.ndarray:
    return np.bincount((times // width).astype(np.int64))[:-1]  # the last window is cut short


def test_poisson_and_bursty_keep_the_mean_rate_and_bursty_is_burstier() -> None:
    """20,000 arrivals at 0.5/s: both average 0.5/s within 3 %; counts per 100 s window have variance/mean
    near 1 for Poisson and well above (over 3) for the MMPP-2."""
    n, rate = 20_000, 0.5
    poisson = arrival_times("poisson", n, rate, np.random.default_rng(1))
    bursty = arrival_times("bursty", n, rate, np.random.default_rng(1))
    for times in (poisson, bursty):
        assert (n - 1) / times[-1] == pytest.approx(rate, rel=0.03)
        assert np.all(np.diff(times) > 0)
    dispersion = {}
    for name, times in (("poisson", poisson), ("bursty", bursty)):
        counts = _window_counts(times, 100.0)
        dispersion[name] = counts.var() / counts.mean()
    assert dispersion["poisson"] == pytest.approx(1.0, abs=0.15)
    assert dispersion["bursty"] > 3.0


def test_diurnal_rate_follows_the_day() -> None:
    """Amplitude 0.6 over a 1,000 s period: arrivals in the peak quarter outnumber the trough quarter's about
    (1 + 0.6 x 0.9) / (1 - 0.6 x 0.9) = 3.3 times (0.9: the sine's mean over a quarter around its extreme)."""
    times = arrival_times("diurnal", 40_000, 1.0, np.random.default_rng(3), amplitude=0.6, period_s=1000.0)
    phase = (times % 1000.0) / 1000.0
    peak = np.count_nonzero((phase > 0.125) & (phase < 0.375))
    trough = np.count_nonzero((phase > 0.625) & (phase < 0.875))
    assert peak / trough == pytest.approx((1 + 0.6 * 0.9003) / (1 - 0.6 * 0.9003), rel=0.08)
    assert (len(times) - 1) / times[-1] == pytest.approx(1.0, rel=0.05)


def test_real_traces_and_recipes_join_the_default_mix() -> None:
    """The default mix draws real traces (at most 350 tasks) and WfChef recipes too."""
    stream = generate_stream(cluster_preset("hetero-16"), 80, 0.6, seed=4)
    sources = {w.labels["source"] for w in stream.workflows}
    assert sources == {"synthetic", "recipe", "trace"}
    assert all(len(w.tasks) <= 350 for w in stream.workflows if w.labels["source"] == "trace")
    assert generate_workflow("etl_star", 10, 0).tasks[0].priority < PRIORITY_STEP  # own priorities are 0-3

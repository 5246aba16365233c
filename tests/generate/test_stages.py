"""The stage-structured analytics family: stages of identical tasks, barriers between stages, exact size, seeded."""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dagsched.generate import ALL_FAMILIES, FAMILIES, cluster_preset, generate_workflow
from dagsched.generate.stages import MAX_STAGE_TASKS, MAX_TASKS, TAIL_CAP, TPCH_STAGES, split_sizes, stage_dag
from dagsched.generate.streams import generate_stream
from dagsched.model import InputError, Problem, Workflow

PROPERTY = settings(max_examples=40, deadline=None)
sizes = st.integers(min_value=3, max_value=1200)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def stages_of(wf: Workflow) -> dict[int, list[str]]:
    """Task ids per stage (barriers apart), read off the ids `s<k>_t<j>`."""
    out: dict[int, list[str]] = defaultdict(list)
    for t in wf.tasks:
        if t.labels["kind"] != "barrier":
            out[int(t.id[1:3])].append(t.id)
    return dict(out)


@PROPERTY
@given(n_tasks=sizes, seed=seeds)
@example(n_tasks=802, seed=1925673443)  # 4 stages drawn, one barrier: 801 tasks for 4 x 200 of room
def test_stage_shape_invariants(n_tasks: int, seed: int) -> None:
    """Exactly n_tasks tasks in a connected DAG of 2-20 stages of 1-200 tasks; a stage's tasks share requests and
    priority; a stage with parents has one barrier that every task of its parent stages precedes and that precedes
    every task of the stage, and nothing else links stages; one sink stage; barriers take no room and carry in no
    data."""
    wf = generate_workflow("stages", n_tasks, seed)
    assert len(wf.tasks) == n_tasks and wf.labels["family"] == "stages"
    g = nx.DiGraph()
    g.add_nodes_from(t.id for t in wf.tasks)
    g.add_edges_from((e.src, e.dst) for e in wf.edges)
    assert nx.is_directed_acyclic_graph(g) and nx.is_weakly_connected(g)
    by_id = {t.id: t for t in wf.tasks}
    stages = stages_of(wf)
    assert 2 <= len(stages) <= 20 and len(stages) == int(wf.labels["stages"])
    assert all(1 <= len(ids) <= MAX_STAGE_TASKS for ids in stages.values())
    assert sum(len(ids) for ids in stages.values()) + sum(1 for t in wf.tasks if t.labels["kind"] == "barrier") == (
        n_tasks
    )
    for k, ids in stages.items():
        assert len({(by_id[i].cpu, by_id[i].mem, by_id[i].gpu) for i in ids}) == 1
        assert by_id[ids[0]].cpu in (1.0, 2.0) and 0.5 <= by_id[ids[0]].mem <= 8.0 and by_id[ids[0]].gpu == 0
        preds = {p for i in ids for p in g.predecessors(i)}
        barrier = f"s{k:02d}_barrier"
        if barrier in by_id:
            assert preds == {barrier} and set(g.successors(barrier)) == set(ids)
            parent_tasks = set(g.predecessors(barrier))
            parent_stages = {int(p[1:3]) for p in parent_tasks}
            assert parent_stages and all(p < k for p in parent_stages)
            assert parent_tasks == {i for p in parent_stages for i in stages[p]}
            b = by_id[barrier]
            assert b.cpu == 0 and b.mem == 0 and b.runtime == pytest.approx(0.001)
        else:
            assert not preds and by_id[ids[0]].labels["kind"] == "scan"
    into_barrier = [e for e in wf.edges if by_id[e.dst].labels["kind"] == "barrier"]
    assert all(e.data == 0 for e in into_barrier)
    sinks = {int(i[1:3]) for i in g.nodes if g.out_degree(i) == 0}
    assert sinks == {max(stages)}


@PROPERTY
@given(n_tasks=sizes, seed=seeds)
def test_reproducible_from_the_seed(n_tasks: int, seed: int) -> None:
    """The same size and seed give an equal job; the next seed another."""
    wf = generate_workflow("stages", n_tasks, seed)
    assert generate_workflow("stages", n_tasks, seed) == wf
    assert generate_workflow("stages", n_tasks, seed + 1) != wf


def test_task_times_are_heavy_tailed_within_a_stage() -> None:
    """Within a stage the longest task is several times the median (Pareto tail of shape 2, capped at 20 x), and
    pooled over stages the 99th percentile of time over the stage median is near the Pareto's 7.07."""
    ratios = []
    for seed in range(30):
        wf = generate_workflow("stages", 400, seed)
        by_id = {t.id: t for t in wf.tasks}
        for ids in stages_of(wf).values():
            rt = np.array([by_id[i].runtime for i in ids])
            if len(rt) >= 20:
                ratios += list(rt / np.median(rt))
    r = np.array(ratios)
    assert len(r) > 3000
    assert r.max() <= TAIL_CAP * 1.2  # the median of a stage's sample is near, not at, its true median
    # Pareto(2) over its median: P(X > x) = 0.5 / x**2, so the 99th percentile is sqrt(50) = 7.07
    assert 5.5 < np.quantile(r, 0.99) < 9.0
    assert 0.9 < np.median(r) < 1.1


def test_stage_counts_follow_the_tpch_queries() -> None:
    """Large jobs draw their stage count from the 22 TPC-H queries' (2-18), so its mean is theirs."""
    counts = [int(generate_workflow("stages", 1000, seed).labels["stages"]) for seed in range(200)]
    assert min(counts) >= 5  # 1,000 tasks need at least ceil(1001 / 201) = 5 stages of 200
    small = [int(generate_workflow("stages", 200, seed).labels["stages"]) for seed in range(300)]
    assert set(small) <= set(TPCH_STAGES)
    assert np.mean(small) == pytest.approx(np.mean(TPCH_STAGES), abs=1.0)


def test_split_sizes_and_stage_dag() -> None:
    """split_sizes gives exactly the total, every part 1..cap, larger weights larger parts; every stage of a join
    tree but the last feeds a later one within three, and the last feeds none."""
    sizes = split_sizes(500, np.array([1.0, 1.0, 8.0]), 200)
    assert sizes.sum() == 500 and sizes.tolist() == [150, 150, 200]
    assert split_sizes(3, np.array([5.0, 1.0, 1.0]), 200).tolist() == [1, 1, 1]
    assert split_sizes(600, np.ones(3), 200).tolist() == [200, 200, 200]
    with pytest.raises(ValueError, match="cannot split 801 tasks over 4 stages"):
        split_sizes(801, np.ones(4), 200)  # more than 4 x 200: it looped for ever
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(2, 21))
        parents = stage_dag(n, rng)
        fed = {p for ps in parents for p in ps}
        assert fed == set(range(n - 1))
        assert all(k - 3 <= p < k for k, ps in enumerate(parents) for p in ps)


@pytest.mark.parametrize("n_tasks", [402, 602, 802, 1002, 2002, 3802, MAX_TASKS - 1, MAX_TASKS])
def test_a_job_of_any_size_fits_its_stages_whatever_its_join_tree(n_tasks: int) -> None:
    """Just past k x 200 tasks, a join tree with few barriers leaves more tasks than k stages hold: the stage count
    makes room for all but one barrier, so every seed builds its job (this one drew too few stages and looped)."""
    for seed in range(20):
        wf = generate_workflow("stages", n_tasks, seed)
        assert len(wf.tasks) == n_tasks
        assert all(1 <= len(ids) <= MAX_STAGE_TASKS for ids in stages_of(wf).values())


@pytest.mark.parametrize(("n_tasks", "fault"), [(2, "3 to"), (MAX_TASKS + 1, "3 to")])
def test_bad_size_names_the_field(n_tasks: int, fault: str) -> None:
    """A job too small for two stages and a barrier, or larger than 20 stages of 200, is refused naming n_tasks."""
    with pytest.raises(InputError, match="n_tasks") as err:
        generate_workflow("stages", n_tasks, 0)
    assert fault in str(err.value)


def test_the_family_is_generated_but_not_in_the_standard_grid() -> None:
    """`stages` is in ALL_FAMILIES (what generate_workflow builds), not in FAMILIES (the standard suite's grid)."""
    assert "stages" in ALL_FAMILIES and "stages" not in FAMILIES
    with pytest.raises(InputError, match="stages"):  # the unknown-family message lists it
        generate_workflow("nope", 10, 0)


def test_a_stream_of_analytics_jobs_alone_on_homog8() -> None:
    """The `stages` mix: every workflow is a stages job, the CPUs bind at the target load, and it fits homog-8."""
    stream = generate_stream(cluster_preset("homog-8"), 30, 0.85, "poisson", seed=4, mix="stages")
    assert all(wf.labels["family"] == "stages" for wf in stream.workflows)
    assert {wf.labels["tenant"] for wf in stream.workflows} == {"analytics"}
    assert stream.offered["cpu"] == pytest.approx(0.85)
    Problem(workflows=stream.workflows, cluster=stream.cluster)
    again = generate_stream(cluster_preset("homog-8"), 30, 0.85, "poisson", seed=4, mix="stages")
    assert [w.name for w in again.workflows] == [w.name for w in stream.workflows]

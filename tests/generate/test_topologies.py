"""Synthetic families: exact task count, acyclic, reproducible per seed, and each family's shape."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.generate import FAMILIES, SCALES, cluster_preset, generate_workflow
from dagsched.model import InputError, Problem, Workflow, compile_problem
from dagsched.model.graph import critical_path_s

PROPERTY = settings(max_examples=40, deadline=None)
families = st.sampled_from(FAMILIES)
sizes = st.integers(min_value=2, max_value=300)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def to_nx(wf: Workflow) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from((t.id, {"runtime": t.runtime}) for t in wf.tasks)
    g.add_edges_from((e.src, e.dst) for e in wf.edges)
    return g


@PROPERTY
@given(family=families, n_tasks=sizes, seed=seeds)
def test_exact_size_and_acyclic(family: str, n_tasks: int, seed: int) -> None:
    """Every family gives exactly n_tasks tasks, a DAG by the model's validation and by networkx."""
    wf = generate_workflow(family, n_tasks, seed)
    assert len(wf.tasks) == n_tasks
    again = Workflow.model_validate(wf.model_dump())  # the model re-checks ids, edges and cycles
    assert again == wf
    g = to_nx(wf)
    assert g.number_of_nodes() == n_tasks
    assert g.number_of_edges() == len(wf.edges) >= 1
    assert nx.is_directed_acyclic_graph(g)
    assert nx.is_weakly_connected(g) or family == "random"


@PROPERTY
@given(family=families, n_tasks=sizes, seed=seeds)
def test_same_seed_same_workflow_other_seed_differs(family: str, n_tasks: int, seed: int) -> None:
    """Same arguments and seed give an equal Workflow; the next seed gives a different one."""
    wf = generate_workflow(family, n_tasks, seed)
    assert generate_workflow(family, n_tasks, seed) == wf
    assert generate_workflow(family, n_tasks, seed + 1) != wf
    assert wf.name == f"{family}-{n_tasks}-s{seed}"


@PROPERTY
@given(family=families, n_tasks=sizes, seed=seeds)
def test_requests_are_in_range_and_critical_path_is_flagged(family: str, n_tasks: int, seed: int) -> None:
    """cpu in {1,2,4,8}, mem in 0.5..32 GiB, priority 0..3; a longest path is flagged critical with priority 3."""
    wf = generate_workflow(family, n_tasks, seed)
    assert {t.cpu for t in wf.tasks} <= {1.0, 2.0, 4.0, 8.0}
    assert all(0.5 <= t.mem <= 32.0 and t.mem * 2 == int(t.mem * 2) for t in wf.tasks)
    assert all(0 <= t.priority <= 3 and t.runtime > 0 for t in wf.tasks)
    g = to_nx(wf)
    g.add_edges_from(("START", t.id) for t in wf.tasks)  # so the first task's runtime counts too
    for u, v in g.edges:
        g.edges[u, v]["w"] = g.nodes[v]["runtime"]
    path = nx.dag_longest_path(g, weight="w")[1:]
    length_s = sum(g.nodes[t]["runtime"] for t in path)
    critical = {t.id for t in wf.tasks if t.critical}
    assert set(path) <= critical
    assert all(t.priority == 3 for t in wf.tasks if t.critical)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset("small-3")))
    assert critical_path_s(cp)[0] == pytest.approx(length_s)


@pytest.mark.parametrize("n_tasks", SCALES)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_scale_fits_the_gpu_presets(family: str, n_tasks: int) -> None:
    """At every listed scale each family has the exact size and fits small-3, hetero-16 and large-100."""
    wf = generate_workflow(family, n_tasks, 11)
    assert len(wf.tasks) == n_tasks
    for preset in ("small-3", "hetero-16", "large-100"):
        Problem(workflows=[wf], cluster=cluster_preset(preset))


def test_layered_widens_then_aggregates_into_a_chain() -> None:
    """Layered: layers of non-decreasing width, all of the last layer into concat, then bgmodel -> add -> shrink."""
    wf = generate_workflow("layered", 200, 1)
    g = to_nx(wf)
    kinds = [t.labels["kind"] for t in wf.tasks]
    widths = [kinds.count(k) for k in dict.fromkeys(kinds) if kinds.count(k) > 1]
    assert len(widths) >= 3 and widths == sorted(widths)
    assert [t.id for t in wf.tasks[-4:]] == ["concat", "bgmodel", "add", "shrink"]
    last_layer = [t.id for t in wf.tasks if t.labels["kind"] == kinds[-5]]
    assert set(g.predecessors("concat")) == set(last_layer)
    assert list(g.successors("concat")) == ["bgmodel"] and list(g.successors("add")) == ["shrink"]
    assert [t for t in g if g.out_degree(t) == 0] == ["shrink"]


def test_ml_pipeline_is_a_chain_with_checkpoint_and_eval_branches() -> None:
    """ml_pipeline: train_i -> train_i+1 chain, train_i -> ckpt_i -> eval_i, only training asks for GPUs."""
    wf = generate_workflow("ml_pipeline", 50, 2)
    g = to_nx(wf)
    assert [t.id for t in wf.tasks[:4]] == ["ingest", "validate", "preprocess", "features"]
    assert g.has_edge("features", "train_1") and g.has_edge("train_1", "train_2")
    assert g.has_edge("train_1", "ckpt_1") and g.has_edge("ckpt_1", "eval_1")
    assert g.out_degree("eval_1") == 0 and g.out_degree("ckpt_1") == 1
    assert list(g.successors("test")) == ["register"]
    for t in wf.tasks:
        if t.labels["kind"] == "train":
            assert t.gpu in (1, 2) and t.mem >= 16 and t.cpu in (4.0, 8.0) and t.critical
        else:
            assert t.gpu == 0
    assert len([t for t in wf.tasks if t.gpu]) == 15  # 44 mid tasks: 14 epochs of 3, then train_15, ckpt_15


def test_etl_star_joins_all_sources_then_fans_out() -> None:
    """etl_star: one join with every extract as parent and every load as child, nothing else."""
    wf = generate_workflow("etl_star", 100, 3)
    g = to_nx(wf)
    extracts = [t.id for t in wf.tasks if t.id.startswith("extract_")]
    loads = [t.id for t in wf.tasks if t.id.startswith("load_")]
    assert len(extracts) + len(loads) == 99 and 49 <= len(extracts) <= 70
    assert set(g.predecessors("join")) == set(extracts) and set(g.successors("join")) == set(loads)
    assert g.number_of_edges() == 99


def test_random_density_controls_edges() -> None:
    """random: density 0 gives exactly one parent per non-entry task; higher density, more edges."""
    sparse = generate_workflow("random", 200, 4, density=0.0)
    g = to_nx(sparse)
    entries = [t for t in g if g.in_degree(t) == 0]
    assert all(g.in_degree(t) == 1 for t in g if t not in entries)
    assert sparse.tasks[0].id == "t0000" and sparse.tasks[-1].id == "t0199"
    mean_edges = {
        d: np.mean([len(generate_workflow("random", 200, s, density=d).edges) for s in range(5)]) for d in (0.1, 0.6)
    }
    assert mean_edges[0.6] > 3 * mean_edges[0.1]


def test_runtime_dist_by_name_and_default_label() -> None:
    """runtime_dist may be a name; the workflow labels record family, seed and distribution."""
    wf = generate_workflow("etl_star", 20, 5, runtime_dist="gamma", name="etl")
    assert wf.name == "etl"
    assert wf.labels == {"family": "etl_star", "seed": "5", "ccr": "0.5", "runtime_dist": "gamma"}
    assert generate_workflow("etl_star", 20, 5).labels["runtime_dist"] == "weibull"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"family": "tree"}, "family"),
        ({"n_tasks": 1}, "n_tasks"),
        ({"seed": -1}, "seed"),
        ({"ccr": -0.1}, "ccr"),
        ({"density": 1.5}, "density"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"runtime_dist": "pareto"}, "runtime_dist"),
    ],
)
def test_bad_arguments_name_the_field(kwargs: dict[str, object], field: str) -> None:
    """Each bad argument raises InputError whose field is that argument."""
    args: dict[str, object] = {"family": "random", "n_tasks": 10, "seed": 0} | kwargs
    with pytest.raises(InputError) as err:
        generate_workflow(**args)  # type: ignore[arg-type]
    assert err.value.field == field
    if field == "n_tasks":
        assert "at least 2 tasks, got 1" in str(err.value)

"""The vocabulary and its validation: every refusal names the field and the fault, a valid problem compiles
to arrays that say the same thing, and the graph helpers agree with a hand count."""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.model import InputError, Problem, Workflow, compile_problem, parse
from dagsched.model.entities import Cluster, find_cycle
from dagsched.model.graph import critical_path_fastest_s, fastest_exec_s, levels

GPU_NODE = {"id": "g", "cpu": 2, "mem": 1, "gpu": 1}
NODES = [{"id": "fast", "cpu": 4, "mem": 8, "speed": 2.0}, {"id": "slow", "cpu": 8, "mem": 32}]


def _problem(tasks: list[dict[str, Any]], edges: list[dict[str, Any]] | None = None, nodes: Any = None) -> Any:
    return {
        "workflows": [{"name": "wf", "tasks": tasks, "edges": edges or []}],
        "cluster": {"nodes": NODES if nodes is None else nodes},
    }


A, B = {"id": "a", "runtime": 2.0}, {"id": "b", "runtime": 4.0}


@pytest.mark.parametrize(
    ("data", "field", "fault"),
    [
        (_problem([]), "workflows[0].tasks", "is empty"),
        (_problem([A, {"id": "a", "runtime": 1}]), "workflows[0].tasks[1].id", "duplicate task id 'a'"),
        (_problem([{"id": "", "runtime": 1}]), "workflows[0].tasks[0].id", "at least 1 character"),
        (_problem([{"id": "a"}]), "workflows[0].tasks[0].runtime", "Field required"),
        (_problem([{"id": "a", "runtime": -1}]), "workflows[0].tasks[0].runtime", "greater than or equal to 0"),
        (_problem([{"id": "a", "runtime": math.nan}]), "workflows[0].tasks[0].runtime", "finite"),
        (_problem([{"id": "a", "runtime": math.inf}]), "workflows[0].tasks[0].runtime", "finite"),
        (_problem([{"id": "a", "runtime": "x"}]), "workflows[0].tasks[0].runtime", "valid number"),
        (_problem([{"id": "a", "runtime": 1, "colour": 1}]), "workflows[0].tasks[0].colour", "unknown field"),
        (_problem([A, B], [{"src": "a", "dst": "zz"}]), "workflows[0].edges[0]", "'zz'"),
        (_problem([A, B], [{"src": "a", "dst": "b"}] * 2), "workflows[0].edges[1]", "duplicate dependency a -> b"),
        (_problem([A, B], [{"src": "a", "dst": "b"}, {"src": "b", "dst": "a"}]), "workflows[0].edges", "cycle"),
        (_problem([A], [{"src": "a", "dst": "a"}]), "workflows[0].edges", "cycle through tasks a -> a"),
        (
            _problem([A, B], [{"src": "a", "dst": "b", "data": -5}]),
            "workflows[0].edges[0].data",
            "greater than or equal",
        ),
        (_problem([A], nodes=[]), "cluster.nodes", "cluster has no nodes"),
        (_problem([A], nodes=[NODES[0], NODES[0]]), "cluster.nodes[1].id", "duplicate node id 'fast'"),
        (_problem([A], nodes=[{"id": "n", "cpu": 0, "mem": 1}]), "cluster.nodes[0].cpu", "greater than 0"),
        (_problem([A], nodes=[{"id": "n", "cpu": 1, "mem": 1, "speed": 0}]), "cluster.nodes[0].speed", "than 0"),
        (_problem([{"id": "a", "runtime": 1, "cpu": 16}]), "workflows[0].tasks[0].cpu", "no node can ever run it"),
        (
            _problem(
                [{"id": "a", "runtime": 1, "cpu": 4, "gpu": 1}], nodes=[GPU_NODE, {"id": "c", "cpu": 8, "mem": 1}]
            ),
            "workflows[0].tasks[0]",
            "no single node",
        ),
        (
            _problem([{"id": "a", "runtime": 1, "costs": {"fast": 1, "nowhere": 2}}]),
            "workflows[0].tasks[0].costs",
            "unknown node 'nowhere'",
        ),
        ({"workflows": [], "cluster": {"nodes": NODES}}, "workflows", "no workflows"),
        # what the simulator cannot hold: a time past 1e9 s, given or derived (1e308 overflows numpy at once)
        (_problem([{"id": "a", "runtime": 1e308}]), "workflows[0].tasks[0].runtime", "beyond what can be simulated"),
        (_problem([{"id": "a", "runtime": 2e9}]), "workflows[0].tasks[0].runtime", "at most 1e+09 s"),
        (_problem([{"id": "a", "runtime": 1, "costs": {"fast": 1e300}}]), "workflows[0].tasks[0].costs.fast", "beyond"),
        (_problem([{"id": "a", "runtime": 1, "deadline": 1e300}]), "workflows[0].tasks[0].deadline", "beyond"),
        (
            {"workflows": [{"name": "w", "tasks": [A], "submit_time": 1e300}], "cluster": {"nodes": NODES}},
            "workflows[0].submit_time",
            "beyond what can be simulated",
        ),
        (_problem([A], nodes=[{**NODES[0], "boot_delay": 1e300}]), "cluster.nodes[0].boot_delay", "beyond"),
        (_problem([A], nodes=[{**NODES[0], "price_per_hour": 1e308}]), "cluster.nodes[0].price_per_hour", "1000000"),
        (
            _problem([{"id": "a", "runtime": 6e8}], nodes=[NODES[0], {**NODES[1], "speed": 0.5}]),
            "workflows[0].tasks[0].runtime",
            "would run 1.2e+09 s on node 'slow' (runtime 6e+08 s at speed 0.5)",
        ),
        (
            _problem([A, B], [{"src": "a", "dst": "b", "data": 1e300}]),
            "workflows[0].edges[0].data",
            "1e+300 bytes from 'a' to 'b' would take 8e+290 s over node 'fast'",
        ),
    ],
)
def test_bad_input_names_the_field_and_the_fault(data: Any, field: str, fault: str) -> None:
    with pytest.raises(InputError) as err:
        parse(Problem, data)
    assert err.value.field.startswith(field), err.value
    assert fault.lower() in str(err.value).lower()


def test_duplicate_workflow_names_and_unknown_link_ends_are_named() -> None:
    data = _problem([A])
    data["workflows"].append(data["workflows"][0])
    with pytest.raises(InputError, match=r"workflows\[1\]\.name: duplicate workflow name 'wf'"):
        parse(Problem, data)
    with pytest.raises(InputError, match=r"links\[0\]\.b: unknown node 'x'"):
        parse(Cluster, {"nodes": NODES, "links": [{"a": "fast", "b": "x", "bandwidth": 1}]})


def test_entities_are_frozen() -> None:
    wf = parse(Workflow, {"name": "wf", "tasks": [A]})
    with pytest.raises(ValueError, match="frozen"):
        wf.tasks[0].runtime = 3.0


def test_a_valid_problem_compiles_to_what_it_says() -> None:
    """Two tasks, one 1e9-byte edge, two nodes: ids, runtimes, speeds, edge data and the fastest critical path
    (a and b at speed 2: 1 + 2 s, the edge free on one node) are what the input says."""
    problem = parse(Problem, _problem([A, B], [{"src": "a", "dst": "b", "data": 1e9}]))
    cp = compile_problem(problem)
    assert list(cp.task_ids) == ["a", "b"] and list(cp.node_ids) == ["fast", "slow"]
    assert np.allclose(fastest_exec_s(cp), [1.0, 2.0])
    assert critical_path_fastest_s(cp)[0] == pytest.approx(3.0)
    assert list(levels(cp)) == [1, 2]  # levels count from 1 at the entry tasks


@st.composite
def _graphs(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]]]:
    n = draw(st.integers(1, 12))
    ids = [f"t{i}" for i in range(n)]
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30))
    succ: dict[str, list[str]] = {i: [] for i in ids}
    for a, b in pairs:
        if ids[b] not in succ[ids[a]]:
            succ[ids[a]].append(ids[b])
    return ids, succ


@settings(max_examples=200, deadline=None)
@given(graph=_graphs())
def test_find_cycle_agrees_with_networkx(graph: tuple[list[str], dict[str, list[str]]]) -> None:
    """None exactly when networkx sees a DAG; otherwise a closed walk along real edges."""
    ids, succ = graph
    g = nx.DiGraph([(a, b) for a in ids for b in succ[a]])
    g.add_nodes_from(ids)
    cycle = find_cycle(ids, succ)
    assert (cycle is None) == nx.is_directed_acyclic_graph(g)
    if cycle is not None:
        assert cycle[0] == cycle[-1] and len(cycle) >= 2
        assert all(b in succ[a] for a, b in zip(cycle, cycle[1:], strict=False))

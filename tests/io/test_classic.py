"""The classic cost-matrix format reproduces the textbook model; HEFT's worked example loads exactly.

tests/data/heft_example.json is the example DAG of Topcuoglu, Hariri and Wu, "Performance-effective
and low-complexity task scheduling for heterogeneous computing", IEEE TPDS 13(3), 2002, Fig. 2:
ten tasks, three processors, the computation cost table W and the edge communication costs (all
links bandwidth 1, so transfer time = edge data).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dagsched.io import read_problem, write_classic
from dagsched.io.classic import problem_from_classic
from dagsched.model import Cluster, InputError, Node, compile_problem

HEFT = Path(__file__).resolve().parents[1] / "data" / "heft_example.json"

W = {
    "T1": (14, 16, 9),
    "T2": (13, 19, 18),
    "T3": (11, 13, 19),
    "T4": (13, 8, 17),
    "T5": (12, 13, 10),
    "T6": (13, 16, 9),
    "T7": (7, 15, 11),
    "T8": (5, 11, 14),
    "T9": (18, 12, 20),
    "T10": (21, 7, 16),
}
EDGES = {
    ("T1", "T2"): 18, ("T1", "T3"): 12, ("T1", "T4"): 9, ("T1", "T5"): 11, ("T1", "T6"): 14,
    ("T2", "T8"): 19, ("T2", "T9"): 16, ("T3", "T7"): 23, ("T4", "T8"): 27, ("T4", "T9"): 23,
    ("T5", "T9"): 13, ("T6", "T8"): 15, ("T7", "T10"): 17, ("T8", "T10"): 11, ("T9", "T10"): 13,
}  # fmt: skip


def test_heft_example_loads_with_the_papers_numbers() -> None:
    """10 tasks, 15 edges, 3 one-slot machines; exec times are the W table, transfers the edge weights."""
    problem = read_problem(HEFT)
    (wf,) = problem.workflows
    assert (len(wf.tasks), len(wf.edges), len(problem.cluster.nodes)) == (10, 15, 3)
    assert {(e.src, e.dst): e.data for e in wf.edges} == EDGES
    assert [(n.id, n.cpu, n.mem) for n in problem.cluster.nodes] == [
        ("P1", 1.0, 0.0),
        ("P2", 1.0, 0.0),
        ("P3", 1.0, 0.0),
    ]
    cp = compile_problem(problem)
    assert cp.node_ids == ["P1", "P2", "P3"]
    np.testing.assert_array_equal(cp.exec_s, np.array([W[t] for t in cp.task_ids], dtype=float))
    assert cp.comm_s(18.0, 0, 2) == 18.0 and cp.comm_s(18.0, 1, 1) == 0.0
    assert cp.mean_comm_s(27.0) == 27.0
    assert wf.tasks[0].runtime == pytest.approx(13.0)  # mean of 14, 16, 9


def test_uniform_costs_divide_by_speed() -> None:
    """`cost` on related machines: time = cost / speed; transfers = data / link bandwidth."""
    problem = problem_from_classic(
        {
            "tasks": [{"id": "a", "cost": 12}, {"id": "b", "cost": 6}],
            "edges": [{"src": "a", "dst": "b", "data": 100}],
            "machines": [{"id": "slow", "speed": 1}, {"id": "fast", "speed": 3}],
            "links": [{"a": "fast", "b": "slow", "bandwidth": 50}],
        }
    )
    cp = compile_problem(problem)
    np.testing.assert_array_equal(cp.exec_s, [[12.0, 4.0], [6.0, 2.0]])
    assert cp.comm_s(100.0, 0, 1) == 2.0 and cp.comm_s(100.0, 1, 0) == 2.0
    assert problem.cluster.latency == 0.0


def test_single_machine_needs_no_links() -> None:
    """With one machine nothing is ever transferred, so links may be absent."""
    problem = problem_from_classic({"tasks": [{"id": "a", "cost": 1}], "machines": [{"id": "m"}]})
    assert [n.id for n in problem.cluster.nodes] == ["m"]


def _machines3() -> dict[str, Any]:
    return {
        "tasks": [{"id": "a", "cost": 1}],
        "machines": [{"id": "m1"}, {"id": "m2"}, {"id": "m3"}],
        "links": [
            {"a": "m1", "b": "m2", "bandwidth": 1},
            {"a": "m2", "b": "m3", "bandwidth": 1},
            {"a": "m1", "b": "m3", "bandwidth": 1},
        ],
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["links"].pop(), "links: no link between machines 'm1' and 'm3'; give one per pair of machines"),
        (
            lambda d: d["links"].append({"a": "m3", "b": "m2", "bandwidth": 2}),
            "links[3]: second link between 'm3' and 'm2' (first at links[1])",
        ),
        (lambda d: d["links"].append({"a": "m1", "b": "m9", "bandwidth": 2}), "links[3].b: unknown machine 'm9'"),
        (
            lambda d: d["links"].append({"a": "m1", "b": "m3", "bandwidth": 0}),
            "links[3].bandwidth: Input should be greater than 0",
        ),
        (
            lambda d: d["tasks"].append({"id": "b", "cost": 1, "costs": {"m1": 1}}),
            "tasks[1]: task 'b' needs exactly one of 'cost' or 'costs'",
        ),
        (lambda d: d["tasks"].append({"id": "b"}), "tasks[1]: task 'b' needs exactly one of 'cost' or 'costs'"),
        (
            lambda d: d["tasks"].append({"id": "b", "costs": {"m1": 1, "m2": 2}}),
            "tasks[1].costs: task 'b' has no cost on machine(s) m3",
        ),
        (
            lambda d: d["tasks"].append({"id": "b", "costs": {"m1": 1, "mx": 2}}),
            "tasks[1].costs.mx: unknown machine 'mx' for task 'b'",
        ),
        (
            lambda d: d["tasks"].append({"id": "b", "cost": -2}),
            "tasks[1].cost: Input should be greater than or equal to 0",
        ),
        (
            lambda d: d["machines"].append({"id": "m1"}),
            "machines[3].id: duplicate machine id 'm1' (first at machines[0])",
        ),
        (
            lambda d: d.update(edges=[{"src": "a", "dst": "q"}]),
            "edges[0].dst: unknown task 'q' (dependency a -> q; 'a' names it)",
        ),
        (lambda d: d.update(edges=[{"src": "a", "dst": "a"}]), "edges[0]: cycle through tasks a -> a"),
        (lambda d: d.update(extra=1), "extra: unknown field"),
    ],
)
def test_bad_classic_input_names_the_field(change: Any, message: str) -> None:
    """Every pair of machines needs one link, every task one kind of cost; faults name the classic field."""
    data = _machines3()
    change(data)
    with pytest.raises(InputError) as err:
        problem_from_classic(data)
    assert str(err.value) == message


def test_classic_round_trip_is_exact(tmp_path: Path) -> None:
    """write_classic then read_problem gives back the same Problem, costs and links included."""
    problem = read_problem(HEFT)
    path = tmp_path / "again.json"
    write_classic(problem, path)
    assert read_problem(path) == problem


def test_writer_fills_missing_links_with_the_slower_nodes_bandwidth(tmp_path: Path) -> None:
    """A cluster without explicit links is written with one link per pair at the bandwidth the simulator uses."""
    from dagsched.model import Problem, Task, Workflow

    problem = Problem(
        workflows=[Workflow(name="w", tasks=[Task(id="a", runtime=4)])],
        cluster=Cluster(
            nodes=[Node(id="x", cpu=1, mem=0, speed=2, bandwidth=10), Node(id="y", cpu=1, mem=0, bandwidth=4)]
        ),
    )
    path = tmp_path / "p.json"
    write_classic(problem, path)
    back = read_problem(path)
    assert [(link.a, link.b, link.bandwidth) for link in back.cluster.links] == [("x", "y", 4.0)]
    np.testing.assert_array_equal(compile_problem(back).exec_s, [[2.0, 4.0]])


def test_writer_refuses_what_the_format_cannot_hold(tmp_path: Path) -> None:
    """Latency and several workflows have no place in the classic format: refused, not dropped."""
    problem = read_problem(HEFT)
    with pytest.raises(InputError, match=r"^cluster.latency: the classic format has no latency"):
        write_classic(
            problem.model_copy(update={"cluster": problem.cluster.model_copy(update={"latency": 0.5})}),
            tmp_path / "x.json",
        )
    other = problem.workflows[0].model_copy(update={"name": "second"})
    with pytest.raises(InputError, match=r"^workflows: the classic format holds one workflow, this problem has 2"):
        write_classic(problem.model_copy(update={"workflows": [problem.workflows[0], other]}), tmp_path / "x.json")

"""The native YAML/JSON format: what a hand-written file means, and every refusal names the field and fault."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from dagsched.io import read_cluster, read_workflow, write_cluster, write_workflow
from dagsched.io.native import cluster_from_native, node_to_request, workflow_from_native
from dagsched.model import Cluster, Edge, InputError, Link, Node, Task, Workflow

EXAMPLE = """\
name: etl
submit_time: 0        # optional
deadline: 3600        # optional, seconds after submission
tasks:
  - id: raw_ingest
    runtime: 120                      # seconds at speed 1.0
    resources: {cpu: 2, mem: 4, gpu: 0}   # mem in GiB; all optional
    dependencies: []                  # list of task ids, or {task: id, data: bytes}
    priority: 1
    critical: false
    deadline: 600
    labels: {team: data}
  - id: cleaning
    runtime: 300
    dependencies: [raw_ingest]
  - id: features
    runtime: 200
    dependencies: [{task: cleaning, data: 2.0e9}]
"""


def _tasks(*specs: dict[str, Any]) -> dict[str, Any]:
    return {"name": "w", "tasks": list(specs)}


def _error(data: dict[str, Any]) -> InputError:
    with pytest.raises(InputError) as err:
        workflow_from_native(data)
    return err.value


def test_documented_example_means_what_the_comments_say(tmp_path: Path) -> None:
    """The example in the docs loads with resources, deadlines, labels and edge data as written."""
    path = tmp_path / "etl.yaml"
    path.write_text(EXAMPLE)
    wf = read_workflow(path)
    assert wf.name == "etl" and wf.submit_time == 0.0 and wf.deadline == 3600.0
    assert [t.id for t in wf.tasks] == ["raw_ingest", "cleaning", "features"]
    ingest = wf.tasks[0]
    assert (ingest.runtime, ingest.cpu, ingest.mem, ingest.gpu) == (120.0, 2.0, 4.0, 0)
    assert (ingest.priority, ingest.critical, ingest.deadline, ingest.labels) == (1, False, 600.0, {"team": "data"})
    assert (wf.tasks[1].cpu, wf.tasks[1].mem, wf.tasks[1].gpu, wf.tasks[1].deadline) == (1.0, 0.0, 0, None)
    assert wf.edges == [
        Edge(src="raw_ingest", dst="cleaning", data=0.0),
        Edge(src="cleaning", dst="features", data=2e9),
    ]


def test_numbers_written_for_ids_and_labels_are_taken_as_strings() -> None:
    """YAML turns `id: 1` into an int; a hand-written file means the string '1'."""
    wf = workflow_from_native(
        _tasks({"id": 1, "runtime": 1, "labels": {"v": 2}}, {"id": 2, "runtime": 1, "dependencies": [1]})
    )
    assert [t.id for t in wf.tasks] == ["1", "2"] and wf.tasks[0].labels == {"v": "2"}
    assert wf.edges == [Edge(src="1", dst="2")]


def test_unknown_field_is_named_with_its_full_path() -> None:
    """A typo never silently becomes a default: `tasks[2].resources.disk: unknown field`."""
    err = _error(
        _tasks(
            {"id": "a", "runtime": 1}, {"id": "b", "runtime": 1}, {"id": "c", "runtime": 1, "resources": {"disk": 5}}
        )
    )
    assert str(err) == "tasks[2].resources.disk: unknown field"
    assert str(_error({"name": "w", "tasks": [{"id": "a", "runtime": 1}], "owner": "x"})) == "owner: unknown field"
    err = _error(
        _tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "dependencies": [{"task": "a", "size": 5}]})
    )
    assert str(err) == "tasks[1].dependencies[0].size: unknown field"


def test_unknown_dependency_names_the_dependency_and_the_id() -> None:
    """A dependency on a task that does not exist points at that list entry."""
    err = _error(_tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "dependencies": ["a", "ghost"]}))
    assert err.field == "tasks[1].dependencies[1]"
    assert "unknown task 'ghost'" in err.fault and "'b'" in err.fault


def test_cycle_names_every_task_on_it_and_the_dependency_that_closes_it() -> None:
    """a -> b -> c -> a is refused, naming the tasks in order and where the loop is declared."""
    err = _error(
        _tasks(
            {"id": "a", "runtime": 1, "dependencies": ["c"]},
            {"id": "b", "runtime": 1, "dependencies": ["a"]},
            {"id": "c", "runtime": 1, "dependencies": ["b"]},
        )
    )
    assert err.field == "tasks[0].dependencies[0]"
    assert err.fault == "cycle through tasks a -> b -> c -> a"


def test_self_dependency_is_a_cycle() -> None:
    """A task that waits for itself never runs."""
    err = _error(_tasks({"id": "solo", "runtime": 1, "dependencies": ["solo"]}))
    assert str(err) == "tasks[0].dependencies[0]: cycle through tasks solo -> solo"


def test_duplicate_task_id_names_both_positions() -> None:
    """Ids identify tasks in dependencies, so a second one is refused."""
    err = _error(_tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1}, {"id": "a", "runtime": 2}))
    assert str(err) == "tasks[2].id: duplicate task id 'a' (first at tasks[0])"


def test_duplicate_dependency_is_refused() -> None:
    """Listing the same parent twice is a mistake, not two transfers."""
    err = _error(_tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "dependencies": ["a", "a"]}))
    assert str(err) == "tasks[1].dependencies[1]: duplicate dependency a -> b"


@pytest.mark.parametrize(
    ("task", "field", "fault"),
    [
        ({"id": "a", "runtime": -1}, "tasks[0].runtime", "greater than or equal to 0"),
        ({"id": "a", "runtime": math.nan}, "tasks[0].runtime", "finite number"),
        ({"id": "a", "runtime": math.inf}, "tasks[0].runtime", "finite number"),
        ({"id": "a", "runtime": 1, "resources": {"mem": -0.5}}, "tasks[0].resources.mem", "greater than or equal to 0"),
        ({"id": "a", "runtime": 1, "resources": {"cpu": math.inf}}, "tasks[0].resources.cpu", "finite number"),
        ({"id": "a", "runtime": 1, "resources": {"gpu": 0.5}}, "tasks[0].resources.gpu", "valid integer"),
        ({"id": "a", "runtime": 1, "deadline": -5}, "tasks[0].deadline", "greater than or equal to 0"),
        ({"id": "a", "runtime": "slow"}, "tasks[0].runtime", "valid number"),
        ({"id": "a"}, "tasks[0].runtime", "Field required"),
        ({"id": "", "runtime": 1}, "tasks[0].id", "at least 1 character"),
    ],
)
def test_bad_numbers_and_missing_fields_name_the_field(task: dict[str, Any], field: str, fault: str) -> None:
    """Negative, NaN, infinite or missing values are refused where they are written."""
    err = _error(_tasks(task))
    assert err.field == field and fault in err.fault


def test_negative_edge_data_names_the_dependency() -> None:
    """Data on an edge is bytes: never negative."""
    err = _error(
        _tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "dependencies": [{"task": "a", "data": -5}]})
    )
    assert err.field == "tasks[1].dependencies[0].data" and "greater than or equal to 0" in err.fault


def test_nan_and_inf_from_yaml_are_refused(tmp_path: Path) -> None:
    """YAML's .nan and .inf parse to floats; they must still be refused."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\ntasks:\n  - {id: a, runtime: .inf}\n")
    with pytest.raises(InputError, match=r"^tasks\[0\]\.runtime: Input should be a finite number"):
        read_workflow(path)
    path.write_text("name: w\ntasks:\n  - {id: a, runtime: 1}\n  - {id: b, runtime: .nan}\n")
    with pytest.raises(InputError, match=r"^tasks\[1\]\.runtime: Input should be a finite number"):
        read_workflow(path)


def test_empty_workflow_is_refused() -> None:
    """A workflow with no tasks has nothing to schedule and no makespan."""
    assert str(_error({"name": "w", "tasks": []})) == "tasks: workflow 'w' is empty: it needs at least one task"
    assert str(_error({"name": "w"})) == "tasks: Field required"


def test_a_dependency_must_be_an_id_or_a_mapping() -> None:
    """`dependencies: [true]` is neither form; the message says which forms exist."""
    err = _error(_tasks({"id": "a", "runtime": 1}, {"id": "b", "runtime": 1, "dependencies": ["a", True]}))
    assert err.field == "tasks[1].dependencies[1]" and "expected a task id or {task: id, data: bytes}" in err.fault


CLUSTER = """\
name: lab
latency: 0.001
nodes:
  - {id: big, cpu: 32, mem: 128, gpu: 4, speed: 2.0, price_per_hour: 3.5, bandwidth: 1.0e10, boot_delay: 30}
  - {id: small, cpu: 4, mem: 16, count: 3, labels: {zone: a}}
links:
  - {a: big, b: small-0, bandwidth: 5.0e8}
"""


def test_cluster_count_expands_into_numbered_nodes(tmp_path: Path) -> None:
    """`count: 3` on `small` gives small-0, small-1, small-2 with the entry's attributes."""
    path = tmp_path / "cluster.yaml"
    path.write_text(CLUSTER)
    cluster = read_cluster(path)
    assert [n.id for n in cluster.nodes] == ["big", "small-0", "small-1", "small-2"]
    assert cluster.nodes[0] == Node(
        id="big", cpu=32, mem=128, gpu=4, speed=2.0, price_per_hour=3.5, bandwidth=1e10, boot_delay=30
    )
    assert all((n.cpu, n.mem, n.speed, n.labels) == (4.0, 16.0, 1.0, {"zone": "a"}) for n in cluster.nodes[1:])
    assert cluster.latency == 0.001 and cluster.links == [Link(a="big", b="small-0", bandwidth=5e8)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"nodes": [{"id": "n", "cpu": 1, "mem": 1, "disk": 9}]}, "nodes[0].disk: unknown field"),
        ({"nodes": [{"id": "n", "cpu": 0, "mem": 1}]}, "nodes[0].cpu: Input should be greater than 0"),
        (
            {"nodes": [{"id": "n", "cpu": 1, "mem": 1, "count": 0}]},
            "nodes[0].count: Input should be greater than or equal to 1",
        ),
        ({"nodes": [{"id": "n", "cpu": 1, "mem": 1, "speed": -2}]}, "nodes[0].speed: Input should be greater than 0"),
        ({"nodes": []}, "nodes: cluster has no nodes"),
        (
            {"nodes": [{"id": "n", "cpu": 1, "mem": 1, "count": 2}, {"id": "n-1", "cpu": 1, "mem": 1}]},
            "nodes[1].id: duplicate node id 'n-1'",
        ),
        (
            {"nodes": [{"id": "n", "cpu": 1, "mem": 1}], "links": [{"a": "n", "b": "m", "bandwidth": 1}]},
            "links[0].b: unknown node 'm'",
        ),
    ],
)
def test_bad_cluster_names_the_entry_as_written(data: dict[str, Any], message: str) -> None:
    """Errors point at the entry in the file, even after `count` expanded the list."""
    with pytest.raises(InputError) as err:
        cluster_from_native(data)
    assert str(err.value) == message


@pytest.mark.parametrize("suffix", [".yaml", ".yml", ".json", ".json.gz"])
def test_workflow_round_trip_is_exact(tmp_path: Path, suffix: str) -> None:
    """read(write(wf)) == wf for every field the model has, in YAML and JSON."""
    wf = Workflow(
        name="rt",
        submit_time=12.5,
        deadline=900.0,
        labels={"owner": "ops", "true": "yes"},
        tasks=[
            Task(id="a", runtime=1e-05, cpu=0.5, mem=1.25, gpu=2, priority=-3, critical=True, deadline=7.0),
            Task(id="1", runtime=3.0, labels={"x": "null", "y": "1.5"}, costs={"n1": 2.0, "n2": 0.0}),
            Task(id="b c", runtime=0.0),
        ],
        edges=[
            Edge(src="a", dst="1", data=0.0),
            Edge(src="a", dst="b c", data=2.5e9),
            Edge(src="1", dst="b c", data=1.0),
        ],
    )
    path = tmp_path / f"wf{suffix}"
    write_workflow(wf, path)
    assert read_workflow(path) == wf


def test_written_yaml_leaves_defaults_out(tmp_path: Path) -> None:
    """The writer emits what a person would write: no default-valued keys."""
    path = tmp_path / "w.yaml"
    write_workflow(
        Workflow(name="w", tasks=[Task(id="a", runtime=2), Task(id="b", runtime=3)], edges=[Edge(src="a", dst="b")]),
        path,
    )
    assert (
        path.read_text()
        == "name: w\ntasks:\n- id: a\n  runtime: 2.0\n- id: b\n  runtime: 3.0\n  dependencies:\n  - a\n"
    )


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_cluster_round_trip_is_exact(tmp_path: Path, suffix: str) -> None:
    """read(write(cluster)) == cluster, including links and latency."""
    cluster = Cluster(
        name="c",
        latency=0.002,
        nodes=[
            Node(
                id="x",
                cpu=8,
                mem=32,
                gpu=1,
                speed=1.5,
                price_per_hour=0.4,
                bandwidth=1e9,
                boot_delay=5,
                labels={"k": "v"},
            ),
            Node(id="y", cpu=2, mem=0),
        ],
        links=[Link(a="x", b="y", bandwidth=1e8)],
    )
    path = tmp_path / f"c{suffix}"
    write_cluster(cluster, path)
    assert read_cluster(path) == cluster


def test_a_node_as_a_request_is_what_the_service_reads_back() -> None:
    """`node_to_request`: the service's NodeState takes it as is and keeps every field the node has but boot_delay."""
    from dagsched.service.schemas import NodeState

    node = Node(id="g1", cpu=8, mem=32, gpu=2, speed=1.5, price_per_hour=2.5, bandwidth=1e9, boot_delay=30,
                labels={"zone": "a"})  # fmt: skip
    state = NodeState.model_validate(node_to_request(node))
    assert state.model_dump(exclude={"free"}) == node.model_dump(exclude={"boot_delay"})
    assert state.free is None

"""read_problem joins workflows and a cluster, and refuses tasks no node can ever run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dagsched.io import read_cluster, read_problem, write_cluster
from dagsched.model import Cluster, InputError, Node

HEFT = Path(__file__).resolve().parents[1] / "data" / "heft_example.json"

ETL = """\
name: etl
tasks:
  - {id: load, runtime: 10, resources: {cpu: 4, mem: 8}}
  - {id: train, runtime: 60, dependencies: [load]}
"""
ML = """\
name: ml
tasks:
  - {id: prep, runtime: 5}
  - {id: fit, runtime: 50, resources: {cpu: 8, mem: 64, gpu: 1}, dependencies: [prep]}
"""
CLUSTER = Cluster(
    name="lab",
    nodes=[Node(id="cpu-box", cpu=16, mem=64), Node(id="gpu-box", cpu=8, mem=64, gpu=2)],
)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    paths = {"etl": tmp_path / "etl.yaml", "ml": tmp_path / "ml.yaml", "cluster": tmp_path / "cluster.yaml"}
    paths["etl"].write_text(ETL)
    paths["ml"].write_text(ML)
    write_cluster(CLUSTER, paths["cluster"])
    return paths


def test_several_workflows_share_one_cluster(files: dict[str, Path]) -> None:
    """Two native files and a cluster become one Problem, in the order given."""
    problem = read_problem([files["etl"], files["ml"]], CLUSTER)
    assert [wf.name for wf in problem.workflows] == ["etl", "ml"]
    assert problem.cluster == CLUSTER and problem.name == "problem"
    assert read_problem(files["etl"], files["cluster"]) == read_problem(
        [str(files["etl"])], read_cluster(files["cluster"])
    )


def test_wfformat_trace_with_a_cluster(wfinstances: Path) -> None:
    """A real trace needs a cluster like any native workflow; the problem takes the workflow's name."""
    problem = read_problem(wfinstances / "helloworld/helloworld-chain-5-chameleon.json.gz", CLUSTER)
    assert len(problem.workflows[0].tasks) == 5 and problem.name == problem.workflows[0].name


def test_cluster_is_required_for_native_and_wfformat(files: dict[str, Path]) -> None:
    """Without nodes there is nothing to schedule on; the message says how to get one."""
    with pytest.raises(InputError) as err:
        read_problem(files["etl"])
    assert (
        err.value.field == "cluster" and err.value.fault.startswith("required:") and "read_cluster" in err.value.fault
    )


def test_request_no_node_can_satisfy_names_task_resource_request_and_largest_node(files: dict[str, Path]) -> None:
    """A task asking for 3 GPUs on a cluster whose largest has 2 is refused before any run."""
    files["ml"].write_text(ML.replace("gpu: 1", "gpu: 3"))
    with pytest.raises(InputError) as err:
        read_problem([files["etl"], files["ml"]], CLUSTER)
    assert err.value.field == "tasks[1].resources.gpu"  # as ml.yaml writes it, and the fault names the file
    fault = err.value.fault
    assert "task 'fit' requests gpu=3" in fault and "largest node 'gpu-box' has gpu=2" in fault
    assert "no node can ever run it" in fault and str(files["ml"]) in fault


def test_requests_that_fit_separately_but_not_together(files: dict[str, Path]) -> None:
    """cpu=16 fits cpu-box and gpu=1 fits gpu-box, but no node has both."""
    files["ml"].write_text(ML.replace("cpu: 8", "cpu: 16"))
    with pytest.raises(InputError) as err:
        read_problem(files["ml"], CLUSTER)
    assert err.value.field == "tasks[1]"
    assert "task 'fit' requests cpu=16, mem=64, gpu=1 and no single node has all of them" in err.value.fault


def test_times_past_what_can_be_simulated_name_the_field_as_the_file_writes_it(files: dict[str, Path]) -> None:
    """A runtime of 1e308 s, a transfer of 1e300 bytes and a node 1e12 times slower than nominal are refused."""
    files["ml"].write_text(ML.replace("runtime: 50", "runtime: 1e308"))
    with pytest.raises(InputError, match=r"^tasks\[1\]\.runtime: 1e\+308 s is beyond what can be simulated"):
        read_problem(files["ml"], CLUSTER)
    files["ml"].write_text(ML.replace("dependencies: [prep]", "dependencies: [{task: prep, data: 1e300}]"))
    with pytest.raises(InputError) as err:
        read_problem(files["ml"], CLUSTER)
    assert err.value.field == "tasks[1].dependencies[0].data" and "from 'prep' to 'fit'" in err.value.fault
    slow = Cluster(nodes=[Node(id="crawl", cpu=16, mem=64, gpu=2, speed=1e-12)])
    with pytest.raises(InputError) as err:
        read_problem(files["etl"], slow)
    assert err.value.field == "tasks[0].runtime" and "on node 'crawl'" in err.value.fault


def test_duplicate_workflow_names_are_refused(files: dict[str, Path]) -> None:
    """Workflow names identify results per workflow; the same file twice is refused."""
    with pytest.raises(InputError, match=r"^workflows\[1\]\.name: duplicate workflow name 'etl'"):
        read_problem([files["etl"], files["etl"]], CLUSTER)


def test_classic_file_brings_its_own_cluster() -> None:
    """A classic file is a whole problem; adding a cluster is a contradiction and refused."""
    assert read_problem(HEFT).cluster.name == "heft-example"
    with pytest.raises(InputError) as err:
        read_problem(HEFT, CLUSTER)
    assert err.value.field == "cluster" and "brings its own machines" in err.value.fault


def test_classic_file_must_come_alone(files: dict[str, Path]) -> None:
    """Mixing a classic problem with other workflows has no single cluster to run on."""
    with pytest.raises(InputError, match=r"^workflow_paths: .*heft_example.json is a classic file"):
        read_problem([files["etl"], HEFT], CLUSTER)


def test_no_files_is_an_error() -> None:
    """An empty list of paths is refused rather than giving a problem with nothing in it."""
    with pytest.raises(InputError, match="^workflow_paths: no workflow files given"):
        read_problem([], CLUSTER)


def test_cluster_file_with_classic_content_is_refused() -> None:
    """read_cluster reads native cluster files only; a classic file says where to go instead."""
    with pytest.raises(InputError, match="read it with read_problem"):
        read_cluster(HEFT)

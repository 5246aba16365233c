"""`dagsched run --ray ADDRESS` joins a Ray cluster it did not start: each dagsched node runs its tasks on the Ray
node labelled `dagsched/node=<its id>`; an unlabelled node, or a Ray node smaller than the node it stands for, is
refused naming `--ray` (exit 2); the cluster is left running, stopped here by the handle that started it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dagsched.live.cluster import MEM_RESOURCE, NODE_LABEL, quiet_ray_environment

from .conftest import _gone

pytestmark = pytest.mark.xdist_group("ray")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLI = [sys.executable, "-c", "from dagsched.cli import app; app()"]

WHERE_STEPS = """
import pathlib
import ray

SEEN = pathlib.Path({seen!r})


def _record(name):
    with SEEN.open("a") as f:
        f.write(name + " " + ray.get_runtime_context().get_node_id() + "\\n")


def a():
    _record("a")


def b():
    _record("b")


def c():
    _record("c")


def d():
    _record("d")
"""


AUTH_SETTINGS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _fresh_shell() -> dict[str, str]:
    """The environment of a user's shell: none of the settings this process made to start its own cluster, but
    the cluster's authentication mode, as a user joining a cluster with token authentication sets it (a
    `ray.init()` earlier in this process turns token authentication on for every cluster it starts after)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RAY_") or k in AUTH_SETTINGS}


@pytest.fixture(scope="module")
def labelled_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, dict[str, str], Path]]:
    """A head holding no resources and two nodes labelled `dagsched/node=slow` and `=fast` (2 cpus, 4 GiB of
    `mem_gib` each), on 127.0.0.1 with 80 MiB object stores, as `ray start --labels` would start them; their
    workers import the steps module from the folder it yields (a joined cluster's nodes must have the functions)."""
    steps = tmp_path_factory.mktemp("steps")
    (steps / "where_steps.py").write_text(WHERE_STEPS.format(seen=str(steps / "seen.txt")))
    quiet_ray_environment()
    from ray.cluster_utils import Cluster

    common = {"node_ip_address": "127.0.0.1", "object_store_memory": 80 * 2**20, "include_dashboard": False}
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(steps)  # the nodes' processes start with it
    cluster = Cluster(initialize_head=True, connect=False, head_node_args={**common, "num_cpus": 0})
    try:
        ids = {}
        for name in ("slow", "fast"):
            labels = {NODE_LABEL: name}
            node = cluster.add_node(**common, num_cpus=2, resources={MEM_RESOURCE: 4.0}, labels=labels)
            ids[name] = node.node_id
        cluster.wait_for_nodes()
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved
        nodes = [cluster.head_node, *cluster.worker_nodes]
        pids = [p.process.pid for n in nodes for ps in n.all_processes.values() for p in ps]
        yield cluster, ids, steps
    finally:
        cluster.shutdown()
    assert _gone(pids) == [], "Ray processes left running after the cluster stopped"


def test_a_run_joins_a_labelled_cluster_and_runs_each_task_on_its_nodes_ray_node(
    labelled_cluster: tuple[Any, dict[str, str], Path], tmp_path: Path
) -> None:
    cluster, ids, steps = labelled_cluster
    seen = steps / "seen.txt"
    lines = ["name: where", "tasks:"]
    task = "  - {{id: {t}, runtime: 1, resources: {{cpu: 2, mem: 1}}, run: {{python: 'where_steps:{t}'}}}}"
    lines += [task.format(t=t) for t in "abcd"]
    wf = tmp_path / "where.yaml"
    wf.write_text("\n".join(lines) + "\n")
    trace = tmp_path / "trace.json"
    args = ["run", "-w", str(wf), "-c", str(EXAMPLES / "two-small-nodes.yaml"), "--ray", cluster.address]
    env = _fresh_shell() | {"PYTHONPATH": str(steps)}
    done = subprocess.run(
        [*CLI, *args, "--trace", str(trace), "--json"], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    assert out["valid"] is True and out["attempts"] == 4 and out["failed_attempts"] == 0
    assert out["ray"] == cluster.address
    ran_on = dict(line.split() for line in seen.read_text().splitlines())
    placed = {row["task"]: row["node"] for row in json.loads(trace.read_text())["attempts"]}
    assert sorted(ran_on) == ["a", "b", "c", "d"]
    assert set(placed.values()) == {"slow", "fast"}  # four 2-cpu tasks: both nodes take some
    assert {task: ran_on[task] for task in placed} == {task: ids[node] for task, node in placed.items()}
    # the cluster is left running for whoever started it
    alive = subprocess.run(
        [*CLI[:2], f"import ray; ray.init(address={cluster.address!r}); print(len(ray.nodes()))"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert alive.stdout.strip() == "3", alive.stderr[-2000:]


@pytest.mark.parametrize(
    ("nodes", "named"),
    [
        ("  - {id: slow, cpu: 2, mem: 4}\n  - {id: fast, cpu: 2, mem: 4}\n  - {id: extra, cpu: 2, mem: 4}\n", "=extra"),
        ("  - {id: slow, cpu: 2, mem: 4}\n  - {id: fast, cpu: 4, mem: 4}\n", "CPU 2 of 4"),
    ],
)
def test_a_cluster_without_a_matching_ray_node_is_refused_naming_it(
    labelled_cluster: tuple[Any, dict[str, str], Path], tmp_path: Path, nodes: str, named: str
) -> None:
    cluster, _, _ = labelled_cluster
    spec = tmp_path / "cluster.yaml"
    spec.write_text("name: c\nnodes:\n" + nodes)
    args = ["run", "-w", str(EXAMPLES / "python-steps.yaml"), "-c", str(spec), "--ray", cluster.address]
    env = _fresh_shell()
    done = subprocess.run([*CLI, *args, "--json"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr[-2000:]
    message = " ".join(done.stderr.split())
    assert "--ray" in message and named in message

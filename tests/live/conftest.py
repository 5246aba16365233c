"""A local Ray cluster per test module (2-3 loopback nodes, small object stores), stopped at the module's end with
every process it started gone."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from dagsched.live.cluster import RayCluster, start_local
from dagsched.model import Cluster, Node

SMALL_CLUSTER = Cluster(
    name="three-small",
    nodes=[
        Node(id="slow", cpu=2, mem=4, speed=1.0),
        Node(id="fast", cpu=2, mem=4, speed=2.0),
        Node(id="spare", cpu=2, mem=4, speed=1.0),
    ],
)


def _pids(cluster: RayCluster) -> list[int]:
    """Every process the local cluster started (raylets, stores, agents, GCS)."""
    nodes = [cluster.local.head_node, *cluster.local.worker_nodes]
    return [p.process.pid for node in nodes if node is not None for ps in node.all_processes.values() for p in ps]


def _gone(pids: list[int], wait_s: float = 15.0) -> list[int]:
    deadline = time.monotonic() + wait_s
    left = pids
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if os.path.exists(f"/proc/{pid}") and "Z" not in _state(pid)]
        time.sleep(0.2)
    return left


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    cluster = start_local(SMALL_CLUSTER, object_store_mib=80)
    pids = _pids(cluster)
    try:
        yield cluster
    finally:
        cluster.stop()
    assert _gone(pids) == [], "Ray processes left running after the cluster stopped"

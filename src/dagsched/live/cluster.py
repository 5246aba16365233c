"""The Ray cluster a real run uses: a local one on the loopback address shaped like the dagsched cluster, or an
existing one joined by address.

Each dagsched node is one Ray node: its cpu and gpu are the Ray node's CPU and GPU resources, its memory a custom
resource `mem_gib`, its id and speed node labels (`dagsched/node`, `dagsched/speed`). Resources are logical: Ray
counts them, and nothing asks the machine for them; what does take the machine's memory, each node's object
store, is sized to fit it. A local cluster binds every Ray process to 127.0.0.1 (Ray resolves its node address to
the loopback one with `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`), so no traffic leaves the machine, and is stopped by
its handle.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from dagsched.model.entities import Cluster
from dagsched.model.errors import InputError

MAX_LOCAL_NODES = 8
"""The most Ray nodes `--ray local` starts on one machine (each is a raylet, its agents and its workers)."""

OBJECT_STORE_MIB = 96
"""Each local node's object store (Ray's minimum is 75 MiB): payloads of emulated data edges live there."""

IDLE_WORKER_KEEP_MS = 3_600_000
"""How long a local node keeps an idle worker process (Ray's default is 1 s past its core count)."""

NODE_LABEL, SPEED_LABEL = "dagsched/node", "dagsched/speed"
MEM_RESOURCE = "mem_gib"

_LABEL_VALUE = re.compile(r"[^A-Za-z0-9_.-]")


def label_value(text: str) -> str:
    """A dagsched id as a Ray label value (letters, digits, `-_.`, at most 63 characters)."""
    cleaned = _LABEL_VALUE.sub("-", text)[:63].strip("-_.")
    return cleaned or "node"


def quiet_ray_environment() -> None:
    """The environment a local loopback cluster needs, set before Ray starts anything."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # node IP resolves to 127.0.0.1 (measured on Linux)
    # Ray reads that variable once, when it is imported: a process that imported Ray before (a benchmark's cells,
    # a test beside) resolved its node IP to the machine's own address, and the cluster would bind and be dialled
    # there. Set what it read too, so every local cluster stays on the loopback address.
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        setattr(constants, "ENABLE_RAY_CLUSTER", False)  # noqa: B010  (a module of Ray, typed as a plain module)
    os.environ.setdefault("RAY_prestart_worker_first_driver", "0")  # workers start when tasks need them
    # A raylet kills a worker idle for 1 s whenever it holds more workers than its cores: the next task there then
    # waits for a new Python worker (1-2 s on a busy machine), ~1 % of a run's launches and most of the simulator's
    # gap. Workers stay for the cluster's life (a local cluster lives for one run).
    os.environ.setdefault("RAY_idle_worker_killing_time_threshold_ms", str(IDLE_WORKER_KEEP_MS))
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")


@dataclass
class RayCluster:
    """A connected Ray cluster and where each dagsched node is on it (`ray_nodes[i]`: the Ray node id of node i)."""

    ray_nodes: list[str]
    has_mem: list[bool]
    local: Any = None  # the `ray.cluster_utils.Cluster` this process started, stopped by `stop`
    node_handles: list[Any] = field(default_factory=list)

    def node_alive(self) -> dict[str, bool]:
        """Ray's view of each node now: node id -> alive."""
        import ray

        nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
        return {n["NodeID"]: bool(n["Alive"]) for n in nodes}

    def remove_node(self, nd: int) -> None:
        """Kill dagsched node nd's Ray node (its raylet and workers): a local cluster's node lost."""
        if self.local is None:
            raise RuntimeError("only a local cluster's nodes can be removed from here")
        self.local.remove_node(self.node_handles[nd], allow_graceful=False)

    def stop(self) -> None:
        """Disconnect, and stop the local cluster's processes if this process started them."""
        import ray

        if ray.is_initialized():
            ray.shutdown()
        if self.local is not None:
            self.local.shutdown()
            self.local = None


def start_local(cluster: Cluster, object_store_mib: int = OBJECT_STORE_MIB) -> RayCluster:
    """Start one loopback Ray node per dagsched node (plus a head holding no resources), connect to it."""
    n = len(cluster.nodes)
    if n > MAX_LOCAL_NODES:
        raise InputError(
            "--cluster",
            f"--ray local starts at most {MAX_LOCAL_NODES} Ray nodes on this machine and the cluster has {n} nodes; "
            "join a larger Ray cluster with --ray ADDRESS",
        )
    quiet_ray_environment()
    import ray
    from ray.cluster_utils import Cluster as LocalCluster

    store = object_store_mib * 1024 * 1024
    common: dict[str, Any] = {"node_ip_address": "127.0.0.1", "object_store_memory": store, "include_dashboard": False}
    local = LocalCluster(initialize_head=True, connect=False, head_node_args={**common, "num_cpus": 0, "num_gpus": 0})
    handles, has_mem = [], []
    try:
        for node in cluster.nodes:
            resources = {MEM_RESOURCE: float(node.mem)} if node.mem > 0 else {}
            handles.append(
                local.add_node(
                    **common,
                    num_cpus=math.ceil(node.cpu),
                    num_gpus=node.gpu,
                    resources=resources,
                    labels={NODE_LABEL: label_value(node.id), SPEED_LABEL: f"{node.speed:g}"},
                )
            )
            has_mem.append(node.mem > 0)
        local.wait_for_nodes()
        ray.init(address=local.address, log_to_driver=False, logging_level=logging.ERROR)
    except BaseException:
        if ray.is_initialized():
            ray.shutdown()
        local.shutdown()  # type: ignore[no-untyped-call]
        raise
    return RayCluster([h.node_id for h in handles], has_mem, local, handles)


def on_loopback(address: str) -> bool:
    """Whether a Ray address (`HOST:PORT`, `ray://HOST:PORT`) names this machine's loopback interface."""
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host == "localhost" or host.startswith("127.") or host == "::1"


def join(address: str, cluster: Cluster) -> RayCluster:
    """Connect to a running Ray cluster whose nodes carry the label `dagsched/node=<label_value(node id)>`, one
    per node, each with at least the cpus and gpus its node declares."""
    if on_loopback(address):  # a cluster on the loopback address (started as `--ray local` starts one)
        quiet_ray_environment()  # without it the driver dials the GCS at the machine's own address, and waits
    import ray

    try:
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except (ConnectionError, RuntimeError, ValueError) as err:
        hint = ""
        if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":  # Ray never turns it on for an explicit address
            hint = " (a cluster with token authentication needs RAY_AUTH_MODE=token and its token)"
        raise InputError("--ray", f"cannot join the Ray cluster at {address!r}: {err}{hint}") from None
    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    by_label: dict[str, list[dict[str, Any]]] = {}
    for n in nodes:
        label = (n.get("Labels") or {}).get(NODE_LABEL)
        if n["Alive"] and label:
            by_label.setdefault(label, []).append(n)
    ids, has_mem, problems = [], [], []
    for node in cluster.nodes:
        label = label_value(node.id)
        found = by_label.get(label, [])
        if len(found) != 1:
            many = f"{len(found)} live nodes are" if found else "no live node is"
            problems.append(f"{many} labelled {NODE_LABEL}={label} (node {node.id!r})")
            continue
        resources = found[0].get("Resources") or {}
        short = [
            f"{name} {resources.get(name, 0.0):g} of {want:g}"
            for name, want in (("CPU", math.ceil(node.cpu)), ("GPU", node.gpu))
            if resources.get(name, 0.0) < want
        ]
        if short:
            detail = ", ".join(short)
            problems.append(f"the Ray node labelled {NODE_LABEL}={label} has less than node {node.id!r}: {detail}")
        ids.append(found[0]["NodeID"])
        has_mem.append(MEM_RESOURCE in resources)
    if problems:
        ray.shutdown()
        raise InputError(
            "--ray",
            f"the Ray cluster at {address!r}: {'; '.join(problems[:5])}. Start one Ray node per dagsched node with "
            f"`ray start --labels {NODE_LABEL}=<id>` and at least its cpus and gpus",
        )
    return RayCluster(ids, has_mem)

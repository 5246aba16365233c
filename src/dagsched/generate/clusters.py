"""Cluster presets built from cloud instance types, and seeded random clusters.

Instance types mirror AWS EC2 on-demand Linux list prices in us-east-1
(2024); `speed` is a relative per-core speed judged from CPU generation and
clock (m6a = 1.0). Bandwidths are the instances' sustained network figures,
10 Gbit/s = 1.25e9 B/s. Latency is 0: within one availability zone it is
about 0.1 ms, negligible beside task runtimes of seconds.

Presets:

- ``small-3``: one general, one compute-optimised and one 4-GPU node; the
  smallest cluster on which every generated family (GPU training included)
  fits. For tests.
- ``homog-8``: 8 identical m6a.4xlarge (16 cpu, 64 GiB, speed 1.0,
  $0.6912/h, 10 Gbit/s). The textbook homogeneous case; no GPUs, so
  ``ml_pipeline`` workflows do not fit it.
- ``hetero-16``: 16 nodes of six types: general-purpose (m6a, and older
  slower m5a), compute-optimised (c7i, c7a.8xlarge: faster, pricier per
  node), memory-optimised (r6i, 128 GiB) and GPU (g5.12xlarge, 4 GPUs);
  speeds 0.8-1.6.
- ``large-100``: 100 nodes of seven types, the hetero-16 mix scaled up plus two
  8-GPU p4d.24xlarge nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dagsched.model.entities import Cluster, Node
from dagsched.model.errors import InputError

GBIT_S = 1.25e8
"""bytes per second in one Gbit/s"""


@dataclass(frozen=True)
class NodeType:
    """A cloud instance type: capacity, relative speed, list price and network."""

    instance: str
    """the provider's name, e.g. "m6a.4xlarge" """
    role: str
    """general, compute, memory or gpu; also the node id prefix"""
    cpu: int
    mem_gib: float
    gpu: int
    speed: float
    """relative speed; 1.0 = m6a"""
    price_per_hour: float
    """USD per hour, on-demand"""
    bandwidth: float
    """bytes per second"""

    def node(self, node_id: str) -> Node:
        return Node(
            id=node_id,
            cpu=self.cpu,
            mem=self.mem_gib,
            gpu=self.gpu,
            speed=self.speed,
            price_per_hour=self.price_per_hour,
            bandwidth=self.bandwidth,
            labels={"instance": self.instance, "role": self.role},
        )


NODE_TYPES: dict[str, NodeType] = {
    t.instance: t
    for t in (
        NodeType("m6a.4xlarge", "general", 16, 64.0, 0, 1.0, 0.6912, 10 * GBIT_S),
        NodeType("m5a.4xlarge", "general", 16, 64.0, 0, 0.8, 0.688, 10 * GBIT_S),
        NodeType("c7i.4xlarge", "compute", 16, 32.0, 0, 1.4, 0.714, 10 * GBIT_S),
        NodeType("c7a.8xlarge", "compute", 32, 64.0, 0, 1.6, 1.64224, 12.5 * GBIT_S),
        NodeType("r6i.4xlarge", "memory", 16, 128.0, 0, 1.1, 1.008, 10 * GBIT_S),
        NodeType("g5.12xlarge", "gpu", 48, 192.0, 4, 1.2, 5.672, 40 * GBIT_S),
        NodeType("p4d.24xlarge", "gpu", 96, 1152.0, 8, 1.5, 32.7726, 400 * GBIT_S),
    )
}


@dataclass(frozen=True)
class Preset:
    """A named cluster: what it is for and how many nodes of each instance type."""

    description: str
    composition: tuple[tuple[str, int], ...]

    @property
    def n_nodes(self) -> int:
        return sum(count for _, count in self.composition)


PRESETS: dict[str, Preset] = {
    "small-3": Preset(
        "3 nodes (general, compute, 4-GPU) on which every generated family fits; for tests",
        (("m6a.4xlarge", 1), ("c7i.4xlarge", 1), ("g5.12xlarge", 1)),
    ),
    "homog-8": Preset(
        "8 identical m6a.4xlarge: 16 cpu, 64 GiB, speed 1.0, $0.6912/h, 10 Gbit/s; no GPUs",
        (("m6a.4xlarge", 8),),
    ),
    "hetero-16": Preset(
        "16 nodes: general (m6a, slower m5a), compute (c7i, c7a.8xlarge), memory (r6i), GPU (g5.12xlarge)",
        (
            ("m6a.4xlarge", 5),
            ("m5a.4xlarge", 2),
            ("c7i.4xlarge", 3),
            ("c7a.8xlarge", 2),
            ("r6i.4xlarge", 2),
            ("g5.12xlarge", 2),
        ),
    ),
    "large-100": Preset(
        "100 nodes of seven types: the hetero-16 mix scaled up plus two 8-GPU p4d.24xlarge",
        (
            ("m6a.4xlarge", 40),
            ("m5a.4xlarge", 10),
            ("c7i.4xlarge", 20),
            ("c7a.8xlarge", 10),
            ("r6i.4xlarge", 12),
            ("g5.12xlarge", 6),
            ("p4d.24xlarge", 2),
        ),
    ),
}


def cluster_preset(name: str) -> Cluster:
    """The preset cluster called `name`; node ids are role-number, e.g. "general-03", "gpu-00"."""
    preset = PRESETS.get(name)
    if preset is None:
        raise InputError("preset", f"unknown cluster preset '{name}'; choose one of {', '.join(PRESETS)}")
    count: dict[str, int] = {}
    nodes: list[Node] = []
    for instance, k in preset.composition:
        node_type = NODE_TYPES[instance]
        for _ in range(k):
            i = count.get(node_type.role, 0)
            count[node_type.role] = i + 1
            nodes.append(node_type.node(f"{node_type.role}-{i:02d}"))
    return Cluster(name=name, nodes=nodes)


def cluster_from_spec(spec: str) -> Cluster:
    """A preset name or the path of a cluster file (what `--cluster` takes); InputError naming `--cluster` otherwise."""
    from pathlib import Path

    from dagsched.io import read_cluster

    if spec in PRESETS:
        return cluster_preset(spec)
    if Path(spec).exists():
        return read_cluster(Path(spec))
    raise InputError("--cluster", f"'{spec}' is neither a preset ({', '.join(sorted(PRESETS))}) nor an existing file")


# linear list-price model fitted by eye to the types above: per core-hour and per GiB-hour at speed 1.0,
# plus per GPU-hour; faster cores cost about sqrt(speed) more
_USD_PER_CORE_H = 0.036
_USD_PER_GIB_H = 0.0018
_USD_PER_GPU_H = 1.2


def random_cluster(n_nodes: int, seed: int, *, heterogeneity: float = 0.5, gpu_fraction: float = 0.125) -> Cluster:
    """A seeded cluster of `n_nodes` for property tests and benchmarks.

    `heterogeneity` in [0, 1]: 0 gives identical 16-cpu 64-GiB speed-1.0
    nodes; 1 gives sizes 8-32 cpu, memory 2-8 GiB per core, speeds spread
    about 0.5-2.0 and bandwidths 10-40 Gbit/s. Every node has at least 8 cpu
    and 32 GiB, so every generated non-GPU task fits anywhere. A
    `gpu_fraction` of the nodes (at least one when positive) has 4 GPUs.
    Prices follow a linear list-price model with a little noise.
    """
    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int | np.integer) or n_nodes < 1:
        raise InputError("n_nodes", f"a cluster needs at least 1 node, got {n_nodes!r}")
    if not (0.0 <= heterogeneity <= 1.0):
        raise InputError("heterogeneity", f"must lie in [0, 1], got {heterogeneity!r}")
    if not (0.0 <= gpu_fraction <= 1.0):
        raise InputError("gpu_fraction", f"must lie in [0, 1], got {gpu_fraction!r}")
    h = heterogeneity
    rng = np.random.default_rng(seed)
    speed = np.round(np.clip(np.exp(rng.normal(0.0, 0.35 * h, n_nodes)), 0.5, 2.0), 2)
    cpu = rng.choice([8, 16, 32], size=n_nodes, p=[h / 3, 1 - 2 * h / 3, h / 3])
    gib_per_core = rng.choice([2.0, 4.0, 8.0], size=n_nodes, p=[h / 3, 1 - 2 * h / 3, h / 3])
    mem_gib = np.maximum(cpu * gib_per_core, 32.0)
    bandwidth = GBIT_S * rng.choice([10.0, 20.0, 40.0], size=n_nodes, p=[1 - 2 * h / 3, h / 3, h / 3])
    gpu = np.zeros(n_nodes, dtype=np.int64)
    n_gpu = math.ceil(gpu_fraction * n_nodes) if gpu_fraction > 0 else 0
    gpu[rng.choice(n_nodes, size=n_gpu, replace=False)] = 4
    noise = np.exp(rng.normal(0.0, 0.05 * h, n_nodes))
    price = (_USD_PER_CORE_H * cpu + _USD_PER_GIB_H * mem_gib) * np.sqrt(speed) + _USD_PER_GPU_H * gpu
    price = np.round(price * noise, 4)
    nodes = [
        Node(
            id=f"n{i:03d}",
            cpu=float(cpu[i]),
            mem=float(mem_gib[i]),
            gpu=int(gpu[i]),
            speed=float(speed[i]),
            price_per_hour=float(price[i]),
            bandwidth=float(bandwidth[i]),
        )
        for i in range(n_nodes)
    ]
    return Cluster(name=f"random-{n_nodes}-s{seed}", nodes=nodes)

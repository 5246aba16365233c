"""Cluster presets keep their promised sizes and mixes; random clusters are seeded and bounded."""

from __future__ import annotations

import pytest

from dagsched.generate import NODE_TYPES, PRESETS, cluster_preset, random_cluster
from dagsched.model import InputError


@pytest.mark.parametrize(("name", "n_nodes"), [("small-3", 3), ("homog-8", 8), ("hetero-16", 16), ("large-100", 100)])
def test_presets_have_their_node_counts(name: str, n_nodes: int) -> None:
    """Each preset has the node count in its name, unique ids, and its Preset says the same."""
    cluster = cluster_preset(name)
    assert cluster.name == name
    assert len(cluster.nodes) == n_nodes == PRESETS[name].n_nodes
    assert len({n.id for n in cluster.nodes}) == n_nodes


def test_homog_8_is_eight_identical_general_nodes() -> None:
    """homog-8: 16 cpu, 64 GiB, no GPU, speed 1.0, $0.6912/h, 1.25e9 B/s on every node."""
    nodes = cluster_preset("homog-8").nodes
    assert {(n.cpu, n.mem, n.gpu, n.speed, n.price_per_hour, n.bandwidth) for n in nodes} == {
        (16.0, 64.0, 0, 1.0, 0.6912, 1.25e9)
    }
    assert nodes[0].id == "general-00" and nodes[-1].id == "general-07"


def test_hetero_16_mixes_roles_speeds_and_prices() -> None:
    """hetero-16: general, compute, memory and 4-GPU nodes; speeds span 0.8-1.6; faster compute costs more."""
    nodes = cluster_preset("hetero-16").nodes
    roles = {n.labels["role"] for n in nodes}
    assert roles == {"general", "compute", "memory", "gpu"}
    gpu_nodes = [n for n in nodes if n.gpu]
    assert len(gpu_nodes) == 2 and all(n.gpu == 4 for n in gpu_nodes)
    speeds = {n.speed for n in nodes}
    assert len(speeds) >= 4 and min(speeds) == 0.8 and max(speeds) == 1.6
    assert len({n.price_per_hour for n in nodes}) >= 5
    m6a, c7i = NODE_TYPES["m6a.4xlarge"], NODE_TYPES["c7i.4xlarge"]
    assert c7i.speed > m6a.speed and c7i.price_per_hour > m6a.price_per_hour
    assert max(n.mem for n in nodes if n.labels["role"] == "memory") == 128.0


def test_large_100_has_several_types_and_gpus() -> None:
    """large-100: at least five instance types and some 8-GPU nodes."""
    nodes = cluster_preset("large-100").nodes
    assert len({n.labels["instance"] for n in nodes}) >= 5
    assert sum(n.gpu == 8 for n in nodes) == 2


def test_unknown_preset_names_the_choices() -> None:
    """An unknown preset raises InputError on field 'preset' listing the names."""
    with pytest.raises(InputError, match="preset: unknown cluster preset 'huge'; choose one of small-3, homog-8"):
        cluster_preset("huge")


def test_random_cluster_is_seeded_and_respects_heterogeneity() -> None:
    """Same seed, equal cluster; heterogeneity 0 is uniform; every node has >= 8 cpu and >= 32 GiB."""
    a = random_cluster(40, 5, heterogeneity=0.8)
    assert a == random_cluster(40, 5, heterogeneity=0.8)
    assert a != random_cluster(40, 6, heterogeneity=0.8)
    assert len(a.nodes) == 40 and sum(n.gpu > 0 for n in a.nodes) == 5  # ceil(0.125 * 40)
    assert len({n.speed for n in a.nodes}) > 5
    assert all(n.cpu >= 8 and n.mem >= 32 and 0.5 <= n.speed <= 2.0 for n in a.nodes)
    flat = random_cluster(10, 1, heterogeneity=0.0, gpu_fraction=0.0)
    assert {(n.cpu, n.mem, n.speed, n.gpu) for n in flat.nodes} == {(16.0, 64.0, 1.0, 0)}


@pytest.mark.parametrize(("kwargs", "field"), [({"n_nodes": 0}, "n_nodes"), ({"heterogeneity": 2.0}, "heterogeneity")])
def test_random_cluster_bad_arguments(kwargs: dict[str, float], field: str) -> None:
    """Bad sizes or heterogeneity raise InputError naming the argument."""
    args = {"n_nodes": 4, "seed": 0} | kwargs
    with pytest.raises(InputError) as err:
        random_cluster(**args)  # type: ignore[arg-type]
    assert err.value.field == field

"""Synthetic workloads: topology families x scales, runtime distributions, WfCommons recipes,
arrival processes and cluster presets. Everything is seeded: same arguments and seed, equal result.

The recipe names (`RECIPES`, `recipe_workflow`, `min_tasks`) load lazily, because importing
wfcommons takes about a second.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dagsched.generate.arrivals import ARRIVALS, arrival_times, poisson_arrivals
from dagsched.generate.clusters import NODE_TYPES, PRESETS, NodeType, Preset, cluster_preset, random_cluster
from dagsched.generate.distributions import Gamma, LogNormal, RuntimeDistribution, Weibull, by_name
from dagsched.generate.topologies import ALL_FAMILIES, DEFAULT_RUNTIME, FAMILIES, SCALES, generate_workflow

if TYPE_CHECKING:
    from dagsched.generate.recipes import RECIPES, min_tasks, recipe_workflow

_LAZY = {"RECIPES", "recipe_workflow", "min_tasks"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from dagsched.generate import recipes

        return getattr(recipes, name)
    raise AttributeError(f"module 'dagsched.generate' has no attribute {name!r}")


__all__ = [
    "ALL_FAMILIES",
    "ARRIVALS",
    "DEFAULT_RUNTIME",
    "FAMILIES",
    "NODE_TYPES",
    "PRESETS",
    "RECIPES",
    "SCALES",
    "Gamma",
    "LogNormal",
    "NodeType",
    "Preset",
    "RuntimeDistribution",
    "Weibull",
    "arrival_times",
    "by_name",
    "cluster_preset",
    "generate_workflow",
    "min_tasks",
    "poisson_arrivals",
    "random_cluster",
    "recipe_workflow",
]

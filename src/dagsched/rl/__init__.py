"""The learned scheduler: Gymnasium environment, observation features, reward and the GNN policy.

Importing this package registers the environment as ``dagsched/Scheduling-v0`` (by string entry
point, so nothing heavy is imported); the names below load on first use, so importing the
environment does not import torch and the policy does not import gymnasium.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from gymnasium.envs.registration import register, registry

ENV_ID = "dagsched/Scheduling-v0"

if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="dagsched.rl.env:SchedulingEnv")

_LAZY = {
    "EnvConfig": "env",
    "IllegalActionError": "env",
    "SchedulingEnv": "env",
    "FEATURE_VERSION": "features",
    "FeatureBuilder": "features",
    "Observation": "features",
    "Baseline": "reward",
    "RewardWeights": "reward",
    "compute_baseline": "reward",
    "objective_terms": "reward",
    "PolicyConfig": "policy",
    "PolicyFileError": "policy",
    "SchedulingPolicy": "policy",
    "load_policy": "policy",
    "save_policy": "policy",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dagsched.rl' has no attribute {name!r}")
    return getattr(import_module(f"dagsched.rl.{module}"), name)


__all__ = ["ENV_ID", *sorted(_LAZY)]

"""Training the learned schedulers, and the Gymnasium environment.

- `priority_train` (`dagsched train-priority`): the priority policy of `drl`, by POMO or SLIM over a curriculum;
- `stream_train`: the dispatch index of `drl_stream`, by imitation of `srpt_hold` then evolution strategies;
- `finetune`: the priority policy fine-tuned on the service's logged problems;
- `env`: one scheduling decision per step over the one simulator, registered as ``dagsched/Scheduling-v0``
  for anyone training a policy that decides step by step (no shipped scheduler is trained through it).

Importing this package registers the environment (by string entry point, so nothing heavy is imported);
the names below load on first use.
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
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dagsched.rl' has no attribute {name!r}")
    return getattr(import_module(f"dagsched.rl.{module}"), name)


__all__ = ["ENV_ID", *sorted(_LAZY)]

"""The learned policy as one layer, below the schedulers: features, their kernels, the GNN, inference, files.

- `features`: a `DecisionPoint` as the policy's observation (`FeatureBuilder`);
- `kernels`: the features and the dense forward as numba kernels, equal to numpy to the bit;
- `gnn`: the torch module (`SchedulingPolicy`) that training updates;
- `inference`: the same network on numpy weights, one decision at a time (`PolicyInference`);
- `files`: safetensors weights with a JSON of architecture and feature version; the cached loader;
- `priority_features`, `priority_net`: the priority policy of `drl` (one score per task in one pass).

The drl scheduler and MCTS's priors read it; `dagsched.rl` trains it. Importing this package loads
neither torch nor numba (it names the shipped policy): import the module you need.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEFAULT_MODEL = "drl-v2"
"""Stem of the shipped per-decision policy (`drl_step`) in dagsched/data/models/ (a .safetensors and a .json)."""
POLICY_ENV = "DAGSCHED_DRL_POLICY"
"""Environment variable naming another per-decision policy stem to load by default (how the benchmark's workers
evaluate one)."""
PRIORITY_MODEL = "drl-v3"
"""Stem of the shipped priority policy (`drl`: learned priorities, sampled and decoded by list scheduling)."""
PRIORITY_POLICY_ENV = "DAGSCHED_PRIORITY_POLICY"
"""Environment variable naming another priority policy stem for `drl` to load by default."""


def shipped_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Path stem of a policy shipped in dagsched/data/models/ (without suffix)."""
    return Path(str(resources.files("dagsched") / "data" / "models" / name))

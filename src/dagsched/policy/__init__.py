"""The learned policies as one layer, below the schedulers: their inputs, networks and files.

- `priority_features`, `priority_net`: the priority policy of `drl` (one score per task in one pass);
- `stream_index`: the dispatch index of `drl_stream` (one score per ready task of a shared cluster);
- `features`: a `DecisionPoint` as an observation (`FeatureBuilder`), what the Gymnasium environment
  `dagsched.rl.env` gives a policy that decides one step at a time;
- `files`: what every policy file shares (safetensors beside a JSON with architecture and sha256).

`dagsched.rl` trains them. Importing this package loads neither torch nor numba (it names the shipped
policies): import the module you need.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

PRIORITY_MODEL = "drl-v3"
"""Stem of the shipped priority policy (`drl`: learned priorities, sampled and decoded by list scheduling)."""
PRIORITY_POLICY_ENV = "DAGSCHED_PRIORITY_POLICY"
"""Environment variable naming another priority policy stem for `drl` to load by default."""


def shipped_model_path(name: str = PRIORITY_MODEL) -> Path:
    """Path stem of a policy shipped in dagsched/data/models/ (without suffix)."""
    return Path(str(resources.files("dagsched") / "data" / "models" / name))

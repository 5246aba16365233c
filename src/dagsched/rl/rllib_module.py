"""The thin RLlib adapter: a TorchRLModule (new API stack) holding one `SchedulingPolicy`.

RLlib's default encoders do not take a nested Dict of graph tensors, so this module reads the
observation dict from `batch[Columns.OBS]` itself; the policy already masks illegal actions with a
large negative logit, so RLlib's default categorical distribution never samples one. The value
comes from the same forward pass (`Columns.EMBEDDINGS`) during training. Importing this module
imports Ray; nothing else in dagsched.rl does, except `train`.
"""

from __future__ import annotations

from typing import Any

import torch
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule

from dagsched.policy.gnn import PolicyConfig, SchedulingPolicy


class SchedulingRLModule(TorchRLModule, ValueFunctionAPI):
    """`model_config = {"policy": asdict(PolicyConfig)}`; the network is `self.policy`."""

    def setup(self) -> None:
        torch.set_num_threads(1)  # env runners infer one small batch at a time
        cfg = dict((self.model_config or {}).get("policy", {}))
        self.policy = SchedulingPolicy(PolicyConfig(**cfg))

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, _ = self.policy(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: logits}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        logits, value = self.policy(batch[Columns.OBS])
        return {Columns.ACTION_DIST_INPUTS: logits, Columns.EMBEDDINGS: value}

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        if embeddings is not None:
            return embeddings
        _, value = self.policy(batch[Columns.OBS])
        return value

"""The GNN scheduling policy: a plain torch module (no Ray), saved as safetensors.

Architecture, in the order `forward` runs:

1. task encoder: an MLP lifts each task's features to `hidden`;
2. `layers` rounds of message passing over the DAG in both directions: a GAT (or GCN) layer
   along the edges (parents -> children) and one against them (children -> parents), their
   outputs concatenated, mixed by a linear layer and added to the input (residual);
3. node encoder: an MLP over each node's features, plus (option) an LSTM or an MLP over the
   node's last H utilisation snapshots;
4. summary: masked means of the task and node embeddings with the encoded global features;
5. pair scorer: an MLP over [candidate's task embedding, node embedding, pair features,
   summary] gives one logit per (candidate, node); its first layer is split by input part so
   the K x M pairs cost one small matmul over the pair features (the rest is broadcast);
6. wait logit from [summary, mean candidate embedding]; value from the summary.

Illegal actions get the logit `MASK_LOGIT` (large and negative, finite so no NaN appears
even when every action is masked). `forward` takes the environment's padded, batched
observation; `forward_single` takes one unpadded `Observation` at its exact sizes (the
reference for one decision). The DRL scheduler's inference path is `dagsched.policy.inference`,
the same network on a numpy copy of the weights; files are `dagsched.policy.files`. Training keeps
the PyG modules. Call `torch.set_num_threads(1)` for single-observation inference
on small CPUs: two threads on two cores were measured 5 to 20 times slower.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

import torch
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.utils import add_self_loops

from dagsched.policy.features import (
    GLOBAL_FEATURES,
    NODE_FEATURES,
    PAIR_FEATURES,
    TASK_FEATURES,
    Observation,
)

MASK_LOGIT = -1e9
FILE_FORMAT = "dagsched-policy"
FILE_FORMAT_VERSION = 1


@dataclass(frozen=True)
class PolicyConfig:
    """Architecture hyper-parameters; saved beside the weights and checked on load."""

    hidden: int = 64
    """width of every embedding"""
    layers: int = 2
    """message-passing rounds (each runs one layer along and one against the edges)"""
    conv: Literal["gat", "gcn"] = "gat"
    """graph attention (GATConv) or graph convolution (GCNConv)"""
    heads: int = 2
    """attention heads of a GAT layer (hidden must divide by it)"""
    history_len: int = 0
    """utilisation snapshots per node the observation carries (EnvConfig.history_len)"""
    history_encoder: Literal["lstm", "mlp"] = "lstm"
    """how the snapshots are read when history_len > 0"""
    lstm_hidden: int = 16
    """width of the LSTM over the snapshots"""
    action_space: Literal["pair", "task_eft", "rank_node", "rank_top2", "auto"] = "pair"
    """how the drl scheduler reads the pair scores (`dagsched.schedulers.drl.ACTIONS`): what the policy was
    trained for, or what won on held-out data; `rank_node` policies learn only the node of the highest-ranked
    startable task (or wait); `auto` decodes rank_node on one workflow and rank_top2 on a stream"""
    task_dim: int = len(TASK_FEATURES)
    node_dim: int = len(NODE_FEATURES)
    pair_dim: int = len(PAIR_FEATURES)
    global_dim: int = len(GLOBAL_FEATURES)

    def __post_init__(self) -> None:
        for name in ("hidden", "layers", "heads", "lstm_hidden", "task_dim", "node_dim", "pair_dim", "global_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.history_len, bool) or not isinstance(self.history_len, int) or self.history_len < 0:
            raise ValueError(f"history_len must be a non-negative integer, got {self.history_len!r}")
        if self.conv not in ("gat", "gcn"):
            raise ValueError(f"conv must be 'gat' or 'gcn', got {self.conv!r}")
        if self.action_space not in ("pair", "task_eft", "rank_node", "rank_top2", "auto"):
            raise ValueError(
                f"action_space must be pair, task_eft, rank_node, rank_top2 or auto, got {self.action_space!r}"
            )
        if self.history_encoder not in ("lstm", "mlp"):
            raise ValueError(f"history_encoder must be 'lstm' or 'mlp', got {self.history_encoder!r}")
        if self.conv == "gat" and self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} must be a multiple of heads={self.heads}")


def _mlp(*sizes: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Mean over dim 1 of x [B, N, h] where mask [B, N] is true."""
    w = mask.to(x.dtype).unsqueeze(-1)
    return (x * w).sum(1) / w.sum(1).clamp(min=1.0)


class SchedulingPolicy(nn.Module):
    """Scores every (candidate task, node) pair and waiting; estimates the state's value."""

    def __init__(self, config: PolicyConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        c = self.config = replace(config or PolicyConfig(), **overrides)
        h = c.hidden
        self.task_in = _mlp(c.task_dim, h, h)

        def conv() -> nn.Module:
            # self-loops are added once per forward (in _embed_tasks), not again by every layer
            if c.conv == "gat":
                return GATConv(h, h // c.heads, heads=c.heads, add_self_loops=False)
            return GCNConv(h, h, add_self_loops=False)

        self.along = nn.ModuleList([conv() for _ in range(c.layers)])
        self.against = nn.ModuleList([conv() for _ in range(c.layers)])
        self.mix = nn.ModuleList([nn.Linear(2 * h, h) for _ in range(c.layers)])
        hist_width = 0
        self.lstm: nn.LSTM | None = None
        if c.history_len > 0:
            if c.history_encoder == "lstm":
                self.lstm = nn.LSTM(1, c.lstm_hidden, batch_first=True)
                hist_width = c.lstm_hidden
            else:
                hist_width = c.history_len
        self.node_in = _mlp(c.node_dim + hist_width, h, h)
        self.global_in = _mlp(c.global_dim, h)
        self.summary = _mlp(3 * h, h, h)
        self.pair_task = nn.Linear(h, h, bias=False)
        self.pair_node = nn.Linear(h, h, bias=False)
        self.pair_summary = nn.Linear(h, h, bias=False)
        self.pair_in = nn.Linear(c.pair_dim, h)
        self.pair_out = _mlp(h, h, 1)
        self.wait_head = _mlp(2 * h, h, 1)
        self.value_head = _mlp(h, h, 1)

    # ---- the shared core ----------------------------------------------------------------------

    def _embed_tasks(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """x [N, F_t] over a (possibly batched) DAG with edge_index [2, E] -> [N, h]."""
        h = torch.relu(self.task_in(x))
        edge_index, _ = add_self_loops(edge_index, num_nodes=x.shape[0])
        rev = edge_index.flip(0)
        for along, against, mix in zip(self.along, self.against, self.mix, strict=True):
            msg = torch.cat([along(h, edge_index), against(h, rev)], dim=-1)
            h = h + torch.relu(mix(msg))
        return h

    def _heads(
        self,
        task_h: Tensor,  # [B, T, h]
        task_mask: Tensor,  # [B, T] bool
        node_x: Tensor,  # [B, M, F_n]
        node_mask: Tensor,  # [B, M] bool
        history: Tensor | None,  # [B, M, H]
        cands: Tensor,  # [B, K] long
        cand_mask: Tensor,  # [B, K] bool
        pair_x: Tensor,  # [B, K, M, F_p]
        global_x: Tensor,  # [B, G]
        action_mask: Tensor,  # [B, K * M + 1] bool
    ) -> tuple[Tensor, Tensor]:
        B, M = node_x.shape[:2]
        K = cands.shape[1]
        parts = [node_x]
        if self.config.history_len > 0:
            assert history is not None, "this policy reads node_history (history_len > 0)"
            if self.lstm is not None:
                _, (hn, _) = self.lstm(history.reshape(B * M, -1, 1))
                parts.append(hn[-1].reshape(B, M, -1))
            else:
                parts.append(history)
        node_h = torch.relu(self.node_in(torch.cat(parts, dim=-1)))  # [B, M, h]
        g = self.summary(
            torch.cat(
                [_masked_mean(task_h, task_mask), _masked_mean(node_h, node_mask), self.global_in(global_x)], dim=-1
            )
        )
        g = torch.relu(g)  # [B, h]
        hid = task_h.shape[-1]
        cand_h = task_h.gather(1, cands.unsqueeze(-1).expand(B, K, hid))  # [B, K, h]
        z = (
            self.pair_task(cand_h).unsqueeze(2)
            + self.pair_node(node_h).unsqueeze(1)
            + self.pair_in(pair_x)
            + self.pair_summary(g)[:, None, None, :]
        )
        pair_logit = self.pair_out(torch.relu(z)).squeeze(-1)  # [B, K, M]
        wait_logit = self.wait_head(torch.cat([g, _masked_mean(cand_h, cand_mask)], dim=-1))  # [B, 1]
        logits = torch.cat([pair_logit.reshape(B, K * M), wait_logit], dim=1)
        logits = logits.masked_fill(~action_mask, MASK_LOGIT)
        return logits, self.value_head(g).squeeze(-1)

    # ---- padded, batched observations (the environment's) ------------------------------------

    def forward(self, obs: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
        """Batched padded observations -> (masked logits [B, K * M + 1], value [B])."""
        task_x = obs["task_features"].float()
        B, T, _ = task_x.shape
        edge_index = obs["edge_index"].long()  # [B, 2, E]
        edge_mask = obs["edge_mask"].bool()  # [B, E]
        offsets = (torch.arange(B, device=task_x.device) * T).view(B, 1, 1)
        flat = (edge_index + offsets).permute(1, 0, 2).reshape(2, -1)
        flat = flat[:, edge_mask.reshape(-1)]  # padding edges dropped; padding tasks stay isolated
        task_h = self._embed_tasks(task_x.reshape(B * T, -1), flat).reshape(B, T, -1)
        history = obs["node_history"].float() if "node_history" in obs else None
        return self._heads(
            task_h,
            obs["task_mask"].bool(),
            obs["node_features"].float(),
            obs["node_mask"].bool(),
            history,
            obs["candidates"].long(),
            obs["candidate_mask"].bool(),
            obs["pair_features"].float(),
            obs["global_features"].float(),
            obs["action_mask"].bool(),
        )

    # ---- one unpadded observation (the fast path) ---------------------------------------------

    def forward_single(self, obs: Observation) -> tuple[Tensor, Tensor]:
        """One exact-size observation -> (masked logits [k * m + 1] in its unpadded layout, value [])."""
        n, m, k = obs.n_tasks, obs.n_nodes, len(obs.candidates)
        task_h = self._embed_tasks(torch.from_numpy(obs.task_x), torch.from_numpy(obs.edge_index)).unsqueeze(0)
        history = torch.from_numpy(obs.node_history).unsqueeze(0) if self.config.history_len > 0 else None
        visible = torch.ones(1, n, dtype=torch.bool) if obs.visible is None else torch.from_numpy(obs.visible)[None]
        logits, value = self._heads(
            task_h,
            visible,
            torch.from_numpy(obs.node_x).unsqueeze(0),
            torch.ones(1, m, dtype=torch.bool),
            history,
            torch.from_numpy(obs.candidates).unsqueeze(0),
            torch.ones(1, k, dtype=torch.bool),
            torch.from_numpy(obs.pair_x).unsqueeze(0),
            torch.from_numpy(obs.global_x).unsqueeze(0),
            torch.from_numpy(obs.action_mask()).unsqueeze(0),
        )
        return logits[0], value[0]


def choose(
    policy: SchedulingPolicy,
    obs: Observation,
    greedy: bool = True,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[int, int] | None:
    """The policy's choice on one observation: (task, node), or None to wait.

    Illegal actions are filtered before the softmax (their logits are `MASK_LOGIT`).
    """
    mask = obs.action_mask()
    if not mask.any():
        raise ValueError("no legal action in this observation")
    with torch.inference_mode():
        logits, _ = policy.forward_single(obs)
        if greedy:
            a = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / max(temperature, 1e-6), dim=0)
            a = int(torch.multinomial(probs, 1, generator=generator))
    if not mask[a]:  # every legal logit underflowed below MASK_LOGIT: cannot happen with finite weights
        raise RuntimeError(f"policy chose illegal action {a}")
    m = obs.n_nodes
    if a == len(mask) - 1:
        return None
    return int(obs.candidates[a // m]), a % m

"""The learned priority policy: a GNN giving every task of a workflow one score in one forward pass.

Architecture, in the order `forward` runs (PyTorch Geometric):

1. encoder: an MLP lifts each task's row (`priority_features`: its ranks, costs and data, with the
   cluster summary) to `hidden`;
2. `layers` rounds of message passing in both directions: a GraphSAGE layer with max aggregation along
   the edges (parents -> children, how rank_d is built) and one against them (children -> parents, how
   rank_u is built), concatenated, mixed by a linear layer and added to the input (residual);
3. head: an MLP to one number per task, plus a linear prior over the classic ranks (rank_u, rank_u +
   rank_d, rank_oct), which starts as `prior_scale` x rank_u: an untrained network orders tasks about
   as HEFT does, and Gumbel noise of scale 1 on its scores samples around HEFT's order.

The scores are decoded by the compiled list scheduler (`sim.listsched`): the highest-scored ready task
next, on its earliest-finish node. Weights are safetensors beside a JSON of architecture, feature names,
sha256 and training record (`save_priority_policy`, `load_priority_policy`); never pickles.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torch_geometric.nn import SAGEConv

from dagsched.policy.files import PolicyFileError, PolicyNotFound, atomic_write, policy_paths, sha256
from dagsched.policy.priority_features import (
    FEATURE_VERSION,
    GLOBAL_FEATURES,
    PRIOR_FEATURES,
    TASK_FEATURES,
    PriorityInputs,
    n_features,
    prior_columns,
)

FILE_FORMAT = "dagsched-priority-policy"
FILE_FORMAT_VERSION = 1


@dataclass(frozen=True)
class PriorityConfig:
    """Architecture hyper-parameters; saved beside the weights and checked on load."""

    hidden: int = 64
    """width of every embedding"""
    layers: int = 3
    """message-passing rounds (each one layer along and one against the edges)"""
    prior_scale: float = 20.0
    """the linear prior's starting weight on rank_u / scale: how sharply an untrained network follows HEFT's order
    against Gumbel noise of scale 1"""
    head_init: float = 0.1
    """the head's last layer starts at this share of its default initialisation (a small learned part)"""

    def __post_init__(self) -> None:
        for name in ("hidden", "layers"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not (self.prior_scale >= 0 and self.head_init >= 0):
            raise ValueError("prior_scale and head_init must be >= 0")


def _sage_max(conv: SAGEConv, h: Tensor, source: Tensor, into: Tensor) -> Tensor:
    """`conv(h, edge_index)` of a SAGEConv with max aggregation, as PyG computes it on the CPU (the max of the
    sources' rows into each target, zeros where none, by `scatter_reduce_`), without its per-call dispatch; the
    index tensors are built once per forward for all six layers. The same floats and gradients as `conv(...)`
    (tests/policy); the forward of a 20-task workflow takes 40 % less time, where that dispatch was most of a
    layer's cost."""
    gathered = h.index_select(0, source)
    most = h.new_zeros(h.shape).scatter_reduce_(0, into, gathered, reduce="amax", include_self=False)
    return conv.lin_l(most) + conv.lin_r(h)


class PriorityPolicy(nn.Module):
    """Scores every task of one problem (`forward(x, edge_index) -> (tasks,)`)."""

    def __init__(self, config: PriorityConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        config = config or PriorityConfig()
        if overrides:
            config = PriorityConfig(**{**asdict(config), **overrides})
        self.config = config
        self.meta: dict[str, Any] = {}
        """the metadata it was loaded with (training record, held-out families); empty for a fresh network"""
        h = config.hidden
        self.encoder = nn.Sequential(nn.Linear(n_features(), h), nn.ReLU(), nn.Linear(h, h))
        self.down = nn.ModuleList(SAGEConv(h, h, aggr="max") for _ in range(config.layers))
        self.up = nn.ModuleList(SAGEConv(h, h, aggr="max") for _ in range(config.layers))
        self.mix = nn.ModuleList(nn.Linear(2 * h, h) for _ in range(config.layers))
        self.head = nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 1))
        self.prior = nn.Linear(len(PRIOR_FEATURES), 1)
        with torch.no_grad():
            last = self.head[-1]
            assert isinstance(last, nn.Linear)
            last.weight.mul_(config.head_init)
            last.bias.zero_()
            self.prior.weight.zero_()
            self.prior.weight[0, PRIOR_FEATURES.index("rank_u")] = config.prior_scale
            self.prior.bias.zero_()
        self.register_buffer("prior_cols", torch.tensor(prior_columns(), dtype=torch.long), persistent=False)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.forward_parts(x, edge_index)[0]

    def forward_parts(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """(scores, the learned part of them: the head's output, which the prior's linear ranks are added to)."""
        h = self.encoder(x)
        width = h.shape[1]
        parents, children = edge_index[0], edge_index[1]
        into_children = children.view(-1, 1).expand(-1, width)  # built once for every layer
        into_parents = parents.view(-1, 1).expand(-1, width)
        for down, up, mix in zip(self.down, self.up, self.mix, strict=True):
            along = _sage_max(down, h, parents, into_children)
            against = _sage_max(up, h, children, into_parents)
            h = h + torch.relu(mix(torch.cat([along, against], dim=1)))
        learned = self.head(h).squeeze(-1)
        return learned + self.prior(x.index_select(1, self.prior_cols)).squeeze(-1), learned

    def scores(self, inputs: PriorityInputs) -> np.ndarray:
        """The scores of one problem's tasks as float64 (inference: no gradient)."""
        with torch.inference_mode():
            out = self(torch.from_numpy(inputs.x), torch.from_numpy(inputs.edge_index))
        return out.double().numpy()


def _feature_names() -> dict[str, list[str]]:
    return {"task": list(TASK_FEATURES), "global": list(GLOBAL_FEATURES), "prior": list(PRIOR_FEATURES)}


def save_priority_policy(
    policy: PriorityPolicy, path: str | os.PathLike[str], extra: dict[str, Any] | None = None
) -> tuple[Path, Path]:
    """Write `<path>.safetensors` and `<path>.json` (architecture, feature names and version, sha256, and
    `extra`: the training record, the held-out families)."""
    weights_path, meta_path = policy_paths(path)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()}
    fd, tmp = tempfile.mkstemp(dir=weights_path.parent, prefix=f".{weights_path.name}.")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={"format": FILE_FORMAT})
        digest = sha256(Path(tmp))
        os.replace(tmp, weights_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    meta = {
        **(extra or {}),
        "format": FILE_FORMAT,
        "format_version": FILE_FORMAT_VERSION,
        "feature_version": FEATURE_VERSION,
        "feature_names": _feature_names(),
        "architecture": asdict(policy.config),
        "sha256": digest,
        "tensors": {k: list(v.shape) for k, v in sorted(tensors.items())},
    }
    atomic_write(meta_path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
    return weights_path, meta_path


def is_priority_policy(meta: dict[str, Any]) -> bool:
    """Whether a policy's metadata names this file format (any other is refused by name)."""
    return meta.get("format") == FILE_FORMAT


def load_priority_policy(path: str | os.PathLike[str]) -> PriorityPolicy:
    """Load a saved priority policy, refusing any mismatch (format, features, hash, tensor shapes) by name."""
    weights_path, meta_path = policy_paths(path)
    for p in (weights_path, meta_path):
        if not p.exists():
            raise PolicyFileError(f"policy file {p} is missing (a policy is a .safetensors and a .json side by side)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as e:
        raise PolicyFileError(f"{meta_path} is not valid JSON: {e}") from e
    if not isinstance(meta, dict) or not is_priority_policy(meta) or meta.get("format_version") != FILE_FORMAT_VERSION:
        got = meta.get("format") if isinstance(meta, dict) else None
        raise PolicyFileError(f"{meta_path}: format {got!r}, expected {FILE_FORMAT!r} version {FILE_FORMAT_VERSION}")
    if meta.get("feature_version") != FEATURE_VERSION or meta.get("feature_names") != _feature_names():
        raise PolicyFileError(
            f"{meta_path}: the policy reads feature version {meta.get('feature_version')!r} "
            f"({meta.get('feature_names')}), this dagsched builds version {FEATURE_VERSION}: retrain it"
        )
    arch = meta.get("architecture", {})
    known = {f.name for f in fields(PriorityConfig)}
    unknown = sorted(set(arch) - known)
    if unknown:
        raise PolicyFileError(f"{meta_path}: unknown architecture field(s) {', '.join(unknown)}")
    try:
        policy = PriorityPolicy(PriorityConfig(**arch))
    except (TypeError, ValueError) as err:
        raise PolicyFileError(f"{meta_path}: architecture does not build: {err}") from None
    digest = sha256(weights_path)
    if digest != meta.get("sha256"):
        raise PolicyFileError(
            f"{weights_path}: sha256 {digest} differs from the one recorded in {meta_path.name} "
            f"({meta.get('sha256')}); the weights were changed or corrupted"
        )
    with safe_open(str(weights_path), framework="pt") as f:
        shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118  (safe_open has no __iter__)
    want = {k: list(v.shape) for k, v in policy.state_dict().items()}
    problems = [f"missing {k}" for k in sorted(set(want) - set(shapes))]
    problems += [f"unexpected {k}" for k in sorted(set(shapes) - set(want))]
    problems += [
        f"{k}: file {shapes[k]}, architecture {want[k]}"
        for k in sorted(set(want) & set(shapes))
        if shapes[k] != want[k]
    ]
    if problems:
        raise PolicyFileError(f"{weights_path}: tensors do not match the recorded architecture: " + "; ".join(problems))
    policy.load_state_dict(load_file(str(weights_path)))
    policy.eval()
    policy.meta = meta
    return policy


_CACHE: dict[str, PriorityPolicy] = {}


def load_cached_priority_policy(path: str | os.PathLike[str] | None = None) -> PriorityPolicy:
    """The priority policy at `path` (default: $DAGSCHED_PRIORITY_POLICY, else the shipped model), loaded once per
    process; a missing file raises `PolicyNotFound` naming it."""
    from dagsched.policy import PRIORITY_MODEL, PRIORITY_POLICY_ENV, shipped_model_path

    torch.set_num_threads(1)
    if path is None:
        path = os.environ.get(PRIORITY_POLICY_ENV) or None
    stem = Path(path) if path is not None else shipped_model_path(PRIORITY_MODEL)
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    key = str(stem.resolve())
    if key not in _CACHE:
        weights = stem.with_name(stem.name + ".safetensors")
        if not weights.exists():
            raise PolicyNotFound(
                f"priority policy weights not found at {weights}; train one with `dagsched train-priority`"
            )
        _CACHE[key] = load_priority_policy(stem)
    return _CACHE[key]

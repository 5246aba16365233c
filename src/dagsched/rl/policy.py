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
reference for one decision). `PolicyInference` is the DRL scheduler's inference path: the
same network on a numpy copy of the weights, made once per plan (the static task columns'
share of the first layer and the DAG's message-passing structure computed there; the two
directions of a round fused into one product; dense matrices below DENSE_MAX_TASKS tasks, a
CSR matrix above, no PyG call set-up), reading `FeatureBuilder.decision` and scoring only the
legal pairs; on dense DAGs the whole forward is one numba kernel (`dagsched.rl.kernels.dense_logits`).
It is tested against `forward_single` (logits within 1e-5, same greedy actions, same plans).
Training keeps the PyG modules. Call `torch.set_num_threads(1)` for single-observation inference
on small CPUs: two threads on two cores were measured 5 to 20 times slower.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
import weakref
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv
from torch_geometric.utils import add_self_loops

from dagsched.rl import kernels
from dagsched.rl.features import (
    FEATURE_VERSION,
    GLOBAL_FEATURES,
    NODE_FEATURES,
    PAIR_FEATURES,
    TASK_FEATURES,
    TASK_STATIC,
    DecisionInputs,
    FeatureBuilder,
    Observation,
    feature_sizes,
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
    task_dim: int = len(TASK_FEATURES)
    node_dim: int = len(NODE_FEATURES)
    pair_dim: int = len(PAIR_FEATURES)
    global_dim: int = len(GLOBAL_FEATURES)

    def __post_init__(self) -> None:
        if self.conv not in ("gat", "gcn"):
            raise ValueError(f"conv must be 'gat' or 'gcn', got {self.conv!r}")
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
        logits, value = self._heads(
            task_h,
            torch.ones(1, n, dtype=torch.bool),
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


# ---- files --------------------------------------------------------------------------------------


class PolicyFileError(ValueError):
    """A saved policy is missing, corrupt, or does not match this code."""


def _paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    p = Path(path)
    if p.suffix in (".safetensors", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".safetensors"), p.with_name(p.name + ".json")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _feature_names() -> dict[str, list[str]]:
    return {
        "task": list(TASK_FEATURES),
        "node": list(NODE_FEATURES),
        "pair": list(PAIR_FEATURES),
        "global": list(GLOBAL_FEATURES),
    }


def save_policy(policy: SchedulingPolicy, path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """Write `<path>.safetensors` (weights) and `<path>.json` (architecture, feature version, sha256)."""
    weights_path, meta_path = _paths(path)
    weights_path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu().contiguous() for k, v in policy.state_dict().items()}
    fd, tmp = tempfile.mkstemp(dir=weights_path.parent, prefix=f".{weights_path.name}.")
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={"format": FILE_FORMAT})
        digest = _sha256(Path(tmp))
        os.replace(tmp, weights_path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    meta = {
        "format": FILE_FORMAT,
        "format_version": FILE_FORMAT_VERSION,
        "feature_version": FEATURE_VERSION,
        "feature_sizes": feature_sizes(policy.config.history_len),
        "feature_names": _feature_names(),
        "architecture": asdict(policy.config),
        "sha256": digest,
        "tensors": {k: list(v.shape) for k, v in sorted(tensors.items())},
    }
    _atomic_write(meta_path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode())
    return weights_path, meta_path


def load_policy(path: str | os.PathLike[str]) -> SchedulingPolicy:
    """Load a saved policy, refusing any mismatch (feature version, sizes, hash, tensor shapes) with a message."""
    weights_path, meta_path = _paths(path)
    for p in (weights_path, meta_path):
        if not p.exists():
            raise PolicyFileError(f"policy file {p} is missing (a policy is a .safetensors and a .json side by side)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as e:
        raise PolicyFileError(f"{meta_path} is not valid JSON: {e}") from e
    if meta.get("format") != FILE_FORMAT or meta.get("format_version") != FILE_FORMAT_VERSION:
        raise PolicyFileError(
            f"{meta_path}: format {meta.get('format')!r} version {meta.get('format_version')!r}, "
            f"expected {FILE_FORMAT!r} version {FILE_FORMAT_VERSION}"
        )
    if meta.get("feature_version") != FEATURE_VERSION:
        raise PolicyFileError(
            f"{meta_path}: feature version mismatch: the policy was trained on feature version "
            f"{meta.get('feature_version')!r} but this dagsched builds feature version {FEATURE_VERSION}; "
            "retrain it or use the dagsched release it was trained with"
        )
    arch = meta.get("architecture", {})
    known = {f.name for f in fields(PolicyConfig)}
    unknown = sorted(set(arch) - known)
    if unknown:
        raise PolicyFileError(f"{meta_path}: unknown architecture field(s) {', '.join(unknown)}")
    config = PolicyConfig(**arch)
    expected = feature_sizes(config.history_len)
    recorded = meta.get("feature_sizes", {})
    dims = {"task": config.task_dim, "node": config.node_dim, "pair": config.pair_dim, "global": config.global_dim}
    diffs = [
        f"{group}: file {recorded.get(group)}, code {size}"
        for group, size in expected.items()
        if recorded.get(group) != size or (group in dims and dims[group] != size)
    ]
    names = meta.get("feature_names", {})
    diffs += [
        f"{group} feature names differ: file {names.get(group)}, code {want}"
        for group, want in _feature_names().items()
        if names.get(group) != want
    ]
    if diffs:
        raise PolicyFileError(f"{meta_path}: feature sizes or names differ from this code: " + "; ".join(diffs))
    digest = _sha256(weights_path)
    if digest != meta.get("sha256"):
        raise PolicyFileError(
            f"{weights_path}: sha256 {digest} differs from the one recorded in {meta_path.name} "
            f"({meta.get('sha256')}); the weights were changed or corrupted"
        )
    with safe_open(str(weights_path), framework="pt") as f:
        shapes = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118  (safe_open has no __iter__)
    policy = SchedulingPolicy(config)
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
    return policy


def count_parameters(policy: nn.Module) -> int:
    return int(sum(int(np.prod(p.shape)) for p in policy.parameters()))


# ---- the inference path: one decision at a time, the static parts once per plan -----------------

_NEAR_TIE = 1e-4
"""Pairs scored within this (relative) of the best are checked for bit-identical inputs, which must score equal."""
_EXP_SAFE = 60.0  # float32 exp neither overflows nor underflows (to a subnormal) within +-60

DENSE_MAX_TASKS = 96
"""Up to this many tasks the inference path passes messages with dense (n, n) matrices, above it with CSR."""

Array32 = npt.NDArray[np.float32]
Layers = list[tuple[Array32, Array32]]


_NUMPY_MATMUL_MAX = 1 << 15
"""Above this many multiply-adds a product goes to torch (one thread): numpy's BLAS starts threads there, which
on a small shared CPU was measured 50 to 200 times slower (15 ms for a (1000, 32) x (32, 32) product)."""


def _mm(a: Array32, b: Array32) -> Array32:
    """a @ b, small products in numpy (no call overhead), large ones in torch (honours torch.set_num_threads)."""
    if a.size * b.shape[-1] <= _NUMPY_MATMUL_MAX:
        return a @ b
    return (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()


def _np32(t: Tensor) -> Array32:
    return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float32)


def _linears(seq: nn.Module) -> Layers:
    """(W^T, b) of each Linear of an `_mlp`, in order (a ReLU between each two)."""
    out = []
    for layer in seq.modules():
        if isinstance(layer, nn.Linear):
            bias = torch.zeros(layer.out_features) if layer.bias is None else layer.bias
            out.append((_np32(layer.weight.t()), _np32(bias)))
    return out


def _apply(layers: Layers, x: Array32) -> Array32:
    for i, (wt, b) in enumerate(layers):
        x = _mm(x, wt) + b
        if i < len(layers) - 1:
            np.maximum(x, 0.0, out=x)
    return x


@dataclass(frozen=True)
class _Round:
    """One message-passing round: its layer along the edges and its layer against them, fused, then the mix.

    The fused product `h @ w` gives, per task, the F = 2H heads' messages (along's H heads, then against's),
    and for a GAT the F source scores, then the F target scores (the attention vectors folded into the map).
    """

    w: Array32
    bias: Array32  # (F * C,): along's bias, then against's
    mix_w: Array32  # (2h, h)
    mix_b: Array32


def _round(along: nn.Module, against: nn.Module, mix: nn.Module) -> _Round:
    lins = [_np32(c.lin.weight.t()) for c in (along, against)]  # (h_in, H*C) each
    parts = list(lins)
    if isinstance(along, GATConv):
        H, C = along.heads, along.out_channels
        for name in ("att_src", "att_dst"):
            for conv, lin_t in zip((along, against), lins, strict=True):
                att = _np32(getattr(conv, name).reshape(H, C))
                parts.append(np.stack([lin_t[:, i * C : (i + 1) * C] @ att[i] for i in range(H)], axis=1))
    (mix_w, mix_b) = _linears(mix)[0]
    w = np.ascontiguousarray(np.concatenate(parts, axis=1), dtype=np.float32)
    return _Round(w, np.concatenate([_np32(along.bias), _np32(against.bias)]), mix_w, mix_b)


class _Weights:
    """A numpy copy of a policy's weights (what `PolicyInference` reads)."""

    def __init__(self, policy: SchedulingPolicy) -> None:
        c = policy.config
        n_static = len(TASK_STATIC)
        (w0, b0), second = _linears(policy.task_in)
        self.task_static_w, self.task_dyn_w, self.task_b = w0[:n_static], w0[n_static:], b0
        self.task_second = [second]
        self.rounds = [_round(*m) for m in zip(policy.along, policy.against, policy.mix, strict=True)]
        self.gat = c.conv == "gat"
        self.heads = c.heads if self.gat else 1
        self.slope = float(policy.along[0].negative_slope) if self.gat and c.layers else 0.0
        h = c.hidden
        self.node_in = _linears(policy.node_in)
        self.lstm = policy.lstm  # the module itself (run through torch): history encoders are small
        self.history = c.history_len > 0
        self.global_in = _linears(policy.global_in)
        self.summary = _linears(policy.summary)
        self.pair_task = _linears(policy.pair_task)[0][0]
        self.pair_node = _linears(policy.pair_node)[0][0]
        self.pair_summary = _linears(policy.pair_summary)[0][0]
        self.pair_in = _linears(policy.pair_in)[0]
        self.pair_out = _linears(policy.pair_out)
        (ww, wb), wait_second = _linears(policy.wait_head)
        self.wait_g, self.wait_c, self.wait_b, self.wait_second = ww[:h], ww[h:], wb, [wait_second]


_WEIGHTS: weakref.WeakKeyDictionary[SchedulingPolicy, tuple[list[Tensor], tuple[int, ...], _Weights]] = (
    weakref.WeakKeyDictionary()
)


def _weights(policy: SchedulingPolicy) -> _Weights:
    """The numpy weights of `policy`, copied again only after its parameters changed (in-place updates count).

    The parameter list is kept with the copy: walking the modules for it was a tenth of a millisecond a plan."""
    cached = _WEIGHTS.get(policy)
    if cached is not None and tuple(p._version for p in cached[0]) == cached[1]:
        return cached[2]
    params = list(policy.parameters())
    cached = (params, tuple(p._version for p in params), _Weights(policy))
    _WEIGHTS[policy] = cached
    return cached[2]


_CSR_WARM = False


def _warm_csr() -> None:
    """Pay torch's one-off set-up of sparse CSR products (about 8 ms, once per process) when a plan is set up,
    not in its first decision; and keep torch's 'beta' warning about CSR tensors out of the logs."""
    global _CSR_WARM
    if _CSR_WARM:
        return
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        one = torch.sparse_csr_tensor(
            torch.tensor([0, 1]), torch.tensor([0]), torch.ones(1), (1, 1), check_invariants=False
        )
        one @ torch.ones(1, 1)
    _CSR_WARM = True


class _Graph:
    """The DAG as message passing reads it, built once per plan: for each of the F = 2H fused heads (along's
    H heads on the edges, against's H on the reversed edges) every task's incoming edges plus a self-loop,
    as dense (F, n, n) matrices below DENSE_MAX_TASKS tasks, else as one block-diagonal CSR matrix (torch)."""

    def __init__(self, edge_index: npt.NDArray[np.int64], n: int, heads: int, gat: bool, slope: float) -> None:
        self.n, self.heads, self.gat, self.slope = n, 2 * heads, gat, slope
        self.dense = n <= DENSE_MAX_TASKS
        loops = np.arange(n, dtype=np.int64)
        directions = []
        for src, dst in (edge_index, edge_index[::-1]):
            src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
            order = np.argsort(dst, kind="stable")
            directions.append((src[order], dst[order]))
        per_head = [directions[0]] * heads + [directions[1]] * heads
        deg = [np.bincount(dst, minlength=n) for _, dst in per_head]  # >= 1: the self-loop
        weights = [np.ones(len(src), dtype=np.float32) for src, _ in per_head]
        if not gat:  # GCNConv's symmetric normalisation over in-degrees, self-loops included
            for i, ((src, dst), d) in enumerate(zip(per_head, deg, strict=True)):
                dinv = d.astype(np.float32) ** -0.5
                weights[i] = dinv[src] * dinv[dst]
        if self.dense:
            mat = np.zeros((self.heads, n, n), dtype=np.float32)
            for i, ((src, dst), wt) in enumerate(zip(per_head, weights, strict=True)):
                np.add.at(mat[i], (dst, src), wt)
            if gat:
                with np.errstate(divide="ignore"):
                    mat = np.log(mat)  # added to the scores: 0 on an edge (log 2 on a doubled one), -inf off it
            self.mat = mat
        else:
            _warm_csr()
            self.src = np.concatenate([src + i * n for i, (src, _) in enumerate(per_head)])
            self.deg = np.concatenate(deg)
            crow = np.concatenate([[0], np.cumsum(self.deg)])
            self._crow, self._col = torch.from_numpy(crow), torch.from_numpy(self.src)
            if not gat:
                self.norm = self._csr(np.concatenate(weights))

    def _csr(self, values: Array32) -> Tensor:
        size = (len(self._crow) - 1, len(self._crow) - 1)
        return torch.sparse_csr_tensor(self._crow, self._col, torch.from_numpy(values), size, check_invariants=False)

    def __call__(self, r: _Round, h: Array32) -> Array32:
        """A round's two layers on task embeddings h (n, h_in): [along's output | against's output] (n, F * C)."""
        n, F = self.n, self.heads
        proj = _mm(h, r.w)
        fc = proj.shape[1] - (2 * F if self.gat else 0)
        C = fc // F
        if not self.gat:
            x = proj.reshape(n, F, C).transpose(1, 0, 2)
            if self.dense:
                out = _mm(self.mat, np.ascontiguousarray(x))
            else:
                out = (self.norm @ torch.from_numpy(np.ascontiguousarray(x).reshape(F * n, C))).numpy()
                out = out.reshape(F, n, C)
            return np.ascontiguousarray(out.transpose(1, 0, 2)).reshape(n, fc) + r.bias
        a_src = np.ascontiguousarray(proj[:, fc : fc + F].T)  # (F, n) each task's score as a source
        a_dst = np.ascontiguousarray(proj[:, fc + F :].T)  # ... as a target
        # softmax over each target's incoming edges; it is shift-invariant, so PyG's shift by the maximum is
        # needed only where exp could overflow or underflow: |score| <= max |a_src| + max |a_dst|
        shift = float(np.abs(a_src).max() + np.abs(a_dst).max()) > _EXP_SAFE
        if self.dense:
            e = a_dst[:, :, None] + a_src[:, None, :]  # (F, target, source)
            e = np.maximum(e, self.slope * e)  # leaky ReLU (0 <= slope < 1)
            e += self.mat
            if shift:
                e -= e.max(axis=2, keepdims=True)
            p = np.exp(e)
            x = np.ascontiguousarray(proj[:, :fc].reshape(n, F, C).transpose(1, 0, 2))  # (F, n, C)
            out = _mm(p, x) / p.sum(axis=2, keepdims=True)
        else:
            e = np.take(a_src.reshape(-1), self.src)  # (F * E,) grouped by head, then target
            e += np.repeat(a_dst.reshape(-1), self.deg)
            np.maximum(e, self.slope * e, out=e)
            if shift:
                starts = np.concatenate([[0], np.cumsum(self.deg)[:-1]])
                e -= np.repeat(np.maximum.reduceat(e, starts), self.deg)
            np.exp(e, out=e)
            x = np.empty((F, n, C + 1), dtype=np.float32)  # a column of ones sums each target's weights
            x[:, :, :C] = proj[:, :fc].reshape(n, F, C).transpose(1, 0, 2)
            x[:, :, C] = 1.0
            agg = (self._csr(e) @ torch.from_numpy(x.reshape(F * n, C + 1))).numpy().reshape(F, n, C + 1)
            by_task = agg.transpose(1, 0, 2)  # (n, F, C + 1)
            msg = np.empty((n, F, C), dtype=np.float32)
            np.divide(by_task[:, :, :C], by_task[:, :, C:], out=msg)
            msg += r.bias.reshape(F, C)
            return msg.reshape(n, fc)
        return np.ascontiguousarray(out.transpose(1, 0, 2)).reshape(n, fc) + r.bias


_HASH = np.random.default_rng(20261202).integers(1, 2**62, size=64, dtype=np.int64) | 1
"""Odd multipliers of a row hash; rows with equal hashes are compared in full before they are merged."""


def _first_equal(bits: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For each row of bits (r, f), the first row equal to it."""
    if len(bits) <= 1:
        return np.arange(len(bits), dtype=np.int64)
    if len(bits) <= 64:  # compare all pairs: the first equal row is the first True (the diagonal is one)
        return np.asarray((bits[:, None, :] == bits[None, :, :]).all(axis=2).argmax(axis=1), dtype=np.int64)
    keys = bits @ _HASH[: bits.shape[1]] if bits.shape[1] <= len(_HASH) else None  # wraps around: a hash
    if keys is not None:
        _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        rep = first[inverse.reshape(-1)]
        if np.array_equal(bits[rep], bits):
            return rep.astype(np.int64)
    _, first, inverse = np.unique(bits, axis=0, return_index=True, return_inverse=True)  # a collision: exactly
    return first[inverse.reshape(-1)].astype(np.int64)


def _same_rows(*arrays: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """For each row, the first row whose values in every array are bit-identical to its own."""
    return _first_equal(np.concatenate([a.reshape(len(a), -1).view(np.int32) for a in arrays], axis=1, dtype=np.int64))


class PolicyInference:
    """`SchedulingPolicy`'s masked logits for one decision at a time: the inference path of the DRL scheduler.

    The same network as `forward_single` (within float32 rounding: they are tested equal to 1e-5 and to
    pick the same greedy action), computed in numpy from a copy of the weights, with what does not change
    during a plan computed once here: the static task columns' share of the first layer and the DAG's
    message-passing structure (dense matrices for small DAGs, CSR for large ones; PyG's per-call set-up
    is gone). Per decision it reads a `DecisionInputs`, and scores only the legal pairs (the others are
    MASK_LOGIT whatever their score). On dense DAGs without node history the forward runs as the numba
    kernel `kernels.dense_logits` (unless `compiled=False`); the tie check after it stays here.
    Make one per plan; it reads the policy's weights as they are then.
    """

    def __init__(self, policy: SchedulingPolicy, builder: FeatureBuilder, compiled: bool | None = None) -> None:
        w = self.w = _weights(policy)
        n = builder.cp.n_tasks
        self.task_static = builder.task_static
        self.static_class = _same_rows(builder.task_static)  # tasks that differ here never tie
        self.static_pre = _mm(builder.task_static, w.task_static_w) + w.task_b  # (n, h)
        self.graph = _Graph(builder.edge_index, n, w.heads, w.gat, w.slope)
        use_kernel = kernels.AVAILABLE if compiled is None else compiled and kernels.AVAILABLE
        use_kernel = use_kernel and self.graph.dense and not w.history and len(w.rounds) > 0
        self._kernel_weights = self._pack(w) if use_kernel else None

    def _pack(self, w: _Weights) -> tuple[Any, ...]:
        """`kernels.dense_logits`'s weight arguments, in its order (layer lists as tuples)."""

        def layers(ls: Layers) -> tuple[tuple[Array32, ...], tuple[Array32, ...]]:
            return tuple(wt for wt, _ in ls), tuple(b for _, b in ls)

        (second_w, second_b) = w.task_second[0]
        (wait2_w, wait2_b) = w.wait_second[0]
        return (
            self.static_pre,
            w.task_dyn_w,
            second_w,
            second_b,
            tuple(r.w for r in w.rounds),
            tuple(r.bias for r in w.rounds),
            tuple(r.mix_w for r in w.rounds),
            tuple(r.mix_b for r in w.rounds),
            self.graph.mat,
            self.graph.heads,
            w.gat,
            w.slope,
            *layers(w.node_in),
            *layers(w.global_in),
            *layers(w.summary),
            w.pair_task,
            w.pair_node,
            w.pair_in[0],
            w.pair_in[1],
            w.pair_summary,
            *layers(w.pair_out),
            w.wait_g,
            w.wait_c,
            w.wait_b,
            wait2_w,
            wait2_b,
        )

    def _same_task(self, d: DecisionInputs, cand_h: Array32) -> npt.NDArray[np.int64]:
        """For each candidate, the first one with bit-identical features and an embedding equal within rounding."""
        c = d.candidates
        if len(set(self.static_class[c].tolist())) == len(c):
            return np.arange(len(c))
        rep = _same_rows(self.task_static[c], d.task_dyn[c])
        for i in np.flatnonzero(rep != np.arange(len(c))).tolist():
            if not np.allclose(cand_h[i], cand_h[rep[i]], rtol=1e-5, atol=1e-6):
                rep[i] = i
        return rep

    def embed_tasks(self, d: DecisionInputs) -> Array32:
        """Task embeddings (n, h): the task encoder and the message-passing rounds (`_embed_tasks`)."""
        w = self.w
        pre = self.static_pre + _mm(d.task_dyn, w.task_dyn_w)
        h = _apply(w.task_second, np.maximum(pre, 0.0))
        np.maximum(h, 0.0, out=h)
        for r in w.rounds:
            h = h + np.maximum(_mm(self.graph(r, h), r.mix_w) + r.mix_b, 0.0)
        return h

    def logits(self, d: DecisionInputs) -> Array32:
        """Masked logits (k * m + 1,) in the unpadded action layout, as `forward_single` gives them."""
        if self._kernel_weights is not None:
            scores, cand_h, wait = kernels.dense_logits(
                *self._kernel_weights,
                d.task_dyn,
                d.node_x,
                d.global_x,
                d.candidates,
                d.legal_pairs,
                d.pair_x,
                d.wait_legal,
            )
        else:
            scores, cand_h, wait = self._scores(d)
        m = d.n_nodes
        out = np.full(len(d.candidates) * m + 1, MASK_LOGIT, dtype=np.float32)
        if len(d.legal_pairs):
            rows, cols = np.divmod(d.legal_pairs, m)
            top = float(scores.max())
            near = np.flatnonzero(scores >= top - _NEAR_TIE * (1.0 + abs(top)))
            if len(near) > 1:  # same inputs, same score: exact ties of forward_single stay exact ties here
                node_bits = np.concatenate([d.node_x, d.node_history], axis=1).view(np.int32)[cols[near]]
                task = self._same_task(d, cand_h)[rows[near], None]
                bits = np.concatenate([task, node_bits, d.pair_x[near].view(np.int32)], axis=1, dtype=np.int64)
                scores[near] = scores[near][_first_equal(bits)]
            out[d.legal_pairs] = scores
        if d.wait_legal:
            out[-1] = wait
        return out

    def _scores(self, d: DecisionInputs) -> tuple[Array32, Array32, np.float32]:
        """Scores of the legal pairs, candidate embeddings and the wait logit, in numpy."""
        w = self.w
        h = self.embed_tasks(d)
        node_in = d.node_x
        if w.history:
            hist = d.node_history
            if w.lstm is not None:
                with torch.inference_mode():
                    _, (hn, _) = w.lstm(torch.from_numpy(hist).reshape(len(hist), -1, 1))
                hist = hn[-1].numpy()
            node_in = np.concatenate([node_in, hist], axis=1)
        node_h = np.maximum(_apply(w.node_in, node_in), 0.0)
        n_f, m_f = np.float32(h.shape[0]), np.float32(node_h.shape[0])
        pooled = np.concatenate([h.sum(0) / n_f, node_h.sum(0) / m_f, _apply(w.global_in, d.global_x)])
        g = np.maximum(_apply(w.summary, pooled), 0.0)
        cand_h = h[d.candidates]
        k, m = len(d.candidates), node_h.shape[0]
        scores = np.zeros(0, dtype=np.float32)
        if len(d.legal_pairs):
            rows, cols = np.divmod(d.legal_pairs, m)
            z = (cand_h @ w.pair_task)[rows] + _mm(node_h, w.pair_node)[cols]
            z += _mm(d.pair_x, w.pair_in[0]) + w.pair_in[1]
            z += g @ w.pair_summary
            scores = _apply(w.pair_out, np.maximum(z, 0.0))[:, 0]
        wait = np.float32(0.0)
        if d.wait_legal:
            cand_mean = cand_h.sum(0) / np.float32(max(k, 1))
            first = np.maximum(g @ w.wait_g + cand_mean @ w.wait_c + w.wait_b, 0.0)
            wait = _apply(w.wait_second, first[None, :])[0, 0]
        return scores, cand_h, wait

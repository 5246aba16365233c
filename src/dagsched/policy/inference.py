"""The DRL scheduler's inference path: the GNN on a numpy copy of its weights, one decision at a time.

`PolicyInference` is made once per plan: the static task columns' share of the first layer and the
DAG's message-passing structure are computed there; the two directions of a round are fused into one
product; dense matrices below DENSE_MAX_TASKS tasks, a CSR matrix above, no PyG call set-up. It reads
`FeatureBuilder.decision` and scores only the legal pairs; on dense DAGs the whole forward is one numba
kernel (`dagsched.policy.kernels.dense_logits`). It is tested against `SchedulingPolicy.forward_single`
(logits within 1e-5, same greedy actions, same plans). Within one instant (the picks and windows of one
decision) it recomputes only the task rows a change reaches (`PolicyInference.embed_tasks`).
"""

from __future__ import annotations

import warnings
import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor, nn
from torch_geometric.nn import GATConv

from dagsched.policy import kernels
from dagsched.policy.features import (
    TASK_STATIC,
    DecisionInputs,
    FeatureBuilder,
)
from dagsched.policy.gnn import MASK_LOGIT, SchedulingPolicy

_NEAR_TIE = 1e-4
"""Pairs scored within this (relative) of the best are checked for bit-identical inputs, which must score equal."""
_EXP_SAFE = 60.0  # float32 exp neither overflows nor underflows (to a subnormal) within +-60

DENSE_MAX_TASKS = 96
"""Up to this many tasks the inference path passes messages with dense (n, n) matrices, above it with CSR."""

Array32 = npt.NDArray[np.float32]
Layers = list[tuple[Array32, Array32]]


INCREMENTAL_MAX_SHARE = 0.25
"""`PolicyInference.embed_tasks` recomputes only the rows a change reaches when at most this share of the rows
changed; past it the whole forward is as cheap."""

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
            self.crow = crow
            self.edge_w = np.concatenate(weights)
            if not gat:
                self.norm = self._csr(self.edge_w)
            undirected = np.concatenate([edge_index, edge_index[::-1]], axis=1)
            order = np.argsort(undirected[1], kind="stable")
            self.adj_ptr = np.concatenate([[0], np.cumsum(np.bincount(undirected[1], minlength=n))])
            self.adj = undirected[0][order]
            self._mark = np.zeros(n, dtype=bool)  # the row kernels' scratch: marks (all False between calls)
            self._pos = np.zeros(n, dtype=np.int64)  # and each needed task's row in a projection

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

    def with_neighbours(self, rows: npt.NDArray[np.int64], compiled: bool = False) -> npt.NDArray[np.int64]:
        """`rows` and every task one edge away from them (either direction), sorted, each once (CSR graphs)."""
        if len(rows) == 0:
            return rows
        if compiled:
            return kernels.with_neighbours(rows, self.adj_ptr, self.adj, self._mark)
        lo, hi = self.adj_ptr[rows], self.adj_ptr[rows + 1]
        near = self.adj[_ranges(lo, hi)]
        return np.unique(np.concatenate([rows, near]))

    def round_rows(
        self, r: _Round, h: Array32, targets: npt.NDArray[np.int64], near: npt.NDArray[np.int64], compiled: bool
    ) -> Array32:
        """A round's new embeddings `h + relu(mix(round(h)))` at `targets` only (CSR graphs), from the rows `near`
        of h (`with_neighbours(targets)`: what the targets' messages read): `at`'s messages (the numba kernel
        `kernels.aggregate_rows` where compiled), then the mix."""
        proj = _mm(h[near], r.w)
        if compiled:
            self._pos[near] = np.arange(len(near))
            msg = kernels.aggregate_rows(
                proj, self._pos, targets, self.crow, self.src, self.n, self.heads, self.gat, self.slope, self.edge_w,
                r.bias,
            )  # fmt: skip
        else:
            msg = self.at(r, proj, near, targets)
        return h[targets] + np.maximum(_mm(msg, r.mix_w) + r.mix_b, 0.0)

    def at(self, r: _Round, proj: Array32, near: npt.NDArray[np.int64], targets: npt.NDArray[np.int64]) -> Array32:
        """`__call__`'s rows for `targets` only (CSR graphs), from `proj`, the rows `near` (sorted: the targets and
        their neighbours) of `h @ r.w`: what a round gives where a change of a few tasks' inputs can reach. Equal
        to `__call__`'s rows within float32 rounding (the softmax is shifted per target, which is the same in
        exact arithmetic)."""
        n, F, T = self.n, self.heads, len(targets)
        head_rows = (np.arange(F)[:, None] * n + targets[None, :]).reshape(-1)  # (F * T,): head, then target
        lo, hi = self.crow[head_rows], self.crow[head_rows + 1]
        edges = _ranges(lo, hi)
        counts = hi - lo
        seg_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        head_of_edge = np.repeat(np.repeat(np.arange(F), T), counts)
        src_row = np.searchsorted(near, self.src[edges] - head_of_edge * n)
        tgt_row = np.searchsorted(near, targets)
        fc = proj.shape[1] - (2 * F if self.gat else 0)
        C = fc // F
        x = proj[src_row, :fc].reshape(len(src_row), F, C)[np.arange(len(src_row)), head_of_edge]  # (E, C)
        if self.gat:
            e = proj[src_row, fc + head_of_edge] + proj[np.repeat(np.tile(tgt_row, F), counts), fc + F + head_of_edge]
            e = np.maximum(e, self.slope * e)
            e -= np.repeat(np.maximum.reduceat(e, seg_start), counts)
            wt = np.exp(e)
            out = np.add.reduceat(wt[:, None] * x, seg_start, axis=0) / np.add.reduceat(wt, seg_start)[:, None]
        else:
            out = np.add.reduceat(self.edge_w[edges][:, None] * x, seg_start, axis=0)
        out = out.reshape(F, T, C).transpose(1, 0, 2).reshape(T, fc)
        return np.asarray(out + r.bias, dtype=np.float32)


def _ranges(lo: npt.NDArray[np.int64], hi: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The integers of [lo[0], hi[0]), then of [lo[1], hi[1]), ... in one array."""
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(lo - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    return np.asarray(np.arange(total) + offsets, dtype=np.int64)


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


@dataclass(frozen=True)
class _Part:
    """The visible tasks (`rows`; None: all), their message-passing graph and static share of the first layer,
    and each task's row among them (`local`, -1 where not visible; None: all)."""

    rows: npt.NDArray[np.int64] | None
    graph: _Graph
    static_pre: Array32
    local: npt.NDArray[np.int64] | None


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
        self.edge_index = builder.edge_index
        self._parts: dict[bytes, _Part] = {}
        self._last: tuple[_Part, Array32, list[Array32]] | None = None  # part, its dynamic features, layers
        use_kernel = kernels.AVAILABLE if compiled is None else compiled and kernels.AVAILABLE
        self._compiled = use_kernel
        use_kernel = use_kernel and self.graph.dense and not w.history and len(w.rounds) > 0
        use_kernel = use_kernel and builder.cp.n_workflows == 1  # a stream embeds its visible part (`_part`)
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

    def _part(self, visible: npt.NDArray[np.bool_] | None) -> _Part:
        """The visible tasks' part of the DAG (`FeatureBuilder.visible`), built when the open workflows change and
        kept while they stay (a stream's decisions between two submissions or completions share one)."""
        if visible is None:
            return _Part(None, self.graph, self.static_pre, None)
        key = np.packbits(visible).tobytes()
        part = self._parts.get(key)
        if part is None:
            rows = np.flatnonzero(visible)
            local = np.full(len(visible), -1, dtype=np.int64)
            local[rows] = np.arange(len(rows))
            edges = local[self.edge_index[:, visible[self.edge_index[0]]]]  # no edge crosses workflows
            w = self.w
            part = _Part(rows, _Graph(edges, len(rows), w.heads, w.gat, w.slope), self.static_pre[rows], local)
            if len(self._parts) >= 16:
                self._parts.clear()
            self._parts[key] = part
        return part

    def embed_tasks(self, d: DecisionInputs) -> Array32:
        """Embeddings (v, h) of the visible tasks (all n of one workflow), in task order: the task encoder and
        the message-passing rounds.

        On a CSR graph the layers of the last call are kept, and when the same part's dynamic task features
        changed in at most `INCREMENTAL_MAX_SHARE` of its rows (a pick or a wait at one instant changes the
        offered flags of two windows and the started task's state) only the rows those changes reach are
        recomputed: the changed rows' encoding, then each round's rows one edge further. The same network,
        within float32 rounding; it is what keeps a decision that walks many windows of a long queue (a burst on
        a shared cluster) from paying a whole forward per window."""
        part = self._part(d.visible)
        dyn = d.task_dyn if part.rows is None else d.task_dyn[part.rows]
        last = self._last
        if not part.graph.dense and last is not None and last[0] is part:
            changed = np.flatnonzero((dyn != last[1]).any(axis=1))
            if len(changed) <= INCREMENTAL_MAX_SHARE * len(dyn):
                layers = self._update_layers(part, dyn, changed, last[2])
                self._last = (part, dyn, layers)
                return layers[-1]
        layers = self._layers(part, dyn)
        self._last = None if part.graph.dense else (part, dyn, layers)
        return layers[-1]

    def _encode(self, static_pre: Array32, dyn: Array32) -> Array32:
        w = self.w
        h = _apply(w.task_second, np.maximum(static_pre + _mm(dyn, w.task_dyn_w), 0.0))
        return np.maximum(h, 0.0, out=h)

    def _layers(self, part: _Part, dyn: Array32) -> list[Array32]:
        """The task encoder's output and each round's, for every task of the part."""
        h = self._encode(part.static_pre, dyn)
        layers = [h]
        for r in self.w.rounds:
            h = h + np.maximum(_mm(part.graph(r, h), r.mix_w) + r.mix_b, 0.0)
            layers.append(h)
        return layers

    def _update_layers(
        self, part: _Part, dyn: Array32, changed: npt.NDArray[np.int64], before: list[Array32]
    ) -> list[Array32]:
        """`_layers` after the dynamic features of the `changed` rows moved, from the layers `before` it."""
        if len(changed) == 0:
            return before
        graph, compiled = part.graph, self._compiled
        layers = [x.copy() for x in before]
        layers[0][changed] = self._encode(part.static_pre[changed], dyn[changed])
        near = graph.with_neighbours(changed, compiled)
        for i, r in enumerate(self.w.rounds):  # each round's rows are the last one's and their neighbours
            targets, near = near, graph.with_neighbours(near, compiled)
            layers[i + 1][targets] = graph.round_rows(r, layers[i], targets, near, compiled)
        return layers

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
        local = self._part(d.visible).local
        cand_h = h[d.candidates] if local is None else h[local[d.candidates]]
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


_WARM: set[Any] = set()


def warm_up(policy: Any = None) -> None:
    """Compile (or load from the disk cache) the kernels now, on a two-task problem, so that the first decision
    of a process, which a deadline or a latency histogram may be watching, does not pay for it: the features
    once, and `policy`'s forward once per architecture (its layer counts are part of the compiled signature)."""
    if not kernels.AVAILABLE:
        return
    key = None if policy is None else policy.config
    if "features" in _WARM and (key is None or key in _WARM):
        return
    from dagsched.model import Cluster, Node, Problem, Task, Workflow, compile_problem
    from dagsched.sim.engine import Simulator

    wf = Workflow(name="warm", tasks=[Task(id="a", runtime=1.0, cpu=1), Task(id="b", runtime=1.0, cpu=1)])
    cp = compile_problem(Problem(workflows=[wf], cluster=Cluster(nodes=[Node(id="n", cpu=2, mem=4)])))
    sim = Simulator(cp)
    sim.step()
    builder = FeatureBuilder(cp, sim.classic, compiled=True)
    decision = builder.decision(sim.decision_point())
    one = np.zeros(1, dtype=np.int64)  # the row kernels of `embed_tasks`' update, on a one-task graph
    kernels.with_neighbours(one, np.array([0, 0]), one[:0], np.zeros(1, dtype=bool))
    for gat in (True, False):
        proj = np.zeros((1, 4 if gat else 2), dtype=np.float32)
        kernels.aggregate_rows(proj, one, one, np.array([0, 1]), one, 1, 1, gat, 0.2, np.ones(1), np.zeros(2))
    _WARM.add("features")
    if key is not None:
        PolicyInference(policy, builder, compiled=True).logits(decision)
        _WARM.add(key)

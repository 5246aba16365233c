"""Compiled decision features (`FeatureBuilder.decision` as one numba kernel, bit for bit) and the dense forward.

Why: a learned plan of a 20-task workflow is 20 decisions, and each one built its features from
about 150 numpy calls on arrays of 20 tasks and 16 nodes, so call overhead, not arithmetic, was
the cost (8 of the 22 ms of a service plan). Here each decision is one call.

The kernels repeat the numpy code of `dagsched.policy.features` operation for operation, in float64
and in the same order (sums that numpy does pairwise are done pairwise here too, `_pairwise_sum`),
so the float32 features they give are identical to the bit; tests/rl/test_kernels.py checks that
on every decision of runs in both modes, with failures, boot delays and noise. No fastmath: fused
multiply-adds would change the last bit. Constants that need libm (log1p) come in from numpy.

The decision point's own rules (the offered window, when room frees on a node) are the simulator's
kernels (`dagsched.sim.kernels`), called from inside this one rather than written again.
`AVAILABLE` is False where numba cannot be imported; `FeatureBuilder` then stays on numpy.
Compiled code is cached on disk beside this file (numba's `cache=True`), so only the first
process after an install pays the compile (a few seconds; `inference.warm_up` does it on purpose).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dagsched.model.compiled import EPS
from dagsched.sim.kernels import AVAILABLE, njit, room_times_kernel, window_kernel

__all__ = ["AVAILABLE", "decision_kernel", "dense_logits", "aggregate_rows", "with_neighbours"]

CLIP = 10.0  # features.FEATURE_CLIP
N_PAIR = 13  # len(features.PAIR_FEATURES)


@njit(cache=True)
def _clip(x: float) -> float:
    """np.clip(x, -CLIP, CLIP) (inf goes to the bound, nan stays nan)."""
    if x < -CLIP:
        return -CLIP
    if x > CLIP:
        return CLIP
    return x


@njit(cache=True)
def _max(a: float, b: float) -> float:
    """np.maximum of two floats (nan if either is nan)."""
    return a if (a >= b or np.isnan(a)) else b


@njit(cache=True)
def _pair_value(x: float) -> float:
    """np.clip(np.nan_to_num(x, nan=CLIP, posinf=CLIP), -CLIP, CLIP): the pair features' cleaning."""
    if np.isnan(x):
        return CLIP
    return _clip(x)


@njit(cache=True)
def _block_sum(a: Any, lo: int, n: int) -> float:
    """numpy's pairwise_sum leaf (n <= 128): sequential below 8, else 8 accumulators combined pairwise."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r = np.empty(8)
    for j in range(8):
        r[j] = a[lo + j]
    i = 8
    while i < n - (n % 8):
        for j in range(8):
            r[j] += a[lo + i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=True)
def _pairwise_sum(a: Any, n: int) -> float:
    """numpy's add.reduce of a contiguous float64 a[:n], to the bit: halves (a multiple of 8 on the left) until
    128 or fewer remain, each half summed by `_block_sum`. Iterative: numba's disk cache mishandles recursion."""
    if n <= 128:
        return _block_sum(a, 0, n)
    todo_lo, todo_n, todo_stage = np.empty(128, np.int64), np.empty(128, np.int64), np.empty(128, np.int64)
    vals = np.empty(128)
    top, nv = 1, 0
    todo_lo[0], todo_n[0], todo_stage[0] = 0, n, 0
    while top:
        top -= 1
        lo, size, stage = todo_lo[top], todo_n[top], todo_stage[top]
        if size <= 128:
            vals[nv] = _block_sum(a, lo, size)
            nv += 1
        elif stage == 0:
            half = size // 2
            half -= half % 8
            todo_lo[top], todo_n[top], todo_stage[top] = lo, size, 1  # combine after both halves
            todo_lo[top + 1], todo_n[top + 1], todo_stage[top + 1] = lo + half, size - half, 0
            todo_lo[top + 2], todo_n[top + 2], todo_stage[top + 2] = lo, half, 0
            top += 3
        else:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]  # IEEE addition commutes: the order of the halves is free
    return vals[0]


@njit(cache=True)
def decision_kernel(
    now: float,
    scale_s: float,
    ready: Any,
    arrival: Any,
    legal_r: Any,
    k_max: int,
    rank_u: Any,
    topo_pos: Any,
    status: Any,
    run: Any,
    node_of: Any,
    start_s: Any,
    exec_s: Any,
    slow_factor: Any,
    req: Any,
    run_req: Any,
    classic: bool,
    cap: Any,
    cap_norm: Any,
    node_static: Any,
    opened: Any,
    submit_s: Any,
    deadline_s: Any,
    ever_fits: Any,
    node_up: Any,
    node_available_s: Any,
    free: Any,
    price: Any,
    pred_ptr: Any,
    pred_idx: Any,
    pred_data: Any,
    avoid_node: Any,
    rank_fast: Any,
    work_share_s: Any,
    global_const: Any,
    can_wait: bool,
    oct_: Any,
) -> Any:
    """`FeatureBuilder.decision` (see there): (task_dyn, node_x, util, cands, legal, flat pairs, pair_x, global_x,
    wait_legal). `opened` is updated in place with the nodes running something, as `_note_opened` does.
    global_const = [t0, n_done, log1p(n)/8, log1p(m)/5, cpu capacity summed by numpy]."""
    n, m = exec_s.shape
    s = scale_s
    # _candidates
    order = window_kernel(ready, legal_r, rank_u, topo_pos, k_max)
    k = len(order)
    cands = np.empty(k, dtype=np.int64)
    legal = np.empty((k, m), dtype=np.bool_)
    arr_c = np.empty((k, m))
    for i in range(k):
        cands[i] = ready[order[i]]
        for j in range(m):
            legal[i, j] = legal_r[order[i], j]
            arr_c[i, j] = arrival[order[i], j]
    # _running
    nr = len(run)
    run_node = np.empty(nr, dtype=np.int64)
    run_end = np.empty(nr)
    for r in range(nr):
        t = run[r]
        nd = node_of[t]
        run_node[r] = nd
        e = start_s[t] + exec_s[t, nd] * slow_factor[nd]
        run_end[r] = _max(e, now)
    # _task_dynamic
    task_dyn = np.zeros((n, 8), dtype=np.float32)
    remaining = np.zeros(n)
    for r in range(nr):
        remaining[run[r]] = (run_end[r] - now) / s
    cand_flag = np.zeros(n)
    for i in range(k):
        cand_flag[cands[i]] = 1.0
    for t in range(n):
        task_dyn[t, status[t]] = 1.0
        task_dyn[t, 4] = np.float32(_clip(cand_flag[t]))
        task_dyn[t, 5] = np.float32(_clip(remaining[t]))
        task_dyn[t, 6] = np.float32(_clip(_max(submit_s[t] - now, 0.0) / s))
        task_dyn[t, 7] = np.float32(_clip((deadline_s[t] - now) / s))
    # _nodes
    busy_until = np.zeros(m)
    n_running = np.zeros(m)
    for r in range(nr):
        nd = run_node[r]
        v = (run_end[r] - now) / s
        if v > busy_until[nd]:
            busy_until[nd] = v
        n_running[nd] += 1.0
        opened[nd] = True
    node_x = np.empty((m, 14), dtype=np.float32)
    util = np.empty(m)
    used_cpu = np.empty(m)
    up_now = np.empty(m, dtype=np.bool_)
    up_count = 0.0
    for j in range(m):
        cpu_cap = cap[j, 0]
        used_cpu[j] = cpu_cap - free[j, 0]
        util[j] = used_cpu[j] / cpu_cap
        up_now[j] = node_up[j] and not (node_available_s[j] > now)
        up_count += 1.0 if up_now[j] else 0.0
        if classic:
            node_x[j, 0] = np.float32(_clip(free[j, 0]))
            node_x[j, 1] = 0.0
            node_x[j, 2] = 0.0
        else:
            for c in range(3):
                node_x[j, c] = np.float32(_clip(free[j, c] / cap_norm[c]))
        for c in range(5):
            node_x[j, 3 + c] = np.float32(_clip(node_static[j, c]))
        node_x[j, 8] = np.float32(_clip(n_running[j] / cpu_cap))
        node_x[j, 9] = np.float32(_clip(util[j]))
        node_x[j, 10] = 1.0 if up_now[j] else 0.0
        boot = _max(node_available_s[j] - now, 0.0) / s if node_up[j] else CLIP
        node_x[j, 11] = np.float32(_clip(boot))
        node_x[j, 12] = np.float32(_clip(busy_until[j]))
        node_x[j, 13] = 1.0 if opened[j] else 0.0
    # legal pairs, in flat order
    n_legal = 0
    for i in range(k):
        for j in range(m):
            if legal[i, j]:
                n_legal += 1
    flat = np.empty(n_legal, dtype=np.int64)
    pair_x = np.zeros((n_legal, N_PAIR), dtype=np.float32)
    finish = np.zeros((k, m))
    if k:
        # _pair_times
        req_c = np.empty((k, 3))
        for i in range(k):
            for c in range(3):
                req_c[i, c] = req[cands[i], c]
        room = room_times_kernel(now, req_c, free, run_node, run_end, run_req)
        avail = np.empty(m)
        for j in range(m):
            avail[j] = _max(node_available_s[j], now) if node_up[j] else np.inf
        start = np.empty((k, m))
        cost = np.empty((k, m))
        fits = np.empty((k, m), dtype=np.bool_)
        best = np.full(k, np.inf)
        obest = np.full(k, np.inf)
        cost_max = np.zeros(k)
        for i in range(k):
            t = cands[i]
            for j in range(m):
                fits[i, j] = ever_fits[t, j] and node_up[j]
                st = _max(_max(arr_c[i, j], avail[j]), room[i, j])
                start[i, j] = _max(st, now) if fits[i, j] else np.inf
                finish[i, j] = start[i, j] + exec_s[t, j]
                cost[i, j] = exec_s[t, j] * price[j]
                if finish[i, j] < best[i]:
                    best[i] = finish[i, j]
                if finish[i, j] + oct_[t, j] < obest[i]:
                    obest[i] = finish[i, j] + oct_[t, j]
                c = cost[i, j] if fits[i, j] else 0.0
                if j == 0 or c > cost_max[i]:
                    cost_max[i] = c
        # _transfer_share
        share = np.zeros((k, m))
        for i in range(k):
            t = cands[i]
            total = 0.0
            on_node = np.zeros(m)
            for e in range(pred_ptr[t], pred_ptr[t + 1]):
                on_node[node_of[pred_idx[e]]] += pred_data[e]
                total += pred_data[e]
            if total > 0:
                for j in range(m):
                    share[i, j] = (total - on_node[j]) / total
        # _pair_columns at the legal pairs
        p = 0
        for i in range(k):
            t = cands[i]
            for j in range(m):
                if not legal[i, j]:
                    continue
                flat[p] = i * m + j
                ex = exec_s[t, j]
                pair_x[p, 0] = np.float32(_pair_value((start[i, j] - now) / s))
                pair_x[p, 1] = np.float32(_pair_value((finish[i, j] - now) / s))
                pair_x[p, 2] = np.float32(_pair_value(ex / s))
                pair_x[p, 3] = np.float32(_pair_value(_max(arr_c[i, j] - now, 0.0) / s))
                pair_x[p, 4] = np.float32(_pair_value(share[i, j]))
                pair_x[p, 5] = 1.0
                gap = finish[i, j] - best[i] if np.isfinite(best[i]) else np.inf
                pair_x[p, 6] = np.float32(_pair_value(gap / s))
                pair_x[p, 7] = np.float32(_pair_value((_max(room[i, j], avail[j]) - now) / s))
                pair_x[p, 8] = np.float32(_pair_value(cost[i, j] / cost_max[i] if cost_max[i] > 0 else 0.0))
                pair_x[p, 9] = 1.0 if fits[i, j] else 0.0
                pair_x[p, 10] = 1.0 if avoid_node[t] == j else 0.0
                pair_x[p, 11] = np.float32(_pair_value(oct_[t, j] / s))
                ogap = finish[i, j] + oct_[t, j] - obest[i] if np.isfinite(obest[i]) else np.inf
                pair_x[p, 12] = np.float32(_pair_value(ogap / s))
                p += 1
    # _global
    n_f = float(n)
    rank_left = 0.0
    work = np.empty(n)
    n_work = 0
    for t in range(n):
        if status[t] != 3:  # DONE
            if rank_fast[t] > rank_left:
                rank_left = rank_fast[t]
            work[n_work] = work_share_s[t]
            n_work += 1
    g = np.empty(10)
    g[0] = (now - global_const[0]) / s
    g[1] = global_const[1] / n_f
    g[2] = len(ready) / n_f
    g[3] = nr / n_f
    g[4] = global_const[2]
    g[5] = global_const[3]
    g[6] = up_count / m
    g[7] = rank_left / s
    g[8] = _pairwise_sum(work, n_work) / s
    g[9] = _pairwise_sum(used_cpu, m) / global_const[4]
    global_x = np.empty(10, dtype=np.float32)
    for c in range(10):
        global_x[c] = np.float32(_clip(g[c]))
    # _wait_legal
    any_legal = n_legal > 0
    helpful = False
    if any_legal:
        for i in range(k):
            best_legal, best_later, row_legal = np.inf, np.inf, False
            for j in range(m):
                if legal[i, j]:
                    row_legal = True
                    if finish[i, j] < best_legal:
                        best_legal = finish[i, j]
                elif finish[i, j] < best_later:
                    best_later = finish[i, j]
            if row_legal and best_later < best_legal - EPS:
                helpful = True
    wait_legal = can_wait and (not any_legal or helpful)  # DecisionPoint.wait_legal
    return task_dyn, node_x, util, cands, legal, flat, pair_x, global_x, wait_legal


# ---- the policy's forward on a dense DAG (PolicyInference.logits) ------------------------------------
# Unlike the features these are float32 products summed in float64, so they equal numpy's BLAS products
# within float32 rounding, not to the bit (as PolicyInference itself equals forward_single): the tests hold
# them to forward_single's logits within 1e-5 and to the same greedy picks and plans.


@njit(cache=True)
def _matmul(a: Any, b: Any) -> Any:
    """a (r, q) @ b (q, c), float32 in and out, each sum in float64."""
    r, q = a.shape
    c = b.shape[1]
    out = np.empty((r, c), dtype=np.float32)
    acc = np.empty(c)
    for i in range(r):
        acc[:] = 0.0
        for p in range(q):
            x = np.float64(a[i, p])
            if x != 0.0:
                for j in range(c):
                    acc[j] += x * b[p, j]
        for j in range(c):
            out[i, j] = acc[j]
    return out


@njit(cache=True)
def _linear(x: Any, w: Any, b: Any, relu: bool) -> Any:
    out = _matmul(x, w)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            v = out[i, j] + b[j]
            out[i, j] = max(v, np.float32(0.0)) if relu else v
    return out


@njit(cache=True)
def _mlp(x: Any, ws: Any, bs: Any, relu_last: bool) -> Any:
    """An `_mlp` (ReLU between layers; after the last too when relu_last), layers as tuples of (W^T, b)."""
    for i in range(len(ws)):
        x = _linear(x, ws[i], bs[i], relu_last or i < len(ws) - 1)
    return x


@njit(cache=True)
def _message_round(h: Any, w: Any, bias: Any, mat: Any, heads: int, gat: bool, slope: float) -> Any:
    """One fused round on a dense DAG (policy._Graph.__call__): [along's heads | against's heads] (n, F * C)."""
    n = h.shape[0]
    proj = _matmul(h, w)
    fc = proj.shape[1] - (2 * heads if gat else 0)
    c_per = fc // heads
    out = np.empty((n, fc), dtype=np.float32)
    p = np.empty(n)
    acc = np.empty(c_per)
    shift = False
    if gat:
        src_max, dst_max = 0.0, 0.0
        for j in range(n):
            for f in range(heads):
                src_max = max(src_max, abs(np.float64(proj[j, fc + f])))
                dst_max = max(dst_max, abs(np.float64(proj[j, fc + heads + f])))
        shift = src_max + dst_max > 60.0  # policy._EXP_SAFE
    for f in range(heads):
        for i in range(n):
            if gat:
                top = -np.inf
                for j in range(n):
                    if mat[f, i, j] == -np.inf:  # not an edge (most pairs): weight 0, no exp to pay for
                        p[j] = -np.inf
                        continue
                    e = np.float64(proj[i, fc + heads + f]) + proj[j, fc + f]
                    e = max(e, slope * e) + mat[f, i, j]  # leaky ReLU, then the edge's log-multiplicity
                    p[j] = e
                    top = max(top, e)
                total = 0.0
                for j in range(n):
                    if p[j] == -np.inf:
                        p[j] = 0.0
                        continue
                    p[j] = np.exp(p[j] - top) if shift else np.exp(p[j])
                    total += p[j]
            else:
                total = 1.0
                for j in range(n):
                    p[j] = mat[f, i, j]
            acc[:] = 0.0
            for j in range(n):  # row by row, skipping the tasks that send nothing to i (most of them)
                if p[j] != 0.0:
                    for c in range(c_per):
                        acc[c] += p[j] * proj[j, f * c_per + c]
            for c in range(c_per):
                out[i, f * c_per + c] = acc[c] / total + bias[f * c_per + c]
    return out


@njit(cache=True)
def dense_logits(
    static_pre: Any,
    task_dyn_w: Any,
    second_w: Any,
    second_b: Any,
    round_ws: Any,
    round_bs: Any,
    mix_ws: Any,
    mix_bs: Any,
    mat: Any,
    heads: int,
    gat: bool,
    slope: float,
    node_ws: Any,
    node_bs: Any,
    global_ws: Any,
    global_bs: Any,
    summary_ws: Any,
    summary_bs: Any,
    pair_task: Any,
    pair_node: Any,
    pair_in_w: Any,
    pair_in_b: Any,
    pair_summary: Any,
    out_ws: Any,
    out_bs: Any,
    wait_g: Any,
    wait_c: Any,
    wait_b: Any,
    wait2_w: Any,
    wait2_b: Any,
    task_dyn: Any,
    node_x: Any,
    global_x: Any,
    cands: Any,
    legal_pairs: Any,
    pair_x: Any,
    wait_legal: bool,
) -> Any:
    """PolicyInference.logits before its tie check: (scores of the legal pairs, candidate embeddings, wait logit)."""
    n = static_pre.shape[0]
    m = node_x.shape[0]
    # task encoder and message passing (PolicyInference.embed_tasks)
    pre = _matmul(task_dyn, task_dyn_w)
    for i in range(n):
        for j in range(pre.shape[1]):
            pre[i, j] = max(static_pre[i, j] + pre[i, j], np.float32(0.0))
    h = _linear(pre, second_w, second_b, True)
    for r in range(len(round_ws)):
        msg = _linear(_message_round(h, round_ws[r], round_bs[r], mat, heads, gat, slope), mix_ws[r], mix_bs[r], True)
        h = h + msg
    # nodes, summary
    node_h = _mlp(node_x, node_ws, node_bs, True)
    g_in = _mlp(global_x.reshape(1, -1), global_ws, global_bs, False)
    hd, nd_w = h.shape[1], node_h.shape[1]
    pooled = np.empty((1, hd + nd_w + g_in.shape[1]), dtype=np.float32)
    for j in range(hd):
        s = 0.0
        for i in range(n):
            s += h[i, j]
        pooled[0, j] = s / n
    for j in range(nd_w):
        s = 0.0
        for i in range(m):
            s += node_h[i, j]
        pooled[0, hd + j] = s / m
    for j in range(g_in.shape[1]):
        pooled[0, hd + nd_w + j] = g_in[0, j]
    g = _mlp(pooled, summary_ws, summary_bs, True)
    k = len(cands)
    cand_h = np.empty((k, hd), dtype=np.float32)
    for i in range(k):
        cand_h[i] = h[cands[i]]
    # pairs
    n_legal = len(legal_pairs)
    scores = np.empty(n_legal, dtype=np.float32)
    if n_legal:
        ct = _matmul(cand_h, pair_task)
        nt = _matmul(node_h, pair_node)
        gs = _matmul(g, pair_summary)
        px = _matmul(pair_x, pair_in_w)
        z = np.empty((n_legal, ct.shape[1]), dtype=np.float32)
        for p in range(n_legal):
            row, col = legal_pairs[p] // m, legal_pairs[p] % m
            for j in range(ct.shape[1]):
                v = np.float64(ct[row, j]) + nt[col, j] + px[p, j] + pair_in_b[j] + gs[0, j]
                z[p, j] = max(v, 0.0)
        sc = _mlp(z, out_ws, out_bs, False)
        for p in range(n_legal):
            scores[p] = sc[p, 0]
    wait = np.float32(0.0)
    if wait_legal:
        mean = np.zeros((1, hd), dtype=np.float32)
        for j in range(hd):
            s = 0.0
            for i in range(k):
                s += cand_h[i, j]
            mean[0, j] = s / max(k, 1)
        a, b = _matmul(g, wait_g), _matmul(mean, wait_c)
        first = np.empty((1, a.shape[1]), dtype=np.float32)
        for j in range(a.shape[1]):
            first[0, j] = max(np.float64(a[0, j]) + b[0, j] + wait_b[j], 0.0)
        wait = _linear(first, wait2_w, wait2_b, False)[0, 0]
    return scores, cand_h, wait


@njit(cache=True)
def with_neighbours(rows: Any, adj_ptr: Any, adj: Any, mark: Any) -> Any:
    """`rows` and every task one edge away from them, sorted, each once; `mark` (v,) is scratch, all False on
    entry and on exit. `inference._Graph.with_neighbours` in one call."""
    count = 0
    for t in rows:
        if not mark[t]:
            mark[t] = True
            count += 1
        for j in range(adj_ptr[t], adj_ptr[t + 1]):
            s = adj[j]
            if not mark[s]:
                mark[s] = True
                count += 1
    out = np.empty(count, np.int64)
    i = 0
    for t in rows:
        if mark[t]:
            out[i] = t
            i += 1
            mark[t] = False
        for j in range(adj_ptr[t], adj_ptr[t + 1]):
            s = adj[j]
            if mark[s]:
                out[i] = s
                i += 1
                mark[s] = False
    out.sort()
    return out


@njit(cache=True)
def aggregate_rows(
    proj: Any, pos: Any, targets: Any, crow: Any, src: Any, n: int, heads: int, gat: bool, slope: float,
    edge_w: Any, bias: Any,
) -> Any:  # fmt: skip
    """One message-passing round's aggregated messages (before the mix) at `targets`, from `proj` (rows of
    `h @ w` for the targets and their neighbours; `pos[t]` is task t's row) and the CSR structure of
    `inference._Graph`: each head's incoming edges of a target (self-loop included), a GAT's softmax over them
    shifted by their maximum, or a GCN's fixed weights. Float64 inside, float32 out."""
    F = heads
    fc = proj.shape[1] - (2 * F if gat else 0)
    C = fc // F
    out = np.empty((len(targets), fc), np.float32)
    msg = np.empty(C)
    for i in range(len(targets)):
        t = targets[i]
        pt = pos[t]
        for f in range(F):
            lo, hi = crow[f * n + t], crow[f * n + t + 1]
            for c in range(C):
                msg[c] = 0.0
            if gat:
                top = -np.inf
                for j in range(lo, hi):
                    e = np.float64(proj[pos[src[j] - f * n], fc + f]) + proj[pt, fc + F + f]
                    e = e if e > 0 else slope * e
                    top = max(top, e)
                total = 0.0
                for j in range(lo, hi):
                    ps = pos[src[j] - f * n]
                    e = np.float64(proj[ps, fc + f]) + proj[pt, fc + F + f]
                    e = e if e > 0 else slope * e
                    a = np.exp(e - top)
                    total += a
                    for c in range(C):
                        msg[c] += a * proj[ps, f * C + c]
                for c in range(C):
                    msg[c] /= total
            else:
                for j in range(lo, hi):
                    ps = pos[src[j] - f * n]
                    for c in range(C):
                        msg[c] += edge_w[j] * proj[ps, f * C + c]
            for c in range(C):
                out[i, f * C + c] = msg[c] + bias[f * C + c]
    return out

"""Compiled numpy form of a Problem, for the simulator and schedulers' hot paths.

All workflows are flattened into one global task index: workflow `w` owns the
contiguous range `wf_task_ptr[w]:wf_task_ptr[w+1]`. Adjacency is CSR in both
directions. `exec_s[t, n]` is the predicted execution time of task t on node n
(runtime / speed, or the classic per-node cost when the task gives one).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import numpy.typing as npt

from dagsched.model.entities import Problem

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

CPU, MEM, GPU = 0, 1, 2

EPS = 1e-9
"""The one tolerance of capacity and time comparisons: a request fits free room within EPS, inputs that arrive
within EPS of now are there. The simulator, the validator-independent legality checks and every planner use it."""


@dataclass(frozen=True, eq=False)
class CompiledProblem:
    problem: Problem
    task_ids: list[str]
    task_wf: IntArray
    wf_names: list[str]
    wf_task_ptr: IntArray
    wf_submit_s: FloatArray
    wf_deadline_s: FloatArray  # relative to submission; nan = default
    runtime_s: FloatArray
    req: FloatArray  # (n_tasks, 3): cpu, mem GiB, gpu
    priority: IntArray
    critical: npt.NDArray[np.bool_]
    task_deadline_s: FloatArray  # relative to submission; nan = none
    exec_s: FloatArray  # (n_tasks, n_nodes)
    succ_ptr: IntArray
    succ_idx: IntArray
    succ_data: FloatArray
    pred_ptr: IntArray
    pred_idx: IntArray
    pred_data: FloatArray
    topo: IntArray
    node_ids: list[str]
    cap: FloatArray  # (n_nodes, 3)
    speed: FloatArray
    price_per_hour: FloatArray
    boot_delay_s: FloatArray
    bandwidth: FloatArray  # (n_nodes, n_nodes) bytes/s, inf on the diagonal
    latency_s: float
    task_index: dict[tuple[int, str], int] = field(repr=False)
    allowed: npt.NDArray[np.bool_] | None = field(default=None, repr=False)
    """(n_tasks, n_nodes): pairs a placement rule permits (the service's node filters, a task pinned to its node);
    None permits every pair. The simulator's legality check honours it, and so does every planner."""

    @property
    def n_tasks(self) -> int:
        return len(self.task_ids)

    @property
    def n_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def n_workflows(self) -> int:
        return len(self.wf_names)

    def succs(self, t: int) -> IntArray:
        return self.succ_idx[self.succ_ptr[t] : self.succ_ptr[t + 1]]

    def preds(self, t: int) -> IntArray:
        return self.pred_idx[self.pred_ptr[t] : self.pred_ptr[t + 1]]

    def comm_s(self, data_bytes: float, a: int, b: int) -> float:
        """Transfer delay between nodes a and b; none on the same node."""
        if a == b:
            return 0.0
        return float(data_bytes / self.bandwidth[a, b] + self.latency_s)

    def input_arrival_s(self, t: int, node_of: IntArray, finish_s: FloatArray, not_before: float) -> FloatArray:
        """When all inputs of task t are on each node, given where (`node_of`) and when (`finish_s`) its parents
        end, and never before `not_before`: the data-arrival rule, vectorised over parents and nodes.

        A child on its parent's node waits nothing; on another it waits `data_arrival_s` after the parent ends.
        """
        lo, hi = self.pred_ptr[t], self.pred_ptr[t + 1]
        if hi == lo:
            return np.full(self.n_nodes, not_before)
        if hi - lo == 1:  # one parent (most tasks of chains, fan-outs and streams): no 2-D temporaries
            p = self.pred_idx[lo]
            src, end = node_of[p], float(finish_s[p])
            one: FloatArray = self.pred_data[lo] / self.bandwidth[src]
            one += end  # (finish + data / bandwidth) + latency, in the general case's order: the same floats
            one += self.latency_s
            one[src] = end
            np.maximum(one, not_before, out=one)
            return one
        parents = self.pred_idx[lo:hi]
        src = node_of[parents]
        finish = finish_s[parents]
        arrival = finish[:, None] + self.pred_data[lo:hi, None] / self.bandwidth[src] + self.latency_s
        arrival[np.arange(hi - lo), src] = finish
        return np.asarray(np.maximum(arrival.max(axis=0), not_before), dtype=np.float64)

    def mean_comm_s(self, data_bytes: float) -> float:
        """Average transfer delay over distinct node pairs (HEFT's mean communication cost)."""
        m = self.n_nodes
        if m < 2:
            return 0.0
        off = ~np.eye(m, dtype=bool)
        return float(np.mean(data_bytes / self.bandwidth[off]) + self.latency_s)

    def with_allowed(self, allowed: npt.NDArray[np.bool_] | None) -> CompiledProblem:
        """This problem with a placement matrix (None: every pair allowed); checked for shape."""
        if allowed is not None:
            allowed = np.array(allowed, dtype=bool)  # a copy: the caller keeps a writable array
            if allowed.shape != (self.n_tasks, self.n_nodes):
                raise ValueError(
                    f"allowed has shape {allowed.shape}, not (tasks, nodes) = {(self.n_tasks, self.n_nodes)}"
                )
            allowed.flags.writeable = False
        return replace(self, allowed=allowed)

    def task_name(self, t: int) -> str:
        """Readable global name: the task id, prefixed by its workflow when there are several."""
        if self.n_workflows == 1:
            return self.task_ids[t]
        return f"{self.wf_names[int(self.task_wf[t])]}/{self.task_ids[t]}"


def task_work(cp: CompiledProblem) -> FloatArray:
    """cpu x runtime at speed 1.0 of every task: the work it holds the cluster for."""
    return np.asarray(cp.req[:, 0] * cp.runtime_s, dtype=np.float64)


def data_arrival_s(finish_s: float, data_bytes: float, bandwidth: float, latency_s: float) -> float:
    """When data a parent hands over reaches another node: `data / bandwidth + latency` after the parent ends
    (the scalar form of `CompiledProblem.input_arrival_s`, for planners' inner loops)."""
    return finish_s + data_bytes / bandwidth + latency_s


def compile_problem(problem: Problem) -> CompiledProblem:
    """Flatten a validated Problem into arrays (O(tasks x nodes + edges))."""
    nodes = problem.cluster.nodes
    node_pos = {n.id: i for i, n in enumerate(nodes)}
    cap = np.array([[n.cpu, n.mem, n.gpu] for n in nodes], dtype=np.float64)
    speed = np.array([n.speed for n in nodes], dtype=np.float64)
    node_bw = np.array([n.bandwidth for n in nodes], dtype=np.float64)
    bandwidth = np.minimum.outer(node_bw, node_bw)
    for link in problem.cluster.links:
        a, b = node_pos[link.a], node_pos[link.b]
        bandwidth[a, b] = bandwidth[b, a] = link.bandwidth
    np.fill_diagonal(bandwidth, np.inf)

    task_ids: list[str] = []
    task_wf: list[int] = []
    wf_ptr = [0]
    index: dict[tuple[int, str], int] = {}
    for w, wf in enumerate(problem.workflows):
        for task in wf.tasks:
            index[(w, task.id)] = len(task_ids)
            task_ids.append(task.id)
            task_wf.append(w)
        wf_ptr.append(len(task_ids))
    tasks = [t for wf in problem.workflows for t in wf.tasks]
    n = len(tasks)
    runtime = np.array([t.runtime for t in tasks], dtype=np.float64)
    exec_s = runtime[:, None] / speed[None, :]
    for i, task in enumerate(tasks):
        if task.costs:
            for node_id, cost in task.costs.items():
                exec_s[i, node_pos[node_id]] = cost

    src, dst, data = [], [], []
    for w, wf in enumerate(problem.workflows):
        for e in wf.edges:
            src.append(index[(w, e.src)])
            dst.append(index[(w, e.dst)])
            data.append(e.data)
    src_a = np.array(src, dtype=np.int64)
    dst_a = np.array(dst, dtype=np.int64)
    data_a = np.array(data, dtype=np.float64)
    succ_ptr, succ_idx, succ_data = _csr(src_a, dst_a, data_a, n)
    pred_ptr, pred_idx, pred_data = _csr(dst_a, src_a, data_a, n)

    return CompiledProblem(
        problem=problem,
        task_ids=task_ids,
        task_wf=np.array(task_wf, dtype=np.int64),
        wf_names=[wf.name for wf in problem.workflows],
        wf_task_ptr=np.array(wf_ptr, dtype=np.int64),
        wf_submit_s=np.array([wf.submit_time for wf in problem.workflows], dtype=np.float64),
        wf_deadline_s=np.array(
            [np.nan if wf.deadline is None else wf.deadline for wf in problem.workflows], dtype=np.float64
        ),
        runtime_s=runtime,
        req=np.array([[t.cpu, t.mem, t.gpu] for t in tasks], dtype=np.float64).reshape(n, 3),
        priority=np.array([t.priority for t in tasks], dtype=np.int64),
        critical=np.array([t.critical for t in tasks], dtype=bool),
        task_deadline_s=np.array([np.nan if t.deadline is None else t.deadline for t in tasks], dtype=np.float64),
        exec_s=exec_s,
        succ_ptr=succ_ptr,
        succ_idx=succ_idx,
        succ_data=succ_data,
        pred_ptr=pred_ptr,
        pred_idx=pred_idx,
        pred_data=pred_data,
        topo=_topological_order(succ_ptr, succ_idx, np.diff(pred_ptr)),
        node_ids=[nd.id for nd in nodes],
        cap=cap,
        speed=speed,
        price_per_hour=np.array([nd.price_per_hour for nd in nodes], dtype=np.float64),
        boot_delay_s=np.array([nd.boot_delay for nd in nodes], dtype=np.float64),
        bandwidth=bandwidth,
        latency_s=float(problem.cluster.latency),
        task_index=index,
    )


def _csr(rows: IntArray, cols: IntArray, data: FloatArray, n: int) -> tuple[IntArray, IntArray, FloatArray]:
    order = np.lexsort((cols, rows))
    counts = np.bincount(rows, minlength=n) if len(rows) else np.zeros(n, dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, cols[order].astype(np.int64), data[order]


def _topological_order(succ_ptr: IntArray, succ_idx: IntArray, indegree: IntArray) -> IntArray:
    """Kahn's algorithm, smallest index first among ready tasks (deterministic)."""
    import heapq

    remaining = indegree.astype(np.int64).copy()
    ready = [int(t) for t in np.flatnonzero(remaining == 0)]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        t = heapq.heappop(ready)
        order.append(t)
        for c in succ_idx[succ_ptr[t] : succ_ptr[t + 1]]:
            remaining[c] -= 1
            if remaining[c] == 0:
                heapq.heappush(ready, int(c))
    return np.array(order, dtype=np.int64)

"""The learned dispatch index of a shared cluster: what it reads of a stream's state and the small network it is.

At each decision every ready task gets a row of `FEATURES`: its workflow's state (work and critical path left,
age, slack to its deadline, priority class, how many of its tasks are ready), its own (tail behind it, run time
on the best node, data in, what it asks for, how much the node matters) and the cluster's (utilisation per
resource, queue, the arrival rate measured over the last hours as an offered load, speed spread, open
workflows). `IndexNet` turns the rows into what the `drl_stream` dispatcher uses: a score (the highest is
served first), a hold margin per task (how much faster a busy node must be for the task to wait for it), for the
task being placed a score per candidate node over `NODE_FEATURES`, and per workflow with a ready task, from the
workflow's and the cluster's columns of its rows (`WORKFLOW_FEATURES`), its parallelism cap (a factor on its
weighted fair share, `fair_cap`'s cap) and, while it has not started, its admission (the busy share of cores and
the ratio of work left to the shortest started workflow's at which it waits, `srpt_admit`'s rule).

What does not change during a run (each task's tail, best-node time and data in; each workflow's work and
deadline) is computed once per stream in `StreamContext`, not per decision; a decision costs O(r F + r H)
for r ready tasks, F features and H hidden units (numpy, no torch).

Weights are one safetensors file whose metadata records the features, the architecture and what the
weights were trained on; `IndexNet.flat`/`with_flat` give the parameter vector evolution strategies perturb.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from dagsched.model.compiled import CompiledProblem, task_work
from dagsched.model.errors import InputError
from dagsched.model.graph import fastest_exec_s
from dagsched.model.ranks import longest_to_exit_s
from dagsched.sim.decision import DecisionPoint

FloatArray = npt.NDArray[np.float64]

FEATURES = (
    "log_work_left",  # log1p(work left of the task's workflow, cpu-s, running tasks whole / 3600)
    "log_path_left",  # log1p(longest tail among the workflow's ready tasks / 600 s)
    "log_age",  # log1p((now - the workflow's submission) / 600 s)
    "slack",  # (deadline - now - path left) / the workflow's deadline span, clipped to [-2, 2]
    "class_rank",  # priority class from the task priority (10 x class rank + own 0-3): 0 batch .. 1 high
    "log_width",  # log1p(ready tasks of the workflow)
    "log_tail",  # log1p(the task's tail: longest path from its start to its workflow's end, fastest hosts / 600)
    "log_best_exec",  # log1p(run time on the fastest node that can host it / 600 s)
    "log_data_in",  # log1p(seconds its input data takes over a typical link)
    "gpu",  # 1 if it asks for a GPU
    "cpu_share",  # cores asked / the largest node's cores
    "log_speedup",  # log(median run time over the nodes that can host it / the fastest's)
    "util_cpu",  # cluster: share of the up nodes' cores in use
    "util_mem",  # cluster: share of memory in use
    "util_gpu",  # cluster: share of GPUs in use (0 without GPUs)
    "log_queue",  # cluster: log1p(ready tasks / nodes)
    "measured_load",  # cluster: work submitted in the last RATE_WINDOW_S over the capacity, binding resource
    "speed_spread",  # cluster: std / mean of the up nodes' speeds
    "log_open",  # cluster: log1p(workflows with a ready task / nodes)
)
N_FEATURES = len(FEATURES)

NODE_FEATURES = (
    "finish_gap",  # (run time here - the best candidate's) / the best candidate's (all start now)
    "spare_gpu",  # 1 if the node has GPUs and the task asks for none
    "spare_gpu_x_util",  # spare_gpu x the cluster's GPU utilisation
    "free_after",  # share of the node's cores still free once the task is placed
    "log_speed",  # log(node speed / the fastest up node's)
)
N_NODE_FEATURES = len(NODE_FEATURES)

WORKFLOW_FEATURES = (
    *FEATURES[:6],  # the workflow's: work and path left, age, slack, class, width
    *FEATURES[12:],  # the cluster's: utilisation, queue, measured load, speed spread, open workflows
)
"""What the cap and admission heads read: the columns of `FEATURES` that are the same for every ready task of a
workflow."""
WORKFLOW_COLUMNS = np.array([FEATURES.index(f) for f in WORKFLOW_FEATURES])
N_WORKFLOW_FEATURES = len(WORKFLOW_FEATURES)
LEVER_PARAMS = ("w_cap", "b_cap", "w_sat", "b_sat", "w_admit", "b_admit")
"""The cap and admission heads' parameters; weights without them (trained before the heads) run with both levers off."""

RATE_WINDOW_S = 7200.0
"""The arrival rate is measured over the submissions of the last two hours (at least ten minutes)."""
MAX_MARGIN = 0.5
"""Hold margins lie in (0, MAX_MARGIN): at 0.5 and beyond nothing is held on clusters whose speeds differ by 2 x."""
VERSION = 1
"""Bumped when a feature's meaning changes: weights of another version are refused."""


class ReadyGroups(NamedTuple):
    """Ready tasks by workflow: each one's workflow, and per workflow with a ready task (ascending) its index, the
    position of its first ready task and how many it has ready; `inverse` (each task's workflow as a position in
    `wfs`) only where the tasks are not in index order."""

    wf: npt.NDArray[np.int64]
    wfs: npt.NDArray[np.int64]
    first: npt.NDArray[np.int64]
    counts: npt.NDArray[np.int64]
    inverse: npt.NDArray[np.int64] | None = None

    def per_task(self, values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """One value per workflow (in `wfs`' order) repeated for each of its ready tasks."""
        return np.repeat(values, self.counts) if self.inverse is None else values[self.inverse]


class StreamContext:
    """Per-stream constants the features read, computed once at reset (the DAGs embedded once per arrival)."""

    def __init__(self, cp: CompiledProblem) -> None:
        self.cp = cp
        fastest = fastest_exec_s(cp)
        self.work = task_work(cp)
        self.tail_s = longest_to_exit_s(cp, fastest)
        hosts = np.all(cp.req[:, None, :] <= cp.cap[None, :, :] + 1e-9, axis=2)
        masked = np.where(hosts, cp.exec_s, np.nan)
        median = np.nanmedian(np.where(hosts.any(axis=1)[:, None], masked, cp.exec_s), axis=1)
        self.speedup = np.log(np.maximum(median, 1e-9) / np.maximum(fastest, 1e-9))
        links = cp.bandwidth[np.isfinite(cp.bandwidth)]
        link = float(np.median(links)) if links.size else 1.25e9
        data_in = np.bincount(np.repeat(np.arange(cp.n_tasks), np.diff(cp.pred_ptr)), cp.pred_data, cp.n_tasks)
        self.class_rank = np.clip((cp.priority // 10) / 2.0, 0.0, 1.0)
        # columns 4-11 of a task's row, what does not change while it waits (5, its workflow's width, is written
        # over)
        self.static = np.column_stack(
            [
                self.class_rank,
                np.zeros(cp.n_tasks),
                np.log1p(self.tail_s / 600.0),
                np.log1p(fastest / 600.0),
                np.log1p(data_in / link),
                (cp.req[:, 2] > 0).astype(np.float64),
                cp.req[:, 0] / max(float(cp.cap[:, 0].max()), 1e-9),
                self.speedup,
            ]
        )
        path = np.zeros(cp.n_workflows)
        np.maximum.at(path, cp.task_wf, self.tail_s)
        self.deadline_s = np.where(np.isnan(cp.wf_deadline_s), 2.0 * path, cp.wf_deadline_s)
        self.span_s = np.maximum(self.deadline_s, 1.0)
        capacity = (cp.cap * cp.speed[:, None]).sum(axis=0)
        wf_work = np.zeros((cp.n_workflows, 3))
        np.add.at(wf_work, cp.task_wf, cp.req * cp.runtime_s[:, None])
        share = wf_work / np.where(capacity > 0, capacity, np.inf)  # per workflow: seconds of the whole cluster
        self.by_submit = np.argsort(cp.wf_submit_s, kind="stable")
        self.submit_sorted = cp.wf_submit_s[self.by_submit]
        self.cum_share = np.vstack([np.zeros(3), np.cumsum(share[self.by_submit], axis=0)])
        self.submit_list: list[float] = self.submit_sorted.tolist()
        self._load_key: tuple[int, int, float] | None = None
        self._load = 0.0
        self.speed_max = float(cp.speed.max())
        self._by_up: dict[bytes, tuple[FloatArray, int, float, npt.NDArray[np.bool_], FloatArray]] = {}

    def measured_load(self, now: float) -> float:
        """Offered load of what was submitted in the last RATE_WINDOW_S, binding resource (past arrivals only)."""
        hi = bisect_right(self.submit_list, now)
        lo = bisect_right(self.submit_list, now - RATE_WINDOW_S)
        span = max(min(now, RATE_WINDOW_S), 600.0)
        key = (hi, lo, span)  # the same until a submission enters or leaves the window (span: after two hours)
        if key != self._load_key:
            self._load_key, self._load = key, float(((self.cum_share[hi] - self.cum_share[lo]) / span).max())
        return self._load

    def groups(self, ready: npt.NDArray[np.int64], ascending: bool = False) -> ReadyGroups:
        """The ready tasks by workflow. A workflow's tasks are consecutive in the task index, so in `ascending`
        index order (as `DecisionPoint.ready_tasks` gives them) each workflow is one run of `ready`: O(r);
        otherwise a sort, O(r log r)."""
        wf = self.cp.task_wf[ready]
        if ascending:
            edges = np.flatnonzero(np.concatenate(([True], wf[1:] != wf[:-1], [True])))
            first = edges[:-1]
            return ReadyGroups(wf, wf[first], first, np.diff(edges))
        wfs, first, inverse, counts = np.unique(wf, return_index=True, return_inverse=True, return_counts=True)
        return ReadyGroups(wf, wfs, first, counts, inverse)

    def features(
        self, dp: DecisionPoint, ready: npt.NDArray[np.int64], left: FloatArray, groups: ReadyGroups | None = None
    ) -> FloatArray:
        """(r, N_FEATURES) for the ready tasks at `dp` (ascending), given each workflow's work left (`dp.work_left`)
        and, if the caller has them, their `groups`."""
        cp, now = self.cp, dp.now
        g = self.groups(ready) if groups is None else groups
        wf = g.wf
        tail = self.tail_s[ready]
        longest = np.maximum.reduceat(tail, g.first) if g.inverse is None else _longest(tail, g)
        path = g.per_task(longest)  # the longest tail among its workflow's ready tasks
        x = np.empty((len(ready), N_FEATURES))
        x[:, 0] = np.log1p(left[wf] / 3600.0)
        x[:, 1] = np.log1p(path / 600.0)
        submit = cp.wf_submit_s[wf]
        x[:, 2] = np.log1p(np.maximum(now - submit, 0.0) / 600.0)
        span = self.span_s[wf]
        x[:, 3] = np.clip((submit + span - now - path) / span, -2.0, 2.0)
        x[:, 4:12] = self.static[ready]
        x[:, 5] = np.log1p(g.per_task(g.counts))
        up = dp.node_up
        cap, n_nodes, spread, has, cap_or_1 = self._up_nodes(up, dp.cap)
        cluster = np.empty(N_FEATURES - 12)  # the same for every task
        cluster[:3] = np.where(has, 1.0 - dp.free[up].sum(axis=0) / cap_or_1, 0.0)  # a resource they lack reads 0
        cluster[3] = np.log1p(len(ready) / n_nodes)
        cluster[4] = self.measured_load(now)
        cluster[5] = spread
        cluster[6] = np.log1p(len(g.first) / n_nodes)
        x[:, 12:] = cluster
        return x

    def _up_nodes(
        self, up: npt.NDArray[np.bool_], node_cap: FloatArray
    ) -> tuple[FloatArray, int, float, npt.NDArray[np.bool_], FloatArray]:
        """Capacity, count and speed spread of the up nodes, which resources they have (finite and positive) and
        the capacity with 1 for those they lack, computed once per set of up nodes (failures change it)."""
        key = up.tobytes()
        if key not in self._by_up:
            speed = self.cp.speed[up] if up.any() else self.cp.speed
            cap = node_cap[up].sum(axis=0)
            has = np.isfinite(cap) & (cap > 0)
            spread = float(speed.std() / speed.mean())
            self._by_up[key] = (cap, max(int(up.sum()), 1), spread, has, np.where(has, cap, 1.0))
        return self._by_up[key]

    def node_features(self, t: int, nodes: list[int], free: FloatArray, util_gpu: float) -> FloatArray:
        """(len(nodes), N_NODE_FEATURES) for placing ready task t on each of `nodes` (all can start it now)."""
        cp = self.cp
        exec_s = cp.exec_s[t, nodes]
        best = max(float(exec_s.min()), 1e-9)
        z = np.empty((len(nodes), N_NODE_FEATURES))
        z[:, 0] = (exec_s - best) / best
        z[:, 1] = (cp.cap[nodes, 2] > 0) & (cp.req[t, 2] <= 0)
        z[:, 2] = z[:, 1] * util_gpu
        z[:, 3] = (free[nodes, 0] - cp.req[t, 0]) / np.maximum(cp.cap[nodes, 0], 1e-9)
        z[:, 4] = np.log(cp.speed[nodes] / self.speed_max)
        return z


def _longest(tail: FloatArray, g: ReadyGroups) -> FloatArray:
    """Per workflow of `g` (tasks in any order), the longest of its ready tasks' tails."""
    assert g.inverse is not None
    out = np.zeros(len(g.wfs))
    np.maximum.at(out, g.inverse, tail)
    return out


@dataclass
class IndexNet:
    """score(x) = x w_lin + tanh(x W1 + b1) w_out; margin(x) = MAX_MARGIN sigmoid(x w_hold + b_hold);
    node score(z) = z w_node; per workflow, over its `WORKFLOW_FEATURES` u: cap factor exp(u w_cap + b_cap), the
    busy share at which it waits for admission u w_sat + b_sat, the work-left ratio u w_admit + b_admit (log).
    `meta` records features, architecture and training (strings, as safetensors keeps)."""

    params: dict[str, FloatArray]
    meta: dict[str, str] = field(default_factory=dict)

    @classmethod
    def initial(cls, hidden: int = 8, margin: float = 0.2, seed: int = 0) -> IndexNet:
        """Before training: every score 0, the hidden layer small and random with zero output weights, a constant
        hold `margin` (srpt_hold's by default), the earliest-finish node (a large weight on `finish_gap`), and the
        hand rules' levers (`lever_heads`)."""
        rng = np.random.default_rng(seed)
        w_node = np.zeros(N_NODE_FEATURES)
        w_node[NODE_FEATURES.index("finish_gap")] = -10.0
        return cls(
            {
                "w_lin": np.zeros(N_FEATURES),
                "w1": rng.normal(0.0, 0.3, (N_FEATURES, hidden)),
                "b1": np.zeros(hidden),
                "w_out": np.zeros(hidden),
                "w_hold": np.zeros(N_FEATURES),
                "b_hold": np.array([np.log(margin / (MAX_MARGIN - margin))]),
                "w_node": w_node,
                **lever_heads(),
            }
        )

    def scores(self, x: FloatArray) -> FloatArray:
        p = self.params
        return np.asarray(x @ p["w_lin"] + np.tanh(x @ p["w1"] + p["b1"]) @ p["w_out"], dtype=np.float64)

    def margins(self, x: FloatArray) -> FloatArray:
        p = self.params
        return np.asarray(MAX_MARGIN / (1.0 + np.exp(-(x @ p["w_hold"] + p["b_hold"][0]))), dtype=np.float64)

    def node_scores(self, z: FloatArray) -> FloatArray:
        return np.asarray(z @ self.params["w_node"], dtype=np.float64)

    @property
    def has_levers(self) -> bool:
        """Whether the weights have the cap and admission heads."""
        return set(LEVER_PARAMS) <= set(self.params)

    def cap_factors(self, u: FloatArray) -> FloatArray:
        """Per workflow row of `WORKFLOW_FEATURES`: its cap as a multiple of its weighted fair share."""
        p = self.params
        return np.asarray(np.exp(u @ p["w_cap"] + p["b_cap"][0]), dtype=np.float64)

    def admission(self, u: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per workflow row: the busy share of cores at which it waits, and the ratio of its work left to the shortest
        started workflow's above which it waits (`levers.admission_holds`)."""
        p = self.params
        return (
            np.asarray(u @ p["w_sat"] + p["b_sat"][0], dtype=np.float64),
            np.asarray(np.exp(u @ p["w_admit"] + p["b_admit"][0]), dtype=np.float64),
        )

    def flat(self) -> FloatArray:
        """Every parameter in one vector (sorted by name), what evolution strategies perturb."""
        return np.concatenate([self.params[k].ravel() for k in sorted(self.params)])

    def with_flat(self, theta: FloatArray) -> IndexNet:
        out, i = {}, 0
        for k in sorted(self.params):
            n = self.params[k].size
            out[k] = np.asarray(theta[i : i + n], dtype=np.float64).reshape(self.params[k].shape)
            i += n
        return IndexNet(out, dict(self.meta))

    def save(self, path: str | Path, **meta: Any) -> None:
        """One .safetensors file; metadata: features, version, and `meta` (what it trained on, its figures)."""
        self.meta.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()})
        self.meta.update({"features": json.dumps(FEATURES), "node_features": json.dumps(NODE_FEATURES)})
        self.meta["version"] = str(VERSION)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        save_file({k: np.ascontiguousarray(v, dtype=np.float64) for k, v in self.params.items()}, str(path), self.meta)

    @classmethod
    def load(cls, path: str | Path) -> IndexNet:
        try:
            params = load_file(str(path))
            with safe_open(str(path), framework="numpy") as f:
                meta = dict(f.metadata() or {})
        except (OSError, ValueError, SafetensorError) as e:
            raise InputError("weights", f"cannot read the stream index weights '{path}': {e}") from e
        if meta.get("version") != str(VERSION) or json.loads(meta.get("features", "[]")) != list(FEATURES):
            raise InputError("weights", f"'{path}' was trained on other features than this dagsched computes")
        return cls({k: v.astype(np.float64) for k, v in params.items()}, meta)


def lever_heads(cap_factor: float = 4.0, saturated: float = 0.85) -> dict[str, FloatArray]:
    """The cap and admission heads at the hand rules' values, the same for every workflow: `fair_cap`'s cap
    (`cap_factor` times the weighted fair share) and `srpt_admit`'s admission (wait while at least `saturated` of the
    cores are busy and a started workflow with less work left has a task ready). ES starts from them."""
    return {
        "w_cap": np.zeros(N_WORKFLOW_FEATURES),
        "b_cap": np.array([np.log(cap_factor)]),
        "w_sat": np.zeros(N_WORKFLOW_FEATURES),
        "b_sat": np.array([saturated]),
        "w_admit": np.zeros(N_WORKFLOW_FEATURES),
        "b_admit": np.array([0.0]),
    }


SHIPPED = Path(__file__).resolve().parents[1] / "data" / "models" / "stream-index-v1.safetensors"
"""The weights `drl_stream` loads by default."""
SHIPPED_LEVERS = SHIPPED.with_name(SHIPPED.stem + "-levers.safetensors")
"""The weights with the cap and admission heads, what `drl_stream_levers` loads."""

"""The learned node rule: which of a task's few earliest-finish nodes an insertion planner should pick.

HEFT's structure (tasks in upward-rank order, each inserted into a node's planned timeline) is where the
learned policy does not lose to HEFT: every online action space starts tasks only on nodes free now,
while the planner can queue a task behind a busy fast node. Inside it the one choice left is the node, and
there HEFT's rule (earliest finish) is myopic: it ignores what the choice does to the successors'
transfers. The rule here scores each candidate node from what the planner knows at that moment
(`PLAN_FEATURES`) and is trained to pick the node whose HEFT-completed plan ends first (the
`heft_lookahead` teacher, `dagsched.rl.node_rule`). A small MLP, so a choice costs microseconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from safetensors.numpy import load_file, save_file

from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.model.ranks import mean_comm_succ_s, mean_exec_s, optimistic_cost_table, upward_rank

if TYPE_CHECKING:
    from dagsched.schedulers.heft_lookahead import Choice

PLAN_FEATURES = (
    "finish_gap",  # (finish - the earliest finish over the nodes) / scale: 0 is HEFT's node
    "o_finish_gap",  # (finish + OCT - its minimum) / scale: 0 is PEFT's node
    "oct_gap",  # (OCT on this node - its minimum) / scale: how far the rest of the DAG is from here
    "log_exec_ratio",  # log(exec time here / the fastest node's)
    "node_wait",  # (start - inputs' arrival here) / scale: time queued behind the node's planned use
    "data_wait",  # (inputs' arrival here - the earliest arrival on any node) / scale
    "local_input_share",  # share of the task's input bytes produced on this node
    "finish_rank",  # position among the candidates by finish, / candidates
    "is_peft_choice",  # 1 on the node minimising finish + OCT
    "log_node_slowness",  # log of the node's median exec time / the fastest node's, over all tasks
    "inserted",  # 1 if the start is before the node's last planned use (a gap was used)
    "extends_plan",  # (finish - the plan's current end) / scale, at least 0
    "log_children",  # log(1 + number of successors)
    "task_ccr",  # log(1 + mean transfer to successors / mean exec): how much the task sends
    "rank_share",  # upward rank / the largest: how early in the DAG the task is
    "log_ccr",  # log of the problem's total transfer / total exec (mean costs)
    "heterogeneity",  # std of log node slowness
    "log_nodes",  # log of the number of nodes
    "hosts_share",  # share of the nodes that can take the task now
    "path_gap",  # (estimated end of the longest path through t's children, t here) - its minimum, / scale
    "children_gap",  # (mean earliest finish of t's children, t here) - its minimum, / scale
)
N_FEATURES = len(PLAN_FEATURES)


class PlanContext:
    """What the features read that does not change while a problem is planned."""

    def __init__(self, cp: CompiledProblem) -> None:
        self.cp = cp
        self.oct = optimistic_cost_table(cp)
        self.urank = upward_rank(cp)
        self.scale = float(self.urank.max()) if cp.n_tasks and self.urank.max() > 0 else 1.0
        wbar = mean_exec_s(cp)
        comm = mean_comm_succ_s(cp)
        timed = cp.exec_s[cp.exec_s.min(axis=1) > 1e-9 * cp.exec_s.max(initial=0.0)]  # zero-length: no speed
        slowness = np.median(timed / timed.min(axis=1, keepdims=True), axis=0) if len(timed) else np.ones(cp.n_nodes)
        self.log_slowness = np.log(slowness / slowness.min())
        self.eps = 1e-6 * self.scale  # keeps ratios of zero-length tasks finite
        n_succ = np.diff(cp.succ_ptr)
        sender = np.repeat(np.arange(cp.n_tasks), n_succ)
        out_comm = np.bincount(sender, weights=comm, minlength=cp.n_tasks) / np.maximum(n_succ, 1)
        self.task_ccr = np.log1p(out_comm / np.maximum(wbar, 1e-6 * self.scale))
        self.log_children = np.log1p(n_succ)
        self.rank_share = self.urank / self.scale
        total_comm, total_exec = float(comm.sum()), float(wbar.sum())
        self.log_ccr = float(np.log(max(total_comm, 1e-9) / max(total_exec, 1e-9)))
        self.heterogeneity = float(self.log_slowness.std())
        self.log_nodes = float(np.log(cp.n_nodes))
        self.tail = self.urank - wbar  # rank_u after the task itself: what follows it on the critical path
        self.transfer_per_byte = 1.0 / cp.bandwidth  # 0 on the diagonal (inf bandwidth): no transfer on one node

    def look_ahead(self, t: int, nodes: np.ndarray, finish: np.ndarray, last_use: np.ndarray) -> np.ndarray:
        """(len(nodes), 2): with t on each node, the longest estimated path through its children and their
        mean earliest finish. A child goes where it would finish first once t's data reached it and the node's
        planned use (t's included) ended; what follows the child is its upward rank."""
        cp = self.cp
        lo, hi = cp.succ_ptr[t], cp.succ_ptr[t + 1]
        out = np.empty((len(nodes), 2))
        if hi == lo:
            out[:, 0] = out[:, 1] = finish[nodes]
            return out
        children, data = cp.succ_idx[lo:hi], cp.succ_data[lo:hi]
        exec_c = cp.exec_s[children]  # (c, p)
        for i, n in enumerate(nodes.tolist()):
            arrive = finish[n] + data[:, None] * self.transfer_per_byte[n] + cp.latency_s  # (c, p)
            arrive[:, n] = finish[n]
            free = last_use.copy()
            free[n] = max(free[n], finish[n])
            eft = (np.maximum(arrive, free) + exec_c).min(axis=1)
            out[i, 0] = float((eft + self.tail[children]).max())
            out[i, 1] = float(eft.mean())
        return out

    def features(self, t: int, nodes: np.ndarray, choice: Choice) -> np.ndarray:
        """(len(nodes), N_FEATURES) for task t on each candidate node, from the planner's estimates (`Choice`)."""
        cp, s = self.cp, self.scale
        start, finish, arrival, last_use, node_of, plan_end_s = choice
        ok = np.isfinite(finish)
        o_finish = np.where(ok, finish + self.oct[t], np.inf)
        exec_t = cp.exec_s[t]
        x = np.empty((len(nodes), N_FEATURES))
        x[:, 0] = (finish[nodes] - finish[ok].min()) / s
        x[:, 1] = (o_finish[nodes] - o_finish[ok].min()) / s
        x[:, 2] = (self.oct[t, nodes] - self.oct[t][ok].min()) / s
        x[:, 3] = np.log((exec_t[nodes] + self.eps) / (exec_t[ok].min() + self.eps))
        x[:, 4] = (start[nodes] - arrival[nodes]) / s
        x[:, 5] = (arrival[nodes] - arrival[ok].min()) / s
        lo, hi = cp.pred_ptr[t], cp.pred_ptr[t + 1]
        parents, data = cp.pred_idx[lo:hi], cp.pred_data[lo:hi]
        total = float(data.sum())
        if total > 0:
            where = node_of[parents]
            x[:, 6] = [float(data[where == n].sum()) / total for n in nodes]
        else:
            x[:, 6] = 0.0
        x[:, 7] = np.arange(len(nodes)) / max(len(nodes), 1)
        x[:, 8] = (nodes == int(np.argmin(o_finish))).astype(np.float64)
        x[:, 9] = self.log_slowness[nodes]
        x[:, 10] = (start[nodes] < last_use[nodes] - 1e-9).astype(np.float64)
        x[:, 11] = np.maximum(finish[nodes] - plan_end_s, 0.0) / s
        x[:, 12] = self.log_children[t]
        x[:, 13] = self.task_ccr[t]
        x[:, 14] = self.rank_share[t]
        x[:, 15] = self.log_ccr
        x[:, 16] = self.heterogeneity
        x[:, 17] = self.log_nodes
        x[:, 18] = float(ok.mean())
        ahead = self.look_ahead(t, nodes, finish, last_use)
        x[:, 19:21] = (ahead - ahead.min(axis=0)) / s
        return x


@dataclass
class NodeRule:
    """An MLP scoring each candidate node from its standardised features; the highest score is chosen."""

    weights: dict[str, np.ndarray]
    meta: dict[str, Any]

    @property
    def candidates(self) -> int:
        return int(self.meta["candidates"])

    def scores(self, x: np.ndarray) -> np.ndarray:
        w = self.weights
        h = (x - w["mean"]) / w["std"]
        for i in range(int(self.meta["layers"])):
            h = np.maximum(h @ w[f"w{i}"] + w[f"b{i}"], 0.0)
        return np.asarray(h @ w["w_out"] + w["b_out"], dtype=np.float64).reshape(-1)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Softmax of the scores: the rule's belief that each candidate is the best node."""
        s = self.scores(x)
        e = np.exp(s - s.max())
        return np.asarray(e / e.sum())

    def save(self, stem: str | Path) -> None:
        stem = Path(stem)
        stem.parent.mkdir(parents=True, exist_ok=True)
        save_file(
            {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in self.weights.items()}, f"{stem}.safetensors"
        )
        Path(f"{stem}.json").write_text(json.dumps(self.meta, indent=1) + "\n")

    @classmethod
    def load(cls, stem: str | Path) -> NodeRule:
        stem = Path(stem)
        try:
            meta = json.loads(Path(f"{stem}.json").read_text())
            weights = {k: v.astype(np.float64) for k, v in load_file(f"{stem}.safetensors").items()}
        except (OSError, ValueError) as e:
            raise InputError("node_rule", f"cannot load the node rule '{stem}': {e}") from e
        if tuple(meta.get("features", ())) != PLAN_FEATURES:
            raise InputError("node_rule", f"'{stem}' was trained on other features than this dagsched computes")
        return cls(weights, meta)


SHIPPED_NODE_RULE = Path(__file__).resolve().parents[1] / "data" / "models" / "node-rule-v1"
"""The node rule `drl_plan` loads by default."""

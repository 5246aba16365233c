"""Why the learned policy chose what it chose: per decision, its alternatives with probabilities and the
margin; for one decision, Integrated Gradients attributions (Captum) and the GAT layers' attention.

A plan is explained by replaying it: the drl scheduler plans the problem again with the same policy, greedy,
on its usual inference path, and each pick is recorded (`replay`). Replays are deterministic, so a replay of a
greedy plan with the same model makes the same plan (`PolicyReplay.reproduced` checks it against the stored
assignments). For the decisions asked about, the full `Observation` of that instant is kept (the numbers the
inference path reads, plus the static task columns), and `attribute` runs Integrated Gradients on it through
the PyTorch module.

What is attributed (`target`): the log-probability of the chosen action among the actions the decode could
choose (`drl.ACTIONS`: every legal pair and wait for `pair`; the top-ranked startable task's legal nodes and
wait for `rank_node`). A positive attribution pushed the policy towards its choice and away from the others.
The baseline input (`BASELINE`) is all features at zero: the features are normalised so that 0 means "none"
(no work, no data to move, no time to wait, no capacity, state flags off), so an attribution says how much a
feature's actual value moved the choice away from a featureless state. Completeness holds: the attributions
sum to F(input) - F(baseline) up to the integral's error, which is reported (`delta`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import Tensor

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.features import GLOBAL_FEATURES, NODE_FEATURES, PAIR_FEATURES, TASK_FEATURES, Observation
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.schedulers.drl import DRLScheduler, resolve_action, restrict_action, top_finish_nodes
from dagsched.sim.decision import DecisionPoint
from dagsched.sim.run import simulate

TOP_ALTERNATIVES = 3
"""Alternatives listed per decision (the chosen action always among them)."""

IG_STEPS = 256
"""Integration steps (Gauss-Legendre). The network is piecewise linear (ReLU), so the integral converges slowly:
on the shipped model's least certain decisions the completeness error was about 1 % of F(x) - F(baseline) at 64
steps and 0.2 % at 256 (Riemann trapezoid was 3 to 6 times worse at each count)."""

BASELINE = "zeros: every task, node, pair and global feature at 0 (the normalised features' 'none')"

TARGET = "log-probability of the chosen action among the actions the decode could choose"


@dataclass
class Pick:
    """One pick of the replay: the action taken and the policy's distribution over what it could have taken."""

    task: int | None  # None: wait
    node: int | None
    probability: float
    margin: float  # chosen logit - the best other logit in the support (inf: the only choice)
    alternatives: list[dict[str, Any]]  # [{task, node, logit, probability, chosen}], best first


@dataclass
class Recorded:
    """A decision kept whole for attribution: its observation, the action and the decode's support."""

    obs: Observation
    action: int
    support: npt.NDArray[np.bool_]


@dataclass
class PolicyReplay:
    """The recorded picks of one replay, the decisions kept whole, the replay's assignments."""

    decode: str
    picks: list[Pick] = field(default_factory=list)
    by_task: dict[int, Pick] = field(default_factory=dict)
    recorded: dict[int, Recorded] = field(default_factory=dict)
    node_of: dict[int, int] = field(default_factory=dict)

    def reproduced(self, planned: dict[int, int]) -> bool:
        """Whether the replay put every task where the stored plan did."""
        return all(self.node_of.get(t) == nd for t, nd in planned.items())


def support_mask(decode: str, obs: Any) -> npt.NDArray[np.bool_]:
    """The actions (unpadded layout: k * m pairs, then wait) the decode `decode` chooses among."""
    mask = obs.action_mask()
    if decode not in ("rank_node", "rank_top2"):
        return mask
    k, m = len(obs.candidates), int(obs.n_nodes)
    out = np.zeros_like(mask)
    rows = np.flatnonzero(obs.legal.any(axis=1))
    if decode == "rank_node" or not len(rows):
        out[-1] = mask[-1]
    if len(rows):
        row = int(rows[0])
        if decode == "rank_node":
            out[row * m : (row + 1) * m] = obs.legal[row]
        else:
            out[row * m + top_finish_nodes(obs, row)] = True
    assert len(out) == k * m + 1
    return out


def _pick_record(obs: Any, logits: npt.NDArray[np.float32], a: int, support: npt.NDArray[np.bool_]) -> Pick:
    m = int(obs.n_nodes)
    idx = np.flatnonzero(support)
    z = logits[idx].astype(np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    order = np.argsort(-z, kind="stable")
    chosen_at = int(np.flatnonzero(idx == a)[0])
    others = np.delete(z, chosen_at)
    margin = float(z[chosen_at] - others.max()) if len(others) else float("inf")

    def describe(j: int) -> dict[str, Any]:
        act = int(idx[j])
        wait = act == len(support) - 1
        return {
            "task": None if wait else int(obs.candidates[act // m]),
            "node": None if wait else act % m,
            "logit": float(z[j]),
            "probability": float(p[j]),
            "chosen": act == a,
        }

    top = [int(j) for j in order[:TOP_ALTERNATIVES]]
    if chosen_at not in top:
        top = top[: TOP_ALTERNATIVES - 1] + [chosen_at]
    wait = a == len(support) - 1
    return Pick(
        task=None if wait else int(obs.candidates[a // m]),
        node=None if wait else a % m,
        probability=float(p[chosen_at]),
        margin=margin,
        alternatives=[describe(j) for j in top],
    )


class _Recording(DRLScheduler):
    """The drl scheduler, greedy on its inference path, noting each pick; the decisions that place a task of
    `keep` are also built whole (`FeatureBuilder.build` right after `decision` on the same state: same numbers,
    no change to the builder's history)."""

    def __init__(self, policy: SchedulingPolicy, action: str | None, keep: set[int]) -> None:
        super().__init__(policy=policy, action=action)
        self.keep = keep
        self.replay = PolicyReplay(decode=self.decode)
        self._state: DecisionPoint | None = None

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.replay.decode = self.decode
        decision = self.builder.decision

        def noting(dp: DecisionPoint) -> Any:
            self._state = dp
            return decision(dp)

        self.builder.decision = noting  # type: ignore[method-assign]

    def _pick(self, obs: Any) -> int:
        assert self.inference is not None
        logits = self.inference.logits(obs)
        a = int(np.argmax(logits)) if self.decode == "pair" else restrict_action(self.decode, logits, obs)
        support = support_mask(self.decode, obs)
        pick = _pick_record(obs, logits, a, support)
        self.replay.picks.append(pick)
        if pick.task is not None and pick.node is not None:
            self.replay.by_task[pick.task] = pick
            self.replay.node_of[pick.task] = pick.node
            if pick.task in self.keep and self._state is not None:
                self.replay.recorded[pick.task] = Recorded(self.builder.build(self._state), a, support)
        return a


def replay(
    cp: CompiledProblem, policy: SchedulingPolicy, keep: set[int] | None = None, action: str | None = None
) -> PolicyReplay:
    """Plan `cp` again with `policy` (greedy), noting every pick; decisions placing a task of `keep` kept whole."""
    sched = _Recording(policy, action, keep or set())
    result = simulate(cp, sched, validate=True)
    if not result.valid:
        raise RuntimeError("the replay's plan is invalid: " + "; ".join(result.violations[:3]))
    # the picks of an instant are made on forks; the live trace is what happened (a pick is always taken)
    done = {a.task: a.node for a in result.trace.attempts if a.outcome == "done"}
    sched.replay.node_of = {t: done.get(t, nd) for t, nd in sched.replay.node_of.items()}
    return sched.replay


# ---- attributions ------------------------------------------------------------------------------------


def _inputs(obs: Observation) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    return (
        torch.from_numpy(obs.task_x).unsqueeze(0),
        torch.from_numpy(obs.node_x).unsqueeze(0),
        torch.from_numpy(obs.pair_x).unsqueeze(0),
        torch.from_numpy(obs.global_x).unsqueeze(0),
    )


def choice_log_prob(policy: SchedulingPolicy, obs: Observation, action: int, support: npt.NDArray[np.bool_]) -> Any:
    """F(task_x, node_x, pair_x, global_x) -> [S]: the attributed output on a batch of S inputs shaped like `obs`'s
    (the DAG, candidates, legality and the decode's support are those of `obs`)."""
    n, m, k = obs.n_tasks, obs.n_nodes, len(obs.candidates)
    edges = torch.from_numpy(obs.edge_index)
    visible = torch.ones(n, dtype=torch.bool) if obs.visible is None else torch.from_numpy(obs.visible)
    history = torch.from_numpy(obs.node_history) if policy.config.history_len > 0 else None
    cands = torch.from_numpy(obs.candidates)
    mask = torch.from_numpy(obs.action_mask())
    keep = torch.from_numpy(support)

    def f(task_x: Tensor, node_x: Tensor, pair_x: Tensor, global_x: Tensor) -> Tensor:
        s = task_x.shape[0]
        flat = torch.cat([edges + i * n for i in range(s)], dim=1)
        task_h = policy._embed_tasks(task_x.reshape(s * n, -1), flat).reshape(s, n, -1)
        logits, _ = policy._heads(
            task_h,
            visible.expand(s, n),
            node_x,
            torch.ones(s, m, dtype=torch.bool),
            None if history is None else history.expand(s, m, -1),
            cands.expand(s, k),
            torch.ones(s, k, dtype=torch.bool),
            pair_x,
            global_x,
            mask.expand(s, -1),
        )
        z = logits.masked_fill(~keep, float("-inf"))
        return torch.log_softmax(z, dim=1)[:, action]

    return f


def attribute(
    policy: SchedulingPolicy,
    rec: Recorded,
    task_ids: list[str],
    node_ids: list[str],
    steps: int = IG_STEPS,
) -> dict[str, Any]:
    """Integrated Gradients of the recorded decision, aggregated per feature, per DAG task and per node."""
    from captum.attr import IntegratedGradients

    obs = rec.obs
    f = choice_log_prob(policy, obs, rec.action, rec.support)
    inputs = _inputs(obs)
    baselines = tuple(torch.zeros_like(x) for x in inputs)
    with torch.no_grad():
        out, base = float(f(*inputs)[0]), float(f(*baselines)[0])
    ig = IntegratedGradients(f)
    attrs, delta = ig.attribute(
        inputs,
        baselines=baselines,
        n_steps=steps,
        method="gausslegendre",
        internal_batch_size=max(1, min(steps, 4096 // max(obs.n_tasks, 1))),
        return_convergence_delta=True,
    )
    a_task, a_node, a_pair, a_global = (x[0].detach().double().numpy() for x in attrs)
    sums = (
        ("task", TASK_FEATURES, a_task.reshape(-1, len(TASK_FEATURES)).sum(axis=0)),
        ("node", NODE_FEATURES, a_node.reshape(-1, len(NODE_FEATURES)).sum(axis=0)),
        ("pair", PAIR_FEATURES, a_pair.reshape(-1, len(PAIR_FEATURES)).sum(axis=0)),
        ("global", GLOBAL_FEATURES, a_global),
    )
    by_feature = [
        {"group": group, "feature": name, "value": float(v)}
        for group, names, values in sums
        for name, v in zip(names, values, strict=True)
    ]
    per_task = a_task.sum(axis=1)
    per_task[obs.candidates] += a_pair.sum(axis=(1, 2))  # a candidate's pair features are its own
    per_node = a_node.sum(axis=1) + a_pair.sum(axis=(0, 2))
    total = a_task.sum() + a_node.sum() + a_pair.sum() + a_global.sum()
    return {
        "method": "integrated_gradients",
        "baseline": BASELINE,
        "target": TARGET,
        "steps": steps,
        "output": out,
        "baseline_output": base,
        "total": float(total),
        "delta": float(delta[0]),
        "by_feature": sorted(by_feature, key=lambda r: -abs(r["value"])),
        "by_task": [{"task": task_ids[i], "value": float(v)} for i, v in enumerate(per_task)],
        "by_node": [{"node": node_ids[j], "value": float(v)} for j, v in enumerate(per_node)],
    }


def attention(policy: SchedulingPolicy, obs: Observation, task: int, task_ids: list[str]) -> list[dict[str, Any]]:
    """The GAT layers' attention into `task` (mean over heads): per layer and direction, which neighbours
    (parents along the edges, children against them, itself through its self-loop) it listened to.
    Empty for a GCN policy. The embeddings computed here equal `SchedulingPolicy._embed_tasks`'s."""
    from torch_geometric.nn import GATConv
    from torch_geometric.utils import add_self_loops

    if policy.config.conv != "gat":
        return []
    out: list[dict[str, Any]] = []
    with torch.no_grad():
        x = torch.from_numpy(obs.task_x)
        h = torch.relu(policy.task_in(x))
        ei, _ = add_self_loops(torch.from_numpy(obs.edge_index), num_nodes=x.shape[0])
        rev = ei.flip(0)
        for layer, (along, against, mix) in enumerate(zip(policy.along, policy.against, policy.mix, strict=True)):
            parts = []
            for direction, conv, index in (("along", along, ei), ("against", against, rev)):
                assert isinstance(conv, GATConv)
                y, (used, alpha) = conv(h, index, return_attention_weights=True)
                parts.append(y)
                into = (used[1] == task).nonzero().flatten()
                weights = alpha[into].mean(dim=1)
                for e, w in sorted(zip(into.tolist(), weights.tolist(), strict=True), key=lambda r: -r[1]):
                    src = int(used[0, e])
                    out.append({"layer": layer, "direction": direction, "source": task_ids[src], "weight": float(w)})
            h = h + torch.relu(mix(torch.cat(parts, dim=-1)))
    return out


def decode_of(policy: SchedulingPolicy, cp: CompiledProblem) -> str:
    """The action space the drl scheduler decodes with this policy on this problem."""
    return resolve_action(str(policy.config.action_space), cp.n_workflows == 1)

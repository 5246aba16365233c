"""Imitation and expert iteration: DAgger on a teacher (`TEACHERS`), in `dagsched/Scheduling-v0`.

Teachers: HEFT from here (`HeftTeacher`: HEFT re-plans every unstarted task from the live state of the
environment's simulator, `StaticPlanner._replan`, and of the pairs it starts now the one with the highest
upward rank is the label; where it starts nothing it waits if the environment allows, else the legal pair
with the earliest estimated finish); rollout over base heuristics, with or without the learner itself as one
more base (`RolloutTeacher`, expert iteration); and the node rollout of the `rank_node` action space
(`NodeRolloutTeacher`). Episodes are played by a mixture: the teacher's action with probability `beta`
(decaying over rounds), else the learner's greedy action, so the learner is trained on the states it visits
itself (Ross et al., AISTATS 2011). The value head regresses the episode's return-to-go (rewards relative to
the per-instance HEFT baseline), so PPO starts from a critic.

Samples are stored unpadded (`Observation`) and padded per minibatch by `collate`, so a buffer of
tens of thousands of states of different sizes stays small.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from dagsched.policy.features import PAIR_FEATURES, Observation
from dagsched.policy.gnn import SchedulingPolicy
from dagsched.rl.env import SchedulingEnv
from dagsched.schedulers.heft import HEFT
from dagsched.schedulers.rollout import BASES, complete_from_here
from dagsched.sim.decision import DecisionPoint, Scheduler


@dataclass
class Sample:
    """One visited state, the teacher's action (unpadded layout) and the return-to-go from it."""

    obs: Observation
    label: int
    ret: float = 0.0


# ---- the teacher ---------------------------------------------------------------------------------


class HeftTeacher:
    """HEFT re-planned from the live state at every decision (make one per episode)."""

    def __init__(self, env: SchedulingEnv) -> None:
        assert env.sim is not None and env.cp is not None
        self.heft = HEFT()
        self.heft.reset(env.cp, env.sim.decision_point(), 0)
        self.rank_pos = np.empty(env.cp.n_tasks, dtype=np.int64)
        self.rank_pos[np.asarray(self.heft.order, dtype=np.int64)] = np.arange(env.cp.n_tasks)

    def action(self, env: SchedulingEnv) -> int:
        """The teacher's action in the unpadded layout of `env.observation`."""
        sim, obs = env.sim, env.observation
        assert sim is not None and obs is not None
        return teacher_label(self.heft, self.rank_pos, sim.decision_point(), obs)


class RolloutTeacher:
    """Rollout from here (`dagsched.schedulers.rollout`): every base heuristic runs to the end on a fork and
    the best one's move now is the label. Better than HEFT (benchmarks/experiments/rollout_teacher.py: 3.6 % shorter
    makespans on average, 7 % at CCR 10, never longer), at the cost of one whole run per base per step.

    With `learner` (expert iteration) the current policy is one more base: the label is then never worse
    than what the learner would do from here, and better wherever a heuristic's completion beats it, so each
    round's policy is trained towards an improvement of itself (rollout as policy improvement, Bertsekas;
    expert iteration, Anthony et al. 2017). Ties go to the heuristics, listed first."""

    def __init__(
        self, env: SchedulingEnv, learner: SchedulingPolicy | None = None, bases: Sequence[str] = BASES
    ) -> None:
        self.bases: list[str | Scheduler] = list(bases)
        if learner is not None:
            from dagsched.schedulers.drl import DRLScheduler

            self.bases.append(DRLScheduler(policy=learner, max_candidates=env.config.max_candidates))
        self.wins: dict[str, int] = {}
        """how often each base gave the label (the learner is `drl`)"""

    def action(self, env: SchedulingEnv) -> int:
        sim, obs = env.sim, env.observation
        assert sim is not None and obs is not None
        dp = sim.decision_point()
        runs = [(*complete_from_here(dp, base), i) for i, base in enumerate(self.bases)]
        runs.sort(key=lambda r: (r[0], r[3]))
        for _, first, _, i in runs:  # the best base whose move the action space can express
            if expressible(first.assignments, obs):
                self._won(i)
                return pair_label(first.assignments, obs)
        self._won(runs[0][3])
        return pair_label(runs[0][1].assignments, obs)

    def _won(self, i: int) -> None:
        base = self.bases[i]
        name = base if isinstance(base, str) else base.name
        self.wins[name] = self.wins.get(name, 0) + 1


class NodeRolloutTeacher:
    """Labels in the `rank_node` action space: the task is the window's first startable candidate (highest upward
    rank), and the label is its node, or wait. Each of its `top_nodes` legal nodes of earliest estimated finish,
    and PEFT's node (least finish + optimistic cost to the exit), is tried on a fork and completed from there by
    each base heuristic; the node of the shortest completion is the label. Wait is the label when a base's own
    completion from here is shorter still and starts none of the offered tasks now (a wait defers the whole
    window). One-step look-ahead over the nodes with heuristic completions: the rollout algorithm in this
    action space, never worse than its bases' choice among the nodes it tries."""

    def __init__(self, env: SchedulingEnv, bases: Sequence[str] = ("heft", "peft"), top_nodes: int = 6) -> None:
        self.bases = tuple(bases)
        self.top_nodes = top_nodes
        self.wins: dict[str, int] = {}
        """`node` when a forced node won, `wait` when a base's own completion did"""

    def nodes_to_try(self, obs: Observation, row: int) -> list[int]:
        """The legal nodes of `row` tried: the `top_nodes` of earliest estimated finish, then PEFT's node."""
        legal = np.flatnonzero(obs.legal[row])
        finish = obs.est_finish_s[row, legal]
        order = [int(legal[i]) for i in np.argsort(finish, kind="stable")[: self.top_nodes]]
        o_gap = obs.pair_x[row, legal, PAIR_FEATURES.index("o_eft_gap")]
        peft_node = int(legal[int(np.argmin(o_gap))])
        return order if peft_node in order else [*order, peft_node]

    def action(self, env: SchedulingEnv) -> int:
        sim, obs = env.sim, env.observation
        assert sim is not None and obs is not None
        dp = sim.decision_point()
        k, m = len(obs.candidates), obs.n_nodes
        rows = np.flatnonzero(obs.legal.any(axis=1))
        if len(rows) == 0:
            return k * m  # nothing can start: waiting is the only legal action
        row = int(rows[0])
        task = int(obs.candidates[row])
        best, label = math.inf, -1
        for node in self.nodes_to_try(obs, row):
            fork = dp.fork()
            fork.start(task, node)
            here = fork.decision_point()
            span = min(complete_from_here(here, base)[0] for base in self.bases)
            if span < best - 1e-9:
                best, label = span, row * m + node
        kind = "node"
        if obs.wait_legal:
            offered = {int(t) for t in obs.candidates}
            for base in self.bases:
                span, first, _ = complete_from_here(dp, base)
                if span < best - 1e-9 and not offered & {int(t) for t, _ in first.assignments}:
                    best, label, kind = span, k * m, "wait"
        self.wins[kind] = self.wins.get(kind, 0) + 1
        return label


def make_teacher(
    kind: str, env: SchedulingEnv, learner: SchedulingPolicy | None = None
) -> HeftTeacher | RolloutTeacher | NodeRolloutTeacher:
    """The teacher `kind` (`TEACHERS`) for one episode; `learner` is the policy expert iteration rolls out."""
    if kind == "heft":
        return HeftTeacher(env)
    if kind == "rollout":
        return RolloutTeacher(env)
    if kind == "expert":
        return RolloutTeacher(env, learner)
    if kind == "node_rollout":
        return NodeRolloutTeacher(env)
    raise ValueError(f"teacher must be one of {TEACHERS}, got {kind!r}")


TEACHERS = ("heft", "rollout", "expert", "node_rollout")
"""Teachers by name (`TrainConfig.teacher`): HEFT from here; rollout over the base heuristics; expert
iteration, rollout over the base heuristics and the learner itself (the policy of the round's start); and the
node rollout of the `rank_node` action space (`NodeRolloutTeacher`)."""

TEACHER_ACTION_SPACE = {"heft": "pair", "rollout": "pair", "expert": "pair", "node_rollout": "rank_node"}
"""The action space each teacher's labels are in (`PolicyConfig.action_space` of the policy it trains)."""


def expressible(assignments: Sequence[tuple[int, int]], obs: Observation) -> bool:
    """Whether a teacher's starts now are an action of this observation: some start is an offered legal pair,
    or it starts nothing and waiting is legal."""
    if not assignments:
        return bool(obs.wait_legal)
    slot = {int(t): i for i, t in enumerate(obs.candidates)}
    return any(int(t) in slot and bool(obs.legal[slot[int(t)], nd]) for t, nd in assignments)


def pair_label(assignments: Sequence[tuple[int, int]], obs: Observation, rank_pos: np.ndarray | None = None) -> int:
    """The label for a teacher's starts now: the first of them (or the one earliest in `rank_pos`) that the
    observation offers and allows; else wait where legal; else the legal pair with the earliest finish."""
    m, k = obs.n_nodes, len(obs.candidates)
    slot = {int(t): i for i, t in enumerate(obs.candidates)}
    best: tuple[int, int] | None = None
    for t, nd in assignments:
        i = slot.get(int(t))
        if i is None or not obs.legal[i, nd]:
            continue
        if best is None or (rank_pos is not None and rank_pos[t] < rank_pos[obs.candidates[best[0]]]):
            best = (i, int(nd))
        if rank_pos is None:
            break
    if best is not None:
        return best[0] * m + best[1]
    if obs.wait_legal:
        return k * m
    eft = np.where(obs.legal, obs.est_finish_s, np.inf)
    return int(np.argmin(eft.reshape(-1)))


def teacher_label(heft: HEFT, rank_pos: np.ndarray, dp: DecisionPoint, obs: Observation) -> int:
    heft.watch.clear()
    heft._replan(dp)
    return pair_label(heft.decide(dp).assignments, obs, rank_pos)


# ---- batching unpadded observations --------------------------------------------------------------


def collate(observations: Sequence[Observation]) -> tuple[dict[str, Tensor], list[tuple[int, int]]]:
    """Pad a list of observations to the batch's largest sizes: the dict `SchedulingPolicy.forward` takes.

    Also returns (K, M) of the padded layout, shared by every row, for `to_padded`.
    """
    B = len(observations)
    T = max(o.n_tasks for o in observations)
    M = max(o.n_nodes for o in observations)
    K = max(max(len(o.candidates) for o in observations), 1)
    E = max(max(o.edge_index.shape[1] for o in observations), 1)
    H = observations[0].node_history.shape[1]
    ft, fn, fp, fg = (
        observations[0].task_x.shape[1],
        observations[0].node_x.shape[1],
        observations[0].pair_x.shape[2],
        len(observations[0].global_x),
    )
    task_x = np.zeros((B, T, ft), np.float32)
    task_mask = np.zeros((B, T), bool)
    edges = np.zeros((B, 2, E), np.int64)
    edge_mask = np.zeros((B, E), bool)
    node_x = np.zeros((B, M, fn), np.float32)
    node_mask = np.zeros((B, M), bool)
    hist = np.zeros((B, M, H), np.float32)
    cands = np.zeros((B, K), np.int64)
    cand_mask = np.zeros((B, K), bool)
    pair_x = np.zeros((B, K, M, fp), np.float32)
    glob = np.zeros((B, fg), np.float32)
    amask = np.zeros((B, K * M + 1), bool)
    for b, o in enumerate(observations):
        n, m, k, e = o.n_tasks, o.n_nodes, len(o.candidates), o.edge_index.shape[1]
        task_x[b, :n] = o.task_x
        task_mask[b, :n] = True if o.visible is None else o.visible
        edges[b, :, :e] = o.edge_index
        edge_mask[b, :e] = True
        node_x[b, :m] = o.node_x
        node_mask[b, :m] = True
        hist[b, :m] = o.node_history
        cands[b, :k] = o.candidates
        cand_mask[b, :k] = True
        pair_x[b, :k, :m] = o.pair_x
        glob[b] = o.global_x
        amask[b, :-1].reshape(K, M)[:k, :m] = o.legal
        amask[b, -1] = o.wait_legal
    batch = {
        "task_features": task_x,
        "task_mask": task_mask,
        "edge_index": edges,
        "edge_mask": edge_mask,
        "node_features": node_x,
        "node_mask": node_mask,
        "candidates": cands,
        "candidate_mask": cand_mask,
        "pair_features": pair_x,
        "global_features": glob,
        "action_mask": amask,
    }
    if H > 0:
        batch["node_history"] = hist
    return {key: torch.from_numpy(v) for key, v in batch.items()}, [(K, M)] * B


def to_padded(action: int, obs: Observation, K: int, M: int) -> int:
    """An unpadded action of `obs` in a padded layout with K candidate slots and M node slots."""
    m, k = obs.n_nodes, len(obs.candidates)
    if action == k * m:
        return K * M
    i, nd = divmod(action, m)
    return i * M + nd


# ---- losses (pure functions) ---------------------------------------------------------------------


def bc_loss(logits: Tensor, labels: Tensor) -> Tensor:
    """Cross-entropy of the masked logits against the teacher's actions (illegal logits are -1e9: prob 0)."""
    return F.cross_entropy(logits, labels)


def returns_to_go(rewards: Sequence[float], gamma: float = 1.0) -> np.ndarray:
    """Discounted sum of the rewards from each step to the episode's end."""
    out = np.zeros(len(rewards))
    acc = 0.0
    for i in range(len(rewards) - 1, -1, -1):
        acc = rewards[i] + gamma * acc
        out[i] = acc
    return out


# ---- playing episodes ----------------------------------------------------------------------------


def learner_action(policy: SchedulingPolicy, obs: Observation) -> int:
    """The policy's greedy action in the unpadded layout, in the action space it is trained for."""
    with torch.inference_mode():
        logits, _ = policy.forward_single(obs)
    if policy.config.action_space != "pair":
        from dagsched.schedulers.drl import restrict_action

        return restrict_action(policy.config.action_space, logits.numpy(), obs)
    return int(torch.argmax(logits))


def top_row_mask(observations: Sequence[Observation], action_mask: Tensor, K: int, M: int) -> Tensor:
    """The padded action mask of the `rank_node` action space: only the first startable candidate's legal nodes,
    and wait where legal (the loss is a softmax over what that policy chooses among)."""
    out = torch.zeros_like(action_mask)
    out[:, -1] = action_mask[:, -1]
    for b, o in enumerate(observations):
        rows = np.flatnonzero(o.legal.any(axis=1))
        if len(rows):
            r = int(rows[0])
            out[b, r * M : (r + 1) * M] = action_mask[b, r * M : (r + 1) * M]
    return out


def play_episode(
    env: SchedulingEnv,
    policy: SchedulingPolicy | None,
    beta: float,
    rng: np.random.Generator,
    seed: int,
    options: dict[str, Any] | None = None,
    label: bool = True,
    teacher_kind: str = "heft",
    expert: SchedulingPolicy | None = None,
) -> tuple[list[Sample], dict[str, Any]]:
    """One episode, acting as the teacher (`make_teacher(teacher_kind, env, expert)`) with probability `beta` per
    step (else the learner).

    Returns the visited states with the teacher's labels (when `label`) and the final info (with
    `teacher_wins`, how often each base gave the label, for a rollout teacher).
    """
    _, info = env.reset(seed=seed, options=options)
    teacher = make_teacher(teacher_kind, env, expert) if label or beta > 0 else None
    samples: list[Sample] = []
    rewards: list[float] = []
    K, M = env.config.max_candidates, env.config.max_nodes
    while True:
        obs = env.observation
        assert obs is not None
        t_act = teacher.action(env) if teacher is not None else -1
        act = t_act if policy is None or rng.random() < beta else learner_action(policy, obs)
        if label:
            samples.append(Sample(obs, t_act))
        _, reward, terminated, truncated, info = env.step(np.int64(to_padded(act, obs, K, M)))
        rewards.append(reward)
        if terminated or truncated:
            break
    if label:
        for s, r in zip(samples, returns_to_go(rewards), strict=True):
            s.ret = float(r)
    info["return"] = float(sum(rewards))
    if isinstance(teacher, RolloutTeacher | NodeRolloutTeacher):
        info["teacher_wins"] = dict(teacher.wins)
    return samples, info


def fit(
    policy: SchedulingPolicy,
    optimizer: torch.optim.Optimizer,
    buffer: Sequence[Sample],
    epochs: int,
    batch_size: int,
    rng: np.random.Generator,
    value_coef: float = 0.5,
) -> dict[str, float]:
    """Minibatch epochs over the buffer: behaviour cloning plus value regression; returns mean losses and accuracy."""
    policy.train()
    stats = {"bc_loss": 0.0, "value_loss": 0.0, "accuracy": 0.0}
    n_batches = 0
    for _ in range(epochs):
        order = rng.permutation(len(buffer))
        for lo in range(0, len(order), batch_size):
            mb = [buffer[i] for i in order[lo : lo + batch_size]]
            batch, layout = collate([s.obs for s in mb])
            K, M = layout[0]
            if policy.config.action_space == "rank_node":
                batch["action_mask"] = top_row_mask([s.obs for s in mb], batch["action_mask"], K, M)
            labels = torch.tensor([to_padded(s.label, s.obs, K, M) for s in mb])
            targets = torch.tensor([s.ret for s in mb], dtype=torch.float32)
            logits, values = policy(batch)
            pg = bc_loss(logits, labels)
            v_loss = F.mse_loss(values, targets)
            loss = pg + value_coef * v_loss
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
            optimizer.step()
            stats["bc_loss"] += float(pg.detach())
            stats["value_loss"] += float(v_loss.detach())
            stats["accuracy"] += float((logits.argmax(1) == labels).float().mean())
            n_batches += 1
    policy.eval()
    return {k: v / max(n_batches, 1) for k, v in stats.items()}


def dagger_round(
    policy: SchedulingPolicy,
    optimizer: torch.optim.Optimizer,
    episodes: Iterable[tuple[SchedulingEnv, int, dict[str, Any] | None]],
    beta: float,
    rng: np.random.Generator,
    buffer: list[Sample],
    epochs: int,
    batch_size: int,
    buffer_size: int | None = None,
    learner: bool = True,
    teacher_kind: str = "heft",
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """One DAgger round: play each (env, seed, reset options) episode, mixing the teacher (probability `beta`)
    and the learner (`learner`: else the teacher alone), add the labelled states to `buffer` (the oldest
    dropped past `buffer_size`), then fit. Returns the fit's mean losses and each episode's final info.
    With the `expert` teacher the learner rolled out is a frozen copy of `policy` as the round starts.

    `episodes` may be a generator: each is drawn just before it is played, so draws from `rng` in the
    caller and in the episodes interleave as they come."""
    infos = []
    expert = copy.deepcopy(policy).eval() if teacher_kind == "expert" and learner else None
    for env, seed, options in episodes:
        samples, info = play_episode(
            env, policy if learner else None, beta, rng, seed, options, True, teacher_kind, expert
        )
        buffer.extend(samples)
        infos.append(info)
    if buffer_size is not None:
        del buffer[: max(len(buffer) - buffer_size, 0)]
    return fit(policy, optimizer, buffer, epochs, batch_size, rng), infos


def greedy_makespan(
    env: SchedulingEnv, policy: SchedulingPolicy | None, seed: int, options: dict[str, Any] | None = None
) -> float:
    """Makespan of one greedy episode of `policy` (None: uniformly random legal actions), nan if truncated."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed, options=options)
    K, M = env.config.max_candidates, env.config.max_nodes
    while True:
        o = env.observation
        assert o is not None
        if policy is None:
            a = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        else:
            a = to_padded(learner_action(policy, o), o, K, M)
        obs, _, terminated, truncated, info = env.step(np.int64(a))
        if terminated or truncated:
            return float(info.get("makespan", math.nan))

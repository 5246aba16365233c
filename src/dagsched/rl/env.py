"""The Gymnasium environment: one scheduling decision per step, over the one simulator.

A thin adapter: it drives `dagsched.sim.engine.Simulator` through the simulator's own decision
loop (`next_decision(legal_only=True)`, `start`, `defer`) and never simulates anything itself.
Legality, waits and the offered window are the decision point's (`dagsched.sim.decision`);
features come from `dagsched.policy.features`, rewards from `dagsched.rl.reward`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import numpy.typing as npt
from gymnasium import spaces
from pydantic import BaseModel, ConfigDict, Field, model_validator

from dagsched.generate import (
    FAMILIES,
    NODE_TYPES,
    PRESETS,
    cluster_preset,
    generate_workflow,
    poisson_arrivals,
    random_cluster,
)
from dagsched.model.compiled import CompiledProblem, compile_problem
from dagsched.model.entities import Problem
from dagsched.policy.features import (
    FEATURE_CLIP,
    GLOBAL_FEATURES,
    NODE_FEATURES,
    PAIR_FEATURES,
    TASK_FEATURES,
    FeatureBuilder,
    Observation,
)
from dagsched.rl import ENV_ID  # noqa: F401  (registered by dagsched.rl)
from dagsched.rl.reward import TERMS, Baseline, BaselineKind, RewardTracker, RewardWeights, compute_baseline
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import READY, DecisionPoint
from dagsched.sim.engine import SchedulingError, Simulator
from dagsched.sim.metrics import compute_metrics


class EnvConfig(BaseModel):
    """Everything an episode is drawn from, the padded sizes and the reward."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    families: tuple[str, ...] = Field(FAMILIES, min_length=1, description="topology families workflows are drawn from")
    n_tasks: tuple[int, int] = Field((10, 40), description="inclusive range of tasks per workflow")
    n_tasks_choices: tuple[int, ...] = Field((), description="draw the size from these instead, when given")
    ccr: float = Field(0.5, ge=0, description="communication-to-computation ratio of generated workflows")
    ccr_range: tuple[float, float] | None = Field(
        None, description="draw each workflow's CCR log-uniformly from this inclusive range instead of `ccr`"
    )
    cluster: str | None = Field("small-3", description="cluster preset name; None draws a random cluster")
    random_nodes: tuple[int, int] = Field((2, 8), description="inclusive node-count range of a random cluster")
    heterogeneity: float = Field(0.5, ge=0, le=1, description="heterogeneity of a random cluster")
    n_workflows: int = Field(1, ge=1, description="1: one workflow; k > 1: a Poisson stream of k workflows")
    arrival_rate_per_h: float = Field(6.0, gt=0, description="arrival rate of the stream, workflows per hour")
    problem: Problem | None = Field(None, description="a fixed problem for every episode instead of drawn ones")
    sim: SimConfig = Field(default_factory=SimConfig, description="simulator settings: classic/cloud, noise, failures")
    max_tasks: int = Field(128, ge=2, description="task rows of the padded observation")
    max_nodes: int = Field(16, ge=1, description="node rows of the padded observation")
    max_edges: int | None = Field(None, ge=1, description="edge columns of the padded observation; None: 8 x max_tasks")
    max_candidates: int = Field(16, ge=1, description="ready tasks offered per decision (K)")
    defer_windows: bool = Field(
        True,
        description="a wait defers only the offered tasks: the ready tasks behind them are offered next, at the "
        "same instant, until every ready task was offered",
    )
    action_space: Literal["pair", "rank_node"] = Field(
        "pair",
        description="pair: any legal (candidate, node) pair or wait; rank_node: only the first candidate that can "
        "start (the window's order) on a node of its choice, or wait",
    )
    history_len: int = Field(0, ge=0, description="utilisation snapshots per node in the observation; 0: none")
    reward: RewardWeights = Field(default_factory=RewardWeights, description="weights of the reward terms")
    baseline: BaselineKind = Field("heft", description="what the reward terms are normalised by")
    max_steps: int | None = Field(None, ge=1, description="step cap (truncation); None: 8 x tasks + 100")

    @model_validator(mode="after")
    def _check(self) -> EnvConfig:
        for f in self.families:
            if f not in FAMILIES:
                raise ValueError(f"families: unknown family '{f}'; choose from {', '.join(FAMILIES)}")
        lo, hi = self.n_tasks
        if not 2 <= lo <= hi:
            raise ValueError(f"n_tasks: needs 2 <= low <= high, got {self.n_tasks}")
        if any(c < 2 for c in self.n_tasks_choices):
            raise ValueError(f"n_tasks_choices: every size must be >= 2, got {self.n_tasks_choices}")
        biggest = max(self.n_tasks_choices) if self.n_tasks_choices else hi
        if self.problem is None and biggest * self.n_workflows > self.max_tasks:
            raise ValueError(
                f"max_tasks={self.max_tasks} is smaller than the largest problem drawn "
                f"({self.n_workflows} workflow(s) of up to {biggest} tasks)"
            )
        if self.cluster is not None and self.problem is None:
            if self.cluster not in PRESETS:
                raise ValueError(f"cluster: unknown preset '{self.cluster}'; choose from {', '.join(PRESETS)}")
            if PRESETS[self.cluster].n_nodes > self.max_nodes:
                raise ValueError(
                    f"max_nodes={self.max_nodes} is smaller than preset '{self.cluster}' "
                    f"({PRESETS[self.cluster].n_nodes} nodes)"
                )
            has_gpu = any(NODE_TYPES[kind].gpu > 0 for kind, _ in PRESETS[self.cluster].composition)
            if "ml_pipeline" in self.families and not has_gpu:
                raise ValueError(f"families: 'ml_pipeline' needs GPUs, which preset '{self.cluster}' lacks")
        if self.cluster is None and not 1 <= self.random_nodes[0] <= self.random_nodes[1] <= self.max_nodes:
            raise ValueError(f"random_nodes: needs 1 <= low <= high <= max_nodes, got {self.random_nodes}")
        return self

    @property
    def edge_slots(self) -> int:
        return self.max_edges if self.max_edges is not None else 8 * self.max_tasks


class IllegalActionError(ValueError):
    """The agent chose an action its mask forbids."""


class MaskedDiscrete(spaces.Discrete):
    """`Discrete(n)` whose `sample()` without a mask draws among the actions legal now.

    The environment keeps `legal` current after each reset and step, so random agents
    (and Gymnasium's checker) act legally; an explicit `mask` or `probability` is honoured as in
    `Discrete`.
    """

    def __init__(self, n: int, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(n, seed=seed)
        self.legal = np.zeros(n, dtype=np.int8)

    def sample(self, mask: Any = None, probability: Any = None) -> np.int64:
        if mask is None and probability is None and self.legal.any():
            mask = self.legal
        return super().sample(mask=mask, probability=probability)


class SchedulingEnv(gym.Env[dict[str, np.ndarray], np.int64]):
    """Schedule a DAG workflow (or a stream of them) onto a cluster, one (task, node) choice per step.

    ## Description

    Each step is one scheduling decision at a decision point of dagsched's discrete-event
    simulator: start one ready task on one node now, or wait. Between decisions the simulator
    advances on its own (tasks finish, data moves, workflows arrive, nodes boot, fail and are
    repaired); it never decides anything. Episodes are drawn from `EnvConfig`: one workflow of
    a topology family or a Poisson stream of several, on a preset or random cluster, in classic
    (textbook HEFT) or cloud mode, with runtime noise and failures on or off.

    ## Action Space

    `Discrete(K * max_nodes + 1)`: action `k * max_nodes + n` starts candidate `k` (the task
    index in `observation["candidates"][k]`) on node `n`; the last action waits. Legal pairs are
    exactly those where `Simulator.can_start(task, node)` holds (ready, fits the node's free
    resources, node up and booted, inputs arrived). Waiting is legal only where time can advance
    (a task runs or a progress event is pending) and it can help: some candidate's estimated
    finish on a node that is busy or still receiving its data beats its best legal node. With
    `defer_windows` (default) a wait defers only the K offered tasks when more are ready: the
    next K ready tasks are offered at the same instant, and time advances once every ready task
    was offered or nothing offered can start (so a wide DAG's lower-ranked tasks still reach
    idle nodes). The mask is `observation["action_mask"]` and `info["action_mask"]`; an illegal action raises
    `IllegalActionError` (it is never remapped). `action_space.sample()` draws a legal action. With
    `action_space="rank_node"` the mask keeps only the first candidate that can start (candidates come in the
    window's order) and the wait: the policy chooses that task's node, or to wait.

    The candidates are at most K ready tasks: those that can start somewhere now first, then by
    decreasing upward rank, then topological position (candidate pruning).

    ## Observation Space

    A `Dict` of fixed shapes (T = max_tasks, M = max_nodes, E = max_edges, K = max_candidates,
    H = history_len); padding rows are zero and masked out. Every float lies in
    [-FEATURE_CLIP, FEATURE_CLIP] = [-10, 10] (see `dagsched.policy.features` for each column):

    | key | shape | dtype | meaning |
    | --- | --- | --- | --- |
    | task_features | (T, 21) | float32 | per task: runtime, requests, priority, ranks, state one-hot, ... |
    | task_mask | (T,) | int8 | 1 for visible tasks (of workflows submitted and unfinished), 0 for others and padding |
    | edge_index | (2, E) | int64 | DAG edges parent -> child, in [0, T) |
    | edge_mask | (E,) | int8 | 1 for real edges |
    | node_features | (M, 14) | float32 | free/total resources, speed, price, load, up, ... |
    | node_mask | (M,) | int8 | 1 for real nodes |
    | node_history | (M, H) | float32 | cpu utilisation at the last H decision instants (only when H > 0) |
    | candidates | (K,) | int64 | task index of each candidate slot, in [0, T) |
    | candidate_mask | (K,) | int8 | 1 for filled slots |
    | pair_features | (K, M, 13) | float32 | estimated start/finish, transfer share, can start now, OCT, ... |
    | global_features | (10,) | float32 | time, progress, remaining critical path and work, ... |
    | action_mask | (K * M + 1,) | int8 | legal actions; last = wait |

    ## Rewards

    `-Σ w_i × term_i` with terms for makespan, billed cost, SLA misses, fragmentation and load
    imbalance, each normalised by a per-instance baseline (HEFT's plan on predicted runtimes by
    default) and split into per-step pieces whose episode sum is the final objective
    (`dagsched.rl.reward`). Default weights 0.4 / 0.3 / 0.2 / 0.1 / 0.05.

    ## Starting State

    A problem drawn from `self.np_random` (family, size, cluster, seeds of the workflow, the
    stream and the simulator's hidden noise and failures), advanced to its first decision.
    The same seed gives the same episode.

    ## Episode End

    Terminated when every task is done; `info` then carries makespan, cost, sla_hit_rate, the
    baseline and the objective terms. Truncated after `max_steps` steps (default 8 x tasks + 100),
    or when the simulator can make no more progress (a task fits only nodes that are down for
    good; `info["stalled"]`).

    ## Arguments

    `SchedulingEnv(config=None, render_mode=None, **overrides)`: `config` is an `EnvConfig` or a
    mapping of its fields; keyword overrides replace fields, so
    `gymnasium.make("dagsched/Scheduling-v0", max_tasks=64, cluster="hetero-16")` works (import
    `dagsched.rl` first, or make `"dagsched.rl:dagsched/Scheduling-v0"`). `reset(options=...)`
    accepts `{"problem": Problem or CompiledProblem, "sim_seed": int}` for one episode.

    ## Version History

    - v0: first version (feature version 1).
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self, config: EnvConfig | Mapping[str, Any] | None = None, render_mode: str | None = None, **overrides: Any
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"render_mode {render_mode!r} is not supported; this environment does not render")
        if isinstance(config, EnvConfig):
            fields = {name: getattr(config, name) for name in EnvConfig.model_fields}
        else:
            fields = dict(config or {})
        self.config = EnvConfig.model_validate({**fields, **overrides})
        c = self.config
        T, M, E, K, H = c.max_tasks, c.max_nodes, c.edge_slots, c.max_candidates, c.history_len
        self.render_mode = render_mode

        def box(*shape: int) -> spaces.Box:
            return spaces.Box(-FEATURE_CLIP, FEATURE_CLIP, shape=shape, dtype=np.float32)

        obs_spaces: dict[str, spaces.Space[Any]] = {
            "task_features": box(T, len(TASK_FEATURES)),
            "task_mask": spaces.MultiBinary(T),
            "edge_index": spaces.Box(0, T - 1, shape=(2, E), dtype=np.int64),
            "edge_mask": spaces.MultiBinary(E),
            "node_features": box(M, len(NODE_FEATURES)),
            "node_mask": spaces.MultiBinary(M),
            "candidates": spaces.Box(0, T - 1, shape=(K,), dtype=np.int64),
            "candidate_mask": spaces.MultiBinary(K),
            "pair_features": box(K, M, len(PAIR_FEATURES)),
            "global_features": box(len(GLOBAL_FEATURES)),
            "action_mask": spaces.MultiBinary(K * M + 1),
        }
        if H > 0:
            obs_spaces["node_history"] = box(M, H)
        self.observation_space = spaces.Dict(obs_spaces)
        self.action_space: MaskedDiscrete = MaskedDiscrete(K * M + 1)
        self.wait_action = K * M

        self._fixed: tuple[CompiledProblem, Baseline] | None = None
        self._presets: dict[str, Any] = {}
        self.sim: Simulator | None = None
        self.cp: CompiledProblem | None = None
        self.baseline: Baseline | None = None
        self.tracker: RewardTracker | None = None
        self.observation: Observation | None = None  # the unpadded observation of the current state
        self._builder: FeatureBuilder | None = None
        self._dp: DecisionPoint | None = None  # the decision point observed now
        self._mask = np.zeros(K * M + 1, dtype=np.int8)
        self._steps = 0
        self._max_steps = 0
        self._stalled = False
        self._over = True

    # ---- drawing an episode ---------------------------------------------------------------

    def _draw_problem(self, rng: np.random.Generator) -> Problem:
        c = self.config
        if c.cluster is not None:
            if c.cluster not in self._presets:
                self._presets[c.cluster] = cluster_preset(c.cluster)
            cluster = self._presets[c.cluster]
        else:
            n_nodes = int(rng.integers(c.random_nodes[0], c.random_nodes[1] + 1))
            cluster = random_cluster(n_nodes, int(rng.integers(2**31)), heterogeneity=c.heterogeneity)
        workflows = []
        for i in range(c.n_workflows):
            family = c.families[int(rng.integers(len(c.families)))]
            if c.n_tasks_choices:
                n = int(c.n_tasks_choices[int(rng.integers(len(c.n_tasks_choices)))])
            else:
                n = int(rng.integers(c.n_tasks[0], c.n_tasks[1] + 1))
            name = f"{family}-{n}" if c.n_workflows == 1 else f"{family}-{n}-w{i:03d}"
            ccr = c.ccr
            if c.ccr_range is not None:
                lo, hi = np.log(c.ccr_range[0]), np.log(c.ccr_range[1])
                ccr = float(np.exp(rng.uniform(lo, hi)))
            workflows.append(generate_workflow(family, n, int(rng.integers(2**31)), ccr=ccr, name=name))
        if c.n_workflows > 1:
            workflows = poisson_arrivals(workflows, c.arrival_rate_per_h, int(rng.integers(2**31)))
        return Problem(name="rl-episode", workflows=workflows, cluster=cluster)

    def _check_fits(self, cp: CompiledProblem) -> None:
        c = self.config
        sizes = (("tasks", cp.n_tasks, c.max_tasks), ("nodes", cp.n_nodes, c.max_nodes))
        for what, have, room in (*sizes, ("edges", len(cp.succ_idx), c.edge_slots)):
            if have > room:
                raise ValueError(f"the problem has {have} {what} but the observation holds max_{what}={room}")

    # ---- the Gymnasium API ------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        rng = self.np_random
        c = self.config
        if "problem" in options:
            given = options["problem"]
            cp = given if isinstance(given, CompiledProblem) else compile_problem(given)
            self._check_fits(cp)
            baseline = compute_baseline(cp, c.sim, c.baseline)
        elif c.problem is not None:
            if self._fixed is None:
                fixed = compile_problem(c.problem)
                self._check_fits(fixed)
                self._fixed = (fixed, compute_baseline(fixed, c.sim, c.baseline))
            cp, baseline = self._fixed
        else:
            cp = compile_problem(self._draw_problem(rng))
            self._check_fits(cp)
            baseline = compute_baseline(cp, c.sim, c.baseline)
        sim_seed = int(options.get("sim_seed", rng.integers(2**31)))
        sim = Simulator(cp, c.sim, sim_seed)
        sim.trace.scheduler = "rl-env"
        self.sim, self.cp, self.baseline = sim, cp, baseline
        self.tracker = RewardTracker(cp, sim, c.sim, baseline)
        self._builder = FeatureBuilder(cp, c.sim.classic, c.max_candidates, c.history_len)
        self._steps = 0
        self._max_steps = c.max_steps if c.max_steps is not None else 8 * cp.n_tasks + 100
        self._stalled = False
        self._over = False
        dp = self._advance(must_step=False)
        if dp is None:
            raise SchedulingError(f"the episode cannot start: {self._why_over()}")
        obs = self._observe(dp)
        return obs, self._info(None)

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.sim is None or self.tracker is None or self.observation is None:
            raise RuntimeError("call reset() before step()")
        if self._over:
            raise RuntimeError("the episode is over; call reset()")
        a = self._check_action(action)
        sim = self.sim
        if a == self.wait_action:
            offered = self.observation.candidates
            assert self._dp is not None
            dp = self._dp.after_wait(offered) if self.config.defer_windows else None
            if dp is not None:
                sim.defer(offered)  # wait for these; offer the ready tasks behind them at this instant
            else:
                dp = self._advance(must_step=True)  # the simulator wakes us when inputs arrive
        else:
            k, nd = divmod(a, self.config.max_nodes)
            sim.start(int(self.observation.candidates[k]), nd)
            self.tracker.started(sim, nd)
            dp = self._advance(must_step=False)
        self._steps += 1
        terms = self.tracker.collect(sim)
        reward = self.config.reward.combine(terms)
        terminated = sim.done
        truncated = not terminated and (self._stalled or self._steps >= self._max_steps)
        self._over = terminated or truncated
        obs = self._observe(dp)
        return obs, reward, terminated, truncated, self._info(terms)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """The legal-action mask as booleans (the convention of maskable PPO implementations)."""
        return self._mask.astype(bool)

    def decode_action(self, action: int) -> tuple[int, int] | None:
        """(task index, node index) of a pair action, None for wait (no legality check)."""
        if action == self.wait_action:
            return None
        assert self.observation is not None, "call reset() first"
        k, nd = divmod(int(action), self.config.max_nodes)
        return int(self.observation.candidates[k]), nd

    # ---- driving the simulator ----------------------------------------------------------------

    def _advance(self, must_step: bool) -> DecisionPoint | None:
        """Run the simulator to the next instant with a legal pair (`next_decision(legal_only=True)`); None when
        done or stuck. Where ready tasks exist but none can start, the simulator waits by itself (no step is
        spent), woken when their inputs arrive; the reward tracker integrates every instant stepped through."""
        sim, tracker = self.sim, self.tracker
        assert sim is not None and tracker is not None
        dp = sim.next_decision(legal_only=True, must_step=must_step, observer=tracker)
        self._stalled = dp is None and not sim.done
        return dp

    def _why_over(self) -> str:
        sim = self.sim
        assert sim is not None
        if sim.done:
            return "every task is done"
        return (
            f"stalled at t={sim.now:g}: {len(sim.ready)} ready task(s) fit no node that is up, "
            "nothing runs and nothing is pending"
        )

    # ---- observation, mask, info ------------------------------------------------------------

    def _observe(self, dp: DecisionPoint | None) -> dict[str, np.ndarray]:
        sim, builder = self.sim, self._builder
        assert sim is not None and builder is not None
        obs = builder.build(dp if dp is not None else DecisionPoint(sim))  # over: every ready task, none deferred
        self.observation = obs
        self._dp = dp
        c = self.config
        T, M, E, K, H = c.max_tasks, c.max_nodes, c.edge_slots, c.max_candidates, c.history_len
        n, m, e, k = obs.n_tasks, obs.n_nodes, obs.edge_index.shape[1], len(obs.candidates)
        out: dict[str, np.ndarray] = {}
        task_x = np.zeros((T, len(TASK_FEATURES)), dtype=np.float32)
        task_x[:n] = obs.task_x
        out["task_features"] = task_x
        out["task_mask"] = _ones(T, n)
        if obs.visible is not None:  # a stream: the summary averages over its open workflows' tasks
            out["task_mask"][:n] = obs.visible
        edges = np.zeros((2, E), dtype=np.int64)
        edges[:, :e] = obs.edge_index
        out["edge_index"] = edges
        out["edge_mask"] = _ones(E, e)
        node_x = np.zeros((M, len(NODE_FEATURES)), dtype=np.float32)
        node_x[:m] = obs.node_x
        out["node_features"] = node_x
        out["node_mask"] = _ones(M, m)
        cands = np.zeros(K, dtype=np.int64)
        cands[:k] = obs.candidates
        out["candidates"] = cands
        out["candidate_mask"] = _ones(K, k)
        pair_x = np.zeros((K, M, len(PAIR_FEATURES)), dtype=np.float32)
        pair_x[:k, :m] = obs.pair_x
        out["pair_features"] = pair_x
        out["global_features"] = obs.global_x
        mask = np.zeros(K * M + 1, dtype=np.int8)
        if not self._over:
            legal = obs.legal
            if c.action_space == "rank_node":  # the first startable candidate only
                rows = np.flatnonzero(legal.any(axis=1))
                legal = np.zeros_like(legal)
                if len(rows):
                    legal[rows[0]] = obs.legal[rows[0]]
            mask[:-1].reshape(K, M)[:k, :m] = legal
            mask[-1] = obs.wait_legal
        out["action_mask"] = mask
        if H > 0:
            hist = np.zeros((M, H), dtype=np.float32)
            hist[:m] = obs.node_history
            out["node_history"] = hist
        self._mask = mask
        self.action_space.legal = mask
        return out

    def _info(self, terms: dict[str, float] | None) -> dict[str, Any]:
        sim, tracker, baseline = self.sim, self.tracker, self.baseline
        assert sim is not None and tracker is not None and baseline is not None and self.cp is not None
        info: dict[str, Any] = {"action_mask": self._mask.copy(), "now_s": sim.now, "tasks_done": sim.n_done}
        if terms is not None:
            info["reward_terms"] = terms
        if self._over:
            info["baseline"] = baseline.as_dict()
            info["objective"] = {name: 0.0 - tracker.totals[name] for name in TERMS}
            info["stalled"] = self._stalled
            if sim.done:
                sim.finish()
                metrics = compute_metrics(self.cp, sim.trace, self.config.sim)
                info["makespan"] = metrics.makespan
                info["cost"] = metrics.cost
                info["sla_hit_rate"] = metrics.sla_hit_rate
            else:
                info["truncated_because"] = self._why_over() if self._stalled else f"step cap {self._max_steps}"
        return info

    def _check_action(self, action: Any) -> int:
        arr = np.asarray(action)
        if arr.shape != () or arr.dtype.kind not in "iu":
            raise IllegalActionError(f"action must be one integer in [0, {self.wait_action}], got {action!r}")
        a = int(arr)
        if not 0 <= a <= self.wait_action:
            raise IllegalActionError(f"action {a} is out of range [0, {self.wait_action}]")
        if self._mask[a]:
            return a
        raise IllegalActionError(f"action {a} is illegal now (t={self.sim.now:g}): {self._why_illegal(a)}")

    def _why_illegal(self, a: int) -> str:
        sim, cp, obs = self.sim, self.cp, self.observation
        assert sim is not None and cp is not None and obs is not None
        if a == self.wait_action:
            if not sim.can_advance:
                return "wait: nothing runs and nothing is pending, so time cannot advance"
            return "wait: every candidate's best estimated finish is on a node that can start it now"
        k, nd = divmod(a, self.config.max_nodes)
        if k >= len(obs.candidates):
            return f"candidate slot {k} is empty ({len(obs.candidates)} candidate(s) now)"
        if nd >= cp.n_nodes:
            return f"node {nd} is padding (the cluster has {cp.n_nodes} nodes)"
        t = int(obs.candidates[k])
        name, node = cp.task_name(t), cp.node_ids[nd]
        if sim.status[t] != READY:
            return f"task '{name}' is not ready"
        if not sim.node_up[nd]:
            return f"node '{node}' is down"
        if sim.node_available_s[nd] > sim.now:
            return f"node '{node}' boots until t={sim.node_available_s[nd]:g}"
        if not sim.fits_now(t, nd):
            return f"task '{name}' does not fit the free resources of node '{node}'"
        return f"the inputs of task '{name}' reach node '{node}' only at t={sim.data_ready_s(t, nd):g}"


def _ones(size: int, n: int) -> npt.NDArray[np.int8]:
    out = np.zeros(size, dtype=np.int8)
    out[:n] = 1
    return out

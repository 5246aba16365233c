"""MCTS: Monte Carlo Tree Search over (task, node) decisions on simulator forks (UCT with HEFT-plan rollouts).

What it does: at each decision point it grows a search tree whose edges are the legal actions
(start a ready task on a node now, or wait where waiting can help, the environment's rule) and
whose states are `Simulator.fork()` copies rolled forward on predicted runtimes; it plays an
action (below), then searches again at the same instant until it waits or nothing more
can start. A new leaf is scored by a heuristic rollout: HEFT's plan of every unstarted task
from the leaf's state (`search_common.plan_completion`), as the negative makespan relative to
HEFT's plan at the first decision. `mcts_uct` selects children by UCB1 (Kocsis and Szepesvari,
ECML 2006) and widens from the rollout policy's action (HEFT's first start now, or wait) to the
others in an order drawn at random per state (`widening`; "rank", HEFT's starts now, then wait,
then the rest by upward rank, tries near copies of HEFT's choice first and finds better plans far
less often: docs/search.md). Progressive widening (Coulom 2007) keeps
ceil(pw_c * (N + 1) ** pw_alpha) children of a node visited N times, so thousands of legal
pairs stay tractable. The subtree of the chosen action is kept for the next decision when the
live state matches it (always in classic mode).

The action played (`choose`): the one towards the best plan found ("best", the default; single-player
MCTS's rule, Schadd et al. 2008), or the most visited ("visits", AlphaZero's rule). For "best" every
node keeps the best value backed up through it, the rollout policy's own action is always tried at the
root, and with one simulation the search follows the best plan it knows, else the rollout policy. A
plan is a completed schedule, so in classic mode, while the plan budget lasts, the run ends no later
than the rollout plan from the first decision (HEFT's); the rollout algorithm's guarantee (Bertsekas
et al. 1997).

Budgets: `sims` simulations per decision, and a plan budget `plan_work` in units of one task
placed on one node by a rollout (about 3 us each), shared out over the remaining decisions;
when the plan budget is spent the rest is dispatched by HEFT re-planned from the live state.
Wall-clock budgets (`decision_ms`, `plan_ms`) are optional: they make runs depend on machine
speed, so the defaults count work only and the same seed gives the same plan.
With "visits" and one simulation the search plays the first action of its widening order: the
rollout policy's choice.
Complexity per simulation: one fork (O(v + m)) and one plan completion, O(v m k) with k the
planned uses per node. Tie-breaks: "best": best value, then visits, then widening order; "visits": most
visits, then mean value, then widening order.
Departures: rollouts are HEFT plans computed on timelines rather than stepped events (about ten
times cheaper, the same schedule in classic mode).
"""

from __future__ import annotations

import math
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import rank_order, upward_rank
from dagsched.schedulers.base import Decision, Scheduler, register
from dagsched.schedulers.heft import HEFT
from dagsched.schedulers.search_common import (
    WAIT,
    Pair,
    advance,
    legal_pairs,
    makespan_of,
    n_unstarted,
    plan_completion,
    state_key,
    wait_helps,
)
from dagsched.sim.decision import RUNNING, DecisionPoint
from dagsched.sim.engine import Simulator

_STALL_VALUE = -10.0  # a branch where some task can no longer run anywhere


def _with_started(status: np.ndarray, started: list[tuple[int, int]]) -> bytes:
    """The live task states once `started` are applied: a child state with other ones has moved on in time."""
    out = status.copy()
    out[[t for t, _ in started]] = RUNNING
    return out.tobytes()


@dataclass(frozen=True)
class MCTSConfig:
    """Budgets and constants of the search."""

    sims: int = 64
    """simulations per decision (one decision = one action chosen)"""
    plan_work: float = 100_000.0
    """rollout work per plan, in task-node placements; spent evenly over the remaining decisions"""
    decision_ms: float | None = None
    """optional wall-clock cap per decision (non-deterministic)"""
    plan_ms: float | None = None
    """optional wall-clock cap per plan; past it HEFT dispatches the rest (non-deterministic)"""
    c_uct: float = 0.7
    """UCB1 exploration constant on min-max normalised values"""
    pw_c: float = 1.5
    """progressive widening: children allowed = ceil(pw_c * (N + 1) ** pw_alpha)"""
    pw_alpha: float = 0.5
    reuse: bool = True
    """keep the chosen subtree for the next decision when the live state matches"""
    widening: str = "random"
    """`mcts_uct`'s order of trying actions after the rollout policy's own: "random" (drawn per state, seeded by
    the run's seed and the task states, so runs repeat) or "rank" (wait, then by upward rank: near copies of
    HEFT's choice, which rarely lead to a better plan)"""
    choose: str = "best"
    """the action played: "best" (towards the best plan found, the rule of single-player MCTS; the rollout
    policy's action is always tried, so in classic mode the run ends no later than the rollout plan from the
    first decision) or "visits" (most visited, AlphaZero's rule)"""

    def __post_init__(self) -> None:
        if self.choose not in ("visits", "best"):
            raise ValueError(f"choose: {self.choose!r} is not 'visits' or 'best'")
        if self.widening not in ("random", "rank"):
            raise ValueError(f"widening: {self.widening!r} is not 'random' or 'rank'")


class _Node:
    __slots__ = (
        "state",
        "key",
        "children",
        "actions",
        "rollout",
        "first",
        "n",
        "w",
        "best",
        "value",
        "terminal",
    )

    def __init__(self, state: Simulator) -> None:
        self.state = state
        self.key = state_key(state)
        self.children: dict[Pair, _Node] = {}
        self.actions: list[Pair] | None = None
        self.rollout: Pair | None = None  # the rollout policy's action here: HEFT's first start now, or wait
        self.first: list[Pair] | None = None  # the rollout plan's starts now, when computed
        self.n = 0
        self.w = 0.0
        self.best = -math.inf  # the best value backed up through this node (a plan that starts here)
        self.value: float | None = None
        self.terminal = False


@register
class MCTSUCT(Scheduler):
    """UCT over (task, node) decisions on simulator forks, with HEFT-plan rollouts. The module docstring has the
    details."""

    name = "mcts_uct"
    best_for = "the full standard suite, every family, cluster and mode (the best mean there)"
    tree_search: ClassVar[bool] = True

    def __init__(self, config: MCTSConfig | None = None, **overrides: Any) -> None:
        super().__init__()
        self.config = replace(config or MCTSConfig(), **overrides)
        self.sims_done = 0

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, view, seed)
        self.rank = upward_rank(cp)
        self.order = rank_order(self.rank, cp)
        self.topo_pos = np.empty(cp.n_tasks, dtype=np.int64)
        self.topo_pos[cp.topo] = np.arange(cp.n_tasks)
        self.baseline = 0.0
        self.work_left = float(self.config.plan_work)
        self.t_end = math.inf if self.config.plan_ms is None else time.perf_counter() + self.config.plan_ms / 1e3
        self.keep: _Node | None = None
        self.fallback: HEFT | None = None
        self.sims_done = 0
        self._seed = seed  # the fallback HEFT's, and with the task states the widening draw's

    # ---- the decision loop -------------------------------------------------------------------

    def decide(self, dp: DecisionPoint) -> Decision:
        if self.fallback is not None:
            return self.fallback.decide(dp)
        wake = dp.wake_s
        decision_wake = wake if math.isfinite(wake) else None
        live = dp.pairs()
        if not live:
            return Decision([], decision_wake)
        if self.work_left <= 0 or time.perf_counter() > self.t_end:
            self.fallback = HEFT()
            self.fallback.reset(self.cp, dp, self._seed)
            return self.fallback.decide(dp)
        keep = self.keep
        root = keep if keep is not None and self._matches(keep, dp, live) else _Node(dp.fork())
        if self.baseline <= 0:
            self._evaluate(root)
        assignments: list[tuple[int, int]] = []
        start_status = dp.status.copy()
        self.keep = None
        while True:
            acts = self._actions(root)
            if not acts:
                break
            a = acts[0] if len(acts) == 1 else self._search(root, self._sims_now(root))
            child = root.children.get(a) or self._child(root, a, evaluate=False)
            if a == WAIT:
                self.keep = child
                break
            assignments.append(a)
            root = child
            moved_on = root.state.now != dp.now or root.key[1] != _with_started(start_status, assignments)
            if root.terminal or moved_on:
                self.keep = root
                break
        return Decision(assignments, decision_wake)

    def _matches(self, keep: _Node, dp: DecisionPoint, live: list[Pair]) -> bool:
        """Whether the kept subtree stands for the live state: same state key and the same legal actions.

        The kept state was rolled forward on predictions, without failures, repairs or boot delays
        after repair; only where it matches may its actions be played on the live simulator.
        """
        return self.config.reuse and keep.key == state_key(dp) and legal_pairs(keep.state) == live

    def _sims_now(self, root: _Node) -> int:
        if math.isinf(self.work_left):
            return self.config.sims
        u = max(1, n_unstarted(root.state))
        share = self.work_left / max(1.0, u / 2.0)
        return int(min(self.config.sims, max(1.0, share // (u * self.cp.n_nodes))))

    # ---- the search --------------------------------------------------------------------------

    def _search(self, root: _Node, n_sims: int) -> Pair:
        cfg = self.config
        if n_sims <= 1:
            acts = self._actions(root)
            if cfg.choose == "best":  # no search: follow the best plan known, else the rollout plan
                known = [kv for kv in root.children.items() if kv[1].best > -math.inf]
                if known:
                    a, child = max(known, key=lambda kv: (kv[1].best, kv[1].n))
                    if root.value is None or child.best >= root.value:
                        return a
                return root.rollout if root.rollout is not None else acts[0]
            return acts[0]  # the widening order's first: the rollout policy's choice
        deadline = math.inf if cfg.decision_ms is None else time.perf_counter() + cfg.decision_ms / 1e3
        lo, hi = math.inf, -math.inf
        if cfg.choose == "best":  # the rollout policy's action: the plan to beat
            self._actions(root)
            first = root.rollout
            if first is not None and first not in root.children:
                child = self._child(root, first, evaluate=True)
                assert child.value is not None
                child.n, child.w, child.best = 1, child.value, child.value
                root.n += 1
                root.w += child.value
                root.best = max(root.best, child.value)
        for i in range(n_sims):
            if i > 0 and time.perf_counter() > deadline:
                break
            node, path = root, [root]
            while True:
                if node.terminal:
                    v = node.value
                    break
                acts = self._actions(node)
                allowed = min(len(acts), math.ceil(cfg.pw_c * (node.n + 1) ** cfg.pw_alpha))
                if len(node.children) < allowed:
                    a = next(x for x in acts if x not in node.children)
                    node = self._child(node, a, evaluate=True)
                    path.append(node)
                    v = node.value
                    break
                node = self._select(node, acts[:allowed], lo, hi)
                path.append(node)
            assert v is not None
            lo, hi = min(lo, v), max(hi, v)
            for p in path:
                p.n += 1
                p.w += v
                p.best = max(p.best, v)
            self.sims_done += 1
        acts = self._actions(root)
        rank = {a: i for i, a in enumerate(acts)}
        if cfg.choose == "best":
            return max(root.children.items(), key=lambda kv: (kv[1].best, kv[1].n, -rank[kv[0]]))[0]
        return max(root.children.items(), key=lambda kv: (kv[1].n, kv[1].w / max(kv[1].n, 1), -rank[kv[0]]))[0]

    def _select(self, node: _Node, acts: list[Pair], lo: float, hi: float) -> _Node:
        span = hi - lo if hi > lo else 1.0
        best, best_score = None, -math.inf
        for a in acts:
            child = node.children.get(a)
            if child is None:
                continue
            q = (child.w / max(child.n, 1) - lo) / span if hi > lo else 0.5
            score = q + self.config.c_uct * math.sqrt(math.log(max(node.n, 1)) / max(child.n, 1))
            if score > best_score:
                best, best_score = child, score
        assert best is not None
        return best

    # ---- states, values, actions -------------------------------------------------------------

    def _child(self, node: _Node, a: Pair, evaluate: bool) -> _Node:
        state = node.state.fork()
        if a == WAIT:
            alive = advance(state, must_step=True)
        else:
            state.start(*a)
            alive = bool(legal_pairs(state)) or advance(state, must_step=False)
        child = _Node(state)
        if state.done:
            child.terminal = True
            child.value = -makespan_of(state) / self.baseline
        elif not alive:
            child.terminal = True
            child.value = _STALL_VALUE
        elif evaluate:
            self._evaluate(child)
        node.children[a] = child
        return child

    def _evaluate(self, node: _Node) -> None:
        """Score a state by HEFT's plan completion (and remember the plan's starts now)."""
        makespan, first = plan_completion(node.state, self.order)
        self.work_left -= n_unstarted(node.state) * self.cp.n_nodes
        if self.baseline <= 0:
            self.baseline = makespan if math.isfinite(makespan) and makespan > 0 else 1.0
        node.first = first
        node.value = -makespan / self.baseline if math.isfinite(makespan) else _STALL_VALUE

    def _heuristic_order(self, node: _Node, pairs: list[Pair]) -> list[Pair]:
        """The rollout policy's order: HEFT's starts now, then wait (if legal), then the rest by rank."""
        if node.first is None:
            self._evaluate(node)
        first = [p for p in node.first or [] if p in set(pairs)]
        rest = sorted(
            (p for p in pairs if p not in set(first)),
            key=lambda p: (-float(self.rank[p[0]]), float(self.cp.exec_s[p[0], p[1]]), p),
        )
        dp = node.state.decision_point()
        # a wait is legal where time can move (the one rule); it is worth trying where the rollout plan starts
        # nothing now (HEFT waits for a better slot) or where the environment's estimate says it can help
        waits = dp.can_wait and (not first or wait_helps(dp, self.rank, self.topo_pos))
        wait = [WAIT] if waits else []
        return first[:1] + wait + first[1:] + rest if first else wait + rest

    def _actions(self, node: _Node) -> list[Pair]:
        if node.actions is None:
            order = self._heuristic_order(node, legal_pairs(node.state))
            if self.config.widening == "random" and len(order) > 2:
                rest = order[1:]
                np.random.default_rng([self._seed, zlib.crc32(node.key[1])]).shuffle(rest)
                order = order[:1] + rest
            node.actions = order
            node.rollout = order[0] if order else None
        return node.actions

"""drl_step: the per-decision GNN policy (dagsched.policy, trained by dagsched.rl) behind the scheduler interface.

Registered as `drl_step`: the product's `drl` is now the learned priority planner (`schedulers.priority_sampling`,
docs/planner.md), never longer than HEFT on predicted runtimes where this policy was 1.028 x HEFT on held-out
workflows (docs/policy.md); it stays for MCTS's priors, the explanations of its decisions and
fine-tuning, which use its network.

What it does: at each decision point it reads the state at its exact sizes (no padding;
`FeatureBuilder.decision` into `PolicyInference`, which is made once per plan), masks illegal
(task, node) pairs before the softmax, and picks pairs one at a time at the same instant (greedy
argmax by default, or sampled with a temperature) until it chooses to wait or no pair is legal.
The environment `dagsched/Scheduling-v0` it was trained in has the same semantics: candidates
are the top-K ready tasks (startable first, then the window's priority, `features.WINDOWS`, then
topological position), and after each start the state is observed again. On a stream drl also
waits only when nothing offered can start (`WAITS`), a decode rule the environment does not apply
(no policy has been trained on streams).
Source: Decima (Mao et al., SIGCOMM 2019) for the (task, node) action over a graph embedding;
GCNScheduler (Kiamari and Krishnamachari, 2022) for the imitation warm start from HEFT.
Complexity: one GNN forward per pick, O((v + e) h^2 + L h^2) with h the embedding width and L <= K m the
legal pairs (the inference path scores only those; `fast=False` runs the reference path, which scores all
K m pairs through PyG: same logits within 1e-5, same plans, several times slower).
Tie-breaks: argmax takes the lowest action index among equal logits (lowest candidate slot, then
lowest node index); wait is the last action.
Departures: later picks at one instant are observed on a fork (`DecisionPoint.fork()`; the live
simulation is never touched), which sees running tasks at their predicted ends, as the planners do.
A wait on a window of candidates offers the ready tasks behind it at the same instant
(`DecisionPoint.after_wait`), the environment's rule.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import Decision, Scheduler, register
from dagsched.sim.decision import DecisionPoint

ACTIONS = ("pair", "task_eft", "rank_node", "rank_top2", "auto")
"""How a decision reads the policy's pair scores (which action space suits which problem, measured at decode time with
one network by benchmarks/experiments/per_decision_policy_held_out.py): `pair` takes the best (task, node) pair or
wait; `task_eft` takes the task of the best pair and puts it on its earliest-finish legal node (the policy is a
learned priority); `rank_node` takes the first startable candidate in the window's order (`features.WINDOWS`: upward
rank on one workflow, the workflow with the least work left on a stream) and lets the policy choose its node or to
wait (the policy is a learned node rule); `rank_top2` takes the same task and lets the policy choose between its two
earliest-finish legal nodes, never waiting while it can start (the policy as a tie-breaker of the earliest-finish
rule: nodes chosen among the top few by estimated finish); `auto` is what won on held-out workloads of each kind
(docs/policy.md): `rank_node` on one workflow, `rank_top2` on a stream (shorter mean completion than `rank_node` on
all 16 held-out streams, and than `pair` before it: `pair` had won while the window was by upward rank and the policy
could wait with pairs legal)."""


WAITS = ("policy", "idle", "auto")
"""When a decision may end in a wait while an offered pair could start: `policy`, whenever the policy prefers it
(the decision point's wait rule allows it); `idle`, never (work-conserving: it waits only when nothing offered can
start); `auto`, `policy` on one workflow and `idle` on a stream, where a node left idle for a better one later is
capacity the other workflows lose (docs/policy.md, "What was tried and did not win")."""


def resolve_action(action: str, one_workflow: bool) -> str:
    """The action space `action` decodes on a problem of one workflow or of several (`auto` picks per problem)."""
    if action == "auto":
        return "rank_node" if one_workflow else "rank_top2"
    return action


def _finish_grid(obs: Any) -> npt.NDArray[np.float64]:
    """(k, m) estimated finish of each legal pair (inf elsewhere), from an Observation or DecisionInputs (there
    the est_finish pair column, monotone in the finish time)."""
    from dagsched.policy.features import PAIR_FEATURES

    k, m = len(obs.candidates), obs.n_nodes
    if hasattr(obs, "est_finish_s"):
        return np.where(obs.legal, obs.est_finish_s, np.inf)
    grid = np.full(k * m, np.inf)
    grid[obs.legal_pairs] = obs.pair_x[:, PAIR_FEATURES.index("est_finish")]
    return grid.reshape(k, m)


TOP_NODES = 2
"""`rank_top2` chooses among this many earliest-finish legal nodes (3 measured worse on held-out streams)."""


def top_finish_nodes(obs: Any, row: int) -> npt.NDArray[np.int64]:
    """The legal nodes of candidate `row` with the `TOP_NODES` earliest estimated finishes, earliest first (ties:
    the lower node index)."""
    finish = _finish_grid(obs)[row]
    nodes = np.argsort(finish, kind="stable")[:TOP_NODES]
    return np.asarray(nodes[np.isfinite(finish[nodes])], dtype=np.int64)


def restrict_action(action: str, logits: npt.NDArray[np.float32], obs: Any) -> int:
    """The greedy choice under the action space `action` (`ACTIONS`) from the policy's masked logits."""
    action = resolve_action(action, getattr(obs, "visible", None) is None)
    mask = obs.action_mask()
    k, m = len(obs.candidates), int(obs.n_nodes)
    wait = k * m
    if action == "pair":
        return int(np.argmax(np.where(mask, logits, -np.inf)))
    if action == "task_eft":
        a = int(np.argmax(np.where(mask, logits, -np.inf)))
        if a == wait:
            return a
        row = a // m
        return row * m + int(np.argmin(_finish_grid(obs)[row]))
    rows = np.flatnonzero(obs.legal.any(axis=1))
    if len(rows) == 0:
        return wait
    row = int(rows[0])  # the window offers startable tasks first, by decreasing priority
    if action == "rank_top2":
        nodes = top_finish_nodes(obs, row)
        return row * m + int(nodes[int(np.argmax(logits[row * m + nodes]))])
    pairs = np.where(obs.legal[row], logits[row * m : (row + 1) * m], -np.inf)
    best = int(np.argmax(pairs))
    if mask[wait] and logits[wait] > pairs[best]:
        return wait
    return row * m + best


@register
class DRLScheduler(Scheduler):
    """The learned policy, greedy by default (temperature > 0 with greedy=False samples).

    The policy sees at most `max_candidates` ready tasks at once (startable first, then by upward
    rank on one workflow, by the workflow's work left on a stream: `window`). On a stream it waits
    only when nothing offered can start (`waits`). With `defer_windows` (default) choosing "wait"
    defers only the tasks it was shown: the next ready tasks are offered in their place until every
    ready task was shown or one is started, so a wide DAG's lower-ranked tasks can use nodes the top
    ones do not want. Without it a wait on the first window idled the whole cluster: on a 1,000-task
    layered DAG on 100 nodes the policy waited 2,662 times with pairs legal and used 38 nodes
    (makespan 2.2 x HEFT's).
    `fast=False` runs the reference path (`FeatureBuilder.build` + `forward_single` through PyG) instead
    of the inference path; both make the same plans (tests/schedulers/test_drl.py). The inference path runs
    the numba kernels of `dagsched.policy.kernels` unless `compiled=False` (numpy only, same plans).
    """

    name = "drl_step"

    def __init__(
        self,
        policy: Any = None,
        policy_path: str | os.PathLike[str] | None = None,
        greedy: bool = True,
        temperature: float = 1.0,
        max_candidates: int = 16,
        fast: bool = True,
        defer_windows: bool = True,
        compiled: bool | None = None,
        action: str | None = None,
        window: str = "auto",
        waits: str = "auto",
        reserve: float | None = None,
    ) -> None:
        import torch  # here, not at module level: importing the scheduler registry must stay light

        from dagsched.policy.features import WINDOWS
        from dagsched.policy.files import load_cached_policy
        from dagsched.policy.inference import warm_up

        super().__init__()
        torch.set_num_threads(1)  # batch-1 inference: two threads on two cores were 5-20x slower
        self.policy = policy if policy is not None else load_cached_policy(policy_path)
        if self.policy.training:  # eval() walks every module: a per-plan cost in the service
            self.policy.eval()
        if compiled is not False:
            warm_up(self.policy)  # the kernels compile (or load) here, not inside the first timed decision
        self.greedy = greedy
        self.uses_seed = not greedy  # argmax never reads the seed; sampling does
        self.temperature = temperature
        self.max_candidates = max_candidates
        self.fast = fast
        self.defer_windows = defer_windows
        self.compiled = compiled  # None: the numba kernels where numba is installed; False: numpy only
        action = action or str(getattr(self.policy.config, "action_space", "pair"))
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        self.action = action
        """the action space decoded (default: the one the policy was trained for, `PolicyConfig.action_space`)"""
        self.decode = resolve_action(action, True)
        """`action` as decoded on the current problem (`auto` resolves at `reset`)"""
        if window not in WINDOWS:
            raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
        if waits not in WAITS:
            raise ValueError(f"waits must be one of {', '.join(WAITS)}, got {waits!r}")
        self.window = window
        """the offered window's order (`features.WINDOWS`; `auto`: upward rank on one workflow, SRPT on several)"""
        self.waits = waits
        self.idle_waits = False
        """whether a wait is taken only when nothing offered can start (`waits`, resolved at `reset`)"""
        if reserve is not None and not 0.0 <= reserve < 1.0:
            raise ValueError(f"reserve must be in [0, 1), got {reserve!r}")
        self.reserve = reserve
        """with `rank_node`/`rank_top2`: hold the first startable task back (the tasks behind it are offered) when a
        node that cannot start it now would finish it earlier than every node that can by more than this share of
        its run time there; None: never (docs/policy.md, "What was tried and did not win")"""
        self._warm = False

    def reset(self, cp: CompiledProblem, view: DecisionPoint, seed: int = 0) -> None:
        import torch

        from dagsched.policy.features import FeatureBuilder
        from dagsched.policy.inference import PolicyInference

        super().reset(cp, view, seed)
        one_workflow = cp.n_workflows == 1
        self.decode = resolve_action(self.action, one_workflow)
        self.idle_waits = self.waits == "idle" or (self.waits == "auto" and not one_workflow)
        history = self.policy.config.history_len
        self.builder = FeatureBuilder(
            cp, view.classic, self.max_candidates, history, compiled=self.compiled, window=self.window
        )
        self.generator = torch.Generator().manual_seed(int(seed))
        self.inference = PolicyInference(self.policy, self.builder, self.compiled) if self.fast else None
        # torch's first forward pays one-off set-up costs: not in decision latency
        if not self._warm and not self.fast and view.any_legal:
            with torch.inference_mode():
                self.policy.forward_single(FeatureBuilder(cp, view.classic, self.max_candidates).build(view))
            self._warm = True

    def _pick(self, obs: Any) -> int:
        """Index into the unpadded action layout (k * m pairs, then wait) of an Observation or DecisionInputs."""
        import torch

        if self.inference is not None:
            scores = self.inference.logits(obs)
            if self.greedy and self.decode == "pair":
                return int(np.argmax(scores))  # the first of equal maxima, as torch.argmax
        with torch.inference_mode():
            logits = torch.from_numpy(scores) if self.inference is not None else self.policy.forward_single(obs)[0]
            if self.decode != "pair":
                return restrict_action(self.decode, logits.numpy(), obs)
            if self.greedy:
                return int(torch.argmax(logits))
            probs = torch.softmax(logits / max(self.temperature, 1e-6), dim=0)
            return int(torch.multinomial(probs, 1, generator=self.generator))

    def _held_back(self, here: DecisionPoint, obs: Any) -> tuple[int, float] | None:
        """(the first startable candidate, when the node it waits for could start it), when `reserve` holds it back
        for a node that cannot start it now (as `srpt_hold` does; not when that node should already have room)."""
        from dagsched.schedulers.srpt_hold import node_worth_waiting_for

        assert self.reserve is not None
        row = int(np.flatnonzero(obs.legal.any(axis=1))[0])
        t = int(obs.candidates[row])
        start = here.earliest_starts([t])[0]
        nd = node_worth_waiting_for(start, self.cp.exec_s[t], obs.legal[row], here.now, self.reserve)
        return None if nd is None else (t, float(start[nd]))

    def decide(self, dp: DecisionPoint) -> Decision:
        builder = self.builder
        here, fork = dp, None
        assignments: list[tuple[int, int]] = []
        wake = math.inf
        seen = builder._attempts_seen
        deferred: list[int] = []
        while True:
            if not here.any_legal:
                wake = min(wake, here.wake_s)
                break
            obs = builder.decision(here) if self.inference is not None else builder.build(here)
            mask = obs.action_mask()
            can_start = obs.legal.any()
            forced_wait = self.greedy and not can_start  # only waiting is legal here: no network needed
            if self.idle_waits and can_start and obs.wait_legal:
                obs = replace(obs, wait_legal=False)
                mask = obs.action_mask()
            if self.reserve is not None and can_start and self.decode in ("rank_node", "rank_top2"):
                held = self._held_back(here, obs)
                if held is not None:
                    t, when = held
                    deferred.append(t)
                    wake = min(wake, when)  # the node it waits for could start it then: never a stall
                    here = here.without(np.asarray([t], dtype=np.int64))
                    continue
            a = len(mask) - 1 if forced_wait else self._pick(obs)
            if not mask[a]:  # cannot happen: illegal logits are MASK_LOGIT
                raise RuntimeError(f"drl chose illegal action {a}")
            if a == len(mask) - 1:
                wake = min(wake, obs.wake_s)
                rest = here.after_wait(obs.candidates) if self.defer_windows else None
                if rest is None:
                    break
                deferred += [int(t) for t in obs.candidates]  # wait for these; offer the ready tasks behind them
                here = rest
                continue
            t, nd = int(obs.candidates[a // obs.n_nodes]), a % obs.n_nodes
            assignments.append((t, nd))
            if fork is None:
                seen = builder._attempts_seen
                fork = dp.fork()  # later picks see this start; the live simulation is never touched
            fork.start(t, nd)
            here = fork.decision_point()
            if deferred:
                here = here.without(np.asarray(deferred, dtype=np.int64))
        if fork is not None:  # the fork's trace is empty: keep the live simulator's attempt count
            builder._attempts_seen = seen
        return Decision(assignments, wake if np.isfinite(wake) else None)

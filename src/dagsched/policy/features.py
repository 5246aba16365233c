"""Observation features of one scheduling state, vectorised with numpy.

A `FeatureBuilder` is made once per run from the compiled problem (static per-task
features, ranks and the time scale are computed there) and then turns each
`DecisionPoint` into an `Observation`. The observation has the
problem's exact sizes; the environment (`dagsched.rl.env`) pads it to fixed shapes.

Normalisation, so that one policy sees comparable numbers from 10 to 2,000 tasks and
from 2 to 128 nodes:

- times are divided by the problem's time scale `scale_s = max(longest upward rank,
  mean work / cpu capacity)`, an estimate of the makespan of the whole problem;
- requests and capacities by the cluster's largest node in each resource; speed and
  price by the cluster's maximum;
- counts by `log1p`;
- every feature is clipped to [-FEATURE_CLIP, FEATURE_CLIP] (an unreachable node's
  start time is the clip value, with a 0 in its `fits` flag).

Candidate pruning: of the ready tasks at most `max_candidates` (K) are offered per
decision (`DecisionPoint.window` with HEFT's upward rank as the priority): those that can
start on some node now first, then by decreasing upward rank, then by topological
position. So "no legal pair among the candidates" means "no ready task can start anywhere
now". Legality, the wait rule and the room estimates are the decision point's.

Change `FEATURE_VERSION` whenever a feature's meaning, order or normalisation changes:
saved policies record it and refuse to load against another.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import EPS as _EPS
from dagsched.model.compiled import CompiledProblem, task_work
from dagsched.model.graph import default_deadlines_s
from dagsched.model.ranks import (
    downward_rank,
    longest_to_exit_s,
    mean_comm_pred_s,
    mean_comm_succ_s,
    mean_exec_s,
    optimistic_cost_table,
    upward_rank,
)
from dagsched.sim.decision import DONE, DecisionPoint

FEATURE_VERSION = 2
"""Bump on any change to the features below (names, order, normalisation). 2: the look-ahead pair features
`oct` and `o_eft_gap` (what a task's placement does to its successors' communication), and on a problem of
several workflows the task summary over the open ones only (`FeatureBuilder.visible`)."""

WINDOWS = ("rank", "srpt", "auto")
"""The order the offered window takes ready tasks in (after "can start now"): `rank`, HEFT's upward rank;
`srpt`, the workflow with the least work left first (shortest remaining processing time, the rule that lowers
mean completion on a shared cluster; running tasks count whole), then upward rank inside it; `auto`, `rank` on
a problem of one workflow and `srpt` on several (docs/policy.md, "What was tried and did not win")."""

FEATURE_CLIP = 10.0
"""Every feature lies in [-FEATURE_CLIP, FEATURE_CLIP]."""

TASK_STATIC = (
    "runtime",  # mean predicted execution time over nodes / scale
    "cpu",  # request / largest node's (1 slot in classic mode)
    "mem",
    "gpu",
    "priority",  # priority / max |priority|
    "critical",  # 1 if flagged critical
    "rank_u",  # upward rank (HEFT) / scale
    "rank_d",  # downward rank / scale
    "remaining_cp",  # longest path from the task's start to its exit on the fastest nodes, free transfers / scale
    "n_parents",  # log1p
    "n_children",  # log1p
    "data_in",  # mean transfer time of the inputs (summed) / scale
    "data_out",  # mean transfer time of the outputs (summed) / scale
)
TASK_DYNAMIC = (
    "waiting",  # state one-hot ...
    "ready",
    "running",
    "done",
    "candidate",  # 1 if offered in this decision
    "remaining_run",  # running: predicted time left / scale
    "submit_in",  # time until its workflow is submitted / scale
    "deadline_slack",  # workflow deadline - now / scale
)
TASK_FEATURES = TASK_STATIC + TASK_DYNAMIC

NODE_FEATURES = (
    "free_cpu",  # free / largest node's capacity
    "free_mem",
    "free_gpu",
    "cap_cpu",  # capacity / largest node's
    "cap_mem",
    "cap_gpu",
    "speed",  # / max speed
    "price",  # / max price (0 if all free)
    "load",  # running tasks / cpu slots
    "utilisation",  # used cpu / cpu capacity
    "up",  # 1 if up and booted now
    "boot_wait",  # up but booting: time until available / scale; down: FEATURE_CLIP
    "busy_until",  # predicted end of its last running task - now / scale
    "opened",  # 1 once billing started on it (it ran anything)
)

PAIR_FEATURES = (
    "est_start",  # estimated start on this node - now / scale (data arrival, boot, room freed by running tasks)
    "est_finish",  # est_start + execution time on this node, - now / scale
    "exec",  # execution time on this node / scale
    "data_wait",  # time until its inputs are on this node / scale
    "transfer_share",  # share of its input bytes that must cross the network to reach this node
    "can_start",  # 1 if dp.can_start(task, node) now
    "eft_gap",  # est_finish - the best est_finish of this task over nodes / scale
    "room_wait",  # time until this node has the task's request free / scale
    "cost",  # execution time x price, relative to the task's most expensive feasible node
    "fits",  # 1 if the node is up and its capacity can ever hold the request
    "overran_here",  # 1 if the task overran on this node before (the overrun guard migrates it)
    "oct",  # PEFT's optimistic cost: shortest remaining path from the task's end on this node to its exit / scale
    "o_eft_gap",  # est_finish + oct - the best of that over nodes / scale (PEFT's node rule: 0 is its choice)
)

GLOBAL_FEATURES = (
    "now",  # time since the first submission / scale
    "done_frac",  # tasks done / tasks
    "ready_frac",
    "running_frac",
    "log_tasks",  # log1p(tasks) / 8
    "log_nodes",  # log1p(nodes) / 5
    "up_frac",  # nodes up and booted / nodes
    "remaining_cp",  # longest optimistic remaining path among unfinished tasks / scale
    "remaining_work",  # unfinished cpu work / cpu capacity / scale
    "cluster_util",  # used cpu / cpu capacity
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def feature_sizes(history_len: int = 0) -> dict[str, int]:
    """Widths of each feature group (what a saved policy records and checks)."""
    return {
        "task": len(TASK_FEATURES),
        "node": len(NODE_FEATURES),
        "pair": len(PAIR_FEATURES),
        "global": len(GLOBAL_FEATURES),
        "history": history_len,
    }


@dataclass(frozen=True)
class Observation:
    """One decision state at the problem's exact sizes (n tasks, m nodes, k <= K candidates).

    The action layout of this unpadded form is `k_i * m + node` for a pair and `k * m`
    for wait; the environment re-indexes it to its padded layout.
    """

    task_x: npt.NDArray[np.float32]  # (n, len(TASK_FEATURES))
    edge_index: IntArray  # (2, e): parent row 0 -> child row 1
    node_x: npt.NDArray[np.float32]  # (m, len(NODE_FEATURES))
    node_history: npt.NDArray[np.float32]  # (m, H): cpu utilisation at the last H decision instants, oldest first
    candidates: IntArray  # (k,) task indices offered
    pair_x: npt.NDArray[np.float32]  # (k, m, len(PAIR_FEATURES))
    global_x: npt.NDArray[np.float32]  # (len(GLOBAL_FEATURES),)
    legal: BoolArray  # (k, m): dp.can_start(candidates[i], node)
    wait_legal: bool
    wake_s: float  # earliest future instant a ready task's inputs reach a node that could hold it (inf: none)
    est_start_s: FloatArray  # (k, m) estimated start of each candidate on each node, seconds (inf: cannot)
    est_finish_s: FloatArray  # (k, m) est_start_s + execution time on the node
    visible: BoolArray | None = None  # (n,) tasks the summary averages over (`FeatureBuilder.visible`); None: all

    @property
    def n_tasks(self) -> int:
        return int(self.task_x.shape[0])

    @property
    def n_nodes(self) -> int:
        return int(self.node_x.shape[0])

    def action_mask(self) -> BoolArray:
        """Legal actions in the unpadded layout: k * m pairs, then wait."""
        return np.concatenate([self.legal.reshape(-1), [self.wait_legal]])


_STATE_ONE_HOT = np.eye(4, dtype=np.float32)  # waiting, ready, running, done


@dataclass(frozen=True)
class _PairTimes:
    """Per (candidate, node): estimated start and finish and the other grids the pair features read."""

    start: FloatArray  # (k, m), inf where the node cannot take the task
    finish: FloatArray  # start + exec_s
    exec_s: FloatArray
    room_s: FloatArray  # when the node first has the request free
    fits: BoolArray  # node up and its capacity can ever hold the request
    cost: FloatArray  # exec_s x price
    best: FloatArray  # (k,) best finish over nodes
    avail: FloatArray  # (m,) when each node is up and booted (inf: down)
    cost_max: FloatArray  # (k,) the most expensive feasible node's cost
    oct: FloatArray  # (k, m) optimistic cost to the exit from the task's end on the node
    obest: FloatArray  # (k,) best finish + oct over nodes

    def at(self, rows: IntArray, cols: IntArray) -> _PairTimes:
        """The grids at the pairs (rows[j], cols[j]); best, avail and cost_max stay whole."""
        return replace(
            self,
            start=self.start[rows, cols],
            finish=self.finish[rows, cols],
            exec_s=self.exec_s[rows, cols],
            room_s=self.room_s[rows, cols],
            fits=self.fits[rows, cols],
            cost=self.cost[rows, cols],
            oct=self.oct[rows, cols],
        )


class FeatureBuilder:
    """Builds observations of one run of `cp`; make a new one per run (it keeps a short history).

    `classic` must match the simulator's mode (requests are one slot per task there).
    """

    def __init__(
        self,
        cp: CompiledProblem,
        classic: bool,
        max_candidates: int = 16,
        history_len: int = 0,
        window: str = "auto",
    ) -> None:
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be at least 1, got {max_candidates}")
        if window not in WINDOWS:
            raise ValueError(f"window must be one of {', '.join(WINDOWS)}, got {window!r}")
        if history_len < 0:
            raise ValueError(f"history_len must be >= 0, got {history_len}")
        self.cp = cp
        self.classic = classic
        self.max_candidates = max_candidates
        self.history_len = history_len
        n, m = cp.n_tasks, cp.n_nodes
        if classic:
            self.req = np.tile(np.array([1.0, 0.0, 0.0]), (n, 1))
            self.cap = np.ones((m, 3))
            self.cap[:, 1:] = np.inf
            self.cap_norm = np.ones(3)
        else:
            self.req = cp.req.astype(np.float64)
            self.cap = cp.cap.astype(np.float64)
            mx = self.cap.max(axis=0)
            self.cap_norm = np.where(mx > 0, mx, 1.0)
        w = mean_exec_s(cp)
        self.rank_u = upward_rank(cp)
        rank_d = downward_rank(cp)
        self.rank_fast = longest_to_exit_s(cp, cp.exec_s.min(axis=1))
        self.oct = optimistic_cost_table(cp)
        self.wf_size = np.bincount(cp.task_wf, minlength=cp.n_workflows)
        cpu_cap = self.cap[:, 0].sum()
        self.work_share_s = w * self.req[:, 0] / cpu_cap  # each task's share of the cluster's cpu time
        scale = max(float(self.rank_u.max(initial=0.0)), float(self.work_share_s.sum()))
        self.scale_s = scale if scale > 0 else 1.0
        self.t0_s = float(cp.wf_submit_s.min())
        self.deadline_s = default_deadlines_s(cp)[cp.task_wf]
        self.submit_s = cp.wf_submit_s[cp.task_wf]
        pos = np.empty(n, dtype=np.int64)
        pos[cp.topo] = np.arange(n)
        self.topo_pos = pos
        self.window = ("srpt" if cp.n_workflows > 1 else "rank") if window == "auto" else window
        """the window's order on this problem (`WINDOWS`, `auto` resolved)"""
        self._work = task_work(cp)
        self._rank_span = float(self.rank_u.max(initial=0.0)) + 1.0  # above any upward rank
        self.ever_fits = np.all(self.cap[None, :, :] + _EPS >= self.req[:, None, :], axis=2)  # (n, m)
        if cp.allowed is not None:  # a placement rule forbids the pair: never a start there
            self.ever_fits &= cp.allowed

        s = self.scale_s
        n_par = np.diff(cp.pred_ptr).astype(np.float64)
        n_ch = np.diff(cp.succ_ptr).astype(np.float64)
        data_in = np.bincount(np.repeat(np.arange(n), np.diff(cp.pred_ptr)), mean_comm_pred_s(cp), minlength=n)
        data_out = np.bincount(np.repeat(np.arange(n), np.diff(cp.succ_ptr)), mean_comm_succ_s(cp), minlength=n)
        prio = cp.priority.astype(np.float64)
        pmax = float(np.abs(prio).max(initial=0.0))
        static = np.column_stack(
            [
                w / s,
                self.req / self.cap_norm if not classic else self.req,
                prio / pmax if pmax > 0 else np.zeros(n),
                cp.critical.astype(np.float64),
                self.rank_u / s,
                rank_d / s,
                self.rank_fast / s,
                np.log1p(n_par),
                np.log1p(n_ch),
                data_in / s,
                data_out / s,
            ]
        )
        self.task_static = np.clip(static, -FEATURE_CLIP, FEATURE_CLIP).astype(np.float32)
        self.edge_index = np.stack([np.repeat(np.arange(n), np.diff(cp.succ_ptr)), cp.succ_idx]).astype(np.int64)

        speed_max = float(cp.speed.max())
        price_max = float(cp.price_per_hour.max())
        cap_feat = np.zeros((m, 3)) if classic else self.cap / self.cap_norm
        if classic:
            cap_feat[:, 0] = 1.0
        self.node_static = np.column_stack(
            [
                cap_feat,
                cp.speed / speed_max,
                cp.price_per_hour / price_max if price_max > 0 else np.zeros(m),
            ]
        )
        self._hist = np.zeros((m, history_len), dtype=np.float32)
        self._hist_at = -np.inf
        self._opened = np.zeros(m, dtype=bool)
        self._attempts_seen = 0

    # ---- the full observation -------------------------------------------------------------

    def build(self, dp: DecisionPoint) -> Observation:
        """The observation of the decision point."""
        n, m = self.cp.n_tasks, self.cp.n_nodes
        cands, legal, arrival = self._candidates(dp)
        k = len(cands)
        run, run_node, run_end = self._running(dp)

        x = np.empty((n, len(TASK_FEATURES)), dtype=np.float32)
        x[:, : len(TASK_STATIC)] = self.task_static
        x[:, len(TASK_STATIC) :] = self._task_dynamic(dp, cands, run, run_end)
        node_x, util, up_now, used_cpu = self._nodes(dp, run_node, run_end)
        hist = self._history(dp.now, util)

        pair_x = np.zeros((k, m, len(PAIR_FEATURES)), dtype=np.float32)
        est_start = est_finish = np.zeros((k, m))
        if k:
            with np.errstate(invalid="ignore"):  # inf - inf where a node can never take a task: clipped below
                times = self._pair_times(dp, cands, arrival)
                est_start, est_finish = times.start, times.finish
                pair_x = self._pair_columns(
                    dp,
                    times,
                    legal.astype(np.float64),
                    arrival,
                    self._transfer_share(dp, cands),
                    times.best[:, None],
                    times.avail[None, :],
                    times.cost_max[:, None],
                    (dp.avoid_node[cands][:, None] == np.arange(m)[None, :]),
                    times.obest[:, None],
                )
        return Observation(
            task_x=x,
            edge_index=self.edge_index,
            node_x=node_x,
            node_history=hist,
            candidates=cands,
            pair_x=pair_x,
            global_x=self._global(dp, run, up_now, used_cpu),
            legal=legal,
            wait_legal=dp.wait_legal(legal, est_finish),
            wake_s=dp.wake_s,
            est_start_s=est_start,
            est_finish_s=est_finish,
            visible=self.visible(dp),
        )

    # ---- parts of a decision state ------------------------------------------------------

    def visible(self, dp: DecisionPoint) -> BoolArray | None:
        """The tasks of the workflows submitted by now and not yet finished (None when the problem is one
        workflow: then that is every task whenever a decision is asked). The policy's summary averages the task
        embeddings over these, so a stream's future and finished workflows neither dilute what it sees nor
        cost it anything: workflows share no edges, so the message passing of the visible tasks is the same on
        the whole DAG or on their part of it."""
        cp = self.cp
        if cp.n_workflows == 1:
            return None
        done = np.bincount(cp.task_wf[dp.status == DONE], minlength=cp.n_workflows)
        open_wf = (cp.wf_submit_s <= dp.now) & (done < self.wf_size)
        return np.asarray(open_wf[cp.task_wf], dtype=bool)

    def window_priority(self, dp: DecisionPoint) -> FloatArray:
        """Each task's priority in the offered window (higher first; `self.window`): the upward rank, or under
        `srpt` the workflow's place by work left (least first) above the upward rank."""
        if self.window == "rank":
            return self.rank_u
        cp = self.cp
        left = dp.work_left(self._work)
        place = np.empty(cp.n_workflows)
        place[np.argsort(left, kind="stable")] = np.arange(cp.n_workflows, 0, -1)  # the least work left: highest
        return np.asarray(place[cp.task_wf] * self._rank_span + self.rank_u)

    def _candidates(self, dp: DecisionPoint) -> tuple[IntArray, BoolArray, FloatArray]:
        """Offered tasks (the decision point's window by `window_priority`), their legal rows, arrivals."""
        order = dp.window(self.window_priority(dp), self.topo_pos, self.max_candidates, compiled=False)
        return dp.ready[order], dp.legal[order], dp.arrival_s[order]

    def _running(self, dp: DecisionPoint) -> tuple[IntArray, IntArray, FloatArray]:
        """Running tasks, their nodes and predicted ends (the view dp.predicted_end_s gives, vectorised)."""
        run = np.array(dp.running, dtype=np.int64)
        run_node = dp.node_of[run]
        run_end = np.maximum(dp.start_s[run] + self.cp.exec_s[run, run_node] * dp.slow_factor[run_node], dp.now)
        return run, run_node, run_end

    def _task_dynamic(
        self, dp: DecisionPoint, cands: IntArray, run: IntArray, run_end: FloatArray
    ) -> npt.NDArray[np.float32]:
        """The TASK_DYNAMIC columns of every task, (n, 8)."""
        n, s, now = self.cp.n_tasks, self.scale_s, dp.now
        out = np.empty((n, len(TASK_DYNAMIC)), dtype=np.float32)
        out[:, :4] = _STATE_ONE_HOT[dp.status]
        cand_flag = np.zeros(n)
        cand_flag[cands] = 1.0
        remaining = np.zeros(n)
        remaining[run] = (run_end - now) / s
        dyn = np.column_stack(
            [
                cand_flag,
                remaining,
                np.maximum(self.submit_s - now, 0.0) / s,
                (self.deadline_s - now) / s,
            ]
        )
        out[:, 4:] = np.clip(dyn, -FEATURE_CLIP, FEATURE_CLIP)
        return out

    def _nodes(
        self, dp: DecisionPoint, run_node: IntArray, run_end: FloatArray
    ) -> tuple[npt.NDArray[np.float32], FloatArray, BoolArray, FloatArray]:
        """Node features (m, F_n), and the cpu utilisation, up-now flags and used cpu they came from."""
        m, s, now, clip = self.cp.n_nodes, self.scale_s, dp.now, FEATURE_CLIP
        cpu_cap = self.cap[:, 0]
        used_cpu = cpu_cap - dp.free[:, 0]
        util = used_cpu / cpu_cap
        up_now = dp.node_up & ~(dp.node_available_s > now)
        boot_wait = np.where(dp.node_up, np.maximum(dp.node_available_s - now, 0.0) / s, clip)
        busy_until = np.zeros(m)
        if len(run_node):
            np.maximum.at(busy_until, run_node, (run_end - now) / s)
        n_running = np.bincount(run_node, minlength=m).astype(np.float64)
        self._note_opened(dp, run_node)
        free_feat = np.zeros((m, 3))
        if self.classic:
            free_feat[:, 0] = dp.free[:, 0]
        else:
            free_feat = dp.free / self.cap_norm
        nodes = np.column_stack(
            [
                free_feat,
                self.node_static,
                n_running / cpu_cap,
                util,
                up_now.astype(np.float64),
                boot_wait,
                busy_until,
                self._opened.astype(np.float64),
            ]
        )
        return np.clip(nodes, -clip, clip).astype(np.float32), util, up_now, used_cpu

    def _global(
        self, dp: DecisionPoint, run: IntArray, up_now: BoolArray, used_cpu: FloatArray
    ) -> npt.NDArray[np.float32]:
        s, n_f = self.scale_s, float(self.cp.n_tasks)
        not_done = dp.status != DONE
        glob = np.array(
            [
                (dp.now - self.t0_s) / s,
                float(dp.n_done) / n_f,
                len(dp.ready) / n_f,
                len(run) / n_f,
                np.log1p(n_f) / 8.0,
                np.log1p(float(self.cp.n_nodes)) / 5.0,
                float(up_now.mean()),
                float(self.rank_fast[not_done].max(initial=0.0)) / s,
                float(self.work_share_s[not_done].sum()) / s,
                float(used_cpu.sum() / self.cap[:, 0].sum()),
            ]
        )
        return np.clip(glob, -FEATURE_CLIP, FEATURE_CLIP).astype(np.float32)

    # ---- helpers ----------------------------------------------------------------------

    def _pair_times(self, dp: DecisionPoint, cands: IntArray, arrival: FloatArray) -> _PairTimes:
        """Estimated start and finish (k, m) of the candidates on every node, and what the pair features need."""
        cp, now = self.cp, dp.now
        req = self.req[cands]
        room_s = dp.room_times(req)  # (k, m)
        avail = np.where(dp.node_up, np.maximum(dp.node_available_s, now), np.inf)
        fits = self.ever_fits[cands] & dp.node_up[None, :]
        start = np.maximum(np.maximum(arrival, avail[None, :]), room_s)
        start = np.where(fits, np.maximum(start, now), np.inf)
        exec_s = cp.exec_s[cands]
        est_finish = start + exec_s
        cost = exec_s * cp.price_per_hour[None, :]
        oct_ = self.oct[cands]
        return _PairTimes(
            start=start,
            finish=est_finish,
            exec_s=exec_s,
            room_s=room_s,
            fits=fits,
            cost=cost,
            best=est_finish.min(axis=1),
            avail=avail,
            cost_max=np.where(fits, cost, 0.0).max(axis=1),
            oct=oct_,
            obest=(est_finish + oct_).min(axis=1),
        )

    def _pair_columns(
        self,
        dp: DecisionPoint,
        p: _PairTimes,
        can_start: FloatArray,
        arrival: FloatArray,
        share: FloatArray,
        best: FloatArray,
        avail: FloatArray,
        cost_max: FloatArray,
        overran: BoolArray,
        obest: FloatArray,
    ) -> npt.NDArray[np.float32]:
        """PAIR_FEATURES stacked on a new last axis, element-wise over the pairs given (a (k, m) grid or a list)."""
        s, now, clip = self.scale_s, dp.now, FEATURE_CLIP
        pair = np.stack(
            [
                (p.start - now) / s,
                (p.finish - now) / s,
                p.exec_s / s,
                np.maximum(arrival - now, 0.0) / s,
                share,
                can_start,
                np.where(np.isfinite(best), p.finish - best, np.inf) / s,
                (np.maximum(p.room_s, avail) - now) / s,
                np.divide(p.cost, cost_max, out=np.zeros_like(p.cost), where=cost_max > 0),
                p.fits.astype(np.float64),
                overran.astype(np.float64),
                p.oct / s,
                np.where(np.isfinite(obest), p.finish + p.oct - obest, np.inf) / s,
            ],
            axis=-1,
        )
        return np.clip(np.nan_to_num(pair, nan=clip, posinf=clip), -clip, clip).astype(np.float32)

    def _transfer_share(self, dp: DecisionPoint, cands: IntArray) -> FloatArray:
        """Per (candidate, node): share of the candidate's input bytes produced on other nodes."""
        cp, m = self.cp, self.cp.n_nodes
        lo, hi = cp.pred_ptr[cands], cp.pred_ptr[cands + 1]
        lens = hi - lo
        out = np.zeros((len(cands), m))
        if lens.sum() == 0:
            return out
        rows = np.repeat(np.arange(len(cands)), lens)
        edges = np.repeat(lo - np.cumsum(np.r_[0, lens[:-1]]), lens) + np.arange(lens.sum())
        data = cp.pred_data[edges]
        src = dp.node_of[cp.pred_idx[edges]]
        on_node = np.bincount(rows * m + src, data, minlength=len(cands) * m).reshape(len(cands), m)
        total = np.bincount(rows, data, minlength=len(cands))[:, None]
        np.divide(total - on_node, total, out=out, where=total > 0)
        return out

    def _history(self, now: float, util: FloatArray) -> npt.NDArray[np.float32]:
        if self.history_len == 0:
            return self._hist
        if now != self._hist_at:
            self._hist = np.roll(self._hist, -1, axis=1)
            self._hist_at = now
        self._hist[:, -1] = util
        return self._hist.copy()

    def _note_opened(self, dp: DecisionPoint, run_node: IntArray) -> None:
        """Nodes that ran anything (billing runs from a node's first start)."""
        self._note_attempts(dp)
        self._opened[run_node] = True

    def _note_attempts(self, dp: DecisionPoint) -> None:
        """Nodes of the attempts recorded since the last look (the running ones are marked by the caller)."""
        attempts = dp.attempts
        for a in attempts[self._attempts_seen :]:
            self._opened[a.node] = True
        self._attempts_seen = len(attempts)

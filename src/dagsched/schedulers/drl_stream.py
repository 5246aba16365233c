"""A learned dispatch index for a shared cluster: each task's order, hold and node; each workflow's cap and admission.

At each decision every ready task is scored from its workflow's, its own and the cluster's state
(`policy.stream_index.FEATURES`: work and critical path left, age, slack, class, width; tail, best-node time,
data in; utilisation, queue, measured arrival rate, speed spread) and the tasks are served by score, highest
first. The hold is `srpt_hold`'s (a task waits for a node that cannot start it now when that node would finish
it sooner by more than a margin of its run time; it asks to be woken and reserves that node), with the margin
a second output of the network per task, so it can grow or shrink with the load, the queue and the task.
A task not held goes to one of the `candidates` startable nodes that finish it first, chosen by the network's
node score (`NODE_FEATURES`: how much later it finishes, whether it takes room on a GPU node for a task that
needs none, how full the node is left, its speed).
Two levers the order cannot pull, per workflow with a ready task, from its `WORKFLOW_FEATURES` (its own state and
the cluster's): a parallelism cap, a hard limit as `fair_cap`'s (a workflow whose dominant share of the up nodes
has reached the network's factor times its weighted fair share, weight = work left^-2, starts nothing more at this
decision; `levers.weighted_fair_caps`, `levers.over_cap`), and for a workflow none of whose tasks has started an
admission (it waits while the busy share of cores is at least the network's threshold and a started workflow with
a task ready has less work left than the network's ratio times its own; `levers.admission_holds`; never while
nothing runs). At their initial parameters the two heads are `fair_cap`'s cap (factor 4) and `srpt_admit`'s rule
(0.85, ratio 1). `cap=False` and `admit=False` switch them off (the ablations); weights without the two heads
(the shipped ones, trained before them) run with both off.

Source: Decima (Mao et al., SIGCOMM 2019) learned a job order and each job's parallelism limit from state and
needed the arrival rate as an input to carry over between loads; the index, the cap and the features follow it;
admission as in query schedulers that learn when a query starts (BQSched); the network is small enough for
evolution strategies (GATES, IJCAI 2025, trained a dynamic cloud-workflow policy with ES). Trained by
`dagsched.rl.stream_train`: imitation of srpt_hold's order and node, then ES with common random numbers on
streams (docs/shared-cluster.md, "The learned dispatch index", "Parallelism caps and admission").
Complexity: O(r F H) per decision for the scores of r ready tasks (F features, H hidden units), the work left
summed over the tasks of the workflows with a ready task only, srpt_hold's O(p) earliest starts on p nodes per
served task where a busy node could be worth waiting for, O(w F + running) for the levers of w workflows (Python
floats per workflow); per placed task O(p log p) for its candidates. Per-stream
constants (tails, best-node times, data in) are computed once at reset. Ties: equal scores by task index;
equal node scores by the earlier finish, then the lowest node index.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.stream_index import SHIPPED, WORKFLOW_COLUMNS, FloatArray, IndexNet, ReadyGroups, StreamContext
from dagsched.schedulers.base import register
from dagsched.schedulers.fair import ALPHA
from dagsched.schedulers.levers import (
    admission_holds,
    busy_share,
    held_by_workflow,
    one_over_cap,
    up_capacity,
    weighted_fair_caps,
)
from dagsched.schedulers.srpt_hold import HOLD_MARGIN, SRPTHold
from dagsched.sim.decision import Decision, DecisionPoint

CANDIDATES = 3
"""The node is chosen among this many earliest-finish startable nodes."""


@register
class DRLStream(SRPTHold):
    name = "drl_stream"
    best_for = (
        "a little shorter than srpt_hold on every shared cluster measured; the stream rule to use is fair_cap_gpu_first"
    )
    uses_seed = False
    default_weights: Path = SHIPPED
    """the weights loaded when none are given"""

    def __init__(
        self,
        weights: str | Path | IndexNet | None = None,
        hold: bool = True,
        candidates: int = CANDIDATES,
        cap: bool = True,
        admit: bool = True,
    ) -> None:
        super().__init__(margin=HOLD_MARGIN if hold else None)
        self.net = weights if isinstance(weights, IndexNet) else IndexNet.load(weights or self.default_weights)
        """`hold=False` is the ablation that never holds (the margin head unused)"""
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, got {candidates!r}")
        self.candidates = candidates
        self.cap, self.admit = cap and self.net.has_levers, admit and self.net.has_levers
        """False: the ablation without the parallelism cap, or without the admission hold (that head unused)"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.ctx = StreamContext(cp)
        self.wf_of: list[int] = cp.task_wf.tolist()  # list reads of ints cost a tenth of numpy scalar ones
        self.ready_now: list[int] = []
        self.margins_now: list[float] = []
        self.admitted = np.zeros(cp.n_workflows, dtype=bool)
        self.held = np.zeros((cp.n_workflows, 3))
        self.cap_share: dict[int, float] = {}
        self.closed: set[int] = set()
        self.totals: dict[bytes, FloatArray] = {}

    def decide(self, dp: DecisionPoint) -> Decision:
        self.view = dp
        self.free = dp.free.copy()  # room left as this decision places tasks (the node features read it)
        if self.cap or self.admit:
            self.held = held_by_workflow(self.cp, dp)
            up = dp.node_up.tobytes()
            if up not in self.totals:  # what the up nodes hold changes only when a node fails or returns
                self.totals[up] = up_capacity(dp)
            self.total = self.totals[up]
            self.busy = busy_share(dp, self.total)
        self.tasks = np.asarray(dp.ready_tasks(), dtype=np.int64)
        self.groups = self.ctx.groups(self.tasks, ascending=True)  # the ready tasks are ascending
        return super().decide(dp)

    def work_left(self, dp: DecisionPoint) -> FloatArray:
        """The work left of the workflows with a ready task, all the order and the levers read (the others' rows are
        0): O(their tasks), not O(n), from the ready tasks' groups `decide` made."""
        left = np.zeros(self.cp.n_workflows)
        left[self.groups.wfs] = dp.work_left_of(self.work, self.groups.wfs)
        return left

    def order(self, ready: list[int]) -> Iterator[int]:
        tasks, groups = self.tasks, self.groups  # of `ready` (`decide`)
        x = self.ctx.features(self.view, tasks, self.left, groups)
        self.util_gpu = float(x[0, 14])
        if self.margin is not None:  # each task's margin, looked up by its place in `ready` when it is placed
            self.ready_now, self.margins_now = ready, self.net.margins(x).tolist()
        ranked = tasks[np.lexsort((tasks, -self.net.scores(x)))].tolist()
        if not (self.cap or self.admit):
            yield from ranked
            return
        self.closed = self.shut(x, groups)
        wf_of, closed = self.wf_of, self.closed  # `assigned` adds a workflow that reaches its cap
        for t in ranked:
            if wf_of[t] not in closed:
                yield t

    def shut(self, x: FloatArray, groups: ReadyGroups) -> set[int]:
        """The workflows that start nothing at this decision: held for admission, or at their cap (which they stay
        at, as what they hold only grows). Sets each one's cap share. O(w F) for the w workflows with a ready task,
        numpy on the heads' rows and Python floats per workflow (w is a handful: numpy's call costs more)."""
        wfs = groups.wfs
        u = x[groups.first[:, None], WORKFLOW_COLUMNS]
        left = self.left[wfs]
        ws: list[int] = wfs.tolist()
        shut: set[int] = set()
        admitted = self.admitted[wfs]
        if self.admit and self.view.running and not admitted.all():  # all admitted: none waits (its rows unused)
            saturated, ratio = self.net.admission(u)
            holds = admission_holds(left, admitted, self.busy, saturated, ratio)
            shut.update(w for w, h in zip(ws, holds.tolist(), strict=True) if h)
        if self.cap:
            shares = weighted_fair_caps(left, self.net.cap_factors(u), ALPHA).tolist()
            self.cap_share = dict(zip(ws, shares, strict=True))
            held, total = self.held, self.total
            shut.update(w for w, c in zip(ws, shares, strict=True) if one_over_cap(held[w], total, c))
        return shut

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.free[nd] -= self.view.request(t)
        w = self.wf_of[t]
        self.admitted[w] = True
        self.held[w] += self.view.request(t)
        if self.cap and one_over_cap(self.held[w], self.total, self.cap_share[w]):
            self.closed.add(w)  # at its cap: the rest of its tasks wait for a later decision (a hard limit)

    def use_learned_margin(self, t: int) -> None:
        """Hold t at its learned margin (this decision's margin head, read by `holds`); nothing when the hold is off."""
        if self.margin is not None:
            self.margin = self.margins_now[bisect_left(self.ready_now, t)]

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        """None when t waits for a clearly faster busy node (srpt_hold's rule at t's learned margin), else the
        best-scored of the `candidates` earliest-finish startable nodes."""
        self.use_learned_margin(t)
        if self.margin is not None and self.holds(t, startable):
            return None
        exec_s = self.cp.exec_s[t].tolist()
        nodes = sorted(startable, key=exec_s.__getitem__)[: self.candidates]  # stable: equal times by node index
        if len(nodes) == 1:
            return nodes[0]
        z = self.ctx.node_features(t, nodes, self.free, self.util_gpu)
        return nodes[int(np.argmax(self.net.node_scores(z)))]

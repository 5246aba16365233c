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
Complexity: O(r F H) per decision for the scores of r ready tasks (F features, H hidden units) plus
srpt_hold's O(r p) earliest starts on p nodes, O(w F + running) for the levers of w workflows; per placed task
O(p log p) for its candidates. Per-stream
constants (tails, best-node times, data in) are computed once at reset. Ties: equal scores by task index;
equal node scores by the earlier finish, then the lowest node index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.stream_index import SHIPPED, WORKFLOW_COLUMNS, IndexNet, StreamContext
from dagsched.schedulers.base import register
from dagsched.schedulers.fair import ALPHA
from dagsched.schedulers.levers import (
    admission_holds,
    busy_share,
    capped_order,
    held_by_workflow,
    one_over_cap,
    over_cap,
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
        "shared clusters under load with nodes of several speeds: the shortest mean completion, by a small margin; on "
        "homogeneous ones fair_cap (its learned cap and admission, drl_stream@levers, are no shorter than fair_cap)"
    )
    uses_seed = False

    def __init__(
        self,
        weights: str | Path | IndexNet | None = None,
        hold: bool = True,
        candidates: int = CANDIDATES,
        cap: bool = True,
        admit: bool = True,
    ) -> None:
        super().__init__(margin=HOLD_MARGIN if hold else None)
        self.net = weights if isinstance(weights, IndexNet) else IndexNet.load(weights or SHIPPED)
        """`hold=False` is the ablation that never holds (the margin head unused)"""
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, got {candidates!r}")
        self.candidates = candidates
        self.cap, self.admit = cap and self.net.has_levers, admit and self.net.has_levers
        """False: the ablation without the parallelism cap, or without the admission hold (that head unused)"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.ctx = StreamContext(cp)
        self.margin_of: dict[int, float] = {}
        self.admitted = np.zeros(cp.n_workflows, dtype=bool)
        self.held = np.zeros((cp.n_workflows, 3))
        self.cap_share = np.full(cp.n_workflows, np.inf)

    def decide(self, dp: DecisionPoint) -> Decision:
        self.view = dp
        self.free = dp.free.copy()  # room left as this decision places tasks (the node features read it)
        if self.cap or self.admit:
            self.held = held_by_workflow(self.cp, dp)
            self.total = up_capacity(dp)
            self.busy = busy_share(dp, self.total)
        return super().decide(dp)

    def order(self, ready: list[int]) -> Iterator[int]:
        tasks = np.asarray(ready, dtype=np.int64)
        x = self.ctx.features(self.view, tasks, self.left)
        self.util_gpu = float(x[0, 14])
        if self.margin is not None:
            self.margin_of = dict(zip(ready, self.net.margins(x).tolist(), strict=True))
        ranked = tasks[np.lexsort((tasks, -self.net.scores(x)))]
        if not (self.cap or self.admit):
            yield from ranked.tolist()
            return
        wf_of = self.cp.task_wf
        wfs, first = np.unique(wf_of[tasks], return_index=True)
        u = x[first][:, WORKFLOW_COLUMNS]
        left = self.left[wfs]
        shut = np.zeros(self.cp.n_workflows, dtype=bool)  # workflows that start nothing at this decision
        if self.admit and self.view.running:
            saturated, ratio = self.net.admission(u)
            shut[wfs] = admission_holds(left, self.admitted[wfs], self.busy, saturated, ratio)
        if self.cap:
            self.cap_share = np.full(self.cp.n_workflows, np.inf)
            self.cap_share[wfs] = weighted_fair_caps(left, self.net.cap_factors(u), ALPHA)
            shut |= over_cap(self.held, self.total, self.cap_share)  # stays so while what it holds only grows
        yield from capped_order((t for t in ranked.tolist() if not shut[wf_of[t]]), self.at_cap, strict=True)

    def at_cap(self, t: int) -> bool:
        w = int(self.cp.task_wf[t])
        return self.cap and one_over_cap(self.held[w], self.total, self.cap_share[w])

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.free[nd] -= self.view.request(t)
        w = int(self.cp.task_wf[t])
        self.admitted[w] = True
        self.held[w] += self.view.request(t)

    def choose_node(self, t: int, startable: list[int]) -> int | None:
        """None when t waits for a clearly faster busy node (srpt_hold's rule at t's learned margin), else the
        best-scored of the `candidates` earliest-finish startable nodes."""
        if self.margin is not None:
            self.margin = self.margin_of[t]
            if super().choose_node(t, startable) is None:
                return None
        exec_s = self.cp.exec_s[t, startable]
        first = np.argsort(exec_s, kind="stable")[: self.candidates]
        if len(first) == 1:
            return startable[int(first[0])]
        nodes = [startable[int(i)] for i in first]
        z = self.ctx.node_features(t, nodes, self.free, self.util_gpu)
        return nodes[int(np.argmax(self.net.node_scores(z)))]

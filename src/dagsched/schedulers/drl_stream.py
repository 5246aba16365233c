"""A learned dispatch index for a shared cluster: a small network scores each ready task, sets its hold, picks its node.

At each decision every ready task is scored from its workflow's, its own and the cluster's state
(`policy.stream_index.FEATURES`: work and critical path left, age, slack, class, width; tail, best-node time,
data in; utilisation, queue, measured arrival rate, speed spread) and the tasks are served by score, highest
first. The hold is `srpt_hold`'s (a task waits for a node that cannot start it now when that node would finish
it sooner by more than a margin of its run time; it asks to be woken and reserves that node), with the margin
a second output of the network per task, so it can grow or shrink with the load, the queue and the task.
A task not held goes to one of the `candidates` startable nodes that finish it first, chosen by the network's
node score (`NODE_FEATURES`: how much later it finishes, whether it takes room on a GPU node for a task that
needs none, how full the node is left, its speed).

Source: Decima (Mao et al., SIGCOMM 2019) learned a job order from state and needed the arrival rate as an
input to carry over between loads; the index and its features follow it, the network is small enough for
evolution strategies (GATES, IJCAI 2025, trained a dynamic cloud-workflow policy with ES). Trained by
`dagsched.rl.stream_train`: imitation of srpt_hold's order and node, then ES with common random numbers on
streams (docs/shared-cluster.md, "The learned dispatch index").
Complexity: O(r F H) per decision for the scores of r ready tasks (F features, H hidden units) plus
srpt_hold's O(r p) earliest starts on p nodes; per placed task O(p log p) for its candidates. Per-stream
constants (tails, best-node times, data in) are computed once at reset. Ties: equal scores by task index;
equal node scores by the earlier finish, then the lowest node index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.stream_index import SHIPPED, IndexNet, StreamContext
from dagsched.schedulers.base import register
from dagsched.schedulers.srpt_hold import HOLD_MARGIN, SRPTHold
from dagsched.sim.decision import Decision, DecisionPoint

CANDIDATES = 3
"""The node is chosen among this many earliest-finish startable nodes."""


@register
class DRLStream(SRPTHold):
    name = "drl_stream"
    best_for = "shared clusters under load: the shortest mean completion, by a small margin"
    uses_seed = False

    def __init__(
        self, weights: str | Path | IndexNet | None = None, hold: bool = True, candidates: int = CANDIDATES
    ) -> None:
        super().__init__(margin=HOLD_MARGIN if hold else None)
        self.net = weights if isinstance(weights, IndexNet) else IndexNet.load(weights or SHIPPED)
        """`hold=False` is the ablation that never holds (the margin head unused)"""
        if candidates < 1:
            raise ValueError(f"candidates must be at least 1, got {candidates!r}")
        self.candidates = candidates

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.ctx = StreamContext(cp)
        self.margin_of: dict[int, float] = {}

    def decide(self, dp: DecisionPoint) -> Decision:
        self.view = dp
        self.free = dp.free.copy()  # room left as this decision places tasks (the node features read it)
        return super().decide(dp)

    def order(self, ready: list[int]) -> Iterator[int]:
        tasks = np.asarray(ready, dtype=np.int64)
        x = self.ctx.features(self.view, tasks, self.left)
        self.util_gpu = float(x[0, 14])
        if self.margin is not None:
            self.margin_of = dict(zip(ready, self.net.margins(x).tolist(), strict=True))
        yield from tasks[np.lexsort((tasks, -self.net.scores(x)))].tolist()

    def assigned(self, t: int, nd: int) -> None:
        super().assigned(t, nd)
        self.free[nd] -= self.view.request(t)

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

"""SJF-CP: the workflow with the shortest remaining critical path first; inside it, the longest tail first;
each task to the startable node that finishes it first.

Shortest-remaining-processing-time applied to DAG jobs, as Decima's "SJF-CP" baseline (Mao et al.,
SIGCOMM 2019, section 7.2): a job's size is what is left of its critical path, so short jobs jump
the queue and mean completion time falls (SRPT is optimal for it on one server, Schrage 1968).
Within a workflow, tasks go by their remaining tail (upward rank on the fastest hosts, free
transfers), so its own critical path moves first. The remaining path is recomputed at each
decision from the ready and running tasks (`progress.remaining_critical_path_s`).
O(r log r + r p) per decision. Ties: equal remaining paths by the workflow's position, equal tails
by task index, equal finish times by the lowest node index. Large workflows can starve under a
steady stream of small ones: that is SRPT's known price, measured by the fairness column.
"""

from __future__ import annotations

from dagsched.model.compiled import CompiledProblem
from dagsched.model.graph import fastest_exec_s
from dagsched.schedulers.base import register
from dagsched.schedulers.greedy import ListScheduler
from dagsched.schedulers.progress import remaining_critical_path_s, tail_path_s
from dagsched.sim.decision import Decision, DecisionPoint


@register
class SJFCriticalPath(ListScheduler):
    name = "sjf_cp"
    best_for = "nothing; a baseline of the literature on shared clusters (Decima's SJF-CP)"
    uses_seed = False

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.fastest_s = fastest_exec_s(cp)
        self.tail_s = tail_path_s(cp)
        self.left_s: dict[int, float] = {}

    def decide(self, dp: DecisionPoint) -> Decision:
        self.left_s = remaining_critical_path_s(dp, self.tail_s, self.fastest_s)
        return super().decide(dp)

    def order(self, ready: list[int]) -> list[int]:
        task_wf, left, tail = self.cp.task_wf, self.left_s, self.tail_s
        return sorted(ready, key=lambda t: (left[int(task_wf[t])], int(task_wf[t]), -float(tail[t]), t))

"""What is left of each workflow, from the live state: the online baselines' shared priorities.

Several workflows share the cluster; the online baselines rank them by what they still need:
remaining work (weighted fair sharing, Tetris's SRTF term: `DecisionPoint.work_left`, one bincount) or
remaining critical path (SJF-CP, here).
"""

from __future__ import annotations

from dagsched.model.compiled import CompiledProblem, FloatArray
from dagsched.model.graph import fastest_exec_s
from dagsched.model.ranks import longest_to_exit_s
from dagsched.sim.decision import DecisionPoint


def tail_path_s(cp: CompiledProblem) -> FloatArray:
    """Longest path from each task's start to its workflow's end, every task on its fastest host, free transfers:
    what is left of the workflow's critical path once this task starts."""
    return longest_to_exit_s(cp, fastest_exec_s(cp))


def remaining_critical_path_s(dp: DecisionPoint, tail_s: FloatArray, fastest_s: FloatArray) -> dict[int, float]:
    """Remaining critical path of every workflow with a ready or running task.

    Every unfinished task has an ancestor (or is one) that is ready or running, and a path only
    shortens going down, so the longest remaining path starts at one of those: a ready task's full
    tail, or a running task's tail with what it has done taken off (its predicted time left).
    """
    task_wf = dp.cp.task_wf
    out: dict[int, float] = {}
    for t in dp.ready:
        w = int(task_wf[t])
        out[w] = max(out.get(w, 0.0), float(tail_s[t]))
    for t in dp.running:
        w = int(task_wf[t])
        left = float(tail_s[t] - fastest_s[t]) + max(dp.predicted_end_s(t) - dp.now, 0.0)
        out[w] = max(out.get(w, 0.0), left)
    return out

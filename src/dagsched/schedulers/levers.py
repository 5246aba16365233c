"""What the stream rules with a parallelism cap or an admission hold share: pure functions, no scheduler.

A cap is a priority or a hard limit (`capped_order`): as a priority, a task of a workflow at its cap is served after
every task of the workflows below theirs, so the cap decides who gets the room that frees up and only room nobody
else can use goes past it; as a limit (Decima's fair baselines), that room stays free for the next decision. The
shares are heSRPT's (Berg, Vesilo and Harchol-Balter, "heSRPT: Optimal Parallel Scheduling of Jobs With Known
Sizes", arXiv 1903.09346, 2019; its slowdown version in Performance Evaluation 144, 2020): with m jobs whose speed-up
on k servers is k^p, the allocation that minimises mean flow time gives every job a share, the largest to the
smallest job, rather than everything to the smallest (SRPT, p = 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np
import numpy.typing as npt

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.decision import DecisionPoint

FloatArray = npt.NDArray[np.float64]


def hesrpt_shares(m: int, p: float) -> FloatArray:
    """Cluster shares of m jobs ranked by work left (rank 0 the least), summing to 1, for a speed-up k^p (0 <= p < 1):
    rank r gets ((m - r) / m)^b - ((m - r - 1) / m)^b with b = 1 / (1 - p). p = 0 shares equally; p -> 1 gives all to
    rank 0. O(m)."""
    if m < 1:
        return np.zeros(0)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"p must be in [0, 1), got {p!r}")
    b = 1.0 / (1.0 - p)
    k = np.arange(m, 0, -1, dtype=np.float64)  # rank 0 is heSRPT's job m, the smallest
    return np.asarray((k / m) ** b - ((k - 1) / m) ** b, dtype=np.float64)


def held_by_workflow(cp: CompiledProblem, dp: DecisionPoint) -> FloatArray:
    """(workflows, 3): the cpu, memory and GPUs each workflow's running tasks hold. O(running)."""
    held = np.zeros((cp.n_workflows, 3))
    task_wf = cp.task_wf
    for t in dp.running:
        held[int(task_wf[t])] += dp.request(t)
    return held


def up_capacity(dp: DecisionPoint) -> FloatArray:
    """(3,): cpu, memory and GPUs of the nodes that are up (at least a tiny positive number each)."""
    total: FloatArray = np.maximum(np.asarray(dp.cap)[np.asarray(dp.node_up)].sum(axis=0), 1e-12)
    return total


def capped_order(order: Iterable[int], at_cap: Callable[[int], bool], strict: bool = False) -> Iterator[int]:
    """`order`, except that a task for which `at_cap` holds when its turn comes (read after the tasks before it were
    placed) is put off until every other task has had its turn; the put-off ones then follow in their order, unless
    `strict`: then they wait for a later decision (a hard limit, which may leave room idle)."""
    later: list[int] = []
    for t in order:
        if at_cap(t):
            later.append(t)
        else:
            yield t
    if not strict:
        yield from later

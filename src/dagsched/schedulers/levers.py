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
    """(workflows, 3): the cpu, memory and GPUs each workflow's running tasks hold (summed in the order they started,
    as a loop would: the same floats). O(running)."""
    held = np.zeros((cp.n_workflows, 3))
    running = np.asarray(dp.running, dtype=np.int64)
    if len(running):
        np.add.at(held, cp.task_wf[running], dp.requests(running))
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


def weighted_fair_caps(left: FloatArray, factor: FloatArray | float, alpha: float) -> FloatArray:
    """Cap shares of the workflows with a ready task (`left`: their work left): `factor` times each one's weighted
    fair share, weight = work left^alpha over the sum of the weights (`fair_cap`'s, and `drl_stream`'s with a factor
    per workflow). O(w)."""
    weight = np.maximum(left, 1e-9) ** alpha
    return np.asarray(factor * weight / weight.sum(), dtype=np.float64)


def over_cap(held: FloatArray, total: FloatArray, cap_share: FloatArray) -> npt.NDArray[np.bool_]:
    """Per workflow (rows of `held`, what its running tasks hold): whether its dominant share of `total` has reached
    its `cap_share`. A workflow holding nothing is never over its cap, so a hard cap never stalls a run. O(w)."""
    return np.asarray(held.any(axis=1) & (np.max(held / total, axis=1) >= cap_share), dtype=bool)


def one_over_cap(held: FloatArray, total: FloatArray, cap_share: float) -> bool:
    """`over_cap` of one workflow (`held`: its row), as a decision places its tasks one by one (in Python floats: the
    same divisions, a sixth of numpy's time on three numbers). O(1)."""
    row, cap = held.tolist(), total.tolist()
    return any(row) and max(h / c for h, c in zip(row, cap, strict=True)) >= cap_share


def busy_share(dp: DecisionPoint, total: FloatArray) -> float:
    """The share of the up nodes' cores in use (`total`: `up_capacity(dp)`), what an admission hold reads. O(p)."""
    return 1.0 - float(np.asarray(dp.free)[np.asarray(dp.node_up), 0].sum()) / float(total[0])


def admission_holds(
    left: FloatArray,
    admitted: npt.NDArray[np.bool_],
    busy: float,
    saturated: FloatArray | float,
    ratio: FloatArray | float = 1.0,
) -> npt.NDArray[np.bool_]:
    """Per workflow with a ready task (`left`: its work left; `admitted`: whether a task of it has started): whether it
    waits at this decision. One not yet admitted waits while the busy share of cores `busy` is at least its
    `saturated` and an admitted workflow with a ready task has less work left than `ratio` times its own
    (`srpt_admit`'s rule at ratio 1; `drl_stream` sets both per workflow). O(w)."""
    if not admitted.any():
        return np.zeros(len(left), dtype=bool)
    shortest = float(left[admitted].min())
    return np.asarray(~admitted & (busy >= saturated) & (left > ratio * shortest), dtype=bool)

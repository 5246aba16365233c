"""`fair_cap_local` serving the scarce GPUs first, to the workflow with the least GPU work left.

On hetero-16 and large-100 the default mix's GPU work binds: at offered GPU load 0.85 the CPUs are offered 0.65-0.7, and
the ML pipelines (a serial chain of training tasks of one or two GPUs each), a fifth of the workflows, are 25-48 % of
the sum of completions on training streams, their GPU tasks waiting mostly with no GPU free. `fair_cap_local` orders
every task by fair's key over the workflow's work in core-seconds, which neither sees the GPUs nor serves the GPU queue
by size. Two changes:

- the ready tasks that need a GPU are served before the others, the workflow with the least GPU work left (GPUs x
  run time of its tasks not done) first, ties by the longer tail: shortest remaining work first on the binding
  resource. They are outside the cap (a workflow's GPU tasks run one or two at a time) and take a GPU node's room
  before tasks that could run anywhere;
- a workflow's size, which fair's weight, the cap and the response ratio read, counts its GPU-seconds at the
  cluster's cores per GPU (speed-weighted), so that a workflow holding the GPUs long counts as large.

Everything else is `fair_cap_local`'s: order, cap, hold and node rule. On a cluster without GPUs both changes are
void and the attempts are `fair_cap_local`'s (tested). The two were chosen on training streams (hetero-16, Poisson,
seeds 301-320): mean completion 0.960 x `srpt_hold`'s against `fair_cap_local`'s 0.987, GPU tasks first alone 0.967,
the GPU-seconds in the size alone 0.975. Held out (seeds 401-410, 150 workflows, load 0.85) it is 0.977 [0.962, 0.991]
and 0.993 x `fair_cap_local` on hetero-16 (Poisson, bursty), 0.963 [0.905, 0.997] and 0.890 x `srpt_hold`, and
0.994 x `fair_cap_local` on large-100; on the `shared` suite's hetero-16 streams 0.996 and 0.994
(docs/shared-cluster.md, "Serving the scarce GPUs first").
Source: shortest remaining processing time (Schrage 1968) on the bottleneck resource; dominant-resource thinking
(DRF, Ghodsi et al. 2011) for what a workflow's size is on a cluster of several resources.
Complexity: `fair_cap_local`'s plus O(r log r) per decision to order the r ready GPU tasks and O(their workflows'
tasks) for their GPU work left. Ties: equal GPU work left by the longer tail, then the task index.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.schedulers.base import register
from dagsched.schedulers.fair_cap_local import FairCapLocal
from dagsched.sim.decision import DecisionPoint


def cores_per_gpu(cp: CompiledProblem) -> float:
    """The cluster's speed-weighted cores over its speed-weighted GPUs (0 without GPUs): what a GPU-second counts in
    core-seconds when a workflow's size is summed."""
    gpus = float(cp.cap[:, 2] @ cp.speed)
    return float(cp.cap[:, 0] @ cp.speed) / gpus if gpus > 0 else 0.0


@register
class FairCapGPUFirst(FairCapLocal):
    name = "fair_cap_gpu_first"
    best_for = (
        "shared clusters under load, the stream rule to use: 0.963 and 0.890 x srpt_hold's mean completion on held-out "
        "hetero-16 streams (Poisson, bursty), 0.977 and 0.993 x fair_cap_local's; fair_cap_local itself where no task "
        "needs a GPU"
    )
    gpu_first: bool = True
    """serve the ready GPU tasks first, by their workflow's GPU work left (off: the ablation with the size alone)"""
    gpu_in_size: bool = True
    """count a workflow's GPU-seconds in its size (off: the ablation with GPU tasks first alone)"""

    def reset(self, cp: CompiledProblem, dp: DecisionPoint, seed: int = 0) -> None:
        super().reset(cp, dp, seed)
        self.needs_gpu = cp.req[:, 2] > 0
        self.gpu_work = np.asarray(cp.req[:, 2] * cp.runtime_s, dtype=np.float64)
        if self.gpu_in_size and self.needs_gpu.any():
            self.work = self.work + self.gpu_work * cores_per_gpu(cp)

    def order(self, ready: list[int]) -> Iterator[int]:
        gpu = [t for t in ready if self.needs_gpu[t]] if self.gpu_first else []
        if not gpu:
            yield from super().order(ready)
            return
        task_wf = self.cp.task_wf
        workflows = np.unique(task_wf[gpu])
        left = dict(zip(workflows.tolist(), self.dp.work_left_of(self.gpu_work, workflows).tolist(), strict=True))
        yield from sorted(gpu, key=lambda t: (left[int(task_wf[t])], -float(self.tail_s[t]), t))
        yield from super().order([t for t in ready if not self.needs_gpu[t]])

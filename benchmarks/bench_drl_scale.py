"""drl against HEFT as DAGs grow wider than the policy's candidate window, with and without deferral windows.

The policy sees `max_candidates` (16) ready tasks at a time. With `defer_windows` a wait defers only
those and the next ready tasks are offered at the same instant; without it one wait idles every node
the offered tasks did not want. Classic mode (exact), one instance per (family, size, cluster).
Prints makespan ratios to HEFT; asserts nothing.

Run: .venv/bin/python benchmarks/bench_drl_scale.py [layered:500:hetero-16 etl_star:500:large-100 ...]
"""

from __future__ import annotations

import sys

import torch

from dagsched.bench.suites import CLASSIC, ProblemSpec
from dagsched.schedulers import make_scheduler, simulate
from dagsched.schedulers.drl import DRLScheduler

DEFAULT_CASES = (
    "layered:200:large-100",
    "etl_star:200:large-100",
    "random:200:hetero-16",
    "layered:500:hetero-16",
    "etl_star:500:large-100",
    "layered:1000:large-100",
)


def main(cases: list[str]) -> None:
    torch.set_num_threads(1)
    header = ("family", "tasks", "cluster", "heft", "drl/heft no defer", "drl/heft defer")
    print("{:12s} {:>5s} {:10s} {:>9s} {:>18s} {:>15s}".format(*header))
    for case in cases:
        family, n, cluster = case.split(":")
        cp = ProblemSpec("synthetic", family, cluster, n_tasks=int(n), gen_seed=2).build()
        config = CLASSIC.config()
        heft = simulate(cp, make_scheduler("heft"), config, 1).metrics.makespan
        plain = simulate(cp, DRLScheduler(defer_windows=False), config, 1).metrics.makespan
        defer = simulate(cp, DRLScheduler(defer_windows=True), config, 1).metrics.makespan
        row = f"{family:12s} {int(n):5d} {cluster:10s} {heft:9.1f} {plain / heft:18.3f} {defer / heft:15.3f}"
        print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(DEFAULT_CASES))

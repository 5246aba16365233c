"""Tuning weighted fair sharing's alpha (share proportional to remaining work ** alpha), as Decima tuned its baseline.

Runs `fair` with each alpha of a grid on streams of the default mix that the benchmark suites do not use
(seeds 101-102, Poisson and bursty, load 0.85, homog-8 and hetero-16, the `shared` mode) and prints the mean
steady-state completion time per alpha and its geometric-mean ratio to the best alpha on each stream.
`dagsched.schedulers.fair.ALPHA` is the winner of this grid. Prints; asserts nothing.

Run: .venv/bin/python benchmarks/experiments/fair_alpha.py [--workflows 100] [--alphas -2,-1,-0.5,0,0.5,1]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from dagsched.bench.suites import SHARED, stream_spec
from dagsched.schedulers import fair, simulate
from dagsched.sim.metrics import stream_metrics


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workflows", type=int, default=100)
    parser.add_argument("--alphas", default="-2,-1,-0.5,0,0.5,1")
    args = parser.parse_args()
    alphas = [float(a) for a in args.alphas.split(",")]
    specs = [
        stream_spec(cluster, args.workflows, 0.85, arrival, seed)
        for cluster in ("homog-8", "hetero-16")
        for arrival in ("poisson", "bursty")
        for seed in (101, 102)
    ]
    completion = np.zeros((len(specs), len(alphas)))
    for i, spec in enumerate(specs):
        cp = spec.build()
        for j, alpha in enumerate(alphas):
            scheduler = fair.WeightedFair()
            scheduler.alpha = alpha
            result = simulate(cp, scheduler, SHARED.config(), spec.gen_seed or 0)
            assert result.valid, result.violations[:3]
            completion[i, j] = stream_metrics(cp, result.trace, SHARED.config()).completion_mean
        print(spec.problem_id, " ".join(f"{x:8.0f}" for x in completion[i]), flush=True)
    ratio = completion / completion.min(axis=1, keepdims=True)
    print(f"\n{'alpha':>6}{'mean completion s':>20}{'geo-mean ratio to best':>25}")
    for j, alpha in enumerate(alphas):
        geo = math.exp(float(np.mean(np.log(ratio[:, j]))))
        print(f"{alpha:>6g}{completion[:, j].mean():>20.0f}{geo:>25.3f}")
    print(f"\nshipped ALPHA = {fair.ALPHA:g}")


if __name__ == "__main__":
    main()

"""Teachers that beat HEFT: rollout over base heuristics against HEFT and the best base, by CCR.

Classic mode (exact runtimes), generated DAGs of every family at two sizes and CCR 0.1 to 10 on a
cluster, seeds 1..S. For each problem: HEFT's makespan, the best of the base heuristics' (each run
whole) and the fortified rollout's (`dagsched.schedulers.rollout`); printed per CCR: the mean ratio
to HEFT with a 95 % bootstrap interval, wins/ties/losses against HEFT, and the median planning time.
Prints; asserts nothing.

Run: .venv/bin/python benchmarks/experiments/rollout_teacher.py [--sizes 30,80] [--seeds 3] [--cluster hetero-16]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.generate.topologies import FAMILIES
from dagsched.model import Problem, compile_problem
from dagsched.schedulers import simulate
from dagsched.schedulers.rollout import BASES, Rollout
from dagsched.sim.config import SimConfig

CCRS = (0.1, 1.0, 5.0, 10.0)


def _ci(ratios: list[float], rng: np.random.Generator) -> tuple[float, float, float]:
    a = np.asarray(ratios)
    boots = rng.choice(a, size=(2000, len(a))).mean(axis=1)
    return float(a.mean()), float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="30,80")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--cluster", default="hetero-16")
    args = parser.parse_args()
    classic = SimConfig(classic=True)
    cluster = cluster_preset(args.cluster)
    rng = np.random.default_rng(0)
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"classic mode on {args.cluster}; families {', '.join(FAMILIES)}; sizes {sizes}; seeds 1..{args.seeds}")
    print(f"bases: {', '.join(BASES)}\n")
    print(
        f"{'CCR':>5}{'n':>4}  {'best base / HEFT [95% CI]':<30}{'rollout / HEFT [95% CI]':<30}"
        f"{'W/T/L':>10}{'plan s':>9}"
    )
    overall: list[float] = []
    for ccr in CCRS:
        best_r, roll_r, secs, wtl = [], [], [], [0, 0, 0]
        for family in FAMILIES:
            for n in sizes:
                for seed in range(1, args.seeds + 1):
                    wf = generate_workflow(family, n, seed=seed, ccr=ccr)
                    cp = compile_problem(Problem(workflows=[wf], cluster=cluster))
                    heft = simulate(cp, "heft", classic).metrics.makespan
                    best = min(simulate(cp, b, classic).metrics.makespan for b in BASES)
                    t0 = time.perf_counter()
                    result = simulate(cp, Rollout(), classic)
                    secs.append(time.perf_counter() - t0)
                    assert result.valid
                    ms = result.metrics.makespan
                    best_r.append(best / heft)
                    roll_r.append(ms / heft)
                    wtl[0 if ms < heft - 1e-6 else 1 if ms <= heft + 1e-6 else 2] += 1
        overall += roll_r
        b, r = _ci(best_r, rng), _ci(roll_r, rng)
        print(
            f"{ccr:>5g}{len(roll_r):>4}  {b[0]:.4f} [{b[1]:.4f}, {b[2]:.4f}]{'':<6}{r[0]:.4f} [{r[1]:.4f}, {r[2]:.4f}]"
            f"{'':<6}{'/'.join(map(str, wtl)):>10}{statistics.median(secs):>9.2f}"
        )
    o = _ci(overall, rng)
    print(
        f"\nall {len(overall)} problems: rollout / HEFT {o[0]:.4f} [{o[1]:.4f}, {o[2]:.4f}], worst {max(overall):.4f}"
    )


if __name__ == "__main__":
    main()

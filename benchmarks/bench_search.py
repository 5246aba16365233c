"""Search planners' speed: MCTS decisions/s and simulations/s, fork cost, tabu evaluations/s.

Prints figures; asserts nothing about wall-clock time. Run: python benchmarks/bench_search.py
"""

from __future__ import annotations

import time

from dagsched.bench.suites import ProblemSpec
from dagsched.schedulers import simulate
from dagsched.schedulers.mcts import MCTSUCT, MCTSConfig
from dagsched.schedulers.tabu import Tabu
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator


def fork_us(n_tasks: int, repeats: int = 300) -> float:
    cp = ProblemSpec("synthetic", "layered", "hetero-16", n_tasks=n_tasks, gen_seed=1).build()
    sim = Simulator(cp, SimConfig(noise_cv=0.2), 0)
    sim.step()
    t0 = time.perf_counter()
    for _ in range(repeats):
        sim.fork()
    return (time.perf_counter() - t0) / repeats * 1e6


def main() -> None:
    for n in (100, 1000):
        print(f"fork, {n} tasks: {fork_us(n):.1f} us")
    cp = ProblemSpec("synthetic", "layered", "hetero-16", n_tasks=50, gen_seed=1).build()
    for sims in (16, 64):
        sched = MCTSUCT(MCTSConfig(sims=sims, plan_work=float("inf")))
        t0 = time.perf_counter()
        r = simulate(cp, sched, SimConfig(classic=True), validate=False)
        dt = time.perf_counter() - t0
        print(
            f"mcts_uct sims={sims}, 50 tasks x 16 nodes: {r.metrics.decisions / dt:.1f} decisions/s, "
            f"{sched.sims_done / dt:.0f} simulations/s"
        )
    tabu = Tabu()
    t0 = time.perf_counter()
    simulate(cp, tabu, SimConfig(classic=True), validate=False)
    dt = time.perf_counter() - t0
    print(f"tabu, 50 tasks x 16 nodes: {tabu.evaluations / dt:.0f} evaluations/s ({tabu.evaluations} in {dt:.2f} s)")


if __name__ == "__main__":
    main()

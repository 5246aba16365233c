"""What the Gymnasium environment costs: one observation's build on large problems, and steps per second.

Prints figures; asserts nothing about wall-clock time (the machine is shared). Workloads: 1,000-task
workflows of several families on the 100-node `large-100` cluster, driven through the environment by
random legal actions (real decision states, most nodes busy after the first hundred decisions); then
whole episodes of the default environment and of a noisy hetero-16 one.
Run: .venv/bin/python benchmarks/bench_env.py [--decisions N] [--families layered,random] [--no-env]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.rl.env import SchedulingEnv


def _pct(xs: list[float]) -> str:
    a = np.array(xs) * 1e3
    return f"p50 {np.percentile(a, 50):6.2f} ms  p99 {np.percentile(a, 99):6.2f} ms  max {a.max():6.2f} ms"


def latency(family: str, decisions: int) -> None:
    wf = generate_workflow(family, 1000, seed=1)
    cp = compile_problem(Problem(workflows=[wf], cluster=cluster_preset("large-100")))
    env = SchedulingEnv(
        max_tasks=cp.n_tasks,
        max_nodes=cp.n_nodes,
        max_edges=max(len(cp.succ_idx), 1),
        max_candidates=16,
        n_tasks=(2, 2),
        baseline="lower_bound",
    )
    obs, _ = env.reset(seed=0, options={"problem": cp})
    rng = np.random.default_rng(0)
    build, step = [], []
    for _ in range(decisions):
        sim, builder = env.sim, env._builder
        t0 = time.perf_counter()
        builder.build(sim.decision_point())  # the state the environment just built: time it alone
        t1 = time.perf_counter()
        obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        t2 = time.perf_counter()
        build.append(t1 - t0)
        step.append(t2 - t1)
        if terminated or truncated:
            break
    print(f"{family:9s} {cp.n_tasks} tasks, {len(cp.succ_idx):5d} edges, {cp.n_nodes} nodes, {len(build)} decisions")
    print(f"  observation build   {_pct(build)}")
    print(f"  one env.step        {_pct(step)}")


def env_throughput(label: str, env: SchedulingEnv, seconds: float) -> None:
    rng = np.random.default_rng(0)
    steps = episodes = 0
    reset_s = 0.0
    t_end = time.perf_counter() + seconds
    t_start = time.perf_counter()
    while time.perf_counter() < t_end:
        t0 = time.perf_counter()
        obs, _ = env.reset(seed=episodes)
        reset_s += time.perf_counter() - t0
        episodes += 1
        while True:
            obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            steps += 1
            if terminated or truncated:
                break
    wall = time.perf_counter() - t_start
    print(
        f"{label:40s} {steps / wall:7.0f} steps/s incl. resets ({episodes} episodes, "
        f"reset incl. HEFT baseline {reset_s / episodes * 1e3:.1f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--families", default="layered,etl_star,random")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--no-env", action="store_true", help="skip the environment throughput figures")
    args = parser.parse_args()
    for family in args.families.split(","):
        latency(family, args.decisions)
    if args.no_env:
        return
    print()
    env_throughput("default env (small-3, 10-40 tasks)", SchedulingEnv(), args.seconds)
    env_throughput(
        "hetero-16, 50-128 tasks, noise 0.3",
        SchedulingEnv(cluster="hetero-16", n_tasks=(50, 128), sim={"noise_cv": 0.3}),
        args.seconds,
    )


if __name__ == "__main__":
    main()

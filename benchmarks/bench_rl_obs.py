"""Learned-scheduler figures: observation build time, policy inference latency, environment steps/s.

Prints figures; asserts nothing about wall-clock time (the machine is shared). Inference runs
on one torch thread (two threads on two cores were measured 5 to 20 times slower).
Workloads: 1,000-task workflows of several families on the 100-node `large-100` cluster, driven
through the environment by an untrained policy's greedy choices (real decision states, most
nodes busy after the first hundred decisions).
The DRL scheduler's own decision path (FeatureBuilder.decision + PolicyInference, against this
reference path) is timed by benchmarks/bench_inference.py.
Run: .venv/bin/python benchmarks/bench_rl_obs.py [--decisions N] [--families layered,random]
     [--hidden 64 --layers 2 --conv gat] [--no-env]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy.files import count_parameters
from dagsched.policy.gnn import SchedulingPolicy, choose
from dagsched.rl.env import SchedulingEnv


def _pct(xs: list[float]) -> str:
    a = np.array(xs) * 1e3
    return f"p50 {np.percentile(a, 50):6.2f} ms  p99 {np.percentile(a, 99):6.2f} ms  max {a.max():6.2f} ms"


def latency(family: str, decisions: int, policy: SchedulingPolicy) -> None:
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
    env.reset(seed=0, options={"problem": cp})
    build, infer = [], []
    for _ in range(decisions):
        sim, builder = env.sim, env._builder
        t0 = time.perf_counter()
        ob = builder.build(sim)  # the same state the environment just built: time it alone
        t1 = time.perf_counter()
        pick = choose(policy, ob)
        t2 = time.perf_counter()
        build.append(t1 - t0)
        infer.append(t2 - t1)
        if pick is None:
            action = env.wait_action
        else:
            k = int(np.flatnonzero(ob.candidates == pick[0])[0])
            action = k * env.config.max_nodes + pick[1]
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            break
    total = [a + b for a, b in zip(build, infer, strict=True)]
    print(f"{family:9s} {cp.n_tasks} tasks, {len(cp.succ_idx):5d} edges, {cp.n_nodes} nodes, {len(build)} decisions")
    print(f"  observation build   {_pct(build)}")
    print(f"  policy inference    {_pct(infer)}")
    print(f"  build + inference   {_pct(total)}")


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
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--conv", choices=["gat", "gcn"], default="gat")
    parser.add_argument("--no-env", action="store_true", help="skip the environment throughput figures")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    policy = SchedulingPolicy(hidden=args.hidden, layers=args.layers, conv=args.conv).eval()
    print(f"policy: {policy.config}, {count_parameters(policy)} parameters, torch threads {torch.get_num_threads()}\n")
    for family in args.families.split(","):
        latency(family, args.decisions, policy)
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

"""Training and serving figures of the learned scheduler: env steps/s, RLlib training steps/s, drl latency, memory.

Prints figures (and `--json` writes them); asserts nothing about wall-clock time (the machine is shared).

- environment steps/s: random legal play in `dagsched/Scheduling-v0` (20-60-task training families on
  hetero-16, cloud mode), observation padding included;
- training steps/s: env steps sampled and trained per second of `algo.train()` wall time, PPO on RLlib
  with 0 and with 1 remote env runners (short runs; the first iteration is a warm-up and not counted);
- inference latency: the `drl` scheduler (shipped model, or --policy) on a 1,000-task workflow on the
  100-node large-100 cluster, per pick (one GNN forward + observation) and per decide() call (all picks
  at one instant), p50 / p99;
- peak memory: ru_maxrss of this process and of its children (Ray workers) after training.

Run: .venv/bin/python benchmarks/bench_rl_train.py [--iterations 3] [--family layered] [--no-rllib]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from typing import Any

import numpy as np
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy.files import load_cached_policy
from dagsched.rl.env import SchedulingEnv
from dagsched.rl.train import TrainConfig, algorithm_policy, build_algorithm, env_fields
from dagsched.schedulers import simulate
from dagsched.schedulers.drl import DRLScheduler
from dagsched.sim.config import SimConfig


def env_steps_per_s(steps: int = 3000) -> float:
    cfg = TrainConfig()
    env = SchedulingEnv(env_fields(cfg, (20, 60), "hetero-16", "cloud"))
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    t0 = time.perf_counter()
    for i in range(steps):
        obs, _, term, trunc, _ = env.step(np.int64(rng.choice(np.flatnonzero(obs["action_mask"]))))
        if term or trunc:
            obs, _ = env.reset(seed=i)
    return steps / (time.perf_counter() - t0)


def training_steps_per_s(env_runners: int, iterations: int, policy_path: str | None) -> dict[str, float]:
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    cfg = TrainConfig(env_runners=env_runners, envs_per_runner=4, rl_batch=1000, rl_minibatch=250, rl_epochs=4)
    policy = load_cached_policy(policy_path)
    t0 = time.perf_counter()
    algo = build_algorithm(cfg, policy.config, env_fields(cfg, (20, 60), "hetero-16", "cloud"))
    build_s = time.perf_counter() - t0
    algo.train()  # warm-up
    t0 = time.perf_counter()
    steps = 0
    for _ in range(iterations):
        result = algo.train()
        steps += int(result["env_runners"].get("num_env_steps_sampled", cfg.rl_batch))
    dt = time.perf_counter() - t0
    algorithm_policy(algo, policy.config)  # the weights come back out without Ray
    algo.stop()
    return {
        "env_runners": env_runners,
        "build_s": build_s,
        "steps_per_s": steps / dt,
        "s_per_iteration": dt / iterations,
    }


def inference_latency(family: str, policy_path: str | None) -> dict[str, Any]:
    torch.set_num_threads(1)
    wf = generate_workflow(family, 1000, 1)
    cp = compile_problem(Problem(name="lat", workflows=[wf], cluster=cluster_preset("large-100")))
    sched = DRLScheduler(policy=load_cached_policy(policy_path))
    picks: list[float] = []
    orig = sched._pick

    def timed(obs: Any) -> int:
        t = time.perf_counter()
        a = orig(obs)
        picks.append(time.perf_counter() - t)
        return a

    sched._pick = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    result = simulate(cp, sched, SimConfig(), 1, validate=False)
    wall = time.perf_counter() - t0
    decide = np.array(result.trace.decision_latency_s) * 1e3
    forward = np.array(picks) * 1e3
    return {
        "tasks": cp.n_tasks,
        "nodes": cp.n_nodes,
        "decide_calls": len(decide),
        "picks": len(forward),
        "decide_p50_ms": float(np.percentile(decide, 50)),
        "decide_p99_ms": float(np.percentile(decide, 99)),
        "pick_forward_p50_ms": float(np.percentile(forward, 50)),
        "pick_forward_p99_ms": float(np.percentile(forward, 99)),
        "wall_s": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--family", default="layered")
    parser.add_argument("--policy", default=None, help="policy stem (default: the shipped model)")
    parser.add_argument("--no-rllib", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    out: dict[str, Any] = {"env_steps_per_s": env_steps_per_s()}
    print(f"environment: {out['env_steps_per_s']:.0f} steps/s (random legal play, 20-60 tasks, hetero-16)")
    out["latency"] = inference_latency(args.family, args.policy)
    lat = out["latency"]
    print(
        f"drl on {lat['tasks']} tasks x {lat['nodes']} nodes: per pick p50 {lat['pick_forward_p50_ms']:.2f} ms "
        f"p99 {lat['pick_forward_p99_ms']:.2f} ms; per decide() p50 {lat['decide_p50_ms']:.2f} ms "
        f"p99 {lat['decide_p99_ms']:.2f} ms ({lat['picks']} picks in {lat['decide_calls']} decisions)"
    )
    if not args.no_rllib:
        out["training"] = []
        for runners in (0, 1):
            r = training_steps_per_s(runners, args.iterations, args.policy)
            out["training"].append(r)
            print(
                f"PPO, {runners} remote env runner(s): {r['steps_per_s']:.0f} env steps/s trained, "
                f"{r['s_per_iteration']:.1f} s per 1,000-step iteration (build {r['build_s']:.1f} s)"
            )
    self_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    out["peak_rss_mib"] = {"self": self_mib, "largest_child": child_mib}
    print(f"peak memory: this process {self_mib:.0f} MiB, largest child process {child_mib:.0f} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()

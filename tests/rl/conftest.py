"""Shared helpers of the learned-scheduler tests: one torch thread, small environments, random legal play."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from dagsched.model import Cluster, Node, Problem, Task, Workflow
from dagsched.rl.env import SchedulingEnv

torch.set_num_threads(1)


def random_legal_play(
    env: SchedulingEnv, seed: int, check: Callable[[SchedulingEnv, dict[str, np.ndarray]], None] | None = None
) -> tuple[list[dict[str, np.ndarray]], list[float], dict[str, Any], bool]:
    """Play one episode with uniformly random legal actions; returns observations, rewards, last info, terminated."""
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    observations, rewards = [obs], []
    while True:
        if check is not None:
            check(env, obs)
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        obs, reward, terminated, truncated, info = env.step(action)
        observations.append(obs)
        rewards.append(reward)
        if terminated or truncated:
            return observations, rewards, info, terminated


@pytest.fixture
def play() -> Callable[..., Any]:
    return random_legal_play


def two_speed_problem() -> Problem:
    """Independent tasks a, b (runtime 8, 1 cpu) on a fast node (speed 4) and a slow one (speed 1), 1 cpu each."""
    tasks = [Task(id="a", runtime=8.0, cpu=1), Task(id="b", runtime=8.0, cpu=1)]
    nodes = [Node(id="fast", cpu=1, mem=4, speed=4.0), Node(id="slow", cpu=1, mem=4, speed=1.0)]
    return Problem(name="two-speed", workflows=[Workflow(name="w", tasks=tasks)], cluster=Cluster(nodes=nodes))


@pytest.fixture
def two_speed() -> Problem:
    return two_speed_problem()

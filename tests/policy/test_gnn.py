"""The GNN policy (`dagsched.policy.gnn`): batched forward equals one observation at a time and the fast path,
for each architecture; an untrained policy drives a whole valid episode, padded or not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dagsched.policy.gnn import MASK_LOGIT, SchedulingPolicy, choose
from dagsched.rl.env import SchedulingEnv
from dagsched.sim.validate import validate_trace

VARIANTS = {
    "gat": ({}, {}),
    "gcn-lstm": ({"conv": "gcn", "history_len": 4}, {"history_len": 4}),
    "gat-mlp-history": ({"history_len": 2, "history_encoder": "mlp", "layers": 1}, {"history_len": 2}),
}


def _batch(observations):
    return {k: torch.from_numpy(np.stack([o[k] for o in observations])) for k in observations[0]}


def _collect(env, seeds, steps=3):
    """Padded and unpadded observations from a few states of a few episodes."""
    padded, exact = [], []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        for _ in range(steps):
            padded.append(obs)
            exact.append(env.observation)
            obs, _, terminated, truncated, _ = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
            if terminated or truncated:
                break
    return padded, exact


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_batched_forward_equals_per_observation_and_fast_path(variant, small):
    """Logits and values of a padded batch equal those of each observation alone, and of the unpadded
    fast path on the same state (mapped to the padded layout); illegal actions get MASK_LOGIT."""
    torch.manual_seed(0)
    arch, env_kw = VARIANTS[variant]
    policy = SchedulingPolicy(**arch).eval()
    env = SchedulingEnv(small, cluster=None, random_nodes=(2, 9), **env_kw)
    padded, exact = _collect(env, seeds=[0, 1, 2])
    K, M = env.config.max_candidates, env.config.max_nodes
    with torch.no_grad():
        logits, values = policy(_batch(padded))
        for i, (obs, ob) in enumerate(zip(padded, exact, strict=True)):
            one_logits, one_value = policy(_batch([obs]))
            torch.testing.assert_close(logits[i], one_logits[0], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(values[i], one_value[0], rtol=1e-5, atol=1e-5)
            mask = torch.from_numpy(obs["action_mask"]).bool()
            assert torch.all(logits[i][~mask] == MASK_LOGIT)
            assert torch.all(logits[i][mask] > MASK_LOGIT / 2)
            fast, fast_value = policy.forward_single(ob)
            k, m = len(ob.candidates), ob.n_nodes
            pairs = logits[i, :-1].reshape(K, M)[:k, :m].reshape(-1)
            torch.testing.assert_close(pairs, fast[:-1], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(logits[i, -1], fast[-1], rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(values[i], fast_value, rtol=1e-5, atol=1e-5)


def test_untrained_greedy_rollout_completes_and_validates(small):
    """A freshly initialised policy acting greedily through the environment finishes the episode, and
    the fast-path chooser drives the same kind of episode; both traces pass the validator."""
    torch.manual_seed(2)
    policy = SchedulingPolicy().eval()
    env = SchedulingEnv(small, cluster="hetero-16", n_workflows=2, n_tasks=(8, 16), sim={"noise_cv": 0.3})
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        terminated = truncated = False
        steps = 0
        while not (terminated or truncated):
            with torch.no_grad():
                logits, _ = policy(_batch([obs]))
            action = int(torch.argmax(logits[0]))
            assert obs["action_mask"][action]
            if seed == 1:  # the unpadded chooser must pick the same pair
                assert choose(policy, env.observation) == env.decode_action(action)
            obs, _, terminated, truncated, info = env.step(action)
            steps += 1
        assert terminated, info
        assert validate_trace(env.cp, env.sim.trace).ok
        assert info["makespan"] > 0 and steps >= env.cp.n_tasks

"""The inference path (`dagsched.policy.inference`): numpy message passing over legal pairs gives the PyG
network's masked logits and greedy action at every state of an episode, fused rounds equal PyG's layers, and
the numpy weights are read when the path is made."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.policy.features import FeatureBuilder
from dagsched.policy.gnn import MASK_LOGIT, SchedulingPolicy
from dagsched.policy.inference import DENSE_MAX_TASKS, PolicyInference
from dagsched.sim.config import SimConfig
from dagsched.sim.engine import Simulator

from .test_gnn import VARIANTS


def _decision_states(problem_args, history_len=0, seed=0, max_states=60):
    """(builder, reference observation, decision inputs) at successive decision states of one random-legal episode.

    Two builders follow the same simulator (one builds observations, one decision inputs), so both keep their
    own history; states come from the whole episode, i.e. also after many decisions were made.
    """
    family, n_tasks, cluster, config = problem_args
    cp = compile_problem(
        Problem(workflows=[generate_workflow(family, n_tasks, seed + 1)], cluster=cluster_preset(cluster))
    )
    sim = Simulator(cp, config, seed)
    ref = FeatureBuilder(cp, sim.classic, 16, history_len)
    fast = FeatureBuilder(cp, sim.classic, 16, history_len)
    rng = np.random.default_rng(seed)
    states = []
    while not sim.done and len(states) < max_states and sim.step():
        dp = sim.decision_point()
        if not dp.any_legal:
            continue
        states.append((ref.build(dp), fast.decision(dp)))
        i, nd = np.argwhere(dp.legal)[rng.integers(dp.legal.sum())]
        sim.start(int(dp.ready[i]), int(nd))
    return fast, states


PROBLEMS = {
    "dense-cloud": ("layered", 24, "hetero-16", SimConfig(noise_cv=0.3)),
    "dense-classic": ("etl_star", 40, "small-3", SimConfig(classic=True)),
    "sparse-cloud": ("random", 150, "large-100", SimConfig(straggler_rate_per_h=6.0, noise_cv=0.2)),
}


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_inference_path_equals_forward_single(variant, problem):
    """PolicyInference (numpy, fused dense or CSR message passing, legal pairs only) gives forward_single's
    masked logits within 1e-5 and the same greedy action, at every state of an episode (mid-episode too),
    for GAT and GCN policies with and without node history, on dense (<= DENSE_MAX_TASKS) and sparse DAGs."""
    torch.manual_seed(4)
    arch, env_kw = VARIANTS[variant]
    policy = SchedulingPolicy(**arch).eval()
    builder, states = _decision_states(PROBLEMS[problem], env_kw.get("history_len", 0))
    assert (builder.cp.n_tasks <= DENSE_MAX_TASKS) == problem.startswith("dense")
    inference = PolicyInference(policy, builder)
    assert len(states) >= 20
    for ob, d in states:
        with torch.inference_mode():
            ref = policy.forward_single(ob)[0]
        fast = torch.from_numpy(inference.logits(d))
        torch.testing.assert_close(fast, ref, rtol=1e-5, atol=1e-5)
        assert int(torch.argmax(fast)) == int(torch.argmax(ref))
        assert torch.all(fast[~torch.from_numpy(ob.action_mask())] == MASK_LOGIT)


def test_fused_message_passing_equals_pyg_layers():
    """One fused round of the inference path equals PyG's GATConv / GCNConv along and against the edges
    (self-loops added as _embed_tasks does), concatenated, within 1e-5: dense and CSR forms, duplicate edges too,
    and scores large enough that the softmax must be shifted by its maximum."""
    from torch_geometric.utils import add_self_loops

    from dagsched.policy.inference import _EXP_SAFE, _Graph, _weights

    rng = np.random.default_rng(0)
    for conv in ("gat", "gcn"):
        torch.manual_seed(5)
        policy = SchedulingPolicy(conv=conv, hidden=32).eval()
        w = _weights(policy)
        for n in (30, DENSE_MAX_TASKS + 50):
            src = rng.integers(0, n - 1, size=3 * n)
            dst = src + 1 + rng.integers(0, n - 1 - src)  # a DAG: edges go to higher indices
            edge_index = np.stack([src, dst]).astype(np.int64)
            edge_index = np.concatenate([edge_index, edge_index[:, :3]], axis=1)  # three doubled edges
            graph = _Graph(edge_index, n, w.heads, w.gat, w.slope)
            assert graph.dense == (n <= DENSE_MAX_TASKS)
            loops, _ = add_self_loops(torch.from_numpy(edge_index), num_nodes=n)
            for scale in (1.0, 10.0):  # scores over _EXP_SAFE take the max-shifted softmax
                h = torch.randn(n, 32) * scale
                with torch.inference_mode():
                    want = torch.cat([policy.along[0](h, loops), policy.against[0](h, loops.flip(0))], dim=-1)
                got = graph(w.rounds[0], h.numpy())
                torch.testing.assert_close(torch.from_numpy(got), want, rtol=1e-5, atol=1e-5 * scale)
                if conv == "gat":
                    f = 2 * w.heads
                    scores = np.abs(h.numpy() @ w.rounds[0].w[:, -2 * f :])
                    assert (scores[:, :f].max() + scores[:, f:].max() > _EXP_SAFE) == (scale > 1.0)


def test_inference_reads_the_weights_as_they_are_when_made():
    """The numpy copy of the weights is made again after an in-place change of the policy's parameters."""
    torch.manual_seed(6)
    policy = SchedulingPolicy(hidden=16, heads=1).eval()
    builder, states = _decision_states(PROBLEMS["dense-cloud"], max_states=1)
    ob, d = states[0]
    before = PolicyInference(policy, builder).logits(d)
    with torch.no_grad():
        policy.pair_out[2].bias.add_(1.0)
        ref = policy.forward_single(ob)[0].numpy()
    after = PolicyInference(policy, builder).logits(d)
    legal = ob.legal.reshape(-1)
    assert np.allclose(after[:-1][legal], before[:-1][legal] + 1.0, atol=1e-5)
    assert np.allclose(after, ref, rtol=1e-5, atol=1e-5)

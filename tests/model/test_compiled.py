"""The data-arrival rule of the compiled problem against its definition, one parent or many, latency included."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import data_arrival_s

CLUSTER = cluster_preset("hetero-16").model_copy(update={"latency": 0.013})
CP = compile_problem(Problem(workflows=[generate_workflow("random", 40, seed=5, ccr=2.0)], cluster=CLUSTER))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), not_before=st.floats(0, 500))
def test_input_arrival_is_the_latest_parent_transfer(seed: int, not_before: float) -> None:
    """For every task: max over parents of `data_arrival_s` (nothing on the parent's own node), and never before
    `not_before`, bit for bit; tasks with one parent take the fast path, so both paths are checked."""
    rng = np.random.default_rng(seed)
    node_of = rng.integers(0, CP.n_nodes, CP.n_tasks)
    finish = rng.uniform(0, 1000, CP.n_tasks)
    n_parents = np.diff(CP.pred_ptr)
    assert (n_parents == 1).any() and (n_parents > 1).any()
    for t in range(CP.n_tasks):
        got = CP.input_arrival_s(t, node_of, finish, not_before)
        want = np.full(CP.n_nodes, not_before)
        for k in range(CP.pred_ptr[t], CP.pred_ptr[t + 1]):
            p = CP.pred_idx[k]
            for nd in range(CP.n_nodes):
                src = node_of[p]
                bw = CP.bandwidth[src, nd]
                at = finish[p] if src == nd else finish[p] + CP.pred_data[k] / bw + CP.latency_s
                want[nd] = max(want[nd], at)
        assert np.array_equal(got, want), t
    assert data_arrival_s(10.0, 5e9, 1.25e9, 0.013) == 10.0 + 5e9 / 1.25e9 + 0.013

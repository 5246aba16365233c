"""What the priority policy reads (`dagsched.policy.priority_features`): one row per task of the named features,
the ranks HEFT, CPOP and PEFT order by among them, and rows that do not depend on the unit of time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dagsched.generate import cluster_preset, generate_workflow
from dagsched.model import Problem, compile_problem
from dagsched.model.compiled import CompiledProblem
from dagsched.model.ranks import upward_rank
from dagsched.policy.priority_features import (
    GLOBAL_FEATURES,
    PRIOR_FEATURES,
    TASK_FEATURES,
    n_features,
    prior_columns,
    task_features,
)


def _problem(family: str = "etl_star", n: int = 40, seed: int = 3) -> CompiledProblem:
    wf = generate_workflow(family, n, seed, ccr=1.0)
    return compile_problem(Problem(workflows=[wf], cluster=cluster_preset("hetero-16")))


def _in_other_units(cp: CompiledProblem, k: float) -> CompiledProblem:
    """The same problem with every time k times longer: runtimes, data (so transfers) and the link latency."""
    return dataclasses.replace(
        cp,
        runtime_s=cp.runtime_s * k,
        exec_s=cp.exec_s * k,
        succ_data=cp.succ_data * k,
        pred_data=cp.pred_data * k,
        latency_s=cp.latency_s * k,
    )


@pytest.mark.parametrize("classic", [True, False])
def test_rows_do_not_depend_on_the_unit_of_time(classic: bool) -> None:
    cp = _problem()
    base = task_features(cp, classic)
    scaled = task_features(_in_other_units(cp, 60.0), classic)
    np.testing.assert_allclose(scaled.x, base.x, rtol=1e-5, atol=1e-6)
    assert scaled.scale_s == pytest.approx(60.0 * base.scale_s)
    np.testing.assert_allclose(scaled.rank_u, 60.0 * base.rank_u, rtol=1e-9)


def test_rows_hold_the_named_features_and_heft_rank_leads_the_prior() -> None:
    cp = _problem("layered", 60, 1)
    inputs = task_features(cp, classic=False)
    assert inputs.x.shape == (cp.n_tasks, n_features()) == (cp.n_tasks, len(TASK_FEATURES) + len(GLOBAL_FEATURES))
    col = {name: inputs.x[:, i] for i, name in enumerate(TASK_FEATURES)}
    rank_u = upward_rank(cp)
    np.testing.assert_allclose(inputs.rank_u, rank_u)
    np.testing.assert_allclose(col["rank_u"], rank_u / rank_u.max(), rtol=1e-6)
    assert col["rank_u"].max() == pytest.approx(1.0)
    assert [TASK_FEATURES[i] for i in prior_columns()] == list(PRIOR_FEATURES) and PRIOR_FEATURES[0] == "rank_u"
    n_pred, n_succ = np.diff(cp.pred_ptr), np.diff(cp.succ_ptr)
    assert (col["entry"] == (n_pred == 0)).all() and (col["exit"] == (n_succ == 0)).all()
    np.testing.assert_allclose(col["slack"], 1.0 - col["rank_cpop"], atol=1e-6)
    assert inputs.edge_index.shape == (2, len(cp.succ_idx))
    assert all(cp.succ_idx[cp.succ_ptr[p] : cp.succ_ptr[p + 1]].tolist().count(c) for p, c in inputs.edge_index.T)
    glob = inputs.x[:, len(TASK_FEATURES) :]
    assert (glob == glob[0]).all(), "the cluster summary is the same in every row"


def test_classic_mode_says_so_and_reads_no_resource_shares() -> None:
    cp = _problem()
    classic, cloud = task_features(cp, classic=True), task_features(cp, classic=False)
    cpu, mem = TASK_FEATURES.index("cpu_share"), TASK_FEATURES.index("mem_share")
    flag = len(TASK_FEATURES) + GLOBAL_FEATURES.index("classic")
    assert (classic.x[:, [cpu, mem]] == 0).all() and (classic.x[:, flag] == 1).all()
    assert (cloud.x[:, cpu] > 0).any() and (cloud.x[:, flag] == 0).all()

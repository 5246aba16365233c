"""Expert iteration for the priority policy: the teacher's labels (best distinct orders, never longer than HEFT's,
each reproducible by decoding it), their merge, the label cache a rerun resumes from, the student's loss going
down on a few problems, and the command line."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dagsched.policy.priority_net import PriorityPolicy, load_priority_policy
from dagsched.rl import priority_expert
from dagsched.rl.priority_config import PriorityTrainConfig
from dagsched.rl.priority_curriculum import draw_problem
from dagsched.rl.priority_expert import (
    LabelCache,
    Labels,
    TeacherSettings,
    expert_loss,
    fit,
    merge,
    teach,
    train_expert,
)
from dagsched.rl.priority_train import Prepared, prepare
from dagsched.sim import listsched


def _problems(n: int, seed: int = 0, size: tuple[int, int] = (20, 40)) -> list[Prepared]:
    rng = np.random.default_rng(seed)
    return [prepare(draw_problem(rng, size, (1.0, 10.0), (4.0, 10.0), (2, 6), 0.0, 0.5)) for _ in range(n)]


def _centre(p: Prepared) -> np.ndarray:
    return np.asarray(p.inputs.rank_u / p.inputs.scale_s * 20.0, dtype=np.float64)


def _tiny(tmp_path: Path, **kw: object) -> PriorityTrainConfig:
    cfg = replace(
        PriorityTrainConfig(),
        method="expert",
        min_tasks=15,
        stages=(25,),
        nodes=(2, 4),
        expert_generations=2,
        expert_problems=3,
        teacher_samples=32,
        teacher_rounds=2,
        teacher_keep=3,
        epochs=2,
        batch=2,
        eval_problems=2,
        eval_samples=4,
        out_dir=str(tmp_path / "runs"),
    )
    return replace(cfg, **kw)  # type: ignore[arg-type]


def test_teacher_labels_are_the_best_distinct_orders_and_decode_to_their_spans() -> None:
    """Labels are distinct orders sorted by makespan, the best no longer than HEFT's plan (HEFT's order is one of
    the teacher's candidates) and, over several problems, shorter somewhere; decoding a label's order gives its
    makespan and ready steps."""
    shorter = 0
    for p in _problems(4, seed=1):
        lab = teach(p, _centre(p), TeacherSettings(samples=128, rounds=4, elite=0.1, keep=5), seed=3)
        assert len(lab.spans) == 5 and np.all(np.diff(lab.spans) >= 0)
        assert len({o.tobytes() for o in lab.orders}) == 5
        assert lab.spans[0] <= p.heft_span * (1 + 1e-12)
        shorter += lab.spans[0] < p.heft_span * (1 - 1e-9)
        for order, steps, span in zip(lab.orders, lab.ready_steps, lab.spans, strict=True):
            prio = np.empty(len(order))
            prio[order] = -np.arange(len(order), dtype=float)
            out = listsched.decode(p.decode, prio)
            assert out.orders[0].tolist() == order.tolist()
            assert out.spans[0] == pytest.approx(span, rel=1e-12)
            assert out.ready_steps[0].tolist() == steps.tolist()
    assert shorter >= 1


@settings(max_examples=60, deadline=None)
@given(
    spans=st.lists(st.integers(1, 6), min_size=1, max_size=12),
    cut=st.integers(0, 12),
    keep=st.integers(1, 5),
    seed=st.integers(0, 1000),
)
def test_merge_keeps_the_best_distinct_orders(spans: list[int], cut: int, keep: int, seed: int) -> None:
    """Merging two label sets keeps min(keep, distinct orders) orders, sorted, distinct, the shortest first: the
    best of both never gets lost."""
    rng = np.random.default_rng(seed)
    n = len(spans)
    orders = np.array([rng.permutation(3) for _ in range(n)], dtype=np.int64)  # duplicates likely
    steps = np.zeros((n, 3), dtype=np.int64)
    span = np.asarray(spans, dtype=np.float64) + orders[:, 0] * 0.0  # equal orders may carry different spans
    cut = min(cut, n)
    parts = [Labels(orders[a:b], steps[a:b], span[a:b]) for a, b in ((0, cut), (cut, n)) if b > a]
    merged: Labels | None = None
    for part in parts:
        merged = merge(merged, part, keep)
    assert merged is not None
    distinct = {o.tobytes() for o in orders}
    assert len(merged.spans) == min(keep, len(distinct))
    assert len({o.tobytes() for o in merged.orders}) == len(merged.spans)
    assert np.all(np.diff(merged.spans) >= 0)
    assert merged.spans[0] == span.min()


def test_the_student_loss_goes_down_on_a_tiny_set() -> None:
    """A few epochs on three labelled problems lower the labels' negative log-likelihood; the anchor term is what
    the learned part costs."""
    torch.manual_seed(0)
    problems = _problems(3, seed=2)
    labels = [teach(p, _centre(p), TeacherSettings(64, 2, 0.1, 4), seed=1) for p in problems]
    policy = PriorityPolicy()
    cfg = replace(PriorityTrainConfig(), method="expert", epochs=25, batch=3, lr=3e-3)
    before = np.mean([expert_loss(policy, p, lab, 0.0, 0.0)[1]["nll"] for p, lab in zip(problems, labels, strict=True)])
    rows = fit(policy, problems, labels, cfg, np.random.default_rng(0))
    after = np.mean([expert_loss(policy, p, lab, 0.0, 0.0)[1]["nll"] for p, lab in zip(problems, labels, strict=True)])
    assert len(rows) == 25 and after < 0.9 * before and rows[-1]["loss"] < rows[0]["loss"]
    _, learned = policy.forward_parts(problems[0].x, problems[0].edge_index)
    anchored, _ = expert_loss(policy, problems[0], labels[0], 0.0, 1.0)
    plain, _ = expert_loss(policy, problems[0], labels[0], 0.0, 0.0)
    assert float((anchored - plain).detach()) == pytest.approx(float(learned.pow(2).mean().detach()), rel=1e-5)


def test_a_rerun_labels_nothing_again_and_resumes_its_generations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first run labels every (problem, generation); the same command again reads every label from the cache and the
    generations from their checkpoints (the teacher is never called) and ends with the same weights; a rerun with
    another learning rate is refused by name; a cache asked with other teacher settings labels again."""
    cfg = _tiny(tmp_path)
    first, rec1 = train_expert(cfg)
    t1 = rec1["training"]
    assert t1["labels_computed"] == 6 and t1["labels_cached"] == 0 and t1["generations_run"] == 2
    assert len(list((tmp_path / "runs" / "labels").glob("*.safetensors"))) == 6

    def refuse(*args: object, **kwargs: object) -> Labels:
        raise AssertionError("the teacher ran again")

    monkeypatch.setattr(priority_expert, "teach", refuse)
    again, rec2 = train_expert(cfg)
    t2 = rec2["training"]
    assert t2["labels_computed"] == 0 and t2["labels_cached"] == 6
    assert [r["generation"] for r in t2["history"]] == [0, 1, 2]
    for (k, a), b in zip(first.state_dict().items(), again.state_dict().values(), strict=True):
        assert torch.equal(a, b), k
    monkeypatch.undo()
    with pytest.raises(ValueError, match="lr"):
        train_expert(replace(cfg, lr=1e-2))
    other = LabelCache(tmp_path / "runs" / "labels")
    p = _problems(1)[0]
    other.labels(p, _centre(p), TeacherSettings(32, 2, 0.1, 3))
    other.labels(p, _centre(p), TeacherSettings(32, 2, 0.1, 2))
    other.labels(p, _centre(p), TeacherSettings(32, 2, 0.1, 3))
    assert (other.misses, other.hits) == (2, 1)


def test_the_command_line_runs_expert_iteration_and_the_model_plans(tmp_path: Path) -> None:
    """`dagsched train-priority --method expert` writes a model (its record: generations, labels, the command) that the
    drl scheduler plans with; a bad teacher setting exits 2 naming it."""
    from dagsched.cli import app
    from dagsched.generate import cluster_preset, generate_workflow
    from dagsched.model import Problem, compile_problem
    from dagsched.schedulers import simulate
    from dagsched.schedulers.priority_sampling import PrioritySampling

    out = tmp_path / "m"
    args = ["train-priority", "--method", "expert", "--min-tasks", "15", "--stages", "25", "--nodes", "2-4"]
    args += ["--expert-generations", "1", "--expert-problems", "2", "--teacher-samples", "16", "--teacher-rounds", "2"]
    args += ["--epochs", "1", "--eval-problems", "1", "--eval-samples", "2", "--out-dir", str(tmp_path)]
    result = CliRunner().invoke(app, [*args, "--model-out", str(out)])
    assert result.exit_code == 0, result.output
    assert "generation 1" in result.output and "2 problems labelled" in result.output
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["training"]["generations_run"] == 1 and "--method expert" in meta["training"]["command"]
    assert [r["generation"] for r in meta["training"]["history"]] == [0, 1]
    policy = load_priority_policy(out)
    cp = compile_problem(Problem(workflows=[generate_workflow("etl_star", 30, 1)], cluster=cluster_preset("small-3")))
    assert simulate(cp, PrioritySampling(policy=policy, samples=4), seed=2).valid
    bad = CliRunner().invoke(app, ["train-priority", "--method", "expert", "--teacher-elite", "0"])
    assert bad.exit_code == 2 and "teacher_elite" in bad.output
    other = CliRunner().invoke(app, [*args, "--epochs", "2"])
    assert other.exit_code == 2 and "epochs" in other.output and "other settings" in other.output

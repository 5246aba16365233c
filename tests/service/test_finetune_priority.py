"""Fine-tuning the priority policy of `drl` (the service's default): `dagsched finetune` trains it with its own
POMO updates on the logged problems, judges old and new as the service plans with them, ships only a winner, with
and without --model; the service's online fine-tune does the same with the policy it serves."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dagsched.cli import app as cli_app
from dagsched.policy.priority_net import PriorityConfig, PriorityPolicy, load_priority_policy, save_priority_policy
from dagsched.service import finetune as ft
from dagsched.service.app import create_app
from dagsched.service.settings import DEFAULT_MODEL, Settings
from dagsched.traffic.simulated_cluster import DRIFT, drift_nodes, ml_pipeline, plan_and_run

from .conftest import AUTH, TOKEN
from .test_finetune import fixed_judge, logs  # noqa: F401  (the fixture)
from .test_finetune_reality import every_fourth_held_out  # noqa: F401  (the fixture)


def small_priority(tmp_path: Path) -> Path:
    """A small priority policy (width 8, one round of message passing) whose learned part is not zero, so that
    a fine-tune's updates move its scores."""
    torch.manual_seed(3)
    policy = PriorityPolicy(PriorityConfig(hidden=8, layers=1, head_init=1.0))
    stem = tmp_path / "small-prio"
    save_priority_policy(policy, stem, {"version": "prio-v1"})
    return stem


def test_a_priority_policy_finetunes_and_a_winner_keeps_its_kind(logs: str, tmp_path: Path) -> None:  # noqa: F811
    """Real training and the real judge (the service's sampling): finite held-out ratios; margin -1 ships to --out
    a priority policy that differs from the one it started at, its lineage naming the trainer and the parent."""
    stem = small_priority(tmp_path)
    cfg = ft.FinetuneConfig(store=logs, model=str(stem), holdout=0.34, rounds=1, epochs=2, lr=1e-2, margin=-1.0)
    outcome = ft.run(cfg, tmp_path / "out")
    assert outcome.train and outcome.held_out and len(outcome.results) == len(outcome.held_out)
    assert all(0 < r.old_makespan < float("inf") and 0 < r.new_makespan < float("inf") for r in outcome.results)
    assert outcome.train_stats["problems"] == len(outcome.train)
    assert outcome.shipped and re.fullmatch(r"prio-v1-ft-prod-\d{8}T\d{6}Z", outcome.version or "")
    new = load_priority_policy(tmp_path / "out" / outcome.version)
    old = load_priority_policy(stem)
    assert any(not torch.equal(a, b) for a, b in zip(old.state_dict().values(), new.state_dict().values(), strict=True))
    meta = json.loads((tmp_path / "out" / f"{outcome.version}.json").read_text())
    assert meta["finetune"]["parent"] == "prio-v1" and meta["finetune"]["algorithm"].startswith("POMO")


def test_an_unchanged_priority_policy_ties_and_is_kept(logs: str, tmp_path: Path) -> None:  # noqa: F811
    """lr 0: the same policy plans every held-out problem to the same makespan; nothing ships."""
    cfg = ft.FinetuneConfig(store=logs, model=str(small_priority(tmp_path)), holdout=0.34, rounds=1, epochs=1, lr=0.0)
    outcome = ft.run(cfg, tmp_path / "out")
    assert outcome.results and all(r.ratio == 1.0 for r in outcome.results)
    assert not outcome.shipped and "kept the serving model" in outcome.reason
    assert not (tmp_path / "out").exists()


def test_the_command_without_model_finetunes_the_service_default(logs: str, tmp_path: Path) -> None:  # noqa: F811
    """No --model: the service's default, the priority policy drl-v3, is the parent of what ships."""
    out = tmp_path / "out"
    args = ["finetune", "--store", logs, "--out", str(out), "--holdout", "0.34", "--rounds", "1", "--epochs", "1"]
    r = CliRunner().invoke(cli_app, [*args, "--margin", "-0.5"])
    assert r.exit_code == 0, r.output
    (meta_path,) = out.glob("drl-v3-ft-prod-*.json")
    meta = json.loads(meta_path.read_text())
    assert (
        meta["finetune"]["parent"] == "drl-v3"
        and meta["format"] == json.loads(Path(str(DEFAULT_MODEL) + ".json").read_text())["format"]
    )


def test_online_finetune_of_the_served_priority_policy(
    make_settings: Callable[..., Settings],
    tmp_path: Path,
    every_fourth_held_out: None,  # noqa: F811
) -> None:
    """The service serving drl-v3 fine-tunes it on its own logs: the real judge gives a finite verdict; a winner
    (judged 10 % shorter) is swapped in and plans `drl` under its new version."""
    url = f"sqlite:///{tmp_path / 'prio.sqlite'}"
    with TestClient(create_app(make_settings(store_url=url, model_path=DEFAULT_MODEL))) as client:
        assert client.get("/v1/model").json()["version"] == "drl-v3"
        for i in range(8):
            plan_and_run(client, {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}, DRIFT,
                         TOKEN, seed=i)  # fmt: skip
        config = client.get("/v1/config").json()
        client.put("/v1/config", json={**config, "online_ft_interval": "1d"}, headers=AUTH).raise_for_status()
        real: dict[str, Any] = client.post("/v1/finetune/runs", headers=AUTH).json()
        assert real["verdict"] in ("kept", "shipped"), real
        assert real["report"]["held_out"] >= 1 and all(x["old"] > 0 and x["new"] > 0 for x in real["report"]["results"])
        state = client.app.state.service  # type: ignore[attr-defined]
        state.online.judge = fixed_judge(0.9, [])
        shipped = client.post("/v1/finetune/runs", headers=AUTH).json()
        assert shipped["verdict"] == "shipped" and shipped["version"].startswith("drl-v3-ft-test-")
        client.put("/v1/config", json={"decision_deadline_ms": 60_000}, headers=AUTH).raise_for_status()
        body = {"workflow": ml_pipeline(9), "nodes": drift_nodes(), "scheduler": "drl"}
        plan = client.post("/v1/schedule", json=body).json()
        assert plan["scheduler"] == "drl" and plan["model_version"] == shipped["version"]

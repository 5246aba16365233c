"""`dagsched finetune`: only the chosen environment's logs in the window train it; a loser never ships."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import torch
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dagsched.cli import app as cli_app
from dagsched.console import parse_duration
from dagsched.model.errors import InputError
from dagsched.service import finetune as ft
from dagsched.service.app import create_app
from dagsched.service.settings import Settings
from dagsched.service.store import Store
from dagsched.service.store.schema import plans

from .conftest import AUTH, TOKEN, nodes, workflow

PROD_SIZES = {4, 5, 6}  # tasks of the recent prod plans; every other group has its own size
OLD_PROD, DEV, TEST, REPLAN = 7, 9, 11, 8


def chain(name: str, n_tasks: int) -> dict[str, Any]:
    """A fork-join of `n_tasks` tasks: t0 -> t1..t{n-2} -> t{n-1}, runtimes 2..n+1 s."""
    tasks = [{"id": "t0", "runtime": 2}]
    tasks += [{"id": f"t{i}", "runtime": 2 + i, "dependencies": ["t0"]} for i in range(1, n_tasks - 1)]
    tasks.append({"id": f"t{n_tasks - 1}", "runtime": 3, "dependencies": [f"t{i}" for i in range(1, n_tasks - 1)]})
    return {"name": name, "tasks": tasks}


def log_plan(
    url: str, plan_id: str, env: str, wf: dict[str, Any], age_s: float = 60.0, root: str | None = None
) -> None:
    """One plan row as the service stores it (request = workflow + nodes), created `age_s` ago."""
    store = Store(url)
    request = {"workflow": wf, "nodes": nodes(3), "scheduler": "heft", "weights": None}
    row = {
        "id": plan_id,
        "root_id": root or plan_id,
        "workflow": wf["name"],
        "scheduler": "heft",
        "fallback": False,
        "fallback_reason": None,
        "makespan": 1.0,
        "cost": 0.0,
        "model_version": None,
        "environment": env,
        "input_digest": "0" * 64,
        "request": request,
        "response": {},
    }
    store.plans.save(row, [])
    with store.engine.begin() as conn:
        conn.execute(plans.update().where(plans.c.id == plan_id).values(created_at=time.time() - age_s))
    store.close()


@pytest.fixture
def logs(tmp_path: Path) -> str:
    """9 recent prod plans (4-6 tasks), 2 two-day-old prod plans, dev and test plans, a prod re-plan."""
    url = f"sqlite:///{tmp_path / 'logs.sqlite'}"
    for i in range(9):
        log_plan(url, f"prod-{i}", "prod", chain(f"p{i}", 4 + i % 3))
    for i in range(2):
        log_plan(url, f"prod-old-{i}", "prod", chain(f"old{i}", OLD_PROD), age_s=2 * 86400)
    for i in range(3):
        log_plan(url, f"dev-{i}", "dev", chain(f"d{i}", DEV))
        log_plan(url, f"test-{i}", "test", chain(f"t{i}", TEST))
    log_plan(url, "prod-replan", "prod", chain("p0", REPLAN), root="prod-0")
    return url


def fixed_judge(ratio: float, seen: list[Any]) -> Callable[..., list[ft.HeldOutResult]]:
    """An evaluation that reports new = ratio x old (10 s) on every held-out problem, recording its inputs."""

    def judge(old: Any, new: Any, problems: list[ft.LoggedProblem]) -> list[ft.HeldOutResult]:
        seen.append((old, new, problems))
        return [
            ft.HeldOutResult(p.plan_id, p.workflow, p.cp.n_tasks, p.cp.n_nodes, 10.0, 10.0 * ratio) for p in problems
        ]

    return judge


def test_since_takes_durations_and_names_the_flag_otherwise() -> None:
    """30m, 24h, 7d, 90s, 1.5h in seconds; '24', 'h', '-1h', '0h', '3y' are refused naming --since."""
    assert [parse_duration(x) for x in ("30m", "24h", "7d", "90s", "1.5h")] == [1800, 86400, 604800, 90, 5400]
    for bad in ("24", "h", "-1h", "0h", "3y", ""):
        with pytest.raises(InputError) as err:
            parse_duration(bad)
        assert err.value.field == "--since"


def test_only_the_chosen_environment_in_the_window_enters(logs: str, policy_stem: Path, tmp_path: Path) -> None:
    """Prod first plans of the last 24 h train and judge; dev (9 tasks), test (11), re-plans (8), older (7) never."""
    problems, skipped = ft.read_logged_problems(logs, "prod", 86400, 200)
    assert skipped == []
    assert sorted(p.plan_id for p in problems) == [f"prod-{i}" for i in range(9)]
    assert {p.cp.n_tasks for p in problems} == PROD_SIZES and all(p.cp.n_nodes == 3 for p in problems)
    wider, _ = ft.read_logged_problems(logs, "prod", 3 * 86400, 200)
    assert len(wider) == 11 and {p.cp.n_tasks for p in wider} == PROD_SIZES | {OLD_PROD}
    dev, _ = ft.read_logged_problems(logs, "dev", 86400, 200)
    assert {p.cp.n_tasks for p in dev} == {DEV}
    # what the whole run trains on and judges on: the same 9 prod plans, split, nothing else
    cfg = ft.FinetuneConfig(store=logs, model=policy_stem, holdout=0.34, rounds=1, epochs=1, lr=1e-3)
    seen: list[Any] = []
    outcome = ft.run(cfg, tmp_path / "out", judge=fixed_judge(1.0, seen))
    assert outcome.train and outcome.held_out
    used = outcome.train + outcome.held_out
    assert sorted(p.plan_id for p in used) == [f"prod-{i}" for i in range(9)]
    assert {p.cp.n_tasks for p in outcome.train} <= PROD_SIZES
    assert [p.plan_id for p in seen[0][2]] == [p.plan_id for p in outcome.held_out]
    assert outcome.train_stats["problems"] == len(outcome.train)  # the trainer saw exactly the training problems
    assert math.isfinite(outcome.train_stats["loss"]) and outcome.train_stats["best_sample_vs_heft"] > 0


def test_what_the_service_logs_is_read_back_as_its_problem(make_settings: Callable[..., Settings]) -> None:
    """/v1/schedule stores the request with its label; the problem is rebuilt on the nodes' free capacity."""
    request_nodes = nodes(3)
    request_nodes[1]["free"] = {"cpu": 2, "mem": 8}
    settings = make_settings(environment="prod")
    with TestClient(create_app(settings)) as client:
        ids = [
            client.post("/v1/schedule", json={"workflow": workflow(f"w{i}"), "nodes": request_nodes}).json()["plan_id"]
            for i in range(2)
        ]
    with TestClient(create_app(make_settings(environment="dev"))) as client:
        client.post("/v1/schedule", json={"workflow": chain("dev", DEV), "nodes": request_nodes})
    problems, _ = ft.read_logged_problems(settings.store_url, "prod", 3600, 200)
    assert sorted(p.plan_id for p in problems) == sorted(ids)
    cp = problems[0].cp
    assert cp.n_tasks == 4 and cp.node_ids == ["n0", "n1", "n2"]
    assert cp.cap[1].tolist()[:2] == [2.0, 8.0] and cp.cap[0].tolist()[:2] == [4.0, 16.0]


def test_split_is_deterministic_and_stable_as_logs_grow(logs: str) -> None:
    """Same ids -> same split in any order; a bigger fraction only adds; about the asked share is held out."""
    problems, _ = ft.read_logged_problems(logs, "prod", 86400, 200)
    train, held = ft.split(problems, 0.34)
    train2, held2 = ft.split(list(reversed(problems)), 0.34)
    assert {p.plan_id for p in held} == {p.plan_id for p in held2} and {p.plan_id for p in train} == {
        p.plan_id for p in train2
    }
    ids = [f"plan-{i}" for i in range(2000)]
    small = {i for i in ids if ft.in_fraction(i, 0.1)}
    large = {i for i in ids if ft.in_fraction(i, 0.25)}
    assert small <= large and 0.2 < len(large) / len(ids) < 0.3 and 0.07 < len(small) / len(ids) < 0.13


def test_verdict_needs_the_margin() -> None:
    """Ship only when the mean new/old is under 1 - margin; a tie, an empty or a non-finite mean never ships."""
    r = lambda new: ft.HeldOutResult("p", "w", 4, 3, 10.0, new)  # noqa: E731
    assert ft.verdict([r(9.8)], 0.01) == (pytest.approx(0.98), True)
    assert ft.verdict([r(9.95)], 0.01)[1] is False
    assert ft.verdict([r(10.0)], 0.0)[1] is False
    assert ft.verdict([r(8.0), r(12.5)], 0.0)[1] is False  # mean 1.025: one win does not carry a loss
    assert ft.verdict([], 0.0)[1] is False and ft.verdict([r(float("inf"))], 0.0)[1] is False


def test_an_unchanged_policy_ties_and_is_not_uploaded(
    logs: str, policy_stem: Path, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """lr 0: the real evaluation gives new/old = 1 on every held-out plan; nothing reaches the service or --out."""
    cfg = ft.FinetuneConfig(store=logs, model=policy_stem, holdout=0.34, rounds=1, epochs=1, lr=0.0, margin=0.0)
    with TestClient(create_app(make_settings())) as client:
        outcome = ft.run(cfg, tmp_path / "out", ship=partial(ft.upload, client, TOKEN))
        assert client.get("/v1/model").json()["version"] == "tiny-v1"
    assert outcome.results and all(r.ratio == 1.0 and r.old_makespan > 0 for r in outcome.results)
    assert outcome.mean_ratio == 1.0 and not outcome.shipped and outcome.version is None
    assert "kept the serving model" in outcome.reason
    assert not (tmp_path / "out").exists()


def test_a_loser_is_not_uploaded(
    logs: str, policy_stem: Path, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """Held-out makespans 5 % worse: the service keeps tiny-v1 and records no upload."""
    settings = make_settings()
    cfg = ft.FinetuneConfig(store=logs, model=policy_stem, holdout=0.34, rounds=1, epochs=1, lr=1e-3)
    with TestClient(create_app(settings)) as client:
        outcome = ft.run(cfg, tmp_path / "out", ship=partial(ft.upload, client, TOKEN), judge=fixed_judge(1.05, []))
        assert client.get("/v1/model").json()["version"] == "tiny-v1"
    assert outcome.mean_ratio == pytest.approx(1.05) and not outcome.shipped
    assert all(row["source"] == "shipped" for row in Store(settings.store_url).models.history())


def test_a_winner_is_uploaded_and_served(
    logs: str, policy_stem: Path, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    """Held-out makespans 10 % better: PUT /v1/model/weights; the service serves and records the new version."""
    settings = make_settings()
    seen: list[Any] = []
    cfg = ft.FinetuneConfig(store=logs, model=policy_stem, holdout=0.34, rounds=1, epochs=1, lr=1e-3)
    with TestClient(create_app(settings)) as client:
        outcome = ft.run(cfg, tmp_path / "out", ship=partial(ft.upload, client, TOKEN), judge=fixed_judge(0.9, seen))
        info = client.get("/v1/model").json()
        # a loaded CI machine must not turn the plan below into a HEFT fallback on the 50 ms deadline
        client.put("/v1/config", json={"decision_deadline_ms": 60_000}, headers=AUTH).raise_for_status()
        plan = client.post("/v1/schedule", json={"workflow": workflow(), "nodes": nodes(), "scheduler": "drl"}).json()
    assert outcome.shipped and re.fullmatch(r"tiny-v1-ft-prod-\d{8}T\d{6}Z", outcome.version or "")
    assert info["version"] == outcome.version and info["previous"] == "tiny-v1" and info["source"] == "upload"
    assert plan["model_version"] == outcome.version
    old, new, _ = seen[0]
    assert any(not torch.equal(a, b) for a, b in zip(old.state_dict().values(), new.state_dict().values(), strict=True))
    uploaded = [r for r in Store(settings.store_url).models.history() if r["source"] == "upload"]
    assert [r["version"] for r in uploaded] == [outcome.version]
    assert uploaded[0]["meta"]["finetune"]["parent"] == "tiny-v1"
    assert uploaded[0]["meta"]["finetune"]["held_out_plans"] == len(outcome.held_out)


def test_the_command_without_service_and_its_bad_input(logs: str, policy_stem: Path, tmp_path: Path) -> None:
    """Exit 0 and a table whether or not it ships; exit 2 naming --since, --store, or the missing env label."""
    runner = CliRunner()
    base = ["finetune", "--store", logs, "--model", str(policy_stem), "--out", str(tmp_path / "out")]
    ok = runner.invoke(
        cli_app, [*base, "--holdout", "0.34", "--rounds", "1", "--epochs", "1", "--lr", "0", "--margin", "0"]
    )
    text = " ".join(ok.output.split())
    assert ok.exit_code == 0, ok.output
    assert "9 plans" in text and "new/old" in text and "kept the serving model" in text
    assert not (tmp_path / "out").exists()
    bad = runner.invoke(cli_app, [*base, "--since", "yesterday"])
    assert bad.exit_code == 2 and "--since" in bad.output and "yesterday" in bad.output
    scheme = runner.invoke(cli_app, ["finetune", "--store", "mysql://db/x"])
    assert scheme.exit_code == 2 and "--store: unknown URL scheme 'mysql'" in " ".join(scheme.output.split())
    missing = runner.invoke(cli_app, ["finetune", "--store", f"sqlite:///{tmp_path / 'none.sqlite'}"])
    assert missing.exit_code == 2 and "no SQLite store" in missing.output
    assert not (tmp_path / "none.sqlite").exists()
    staging = runner.invoke(cli_app, [*base, "--env", "staging"])
    text = " ".join(staging.output.split())
    assert staging.exit_code == 2 and "no plans labelled 'staging'" in text and "dev (3), prod (10), test (3)" in text
    with sa.create_engine(logs).connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(plans)).scalar() == 18  # nothing was written
    token_missing = runner.invoke(cli_app, [*base, "--service", "http://127.0.0.1:9"], env={"DAGSCHED_API_TOKEN": ""})
    assert token_missing.exit_code == 2 and "DAGSCHED_API_TOKEN" in token_missing.output
    unreachable = runner.invoke(
        cli_app,
        [
            *base,
            "--service",
            "http://127.0.0.1:9",
            "--holdout",
            "0.34",
            "--rounds",
            "1",
            "--lr",
            "0",
            "--margin",
            "-0.5",
        ],
        env={"DAGSCHED_API_TOKEN": TOKEN},
    )
    assert unreachable.exit_code == 1, unreachable.output  # a winner that cannot be uploaded: exit 1, files kept
    assert "won but was not shipped" in " ".join(unreachable.output.split())
    assert len(list((tmp_path / "out").glob("tiny-v1-ft-prod-*.safetensors"))) == 1


def test_reading_a_file_without_the_service_tables_writes_nothing(tmp_path: Path) -> None:
    """A SQLite file that is not a service store: a clear --store error, and the file gains no tables."""
    import sqlite3

    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
    with pytest.raises(InputError, match=r"--store: cannot read the plans table"):
        ft.read_logged_problems(f"sqlite:///{path}", "prod", 86400, 10)
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"notes"}

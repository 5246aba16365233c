"""Fine-tuning from reality: `dagsched finetune --runtimes executed` trains on the problems calibrated by what ran,
refuses an event log that fails its audit (naming the faults; nothing stored is lost), and the service runs the
same fine-tune itself on `online_ft_interval` and on a load-skew trip, shipping only a winner, each run recorded."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dagsched.cli import app as cli_app
from dagsched.rl.config_cli import field_docs
from dagsched.service import finetune as ft
from dagsched.service.app import create_app
from dagsched.service.settings import Settings
from dagsched.service.store import Store
from dagsched.service.store.schema import metadata
from dagsched.traffic.simulated_cluster import DRIFT, drift_nodes, ml_pipeline, plan_and_run

from .conftest import AUTH, TOKEN
from .test_finetune import fixed_judge

RUNS = 8


@pytest.fixture
def executed(make_settings: Callable[..., Settings], tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    """A service (environment `test`) that planned and heard the execution of RUNS workflows under the drift."""
    url = f"sqlite:///{tmp_path / 'executed.sqlite'}"
    with TestClient(create_app(make_settings(store_url=url))) as client:
        for i in range(RUNS):
            body = {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}
            plan_and_run(client, body, DRIFT, TOKEN, seed=i)
        yield client, url


def _counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        out = {
            t.name: conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() for t in metadata.sorted_tables
        }
    engine.dispose()
    return out


def test_executed_runtimes_give_the_calibrated_problem(executed: tuple[TestClient, str]) -> None:
    """The same logged request, read with executed runtimes, runs model_training 1.5 x longer and n3 1/0.7 x
    slower than read with the requested ones (within the shrinkage), and the report says what was read."""
    _, url = executed
    requested, _ = ft.read_logged_problems(url, "test", 3600, 100)
    reality: dict[str, Any] = {}
    calibrated, _ = ft.read_logged_problems(url, "test", 3600, 100, runtimes="executed", reality=reality)
    assert [p.plan_id for p in requested] == [p.plan_id for p in calibrated] and len(requested) == RUNS
    assert reality["runs"] == reality["clean_runs"] == RUNS and reality["calibration"]["active"]
    a, b = requested[0].cp, calibrated[0].cp
    train = a.task_ids.index("train_0")
    ingest = a.task_ids.index("ingest")
    n3, n1 = a.node_ids.index("n3"), a.node_ids.index("n1")
    assert b.exec_s[train, n1] / a.exec_s[train, n1] == pytest.approx(1.5, rel=0.04)
    assert b.exec_s[ingest, n3] / a.exec_s[ingest, n3] == pytest.approx(1 / 0.7, rel=0.04)
    assert b.exec_s[ingest, n1] == pytest.approx(a.exec_s[ingest, n1], rel=0.01)


def test_a_faulty_log_is_refused_naming_the_faults(
    executed: tuple[TestClient, str], policy_stem: Path, tmp_path
) -> None:
    """A task's finish stored twice: `--runtimes executed` exits 2 naming the fault, with the audit's table; nothing
    stored is lost; `--allow-faults` trains without that run."""
    _, url = executed
    store = Store(url)
    root = store.events.executed_roots(0.0, "test", 1)[0]["id"]
    finished = [e for e in store.events.of_chain(root) if e["kind"] == "task_finished"][0]
    store.events.add(root, "task_finished", finished["task"], finished["node"], finished["at"], {"elapsed_s": None})
    store.close()
    before = _counts(url)
    with pytest.raises(ft.LogRefused) as err:
        ft.read_logged_problems(url, "test", 3600, 100, runtimes="executed")
    assert err.value.faults["duplicate"] == 1 and err.value.field == "events"
    runner = CliRunner()
    base = ["finetune", "--store", url, "--env", "test", "--model", str(policy_stem), "--out", str(tmp_path / "o")]
    base += ["--runtimes", "executed", "--rounds", "1", "--epochs", "1", "--holdout", "0.3", "--lr", "0"]
    refused = runner.invoke(cli_app, base)
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "events: the event log has faults (1 duplicate)" in text, text
    assert "--allow-faults" in text and "event log audit" in text
    assert _counts(url) == before
    allowed = runner.invoke(cli_app, [*base, "--allow-faults", "--margin", "0"])
    text = " ".join(allowed.output.split())
    assert allowed.exit_code == 0, allowed.output
    assert f"executed runtimes: {RUNS} runs ({RUNS - 1} clean" in text and "left out: 1 duplicate" in text
    assert _counts(url) == before
    wrong = runner.invoke(cli_app, ["finetune", "--store", url, "--runtimes", "simulated"])
    assert wrong.exit_code == 2 and "--runtimes" in wrong.output


def test_the_command_line_is_generated_from_the_config() -> None:
    """Every field of FinetuneConfig is an option of `dagsched finetune` whose help is the field's docstring."""
    import dataclasses

    docs = field_docs(ft.FinetuneConfig)
    names = [f.name for f in dataclasses.fields(ft.FinetuneConfig)]
    assert set(docs) == set(names)
    help_text = " ".join(CliRunner().invoke(cli_app, ["finetune", "--help"], env={"COLUMNS": "400"}).output.split())
    for name in names:
        assert "--" + name.replace("_", "-") in help_text
    assert "Adam learning rate" in help_text


def _until(read: Callable[[], Any], timeout_s: float = 90.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = read()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.fixture
def every_fourth_held_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan ids are random: hold out every fourth plan instead of the hash split, so that a run of RUNS plans always
    has both sides (the split itself is tested in test_finetune.py)."""
    monkeypatch.setattr(ft, "split", lambda problems, _fraction: ([p for i, p in enumerate(problems) if i % 4],
                                                                 problems[::4]))  # fmt: skip


def test_online_finetune_ships_only_a_winner_and_records_every_run(
    executed: tuple[TestClient, str], every_fourth_held_out: None
) -> None:
    client, _ = executed
    state = client.app.state.service  # type: ignore[attr-defined]
    state.online.judge = fixed_judge(1.05, [])
    off = client.post("/v1/finetune/runs", headers=AUTH)
    assert off.status_code == 409 and off.json()["detail"].startswith("online_ft_interval")
    config = client.get("/v1/config").json()
    assert client.put("/v1/config", json={**config, "online_ft_interval": "1d"}, headers=AUTH).status_code == 200
    r = client.post("/v1/finetune/runs", headers=AUTH)
    assert r.status_code == 200, r.text
    kept = r.json()
    assert kept["verdict"] == "kept" and kept["mean_ratio"] == pytest.approx(1.05) and kept["trigger"] == "request"
    assert kept["report"]["runtimes"] == "executed" and kept["report"]["held_out"] >= 1
    assert client.get("/v1/model").json()["version"] == "tiny-v1"
    state.online.judge = fixed_judge(0.9, [])
    shipped = client.post("/v1/finetune/runs", headers=AUTH).json()
    assert shipped["verdict"] == "shipped" and shipped["version"].startswith("tiny-v1-ft-test-")
    info = client.get("/v1/model").json()
    assert info["version"] == shipped["version"] and info["previous"] == "tiny-v1"
    runs = client.get("/v1/finetune/runs").json()
    assert [x["verdict"] for x in runs["runs"]] == ["shipped", "kept"] and runs["interval_s"] == 86400
    assert client.post("/v1/finetune/runs").status_code == 401
    assert (
        'dagsched_online_finetune_runs_total{trigger="request",verdict="shipped"} 1.0' in client.get("/v1/metrics").text
    )


def test_online_finetune_runs_on_its_interval_and_on_a_skew_trip(
    executed: tuple[TestClient, str], every_fourth_held_out: None
) -> None:
    client, _ = executed
    state = client.app.state.service  # type: ignore[attr-defined]
    state.online.judge = fixed_judge(1.0, [])
    config = client.get("/v1/config").json()
    r = client.put("/v1/config", json={**config, "online_ft_interval": "1h", "online_ft_window": "2h"}, headers=AUTH)
    assert r.status_code == 200 and r.json()["online_ft_interval"] == 3600.0 and r.json()["online_ft_window"] == 7200
    state.online.last_run -= 600  # a skew trip starts a run when none ran in the last ten minutes
    skewed = drift_nodes()
    skewed[0]["free"] = {"cpu": 0.5, "mem": 16}  # utilisation 0.875, 0, 0, 0: std 0.38 over the 0.35 threshold
    assert client.post("/v1/schedule", json={"workflow": ml_pipeline(50), "nodes": skewed}).status_code == 200
    runs = _until(lambda: client.get("/v1/finetune/runs").json()["runs"])
    assert runs[0]["trigger"] == "skew" and runs[0]["verdict"] == "kept"
    state.online.last_run -= 3600  # an hour passed
    runs = _until(lambda: [x for x in client.get("/v1/finetune/runs").json()["runs"] if x["trigger"] == "interval"])
    assert runs[0]["verdict"] == "kept"
    bad = client.put("/v1/config", json={**config, "online_ft_interval": "often"}, headers=AUTH)
    assert bad.status_code == 422 and bad.json()["detail"].startswith("online_ft_interval")

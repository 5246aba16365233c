"""Reading executed runs back from the store audits the event log: duplicate events, events out of time order (or
a finish without a start), zero or negative durations, outliers past the bound and other environments' runs are
reported by name and kept out of estimates; reading changes nothing stored. `dagsched gap` prints the same report."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from dagsched.cli import app as cli_app
from dagsched.service.app import create_app
from dagsched.service.reality import read_runs
from dagsched.service.settings import Settings
from dagsched.service.store import Store
from dagsched.service.store.schema import metadata
from dagsched.traffic.simulated_cluster import Truth, drift_nodes, ml_pipeline, plan_and_run

from .conftest import TOKEN


def _counts(url: str) -> dict[str, int]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        out = {
            t.name: int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one())
            for t in metadata.sorted_tables
        }
    engine.dispose()
    return out


@pytest.fixture
def store_with_bad_logs(make_settings: Callable[..., Settings], tmp_path) -> tuple[str, dict[str, str]]:
    """Three clean runs (environment `test`), a fourth re-planned by a replica labelled `dev`, then one run per fault
    of the events, written straight into the store as a broken executor or an import would, and one clean run
    labelled `dev`."""
    url = f"sqlite:///{tmp_path / 'audit.sqlite'}"
    with TestClient(create_app(make_settings(store_url=url))) as c:
        for i in range(3):
            plan_and_run(c, {"workflow": ml_pipeline(i), "nodes": drift_nodes(), "scheduler": "heft"}, Truth(), TOKEN)
        foreign, _ = plan_and_run(
            c, {"workflow": ml_pipeline(3), "nodes": drift_nodes(), "scheduler": "heft"}, Truth(), TOKEN
        )
        bad = {"other_environment": foreign["plan_id"]}
        for fault in ("duplicate", "out_of_order", "non_positive_duration", "outlier"):
            r = c.post("/v1/schedule", json={"workflow": ml_pipeline(10), "nodes": drift_nodes(), "scheduler": "heft"})
            bad[fault] = r.json()["plan_id"]
    with TestClient(create_app(make_settings(store_url=url, environment="dev"))) as c:
        plan_and_run(c, {"workflow": ml_pipeline(20), "nodes": drift_nodes(), "scheduler": "heft"}, Truth(), TOKEN)
    store = Store(url)
    ingest_s = 0.0

    def add(root: str, kind: str, task: str, at: float) -> None:
        store.events.add(root, kind, task, "n1", at, {"elapsed_s": None})

    add(bad["duplicate"], "task_started", "ingest", 0.0)
    add(bad["duplicate"], "task_finished", "ingest", 20.0)
    add(bad["duplicate"], "task_finished", "ingest", 20.0)
    add(bad["out_of_order"], "task_started", "ingest", 5.0)
    add(bad["out_of_order"], "task_finished", "ingest", 25.0)
    add(bad["out_of_order"], "task_started", "clean_a", 3.0)
    add(bad["non_positive_duration"], "task_started", "ingest", 10.0)
    add(bad["non_positive_duration"], "task_finished", "ingest", 10.0)
    add(bad["outlier"], "task_started", "ingest", ingest_s)
    add(bad["outlier"], "task_finished", "ingest", 100_000.0)
    root = store.plans.get(bad["other_environment"])
    assert root is not None
    store.plans.save({**root, "id": "replan-by-dev", "environment": "dev"}, [])
    store.close()
    return url, bad


def test_each_fault_is_named_and_kept_out(store_with_bad_logs: tuple[str, dict[str, str]]) -> None:
    url, bad = store_with_bad_logs
    before = _counts(url)
    store = Store(url, create=False)
    log = read_runs(store, 0.0, "test", outlier_bound=10.0)
    store.close()
    assert _counts(url) == before  # reading stored nothing and removed nothing
    counts = log.fault_counts()
    assert counts == {
        "duplicate": 1, "out_of_order": 1, "non_positive_duration": 1, "outlier": 1, "other_environment": 1,
        "unreadable": 0,
    }  # fmt: skip
    by_kind = {f.kind: f for f in log.faults}
    for kind, root in bad.items():
        assert by_kind[kind].root_id == root and by_kind[kind].task in ("ingest", "clean_a", None)
    assert (
        "labelled 'dev'" in by_kind["other_environment"].detail or "label 'dev'" in by_kind["other_environment"].detail
    )
    assert "stored twice" not in by_kind["duplicate"].detail and "20 s" in by_kind["duplicate"].detail
    assert "100000 s" in by_kind["outlier"].detail and "bound 10" in by_kind["outlier"].detail
    assert log.other_environments == {"dev": 1}
    clean = {r.root_id for r in log.runs if r.clean}
    assert bad["duplicate"] not in clean and bad["out_of_order"] not in clean and bad["other_environment"] not in clean
    assert bad["outlier"] in clean and bad["non_positive_duration"] in clean  # only that observation is dropped
    observed = {(t.root_id, t.task) for t in log.observations()}
    assert (bad["outlier"], "ingest") not in observed and (bad["non_positive_duration"], "ingest") not in observed
    assert len([r for r in log.runs if r.achieved_makespan is not None]) == 4


def test_gap_command_prints_and_refuses_bad_flags(store_with_bad_logs: tuple[str, dict[str, str]], tmp_path) -> None:
    url, _ = store_with_bad_logs
    runner = CliRunner()
    ok = runner.invoke(cli_app, ["gap", "--store", url, "--env", "test", "--json"])
    assert ok.exit_code == 0, ok.output
    report: dict[str, Any] = json.loads(ok.stdout)
    assert report["runs"]["read"] == 8 and report["runs"]["complete"] == 3  # the fourth complete run is left out
    assert report["faults"]["counts"]["duplicate"] == 1 and report["other_environments"] == {"dev": 1}
    assert report["calibration"]["runs"] == 3  # clean runs with an observation left: the two partial ones have none
    tables = runner.invoke(cli_app, ["gap", "--store", url, "--since", "30d"])
    assert tables.exit_code == 0 and "per task name" in tables.output and "duplicate" in tables.output
    every = json.loads(runner.invoke(cli_app, ["gap", "--store", url, "--json"]).stdout)
    assert every["runs"]["read"] == 9 and every["environment"] is None
    bad = runner.invoke(cli_app, ["gap", "--store", url, "--since", "soon"])
    assert bad.exit_code == 2 and "--since" in bad.output
    missing = runner.invoke(cli_app, ["gap", "--store", f"sqlite:///{tmp_path / 'none.sqlite'}"])
    assert missing.exit_code == 2 and "--store" in missing.output


def test_the_run_cache_reads_what_a_full_read_gives(store_with_bad_logs: tuple[str, dict[str, str]]) -> None:
    """The service's incremental reader (only the events stored since its last read) gives the runs a full read
    gives, after more events arrive too."""
    from dagsched.service.reality import RunCache

    url, bad = store_with_bad_logs
    store = Store(url)

    def same() -> None:
        full = read_runs(store, 0.0, "test", outlier_bound=10.0)
        cached = cache.read(0.0, 1000, 10.0)
        assert [(r.root_id, r.tasks, r.faults, r.achieved_makespan) for r in cached] == [
            (r.root_id, r.tasks, r.faults, r.achieved_makespan) for r in full.runs
        ]

    cache = RunCache(store, "test")
    same()
    store.events.add(bad["outlier"], "task_started", "clean_a", "n2", 100_001.0, {"elapsed_s": None})
    store.events.add(bad["outlier"], "task_finished", "clean_a", "n2", 100_031.0, {"elapsed_s": None})
    same()
    assert any(t.task == "clean_a" for r in cache.read(0.0, 1000, 10.0) if r.root_id == bad["outlier"] for t in r.tasks)
    store.close()

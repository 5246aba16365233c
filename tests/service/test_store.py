"""The decision store round-trips plans, decisions, events, model versions and shadow rows (SQLite and PostgreSQL)."""

from __future__ import annotations

import multiprocessing as mp
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from dagsched.service.store import Store, normalise_url

from .conftest import pg_url

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        s = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    else:
        url = pg_url()
        if not url:
            pytest.skip("DAGSCHED_TEST_PG_URL is not set (deploy/ci-postgres.sh starts a PostgreSQL and prints one)")
        s = Store(url)
    yield s
    s.close()


def test_sqlite_uses_wal(tmp_path: Path) -> None:
    """A SQLite file store runs in WAL mode (readers never block the writer)."""
    s = Store(str(tmp_path / "wal.sqlite"))
    with s.engine.connect() as conn:
        assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
    s.close()


def _open_together(url: str, barrier: Any) -> None:
    barrier.wait()
    Store(url).close()


def test_stores_opened_together_on_a_fresh_file_all_start(tmp_path: Path) -> None:
    """Workers starting at once each create the missing tables; racing on one must not stop any of them
    (`serve --workers 2` on a fresh file failed with "table decisions already exists")."""
    ctx = mp.get_context("spawn")
    for round_ in range(3):
        url = f"sqlite:///{tmp_path / f'race{round_}.sqlite'}"
        barrier = ctx.Barrier(4)
        procs = [ctx.Process(target=_open_together, args=(url, barrier)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
        assert [p.exitcode for p in procs] == [0, 0, 0, 0]
        with sa.create_engine(url).connect() as conn:
            names = {r[0] for r in conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type='table'"))}
        assert {"plans", "decisions", "events"} <= names


def test_postgres_urls_use_psycopg3() -> None:
    """postgres:// and postgresql:// map to the psycopg 3 driver; a bare path is a SQLite file."""
    assert normalise_url("postgresql://u:p@h:5/db") == "postgresql+psycopg://u:p@h:5/db"
    assert normalise_url("postgres://h/db") == "postgresql+psycopg://h/db"
    assert normalise_url("plans.sqlite") == "sqlite:///plans.sqlite"


def test_plan_and_decisions_round_trip(store: Store) -> None:
    """A saved plan comes back field for field (JSON included); its decisions by workflow, newest first."""
    pid, wf = uuid.uuid4().hex, f"wf-{uuid.uuid4().hex[:8]}"
    response = {"plan_id": pid, "assignments": [{"task": "a", "node": "n1", "start": 0.0, "finish": 2.5}], "x": [1, 2]}
    plan = {
        "id": pid, "root_id": pid, "workflow": wf, "scheduler": "heft", "fallback": True, "fallback_reason": "why",
        "makespan": 2.5, "cost": 0.125, "model_version": "v1", "environment": "prod", "input_digest": "d" * 64,
        "request": {"workflow": {"name": wf}, "nodes": [{"id": "n1"}]}, "response": response,
    }  # fmt: skip
    rows = [
        {"plan_id": pid, "workflow": wf, "task": t, "node": "n1", "start": i, "finish": i + 1.0,
         "scores": [{"node": "n1", "score": 1.5}], "input_digest": "d" * 64, "scheduler": "heft",
         "latency_ms": 0.25, "model_version": "v1", "environment": "prod"}
        for i, t in enumerate(("a", "b"))
    ]  # fmt: skip
    store.plans.save(plan, rows)
    got = store.plans.get(pid)
    assert got is not None
    assert {k: got[k] for k in plan} == plan
    assert got["created_at"] > 0
    decisions = store.plans.decisions(workflow=wf)
    assert [(d["task"], d["node"], d["start"], d["scores"]) for d in decisions] == [
        ("b", "n1", 1.0, [{"node": "n1", "score": 1.5}]),
        ("a", "n1", 0.0, [{"node": "n1", "score": 1.5}]),
    ]
    assert store.plans.planned_node(wf, "b") == "n1" and store.plans.planned_node(wf, "zz") is None
    assert store.plans.latest_revision(pid)["id"] == pid
    assert store.plans.get("missing") is None


def test_events_models_and_shadow_round_trip(store: Store) -> None:
    """Events come back in time order with their payload; model versions newest first; shadow rows as written."""
    root = uuid.uuid4().hex
    store.events.add(root, "task_started", "a", "n1", 1.0, {"elapsed_s": None})
    store.events.add(root, "node_down", None, "n1", 0.5, {"k": [1]})
    assert [(e["kind"], e["at"], e["payload"]) for e in store.events.of_chain(root)] == [
        ("node_down", 0.5, {"k": [1]}),
        ("task_started", 1.0, {"elapsed_s": None}),
    ]
    version = f"v-{root[:6]}"
    store.models.add_version(version, "f" * 64, "upload", {"architecture": {"hidden": 16}}, 123.0)
    top = store.models.history(limit=1)[0]
    assert (top["version"], top["sha256"], top["source"], top["meta"]) == (
        version, "f" * 64, "upload", {"architecture": {"hidden": 16}},
    )  # fmt: skip
    row = {"plan_id": root, "live": "drl", "shadow": "heft", "live_makespan": 9.0, "live_cost": 1.0,
           "shadow_makespan": 10.0, "shadow_cost": 2.0, "environment": "prod"}  # fmt: skip
    store.plans.add_shadow(row)
    got = next(r for r in store.plans.shadow_rows() if r["plan_id"] == root)
    assert {k: got[k] for k in row} == row
    store.ping()

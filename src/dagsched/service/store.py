"""The decision store (SQLAlchemy Core): a SQLite file by default (WAL), PostgreSQL by URL.

Everything a replica needs to answer about the past lives here, so several replicas behind a
load balancer share one PostgreSQL and stay stateless:

- `plans`: one row per plan (a re-plan after an event is a new row whose `root_id` is the
  first plan's id); the request and the response as JSON, the scheduler, fallback, makespan, cost.
- `decisions`: one row per assignment: input digest, choice (task -> node, start, finish),
  scores of the alternatives, latency, model version, environment label.
- `events`: what clients reported about a plan (task started/finished/failed/overran, node down/up).
- `model_versions`: every policy that was loaded, with its hash and when.
- `shadow`: live vs shadow scheduler's predicted makespan and cost per plan.

`postgresql://` URLs are driven by psycopg 3 (`postgresql+psycopg://`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()

plans = sa.Table(
    "plans",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("root_id", sa.String(64), nullable=False, index=True),
    sa.Column("workflow", sa.String(256), nullable=False, index=True),
    sa.Column("scheduler", sa.String(64), nullable=False),
    sa.Column("fallback", sa.Boolean, nullable=False),
    sa.Column("fallback_reason", sa.Text),
    sa.Column("makespan", sa.Float, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("model_version", sa.String(128)),
    sa.Column("environment", sa.String(64), nullable=False),
    sa.Column("input_digest", sa.String(64), nullable=False),
    sa.Column("request", sa.JSON, nullable=False),
    sa.Column("response", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

decisions = sa.Table(
    "decisions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("plan_id", sa.String(64), nullable=False, index=True),
    sa.Column("workflow", sa.String(256), nullable=False),
    sa.Column("task", sa.String(256), nullable=False),
    sa.Column("node", sa.String(256), nullable=False),
    sa.Column("start", sa.Float, nullable=False),
    sa.Column("finish", sa.Float, nullable=False),
    sa.Column("scores", sa.JSON, nullable=False),
    sa.Column("input_digest", sa.String(64), nullable=False),
    sa.Column("scheduler", sa.String(64), nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("model_version", sa.String(128)),
    sa.Column("environment", sa.String(64), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Index("ix_decisions_workflow_task", "workflow", "task"),
)

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("root_id", sa.String(64), nullable=False, index=True),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("task", sa.String(256)),
    sa.Column("node", sa.String(256)),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

model_versions = sa.Table(
    "model_versions",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("version", sa.String(128), nullable=False),
    sa.Column("sha256", sa.String(64), nullable=False),
    sa.Column("source", sa.String(32), nullable=False),  # shipped, upload, rollback
    sa.Column("meta", sa.JSON, nullable=False),
    sa.Column("loaded_at", sa.Float, nullable=False),
)

shadow = sa.Table(
    "shadow",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("plan_id", sa.String(64), nullable=False, index=True),
    sa.Column("live", sa.String(64), nullable=False),
    sa.Column("shadow", sa.String(64), nullable=False),
    sa.Column("live_makespan", sa.Float, nullable=False),
    sa.Column("live_cost", sa.Float, nullable=False),
    sa.Column("shadow_makespan", sa.Float, nullable=False),
    sa.Column("shadow_cost", sa.Float, nullable=False),
    sa.Column("environment", sa.String(64), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)


def normalise_url(url: str) -> str:
    """`postgres://` and `postgresql://` use psycopg 3; a bare path means a SQLite file."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if "://" not in url:
        return f"sqlite:///{url}"
    return url


def make_engine(url: str) -> sa.Engine:
    """An engine; SQLite files get WAL, a busy timeout and `synchronous=NORMAL` on every connection."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 10})

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if ":memory:" not in url and url != "sqlite://":
                cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.close()

        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=8)


class Store:
    """Reads and writes of the service's tables; every method is one short transaction."""

    def __init__(self, url: str) -> None:
        self.url = normalise_url(url)
        self.engine = make_engine(url)
        metadata.create_all(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> None:
        """Raise if the database cannot be reached (readiness)."""
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    # ---- plans and decisions ------------------------------------------------------------

    def save_plan(self, plan: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> None:
        """One plan and its decisions, in one transaction."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(plans.insert().values(created_at=now, **plan))
            batch = [dict(r, created_at=now) for r in rows]
            if batch:
                conn.execute(decisions.insert(), batch)

    def get_plan(self, plan_id: str) -> dict[str, Any] | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(plans).where(plans.c.id == plan_id)).mappings().first()
        return dict(row) if row else None

    def latest_revision(self, root_id: str) -> dict[str, Any] | None:
        """The newest plan of a chain (the first plan or its latest re-plan)."""
        q = sa.select(plans).where(plans.c.root_id == root_id).order_by(plans.c.created_at.desc(), plans.c.id)
        with self.engine.connect() as conn:
            row = conn.execute(q.limit(1)).mappings().first()
        return dict(row) if row else None

    def decisions(self, workflow: str | None = None, plan_id: str | None = None, limit: int = 100) -> list[dict]:
        q = sa.select(decisions).order_by(decisions.c.id.desc()).limit(limit)
        if workflow is not None:
            q = q.where(decisions.c.workflow == workflow)
        if plan_id is not None:
            q = q.where(decisions.c.plan_id == plan_id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def planned_node(self, workflow: str, task: str) -> str | None:
        """The node of the newest decision for (workflow, task), for the Kubernetes extender."""
        q = (
            sa.select(decisions.c.node)
            .where(decisions.c.workflow == workflow, decisions.c.task == task)
            .order_by(decisions.c.id.desc())
            .limit(1)
        )
        with self.engine.connect() as conn:
            return conn.execute(q).scalar_one_or_none()

    # ---- events ------------------------------------------------------------------------------

    def add_event(self, root_id: str, kind: str, task: str | None, node: str | None, at: float, payload: dict) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                events.insert().values(
                    root_id=root_id, kind=kind, task=task, node=node, at=at, payload=payload, created_at=time.time()
                )
            )

    def events(self, root_id: str) -> list[dict[str, Any]]:
        q = sa.select(events).where(events.c.root_id == root_id).order_by(events.c.at, events.c.id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    # ---- model versions and shadow -----------------------------------------------------------

    def add_model_version(self, version: str, sha256: str, source: str, meta: dict, loaded_at: float) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                model_versions.insert().values(
                    version=version, sha256=sha256, source=source, meta=meta, loaded_at=loaded_at
                )
            )

    def model_history(self, limit: int = 20) -> list[dict[str, Any]]:
        q = sa.select(model_versions).order_by(model_versions.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def add_shadow(self, row: Mapping[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(shadow.insert().values(created_at=time.time(), **row))

    def shadow_rows(self, limit: int = 10_000) -> list[dict[str, Any]]:
        q = sa.select(shadow).order_by(shadow.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

"""The store's tables, made when missing (`create_all`) and never altered."""

from __future__ import annotations

import time

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

model_blobs = sa.Table(
    "model_blobs",
    metadata,
    sa.Column("sha256", sa.String(64), primary_key=True),
    sa.Column("version", sa.String(128), nullable=False),
    sa.Column("weights", sa.LargeBinary, nullable=False),
    sa.Column("meta", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)

serving = sa.Table(
    "serving",
    metadata,
    sa.Column("key", sa.String(16), primary_key=True),
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("model_sha256", sa.String(64)),
    sa.Column("model_source", sa.String(32)),
    sa.Column("config", sa.JSON),
    sa.Column("updated_at", sa.Float, nullable=False),
)
"""One row (`key` = "live"): what every replica serves. Each change bumps `revision`; replicas poll it."""

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

canary = sa.Table(
    "canary",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("canary_id", sa.String(64), nullable=False, index=True),
    sa.Column("plan_id", sa.String(64), nullable=False, index=True),
    sa.Column("workflow", sa.String(256), nullable=False),
    sa.Column("arm", sa.String(16), nullable=False),
    sa.Column("fraction", sa.Float, nullable=False),
    sa.Column("live_scheduler", sa.String(64), nullable=False),
    sa.Column("live_makespan", sa.Float, nullable=False),
    sa.Column("other_scheduler", sa.String(200), nullable=False),
    sa.Column("other_makespan", sa.Float),
    sa.Column("fallback", sa.Boolean, nullable=False),
    sa.Column("environment", sa.String(64), nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
)
"""One row per first plan made while a canary ran: its arm, makespan, and the other arm's plan of the problem."""

canary_steps = sa.Table(
    "canary_steps",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("canary_id", sa.String(64), nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("action", sa.String(16), nullable=False),  # start, set (by hand), promote, complete, rollback
    sa.Column("candidate", sa.String(200), nullable=False),
    sa.Column("from_fraction", sa.Float, nullable=False),
    sa.Column("to_fraction", sa.Float, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("figures", sa.JSON, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("canary_id", "seq", name="uq_canary_step"),
)
"""Every step of every canary, numbered: a step is taken by the replica whose insert of the next number wins."""

finetune_runs = sa.Table(
    "finetune_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("trigger", sa.String(32), nullable=False),  # interval, skew, command
    sa.Column("environment", sa.String(64), nullable=False),
    sa.Column("verdict", sa.String(32), nullable=False),  # shipped, kept, refused, too_few, failed
    sa.Column("mean_ratio", sa.Float),
    sa.Column("version", sa.String(128)),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("report", sa.JSON, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float, nullable=False),
)
"""Every online fine-tune, with its verdict."""

leases = sa.Table(
    "leases",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("holder", sa.String(64), nullable=False),
    sa.Column("until", sa.Float, nullable=False),
)
"""Short leases replicas take so that one of them does a shared job (an online fine-tune) at a time."""


def create_all(engine: sa.Engine) -> None:
    """Make the missing tables; replicas starting together may race on a table, so a failure is retried."""
    for attempt in range(20):
        try:
            metadata.create_all(engine)
            return
        except sa.exc.DBAPIError:  # workers or replicas starting together: another one created a table first
            if attempt == 19:  # (create_all checks, then creates table by table: each table can race)
                raise
            time.sleep(0.05 * (attempt + 1))

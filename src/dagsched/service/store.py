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
- `model_blobs` and `serving`: every policy a replica loaded (weights and metadata, by sha256), and the one row
  saying which of them and which runtime config all replicas serve, with a revision each change bumps
  (`ServiceState.sync` polls it: the store is the replicas' source of truth).

`postgresql://` URLs are driven by psycopg 3 (`postgresql+psycopg://`).
"""

from __future__ import annotations

import json
import logging
import threading
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
"""One row per first plan made while a canary ran: its arm, its makespan, and the other arm's plan of the same
problem (None when that one could not plan it)."""

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


# Statements of the hot paths, built once (building one per call cost more than running it).
_INSERT_PLAN = plans.insert()
_INSERT_DECISION = decisions.insert()
_PLANNED_NODE = (
    sa.select(decisions.c.node)
    .where(decisions.c.workflow == sa.bindparam("workflow"), decisions.c.task == sa.bindparam("task"))
    .order_by(decisions.c.id.desc())
    .limit(1)
)


_AUTOCHECKPOINT_PAGES = 10_000  # 40 MB of WAL at 4 KiB pages (SQLite's default: 1000)
log = logging.getLogger("dagsched.service")


class EncodedJSON(str):
    """A value already encoded as JSON text: a JSON column stores it as it is (not encoded again)."""


def _json_dumps(value: Any) -> str:
    return str(value) if isinstance(value, EncodedJSON) else json.dumps(value)


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
        engine = sa.create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 10}, json_serializer=_json_dumps
        )

        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            if ":memory:" not in url and url != "sqlite://":
                cur.execute("PRAGMA journal_mode=WAL")
                # The commit that crosses the WAL's checkpoint threshold copies the WAL into the database and
                # fsyncs both inside its request: at SQLite's default (1000 pages) that was 20 ms every ~25
                # plans, a p99 spike. With 10x the threshold it is one commit in ~270, and the service's
                # background checkpoints (`Store.start_checkpoints`) have copied most frames by then.
                cur.execute(f"PRAGMA wal_autocheckpoint={_AUTOCHECKPOINT_PAGES}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=10000")
            cur.close()

        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=8, max_overflow=8, json_serializer=_json_dumps)


class Store:
    """Reads and writes of the service's tables; every method is one short transaction."""

    def __init__(self, url: str, create: bool = True) -> None:
        """Open the store at `url`; `create` makes missing tables (the service), False only reads what is there
        (a reader such as fine-tuning must not write to a store it was pointed at)."""
        self.url = normalise_url(url)
        self.engine = make_engine(url)
        self._checkpoints: tuple[threading.Thread, threading.Event] | None = None
        for attempt in range(20 if create else 0):
            try:
                metadata.create_all(self.engine)
                break
            except sa.exc.DBAPIError:  # workers or replicas starting together: another one created a table first
                if attempt == 19:  # (create_all checks, then creates table by table: each table can race)
                    raise
                time.sleep(0.05 * (attempt + 1))

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints[1].set()
            self._checkpoints[0].join(timeout=10)
            self._checkpoints = None
        self.engine.dispose()

    def start_checkpoints(self, interval_s: float = 0.2) -> None:
        """SQLite file: copy the WAL into the database every `interval_s` from a background thread.

        A PASSIVE checkpoint never blocks writers. Under steady writes it cannot reset the WAL (frames
        arrive while it runs), so the threshold's checkpoint still falls to a commit now and then, but it
        finds little left to copy.
        """
        in_memory = ":memory:" in self.url or self.url == "sqlite://"
        if self.dialect != "sqlite" or in_memory or self._checkpoints is not None:
            return
        stop = threading.Event()

        def run() -> None:
            while not stop.wait(interval_s):
                try:
                    with self.engine.connect() as conn:
                        conn.exec_driver_sql("PRAGMA wal_checkpoint(PASSIVE)")
                except Exception as err:  # noqa: BLE001  (a failed checkpoint is retried; the WAL just grows meanwhile)
                    log.warning("store checkpoint failed: %s", err)

        thread = threading.Thread(target=run, name="dagsched-store-checkpoint", daemon=True)
        self._checkpoints = (thread, stop)
        thread.start()

    def ping(self) -> None:
        """Raise if the database cannot be reached (readiness)."""
        with self.engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))

    # ---- plans and decisions ------------------------------------------------------------

    def save_plan(self, plan: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> None:
        """One plan and its decisions, in one transaction (the decisions as one executemany)."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(_INSERT_PLAN, [{**plan, "created_at": now}])
            batch = [{**r, "created_at": now} for r in rows]
            if batch:
                conn.execute(_INSERT_DECISION, batch)

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

    def list_plans(
        self,
        text: str | None = None,
        workflow: str | None = None,
        scheduler: str | None = None,
        fallback: bool | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[dict[str, Any]], int]:
        """The newest plans matching the filters (without their request and response), and how many match.

        `text` matches a substring of the workflow's name or the start of the plan's id."""
        cols = [c for c in plans.c if c.name not in ("request", "response")]
        where = []
        if text:
            pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append(
                sa.or_(plans.c.workflow.ilike(f"%{pattern}%", escape="\\"), plans.c.id.like(f"{pattern}%", escape="\\"))
            )
        if workflow is not None:
            where.append(plans.c.workflow == workflow)
        if scheduler is not None:
            where.append(plans.c.scheduler == scheduler)
        if fallback is not None:
            where.append(plans.c.fallback == fallback)
        q = sa.select(*cols).where(*where).order_by(plans.c.created_at.desc(), plans.c.id).limit(limit).offset(offset)
        with self.engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(q).mappings()]
            total = int(conn.execute(sa.select(sa.func.count()).select_from(plans).where(*where)).scalar_one())
        return rows, total

    def count_plans(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(plans)).scalar_one())

    def decisions(
        self,
        workflow: str | None = None,
        plan_id: str | None = None,
        limit: int = 100,
        scheduler: str | None = None,
        model_version: str | None = None,
        fallback: bool | None = None,
    ) -> list[dict]:
        """The newest decisions matching the filters, each with whether its plan fell back (`fallback`)."""
        q = (
            sa.select(decisions, plans.c.fallback)
            .join(plans, plans.c.id == decisions.c.plan_id)
            .order_by(decisions.c.id.desc())
            .limit(limit)
        )
        if workflow is not None:
            q = q.where(decisions.c.workflow == workflow)
        if plan_id is not None:
            q = q.where(decisions.c.plan_id == plan_id)
        if scheduler is not None:
            q = q.where(decisions.c.scheduler == scheduler)
        if model_version is not None:
            q = q.where(decisions.c.model_version == model_version)
        if fallback is not None:
            q = q.where(plans.c.fallback == fallback)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def first_plans(self, environment: str, since: float, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` first plans (not re-plans) labelled `environment` created at or after `since`:
        id, workflow, created_at and the request they answered (what fine-tuning re-builds)."""
        q = (
            sa.select(plans.c.id, plans.c.workflow, plans.c.created_at, plans.c.request)
            .where(plans.c.environment == environment, plans.c.id == plans.c.root_id, plans.c.created_at >= since)
            .order_by(plans.c.created_at.desc(), plans.c.id)
            .limit(limit)
        )
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def plans_per_environment(self, since: float) -> list[tuple[str, int]]:
        """(environment label, plans) created at or after `since`, by label."""
        q = (
            sa.select(plans.c.environment, sa.func.count())
            .where(plans.c.created_at >= since)
            .group_by(plans.c.environment)
            .order_by(plans.c.environment)
        )
        with self.engine.connect() as conn:
            return [(str(label), int(n)) for label, n in conn.execute(q)]

    def planned_node(self, workflow: str, task: str) -> str | None:
        """The node of the newest decision for (workflow, task), for the Kubernetes extender (called per pod)."""
        with self.engine.connect() as conn:
            return conn.execute(_PLANNED_NODE, {"workflow": workflow, "task": task}).scalar_one_or_none()

    # ---- events ------------------------------------------------------------------------------

    def add_event(self, root_id: str, kind: str, task: str | None, node: str | None, at: float, payload: dict) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                events.insert().values(
                    root_id=root_id, kind=kind, task=task, node=node, at=at, payload=payload, created_at=time.time()
                )
            )

    def executed_roots(self, since: float, environment: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` first plans created at or after `since` (of `environment`, or any) that have events:
        id, workflow, scheduler, environment, created_at, makespan, request, response."""
        has_events = sa.exists().where(events.c.root_id == plans.c.id)
        q = sa.select(
            plans.c.id, plans.c.workflow, plans.c.scheduler, plans.c.environment, plans.c.created_at,
            plans.c.makespan, plans.c.request, plans.c.response,
        ).where(plans.c.id == plans.c.root_id, plans.c.created_at >= since, has_events)  # fmt: skip
        if environment is not None:
            q = q.where(plans.c.environment == environment)
        q = q.order_by(plans.c.created_at.desc(), plans.c.id).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def executed_per_environment(self, since: float) -> dict[str, int]:
        """First plans with events, created at or after `since`, by environment label."""
        has_events = sa.exists().where(events.c.root_id == plans.c.id)
        q = (
            sa.select(plans.c.environment, sa.func.count())
            .where(plans.c.id == plans.c.root_id, plans.c.created_at >= since, has_events)
            .group_by(plans.c.environment)
        )
        with self.engine.connect() as conn:
            return {str(label): int(n) for label, n in conn.execute(q)}

    def foreign_replans(self, root_ids: list[str], environment: str) -> list[tuple[str, str, str]]:
        """(root id, plan id, label) of the re-plans of those chains stored with another environment label."""
        out: list[tuple[str, str, str]] = []
        with self.engine.connect() as conn:
            for i in range(0, len(root_ids), 500):
                q = sa.select(plans.c.root_id, plans.c.id, plans.c.environment).where(
                    plans.c.root_id.in_(root_ids[i : i + 500]),
                    plans.c.id != plans.c.root_id,
                    plans.c.environment != environment,
                )
                out += [(str(r), str(p), str(e)) for r, p, e in conn.execute(q)]
        return out

    def events_after(self, after_id: int, created_since: float) -> list[tuple[int, str]]:
        """(id, root_id) of the events stored after event `after_id` and at or after `created_since`, in order."""
        q = (
            sa.select(events.c.id, events.c.root_id)
            .where(events.c.id > after_id, events.c.created_at >= created_since)
            .order_by(events.c.id)
        )
        with self.engine.connect() as conn:
            return [(int(i), str(r)) for i, r in conn.execute(q)]

    def events_of(self, root_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The events of each chain, in the order they were stored (not sorted by time: an audit checks that)."""
        out: dict[str, list[dict[str, Any]]] = {r: [] for r in root_ids}
        with self.engine.connect() as conn:
            for i in range(0, len(root_ids), 500):
                chunk = root_ids[i : i + 500]
                q = sa.select(events).where(events.c.root_id.in_(chunk)).order_by(events.c.id)
                for row in conn.execute(q).mappings():
                    out[row["root_id"]].append(dict(row))
        return out

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

    def put_model_blob(self, sha256: str, version: str, weights: bytes, meta: dict) -> None:
        """Keep a policy's files, once per sha256 (a second put of the same policy is a no-op)."""
        with self.engine.connect() as conn:
            if conn.execute(sa.select(model_blobs.c.sha256).where(model_blobs.c.sha256 == sha256)).first():
                return
        try:
            with self.engine.begin() as conn:
                conn.execute(
                    model_blobs.insert().values(
                        sha256=sha256, version=version, weights=weights, meta=meta, created_at=time.time()
                    )
                )
        except sa.exc.IntegrityError:  # another replica kept the same policy first
            pass

    def get_model_blob(self, sha256: str) -> tuple[bytes, dict] | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(model_blobs.c.weights, model_blobs.c.meta).where(model_blobs.c.sha256 == sha256)
            ).first()
        return (bytes(row[0]), dict(row[1])) if row else None

    def serving_state(self) -> dict[str, Any] | None:
        """The serving row (revision, model_sha256, model_source, config), or None before anything was published."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(serving).where(serving.c.key == "live")).mappings().first()
        return dict(row) if row else None

    def publish(
        self, model_sha256: str | None = None, model_source: str | None = None, config: dict | None = None
    ) -> int:
        """Change what every replica serves (the fields given; the others stay) and bump the revision: returns it."""
        values: dict[str, Any] = {"updated_at": time.time()}
        if model_sha256 is not None:
            values |= {"model_sha256": model_sha256, "model_source": model_source}
        if config is not None:
            values["config"] = config
        for attempt in range(20):
            try:
                with self.engine.begin() as conn:
                    q = serving.update().where(serving.c.key == "live")
                    done = conn.execute(q.values(revision=serving.c.revision + 1, **values))
                    if done.rowcount == 0:
                        conn.execute(serving.insert().values(key="live", revision=1, **values))
                    return int(conn.execute(sa.select(serving.c.revision).where(serving.c.key == "live")).scalar_one())
            except sa.exc.IntegrityError:  # two replicas created the row at once: the update finds it now
                if attempt == 19:
                    raise
        raise AssertionError("unreachable")

    def plans_by_ids(self, ids: list[str]) -> list[dict[str, Any]]:
        """Whole plan rows by id (those that exist)."""
        out: list[dict[str, Any]] = []
        with self.engine.connect() as conn:
            for i in range(0, len(ids), 500):
                q = sa.select(plans).where(plans.c.id.in_(ids[i : i + 500]))
                out += [dict(r) for r in conn.execute(q).mappings()]
        return out

    def model_blob_by_version(self, version: str) -> tuple[str, bytes, dict] | None:
        """The newest kept policy with this version: (sha256, weights, metadata)."""
        q = (
            sa.select(model_blobs.c.sha256, model_blobs.c.weights, model_blobs.c.meta)
            .where(model_blobs.c.version == version)
            .order_by(model_blobs.c.created_at.desc())
            .limit(1)
        )
        with self.engine.connect() as conn:
            row = conn.execute(q).first()
        return (str(row[0]), bytes(row[1]), dict(row[2])) if row else None

    # ---- canary ------------------------------------------------------------------------------

    def add_canary(self, row: Mapping[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(canary.insert().values(created_at=time.time(), **row))

    def canary_rows(self, canary_id: str, fraction: float | None = None) -> list[dict[str, Any]]:
        q = sa.select(canary).where(canary.c.canary_id == canary_id)
        if fraction is not None:
            q = q.where(canary.c.fraction == fraction)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.order_by(canary.c.id)).mappings()]

    def canary_steps(self, canary_id: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """The steps of one canary in order, or (None) the newest steps of every canary, newest first."""
        q = sa.select(canary_steps)
        if canary_id is not None:
            q = q.where(canary_steps.c.canary_id == canary_id).order_by(canary_steps.c.seq)
        else:
            q = q.order_by(canary_steps.c.id.desc())
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q.limit(limit)).mappings()]

    def add_canary_step(self, row: Mapping[str, Any]) -> bool:
        """Record a step; False when another replica took that step number first (nothing is written)."""
        try:
            with self.engine.begin() as conn:
                conn.execute(canary_steps.insert().values(created_at=time.time(), **row))
        except sa.exc.IntegrityError:
            return False
        return True

    # ---- online fine-tuning ------------------------------------------------------------------

    def add_finetune_run(self, row: Mapping[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(finetune_runs.insert().values(**row))

    def finetune_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        q = sa.select(finetune_runs).order_by(finetune_runs.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

    def take_lease(self, name: str, holder: str, seconds: float) -> bool:
        """Hold `name` for `seconds` unless another holder's lease is still running; True when held."""
        now = time.time()
        try:
            with self.engine.begin() as conn:
                done = conn.execute(
                    leases.update()
                    .where(leases.c.name == name, sa.or_(leases.c.until < now, leases.c.holder == holder))
                    .values(holder=holder, until=now + seconds)
                )
                if done.rowcount:
                    return True
                if conn.execute(sa.select(leases.c.name).where(leases.c.name == name)).first() is None:
                    conn.execute(leases.insert().values(name=name, holder=holder, until=now + seconds))
                    return True
        except sa.exc.IntegrityError:
            return False
        return False

    def release_lease(self, name: str, holder: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(leases.update().where(leases.c.name == name, leases.c.holder == holder).values(until=0.0))

    def add_shadow(self, row: Mapping[str, Any]) -> None:
        with self.engine.begin() as conn:
            conn.execute(shadow.insert().values(created_at=time.time(), **row))

    def shadow_rows(self, limit: int = 10_000) -> list[dict[str, Any]]:
        q = sa.select(shadow).order_by(shadow.c.id.desc()).limit(limit)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(q).mappings()]

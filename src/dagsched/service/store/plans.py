"""Plans, their decisions and the shadow scheduler's figures: what the service planned."""

from __future__ import annotations

import builtins
import time
from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa

from dagsched.service.refusals import NotFound
from dagsched.service.store.engine import Part
from dagsched.service.store.schema import decisions, events, plans, shadow

# Statements of the hot paths, built once (building one per call cost more than running it).
_INSERT_PLAN = plans.insert()
_INSERT_DECISION = decisions.insert()
_PLANNED_NODE = (
    sa.select(decisions.c.node)
    .where(decisions.c.workflow == sa.bindparam("workflow"), decisions.c.task == sa.bindparam("task"))
    .order_by(decisions.c.id.desc())
    .limit(1)
)


def _equal(pairs: Iterable[tuple[Any, Any]]) -> builtins.list[Any]:
    """`column == value` for each pair whose value is given (not None): the filters a caller set."""
    return [column == value for column, value in pairs if value is not None]


class Plans(Part):
    """Reads and writes of `plans`, `decisions` and `shadow`; every method is one short transaction."""

    def save(self, plan: Mapping[str, Any], rows: Iterable[Mapping[str, Any]]) -> None:
        """One plan and its decisions, in one transaction (the decisions as one executemany)."""
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(_INSERT_PLAN, [{**plan, "created_at": now}])
            batch = [{**r, "created_at": now} for r in rows]
            if batch:
                conn.execute(_INSERT_DECISION, batch)

    def get(self, plan_id: str) -> dict[str, Any] | None:
        return self._first(sa.select(plans).where(plans.c.id == plan_id))

    def require(self, plan_id: str) -> dict[str, Any]:
        """The plan `plan_id`; NotFound (HTTP 404, gRPC NOT_FOUND) naming it when there is none."""
        row = self.get(plan_id)
        if row is None:
            raise NotFound(f"plan_id: no plan '{plan_id}'")
        return row

    def latest_revision(self, root_id: str) -> dict[str, Any] | None:
        """The newest plan of a chain (the first plan or its latest re-plan)."""
        q = sa.select(plans).where(plans.c.root_id == root_id).order_by(plans.c.created_at.desc(), plans.c.id)
        return self._first(q.limit(1))

    def list(
        self,
        text: str | None = None,
        workflow: str | None = None,
        scheduler: str | None = None,
        fallback: bool | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[builtins.list[dict[str, Any]], int]:
        """The newest plans matching the filters, without request and response, and how many match."""
        cols = [c for c in plans.c if c.name not in ("request", "response")]
        where = []
        if text:
            pattern = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append(
                sa.or_(plans.c.workflow.ilike(f"%{pattern}%", escape="\\"), plans.c.id.like(f"{pattern}%", escape="\\"))
            )
        where += _equal(((plans.c.workflow, workflow), (plans.c.scheduler, scheduler), (plans.c.fallback, fallback)))
        q = sa.select(*cols).where(*where).order_by(plans.c.created_at.desc(), plans.c.id).limit(limit).offset(offset)
        with self.engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(q).mappings()]
            total = int(conn.execute(sa.select(sa.func.count()).select_from(plans).where(*where)).scalar_one())
        return rows, total

    def count(self) -> int:
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
    ) -> builtins.list[dict[str, Any]]:
        """The newest decisions matching the filters, each with whether its plan fell back (`fallback`)."""
        q = (
            sa.select(decisions, plans.c.fallback)
            .join(plans, plans.c.id == decisions.c.plan_id)
            .order_by(decisions.c.id.desc())
            .limit(limit)
        )
        c = decisions.c
        pairs: builtins.list[tuple[Any, Any]] = [(c.workflow, workflow), (c.plan_id, plan_id), (c.scheduler, scheduler)]
        pairs += [(c.model_version, model_version), (plans.c.fallback, fallback)]
        return self._rows(q.where(*_equal(pairs)))

    def first_plans(self, environment: str, since: float, limit: int) -> builtins.list[dict[str, Any]]:
        """The newest `limit` first plans labelled `environment` since `since`, with their requests."""
        q = (
            sa.select(plans.c.id, plans.c.workflow, plans.c.created_at, plans.c.request)
            .where(plans.c.environment == environment, plans.c.id == plans.c.root_id, plans.c.created_at >= since)
            .order_by(plans.c.created_at.desc(), plans.c.id)
            .limit(limit)
        )
        return self._rows(q)

    def per_environment(self, since: float, executed: bool = False) -> dict[str, int]:
        """Plans created at or after `since` by environment label, in label order; with `executed`, only the first
        plans that have events (the executed runs)."""
        q = sa.select(plans.c.environment, sa.func.count()).where(plans.c.created_at >= since)
        if executed:
            q = q.where(plans.c.id == plans.c.root_id, sa.exists().where(events.c.root_id == plans.c.id))
        q = q.group_by(plans.c.environment).order_by(plans.c.environment)
        with self.engine.connect() as conn:
            return {str(label): int(n) for label, n in conn.execute(q)}

    def planned_node(self, workflow: str, task: str) -> str | None:
        """The node of the newest decision for (workflow, task), for the Kubernetes extender (called per pod)."""
        with self.engine.connect() as conn:
            return conn.execute(_PLANNED_NODE, {"workflow": workflow, "task": task}).scalar_one_or_none()

    def by_ids(self, ids: builtins.list[str]) -> builtins.list[dict[str, Any]]:
        """Whole plan rows by id (those that exist)."""
        return self._rows_in(sa.select(plans), plans.c.id, ids)

    def add_shadow(self, row: Mapping[str, Any]) -> None:
        self._insert(shadow, created_at=time.time(), **row)

    def shadow_rows(self, limit: int = 10_000) -> builtins.list[dict[str, Any]]:
        q = sa.select(shadow).order_by(shadow.c.id.desc()).limit(limit)
        return self._rows(q)

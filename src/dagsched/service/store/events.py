"""What clients reported about their plans (`events`), and which plans ran: the store's view of reality."""

from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa

from dagsched.service.store.engine import Part
from dagsched.service.store.schema import events, plans


class Events(Part):
    """Reads and writes of `events`, and the plans that have them; every method is one short transaction."""

    def add(
        self, root_id: str, kind: str, task: str | None, node: str | None, at: float, payload: dict[str, Any]
    ) -> None:
        self._insert(
            events, root_id=root_id, kind=kind, task=task, node=node, at=at, payload=payload, created_at=time.time()
        )

    def of_chain(self, root_id: str) -> list[dict[str, Any]]:
        """The events of one chain, by time reported (`at`), then in the order they were stored."""
        q = sa.select(events).where(events.c.root_id == root_id).order_by(events.c.at, events.c.id)
        return self._rows(q)

    def of_chains(self, root_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        """The events of each chain, in the order they were stored (not sorted by time: an audit checks that)."""
        out: dict[str, list[dict[str, Any]]] = {r: [] for r in root_ids}
        for row in self._rows_in(sa.select(events).order_by(events.c.id), events.c.root_id, root_ids):
            out[row["root_id"]].append(row)
        return out

    def executed_roots(self, since: float, environment: str | None, limit: int) -> list[dict[str, Any]]:
        """The newest `limit` first plans since `since` (of `environment`, or any) that have events."""
        has_events = sa.exists().where(events.c.root_id == plans.c.id)
        q = sa.select(
            plans.c.id, plans.c.workflow, plans.c.scheduler, plans.c.environment, plans.c.created_at,
            plans.c.makespan, plans.c.request, plans.c.response,
        ).where(plans.c.id == plans.c.root_id, plans.c.created_at >= since, has_events)  # fmt: skip
        if environment is not None:
            q = q.where(plans.c.environment == environment)
        q = q.order_by(plans.c.created_at.desc(), plans.c.id).limit(limit)
        return self._rows(q)

    def foreign_replans(self, root_ids: list[str], environment: str) -> list[tuple[str, str, str]]:
        """(root id, plan id, label) of the re-plans of those chains stored with another environment label."""
        q = sa.select(plans.c.root_id, plans.c.id, plans.c.environment)
        q = q.where(plans.c.id != plans.c.root_id, plans.c.environment != environment)
        return [
            (str(r["root_id"]), str(r["id"]), str(r["environment"]))
            for r in self._rows_in(q, plans.c.root_id, root_ids)
        ]

    def after(self, after_id: int, created_since: float) -> list[tuple[int, str]]:
        """(id, root_id) of the events stored after event `after_id` and at or after `created_since`, in order."""
        q = (
            sa.select(events.c.id, events.c.root_id)
            .where(events.c.id > after_id, events.c.created_at >= created_since)
            .order_by(events.c.id)
        )
        return [(int(r["id"]), str(r["root_id"])) for r in self._rows(q)]

"""What every replica serves (`serving`), the canary's plans and steps, and the online fine-tunes' records."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from dagsched.service.store.engine import Part
from dagsched.service.store.schema import canary, canary_steps, finetune_runs, serving


class Runtime(Part):
    """Reads and writes of `serving`, `canary`, `canary_steps` and `finetune_runs`; each one short transaction."""

    def serving_state(self) -> dict[str, Any] | None:
        """The serving row (revision, model_sha256, model_source, config), or None before anything was published."""
        return self._first(sa.select(serving).where(serving.c.key == "live"))

    def publish(
        self, model_sha256: str | None = None, model_source: str | None = None, config: dict[str, Any] | None = None
    ) -> None:
        """Change what every replica serves (the fields given; the others stay) and bump the revision."""
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
                return
            except sa.exc.IntegrityError:  # two replicas created the row at once: the update finds it now
                if attempt == 19:
                    raise

    def add_canary(self, row: Mapping[str, Any]) -> None:
        self._insert(canary, created_at=time.time(), **row)

    def canary_rows(self, canary_id: str, fraction: float) -> list[dict[str, Any]]:
        q = sa.select(canary).where(canary.c.canary_id == canary_id, canary.c.fraction == fraction)
        return self._rows(q.order_by(canary.c.id))

    def canary_steps(self, canary_id: str | None = None, limit: int = 200) -> list[dict[str, Any]]:
        """The steps of one canary in order, or (None) the newest steps of every canary, newest first."""
        q = sa.select(canary_steps)
        if canary_id is not None:
            q = q.where(canary_steps.c.canary_id == canary_id).order_by(canary_steps.c.seq)
        else:
            q = q.order_by(canary_steps.c.id.desc())
        return self._rows(q.limit(limit))

    def add_canary_step(self, row: Mapping[str, Any]) -> bool:
        """Record a step; False when another replica took that step number first (nothing is written)."""
        try:
            self._insert(canary_steps, created_at=time.time(), **row)
        except sa.exc.IntegrityError:
            return False
        return True

    def add_finetune_run(self, row: Mapping[str, Any]) -> None:
        self._insert(finetune_runs, **row)

    def finetune_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        q = sa.select(finetune_runs).order_by(finetune_runs.c.id.desc()).limit(limit)
        return self._rows(q)

"""Plan a workflow and record it: what `POST /v1/schedule` and gRPC `Schedule` do, and what runs after the answer
(the shadow's plan, the canary's other arm).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pydantic import TypeAdapter

from dagsched.model.errors import InputError
from dagsched.service.config import RuntimeConfig
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.planner import Planned, Planner
from dagsched.service.schemas import PlanResponse, ScheduleRequest
from dagsched.service.store import EncodedJSON
from dagsched.service.store.plans import Plans

_PLAN = TypeAdapter(PlanResponse)

SMALL_PLAN_CELLS = 512
"""Plans of at most this many (task, node) pairs run on the calling event loop by default (`plan_if_small`,
`DAGSCHED_LOOP_PLAN_CELLS`): a 20-task plan on 16 nodes takes a few milliseconds, less than the trip to a worker
thread and back cost it (0.35 ms of CPU, 0.6 ms of wall); larger plans go to a thread, so the loop keeps answering
health checks and the extender meanwhile. The price: an extender call that arrives during such a plan waits for it
(docs/service.md, "Performance")."""
Later = Callable[[Callable[[], None]], object]
"""Where what runs after the answer is sent goes (the shadow's plan, the canary's other arm)."""


@dataclass(eq=False)
class Planning:
    """Plans and their records, for one process."""

    planner: Planner
    plans: Plans
    metrics: ServiceMetrics
    max_nodes: int
    lock: threading.Lock
    """One plan at a time per process: interleaved plans gain nothing under the GIL and miss their deadlines."""
    record_canary: Callable[[Planned, RuntimeConfig], None]
    small_cells: int = SMALL_PLAN_CELLS
    """`plan_if_small`'s limit; 0: every plan goes to a thread"""

    def plan(self, body: ScheduleRequest, config: RuntimeConfig, later: Later) -> tuple[Planned, bytes]:
        """Plan, encode the response once (as the schema checks it), store the plan with that same text; hand `later`
        what runs after the answer is sent: the shadow's plan, and the canary's other arm."""
        self._check_nodes(body)
        with self.lock:
            planned = self.planner.plan(body, config)
        return planned, self._record(planned, config, later)

    def plan_if_small(self, body: ScheduleRequest, config: RuntimeConfig, later: Later) -> tuple[Planned, bytes] | None:
        """`plan` here and now when the workflow is native and small (`small_cells`) and no other plan runs; None
        otherwise (the caller plans on a thread: an event loop never waits for the lock)."""
        tasks = body.workflow.get("tasks")
        if not isinstance(tasks, list) or not tasks or len(tasks) * len(body.nodes) > self.small_cells:
            return None
        self._check_nodes(body)
        if not self.lock.acquire(blocking=False):
            return None
        try:
            planned = self.planner.plan(body, config)
        finally:
            self.lock.release()
        return planned, self._record(planned, config, later)

    def _check_nodes(self, body: ScheduleRequest) -> None:
        if len(body.nodes) > self.max_nodes:
            raise InputError("nodes", f"{len(body.nodes)} nodes is over this service's limit of {self.max_nodes}")

    def _record(self, planned: Planned, config: RuntimeConfig, later: Later) -> bytes:
        content = _PLAN.dump_json(_PLAN.validate_python(planned.response))
        with self.metrics.store_save_plan.time():
            self.plans.save({**planned.plan_row, "response": EncodedJSON(content.decode())}, planned.decision_rows)
        if config.shadow:
            later(partial(self.shadow, planned, config.shadow))
        if planned.route is not None:  # a canary runs: the other arm plans the same problem, for the comparison
            later(partial(self.record_canary, planned, config))
        return content

    def shadow(self, planned: Planned, name: str) -> None:
        """The shadow scheduler's plan of the same problem, stored beside the live one and counted."""
        live = planned.response
        if name == live["scheduler"]:
            return
        with self.lock:  # not beside a live plan
            result = self.planner.plan_alone(planned.cp, name)
        if result is None:
            return
        row = {
            "plan_id": live["plan_id"],
            "live": live["scheduler"],
            "shadow": name,
            "live_makespan": live["makespan"],
            "live_cost": live["cost"],
            "shadow_makespan": result.metrics.makespan,
            "shadow_cost": result.metrics.cost,
            "environment": self.planner.environment,
        }
        self.plans.add_shadow(row)
        m = self.metrics
        diff = row["live_makespan"] - row["shadow_makespan"]  # as the shadow report tells wins and ties
        m.shadow_plans.labels(winner="tie" if abs(diff) <= 1e-9 else ("live" if diff < 0 else "shadow")).inc()
        if row["shadow_makespan"] > 0:
            m.shadow_makespan_ratio.set(row["live_makespan"] / row["shadow_makespan"])
        if row["shadow_cost"] > 0:
            m.shadow_cost_ratio.set(row["live_cost"] / row["shadow_cost"])

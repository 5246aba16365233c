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

    def plan(
        self, body: ScheduleRequest, config: RuntimeConfig, later: Callable[[Callable[[], None]], object]
    ) -> tuple[Planned, bytes]:
        """Plan, encode the response once (as the schema checks it), store the plan with that same text; hand `later`
        what runs after the answer is sent: the shadow's plan, and the canary's other arm."""
        if len(body.nodes) > self.max_nodes:
            raise InputError("nodes", f"{len(body.nodes)} nodes is over this service's limit of {self.max_nodes}")
        with self.lock:
            planned = self.planner.plan(body, config)
        content = _PLAN.dump_json(_PLAN.validate_python(planned.response))
        with self.metrics.store_save_plan.time():
            self.plans.save({**planned.plan_row, "response": EncodedJSON(content.decode())}, planned.decision_rows)
        if config.shadow:
            later(partial(self.shadow, planned, config.shadow))
        if planned.route is not None:  # a canary runs: the other arm plans the same problem, for the comparison
            later(partial(self.record_canary, planned, config))
        return planned, content

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
        live_wins = row["live_makespan"] < row["shadow_makespan"] - 1e-9
        tie = abs(row["live_makespan"] - row["shadow_makespan"]) <= 1e-9
        m.shadow_plans.labels(winner="tie" if tie else ("live" if live_wins else "shadow")).inc()
        if row["shadow_makespan"] > 0:
            m.shadow_makespan_ratio.set(row["live_makespan"] / row["shadow_makespan"])
        if row["shadow_cost"] > 0:
            m.shadow_cost_ratio.set(row["live_cost"] / row["shadow_cost"])

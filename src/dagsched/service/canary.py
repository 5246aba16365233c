"""Canary release: a candidate scheduler or model version plans a growing, sticky share of the workflows, judged on
what really ran, promoted stage by stage or rolled back (docs/service.md, "Canary release").
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from pydantic_core import to_jsonable_python

from dagsched.bench.stats import bootstrap_ci
from dagsched.service.config import LEARNED_SCHEDULER, Canary, RuntimeConfig, needs_policy
from dagsched.service.finetune import in_fraction
from dagsched.service.guards import Breaker
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.models import ModelManager, safe_name
from dagsched.service.planner import Planned, Planner, Route
from dagsched.service.reality import rebuild_all
from dagsched.service.settings import Settings
from dagsched.service.store import Store

log = logging.getLogger("dagsched.service")


def with_id(config: RuntimeConfig) -> RuntimeConfig:
    """The config with its canary named (a new canary gets an id when it is first applied)."""
    if config.canary is None or config.canary.id is not None:
        return config
    canary = config.canary.model_copy(update={"id": uuid.uuid4().hex[:12]})
    return config.model_copy(update={"canary": canary})


class ConfigPublisher(Protocol):
    """How a step reaches every replica: the state applies a config or serves a policy, and publishes it."""

    def apply_config(self, config: RuntimeConfig) -> None: ...

    def serve_model(self, stem: Path, source: str) -> None: ...


@dataclass(eq=False)
class CanaryController:
    """Routes workflows to arms, records canary plans, judges stages and takes the steps, for one replica."""

    planner: Planner
    plan_lock: threading.Lock
    store: Store
    metrics: ServiceMetrics
    live_config: Callable[[], RuntimeConfig]
    publisher: ConfigPublisher
    settings: Settings  # model_dir (candidates are loaded in its `canary` folder), max_upload_bytes, environment

    def __post_init__(self) -> None:
        self.plans, self.runtime = self.store.plans, self.store.runtime
        self.breaker = Breaker()
        """the model-version candidate's own breaker (a scheduler candidate that needs a policy uses the planner's)"""
        self._models: tuple[str, ModelManager] | None = None
        self._lock = threading.Lock()

    def route(self, workflow: str, config: RuntimeConfig, arm: str | None) -> Route | None:
        c = config.canary
        if c is None or c.id is None:
            return None
        if arm is None:
            arm = "candidate" if in_fraction(workflow, c.fraction) else "default"  # sticky: by the name's hash
        if arm == "default":
            return Route("default", config.default_scheduler, c.id)
        if c.scheduler is not None:
            breaker = self.planner.breaker if needs_policy(c.scheduler) else None
            return Route("candidate", c.scheduler, c.id, None, breaker)
        return Route("candidate", LEARNED_SCHEDULER, c.id, self.candidate_models(c), self.breaker)

    def candidate_models(self, c: Canary) -> ModelManager:
        """The candidate policy, loaded once per canary from the store (its `error` says why it could not)."""
        with self._lock:
            if self._models is not None and self._models[0] == c.id:
                return self._models[1]
            folder = self.settings.model_dir / "canary"
            models = ModelManager(folder, self.settings.max_upload_bytes)
            version = str(c.model_version)
            blob = self.store.models.blob_by_version(version)
            if blob is None:
                models.error = f"candidate model '{version}' is not in the store (upload it first)"
            else:
                _, weights, meta = blob
                try:
                    models.load_kept(folder / safe_name(version), weights, meta, "canary")
                except Exception as err:  # noqa: BLE001  (reported through the candidate's fallbacks)
                    models.error = f"candidate model '{version}' does not load: {err}"
            self.breaker = Breaker()
            self._models = (str(c.id), models)
            return models

    def record(self, planned: Planned, config: RuntimeConfig) -> None:
        """Store a first plan's canary row with the other arm's plan of the same problem (run in the background)."""
        route, c = planned.route, config.canary
        if route is None or c is None or route.canary_id != c.id:
            return
        live = planned.response
        if route.arm == "candidate":
            other_name, models = config.default_scheduler, None
        else:
            other_name = c.scheduler or LEARNED_SCHEDULER
            models = self.candidate_models(c) if c.model_version is not None else None
        with self.plan_lock:
            other = self.planner.plan_alone(planned.cp, other_name, models)
        self.runtime.add_canary(
            {
                "canary_id": c.id,
                "plan_id": live["plan_id"],
                "workflow": live["workflow"],
                "arm": route.arm,
                "fraction": c.fraction,
                "live_scheduler": live["scheduler"],
                "live_makespan": live["makespan"],
                "other_scheduler": other_name if c.model_version is None or route.arm == "candidate" else c.candidate,
                "other_makespan": other.metrics.makespan if other is not None else None,
                "fallback": live["fallback"],
                "environment": self.settings.environment,
            }
        )
        if route.arm == "candidate" and live["fallback"]:
            self.evaluate(config)

    def stage_figures(self, c: Canary) -> dict[str, Any]:
        """Per arm at the current stage the executed figures, and the paired plan comparison."""
        assert c.id is not None
        rows = self.runtime.canary_rows(c.id, c.fraction)
        plans = self.plans.by_ids([r["plan_id"] for r in rows])
        bound = self.live_config().calibration.outlier_bound
        runs = {run.root_id: run for run in rebuild_all(self.store, plans, bound, None)}  # what each plan's events say
        arms: dict[str, dict[str, Any]] = {}
        for arm in ("default", "candidate"):
            mine = [r for r in rows if r["arm"] == arm]
            normalised, achieved = [], []
            for r in mine:
                run = runs.get(r["plan_id"])
                if run is None or not run.clean or run.achieved_makespan is None:
                    continue
                default_plan = r["live_makespan"] if arm == "default" else r["other_makespan"]
                achieved.append(run.achieved_makespan)
                if default_plan:
                    normalised.append(run.achieved_makespan / default_plan)
            arms[arm] = {
                "plans": len(mine),
                "fallbacks": sum(1 for r in mine if r["fallback"]),
                "executed": len(normalised),
                "plan_makespan_mean": float(np.mean([r["live_makespan"] for r in mine])) if mine else None,
                "achieved_makespan_mean": float(np.mean(achieved)) if achieved else None,
                "normalised_mean": float(np.mean(normalised)) if normalised else None,
                "normalised_ci": list(bootstrap_ci(normalised)) if normalised else [None, None],
            }
        pairs = [
            (r["live_makespan"], r["other_makespan"])
            if r["arm"] == "candidate"
            else (r["other_makespan"], r["live_makespan"])
            for r in rows
            if r["other_makespan"]
        ]
        ratio = np.array([cand / dflt for cand, dflt in pairs if dflt > 0])
        paired = {
            "plans": len(ratio),
            "candidate_wins": int((ratio < 1 - 1e-9).sum()),
            "ties": int((np.abs(ratio - 1) <= 1e-9).sum()),
            "default_wins": int((ratio > 1 + 1e-9).sum()),
            "ratio_mean": float(ratio.mean()) if len(ratio) else None,
            "ratio_ci": list(bootstrap_ci(ratio)) if len(ratio) else [None, None],
        }
        return {"fraction": c.fraction, "arms": arms, "paired": paired}

    def verdict(self, c: Canary, figures: dict[str, Any]) -> tuple[str, str]:
        """("rollback" | "promote" | "wait", why)."""
        cand, dflt = figures["arms"]["candidate"], figures["arms"]["default"]
        if cand["fallbacks"] >= c.max_errors:
            return "rollback", f"the candidate erred: {cand['fallbacks']} of its plans fell back to HEFT"
        breaker = self.breaker if c.model_version is not None else self.planner.breaker
        if (c.model_version is not None or needs_policy(c.scheduler)) and breaker.is_open():
            return "rollback", "the candidate's breaker opened (failures or decisions past the deadline)"
        if cand["executed"] < c.min_workflows or dflt["executed"] < c.min_workflows:
            return "wait", (
                f"executed workflows at this stage: candidate {cand['executed']}, default {dflt['executed']} "
                f"(each needs {c.min_workflows})"
            )
        ratio = cand["normalised_mean"] / dflt["normalised_mean"]
        figures["ratio"] = ratio
        if ratio <= 1.0 + c.margin:
            return "promote", f"no worse: achieved makespan {ratio:.4f} x the default's (margin {c.margin:g})"
        return "rollback", f"worse: achieved makespan {ratio:.4f} x the default's (over 1 + {c.margin:g})"

    def evaluate(self, config: RuntimeConfig | None = None) -> dict[str, Any] | None:
        """Judge the current stage; take the step it calls for. The step's row, or None."""
        config = config or self.live_config()
        c = config.canary
        if c is None or c.id is None:
            return None
        figures = self.stage_figures(c)
        action, reason = self.verdict(c, figures)
        for arm in ("default", "candidate"):
            value = figures["arms"][arm]["normalised_mean"]
            self.metrics.arm_makespan_ratio.labels(arm=arm).set(value if value is not None else math.nan)
        if action == "wait":
            return None
        if action == "promote":
            to = next((f for f in c.stages if f > c.fraction + 1e-12), 1.0)
            kind = "complete" if to >= 1.0 else "promote"
        else:
            to, kind = 0.0, "rollback"
        return self.step(config, kind, to, reason, figures)

    def note(self, config: RuntimeConfig) -> None:
        """Record an operator's config change to the canary: its start, or a stage set by hand."""
        c = config.canary
        if c is None or c.id is None:
            return
        steps = self.runtime.canary_steps(c.id)
        if not steps:
            self._take(c, 0, "start", 0.0, c.fraction, f"canary of {c.candidate} started", {})
        elif steps[-1]["action"] not in ("complete", "rollback") and abs(steps[-1]["to_fraction"] - c.fraction) > 1e-12:
            self._take(c, len(steps), "set", steps[-1]["to_fraction"], c.fraction, "stage set by an operator", {})

    def step(
        self, config: RuntimeConfig, kind: str, to: float, reason: str, figures: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Take one step if this replica wins it; then publish the new config to every replica."""
        c = config.canary
        assert c is not None and c.id is not None
        steps = self.runtime.canary_steps(c.id)
        ended = bool(steps) and steps[-1]["action"] in ("complete", "rollback")
        if ended or (steps and abs(steps[-1]["to_fraction"] - c.fraction) > 1e-12):
            return None  # the canary ended, or this replica has not applied the last step yet
        row = self._take(c, len(steps), kind, c.fraction, to, reason, figures)
        if row is None:
            return None  # another replica took this step
        if kind == "promote":
            new = config.model_copy(update={"canary": c.model_copy(update={"fraction": to})})
        elif kind == "complete":
            new = config.model_copy(update={"canary": None, "default_scheduler": c.scheduler or LEARNED_SCHEDULER})
            # a model-version candidate that loaded becomes the serving policy, on every replica
            if c.model_version is not None and self.candidate_models(c).current is not None:
                self.publisher.serve_model(self.settings.model_dir / "canary" / safe_name(c.model_version), "canary")
        else:
            new = config.model_copy(update={"canary": None})
        log.warning("canary %s: %s %g -> %g: %s", c.id, kind, c.fraction, to, reason)
        self.publisher.apply_config(new)
        return row

    def _take(
        self, c: Canary, seq: int, action: str, frm: float, to: float, reason: str, figures: dict[str, Any]
    ) -> dict[str, Any] | None:
        """Store step `seq` of `c` and count it: its row, or None when another replica stored that step first."""
        row = {
            "canary_id": c.id,
            "seq": seq,
            "action": action,
            "candidate": c.candidate,
            "from_fraction": frm,
            "to_fraction": to,
            "reason": reason,
            "figures": to_jsonable_python(figures, inf_nan_mode="null"),  # NaN and infinities as null
        }
        if not self.runtime.add_canary_step(row):
            return None
        self.metrics.canary_steps.labels(action=action).inc()
        return row

    def report(self, config: RuntimeConfig) -> dict[str, Any]:
        """`/v1/canary/report`: the live canary, its stage's figures and verdict, the steps of the live or last one."""
        c = config.canary
        if c is not None and c.id is not None:
            figures = self.stage_figures(c)
            action, reason = self.verdict(c, figures)
            return {
                "canary": c.model_dump(),
                "stage": figures,
                "verdict": {"action": action, "reason": reason},
                "steps": self.runtime.canary_steps(c.id),
            }
        latest = self.runtime.canary_steps(None, limit=1)
        steps = self.runtime.canary_steps(latest[0]["canary_id"]) if latest else []
        return {"canary": None, "stage": None, "verdict": None, "steps": steps}

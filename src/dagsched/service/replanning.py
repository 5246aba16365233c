"""Apply an event to a plan chain and re-plan what it affects: what `POST /v1/events` and gRPC `ReportEvent` do
(the chain's state is folded from its stored events on every call: no replica holds it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dagsched.io import workflow_from_dict
from dagsched.model import Edge, Task, Workflow
from dagsched.model.errors import InputError
from dagsched.service.calibration import calibrate, declared_runtime
from dagsched.service.chain import OVERRUN_RATIO, WhatRan, fold, overran
from dagsched.service.config import RuntimeConfig
from dagsched.service.metrics import ServiceMetrics
from dagsched.service.planner import Planner
from dagsched.service.refusals import Conflict
from dagsched.service.schemas import EventRequest, ScheduleRequest
from dagsched.service.store.events import Events
from dagsched.service.store.plans import Plans


@dataclass(eq=False)
class Replanning:
    """Events of plan chains, on the store's plans and events, re-planned by the process's planner."""

    plans: Plans
    events: Events
    planner: Planner
    metrics: ServiceMetrics
    on_canary_workflow_done: Callable[[], object]  # a workflow of the live canary finished: it judges its stage

    def apply(self, body: EventRequest, config: RuntimeConfig) -> dict[str, Any]:
        """Record `body` on its plan's chain; re-plan the affected tasks; the assignments that changed."""
        plan = self.plans.require(body.plan_id)
        root = self.plans.get(plan["root_id"]) or plan
        latest = self.plans.latest_revision(root["id"]) or plan
        planned = {a["task"]: a for a in latest["response"]["assignments"]}
        all_tasks = {a["task"] for a in root["response"]["assignments"]}
        _check_fields(body, all_tasks, {n["id"] for n in root["request"]["nodes"]})
        history = self.events.of_chain(root["id"])
        before = fold(history, planned)
        _check_order(history, before, body)
        self.metrics.events.labels(kind=body.kind).inc()

        payload: dict[str, Any] = {"elapsed_s": body.elapsed_s}
        replan, reason = False, "recorded"
        if body.kind == "task_overran":
            assert body.elapsed_s is not None
            prior = planned.get(body.task or "") or next(
                a for a in root["response"]["assignments"] if a["task"] == body.task
            )
            predicted = max(prior["finish"] - prior["start"], 1e-9)
            ratio = body.elapsed_s / predicted
            if overran(body.elapsed_s, predicted):
                payload["migrate"] = True
                replan, reason = True, f"task ran {ratio:.0%} of its prediction (over {OVERRUN_RATIO:.0%}): migrated"
            else:
                reason = f"task at {ratio:.0%} of its prediction: within {OVERRUN_RATIO:.0%}, left running"
        elif body.kind == "task_failed":
            replan, reason = True, "task failed: it is ready again"
        elif body.kind == "node_down":
            replan = any(a["node"] == body.node and t not in before.finished for t, a in planned.items())
            reason = "node down: nothing unfinished was planned there"
        elif body.kind == "node_up":
            replan, reason = True, "node up: offered again"
        self.events.add(root["id"], body.kind, body.task, body.node, body.at, payload)
        now = {"kind": body.kind, "task": body.task, "node": body.node, "at": body.at, "payload": payload}
        after = fold([*history, now], planned)

        changed: list[dict[str, Any]] = []
        new_id = latest["id"]
        in_canary = config.canary is not None and root["response"].get("canary") == config.canary.id
        if replan:  # in the arm of the chain's first plan while its canary runs (else the routing decides anew)
            arm = root["response"].get("arm") if in_canary else None
            result = self._replan(root, latest["id"], after, body, config, arm)
            new_id = result["plan_id"]
            changed = _changed(planned, result["assignments"])
            if body.kind == "node_down":
                reason = _node_down_reason(body, planned, before, changed)
        if in_canary and body.kind == "task_finished" and after.finished.keys() >= all_tasks:
            self.on_canary_workflow_done()  # a workflow of the canary finished: it judges its stage
        return {
            "plan_id": new_id,
            "root_id": root["id"],
            "replanned": replan,
            "reason": reason,
            "changed": changed,
            "migrated": [body.task] if payload.get("migrate") else [],
        }

    def _replan(
        self,
        root: dict[str, Any],
        latest_id: str,
        ran: WhatRan,
        body: EventRequest,
        config: RuntimeConfig,
        arm: str | None,
    ) -> dict[str, Any]:
        request = ScheduleRequest.model_validate(root["request"])
        # calibrated as a new plan would be (the running tasks' remaining time too), then cut to what is left
        wf = workflow_from_dict(request.workflow)
        wf, calibrated_nodes, applied = calibrate(wf, request.nodes, self.planner.factors(config))
        nodes = [n for n in calibrated_nodes if n.id not in ran.down]
        if not nodes:
            raise InputError("node", "every node of the plan is down: nothing can be re-planned")
        keep = [t for t in wf.tasks if t.id not in ran.finished]
        if not keep:
            return {"assignments": [], "plan_id": latest_id}
        kept = {t.id for t in keep}
        tasks: list[Task] = []
        pins: dict[str, str] = {}
        for t in keep:
            if t.id in ran.running:
                node, started = ran.running[t.id]
                whole = declared_runtime(t, node, next((n.speed for n in nodes if n.id == node), 1.0))
                left = max(whole - (body.at - started), 0.0)
                tasks.append(t.model_copy(update={"costs": {node: left}}))
                pins[t.id] = node
            else:
                tasks.append(t)
        # A finished parent whose output a kept task still needs stays in as a zero-length stand-in pinned where it
        # ran (no request, so it never waits for room): its data then crosses the network from that node, from now on
        # (later than it really left: a safe bound). Dropping the edge let a child start on another node before the
        # data could arrive. A parent whose node is down now is dropped with its edge (its output is assumed kept
        # elsewhere, e.g. on shared storage).
        up = {n.id for n in nodes}
        done_on = {task: where for task, (where, _, _) in ran.finished.items()}
        stand_ins = {
            e.src for e in wf.edges if e.dst in kept and e.src in done_on and e.data > 0 and done_on[e.src] in up
        }
        for sid in sorted(stand_ins):
            tasks.append(Task(id=sid, runtime=0.0, cpu=0.0, costs={done_on[sid]: 0.0}))
            pins[sid] = done_on[sid]
        present = kept | stand_ins
        edges = [Edge(src=e.src, dst=e.dst, data=e.data) for e in wf.edges if e.src in present and e.dst in kept]
        sub = Workflow(name=wf.name, tasks=tasks, edges=edges, deadline=wf.deadline, labels=wf.labels)
        req = request.model_copy(update={"nodes": [n for n in request.nodes if n.id not in ran.down]})
        result = self.planner.plan_workflow(
            sub,
            req,
            config,
            root_id=root["id"],
            pins=pins,
            avoid=ran.avoid,
            offset_s=body.at,
            nodes=nodes,
            applied=applied,
            arm=arm,
        )
        if stand_ins:  # the stand-ins are not part of the plan (the plan's row holds this same response)
            response = result.response
            response["assignments"] = [a for a in response["assignments"] if a["task"] not in stand_ins]
            result.decision_rows[:] = [r for r in result.decision_rows if r["task"] not in stand_ins]
        result.plan_row["request"] = {**root["request"], "replan_of": latest_id, "event": body.model_dump()}
        self.plans.save(result.plan_row, result.decision_rows)
        return result.response


def _check_fields(body: EventRequest, tasks: set[str], node_ids: set[str]) -> None:
    """The event names what its kind needs, and only tasks and nodes of its plan: InputError naming the field."""
    if body.kind.startswith("task_"):
        if not body.task:
            raise InputError("task", f"required for {body.kind}")
        if body.task not in tasks:
            raise InputError("task", f"unknown task '{body.task}' in plan '{body.plan_id}'")
    if body.node is not None and body.node not in node_ids:
        raise InputError("node", f"unknown node '{body.node}' in plan '{body.plan_id}'")
    if body.kind.startswith("node_") and not body.node:
        raise InputError("node", f"required for {body.kind}")
    if body.kind == "task_overran" and body.elapsed_s is None:
        raise InputError("elapsed_s", "required for task_overran: how long the task has run so far")


def _check_order(history: list[dict[str, Any]], ran: WhatRan, body: EventRequest) -> None:
    """Events follow time and each task's life: a late or impossible one would re-plan a state that never was."""
    if history and body.at < history[-1]["at"] - 1e-9:
        last = history[-1]
        raise Conflict(
            f"at: {body.at:g} s is before this plan's last event ({last['kind']} at {last['at']:g} s): "
            "send events in order"
        )
    if not body.kind.startswith("task_"):
        return
    running, done = body.task in ran.running, body.task in ran.finished
    if body.kind == "task_started" and (running or done):
        raise Conflict(f"task: '{body.task}' has already {'finished' if done else 'started'}")
    if body.kind in ("task_finished", "task_overran") and not running:
        raise Conflict(f"task: '{body.task}' is not running (no task_started since it last ended or failed)")
    if body.kind == "task_failed" and done:  # a task may fail before its start was reported (at launch)
        raise Conflict(f"task: '{body.task}' has already finished")


def _changed(planned: dict[str, Any], assignments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The re-plan's assignments that moved to another node or start, with where they were."""
    changed = []
    for a in assignments:
        before = planned.get(a["task"])
        if before is None or before["node"] != a["node"] or abs(before["start"] - a["start"]) > 1e-6:
            was, kept = before or {}, {k: a[k] for k in ("task", "node", "start", "finish")}
            changed.append({**kept, "previous_node": was.get("node"), "previous_start": was.get("start")})
    return changed


def _node_down_reason(body: EventRequest, planned: dict[str, Any], ran: WhatRan, changed: list[dict[str, Any]]) -> str:
    """One count, the tasks of the lost node that `changed` lists, and why any unreported one runs again."""
    moved = [c for c in changed if c["previous_node"] == body.node]
    unreported = [
        c["task"]
        for c in moved
        if planned[c["task"]]["finish"] <= body.at and c["task"] not in ran.running and c["task"] not in ran.finished
    ]
    reason = f"node down: {len(moved)} task(s) move off it"
    if unreported:
        reason += (
            f", {len(unreported)} of them planned to have finished there by now but never reported finished "
            "(its output is not known to exist: it runs again)"
        )
    others = len(changed) - len(moved)
    if others:
        reason += f"; {others} other task(s) shift"
    return reason

"""POST /v1/events: what happened to a plan's tasks and nodes; re-plans what is affected.

The state of a plan chain is rebuilt from its stored events on every call (no replica holds
it): finished tasks are done; started ones run on their node until they finish, fail or are
migrated; a node is down from `node_down` until `node_up`. What re-plans:

- `task_failed`: the task is ready again;
- `task_overran` with `elapsed_s` past 200 % of the task's planned time (the rollback
  coordinator's rule): the task is stopped and migrated, kept off that node if any other admits it;
- `node_down`: the node's running and planned tasks move; `node_up`: the node is offered again.

`task_started` and `task_finished` are recorded without a re-plan. A re-plan plans the unfinished
tasks from the event's time on (running tasks pinned to their node with their remaining predicted
time; data from finished parents counted as present), stores it as a new revision of the chain,
and returns the assignments that changed node or start.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException

from dagsched.io import workflow_from_dict
from dagsched.model import Edge, Task, Workflow
from dagsched.model.errors import InputError
from dagsched.service.schemas import EventRequest, EventResponse, ScheduleRequest
from dagsched.service.state import Authorized, JSONBody, ServiceState, State

router = APIRouter(tags=["events"])

OVERRUN_FACTOR = 2.0


def _chain_state(events: list[dict[str, Any]], planned: dict[str, dict]) -> dict[str, Any]:
    done: set[str] = set()
    done_on: dict[str, str] = {}
    running: dict[str, tuple[str, float]] = {}
    down: set[str] = set()
    avoid: dict[str, str] = {}
    for e in events:
        kind, task, node, at = e["kind"], e["task"], e["node"], e["at"]
        if kind == "task_started":
            running[task] = (node or planned[task]["node"], at)
        elif kind == "task_finished":
            done.add(task)
            where = running.pop(task, None)
            done_on[task] = node or (where[0] if where else planned.get(task, {}).get("node", ""))
        elif kind == "task_failed":
            running.pop(task, None)
        elif kind == "task_overran" and e["payload"].get("migrate"):
            where = running.pop(task, None)
            avoid[task] = node or (where[0] if where else planned[task]["node"])
        elif kind == "node_down":
            down.add(node)
            for t, (nd, _) in list(running.items()):
                if nd == node:
                    running.pop(t)
        elif kind == "node_up":
            down.discard(node)
    return {"done": done, "done_on": done_on, "running": running, "down": down, "avoid": avoid}


def _replan(state: ServiceState, root: dict, latest: dict, body: EventRequest) -> dict[str, Any]:
    request = ScheduleRequest.model_validate(root["request"])
    # calibrated as a new plan would be (the running tasks' remaining time too), then cut to what is left
    wf, calibrated_nodes, applied = state.planner.calibrate(
        workflow_from_dict(request.workflow), request.nodes, state.config
    )
    planned = {a["task"]: a for a in latest["response"]["assignments"]}
    chain = _chain_state(state.store.events(root["id"]), planned)
    nodes = [n for n in calibrated_nodes if n.id not in chain["down"]]
    if not nodes:
        raise InputError("node", "every node of the plan is down: nothing can be re-planned")
    keep = [t for t in wf.tasks if t.id not in chain["done"]]
    if not keep:
        return {"assignments": [], "plan_id": latest["id"], "stored": False}
    kept = {t.id for t in keep}
    tasks: list[Task] = []
    pins: dict[str, str] = {}
    for t in keep:
        if t.id in chain["running"]:
            node, started = chain["running"][t.id]
            speed = next((n.speed for n in nodes if n.id == node), 1.0)
            whole = t.costs[node] if t.costs and node in t.costs else t.runtime / speed
            left = max(whole - (body.at - started), 0.0)
            tasks.append(t.model_copy(update={"costs": {node: left}}))
            pins[t.id] = node
        else:
            tasks.append(t)
    # A finished parent whose output a kept task still needs stays in as a zero-length stand-in pinned where it ran
    # (no request, so it never waits for room): its data then crosses the network from that node, from now on
    # (later than it really left: a safe bound). Dropping the edge let a child start on another node before the
    # data could arrive. A parent whose node is down now is dropped with its edge (its output is assumed kept
    # elsewhere, e.g. on shared storage).
    up = {n.id for n in nodes}
    stand_ins = {
        e.src
        for e in wf.edges
        if e.dst in kept and e.src in chain["done"] and e.data > 0 and chain["done_on"].get(e.src) in up
    }
    for sid in sorted(stand_ins):
        tasks.append(Task(id=sid, runtime=0.0, cpu=0.0, costs={chain["done_on"][sid]: 0.0}))
        pins[sid] = chain["done_on"][sid]
    present = kept | stand_ins
    edges = [Edge(src=e.src, dst=e.dst, data=e.data) for e in wf.edges if e.src in present and e.dst in kept]
    sub = Workflow(name=wf.name, tasks=tasks, edges=edges, deadline=wf.deadline, labels=wf.labels)
    req = request.model_copy(update={"nodes": [n for n in request.nodes if n.id not in chain["down"]]})
    result = state.planner.plan_workflow(
        sub,
        req,
        state.config,
        root_id=root["id"],
        pins=pins,
        avoid=chain["avoid"],
        offset_s=body.at,
        nodes=nodes,
        applied=applied,
        arm=_arm_of(state, root),
    )
    if stand_ins:  # the stand-ins are not part of the plan
        response = result.response
        response["assignments"] = [a for a in response["assignments"] if a["task"] not in stand_ins]
        result.plan_row["response"] = response
        result.decision_rows[:] = [r for r in result.decision_rows if r["task"] not in stand_ins]
    result.plan_row["request"] = {**root["request"], "replan_of": latest["id"], "event": body.model_dump()}
    state.store.save_plan(result.plan_row, result.decision_rows)
    return {**result.response, "stored": True}


def _arm_of(state: ServiceState, root: dict) -> str | None:
    """The canary arm the chain's first plan was in, while that canary still runs (else the routing decides anew)."""
    canary = state.config.canary
    if canary is None or root["response"].get("canary") != canary.id:
        return None
    arm = root["response"].get("arm")
    return str(arm) if arm is not None else None


def _check_order(history: list[dict[str, Any]], planned: dict[str, Any], body: EventRequest) -> None:
    """Events must arrive in time order and follow each task's life (started, then finished or overran; failed any
    time before it finished):
    a late or impossible event would re-plan from a state that never was. 409 naming the field otherwise."""
    if history and body.at < history[-1]["at"] - 1e-9:
        last = history[-1]
        raise HTTPException(
            409,
            f"at: {body.at:g} s is before this plan's last event ({last['kind']} at {last['at']:g} s): "
            "send events in order",
        )
    if not body.kind.startswith("task_"):
        return
    chain = _chain_state(history, planned)
    running, done = body.task in chain["running"], body.task in chain["done"]
    if body.kind == "task_started" and (running or done):
        raise HTTPException(409, f"task: '{body.task}' has already {'finished' if done else 'started'}")
    if body.kind in ("task_finished", "task_overran") and not running:
        raise HTTPException(409, f"task: '{body.task}' is not running (no task_started since it last ended or failed)")
    if body.kind == "task_failed" and done:  # a task may fail before its start was reported (at launch)
        raise HTTPException(409, f"task: '{body.task}' has already finished")


@router.post(
    "/v1/events",
    response_model=EventResponse,
    dependencies=[Authorized, JSONBody],
    responses={404: {"description": "no such plan"}, 409: {"description": "an event out of order"}},
)
def post_event(body: EventRequest, state: State) -> dict[str, Any]:
    """Record an event of a plan; re-plan the affected tasks and return the assignments that changed."""
    plan = state.store.get_plan(body.plan_id)
    if plan is None:
        raise HTTPException(404, f"plan_id: no plan '{body.plan_id}'")
    root = state.store.get_plan(plan["root_id"]) or plan
    latest = state.store.latest_revision(root["id"]) or plan
    planned = {a["task"]: a for a in latest["response"]["assignments"]}
    all_tasks = {a["task"] for a in root["response"]["assignments"]}
    node_ids = {n["id"] for n in root["request"]["nodes"]}
    if body.kind.startswith("task_"):
        if not body.task:
            raise InputError("task", f"required for {body.kind}")
        if body.task not in all_tasks:
            raise InputError("task", f"unknown task '{body.task}' in plan '{body.plan_id}'")
    if body.node is not None and body.node not in node_ids:
        raise InputError("node", f"unknown node '{body.node}' in plan '{body.plan_id}'")
    if body.kind.startswith("node_") and not body.node:
        raise InputError("node", f"required for {body.kind}")
    if body.kind == "task_overran" and body.elapsed_s is None:
        raise InputError("elapsed_s", "required for task_overran: how long the task has run so far")
    history = state.store.events(root["id"])
    _check_order(history, planned, body)
    state.metrics.events.labels(kind=body.kind).inc()

    payload: dict[str, Any] = {"elapsed_s": body.elapsed_s}
    replan, reason = False, "recorded"
    if body.kind == "task_overran":
        assert body.elapsed_s is not None
        prior = planned.get(body.task or "") or next(
            a for a in root["response"]["assignments"] if a["task"] == body.task
        )
        predicted = max(prior["finish"] - prior["start"], 1e-9)
        ratio = body.elapsed_s / predicted
        if ratio > OVERRUN_FACTOR:
            payload["migrate"] = True
            replan, reason = True, f"task ran {ratio:.0%} of its prediction (over {OVERRUN_FACTOR:.0%}): migrated"
        else:
            reason = f"task at {ratio:.0%} of its prediction: within {OVERRUN_FACTOR:.0%}, left running"
    elif body.kind == "task_failed":
        replan, reason = True, "task failed: it is ready again"
    elif body.kind == "node_down":
        affected = [t for t, a in planned.items() if a["node"] == body.node and a["finish"] > body.at]
        replan = bool(affected)
        reason = f"node down: {len(affected)} planned task(s) move" if affected else "node down: nothing planned there"
    elif body.kind == "node_up":
        replan, reason = True, "node up: offered again"
    state.store.add_event(root["id"], body.kind, body.task, body.node, body.at, payload)

    changed: list[dict[str, Any]] = []
    new_id = latest["id"]
    if replan:
        result = _replan(state, root, latest, body)
        new_id = result["plan_id"]
        for a in result["assignments"]:
            before = planned.get(a["task"])
            if before is None or before["node"] != a["node"] or abs(before["start"] - a["start"]) > 1e-6:
                changed.append(
                    {
                        "task": a["task"],
                        "node": a["node"],
                        "start": a["start"],
                        "finish": a["finish"],
                        "previous_node": before["node"] if before else None,
                        "previous_start": before["start"] if before else None,
                    }
                )
    canary = state.config.canary
    if canary is not None and body.kind == "task_finished" and root["response"].get("canary") == canary.id:
        now = {"kind": body.kind, "task": body.task, "node": body.node, "at": body.at, "payload": payload}
        if _chain_state([*history, now], planned)["done"] >= all_tasks:
            state.canary.evaluate()  # a workflow of the canary finished: judge its stage
    return {
        "plan_id": new_id,
        "root_id": root["id"],
        "replanned": replan,
        "reason": reason,
        "changed": changed,
        "migrated": [body.task] if payload.get("migrate") else [],
    }

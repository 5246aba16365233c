"""A /v1/schedule request as a compiled problem: the nodes' free capacity (what is in use is not ours to plan on),
and which (task, node) pairs the rules, pins and migrations allow.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dagsched.explain.evidence import capacity_rejections
from dagsched.io.native import native_field
from dagsched.model import EPS as _EPS
from dagsched.model import Cluster, CompiledProblem, Node, Problem, compile_problem
from dagsched.model.errors import InputError, parse
from dagsched.service.rules import TASK_ATTRS, Rule, failing_rule
from dagsched.service.schemas import NodeState


def node_view(n: NodeState) -> dict[str, Any]:
    """What a rule sees as `node`: its fields (bandwidth aside) and what is free of each resource."""
    free = n.free or n  # no `free`: all of it
    return {
        **n.model_dump(exclude={"free", "bandwidth"}),
        "cpu_free": free.cpu,
        "mem_free": free.mem,
        "gpu_free": free.gpu,
    }


def canonical_json(data: Any) -> str:
    """JSON with sorted keys and no spaces: equal data, equal text (what input digests are taken of)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def build_problem(
    workflow: Any,
    nodes: list[NodeState],
    rules: list[Rule],
    max_tasks: int,
    pins: dict[str, str] | None = None,
    avoid: dict[str, str] | None = None,
) -> tuple[CompiledProblem, np.ndarray, dict[tuple[int, int], str], list[dict[str, str]]]:
    """The compiled problem on free capacity, the allowed (task, node) matrix, and why pairs are not allowed."""
    pins, avoid = pins or {}, avoid or {}
    if len(workflow.tasks) > max_tasks:
        raise InputError("workflow.tasks", f"{len(workflow.tasks)} tasks is over this service's limit of {max_tasks}")
    seen: set[str] = set()
    for i, n in enumerate(nodes):
        if n.id in seen:
            raise InputError(f"nodes[{i}].id", f"duplicate node id '{n.id}'")
        seen.add(n.id)
        if n.free and (n.free.cpu > n.cpu + _EPS or n.free.mem > n.mem + _EPS or n.free.gpu > n.gpu):
            raise InputError(f"nodes[{i}].free", f"node '{n.id}' has more free than its total capacity")
    usable = [n for n in nodes if (n.free.cpu if n.free else n.cpu) > 0]
    usable_ids = {n.id for n in usable}
    rejected_nodes = [{"node": n.id, "constraint": "no free cpu"} for n in nodes if n.id not in usable_ids]
    if not usable:
        raise InputError("nodes", "no node has any free cpu: nothing can be planned")
    cluster = Cluster(  # each node on its free capacity (what is in use is not ours to plan on)
        nodes=[Node(**n.model_dump(exclude={"free"}) | (n.free.model_dump() if n.free else {})) for n in usable]
    )
    wf = workflow.model_copy(update={"submit_time": 0.0})
    try:
        problem: Problem = parse(Problem, {"name": wf.name, "workflows": [wf], "cluster": cluster})
    except InputError as err:
        # the request's workflow is written as a native one (`tasks[i].resources.gpu`); WfFormat has no such paths
        field = err.field.replace("workflows[0].", "workflow.").replace("workflows[0]", "workflow")
        if field.startswith("workflow."):
            field = "workflow." + native_field(field.removeprefix("workflow."))
        raise InputError(field, err.fault + " (on the nodes' free capacity)") from None
    cp = compile_problem(problem)
    fits, why = capacity_rejections(cp)  # (tasks, nodes)
    allowed = fits.copy()
    views = [node_view(n) for n in usable] if rules else []
    for t, task in enumerate(wf.tasks):
        if rules:
            tv = {k: getattr(task, k) for k in TASK_ATTRS}  # what a rule sees as `task`
            for nd in np.flatnonzero(fits[t]):
                rule = failing_rule(rules, views[nd], tv)
                if rule is not None:
                    allowed[t, nd] = False
                    why[(t, int(nd))] = f"rule {rule.name}: {rule.expr}"
        if task.id in pins:
            keep = cp.node_ids.index(pins[task.id])
            for nd in range(cp.n_nodes):
                if nd != keep and allowed[t, nd]:
                    allowed[t, nd] = False
                    why[(t, nd)] = f"running on {pins[task.id]}"
        if task.id in avoid and avoid[task.id] in cp.node_ids:
            nd = cp.node_ids.index(avoid[task.id])
            if allowed[t].sum() > 1 and allowed[t, nd]:
                allowed[t, nd] = False
                why[(t, nd)] = "migrated off it: ran past 200 % of its prediction there"
        if not allowed[t].any():
            reasons = "; ".join(f"{cp.node_ids[nd]}: {why[(t, nd)]}" for nd in range(min(cp.n_nodes, 5)))
            raise InputError(f"workflow.tasks[{t}]", f"task '{task.id}' is rejected by every node ({reasons})")
    if not allowed.all():
        cp = cp.with_allowed(allowed)
    return cp, allowed, why, rejected_nodes

"""The Kubernetes scheduler extender: kube-scheduler's `filter` and `prioritize` verbs on `ExtenderArgs`; it never
breaks scheduling (docs/service.md, "Kubernetes scheduler extender").
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from dagsched.service.rules import Rule, failing_rule
from dagsched.service.store.plans import Plans

MAX_PRIORITY = 10
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "gpu")
_SUFFIX = {
    "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
    "m": 1e-3, "u": 1e-6, "n": 1e-9,
}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


class ExtenderInputError(ValueError):
    """A malformed ExtenderArgs; its message names the field."""


def _parse_quantity(text: str) -> float | None:
    """A quantity string's value, or None."""
    m = _QUANTITY.match(text.strip())
    if not m or m.group(2) not in _SUFFIX:
        return None
    return float(m.group(1)) * _SUFFIX[m.group(2)]


# A cluster sends the same few quantity strings on every call: remember them (short ones only, so
# the cache stays small whatever clients send).
_parse_short_quantity = lru_cache(maxsize=4096)(_parse_quantity)


def _value(value: Any) -> float | None:
    """The number a quantity string or a JSON number says (negative or not finite too), or None."""
    if type(value) is str:
        return _parse_short_quantity(value) if len(value) <= 32 else _parse_quantity(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _number(value: Any) -> float | None:
    """`quantity` without the error: None when `value` is not a quantity, or is negative or not finite."""
    number = _value(value)
    return number if number is not None and 0.0 <= number < math.inf else None


def quantity(value: Any, field: str, owner: str = "") -> float:
    """A Kubernetes resource quantity ("500m", "16Gi") as a number at least 0; the error names `owner` too."""
    number = _number(value)
    if number is not None:
        return number
    raw = _value(value)
    text = repr(value) if type(value) is str else str(value)[:40]
    if raw is None:
        fault = f"{text} is not a Kubernetes quantity"
    elif math.isfinite(raw):
        fault = f"{text} is negative; a quantity here is at least 0"
    else:
        fault = f"{text} is not finite"
    raise ExtenderInputError(f"{field}: {fault}" + (f" ({owner})" if owner else ""))


def _object(value: Any, field: str) -> dict[str, Any]:
    """An optional object of the request (absent or empty: {}); anything else names `field`."""
    value = value or {}
    if not isinstance(value, dict):
        raise ExtenderInputError(f"{field}: expected an object")
    return value


def _requests(container: Any, field: str) -> tuple[float, float, float]:
    """A container's (cpu, memory GiB, gpu) requests; a bad one names the container and the resource."""
    container = _object(container, field)
    req = _object((container.get("resources") or {}).get("requests"), f"{field}.resources.requests")
    name = str(container.get("name", ""))[:64]

    def request(resource: str, default: Any = 0) -> float:
        where = f"container '{name}', resource {resource}"
        return quantity(req.get(resource, default), f"{field}.resources.requests.{resource}", where)

    return request("cpu"), request("memory") / 2**30, sum(request(k) for k in GPU_RESOURCES if k in req)


def pod_task(pod: Any) -> dict[str, Any]:
    """What a rule sees as `task`, from the pod: requests, identity, predicted runtime, priority."""
    if not isinstance(pod, dict):
        raise ExtenderInputError("pod: missing or not an object")
    meta, spec = _object(pod.get("metadata"), "pod.metadata"), _object(pod.get("spec"), "pod.spec")
    total = [0.0, 0.0, 0.0]
    containers = spec.get("containers") or []
    if not isinstance(containers, list):
        raise ExtenderInputError("pod.spec.containers: expected a list")
    for i, c in enumerate(containers):
        r = _requests(c, f"pod.spec.containers[{i}]")
        total = [a + b for a, b in zip(total, r, strict=True)]
    for i, c in enumerate(spec.get("initContainers") or []):
        r = _requests(c, f"pod.spec.initContainers[{i}]")
        total = [max(a, b) for a, b in zip(total, r, strict=True)]
    labels = {**(meta.get("annotations") or {}), **(meta.get("labels") or {})}
    runtime = quantity(labels.get("dagsched.io/runtime", 60), "pod.metadata.annotations[dagsched.io/runtime]")
    return {
        "id": labels.get("dagsched.io/task") or meta.get("name", ""),
        "workflow": labels.get("dagsched.io/workflow") or meta.get("namespace", "default"),
        "runtime": runtime,
        "cpu": total[0],
        "mem": total[1],
        "gpu": total[2],
        "priority": int(spec.get("priority") or 0),
        "critical": labels.get("dagsched.io/critical", "false") == "true",
        "labels": {str(k): str(v) for k, v in labels.items()},
    }


def node_view(node: Any, i: int) -> dict[str, Any]:
    """What a rule sees as `node`, from a v1.Node: allocatable is its free capacity."""
    if not isinstance(node, dict):
        raise ExtenderInputError(f"nodes.items[{i}]: expected an object")
    meta = _object(node.get("metadata"), f"nodes.items[{i}].metadata")
    name = meta.get("name")
    if not name:
        raise ExtenderInputError(f"nodes.items[{i}].metadata.name: missing")
    alloc = ((node.get("status") or {}).get("allocatable")) or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    raw = (
        alloc.get("cpu", 0),
        alloc.get("memory", 0),
        labels.get("dagsched.io/speed", 1),
        labels.get("dagsched.io/price-per-hour", 0),
    )
    # field names are built only for an error (this runs for every node of every call)
    cpu, mem, speed, price = _number(raw[0]), _number(raw[1]), _number(raw[2]), _number(raw[3])
    if cpu is None or mem is None or speed is None or price is None:
        field = f"nodes.items[{i}].status.allocatable"
        cpu, mem = quantity(raw[0], f"{field}.cpu"), quantity(raw[1], f"{field}.memory")
        speed = quantity(raw[2], f"nodes.items[{i}] label dagsched.io/speed")
        price = quantity(raw[3], f"nodes.items[{i}] price label")
    mem /= 2**30
    gpus = (quantity(alloc[k], f"nodes.items[{i}].status.allocatable.{k}") for k in GPU_RESOURCES if k in alloc)
    gpu = float(sum(gpus))
    return {
        "id": name,
        "cpu": cpu,
        "mem": mem,
        "gpu": gpu,
        "cpu_free": cpu,
        "mem_free": mem,
        "gpu_free": gpu,
        "speed": speed,
        "price_per_hour": price,
        "labels": labels,
        "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
    }


def _nodes(args: dict) -> tuple[list[dict[str, Any]] | None, list[dict] | None, list[str]]:
    """(views, raw items) when `nodes` is given, else (None, None, names)."""
    nodes = args.get("nodes")
    if nodes is not None:
        items = nodes.get("items") if isinstance(nodes, dict) else None
        if not isinstance(items, list):
            raise ExtenderInputError("nodes.items: expected a list of v1.Node")
        views = [node_view(n, i) for i, n in enumerate(items)]
        return views, items, [v["id"] for v in views]
    names = args.get("nodenames")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ExtenderInputError("ExtenderArgs needs `nodes` (a v1.NodeList) or `nodenames` (a list of names)")
    return None, None, names


def _reject_reason(node: dict[str, Any], task: dict[str, Any], rules: list[Rule]) -> str | None:
    if node["unschedulable"]:
        return "node is cordoned (spec.unschedulable)"
    short = [f"{r} {task[r]:g} > allocatable {node[r]:g}" for r in ("cpu", "mem", "gpu") if task[r] > node[r] + 1e-9]
    if short:
        return "dagsched: insufficient " + ", ".join(short)
    rule = failing_rule(rules, node, task)
    return f"dagsched: rule {rule.name} ({rule.expr}) fails" if rule else None


def filter_result(
    nodes: Any = None, nodenames: list[str] | None = None, failed: dict[str, str] | None = None, error: str = ""
) -> dict[str, Any]:
    """An ExtenderFilterResult."""
    return {
        "nodes": nodes,
        "nodenames": nodenames,
        "failedNodes": failed or {},
        "failedAndUnresolvableNodes": {},
        "error": error,
    }


def filter_nodes(args: Any, rules: list[Rule]) -> dict[str, Any]:
    """ExtenderFilterResult for the pod over the given nodes."""
    if not isinstance(args, dict):
        raise ExtenderInputError("body: expected an ExtenderArgs object")
    task = pod_task(args.get("pod"))
    views, items, names = _nodes(args)
    if views is None or items is None:
        return filter_result(nodenames=names)
    reasons = [_reject_reason(view, task, rules) for view in views]
    kept = [item for item, reason in zip(items, reasons, strict=True) if reason is None]
    failed = {view["id"]: reason for view, reason in zip(views, reasons, strict=True) if reason is not None}
    return filter_result({**args["nodes"], "items": kept}, failed=failed)


def prioritize_pod(args: Any, rules: list[Rule], plans: Plans) -> list[dict[str, Any]]:
    """HostPriorityList for the pod in `args`: 10 for the node its workflow's stored plan gave its task; others by
    speed, with headroom as a tie-breaker."""
    task = pod_task(args.get("pod") if isinstance(args, dict) else None)  # not a dict: no pod, refused here
    planned_node = plans.planned_node(task["workflow"], task["id"])
    views, _, names = _nodes(args)
    if views is None:
        return [{"host": n, "score": MAX_PRIORITY if n == planned_node else 0} for n in names]
    fit = {v["id"]: _reject_reason(v, task, rules) is None for v in views}
    best_speed = max((v["speed"] for v in views if fit[v["id"]]), default=1.0)
    out = []
    for v in views:
        if v["id"] == planned_node and fit[v["id"]]:
            score = MAX_PRIORITY
        elif not fit[v["id"]]:
            score = 0
        else:
            # runtime / speed relative to the fastest fitting node, with a headroom tie-breaker
            speed_part = v["speed"] / best_speed if best_speed > 0 else 0.0
            headroom = 1.0 - task["cpu"] / v["cpu"] if v["cpu"] > 0 else 0.0
            score = int(round((MAX_PRIORITY - 1) * (0.8 * speed_part + 0.2 * max(headroom, 0.0))))
        out.append({"host": v["id"], "score": max(0, min(MAX_PRIORITY, score))})
    return out

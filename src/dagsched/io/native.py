"""dagsched's own workflow and cluster files: the shape people write by hand.

A workflow lists its tasks, each with its dependencies inline (a task id, or
`{task: id, data: bytes}`); resources sit under `resources:`. A cluster lists
nodes, where `count: N` stands for N identical nodes `<id>-0 .. <id>-N-1`.
Unknown keys (and, in YAML, a key given twice) are errors, so a typo (`runtim:`) never
silently becomes a default. Beyond the basic shape, a task may give `costs` (classic
per-node execution times) and a workflow `labels`, so that every Workflow can be written. What a task does when
a workflow really runs (`dagsched run`) is its `run:` (`{command: [argv, ...]}` or `{python: "module:function"}`;
none: emulated), rerun up to `retries:` times after a failure.

The writers emit the same shape and leave out fields at their default, so that
`read(write(x)) == x` and a written file stays short enough to read.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dagsched.io._common import EDGE_FIELD, TASK_FIELD, build_workflow
from dagsched.io.documents import PathLike, write_document
from dagsched.model.entities import (
    Cluster,
    Identifier,
    Node,
    NonNegative,
    NonNegativeInt,
    Positive,
    Task,
    TaskRun,
    Workflow,
)
from dagsched.model.errors import InputError, parse


class _Doc(BaseModel):
    # Hand-written YAML says `id: 1` or `version: 2`; take those numbers as the strings they mean.
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


class NativeResources(_Doc):
    """What a task asks of one node; every key optional."""

    cpu: NonNegative = 1.0
    mem: NonNegative = Field(0.0, description="GiB")
    gpu: NonNegativeInt = 0


class NativeDependency(_Doc):
    """A parent task, and the bytes it hands over."""

    task: Identifier
    data: NonNegative = Field(0.0, description="bytes")


class NativeTask(_Doc):
    id: Identifier
    runtime: NonNegative = Field(description="seconds at speed 1.0")
    resources: NativeResources = Field(default_factory=NativeResources)
    dependencies: list[NativeDependency] = Field(default_factory=list)
    priority: int = 0
    critical: bool = False
    deadline: NonNegative | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    costs: dict[str, NonNegative] | None = None
    run: TaskRun | None = None
    retries: NonNegativeInt = 0

    @field_validator("dependencies", mode="before")
    @classmethod
    def _bare_ids(cls, value: Any) -> Any:
        """A bare id is shorthand for `{task: id}`; rewriting it keeps error paths free of union branches."""
        if not isinstance(value, list):
            return value
        out: list[Any] = []
        for j, v in enumerate(value):
            if isinstance(v, str | int) and not isinstance(v, bool):
                out.append({"task": v})
            elif isinstance(v, dict):
                out.append(v)
            else:
                raise InputError(f"[{j}]", f"expected a task id or {{task: id, data: bytes}}, got {v!r}"[:200])
        return out


class NativeWorkflow(_Doc):
    name: Identifier
    submit_time: NonNegative = 0.0
    deadline: NonNegative | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    tasks: list[NativeTask]


class NativeNode(_Doc):
    id: Identifier
    cpu: Positive
    mem: NonNegative = Field(description="GiB")
    gpu: NonNegativeInt = 0
    speed: Positive = 1.0
    price_per_hour: NonNegative = 0.0
    bandwidth: Positive = Field(1.25e9, description="bytes per second")
    boot_delay: NonNegative = 0.0
    labels: dict[str, str] = Field(default_factory=dict)
    count: Annotated[int, Field(ge=1)] | None = Field(None, description="expand into `count` nodes <id>-0..")


class NativeLink(_Doc):
    a: Identifier
    b: Identifier
    bandwidth: Positive


class NativeCluster(_Doc):
    name: str = "cluster"
    latency: NonNegative = 0.0
    nodes: list[NativeNode]
    links: list[NativeLink] = Field(default_factory=list)


def workflow_from_native(data: dict[str, Any]) -> Workflow:
    """Validate a native workflow dict into a Workflow; errors name the field as written (`tasks[2].runtime`)."""
    doc: NativeWorkflow = parse(NativeWorkflow, data)
    known = {t.id for t in doc.tasks}
    tasks: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    edge_fields: list[str] = []
    for i, t in enumerate(doc.tasks):
        for j, dep in enumerate(t.dependencies):
            if dep.task not in known:
                raise InputError(
                    f"tasks[{i}].dependencies[{j}]", f"unknown task '{dep.task}' (task '{t.id}' depends on it)"
                )
            edges.append({"src": dep.task, "dst": t.id, "data": dep.data})
            edge_fields.append(f"tasks[{i}].dependencies[{j}]")
        task = t.model_dump(exclude={"resources", "dependencies"})
        task.update(t.resources.model_dump())
        tasks.append(task)
    wf = {
        "name": doc.name,
        "tasks": tasks,
        "edges": edges,
        "submit_time": doc.submit_time,
        "deadline": doc.deadline,
        "labels": doc.labels,
    }
    return build_workflow(wf, native_task_field, lambda k, rest: edge_fields[k], "tasks")


def native_task_field(i: int, rest: str) -> str:
    """Where a Workflow's `tasks[i]<rest>` is written in a native document: requests sit under `resources`."""
    return f"tasks[{i}]" + (f".resources{rest}" if rest in (".cpu", ".mem", ".gpu") else rest)


def native_field(field: str, data: dict[str, Any] | None = None) -> str:
    """A Workflow's field path (`tasks[3].gpu`, `edges[2].data`) as a native document spells it
    (`tasks[3].resources.gpu`; with the document `data`, `tasks[1].dependencies[0].data`)."""
    field = TASK_FIELD.sub(lambda m: native_task_field(int(m.group(1)), m.group(2)), field)
    if data is None or not isinstance(data.get("tasks"), list):
        return field
    deps = [
        f"tasks[{i}].dependencies[{j}]"
        for i, t in enumerate(data["tasks"])
        if isinstance(t, dict)
        for j in range(len(t.get("dependencies") or ()))
    ]
    return EDGE_FIELD.sub(lambda m: deps[int(m.group(1))] + m.group(2) if int(m.group(1)) < len(deps) else m[0], field)


def _defaults(model: type[BaseModel], keys: tuple[str, ...]) -> dict[str, Any]:
    """The model's own defaults, so the writer omits exactly what the reader will restore."""
    return {k: model.model_fields[k].get_default(call_default_factory=True) for k in keys}


_TASK_DEFAULTS = _defaults(Task, ("priority", "critical", "deadline", "labels", "costs", "run", "retries"))


def _changed_fields(obj: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The optional fields of `obj` that differ from their defaults (written out; the rest are implied)."""
    out: dict[str, Any] = {}
    for key, default in defaults.items():
        value = getattr(obj, key)
        if value != default:
            out[key] = (
                dict(value)
                if isinstance(value, dict)
                else value.model_dump(exclude_none=True)
                if isinstance(value, BaseModel)
                else value
            )
    return out


_RESOURCE_DEFAULTS = _defaults(Task, ("cpu", "mem", "gpu"))


def workflow_to_native(wf: Workflow) -> dict[str, Any]:
    """The native dict for `wf`: dependencies inline, defaults left out."""
    parents: dict[str, list[dict[str, Any] | str]] = {}
    for e in wf.edges:
        parents.setdefault(e.dst, []).append({"task": e.src, "data": e.data} if e.data else e.src)
    tasks: list[dict[str, Any]] = []
    for t in wf.tasks:
        task: dict[str, Any] = {"id": t.id, "runtime": t.runtime}
        resources = {k: getattr(t, k) for k, default in _RESOURCE_DEFAULTS.items() if getattr(t, k) != default}
        if resources:
            task["resources"] = resources
        if t.id in parents:
            task["dependencies"] = parents[t.id]
        task.update(_changed_fields(t, _TASK_DEFAULTS))
        tasks.append(task)
    out: dict[str, Any] = {"name": wf.name}
    if wf.submit_time:
        out["submit_time"] = wf.submit_time
    if wf.deadline is not None:
        out["deadline"] = wf.deadline
    if wf.labels:
        out["labels"] = dict(wf.labels)
    out["tasks"] = tasks
    return out


def cluster_from_native(data: dict[str, Any]) -> Cluster:
    """Validate a native cluster dict, expanding `count: N` entries into N nodes `<id>-0..N-1`."""
    doc: NativeCluster = parse(NativeCluster, data)
    nodes: list[dict[str, Any]] = []
    origin: list[int] = []  # entry in the file that each expanded node came from
    for i, entry in enumerate(doc.nodes):
        node = entry.model_dump(exclude={"count"})
        if entry.count is None:
            nodes.append(node)
            origin.append(i)
            continue
        for k in range(entry.count):
            nodes.append({**node, "id": f"{entry.id}-{k}", "labels": dict(entry.labels)})
            origin.append(i)
    cluster = {
        "name": doc.name,
        "latency": doc.latency,
        "nodes": nodes,
        "links": [link.model_dump() for link in doc.links],
    }
    try:
        return parse(Cluster, cluster)  # type: ignore[no-any-return]
    except InputError as err:
        if err.field.startswith("nodes["):
            k = int(err.field[len("nodes[") : err.field.index("]")])
            rest = err.field[err.field.index("]") + 1 :]
            raise InputError(f"nodes[{origin[k]}]{rest}", err.fault) from None
        raise


_NODE_DEFAULTS = _defaults(Node, ("gpu", "speed", "price_per_hour", "bandwidth", "boot_delay", "labels"))


def cluster_to_native(cluster: Cluster) -> dict[str, Any]:
    """The native dict for `cluster`, one entry per node (no `count`), defaults left out."""
    nodes: list[dict[str, Any]] = []
    for n in cluster.nodes:
        node: dict[str, Any] = {"id": n.id, "cpu": n.cpu, "mem": n.mem}
        node.update(_changed_fields(n, _NODE_DEFAULTS))
        nodes.append(node)
    out: dict[str, Any] = {"name": cluster.name}
    if cluster.latency:
        out["latency"] = cluster.latency
    out["nodes"] = nodes
    if cluster.links:
        out["links"] = [link.model_dump() for link in cluster.links]
    return out


def node_to_request(node: Node) -> dict[str, Any]:
    """`node` as the service's requests give one (`nodes` of POST /v1/schedule): every field but `boot_delay`, which a
    node the caller reports has passed."""
    return node.model_dump(exclude={"boot_delay"})


def write_workflow(wf: Workflow, path: PathLike) -> None:
    """Write `wf` in the native shape: YAML for .yaml/.yml, JSON for .json (optionally .gz)."""
    write_document(workflow_to_native(wf), path)


def write_cluster(cluster: Cluster, path: PathLike) -> None:
    """Write `cluster` in the native shape: YAML for .yaml/.yml, JSON for .json (optionally .gz)."""
    write_document(cluster_to_native(cluster), path)


__all__ = [
    "cluster_from_native",
    "cluster_to_native",
    "workflow_from_native",
    "workflow_to_native",
    "write_cluster",
    "write_workflow",
]

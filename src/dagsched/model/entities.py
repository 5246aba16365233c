"""The vocabulary: Task, Edge, Workflow, Node, Link, Cluster, Problem.

Pydantic models at the edges of the system. They refuse bad input with an
`InputError` that names the field and the fault; the hot paths never use them
directly but their compiled numpy form (`dagsched.model.compiled`).
"""

from __future__ import annotations

import re
from operator import attrgetter
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from dagsched.model.errors import InputError

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegativeInt = Annotated[int, Field(ge=0)]

MAX_SECONDS = 1e9
"""The longest time a problem may hold (about 31.7 years): a runtime, a deadline, a submission, a boot delay, the
latency, and a task's execution on the slowest node or a transfer over the slowest link. Past it the simulator's
clock would lose whole seconds over a long run, and a runtime of 1e308 s overflows to infinity at once."""


def _simulable(value: float) -> float:
    if value > MAX_SECONDS:
        raise ValueError(f"{value:g} s is beyond what can be simulated (at most {MAX_SECONDS:g} s, about 31 years)")
    return value


Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False), AfterValidator(_simulable)]
"""A time in seconds the simulator can hold: finite, >= 0, at most `MAX_SECONDS`."""

MAX_PRICE_PER_HOUR = 1e6
"""The highest price per node-hour a cluster may declare: a run's cost (price x hours, summed over every task and
every hour a node is up) then stays a finite float, where a price of 1e308 overflows to infinity at once; the
largest cloud instances cost tens of dollars an hour."""


def no_nul(value: str) -> str:
    """Refuse a NUL character in an id: PostgreSQL text cannot hold one (the decision store), and no real id has one."""
    if "\x00" in value:
        raise ValueError("contains a NUL character")
    return value


Identifier = Annotated[str, Field(min_length=1, max_length=256), AfterValidator(no_nul)]
"""Task, node and workflow ids: 256 characters at most (the decision store's columns; no real id comes near)."""

RESOURCES = ("cpu", "mem", "gpu")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


PYTHON_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
"""`module.path:function`, what `run: {python: ...}` names."""


class TaskRun(_Strict):
    """What a task does when it really runs (`dagsched run`): a command, or a Python function.

    A task without one is emulated there: it sleeps its runtime on the node (and hands its children payloads of its
    edges' sizes); the simulator reads only the prediction either way."""

    command: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="argv of a process run on the node; exit status 0 is success"
    )
    python: str | None = Field(None, description="'module:function', called with the parents' outputs in order")

    @model_validator(mode="after")
    def _one_kind(self) -> TaskRun:
        if (self.command is None) == (self.python is None):
            raise InputError("", "give exactly one of command: [argv, ...] or python: 'module:function'")
        if self.python is not None and not PYTHON_TARGET.fullmatch(self.python):
            raise InputError("python", f"expected 'module:function' (e.g. 'mypkg.steps:clean'), got {self.python!r}")
        return self


class Task(_Strict):
    """One unit of work: predicted runtime at speed 1.0 and what it asks of a node."""

    id: Identifier
    runtime: Seconds = Field(description="predicted runtime in seconds at speed 1.0")
    cpu: NonNegative = Field(1.0, description="cores requested")
    mem: NonNegative = Field(0.0, description="memory requested, GiB")
    gpu: NonNegativeInt = Field(0, description="GPUs requested")
    priority: int = 0
    critical: bool = False
    deadline: Seconds | None = Field(
        None, description="seconds after the workflow's submission by which it should finish"
    )
    labels: dict[str, str] = Field(default_factory=dict)
    costs: dict[str, Seconds] | None = Field(
        None, description="classic unrelated machines: execution time per node id, overrides runtime/speed"
    )
    run: TaskRun | None = Field(None, description="what a real run executes; None: emulated (a sleep)")
    retries: NonNegativeInt = Field(0, description="a real run reruns a failed command this many times")


class Edge(_Strict):
    """A dependency: `dst` starts after `src` ends and its `data` bytes arrive."""

    src: Identifier
    dst: Identifier
    data: NonNegative = Field(0.0, description="bytes moved from src to dst")


def find_cycle(ids: list[str], succ: dict[str, list[str]]) -> list[str] | None:
    """A cycle as a closed list of ids (first == last), or None for a DAG."""
    color = dict.fromkeys(ids, 0)  # 0 unseen, 1 on stack, 2 done
    for root in ids:
        if color[root]:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path = [root]
        color[root] = 1
        while stack:
            node, i = stack[-1]
            children = succ.get(node, [])
            if i < len(children):
                stack[-1] = (node, i + 1)
                child = children[i]
                if color[child] == 1:
                    return path[path.index(child) :] + [child]
                if color[child] == 0:
                    color[child] = 1
                    stack.append((child, 0))
                    path.append(child)
            else:
                color[node] = 2
                stack.pop()
                path.pop()
    return None


class Workflow(_Strict):
    """A DAG of tasks submitted at one time."""

    name: Identifier
    tasks: list[Task]
    edges: list[Edge] = Field(default_factory=list)
    submit_time: Seconds = Field(0.0, description="seconds from the start of the run")
    deadline: Seconds | None = Field(None, description="seconds after submission; default 2 x critical-path length")
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check_graph(self) -> Workflow:
        if not self.tasks:
            raise InputError("tasks", f"workflow '{self.name}' is empty: it needs at least one task")
        seen: dict[str, int] = {}
        for i, task in enumerate(self.tasks):
            if task.id in seen:
                raise InputError(f"tasks[{i}].id", f"duplicate task id '{task.id}' (first at tasks[{seen[task.id]}])")
            seen[task.id] = i
        succ: dict[str, list[str]] = {}
        pairs: set[tuple[str, str]] = set()
        for i, edge in enumerate(self.edges):
            for end in ("src", "dst"):
                tid = getattr(edge, end)
                if tid not in seen:
                    other = edge.dst if end == "src" else edge.src
                    raise InputError(
                        f"edges[{i}].{end}",
                        f"unknown task '{tid}' (dependency {edge.src} -> {edge.dst}; '{other}' names it)",
                    )
            if (edge.src, edge.dst) in pairs:
                raise InputError(f"edges[{i}]", f"duplicate dependency {edge.src} -> {edge.dst}")
            pairs.add((edge.src, edge.dst))
            succ.setdefault(edge.src, []).append(edge.dst)
        cycle = find_cycle([t.id for t in self.tasks], succ)
        if cycle:
            raise InputError("edges", "cycle through tasks " + " -> ".join(cycle))
        return self


class Node(_Strict):
    """A machine: capacity, relative speed, price and network bandwidth."""

    id: Identifier
    cpu: Positive = Field(description="cores")
    mem: NonNegative = Field(description="GiB")
    gpu: NonNegativeInt = 0
    speed: Positive = Field(1.0, description="relative speed; runtime 1 s at speed 1 takes 1/speed s")
    price_per_hour: NonNegative = Field(
        0.0, le=MAX_PRICE_PER_HOUR, description="price per hour the node is up, in any currency"
    )
    bandwidth: Positive = Field(1.25e9, description="network bandwidth, bytes per second")
    boot_delay: Seconds = Field(0.0, description="seconds before its first task can start")
    labels: dict[str, str] = Field(default_factory=dict)


class Link(_Strict):
    """An undirected link with its own bandwidth (bytes/s), overriding the nodes' own."""

    a: Identifier
    b: Identifier
    bandwidth: Positive


class Cluster(_Strict):
    """The nodes a problem runs on and the network between them."""

    name: str = "cluster"
    nodes: list[Node]
    latency: Seconds = Field(0.0, description="seconds added to every transfer between two nodes")
    links: list[Link] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check_nodes(self) -> Cluster:
        if not self.nodes:
            raise InputError("nodes", "cluster has no nodes")
        seen: set[str] = set()
        for i, node in enumerate(self.nodes):
            if node.id in seen:
                raise InputError(f"nodes[{i}].id", f"duplicate node id '{node.id}'")
            seen.add(node.id)
        for i, link in enumerate(self.links):
            for end in ("a", "b"):
                if getattr(link, end) not in seen:
                    raise InputError(f"links[{i}].{end}", f"unknown node '{getattr(link, end)}'")
        return self


class Problem(_Strict):
    """Workflows and the cluster they must run on."""

    name: str = "problem"
    workflows: list[Workflow]
    cluster: Cluster

    @model_validator(mode="after")
    def _check_fits(self) -> Problem:
        if not self.workflows:
            raise InputError("workflows", "problem has no workflows")
        names: set[str] = set()
        node_ids = {n.id for n in self.cluster.nodes}
        fits = _FitCheck(self.cluster)
        times = _TimeCheck(self.cluster)
        for w, wf in enumerate(self.workflows):
            if wf.name in names:
                raise InputError(f"workflows[{w}].name", f"duplicate workflow name '{wf.name}'")
            names.add(wf.name)
            for i, task in enumerate(wf.tasks):
                field = f"workflows[{w}].tasks[{i}]"
                fits.check(task, field)
                times.check_task(task, f"{field}.runtime")
                for node_id in task.costs or {}:
                    if node_id not in node_ids:
                        raise InputError(f"{field}.costs", f"unknown node '{node_id}' for task '{task.id}'")
            for k, edge in enumerate(wf.edges):
                times.check_edge(edge, f"workflows[{w}].edges[{k}].data")
        return self


class _TimeCheck:
    """Whether every time the simulator derives stays within `MAX_SECONDS`: a task's execution on the slowest node,
    a transfer over the slowest link (and the latency)."""

    def __init__(self, cluster: Cluster) -> None:
        self.slowest = min(cluster.nodes, key=attrgetter("speed"))
        # the slowest pair of distinct nodes: a link of its own, or the smaller of the two nodes' bandwidths
        rates = [(link.bandwidth, f"link {link.a}-{link.b}") for link in cluster.links]
        if len(cluster.nodes) > 1:
            node = min(cluster.nodes, key=attrgetter("bandwidth"))
            rates.append((node.bandwidth, f"node '{node.id}'"))
        self.link = min(rates, default=None)
        self.latency = cluster.latency

    def check_task(self, task: Task, field: str) -> None:
        slowest = self.slowest
        exec_s = task.runtime / slowest.speed
        if exec_s > MAX_SECONDS:
            raise InputError(
                field,
                f"task '{task.id}' would run {exec_s:g} s on node '{slowest.id}' (runtime {task.runtime:g} s at "
                f"speed {slowest.speed:g}): beyond what can be simulated (at most {MAX_SECONDS:g} s)",
            )

    def check_edge(self, edge: Edge, field: str) -> None:
        if self.link is None or not edge.data:
            return
        rate, where = self.link
        transfer_s = edge.data / rate + self.latency
        if transfer_s > MAX_SECONDS:
            raise InputError(
                field,
                f"{edge.data:g} bytes from '{edge.src}' to '{edge.dst}' would take {transfer_s:g} s over {where} "
                f"({rate:g} bytes/s): beyond what can be simulated (at most {MAX_SECONDS:g} s)",
            )


class _FitCheck:
    """Whether a task's request fits some node: the largest node per resource and the capacities, taken once."""

    def __init__(self, cluster: Cluster) -> None:
        self.largest = {r: max(cluster.nodes, key=attrgetter(r)) for r in RESOURCES}
        self.capacities = [(n.cpu, n.mem, n.gpu) for n in cluster.nodes]

    def check(self, task: Task, field: str) -> None:
        for resource in RESOURCES:
            request, largest = getattr(task, resource), self.largest[resource]
            if request > getattr(largest, resource):
                raise InputError(
                    f"{field}.{resource}",
                    f"task '{task.id}' requests {resource}={request:g} but the largest node "
                    f"'{largest.id}' has {resource}={getattr(largest, resource):g}; no node can ever run it",
                )
        cpu, mem, gpu = task.cpu, task.mem, task.gpu
        if not any(cpu <= c and mem <= m and gpu <= g for c, m, g in self.capacities):
            raise InputError(
                field,
                f"task '{task.id}' requests cpu={task.cpu:g}, mem={task.mem:g}, gpu={task.gpu} "
                "and no single node has all of them",
            )

"""The classic cost-matrix format of the list-scheduling literature (HEFT, CPOP, PEFT).

```json
{"name": "heft-example",
 "tasks":    [{"id": "T1", "cost": 14} | {"id": "T1", "costs": {"P1": 14, "P2": 16}}],
 "edges":    [{"src": "T1", "dst": "T2", "data": 18}],
 "machines": [{"id": "P1", "speed": 1.0}],
 "links":    [{"a": "P1", "b": "P2", "bandwidth": 1.0}]}
```

The textbook model: execution time = cost / speed (or the task's own `costs` entry
for unrelated machines), transfer time = data / bandwidth between two machines and
zero on the same one, one task at a time per machine. Links are undirected and every
pair of machines needs exactly one, since the papers' communication matrix is full.

A file is a whole Problem: machines become Nodes with cpu=1 (so one task at a time),
mem=0, the given speed, and a node bandwidth that never matters because every pair
has its Link; latency is 0.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dagsched.io._common import build_workflow
from dagsched.io.documents import PathLike, write_document
from dagsched.model.entities import Cluster, Identifier, NonNegative, Positive, Problem
from dagsched.model.errors import InputError, parse

NODE_BANDWIDTH = 1e30
"""Bytes/s given to classic nodes; every pair of machines has its own Link, so this is never used."""


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


class ClassicTask(_Doc):
    id: Identifier
    cost: NonNegative | None = Field(None, description="work; time on a machine = cost / speed")
    costs: dict[str, NonNegative] | None = Field(None, description="time per machine id (unrelated machines)")


class ClassicEdge(_Doc):
    src: Identifier
    dst: Identifier
    data: NonNegative = 0.0


class ClassicMachine(_Doc):
    id: Identifier
    speed: Positive = 1.0


class ClassicLink(_Doc):
    a: Identifier
    b: Identifier
    bandwidth: Positive


class ClassicProblem(_Doc):
    name: Identifier = "classic"
    tasks: list[ClassicTask]
    edges: list[ClassicEdge] = Field(default_factory=list)
    machines: list[ClassicMachine]
    links: list[ClassicLink] = Field(default_factory=list)


def problem_from_classic(data: dict[str, Any]) -> Problem:
    """A full Problem (workflow and its own cluster) from a classic dict; errors name the classic field."""
    doc: ClassicProblem = parse(ClassicProblem, data)
    if not doc.machines:
        raise InputError("machines", "no machines: a classic problem needs at least one")
    first: dict[str, int] = {}
    for i, m in enumerate(doc.machines):
        if m.id in first:
            raise InputError(f"machines[{i}].id", f"duplicate machine id '{m.id}' (first at machines[{first[m.id]}])")
        first[m.id] = i
    machine_ids = list(first)
    known = set(machine_ids)
    tasks: list[dict[str, Any]] = []
    for i, t in enumerate(doc.tasks):
        if (t.cost is None) == (t.costs is None):
            raise InputError(f"tasks[{i}]", f"task '{t.id}' needs exactly one of 'cost' or 'costs'")
        if t.costs is None:
            tasks.append({"id": t.id, "runtime": t.cost})
            continue
        for machine in t.costs:
            if machine not in known:
                raise InputError(f"tasks[{i}].costs.{machine}", f"unknown machine '{machine}' for task '{t.id}'")
        missing = [m for m in machine_ids if m not in t.costs]
        if missing:
            raise InputError(f"tasks[{i}].costs", f"task '{t.id}' has no cost on machine(s) {', '.join(missing)}")
        mean_s = sum(t.costs.values()) / len(t.costs)
        tasks.append({"id": t.id, "runtime": mean_s, "costs": dict(t.costs)})
    edges = [e.model_dump() for e in doc.edges]
    workflow = build_workflow(
        {"name": doc.name, "tasks": tasks, "edges": edges},
        lambda i, rest: f"tasks[{i}]" + (".cost" if rest == ".runtime" else rest),
        lambda k, rest: f"edges[{k}]{rest}",
        "tasks",
    )
    _check_links(doc, machine_ids)
    cluster = {
        "name": doc.name,
        "nodes": [
            {"id": m.id, "cpu": 1.0, "mem": 0.0, "speed": m.speed, "bandwidth": NODE_BANDWIDTH} for m in doc.machines
        ],
        "links": [link.model_dump() for link in doc.links],
        "latency": 0.0,
    }
    try:
        return parse(Problem, {"name": doc.name, "workflows": [workflow], "cluster": parse(Cluster, cluster)})  # type: ignore[no-any-return]
    except InputError as err:
        raise InputError(err.field.replace("workflows[0].", "").replace("nodes[", "machines["), err.fault) from None


def _check_links(doc: ClassicProblem, machine_ids: list[str]) -> None:
    """Exactly one link per unordered pair of distinct machines."""
    known = set(machine_ids)
    first: dict[frozenset[str], int] = {}
    for i, link in enumerate(doc.links):
        for end in ("a", "b"):
            if getattr(link, end) not in known:
                raise InputError(f"links[{i}].{end}", f"unknown machine '{getattr(link, end)}'")
        if link.a == link.b:
            raise InputError(f"links[{i}]", f"link from machine '{link.a}' to itself; transfers there are free")
        pair = frozenset((link.a, link.b))
        if pair in first:
            raise InputError(
                f"links[{i}]", f"second link between '{link.a}' and '{link.b}' (first at links[{first[pair]}])"
            )
        first[pair] = i
    for x, a in enumerate(machine_ids):
        for b in machine_ids[x + 1 :]:
            if frozenset((a, b)) not in first:
                raise InputError("links", f"no link between machines '{a}' and '{b}'; give one per pair of machines")


def problem_to_classic(problem: Problem) -> dict[str, Any]:
    """The classic dict for a one-workflow problem.

    Several workflows or a latency cannot be expressed and are refused; resource requests, node
    capacities and prices lie outside the classic model and are not written.
    """
    if len(problem.workflows) != 1:
        raise InputError(
            "workflows", f"the classic format holds one workflow, this problem has {len(problem.workflows)}"
        )
    cluster = problem.cluster
    if cluster.latency:
        raise InputError(
            "cluster.latency", f"the classic format has no latency; this cluster has {cluster.latency:g} s"
        )
    wf = problem.workflows[0]
    tasks: list[dict[str, Any]] = []
    for t in wf.tasks:
        tasks.append({"id": t.id, "costs": dict(t.costs)} if t.costs else {"id": t.id, "cost": t.runtime})
    # The cluster's own links first, as they are (so a classic file reads back equal), then the pairs they
    # leave out, at the bandwidth the simulator would use for them: the slower node's.
    pairs: list[dict[str, Any]] = []
    covered: set[frozenset[str]] = set()
    for link in cluster.links:
        pair = frozenset((link.a, link.b))
        if link.a != link.b and pair not in covered:
            covered.add(pair)
            pairs.append(link.model_dump())
    for x, a in enumerate(cluster.nodes):
        for b in cluster.nodes[x + 1 :]:
            if frozenset((a.id, b.id)) not in covered:
                pairs.append({"a": a.id, "b": b.id, "bandwidth": min(a.bandwidth, b.bandwidth)})
    return {
        "name": wf.name,
        "tasks": tasks,
        "edges": [e.model_dump() for e in wf.edges],
        "machines": [{"id": n.id, "speed": n.speed} for n in cluster.nodes],
        "links": pairs,
    }


def write_classic(problem: Problem, path: PathLike) -> None:
    """Write a one-workflow problem in the classic format (JSON for .json, YAML for .yaml/.yml)."""
    write_document(problem_to_classic(problem), path)

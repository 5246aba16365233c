"""Readers and writers: the native YAML/JSON format, WfCommons WfFormat (1.3 to 1.6), the classic format.

Every reader returns a fully validated model or raises `InputError` naming the field
and the fault (and the file, when it came from one); nothing half-loaded escapes.

    wf = read_workflow("montage.json.gz")                  # format detected from the content
    problem = read_problem(["etl.yaml", "ml.yaml"], read_cluster("cluster.yaml"))
    heft = read_problem("heft_example.json")               # classic: brings its own cluster
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

from dagsched.io.classic import problem_from_classic, write_classic
from dagsched.io.documents import PathLike, read_document, write_document
from dagsched.io.native import cluster_from_native, native_field, workflow_from_native, write_cluster, write_workflow
from dagsched.io.wfformat import workflow_from_wfformat
from dagsched.model.entities import Cluster, Problem, Workflow
from dagsched.model.errors import InputError, parse

Format = Literal["native", "wfformat", "classic"]


def detect_format(data: dict[str, Any]) -> Format:
    """Which format a parsed document is in, from its top-level keys."""
    if "workflow" in data and "schemaVersion" in data:
        return "wfformat"
    if "machines" in data:
        return "classic"
    if "tasks" in data and "name" in data:
        return "native"
    keys = ", ".join(sorted(map(str, data))[:8]) or "none"
    raise InputError(
        "document",
        f"unrecognised format (top-level keys: {keys}); expected a native workflow (name, tasks), "
        "a WfFormat instance (schemaVersion, workflow) or a classic problem (tasks, machines)",
    )


def workflow_from_dict(data: dict[str, Any], validate_schema: bool = False) -> Workflow:
    """A Workflow from a native or WfFormat dict; `validate_schema` applies WfFormat's JSON Schema first."""
    if not isinstance(data, dict):
        raise InputError("workflow", f"expected an object (a native or WfFormat workflow), got {type(data).__name__}")
    fmt = detect_format(data)
    if fmt == "native":
        return workflow_from_native(data)
    if fmt == "wfformat":
        return workflow_from_wfformat(data, validate_schema=validate_schema)
    raise InputError(
        "machines", "this is a classic problem (tasks, edges, machines, links) with its own cluster: use read_problem"
    )


@contextmanager
def _in_file(path: PathLike) -> Iterator[None]:
    """Add the file name to errors about its content, so several input files stay distinguishable."""
    try:
        yield
    except InputError as err:
        if err.field == str(path):
            raise
        raise InputError(err.field, f"{err.fault} (in {path})") from None


def read_workflow(path: PathLike, validate_schema: bool = False) -> Workflow:
    """Read a native (.yaml/.yml/.json) or WfFormat (.json/.json.gz) workflow file."""
    data = read_document(path)
    with _in_file(path):
        return workflow_from_dict(data, validate_schema=validate_schema)


def read_cluster(path: PathLike) -> Cluster:
    """Read a native cluster file (`count: N` entries expand into N nodes)."""
    data = read_document(path)
    with _in_file(path):
        if "machines" in data:
            raise InputError("machines", "this is a classic problem file; read it with read_problem")
        return cluster_from_native(data)


def read_problem(workflow_paths: PathLike | Sequence[PathLike], cluster: Cluster | PathLike | None = None) -> Problem:
    """Workflows plus the cluster they run on, validated together (every task must fit some node).

    A classic file is a whole problem and comes alone, without `cluster`; native and
    WfFormat workflows need one (a Cluster, or the path of a native cluster file).
    """
    paths: list[PathLike] = [workflow_paths] if isinstance(workflow_paths, str | os.PathLike) else list(workflow_paths)
    if not paths:
        raise InputError("workflow_paths", "no workflow files given")
    documents = [(p, read_document(p)) for p in paths]
    formats = []
    for p, data in documents:
        with _in_file(p):
            formats.append(detect_format(data))
    if "classic" in formats:
        p = paths[formats.index("classic")]
        if len(paths) > 1:
            raise InputError("workflow_paths", f"{p} is a classic file, a whole problem by itself: give it alone")
        if cluster is not None:
            raise InputError("cluster", f"{p} is a classic file and brings its own machines; pass no cluster")
        with _in_file(p):
            return problem_from_classic(documents[0][1])
    if cluster is None:
        raise InputError("cluster", "required: native and WfFormat workflows need a cluster (see read_cluster)")
    if not isinstance(cluster, Cluster):
        cluster = read_cluster(cluster)
    workflows = []
    for p, data in documents:
        with _in_file(p):
            workflows.append(workflow_from_dict(data))
    name = workflows[0].name if len(workflows) == 1 else "problem"
    try:
        return parse(Problem, {"name": name, "workflows": workflows, "cluster": cluster})  # type: ignore[no-any-return]
    except InputError as err:
        match = re.match(r"workflows\[(\d+)\]\.?", err.field)
        if match is None:
            raise
        w = int(match.group(1))
        field = err.field
        inside = field[match.end() :]
        if formats[w] == "native" and inside.startswith(("tasks[", "edges[")):  # as the file writes it
            field = native_field(inside, documents[w][1])  # tasks[3].resources.gpu, tasks[1].dependencies[0].data
        raise InputError(field, f"{err.fault} (in {paths[w]})") from None


__all__ = [
    "Format",
    "InputError",
    "detect_format",
    "read_cluster",
    "read_document",
    "read_problem",
    "read_workflow",
    "workflow_from_dict",
    "write_classic",
    "write_cluster",
    "write_document",
    "write_workflow",
]

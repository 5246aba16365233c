"""WfCommons WfFormat instances (real workflow traces) as dagsched Workflows.

Supported schema versions and where each keeps what we need:

* 1.5 / 1.6: `workflow.specification.tasks` hold the DAG (`parents`/`children` by
  task `id`, `inputFiles`/`outputFiles` by file id, sizes in `specification.files`);
  `workflow.execution.tasks`, joined by `id`, hold the measurements
  (`runtimeInSeconds`, `coreCount`, `memoryInBytes`, `priority`, `command.program`).
  1.6 only adds `metrics` blocks, which are ignored.
* 1.4 / 1.3: one flat `workflow.tasks` list; tasks are referenced by `name`, which
  becomes the dagsched id; files are inline `{name, link: input|output, sizeInBytes}`
  (1.3: `size`). 1.3 also says `runtime` and `memory`, the latter in KB (WfFormat 1.3
  docs; the same Makeflow run in 1.4 has exactly 1000 x the value in `memoryInBytes`).

Mapping: runtime = measured runtime; cpu = core count (default 1); mem = peak RSS in
GiB (0 when not measured); edge data = total bytes of the files the parent writes and
the child reads. Labels keep the program name (`command.program`, or the task name
where the program is a whole shell script, as in Nextflow traces).
"""

from __future__ import annotations

import copy
import functools
import json
from importlib import resources
from typing import Any

from dagsched.io._common import build_workflow, expect_dict, expect_list, expect_str, require
from dagsched.model.entities import Workflow
from dagsched.model.errors import InputError

SUPPORTED_VERSIONS = ("1.3", "1.4", "1.5", "1.6")
SCHEMA_VERSIONS = ("1.5", "1.6")
"""Versions `validate_schema` can check: the bundled 1.5 schema, which 1.6 extends without new required keys."""

BYTES_PER_GIB = 2**30
BYTES_PER_KB_1_3 = 1000


def workflow_from_wfformat(data: dict[str, Any], validate_schema: bool = False) -> Workflow:
    """A Workflow from a parsed WfFormat instance (1.3 to 1.6); errors name the JSON path of the fault."""
    version = data.get("schemaVersion")
    if not isinstance(version, str) or version not in SUPPORTED_VERSIONS:
        raise InputError(
            "schemaVersion", f"unsupported WfFormat version {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}"
        )
    if validate_schema:
        validate_wfformat_schema(data)
    name = expect_str(require(data, "name", ""), "name")
    workflow = expect_dict(require(data, "workflow", ""), "workflow")
    if version in ("1.5", "1.6"):
        return _read_split(name, workflow)
    return _read_flat(name, workflow, version)


def _number(value: Any, field: str) -> float:
    """A number, or a numeric string (some legacy traces write cores as "1.0")."""
    if isinstance(value, bool):
        raise InputError(field, f"expected a number, got bool {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise InputError(field, f"expected a number, got {value!r}"[:200])


def _file_size(value: Any, field: str) -> float:
    size = _number(value, field)
    if not 0 <= size < float("inf"):
        raise InputError(field, f"file size must be a finite number of bytes >= 0, got {size!r}")
    return size


def _program(command: Any, fallback: str) -> str:
    """Pegasus/Makeflow put the task type in command.program; Nextflow puts a whole script there."""
    program = command.get("program") if isinstance(command, dict) else None
    if isinstance(program, str) and program and not any(c.isspace() for c in program):
        return program
    return fallback


def _read_split(name: str, workflow: dict[str, Any]) -> Workflow:
    """Schema 1.5/1.6: DAG in `specification`, measurements in `execution`, joined by task id."""
    spec = expect_dict(require(workflow, "specification", "workflow"), "workflow.specification")
    execution = expect_dict(require(workflow, "execution", "workflow"), "workflow.execution")
    S, E, F = "workflow.specification.tasks", "workflow.execution.tasks", "workflow.specification.files"
    spec_tasks = expect_list(require(spec, "tasks", "workflow.specification"), S)
    exec_tasks = expect_list(require(execution, "tasks", "workflow.execution"), E)

    size_b: dict[str, float] = {}
    for k, f in enumerate(expect_list(spec.get("files", []), F)):
        f = expect_dict(f, f"{F}[{k}]")
        size_b[expect_str(require(f, "id", f"{F}[{k}]"), f"{F}[{k}].id")] = _file_size(
            require(f, "sizeInBytes", f"{F}[{k}]"), f"{F}[{k}].sizeInBytes"
        )

    index: dict[str, int] = {}
    ids: list[str] = []
    for i, st in enumerate(spec_tasks):
        tid = expect_str(require(expect_dict(st, f"{S}[{i}]"), "id", f"{S}[{i}]"), f"{S}[{i}].id")
        ids.append(tid)
        index.setdefault(tid, i)  # a duplicate is reported by the model, at its own position

    exec_pos: dict[str, int] = {}
    for k, et in enumerate(exec_tasks):
        tid = expect_str(require(expect_dict(et, f"{E}[{k}]"), "id", f"{E}[{k}]"), f"{E}[{k}].id")
        if tid not in index:
            raise InputError(f"{E}[{k}].id", f"unknown task '{tid}': not in {S}")
        if tid in exec_pos:
            raise InputError(f"{E}[{k}].id", f"second entry for task '{tid}' (first at {E}[{exec_pos[tid]}])")
        exec_pos[tid] = k

    tasks: list[dict[str, Any]] = []
    task_exec: list[int] = []
    inputs: list[set[str]] = []
    outputs: list[set[str]] = []
    for i, st in enumerate(spec_tasks):
        tid = ids[i]
        pos = exec_pos.get(tid)
        if pos is None:
            raise InputError(f"{S}[{i}]", f"task '{tid}' has no entry in {E}, so its runtime is unknown")
        task_exec.append(pos)
        et, ef = exec_tasks[pos], f"{E}[{pos}]"
        label = st.get("name") if isinstance(st.get("name"), str) and st.get("name") else tid
        task: dict[str, Any] = {
            "id": tid,
            "runtime": _number(require(et, "runtimeInSeconds", ef), f"{ef}.runtimeInSeconds"),
            "labels": {"program": _program(et.get("command"), label)},
        }
        if et.get("coreCount") is not None:
            task["cpu"] = _number(et["coreCount"], f"{ef}.coreCount")
        if et.get("memoryInBytes") is not None:
            task["mem"] = _number(et["memoryInBytes"], f"{ef}.memoryInBytes") / BYTES_PER_GIB
        if et.get("priority") is not None:
            task["priority"] = et["priority"]
        tasks.append(task)
        for key, sets in (("inputFiles", inputs), ("outputFiles", outputs)):
            names = expect_list(st.get(key, []), f"{S}[{i}].{key}")
            for j, fid in enumerate(names):
                if not isinstance(fid, str) or fid not in size_b:
                    raise InputError(f"{S}[{i}].{key}[{j}]", f"unknown file {fid!r}: not in {F}")
            sets.append(set(names))

    parents = _parents(spec_tasks, ids, index, S, "id")
    edges: list[dict[str, Any]] = []
    edge_fields: list[str] = []
    for c, plist in enumerate(parents):
        for p, field in plist:
            shared = outputs[p] & inputs[c]
            edges.append({"src": ids[p], "dst": ids[c], "data": sum(size_b[f] for f in shared) if shared else 0.0})
            edge_fields.append(field)

    exec_keys = {".runtime": ".runtimeInSeconds", ".cpu": ".coreCount", ".mem": ".memoryInBytes", ".priority": ""}

    def task_field(i: int, rest: str) -> str:
        if rest in exec_keys:
            return f"{E}[{task_exec[i]}]{exec_keys[rest] or rest}"
        return f"{S}[{i}]{rest}"

    return build_workflow({"name": name, "tasks": tasks, "edges": edges}, task_field, lambda k, _: edge_fields[k], S)


def _read_flat(name: str, workflow: dict[str, Any], version: str) -> Workflow:
    """Schema 1.4/1.3: one task list, tasks referenced by name, files inline."""
    T = "workflow.tasks"
    raw_tasks = expect_list(require(workflow, "tasks", "workflow"), T)
    runtime_key = "runtimeInSeconds" if version == "1.4" else "runtime"
    mem_key, mem_scale = ("memoryInBytes", 1) if version == "1.4" else ("memory", BYTES_PER_KB_1_3)
    size_key = "sizeInBytes" if version == "1.4" else "size"

    index: dict[str, int] = {}
    ids: list[str] = []
    for i, t in enumerate(raw_tasks):
        tid = expect_str(require(expect_dict(t, f"{T}[{i}]"), "name", f"{T}[{i}]"), f"{T}[{i}].name")
        ids.append(tid)
        index.setdefault(tid, i)

    tasks: list[dict[str, Any]] = []
    inputs: list[set[str]] = []
    outputs: list[dict[str, float]] = []
    for i, t in enumerate(raw_tasks):
        tf = f"{T}[{i}]"
        category = t.get("category") if isinstance(t.get("category"), str) and t.get("category") else ids[i]
        task: dict[str, Any] = {
            "id": ids[i],
            "runtime": _number(require(t, runtime_key, tf), f"{tf}.{runtime_key}"),
            "labels": {"program": _program(t.get("command"), category)},
        }
        if t.get("cores") is not None:
            task["cpu"] = _number(t["cores"], f"{tf}.cores")
        if t.get(mem_key) is not None:
            task["mem"] = _number(t[mem_key], f"{tf}.{mem_key}") * mem_scale / BYTES_PER_GIB
        if t.get("priority") is not None:
            task["priority"] = t["priority"]
        tasks.append(task)
        ins: set[str] = set()
        outs: dict[str, float] = {}
        for j, f in enumerate(expect_list(t.get("files", []), f"{tf}.files")):
            ff = f"{tf}.files[{j}]"
            f = expect_dict(f, ff)
            fname = expect_str(require(f, "name", ff), f"{ff}.name")
            link = require(f, "link", ff)
            if link == "input":
                ins.add(fname)
            elif link == "output":
                outs[fname] = _file_size(require(f, size_key, ff), f"{ff}.{size_key}")
            else:
                raise InputError(f"{ff}.link", f"expected 'input' or 'output', got {link!r}")
        inputs.append(ins)
        outputs.append(outs)

    parents = _parents(raw_tasks, ids, index, T, "name")
    edges: list[dict[str, Any]] = []
    edge_fields: list[str] = []
    for c, plist in enumerate(parents):
        for p, field in plist:
            written = outputs[p]
            data = sum(written[f] for f in inputs[c] if f in written)
            edges.append({"src": ids[p], "dst": ids[c], "data": float(data)})
            edge_fields.append(field)

    keys = {".runtime": f".{runtime_key}", ".cpu": ".cores", ".mem": f".{mem_key}", ".id": ".name"}
    return build_workflow(
        {"name": name, "tasks": tasks, "edges": edges},
        lambda i, rest: f"{T}[{i}]{keys.get(rest, rest)}",
        lambda k, _: edge_fields[k],
        T,
    )


def _parents(
    raw_tasks: list[Any], ids: list[str], index: dict[str, int], tasks_field: str, ref: str
) -> list[list[tuple[int, str]]]:
    """Per task, its distinct parents (position, where declared) from both `parents` and `children` lists.

    Edges come out grouped by child in task order, the order the native writer keeps, so a
    trace written back out as a native file reads in equal.
    """
    parents: list[list[tuple[int, str]]] = [[] for _ in raw_tasks]
    seen: set[tuple[int, int]] = set()
    for key in ("parents", "children"):
        for i, t in enumerate(raw_tasks):
            for j, other in enumerate(expect_list(t.get(key, []), f"{tasks_field}[{i}].{key}")):
                pos = index.get(other) if isinstance(other, str) else None
                if pos is None:
                    raise InputError(
                        f"{tasks_field}[{i}].{key}[{j}]", f"unknown task {other!r}: no task has this {ref}"
                    )
                p, c = (pos, i) if key == "parents" else (i, pos)
                if (p, c) not in seen:
                    seen.add((p, c))
                    parents[c].append((p, f"{tasks_field}[{i}].{key}[{j}]"))
    return parents


@functools.cache
def _schema_validator(version: str) -> Any:
    import jsonschema  # only needed here; keeps plain loading free of its import cost

    text = resources.files("dagsched.io").joinpath("schemas/wfformat-1.5-schema.json").read_text("utf-8")
    schema = json.loads(text)
    if version != "1.5":
        schema = copy.deepcopy(schema)
        schema["properties"]["schemaVersion"]["enum"] = [version]
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema)


def validate_wfformat_schema(data: dict[str, Any]) -> None:
    """Check `data` against the bundled WfFormat JSON Schema; InputError names the first bad path."""
    import jsonschema

    version = data.get("schemaVersion")
    if version not in SCHEMA_VERSIONS:
        raise InputError(
            "schemaVersion",
            f"no WfFormat schema for version {version!r} ships with dagsched (only {', '.join(SCHEMA_VERSIONS)}); "
            "load it without validate_schema",
        )
    error = jsonschema.exceptions.best_match(_schema_validator(version).iter_errors(data))
    if error is None:
        return
    field = ""
    for part in error.absolute_path:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    raise InputError(field or "document", f"does not match the WfFormat {version} schema: {message}")

"""What runs on a Ray node for one task: an emulated sleep, a command, or a Python function.

Each call returns `(status, output)`: `status` is a small dict the driver reads (success, why not, when the task
began and ended on the worker's clock, the Ray node it ran on); `output` stays in Ray's object store and is handed
to the children as an argument, so data edges travel as Ray object references (an emulated task's output is a
payload of its largest outgoing edge's size x the data scale; a command's, its captured stdout; a function's, what
it returned).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import time
import traceback
from typing import Any

OUTPUT_CAP_BYTES = 64 * 1024
"""The most of a command's stdout and stderr kept (the tail), and the largest function value journalled."""


def _tail(data: bytes) -> str:
    cut = data[-OUTPUT_CAP_BYTES:]
    return cut.decode("utf-8", errors="replace")


def journal_text(value: Any) -> str | None:
    """A function's value as JSON text for the run journal, or None where it cannot be kept: not JSON, not read
    back equal (a tuple, keys that are not strings), or over `OUTPUT_CAP_BYTES`."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if len(text.encode()) > OUTPUT_CAP_BYTES or json.loads(text) != value:
        return None
    return text


def resolve_function(target: str) -> Any:
    """The callable `module:function` names; ImportError or AttributeError say which part is missing."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    fn = getattr(module, attr)
    if not callable(fn):
        raise TypeError(f"'{target}' is not callable")
    return fn


def _where(spec: dict[str, Any]) -> tuple[str, int]:
    """This Ray node's id and, from the run's map, its dagsched node index (-1: not mapped)."""
    import ray

    ray_node = ray.get_runtime_context().get_node_id()
    return ray_node, int(spec.get("nodes", {}).get(ray_node, -1))


def execute(spec: dict[str, Any], *inputs: Any) -> tuple[dict[str, Any], Any]:
    """Run one task as `spec` says; never raises for the task's own failure (the status says it)."""
    ray_node, nd = _where(spec)
    payloads = list(inputs)
    if spec.get("placed") is False:  # Ray's own scheduler chose this node: wait out the modelled transfers here
        payloads = [p[2] for p in inputs]
        arrival = 0.0
        for (src, end_wall, _), comm in zip(inputs, spec["comm"], strict=True):
            if src != nd and src >= 0 and nd >= 0:
                arrival = max(arrival, end_wall + comm[src][nd])
        time.sleep(max(arrival - time.time(), 0.0))
    started = time.time()
    status: dict[str, Any] = {
        "ok": True,
        "reason": "",
        "ray_node": ray_node,
        "node": nd,
        "started": started,
        "pid": os.getpid(),
    }
    output: Any = None
    kind = spec["kind"]
    try:
        if kind == "sleep":
            seconds = spec["sleep_s"] if spec.get("placed", True) else spec["exec_s"][nd]
            time.sleep(seconds)
            size = int(spec.get("payload_bytes", 0))
            output = bytes(size) if size else None
        elif kind == "command":
            done = subprocess.run(spec["command"], capture_output=True, check=False, stdin=subprocess.DEVNULL)
            output = _tail(done.stdout)
            status["returncode"] = done.returncode
            status["stdout"] = output  # kept by the driver too while the children need it (a lost node's copy)
            status["stderr"] = _tail(done.stderr)[-2000:]
            if done.returncode != 0:
                status.update(ok=False, reason=f"command exited with status {done.returncode}")
        elif kind == "python":
            output = resolve_function(spec["python"])(*payloads)
            if spec.get("journal"):  # the driver journals it, so that a resumed run hands it to the children
                status["output_json"] = journal_text(output)
        else:
            raise ValueError(f"unknown task kind {kind!r}")
    except Exception as err:  # the task's own failure, reported to the driver (its retries decide what follows)
        status.update(ok=False, reason=f"{type(err).__name__}: {err}"[:500], traceback=traceback.format_exc()[-2000:])
        output = None
    status["ended"] = time.time()
    if spec.get("placed") is False:
        return status, (nd, status["ended"], output)
    return status, output

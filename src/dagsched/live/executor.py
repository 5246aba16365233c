"""The executor on Ray: launches a decided task on its node, reports its end, notices lost nodes.

A launch is one Ray task (`worker.execute`) pinned to its node with a hard `NodeAffinitySchedulingStrategy`,
asking the task's cpu, gpu and memory (`mem_gib`) of it, with Ray's own retries off (a failed task goes back to the
scheduler, as in the simulator). Its arguments are the object references of its parents' outputs, so data edges
travel through Ray's object store from the parents' nodes. `poll` waits for task ends (or a timeout) and reports
them as events, together with nodes Ray has declared dead.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

from dagsched.live.cluster import MEM_RESOURCE, RayCluster
from dagsched.model.compiled import CompiledProblem
from dagsched.model.entities import Task

NODE_CHECK_S = 0.5
"""How often (wall seconds) Ray's view of the nodes is read while waiting."""


def _node_gone_errors() -> tuple[type[BaseException], ...]:
    import ray.exceptions as rx

    return (rx.NodeDiedError, rx.WorkerCrashedError, rx.LocalRayletDiedError, rx.TaskUnschedulableError)


@dataclass(frozen=True)
class TaskEnded:
    """A launched task's Ray task ended: `ok`, or why not; `system`: Ray lost it (worker or node died)."""

    task: int
    version: int
    ok: bool
    reason: str
    system: bool
    status: dict[str, Any]


@dataclass(frozen=True)
class NodeLost:
    """Ray declared node `node`'s Ray node dead."""

    node: int


def problem_tasks(cp: CompiledProblem) -> list[Task]:
    """The problem's tasks in the compiled order (workflow by workflow, each in its file's order)."""
    return [task for wf in cp.problem.workflows for task in wf.tasks]


def parents_in_order(cp: CompiledProblem) -> list[list[int]]:
    """Each task's parents in the order its workflow lists its dependencies (a function gets their outputs so)."""
    out: list[list[int]] = [[] for _ in range(cp.n_tasks)]
    for w, wf in enumerate(cp.problem.workflows):
        base = int(cp.wf_task_ptr[w])
        index = {task.id: base + i for i, task in enumerate(wf.tasks)}
        for edge in wf.edges:
            out[index[edge.dst]].append(index[edge.src])
    return out


def payload_bytes(cp: CompiledProblem, data_scale: float) -> list[int]:
    """Each emulated task's output payload: its largest outgoing edge's bytes x `data_scale`."""
    sizes = [0] * cp.n_tasks
    succ_ptr, succ_data = cp.succ_ptr.tolist(), cp.succ_data.tolist()
    for t in range(cp.n_tasks):
        lo, hi = succ_ptr[t], succ_ptr[t + 1]
        if hi > lo:
            sizes[t] = int(max(succ_data[lo:hi]) * data_scale)
    return sizes


def task_spec(task: Task, sleep_s: float, payload: int) -> dict[str, Any]:
    """What `worker.execute` runs for one task."""
    if task.run is None:
        return {"kind": "sleep", "sleep_s": sleep_s, "payload_bytes": payload}
    if task.run.command is not None:
        return {"kind": "command", "command": list(task.run.command)}
    return {"kind": "python", "python": task.run.python}


@dataclass
class RayExecutor:
    """Launches tasks on their Ray nodes and reports what ended."""

    cp: CompiledProblem
    cluster: RayCluster
    time_scale: float = 1.0
    data_scale: float = 1e-4
    journal_outputs: bool = False
    """keep each finished command's stdout and function's value (as JSON) in `finished_outputs` for the journal"""
    tasks: list[Task] = field(init=False)
    parents: list[list[int]] = field(init=False)
    payloads: list[int] = field(init=False)
    outputs: dict[int, Any] = field(default_factory=dict)  # done task -> its output's object reference
    output_node: dict[int, int] = field(default_factory=dict)  # done task -> the node its output was made on
    stdout: dict[int, str] = field(default_factory=dict)  # a done command's stdout, while its children need it
    finished_outputs: dict[int, tuple[str, str]] = field(default_factory=dict)
    """done task -> its output as the journal keeps it (`("text", stdout)` or `("json", value)`), until journalled"""
    children_left: list[int] = field(init=False)
    inflight: dict[Any, tuple[int, int, int, float, float, Any]] = field(default_factory=dict)
    lost: set[int] = field(default_factory=set)
    launch_latency_s: list[float] = field(default_factory=list)  # Ray task submitted -> began on its node
    dispatch_latency_s: list[float] = field(default_factory=list)  # engine's event instant -> began on its node
    report_latency_s: list[float] = field(default_factory=list)  # ended on its node -> the engine knows
    _next_check: float = 0.0
    _remote: Any = None
    _node_map: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import ray

        from dagsched.live.worker import execute

        self.tasks = problem_tasks(self.cp)
        self.parents = parents_in_order(self.cp)
        self.payloads = payload_bytes(self.cp, self.data_scale)
        self.children_left = [0] * self.cp.n_tasks
        for ps in self.parents:
            for p in ps:
                self.children_left[p] += 1
        self._remote = ray.remote(num_returns=2, max_retries=0)(execute)
        self._node_map = {rid: nd for nd, rid in enumerate(self.cluster.ray_nodes)}

    def launch(self, t: int, nd: int, version: int, work_s: float, event_wall: float) -> None:
        """Start task t on node nd now (its emulated work `work_s` problem seconds, run at the time scale)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        req = self.cp.req[t]
        spec = task_spec(self.tasks[t], work_s * self.time_scale, self.payloads[t])
        spec["nodes"] = self._node_map
        spec["journal"] = self.journal_outputs
        options: dict[str, Any] = {
            "num_cpus": float(req[0]),
            "num_gpus": float(req[2]),
            "scheduling_strategy": NodeAffinitySchedulingStrategy(self.cluster.ray_nodes[nd], soft=False),
        }
        if req[1] > 0 and self.cluster.has_mem[nd]:
            options["resources"] = {MEM_RESOURCE: float(req[1])}
        args = [self.outputs.get(p) for p in self.parents[t]]
        status_ref, output_ref = self._remote.options(**options).remote(spec, *args)
        self.inflight[status_ref] = (t, version, nd, time.time(), event_wall, output_ref)

    def task_done(self, t: int) -> None:
        """Task t is done for good: its parents' outputs are dropped once all their children are done (an exit
        task's output is kept: it is the workflow's result)."""
        for p in self.parents[t]:
            self.children_left[p] -= 1
            if self.children_left[p] <= 0:
                self.outputs.pop(p, None)
                self.stdout.pop(p, None)

    def restore_outputs(self, done: dict[int, int], kept: dict[int, tuple[str, str]]) -> None:
        """Tasks an earlier run finished: their outputs, as the journal kept them (`kept`), go back into the object
        store for their children; an emulated task's payload is made again from its size. A done task whose
        output was not kept hands its children nothing (`run.resumable` counts such a task done only where no
        child is left to run)."""
        import ray

        for t in done:
            children = self.cp.succs(t).tolist()
            if children and all(c in done for c in children):
                continue  # nothing left to hand it to
            run = self.tasks[t].run
            if run is None:
                value: Any = bytes(self.payloads[t]) if self.payloads[t] else None
            elif t in kept:
                encoding, text = kept[t]
                value = json.loads(text) if encoding == "json" else text
                if encoding == "text":
                    self.stdout[t] = text
            else:
                continue
            self.outputs[t] = ray.put(value)
            self.output_node[t] = -1

    def results(self) -> dict[int, Any]:
        """The outputs of the exit tasks that ran (fetched from the object store)."""
        import ray

        return {t: ray.get(ref) for t, ref in self.outputs.items() if self.children_left[t] <= 0}

    def warm_up(self, per_node: int = 4) -> None:
        """Start worker processes on every node before the run (as many as its tasks could use at once, at most
        `per_node`), so a launch is a task on a running worker, not a process start."""
        warm_up(self.cp, self.cluster, per_node)

    def poll(self, timeout_s: float) -> list[TaskEnded | NodeLost]:
        """Wait up to `timeout_s` wall seconds for tasks to end; every event that happened by then."""
        import ray

        deadline = time.monotonic() + max(timeout_s, 0.0)
        events: list[TaskEnded | NodeLost] = []
        while True:
            now = time.monotonic()
            if now >= self._next_check:
                self._next_check = now + NODE_CHECK_S
                events.extend(self.check_nodes())
                if events:
                    return events
            wait_s = max(min(deadline, self._next_check) - now, 0.0)
            if self.inflight:
                refs = list(self.inflight)
                ready, _ = ray.wait(refs, num_returns=1, timeout=wait_s)
                if ready:
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                    for ref in ready:
                        if ref in self.inflight:  # not dropped with a node found lost just before
                            events.extend(self._ended(ref))
                    return events
            elif wait_s > 0:
                time.sleep(wait_s)
            if time.monotonic() >= deadline:
                return events

    def _ended(self, ref: Any) -> list[TaskEnded | NodeLost]:
        import ray

        t, version, nd, launched, event_wall, output_ref = self.inflight.pop(ref)
        try:
            status = ray.get(ref)
        except ray.exceptions.RayError as err:
            reason = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[:300]
            if isinstance(err, _node_gone_errors()):
                # its worker or raylet died: the node is lost to this run, whether or not Ray has noticed yet
                lost: list[TaskEnded | NodeLost] = list(self.check_nodes())
                if nd not in self.lost:
                    self.lost.add(nd)
                    self._drop_node(nd)
                    lost.append(NodeLost(nd))
                return lost
            if isinstance(err, ray.exceptions.ObjectLostError):
                return [*self._inputs_lost(t, str(err)), TaskEnded(t, version, False, reason, True, {"lost": True})]
            return [TaskEnded(t, version, False, reason, True, {"node": nd})]
        started = float(status["started"])
        self.report_latency_s.append(max(time.time() - float(status["ended"]), 0.0))
        self.launch_latency_s.append(max(started - launched, 0.0))
        self.dispatch_latency_s.append(max(started - event_wall, 0.0))
        if status["ok"]:
            self.outputs[t] = output_ref
            self.output_node[t] = nd
            if "stdout" in status:
                self.stdout[t] = status["stdout"]
            if self.journal_outputs:
                if "stdout" in status:
                    self.finished_outputs[t] = ("text", status["stdout"])
                elif status.get("output_json") is not None:
                    self.finished_outputs[t] = ("json", status["output_json"])
        return [TaskEnded(t, version, bool(status["ok"]), str(status.get("reason", "")), False, status)]

    def check_nodes(self) -> list[NodeLost]:
        """Nodes Ray now reports dead that were not known lost (each reported once)."""
        alive = self.cluster.node_alive()
        lost = []
        for nd, rid in enumerate(self.cluster.ray_nodes):
            if nd not in self.lost and not alive.get(rid, False):
                self.lost.add(nd)
                lost.append(NodeLost(nd))
        for event in lost:
            self._drop_node(event.node)
        return lost

    def _inputs_lost(self, t: int, message: str) -> list[TaskEnded | NodeLost]:
        """Task t could not fetch a parent's output: the node that held it is gone (whether or not Ray says so
        yet); the outputs it held are made again where they can be."""
        events: list[TaskEnded | NodeLost] = list(self.check_nodes())
        for p in self.parents[t]:
            ref, on = self.outputs.get(p), self.output_node.get(p, -1)
            if ref is not None and on >= 0 and on not in self.lost and ref.hex() in message:
                self.lost.add(on)
                self._drop_node(on)
                events.append(NodeLost(on))
        return events

    def _drop_node(self, nd: int) -> None:
        """Forget the Ray tasks of a lost node (the engine fails them with the node), and make again, from this
        process, the outputs that were held only there and are still needed: an emulated payload, a command's
        stdout. A function's value held only there is lost with it: its children fail (and retry)."""
        import ray

        for ref, (_, _, on, *_) in list(self.inflight.items()):
            if on == nd:
                del self.inflight[ref]
        for t, on in list(self.output_node.items()):
            if on != nd or t not in self.outputs:
                continue
            run = self.tasks[t].run
            if run is None:
                self.outputs[t] = ray.put(bytes(self.payloads[t]) if self.payloads[t] else None)
            elif run.command is not None:
                self.outputs[t] = ray.put(self.stdout.get(t, ""))
            self.output_node[t] = -1

    def cancel(self, t: int) -> None:
        """Cancel task t's Ray task if it is running."""
        import ray

        for ref, entry in list(self.inflight.items()):
            if entry[0] == t:
                del self.inflight[ref]
                ray.cancel(ref, force=True)

    def cancel_all(self) -> int:
        """Cancel every running Ray task; how many there were."""
        import ray

        refs = list(self.inflight)
        self.inflight.clear()
        for ref in refs:
            with contextlib.suppress(Exception):  # a task that just ended cannot be cancelled: nothing to do
                ray.cancel(ref, force=True)
        return len(refs)


@dataclass(frozen=True)
class Overhead:
    """A cluster's per-task latency, measured by `probe_overhead` (wall seconds, one value per probe task)."""

    launch_s: list[float]
    """from submitting the Ray task to its start on its node"""
    report_s: list[float]
    """from its end on its node to the driver's knowing it"""

    @property
    def per_task_s(self) -> float:
        """The time a task's measured run adds to its work on average: mean launch plus mean report."""
        if not self.launch_s:
            return 0.0
        return sum(self.launch_s) / len(self.launch_s) + sum(self.report_s) / len(self.report_s)


def probe_overhead(cluster: RayCluster, per_node: int = 10) -> Overhead:
    """Launch `per_node` empty tasks on each node, one at a time, the way a run launches its tasks (the same
    remote function, pinned, on warm workers), and time each launch and report."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from dagsched.live.worker import execute

    remote = ray.remote(num_returns=2, max_retries=0)(execute)
    spec = {"kind": "sleep", "sleep_s": 0.0, "payload_bytes": 0}
    launch, report = [], []
    for _ in range(per_node):
        for rid in cluster.ray_nodes:
            strategy = NodeAffinitySchedulingStrategy(rid, soft=False)
            submitted = time.time()
            status_ref, _ = remote.options(num_cpus=0, scheduling_strategy=strategy).remote(spec)
            ray.wait([status_ref], num_returns=1)
            known = time.time()
            status = ray.get(status_ref)
            launch.append(max(float(status["started"]) - submitted, 0.0))
            report.append(max(known - float(status["ended"]), 0.0))
    return Overhead(launch, report)


def _idle(seconds: float) -> None:
    time.sleep(seconds)


def warm_up(cp: CompiledProblem, cluster: RayCluster, per_node: int = 4) -> None:
    """Start `min(per_node, tasks that fit the node at once)` worker processes on each node and wait for them."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    idle = ray.remote(max_retries=0, num_cpus=0)(_idle)
    refs = []
    cpu = cp.req[:, 0]
    smallest = float(cpu[cpu > 0].min()) if (cpu > 0).any() else 1.0
    for nd, rid in enumerate(cluster.ray_nodes):
        k = max(1, min(per_node, int(float(cp.cap[nd, 0]) / smallest)))
        strategy = NodeAffinitySchedulingStrategy(rid, soft=False)
        refs += [idle.options(scheduling_strategy=strategy).remote(0.5) for _ in range(k)]
    ray.get(refs)

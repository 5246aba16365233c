"""The reality loop on real runs: a run records each workflow's plan and every task's start, finish and failure
in the scheduling service, over its public HTTP API, so `dagsched gap`, `GET /v1/gap`, calibration, the canary and
fine-tuning read real runs.

Each workflow is planned once (`POST /v1/schedule`, with the run's scheduler where the service has it) before the
run starts; each event (`POST /v1/events`: task_started, task_finished, task_failed, at the problem's seconds since
the workflow's submission) is posted from a background thread in the order it happened, so the run never waits on
the service. A Ray node lost mid-run is posted as `node_down` to every plan that had work on it then: a task of
its workflow running there, or a task its plan put there not finished yet (a workflow not submitted yet gets it at
its second 0: the node was down when it came). `LocalService` starts `dagsched serve` on 127.0.0.1 on a store,
with a random token, for the length of a run, and stops it by its process.
"""

from __future__ import annotations

import os
import queue
import secrets
import socket
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from dagsched.io.native import node_to_request, workflow_to_native
from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError

if TYPE_CHECKING:
    import httpx

EVENT_KINDS = {"started": "task_started", "done": "task_finished", "error": "task_failed", "failed": "task_failed"}
"""An attempt feed's kinds as the service's event kinds."""


def event_order(kind: str, row: dict[str, Any]) -> tuple[float, int]:
    """Where an attempt feed's event goes among those of the same batch: by its instant (problem seconds); at one
    instant a lost node first, then the attempts that ended (a task that failed and was placed again at once ends
    before its new start), the starts, and last the ends of attempts that took no time."""
    if kind == "node_down":
        return row["at_s"], 0
    if kind == "started":
        return row["start_s"], 2
    return row["end_s"], 1 if row["start_s"] < row["end_s"] else 3


class ServiceRecorder:
    """Plans each workflow on the service, then posts the run's events to it as they come."""

    def __init__(
        self, url: str, token: str, cp: CompiledProblem, scheduler: str | None, http: httpx.Client | None = None
    ) -> None:
        import httpx

        self.cp = cp
        self.http = http if http is not None else httpx.Client(base_url=url.rstrip("/"), timeout=30.0)
        self.headers = {"Authorization": f"Bearer {token}"}
        self.scheduler = scheduler
        self.plan_ids: dict[str, str] = {}
        self.planned: dict[str, dict[str, str]] = {}
        """workflow -> task -> the node its plan put it on"""
        self.running: dict[tuple[str, str], str] = {}
        """(workflow, task) -> the node it runs on now"""
        self.finished: set[tuple[str, str]] = set()
        self.submit_s = {name: float(cp.wf_submit_s[w]) for w, name in enumerate(cp.wf_names)}
        self.posted = 0
        self.refused: list[str] = []
        self._queue: queue.Queue[list[tuple[str, dict[str, Any]]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._post_loop, name="dagsched-recorder", daemon=True)

    def _nodes(self) -> list[dict[str, Any]]:
        return [node_to_request(n) for n in self.cp.problem.cluster.nodes]

    def plan_all(self) -> None:
        """Plan every workflow (the service's record of what was intended); refused names the service."""
        import httpx

        nodes = self._nodes()
        for wf in self.cp.problem.workflows:
            body: dict[str, Any] = {"workflow": workflow_to_native(wf), "nodes": nodes}
            try:
                r = self.http.post("/v1/schedule", json=body | {"scheduler": self.scheduler})
                if r.status_code == 422 and self.scheduler is not None:  # a scheduler the service does not plan with
                    r = self.http.post("/v1/schedule", json=body)
            except httpx.HTTPError as err:
                raise InputError("--service", f"cannot reach the service at {self.http.base_url}: {err}") from None
            if r.status_code != 200:
                raise InputError(
                    "--service", f"/v1/schedule refused workflow {wf.name!r}: {r.status_code} {r.text}"[:400]
                )
            plan = r.json()
            self.plan_ids[wf.name] = plan["plan_id"]
            self.planned[wf.name] = {a["task"]: a["node"] for a in plan.get("assignments", [])}
        self._thread.start()

    def __call__(self, events: list[tuple[str, dict[str, Any]]]) -> None:
        self._queue.put(events)

    def _post_loop(self) -> None:
        while (batch := self._queue.get()) is not None:
            for kind, row in sorted(batch, key=lambda event: event_order(*event)):
                if kind == "node_down":
                    self._node_down(row["node"], row["at_s"])
                    continue
                wf, task = row["workflow"], row["task"]
                if kind == "started":
                    self.running[(wf, task)] = row["node"]
                else:
                    self.running.pop((wf, task), None)
                    if kind == "done":
                        self.finished.add((wf, task))
                at = (row["start_s"] if kind == "started" else row["end_s"]) - self.submit_s[wf]
                body = {"kind": EVENT_KINDS[kind], "task": task, "node": row["node"], "at": max(at, 0.0)}
                self._post(wf, body, f"{body['kind']} {wf}/{task}")

    def _node_down(self, node: str, at_s: float) -> None:
        """`node_down` to each plan that had work on `node` at problem instant `at_s`."""
        for wf in self.plan_ids:
            running_there = any(w == wf and on == node for (w, _), on in self.running.items())
            planned_there = any(
                on == node and (wf, task) not in self.finished for task, on in self.planned.get(wf, {}).items()
            )
            if running_there or planned_there:
                body = {"kind": "node_down", "node": node, "at": max(at_s - self.submit_s[wf], 0.0)}
                self._post(wf, body, f"node_down {wf}/{node}")

    def _post(self, wf: str, body: dict[str, Any], label: str) -> None:
        try:
            r = self.http.post("/v1/events", json={"plan_id": self.plan_ids[wf], **body}, headers=self.headers)
            if r.status_code == 200:
                self.posted += 1
            else:
                self.refused.append(f"{label}: {r.status_code} {r.text}"[:300])
        except Exception as err:  # noqa: BLE001 - the run goes on; what was not recorded is reported
            self.refused.append(f"{label}: {err}"[:300])

    def close(self, timeout_s: float = 60.0) -> None:
        """Post what is queued (waiting at most `timeout_s`), then stop."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout_s)
        self.http.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalService:
    """`dagsched serve` on 127.0.0.1 on a store, with a random token, stopped by its process."""

    def __init__(self, store: str, start_timeout_s: float = 120.0) -> None:
        import httpx

        self.token = secrets.token_urlsafe(24)
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "DAGSCHED_API_TOKEN": self.token}
        cmd = [sys.executable, "-c", "from dagsched.cli import app; app()", "serve", "--host", "127.0.0.1"]
        self.process = subprocess.Popen(
            [*cmd, "--port", str(port), "--store", store, "--log-level", "warning"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + start_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = (self.process.stderr.read() if self.process.stderr else "")[-500:]
                raise InputError("--store", f"the local service did not start on {store!r}: {err}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        self.stop()
        raise InputError("--store", f"the local service did not answer within {start_timeout_s:g} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self.process.stderr:
            self.process.stderr.close()

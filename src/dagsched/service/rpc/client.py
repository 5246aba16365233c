"""A small client of the gRPC service, taking and giving the HTTP API's JSON shapes.

with Client("127.0.0.1:50051", token="...") as c:
    plan = c.schedule({"workflow": {...}, "nodes": [...], "scheduler": "heft"})   # a Plan message
    c.report_event({"plan_id": plan.plan_id, "kind": "task_started", "task": "a", "node": "n1", "at": 0})
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import json_format

from dagsched.service.rpc import dagsched_pb2 as pb
from dagsched.service.rpc import dagsched_pb2_grpc as pb_grpc


def workflow_message(wf: dict[str, Any]) -> pb.Workflow:
    """A native workflow dict as a Workflow message (a task's resources are fields of its Task, bare dependency ids
    Dependency messages)."""
    tasks = [
        {
            **{k: v for k, v in t.items() if k != "resources"},
            **(t.get("resources") or {}),
            "dependencies": [{"task": d} if isinstance(d, str) else d for d in t.get("dependencies") or []],
        }
        for t in wf["tasks"]
    ]
    return json_format.ParseDict({**wf, "tasks": tasks}, pb.Workflow(), ignore_unknown_fields=True)


def schedule_request(body: dict[str, Any]) -> pb.ScheduleRequest:
    """A /v1/schedule JSON body as a ScheduleRequest (a document other than a native workflow as is)."""
    msg = pb.ScheduleRequest(scheduler=body.get("scheduler") or "")
    wf = body["workflow"]
    native = isinstance(wf, dict) and "tasks" in wf and "name" in wf and "specification" not in wf
    if native:
        msg.workflow.CopyFrom(workflow_message(wf))
    else:
        msg.document.update(wf)
    msg.nodes.extend(json_format.ParseDict(n, pb.NodeState()) for n in body["nodes"])
    if body.get("weights"):
        msg.weights.CopyFrom(json_format.ParseDict(body["weights"], pb.ObjectiveWeights()))
    return msg


def extender_args(args: dict[str, Any]) -> pb.ExtenderArgs:
    """kube-scheduler's ExtenderArgs JSON as the message."""
    msg = pb.ExtenderArgs(nodenames=args.get("nodenames") or [])
    if args.get("pod") is not None:
        msg.pod.update(args["pod"])
    if args.get("nodes") is not None:
        msg.nodes.update(args["nodes"])
    return msg


class Client:
    """One channel to a dagsched gRPC server; `token` goes with ReportEvent."""

    def __init__(self, target: str, token: str | None = None) -> None:
        self.channel = grpc.insecure_channel(target)
        self.stub = pb_grpc.SchedulerStub(self.channel)
        self.metadata = [("authorization", f"Bearer {token}")] if token else []

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.channel.close()

    def schedule(self, body: dict[str, Any], timeout: float = 60.0) -> pb.Plan:
        return self.stub.Schedule(schedule_request(body), timeout=timeout)

    def filter(self, args: dict[str, Any]) -> pb.FilterResult:
        return self.stub.Filter(extender_args(args), timeout=30.0)

    def prioritize(self, args: dict[str, Any]) -> pb.HostPriorityList:
        return self.stub.Prioritize(extender_args(args), timeout=30.0)

    def explain(self, plan_id: str, task: str | None = None) -> pb.Explanation:
        return self.stub.Explain(pb.ExplainRequest(plan_id=plan_id, task=task), timeout=60.0)

    def health(self) -> pb.HealthReply:
        return self.stub.Health(pb.HealthRequest(), timeout=10.0)

    def report_event(self, event: dict[str, Any]) -> pb.EventReply:
        return self.stub.ReportEvent(json_format.ParseDict(event, pb.Event()), metadata=self.metadata, timeout=60.0)

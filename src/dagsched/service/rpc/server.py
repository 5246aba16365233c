"""The gRPC server: `dagsched.v1.Scheduler` (`dagsched.proto`) beside the HTTP API, in the same process, calling
the same use cases with the same errors as status codes (docs/service.md, "gRPC"), on an event loop of its own.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import json_format

from dagsched.model.errors import InputError, parse
from dagsched.service import explaining, k8s
from dagsched.service.refusals import Refused, check_bearer
from dagsched.service.rpc import dagsched_pb2 as pb
from dagsched.service.rpc import dagsched_pb2_grpc as pb_grpc
from dagsched.service.schemas import EventRequest, ExplainResponse, ScheduleRequest
from dagsched.service.state import ServiceState

log = logging.getLogger("dagsched.service")

_HTTP_CODES = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    409: grpc.StatusCode.FAILED_PRECONDITION,
}
"""The gRPC code of each `Refused` status (bad input, InputError, is INVALID_ARGUMENT on its own)."""


def _handler(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run an RPC on the server's loop thread, answer the HTTP API's errors as status codes, and count it."""
    name = method.__name__

    @functools.wraps(method)
    async def call(self: SchedulerService, request: Any, context: grpc.aio.ServicerContext) -> Any:
        code, details = grpc.StatusCode.OK, ""
        try:
            if type(request) is Undecodable:
                raise InputError("body", f"not a valid {request.message} message ({request.error})")
            return method(self, request, context)
        except (InputError, k8s.ExtenderInputError) as err:  # an InputError's text is `field: fault`, or the fault
            code, details = grpc.StatusCode.INVALID_ARGUMENT, str(err)
        except Refused as err:
            code, details = _HTTP_CODES.get(err.status, grpc.StatusCode.UNKNOWN), str(err)
        except Exception as err:  # noqa: BLE001  (as the HTTP API's 500: said, logged, never a crash)
            log.exception("gRPC %s failed", name)
            code, details = grpc.StatusCode.INTERNAL, f"internal error: {type(err).__name__}: {err}"
        finally:
            self.state.metrics.grpc_requests.labels(method=name, code=code.name).inc()
        await context.abort(code, details)

    return call


@dataclass(frozen=True)
class Undecodable:
    """A request whose bytes do not decode: INVALID_ARGUMENT saying so, where grpc would answer UNKNOWN."""

    message: str
    error: str


class _DecodeRequests(grpc.aio.ServerInterceptor):
    """Each method's request deserializer, wrapped to give `Undecodable` for bytes that are no such message."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Any], details: grpc.HandlerCallDetails
    ) -> Any:
        method = details.method
        wrapped = self.handlers.get(method)
        if wrapped is None:
            handler = await continuation(details)
            decode = getattr(handler, "request_deserializer", None)
            if decode is None:
                return handler
            wrapped = self.handlers[method] = handler._replace(request_deserializer=_tolerant(decode))
        return wrapped


def _tolerant(decode: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    message = getattr(getattr(decode, "__self__", None), "DESCRIPTOR", None)
    name = message.full_name if message is not None else "request"

    def decode_or_say(raw: bytes) -> Any:
        try:
            return decode(raw)
        except Exception as err:  # noqa: BLE001  (protobuf's DecodeError, or any parser fault: the client's bytes)
            return Undecodable(name, f"{type(err).__name__}: {err}")

    return decode_or_say


def _struct(value: Any) -> Any:
    """A google.protobuf.Struct as plain data: what the HTTP route receives as JSON."""
    return {k: _value(v) for k, v in value.fields.items()}


def _value(v: Any) -> Any:
    kind = v.WhichOneof("kind")
    if kind == "struct_value":
        return _struct(v.struct_value)
    if kind == "list_value":
        return [_value(x) for x in v.list_value.values]
    return getattr(v, kind) if kind in ("number_value", "string_value", "bool_value") else None


def _given(msg: Any, out: dict[str, Any], optional: tuple[str, ...], maps: tuple[str, ...] = ()) -> dict[str, Any]:
    """`out` with the `optional` fields `msg` has set and its `maps` that are not empty."""
    out.update({k: getattr(msg, k) for k in optional if msg.HasField(k)})
    out.update({k: dict(getattr(msg, k)) for k in maps if getattr(msg, k)})
    return out


def _task(t: pb.Task) -> dict[str, Any]:
    """A Task message as the native format's task."""
    out: dict[str, Any] = {
        "id": t.id,
        "runtime": t.runtime,
        "resources": _given(t, {"mem": t.mem, "gpu": t.gpu}, ("cpu",)),
        "dependencies": [{"task": d.task, "data": d.data} for d in t.dependencies],
        "priority": t.priority,
        "critical": t.critical,
    }
    return _given(t, out, ("deadline",), ("labels", "costs"))


def _workflow(request: pb.ScheduleRequest) -> dict[str, Any]:
    """The request's workflow as the JSON /v1/schedule receives."""
    which = request.WhichOneof("input")
    if which == "document":
        return _struct(request.document)
    if which is None:
        raise InputError("workflow", "required: a Workflow, or a document (native or WfFormat)")
    w = request.workflow
    return _given(w, {"name": w.name, "tasks": [_task(t) for t in w.tasks]}, ("deadline",), ("labels",))


def _node(n: pb.NodeState) -> dict[str, Any]:
    out: dict[str, Any] = {"id": n.id, "cpu": n.cpu, "mem": n.mem, "gpu": n.gpu, "price_per_hour": n.price_per_hour}
    if n.HasField("free"):
        out["free"] = {"cpu": n.free.cpu, "mem": n.free.mem, "gpu": n.free.gpu}
    return _given(n, out, ("speed", "bandwidth"), ("labels",))


_PLAN_FIELDS = ("plan_id", "scheduler", "fallback", "makespan", "cost", "requested_scheduler", "workflow", "notes")
"""The Plan message's fields that a /v1/schedule response always has, as they are."""


def plan_message(r: dict[str, Any]) -> pb.Plan:
    """A /v1/schedule response as a Plan message (filled in place: several times faster than nested constructors)."""
    optional = {k: r.get(k) for k in ("fallback_reason", "model_version", "arm", "canary")}  # None: left unset
    msg = pb.Plan(**{k: r[k] for k in _PLAN_FIELDS}, **optional, root_id=r["root_id"] or r["plan_id"])
    add = msg.assignments.add
    for a in r["assignments"]:
        e = a["evidence"]
        ev = add(task=a["task"], node=a["node"], start=a["start"], finish=a["finish"]).evidence
        ev.score = e["score"]
        alternative, rejection = ev.alternatives.add, ev.rejected.add
        for x in e["alternatives"]:
            alternative(node=x["node"], score=x["score"], start=x["start"], finish=x["finish"], chosen=x["chosen"])
        for x in e["rejected"]:
            rejection(node=x["node"], constraint=x["constraint"])
        ev.terms.update(e["terms"])
        if e.get("calibration"):
            ev.calibration.CopyFrom(pb.AssignmentCalibration(**e["calibration"]))
    for x in r["rejected_nodes"]:
        msg.rejected_nodes.add(node=x["node"], constraint=x["constraint"])
    msg.objective.update(r["objective"])
    if r.get("calibration"):
        msg.calibration.update(r["calibration"])
    return msg


class SchedulerService(pb_grpc.SchedulerServicer):
    """The RPCs, on one service process's state."""

    def __init__(self, state: ServiceState) -> None:
        self.state = state
        self.background = futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="dagsched-grpc-after")

    @_handler
    def Schedule(self, request: pb.ScheduleRequest, context: grpc.aio.ServicerContext) -> pb.Plan:  # noqa: N802
        data: dict[str, Any] = {"workflow": _workflow(request), "nodes": [_node(n) for n in request.nodes]}
        if request.scheduler:
            data["scheduler"] = request.scheduler
        if request.HasField("weights"):
            data["weights"] = json_format.MessageToDict(
                request.weights, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        body = parse(ScheduleRequest, data)
        planned, _ = self.state.planning.plan(body, self.state.config, self.background.submit)
        return plan_message(planned.response)

    def _extender_args(self, request: pb.ExtenderArgs) -> dict[str, Any]:
        args: dict[str, Any] = {"pod": _struct(request.pod) if request.HasField("pod") else None}
        if request.HasField("nodes"):
            args["nodes"] = _struct(request.nodes)
        else:
            args["nodenames"] = list(request.nodenames)
        return args

    @_handler
    def Filter(self, request: pb.ExtenderArgs, context: grpc.aio.ServicerContext) -> pb.FilterResult:  # noqa: N802
        with self.state.metrics.k8s_call("filter"):
            result = k8s.filter_nodes(self._extender_args(request), self.state.config.compiled_rules)
        return pb.FilterResult(
            nodes=result["nodes"],  # None (the names were given): left unset
            nodenames=result["nodenames"],
            failed_nodes=result["failedNodes"],
            failed_and_unresolvable_nodes=result["failedAndUnresolvableNodes"],
            error=result["error"],
        )

    @_handler
    def Prioritize(self, request: pb.ExtenderArgs, context: grpc.aio.ServicerContext) -> pb.HostPriorityList:  # noqa: N802
        args = self._extender_args(request)
        with self.state.metrics.k8s_call("prioritize"):
            result = k8s.prioritize_pod(args, self.state.config.compiled_rules, self.state.store.plans)
        return pb.HostPriorityList(priorities=[pb.HostPriority(host=h["host"], score=h["score"]) for h in result])

    @_handler
    def Explain(self, request: pb.ExplainRequest, context: grpc.aio.ServicerContext) -> pb.Explanation:  # noqa: N802
        if not request.plan_id:
            raise InputError("plan_id", "required")
        task = request.task if request.HasField("task") else None
        state = self.state
        out = explaining.explain(request.plan_id, task, state.store.plans, state.models, state.config)
        data = ExplainResponse.model_validate(out).model_dump(mode="json")  # as the HTTP route answers it
        return pb.Explanation(plan_id=request.plan_id, scheduler=data["scheduler"], explanation=data)

    @_handler
    def Health(self, request: pb.HealthRequest, context: grpc.aio.ServicerContext) -> pb.HealthReply:  # noqa: N802
        r = self.state.readiness()  # a model of None leaves the optional field unset
        return pb.HealthReply(ready=r["status"] == "ready", status=r["status"], store=r["store"], model=r["model"])

    @_handler
    def ReportEvent(self, request: pb.Event, context: grpc.aio.ServicerContext) -> pb.EventReply:  # noqa: N802
        header = str(dict(context.invocation_metadata()).get("authorization", ""))  # the HTTP API's bearer token
        check_bearer(self.state.settings.api_token, header, "metadata authorization")
        data = {"plan_id": request.plan_id, "kind": request.kind, "at": request.at}
        data = _given(request, data, ("task", "node", "elapsed_s"))
        out = self.state.replanning.apply(parse(EventRequest, data), self.state.config)
        return json_format.ParseDict({**out, "changed": {"changed": out["changed"]}}, pb.EventReply())


class Server:
    """The gRPC server of one process's state on host:port (0: a free port; `port` says which), on an event loop of
    its own thread."""

    def __init__(self, state: ServiceState, host: str, port: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="dagsched-grpc", daemon=True)
        self.thread.start()
        try:
            self.port = asyncio.run_coroutine_threadsafe(self._serve(state, f"{host}:{port}"), self.loop).result(60)
        except Exception as err:  # noqa: BLE001  (said as why it cannot listen)
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise RuntimeError(f"gRPC: cannot listen on {host}:{port}: {str(err) or type(err).__name__}") from None
        log.info("gRPC on %s:%d", host, self.port)

    async def _serve(self, state: ServiceState, address: str) -> int:
        limit = state.settings.max_body_bytes
        self.server = grpc.aio.server(
            interceptors=[_DecodeRequests()],
            options=[("grpc.max_receive_message_length", limit), ("grpc.so_reuseport", 1)],
        )
        pb_grpc.add_SchedulerServicer_to_server(SchedulerService(state), self.server)
        port: int = self.server.add_insecure_port(address)
        await self.server.start()
        return port

    def stop(self, grace: float = 2.0) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(grace), self.loop).result(timeout=grace + 10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)

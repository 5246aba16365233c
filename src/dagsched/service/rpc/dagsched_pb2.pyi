from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FreeCapacity(_message.Message):
    __slots__ = ("cpu", "mem", "gpu")
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    cpu: float
    mem: float
    gpu: int
    def __init__(self, cpu: _Optional[float] = ..., mem: _Optional[float] = ..., gpu: _Optional[int] = ...) -> None: ...

class NodeState(_message.Message):
    __slots__ = ("id", "cpu", "mem", "gpu", "speed", "price_per_hour", "bandwidth", "free", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    PRICE_PER_HOUR_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    id: str
    cpu: float
    mem: float
    gpu: int
    speed: float
    price_per_hour: float
    bandwidth: float
    free: FreeCapacity
    labels: _containers.ScalarMap[str, str]
    def __init__(self, id: _Optional[str] = ..., cpu: _Optional[float] = ..., mem: _Optional[float] = ..., gpu: _Optional[int] = ..., speed: _Optional[float] = ..., price_per_hour: _Optional[float] = ..., bandwidth: _Optional[float] = ..., free: _Optional[_Union[FreeCapacity, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ObjectiveWeights(_message.Message):
    __slots__ = ("makespan", "cost", "sla", "fragmentation", "load", "completion")
    MAKESPAN_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    SLA_FIELD_NUMBER: _ClassVar[int]
    FRAGMENTATION_FIELD_NUMBER: _ClassVar[int]
    LOAD_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    makespan: float
    cost: float
    sla: float
    fragmentation: float
    load: float
    completion: float
    def __init__(self, makespan: _Optional[float] = ..., cost: _Optional[float] = ..., sla: _Optional[float] = ..., fragmentation: _Optional[float] = ..., load: _Optional[float] = ..., completion: _Optional[float] = ...) -> None: ...

class Dependency(_message.Message):
    __slots__ = ("task", "data")
    TASK_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    task: str
    data: float
    def __init__(self, task: _Optional[str] = ..., data: _Optional[float] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "runtime", "cpu", "mem", "gpu", "dependencies", "priority", "critical", "deadline", "labels", "costs")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class CostsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    CRITICAL_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    COSTS_FIELD_NUMBER: _ClassVar[int]
    id: str
    runtime: float
    cpu: float
    mem: float
    gpu: int
    dependencies: _containers.RepeatedCompositeFieldContainer[Dependency]
    priority: int
    critical: bool
    deadline: float
    labels: _containers.ScalarMap[str, str]
    costs: _containers.ScalarMap[str, float]
    def __init__(self, id: _Optional[str] = ..., runtime: _Optional[float] = ..., cpu: _Optional[float] = ..., mem: _Optional[float] = ..., gpu: _Optional[int] = ..., dependencies: _Optional[_Iterable[_Union[Dependency, _Mapping]]] = ..., priority: _Optional[int] = ..., critical: _Optional[bool] = ..., deadline: _Optional[float] = ..., labels: _Optional[_Mapping[str, str]] = ..., costs: _Optional[_Mapping[str, float]] = ...) -> None: ...

class Workflow(_message.Message):
    __slots__ = ("name", "tasks", "deadline", "labels")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    name: str
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    deadline: float
    labels: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., deadline: _Optional[float] = ..., labels: _Optional[_Mapping[str, str]] = ...) -> None: ...

class ScheduleRequest(_message.Message):
    __slots__ = ("workflow", "document", "nodes", "scheduler", "weights")
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    workflow: Workflow
    document: _struct_pb2.Struct
    nodes: _containers.RepeatedCompositeFieldContainer[NodeState]
    scheduler: str
    weights: ObjectiveWeights
    def __init__(self, workflow: _Optional[_Union[Workflow, _Mapping]] = ..., document: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[NodeState, _Mapping]]] = ..., scheduler: _Optional[str] = ..., weights: _Optional[_Union[ObjectiveWeights, _Mapping]] = ...) -> None: ...

class Alternative(_message.Message):
    __slots__ = ("node", "score", "start", "finish", "chosen")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    CHOSEN_FIELD_NUMBER: _ClassVar[int]
    node: str
    score: float
    start: float
    finish: float
    chosen: bool
    def __init__(self, node: _Optional[str] = ..., score: _Optional[float] = ..., start: _Optional[float] = ..., finish: _Optional[float] = ..., chosen: _Optional[bool] = ...) -> None: ...

class Rejection(_message.Message):
    __slots__ = ("node", "constraint")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    node: str
    constraint: str
    def __init__(self, node: _Optional[str] = ..., constraint: _Optional[str] = ...) -> None: ...

class AssignmentCalibration(_message.Message):
    __slots__ = ("declared_s", "calibrated_s", "task_factor", "node_factor")
    DECLARED_S_FIELD_NUMBER: _ClassVar[int]
    CALIBRATED_S_FIELD_NUMBER: _ClassVar[int]
    TASK_FACTOR_FIELD_NUMBER: _ClassVar[int]
    NODE_FACTOR_FIELD_NUMBER: _ClassVar[int]
    declared_s: float
    calibrated_s: float
    task_factor: float
    node_factor: float
    def __init__(self, declared_s: _Optional[float] = ..., calibrated_s: _Optional[float] = ..., task_factor: _Optional[float] = ..., node_factor: _Optional[float] = ...) -> None: ...

class Evidence(_message.Message):
    __slots__ = ("score", "alternatives", "rejected", "terms", "calibration")
    class TermsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SCORE_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVES_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    TERMS_FIELD_NUMBER: _ClassVar[int]
    CALIBRATION_FIELD_NUMBER: _ClassVar[int]
    score: str
    alternatives: _containers.RepeatedCompositeFieldContainer[Alternative]
    rejected: _containers.RepeatedCompositeFieldContainer[Rejection]
    terms: _containers.ScalarMap[str, float]
    calibration: AssignmentCalibration
    def __init__(self, score: _Optional[str] = ..., alternatives: _Optional[_Iterable[_Union[Alternative, _Mapping]]] = ..., rejected: _Optional[_Iterable[_Union[Rejection, _Mapping]]] = ..., terms: _Optional[_Mapping[str, float]] = ..., calibration: _Optional[_Union[AssignmentCalibration, _Mapping]] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("task", "node", "start", "finish", "evidence")
    TASK_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    EVIDENCE_FIELD_NUMBER: _ClassVar[int]
    task: str
    node: str
    start: float
    finish: float
    evidence: Evidence
    def __init__(self, task: _Optional[str] = ..., node: _Optional[str] = ..., start: _Optional[float] = ..., finish: _Optional[float] = ..., evidence: _Optional[_Union[Evidence, _Mapping]] = ...) -> None: ...

class Plan(_message.Message):
    __slots__ = ("plan_id", "scheduler", "fallback", "makespan", "cost", "assignments", "fallback_reason", "requested_scheduler", "workflow", "model_version", "objective", "rejected_nodes", "notes", "root_id", "calibration", "arm", "canary")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_FIELD_NUMBER: _ClassVar[int]
    MAKESPAN_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    FALLBACK_REASON_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    WORKFLOW_FIELD_NUMBER: _ClassVar[int]
    MODEL_VERSION_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    REJECTED_NODES_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    CALIBRATION_FIELD_NUMBER: _ClassVar[int]
    ARM_FIELD_NUMBER: _ClassVar[int]
    CANARY_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    scheduler: str
    fallback: bool
    makespan: float
    cost: float
    assignments: _containers.RepeatedCompositeFieldContainer[Assignment]
    fallback_reason: str
    requested_scheduler: str
    workflow: str
    model_version: str
    objective: _struct_pb2.Struct
    rejected_nodes: _containers.RepeatedCompositeFieldContainer[Rejection]
    notes: _containers.RepeatedScalarFieldContainer[str]
    root_id: str
    calibration: _struct_pb2.Struct
    arm: str
    canary: str
    def __init__(self, plan_id: _Optional[str] = ..., scheduler: _Optional[str] = ..., fallback: _Optional[bool] = ..., makespan: _Optional[float] = ..., cost: _Optional[float] = ..., assignments: _Optional[_Iterable[_Union[Assignment, _Mapping]]] = ..., fallback_reason: _Optional[str] = ..., requested_scheduler: _Optional[str] = ..., workflow: _Optional[str] = ..., model_version: _Optional[str] = ..., objective: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., rejected_nodes: _Optional[_Iterable[_Union[Rejection, _Mapping]]] = ..., notes: _Optional[_Iterable[str]] = ..., root_id: _Optional[str] = ..., calibration: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., arm: _Optional[str] = ..., canary: _Optional[str] = ...) -> None: ...

class ExtenderArgs(_message.Message):
    __slots__ = ("pod", "nodes", "nodenames")
    POD_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    NODENAMES_FIELD_NUMBER: _ClassVar[int]
    pod: _struct_pb2.Struct
    nodes: _struct_pb2.Struct
    nodenames: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, pod: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., nodes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., nodenames: _Optional[_Iterable[str]] = ...) -> None: ...

class FilterResult(_message.Message):
    __slots__ = ("nodes", "nodenames", "failed_nodes", "failed_and_unresolvable_nodes", "error")
    class FailedNodesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class FailedAndUnresolvableNodesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODES_FIELD_NUMBER: _ClassVar[int]
    NODENAMES_FIELD_NUMBER: _ClassVar[int]
    FAILED_NODES_FIELD_NUMBER: _ClassVar[int]
    FAILED_AND_UNRESOLVABLE_NODES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    nodes: _struct_pb2.Struct
    nodenames: _containers.RepeatedScalarFieldContainer[str]
    failed_nodes: _containers.ScalarMap[str, str]
    failed_and_unresolvable_nodes: _containers.ScalarMap[str, str]
    error: str
    def __init__(self, nodes: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., nodenames: _Optional[_Iterable[str]] = ..., failed_nodes: _Optional[_Mapping[str, str]] = ..., failed_and_unresolvable_nodes: _Optional[_Mapping[str, str]] = ..., error: _Optional[str] = ...) -> None: ...

class HostPriority(_message.Message):
    __slots__ = ("host", "score")
    HOST_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    host: str
    score: int
    def __init__(self, host: _Optional[str] = ..., score: _Optional[int] = ...) -> None: ...

class HostPriorityList(_message.Message):
    __slots__ = ("priorities",)
    PRIORITIES_FIELD_NUMBER: _ClassVar[int]
    priorities: _containers.RepeatedCompositeFieldContainer[HostPriority]
    def __init__(self, priorities: _Optional[_Iterable[_Union[HostPriority, _Mapping]]] = ...) -> None: ...

class ExplainRequest(_message.Message):
    __slots__ = ("plan_id", "task")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    task: str
    def __init__(self, plan_id: _Optional[str] = ..., task: _Optional[str] = ...) -> None: ...

class Explanation(_message.Message):
    __slots__ = ("plan_id", "scheduler", "explanation")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    SCHEDULER_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    scheduler: str
    explanation: _struct_pb2.Struct
    def __init__(self, plan_id: _Optional[str] = ..., scheduler: _Optional[str] = ..., explanation: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealthReply(_message.Message):
    __slots__ = ("ready", "status", "store", "model")
    READY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ready: bool
    status: str
    store: str
    model: str
    def __init__(self, ready: _Optional[bool] = ..., status: _Optional[str] = ..., store: _Optional[str] = ..., model: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("plan_id", "kind", "task", "node", "at", "elapsed_s")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_S_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    kind: str
    task: str
    node: str
    at: float
    elapsed_s: float
    def __init__(self, plan_id: _Optional[str] = ..., kind: _Optional[str] = ..., task: _Optional[str] = ..., node: _Optional[str] = ..., at: _Optional[float] = ..., elapsed_s: _Optional[float] = ...) -> None: ...

class EventReply(_message.Message):
    __slots__ = ("plan_id", "root_id", "replanned", "reason", "migrated", "changed")
    PLAN_ID_FIELD_NUMBER: _ClassVar[int]
    ROOT_ID_FIELD_NUMBER: _ClassVar[int]
    REPLANNED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MIGRATED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    plan_id: str
    root_id: str
    replanned: bool
    reason: str
    migrated: _containers.RepeatedScalarFieldContainer[str]
    changed: _struct_pb2.Struct
    def __init__(self, plan_id: _Optional[str] = ..., root_id: _Optional[str] = ..., replanned: _Optional[bool] = ..., reason: _Optional[str] = ..., migrated: _Optional[_Iterable[str]] = ..., changed: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

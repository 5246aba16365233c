"""Request and response bodies: the OpenAPI schema of the service (their constraints give the 422s that name the
field).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from dagsched.model.entities import MAX_PRICE_PER_HOUR, Identifier, NonNegative, NonNegativeInt, Positive
from dagsched.sim.objective import ObjectiveWeights


class Strict(BaseModel):
    """Refuses unknown fields and values of another type (the bodies here, and the runtime config)."""

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: `true` is not a number, "1" is not one


class FreeCapacity(Strict):
    """What a node has free now; the planner plans on this, not on the node's total."""

    cpu: NonNegative
    mem: NonNegative = 0.0
    gpu: NonNegativeInt = 0


class NodeState(Strict):
    """One node as the caller sees it now."""

    id: Identifier
    cpu: Positive = Field(description="total cores")
    mem: NonNegative = Field(0.0, description="total GiB")
    gpu: NonNegativeInt = 0
    speed: Positive = 1.0
    price_per_hour: NonNegative = Field(0.0, le=MAX_PRICE_PER_HOUR, description="price per hour the node is up")
    bandwidth: Positive = Field(1.25e9, description="bytes per second")
    free: FreeCapacity | None = Field(None, description="free capacity now; default: all of it")
    labels: dict[str, str] = Field(default_factory=dict)


class ScheduleRequest(Strict):
    """A workflow and the nodes it may run on."""

    workflow: dict[str, Any] = Field(description="a native workflow (name, tasks) or a WfFormat instance")
    nodes: Annotated[list[NodeState], Field(min_length=1)]
    scheduler: str | None = Field(None, description="registered scheduler name; default from the config (sampling)")
    weights: ObjectiveWeights | None = Field(None, description="objective weights; default from the config")


class Alternative(BaseModel):
    node: str
    score: float = Field(description="the scheduler's score for this node; for HEFT the finish time, lower wins")
    start: float
    finish: float
    chosen: bool


class Rejection(BaseModel):
    node: str
    constraint: str


class AssignmentCalibration(BaseModel):
    """How calibration changed this assignment's runtime (`service.calibration`)."""

    declared_s: float = Field(description="the request's own runtime of the task on this node")
    calibrated_s: float = Field(description="the runtime planned with: declared x task factor x node factor")
    task_factor: float = Field(description="for the task's name on this node's class")
    node_factor: float = Field(description="for this node")


class Evidence(BaseModel):
    score: str = Field(description="what `alternatives[].score` measures")
    alternatives: list[Alternative]
    rejected: list[Rejection]
    terms: dict[str, float]
    calibration: AssignmentCalibration | None = Field(None, description="present when calibration acted")


class Assignment(BaseModel):
    task: str
    node: str
    start: float
    finish: float
    evidence: Evidence


class PlanResponse(BaseModel):
    """A plan: the keys clients rely on first, then what explains it."""

    plan_id: str
    scheduler: str
    fallback: bool
    makespan: float
    cost: float
    assignments: list[Assignment]
    fallback_reason: str | None = None
    requested_scheduler: str
    workflow: str
    model_version: str | None = None
    objective: dict[str, Any]
    rejected_nodes: list[Rejection]
    notes: list[str]
    root_id: str | None = None
    calibration: dict[str, Any] | None = Field(
        None, description="whether calibrated predictions were applied, on how many executed runs, what changed"
    )
    arm: Literal["default", "candidate"] | None = Field(None, description="the canary arm that planned it")
    canary: str | None = Field(None, description="the canary's id, when one ran")


EventKind = Literal["task_started", "task_finished", "task_failed", "task_overran", "node_down", "node_up"]


class EventRequest(Strict):
    """Something that happened to a plan's tasks or nodes; times in seconds from the plan's start."""

    plan_id: Annotated[Identifier, Field(max_length=64)]
    kind: EventKind
    task: Identifier | None = None
    node: Identifier | None = None
    at: NonNegative = Field(description="seconds since the plan started")
    elapsed_s: NonNegative | None = Field(None, description="task_overran: how long the task has run so far")


class EventResponse(BaseModel):
    plan_id: str
    root_id: str
    replanned: bool
    reason: str
    changed: list[dict[str, Any]]
    migrated: list[str]


class ModelInfo(BaseModel):
    loaded: bool
    version: str | None
    sha256: str | None
    loaded_at: float | None
    source: str | None
    previous: str | None
    architecture: dict[str, Any] | None
    error: str | None = None


class PlanSummary(BaseModel):
    plan_id: str
    root_id: str
    workflow: str
    scheduler: str
    fallback: bool
    makespan: float
    cost: float
    model_version: str | None
    environment: str
    created_at: float


class PlanList(BaseModel):
    plans: list[PlanSummary]
    count: int = Field(description="plans in this page")
    total: int = Field(description="plans matching the filters")


class GraphTask(BaseModel):
    id: str
    node: str | None = Field(description="where the plan put it (None: not in this plan, e.g. done before a re-plan)")
    start: float | None
    finish: float | None


class GraphEdge(BaseModel):
    source: str
    target: str
    data: float = Field(description="bytes moved")


class GraphNode(BaseModel):
    id: str
    cpu: float
    speed: float
    price_per_hour: float


class PlanGraph(BaseModel):
    """A plan as a DAG on its nodes: what the dashboard draws."""

    plan_id: str
    workflow: str
    makespan: float
    tasks: list[GraphTask]
    edges: list[GraphEdge]
    nodes: list[GraphNode]


class PolicyAlternative(BaseModel):
    task: str = Field(description="a task ready at the step the chosen one was placed")
    logit: float = Field(description="its learned score")
    probability: float = Field(description="softmax of the scores over the ready tasks (Plackett-Luce, no noise)")
    chosen: bool


class PolicyChoice(BaseModel):
    probability: float = Field(description="the placed task's probability among the tasks ready then")
    margin: float | None = Field(description="its score minus the best other ready one's (None: the only one ready)")
    alternatives: list[PolicyAlternative]


class FeatureAttribution(BaseModel):
    group: Literal["task", "global"] = Field(description="task: the task's own row; global: the cluster summary")
    feature: str
    value: float


class TaskAttribution(BaseModel):
    task: str
    value: float


class Attributions(BaseModel):
    """Integrated Gradients (Captum) of one task's score, summed per feature and per DAG task."""

    method: str
    baseline: str = Field(description="the reference input the attributions are measured from")
    target: str = Field(description="the output attributed")
    steps: int
    output: float = Field(description="the target at the plan's input")
    baseline_output: float = Field(description="the target at the baseline")
    total: float = Field(description="sum of all attributions (completeness: output - baseline_output)")
    delta: float = Field(description="completeness error of the integral")
    by_feature: list[FeatureAttribution]
    by_task: list[TaskAttribution] = Field(description="per DAG task: its row's features, read through the network")


class TaskExplanation(Assignment):
    policy: PolicyChoice | None = Field(description="the learned policy's choice (drl plans only)")


class TaskDetail(TaskExplanation):
    attributions: Attributions | None = Field(description="why its score is what it is (drl plans only)")


class PolicyReplayInfo(BaseModel):
    model_version: str | None = None
    decode: str | None = None
    reproduced: bool | None = Field(
        None, description="the replay made the stored plan (same model, same sampling and seed)"
    )
    decisions: int | None = Field(None, description="tasks the replayed plan placed")
    target: str | None = None
    unavailable: str | None = Field(None, description="why the plan's policy decisions cannot be replayed")


class ExplainResponse(BaseModel):
    """Why a plan is what it is: every task's evidence, the learned policy's alternatives, one task in depth."""

    plan_id: str
    scheduler: str
    workflow: str | None
    model_version: str | None = Field(description="the model that made the plan (drl plans)")
    policy: PolicyReplayInfo | None
    tasks: list[TaskExplanation]
    task: TaskDetail | None = Field(description="the task asked about (?task=): with its attributions")

"""Runtime config: what an operator changes without a restart (`PUT /v1/config`, SIGHUP).

A config is validated as a whole before it replaces the live one (the error names the field); one kept from an older
release loads without the settings this one retired (`RETIRED_KEYS`).

    default_scheduler: sampling     # HEFT's rank sampled: never a longer plan than HEFT's, no network (docs/service.md)
    decision_deadline_ms: 1500      # a learned planner's (drl's) plan slower than this -> HEFT plans instead
    rules:                          # hard constraints, all must hold for a (node, task) pair
      gpu: node.gpu_free >= task.gpu
    breaker: {failures: 5, cooldown_s: 30}
    skew: {threshold: 0.3, decisions: 20}
    shadow: heft
    reward_weights: {makespan: 0.4, cost: 0.3, sla: 0.2, fragmentation: 0.1, load: 0.05, completion: 0.0}
    calibration: {enabled: true, min_runs: 5, shrinkage: 2, half_life_s: 604800}   # learn from executed runs
    canary: {scheduler: peft, fraction: 0.01}   # or {model_version: v7, ...}: staged release (`service.canary`)
    online_ft_interval: 6h                      # fine-tune on the logs every 6 h (off when absent)
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, Field, PrivateAttr, field_validator, model_validator

from dagsched.model.errors import InputError, parse
from dagsched.service.rules import Rule, compile_rules
from dagsched.service.schemas import Strict
from dagsched.sim.objective import ObjectiveWeights

log = logging.getLogger("dagsched.service")


DEFAULT_SCHEDULER = "sampling"
"""HEFT's rank sampled, no network: the learned scores plan no shorter (docs/planner.md, "Where the network stands")."""
LEARNED_SCHEDULER = "drl"
"""The one a model-version canary plans with, and the default once such a canary is promoted: the learned planner."""
FALLBACK_SCHEDULER = "heft"  # Plans when the chosen scheduler is missing, fails or is too slow.
SKEW_SCHEDULER = "round_robin"  # Places tasks while the load-skew monitor is on.


def known_scheduler(name: str | None) -> str | None:
    """`name` when /v1/schedule accepts it (or None); a ValueError listing the known ones otherwise."""
    from dagsched.schedulers import registered_names

    if name is None or name in registered_names():
        return name
    raise ValueError(f"unknown scheduler '{name}'; known: {', '.join(registered_names())}")


SchedulerName = Annotated[str, AfterValidator(known_scheduler)]
"""A config field naming a scheduler: refused, with the known ones, unless it is registered."""


def needs_policy(name: str | None) -> bool:
    """Whether the registered scheduler `name` plans with a learned policy (the service hands it the serving one)."""
    from dagsched.schedulers import scheduler_class

    return name is not None and "policy" in scheduler_class(name).needs


class Breaker(Strict):
    """Circuit breaker around the learned policy."""

    failures: int = Field(5, ge=1, description="consecutive failures (error or deadline) that open it")
    cooldown_s: float = Field(30.0, ge=0, description="seconds it stays open (HEFT serves) before a retry")


class Skew(Strict):
    """Load-skew monitor: std of node utilisation over `threshold` -> next `decisions` go round-robin."""

    threshold: float = Field(0.35, gt=0, le=1, description="std of cpu utilisation over the request's nodes")
    decisions: int = Field(20, ge=0, description="task placements that go round-robin once it trips")


class Calibration(Strict):
    """Calibrated predictions (`service.calibration`): runtime factors learned from executed runs."""

    enabled: bool = Field(True, description="apply the factors to /v1/schedule and /v1/events re-plans")
    min_runs: int = Field(5, ge=1, description="executed workflows seen before any factor acts (the floor)")
    min_observations: int = Field(3, ge=1, description="observations a factor needs, else it is 1")
    shrinkage: float = Field(2.0, ge=0, description="pseudo-observations at factor 1 each factor is shrunk by")
    half_life_s: float = Field(7 * 86400.0, gt=0, description="an observation's weight halves with this age")
    window_s: float = Field(30 * 86400.0, gt=0, description="executed runs older than this are not read")
    max_runs: int = Field(2000, ge=1, le=100_000, description="newest executed runs read at most")
    outlier_bound: float = Field(
        10.0, gt=1, description="actual/declared ratios past this (or its inverse) are left out"
    )
    refresh_s: float = Field(10.0, ge=0, description="factors are re-estimated from the store at most this often")


class Canary(Strict):
    """A staged release: `fraction` of workflows (sticky by a hash of the workflow name) planned by the candidate."""

    id: str | None = Field(None, max_length=64, description="set when the canary starts; names its steps")
    scheduler: SchedulerName | None = Field(None, description="candidate scheduler (registered name)")
    model_version: str | None = Field(None, max_length=128, description="candidate policy version (in the store)")
    fraction: float = Field(0.01, ge=0, le=1, description="share of workflows the candidate plans now")
    stages: list[float] = Field(default_factory=lambda: [0.01, 0.1, 0.5, 1.0], min_length=1)
    min_workflows: int = Field(20, ge=1, description="executed workflows per arm before a stage is judged")
    margin: float = Field(0.02, ge=0, lt=1, description="no worse: candidate/default achieved makespan <= 1 + margin")
    max_errors: int = Field(3, ge=1, description="candidate plans that fail (fall back) before a rollback")

    @field_validator("stages")
    @classmethod
    def _increasing(cls, stages: list[float]) -> list[float]:
        if any(not 0 < f <= 1 for f in stages) or any(b <= a for a, b in zip(stages, stages[1:], strict=False)):
            raise ValueError("stages must increase, each in (0, 1]")
        if stages[-1] != 1.0:
            raise ValueError("the last stage must be 1.0 (the whole traffic)")
        return stages

    @model_validator(mode="after")
    def _one_candidate(self) -> Canary:
        if (self.scheduler is None) == (self.model_version is None):
            raise ValueError("name exactly one candidate: scheduler or model_version")
        return self

    @property
    def candidate(self) -> str:
        return self.scheduler if self.scheduler is not None else f"{LEARNED_SCHEDULER}@{self.model_version}"


class RuntimeConfig(Strict):
    """The live, hot-reloadable config of a service process."""

    default_scheduler: SchedulerName = Field(
        DEFAULT_SCHEDULER, description="scheduler of /v1/schedule when the request names none"
    )
    decision_deadline_ms: float = Field(
        1500.0, gt=0, description="deadline of the learned planner's plan (drl plans a workflow in one decision)"
    )
    rules: dict[str, str] = Field(default_factory=dict, description="node filter rules, name -> expression")
    breaker: Breaker = Field(default_factory=Breaker)
    skew: Skew = Field(default_factory=Skew)
    shadow: SchedulerName | None = Field(None, description="scheduler that also plans every request, for comparison")
    reward_weights: ObjectiveWeights = Field(default_factory=ObjectiveWeights)
    calibration: Calibration = Field(default_factory=Calibration)
    canary: Canary | None = Field(None, description="a candidate released in stages; None: no canary")
    online_ft_interval: float | None = Field(
        None, ge=60, description="seconds (or 30m, 6h, 1d) between online fine-tunes on the logs; None: off"
    )
    online_ft_window: float = Field(86400.0, ge=60, description="seconds of logged plans an online fine-tune reads")

    _compiled: list[Rule] = PrivateAttr(default_factory=list)

    @field_validator("online_ft_interval", "online_ft_window", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, str):
            from dagsched.console import parse_duration

            try:
                return parse_duration(value, "online_ft_interval")
            except InputError as err:
                raise ValueError(err.fault) from None
        return value

    @model_validator(mode="after")
    def _compile_rules(self) -> RuntimeConfig:
        self._compiled = compile_rules(self.rules)
        return self

    @property
    def compiled_rules(self) -> list[Rule]:
        return self._compiled


def config_from_dict(data: Any) -> RuntimeConfig:
    """Validate a whole config; InputError names the field (a bad rule: `rules.<name>`)."""
    if not isinstance(data, dict):
        raise InputError("config", f"expected a mapping of settings, got {type(data).__name__}")
    return parse(RuntimeConfig, data)  # type: ignore[no-any-return]


RETIRED_KEYS = {"temperature": "it applied only to the per-decision policy, which is no longer served"}
"""Settings older releases had, with why: a kept config loads without them (logged); `PUT /v1/config` refuses them."""


def without_retired(data: Any) -> Any:
    """A kept config document less the retired keys (anything but a dict as it is)."""
    return {k: v for k, v in data.items() if k not in RETIRED_KEYS} if isinstance(data, dict) else data


def config_from_stored(data: Any, source: str = "the store") -> RuntimeConfig:
    """A config kept from before (`source`), validated less the retired keys (logged), the document kept."""
    if isinstance(data, dict):
        for key in sorted(k for k in data if k in RETIRED_KEYS):
            log.warning("config from %s: dropped the retired setting %s (%s)", source, key, RETIRED_KEYS[key])
    return config_from_dict(without_retired(data))


def read_config(path: Path) -> RuntimeConfig:
    """A config file (YAML or JSON); errors name the file and the field."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise InputError("config_file", f"cannot read {path}: {err.strerror}") from None
    try:
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise InputError("config_file", f"{path} does not parse: {err}") from None
    try:
        return config_from_stored(data or {}, str(path))
    except InputError as err:
        raise InputError(err.field, f"{err.fault} (in {path})") from None

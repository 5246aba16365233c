"""Runtime config: what an operator changes without a restart (`PUT /v1/config`, SIGHUP).

A config is validated as a whole before it replaces the live one: a rule outside the
expression language, an unknown scheduler or a bad number leaves the old config serving
and the error names the field (`rules.gpu: ...`).

    default_scheduler: drl          # the learned planner: never a longer plan than HEFT's (docs/service.md)
    temperature: 0                  # drl_step policies only: 0 greedy, > 0 sample the softmax at this temperature
    decision_deadline_ms: 1500      # one decision of the learned policy slower than this -> HEFT (drl plans in one)
    rules:                          # hard constraints, all must hold for a (node, task) pair
      gpu: node.gpu_free >= task.gpu
    breaker: {failures: 5, cooldown_s: 30}
    skew: {threshold: 0.3, decisions: 20}
    shadow: heft
    reward_weights: {makespan: 0.4, cost: 0.3, sla: 0.2, fragmentation: 0.1, load: 0.05, completion: 0.0}
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from dagsched.model.errors import InputError, parse
from dagsched.service.rules import Rule, compile_rules
from dagsched.sim.objective import ObjectiveWeights


class Breaker(BaseModel):
    """Circuit breaker around the learned policy."""

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: `true` is not a number, "1" is not one

    failures: int = Field(5, ge=1, description="consecutive failures (error or deadline) that open it")
    cooldown_s: float = Field(30.0, ge=0, description="seconds it stays open (HEFT serves) before a retry")


class Skew(BaseModel):
    """Load-skew monitor: std of node utilisation over `threshold` -> next `decisions` go round-robin."""

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: `true` is not a number, "1" is not one

    threshold: float = Field(0.35, gt=0, le=1, description="std of cpu utilisation over the request's nodes")
    decisions: int = Field(20, ge=0, description="task placements that go round-robin once it trips")


class RuntimeConfig(BaseModel):
    """The live, hot-reloadable config of a service process."""

    model_config = ConfigDict(extra="forbid", strict=True)  # strict: `true` is not a number, "1" is not one

    default_scheduler: str = Field("drl", description="scheduler of /v1/schedule when the request names none")
    temperature: float = Field(
        0.0, ge=0, le=10, description="per-decision policies: 0 = greedy; else softmax temperature of the policy"
    )
    decision_deadline_ms: float = Field(
        1500.0, gt=0, description="per-decision deadline of the learned policy (drl makes its whole plan in one)"
    )
    rules: dict[str, str] = Field(default_factory=dict, description="node filter rules, name -> expression")
    breaker: Breaker = Field(default_factory=Breaker)
    skew: Skew = Field(default_factory=Skew)
    shadow: str | None = Field(None, description="scheduler that also plans every request, for comparison")
    reward_weights: ObjectiveWeights = Field(default_factory=ObjectiveWeights)

    _compiled: list[Rule] = PrivateAttr(default_factory=list)

    @field_validator("default_scheduler", "shadow")
    @classmethod
    def _known_scheduler(cls, name: str | None) -> str | None:
        from dagsched.schedulers import registered_names

        if name is None or name in registered_names() or name == "drl":
            return name  # "drl" may be missing in this build: the HEFT fallback covers it
        raise ValueError(f"unknown scheduler '{name}'; known: {', '.join(registered_names())}")

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
        return config_from_dict(data or {})
    except InputError as err:
        raise InputError(err.field, f"{err.fault} (in {path})") from None

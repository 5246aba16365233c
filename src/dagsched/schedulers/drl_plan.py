"""HEFT's rollout guided by the learned node rule: look ahead only where the rule expects HEFT to be wrong.

`heft_lookahead` completes the plan with HEFT from each of a task's few earliest-finish nodes, for every
task: it never ends above HEFT's plan and ends 3-4 % below it on held-out workflows, at k * v/2 times
HEFT's cost. The node rule (`dagsched.policy.node_rule`, an MLP over what the planner knows) was
trained on that teacher's labels to say which candidate is best. On its own its choices tie HEFT's
(docs/policy.md), but it knows where HEFT's node is likely not the best: here each task takes HEFT's
node unless the rule gives the other candidates at least `risk` of its belief, and then only the
candidates it believes in (`min_share` each, HEFT's always) are completed and compared. The plan keeps
the rollout's guarantee (never above HEFT's planned makespan) at a fraction of its completions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.policy.node_rule import SHIPPED_NODE_RULE, NodeRule, PlanContext
from dagsched.schedulers.base import register
from dagsched.schedulers.heft_lookahead import Choice, HEFTLookahead

RISK = 0.05
"""the gate's default doubt: complete a choice when the rule gives the non-HEFT nodes this much belief"""
MIN_SHARE = 0.05
"""... and only from the candidates it gives at least this much"""


def gate_settings(rule: NodeRule) -> tuple[float, float]:
    """The (risk, min_share) a rule was trained with (its JSON records them), else the defaults."""
    return float(rule.meta.get("risk", RISK)), float(rule.meta.get("min_share", MIN_SHARE))


@register
class DRLPlan(HEFTLookahead):
    name = "drl_plan"
    uses_seed = False

    def __init__(self, rule: NodeRule | None = None, rule_path: str | Path | None = None) -> None:
        self.rule = rule if rule is not None else NodeRule.load(rule_path or SHIPPED_NODE_RULE)
        self.candidates = self.rule.candidates
        self.risk, self.min_share = gate_settings(self.rule)

    def prepare(self, cp: CompiledProblem) -> None:
        super().prepare(cp)
        self.context = PlanContext(cp)

    def worth_looking(self, t: int, nodes: np.ndarray, choice: Choice) -> np.ndarray:
        return np.asarray(nodes[self.gate(self.context.features(t, nodes, choice))])

    def gate(self, x: np.ndarray) -> np.ndarray:
        """Which candidates (rows of their features `x`) to complete: HEFT's alone unless the rule doubts it."""
        p = self.rule.probabilities(x)
        keep = p >= self.min_share if 1.0 - p[0] >= self.risk else np.zeros(len(p), dtype=bool)
        keep[0] = True
        return keep

"""Node filter rules: a tiny, safe expression language over `node` and `task`.

A rule (`node.gpu_free >= task.gpu`) is parsed once, when the config is loaded, and every syntax node is checked
against the grammar below, naming the rule when it is outside; evaluation walks the checked tree (never `eval`).
A missing label reads as ""; a runtime fault (division by zero) makes the rule false for that pair.

    expr   := expr ("and" | "or") expr | "not" expr
            | expr cmp expr [cmp expr ...]          cmp: == != < <= > >= in "not in"
            | expr ("+" | "-" | "*" | "/" | "%") expr | "-" expr
            | ("node" | "task") "." attr            attr from NODE_ATTRS / TASK_ATTRS
            | ("node" | "task") ".labels[" string "]"
            | number | string | true | false | True | False | None
            | "(" expr ")"
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dagsched.model.errors import InputError

NODE_ATTRS = frozenset(
    {"id", "cpu", "mem", "gpu", "cpu_free", "mem_free", "gpu_free", "speed", "price_per_hour", "labels"}
)
TASK_ATTRS = frozenset({"id", "runtime", "cpu", "mem", "gpu", "priority", "critical", "labels"})
ATTRS = {"node": NODE_ATTRS, "task": TASK_ATTRS}
MAX_RULE_CHARS = 500

MAX_SEQUENCE = 10_000
"""Longest string or tuple a rule may build by repetition (`"x" * 99999 * 99999` would build 10 GB)."""


def _mul(a: Any, b: Any) -> Any:
    """`a * b`, refusing repetitions of a string or tuple past MAX_SEQUENCE items."""
    for seq, n in ((a, b), (b, a)):
        if isinstance(seq, str | tuple) and isinstance(n, int) and len(seq) * max(n, 0) > MAX_SEQUENCE:
            raise ValueError(f"a repetition longer than {MAX_SEQUENCE}")
    return operator.mul(a, b)


def _mod(a: Any, b: Any) -> Any:
    """`a % b` on numbers only: on a string it is formatting (`"%999999999d" % 1` builds a gigabyte)."""
    if isinstance(a, str):
        raise ValueError("string formatting")
    return operator.mod(a, b)


_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: _mul,
    ast.Div: operator.truediv,
    ast.Mod: _mod,
}
_CMPOPS: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}

_PLAIN: tuple[type[ast.AST], ...] = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd)
_PLAIN += (ast.UnaryOp, ast.Compare, ast.Load, ast.Tuple, ast.List)  # a tuple: `task.labels["t"] in ("a", "b")`
"""Syntax nodes the grammar allows with nothing more to check."""
_REFUSED: dict[type[ast.AST], str] = {ast.Call: "function calls", ast.Lambda: "lambda"}


class RuleError(InputError):
    """A rule outside the grammar; `field` names the rule."""


def _refuse(field: str, expr: str, what: str) -> RuleError:
    return RuleError(field, f"rule {expr!r} is not allowed: {what}")


def _check(tree: ast.AST, field: str, expr: str) -> None:
    """Raise RuleError at the first syntax node outside the grammar."""
    for node in ast.walk(tree):
        if isinstance(node, _PLAIN) or type(node) in _BINOPS or type(node) in _CMPOPS:
            continue
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                raise _refuse(field, expr, f"operator {type(node.op).__name__} (allowed: + - * / %)")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | str | bool | type(None)):
                raise _refuse(field, expr, f"constant {node.value!r}")
        elif isinstance(node, ast.Name):
            if node.id not in ATTRS and node.id not in ("true", "false"):
                raise _refuse(field, expr, f"unknown name '{node.id}' (only node and task)")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise _refuse(field, expr, f"private or dunder attribute '{node.attr}'")
            if not isinstance(node.value, ast.Name) or node.value.id not in ATTRS:
                raise _refuse(field, expr, f"attribute '{node.attr}' on something other than node or task")
            if node.attr not in ATTRS[node.value.id]:
                known = ", ".join(sorted(ATTRS[node.value.id]))
                raise _refuse(field, expr, f"unknown attribute {node.value.id}.{node.attr} (known: {known})")
        elif isinstance(node, ast.Subscript):
            base = node.value
            ok_base = isinstance(base, ast.Attribute) and base.attr == "labels"
            ok_key = isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)
            if not (ok_base and ok_key):
                raise _refuse(field, expr, 'subscripts other than node.labels["key"] / task.labels["key"]')
        else:
            raise _refuse(field, expr, _REFUSED.get(type(node), f"{type(node).__name__} expressions"))


def _eval(node: ast.AST, env: Mapping[str, Mapping[str, Any]]) -> Any:
    """Evaluate a checked tree (only the node types `_check` lets through reach here)."""
    if isinstance(node, ast.Expression):
        return _eval(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("true", "false"):
            return node.id == "true"
        return env[node.id]
    if isinstance(node, ast.Attribute):
        return env[node.value.id][node.attr]  # type: ignore[attr-defined]
    if isinstance(node, ast.Subscript):
        labels = _eval(node.value, env)
        return labels.get(node.slice.value, "")  # type: ignore[attr-defined]
    if isinstance(node, ast.BoolOp):
        return (all if isinstance(node.op, ast.And) else any)(_eval(v, env) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        value = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BinOp):
        return _BINOPS[type(node.op)](_eval(node.left, env), _eval(node.right, env))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        for op, comp in zip(node.ops, node.comparators, strict=True):
            right = _eval(comp, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Tuple | ast.List):
        return tuple(_eval(e, env) for e in node.elts)
    raise AssertionError(f"unchecked node {type(node).__name__}")  # pragma: no cover


@dataclass(frozen=True)
class Rule:
    """A named, parsed and checked filter rule."""

    name: str
    expr: str
    tree: ast.Expression

    def __call__(self, node: Mapping[str, Any], task: Mapping[str, Any]) -> bool:
        """True when the pair passes; a runtime fault (type mismatch, division by zero) fails it."""
        try:
            return bool(_eval(self.tree, {"node": node, "task": task}))
        except (TypeError, ZeroDivisionError, KeyError, ValueError, OverflowError):
            return False


def compile_rule(name: str, expr: str) -> Rule:
    """Parse and check one rule; RuleError names it (`rules.<name>`) when it is outside the grammar."""
    field = f"rules.{name}"
    if not isinstance(expr, str) or not expr.strip():
        raise RuleError(field, "a rule must be a non-empty expression string")
    if len(expr) > MAX_RULE_CHARS:
        raise RuleError(field, f"rule is {len(expr)} characters long; the limit is {MAX_RULE_CHARS}")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as err:
        raise RuleError(field, f"rule {expr!r} does not parse: {err.msg} at column {err.offset}") from None
    _check(tree, field, expr)
    return Rule(name, expr, tree)


def compile_rules(rules: Mapping[str, str]) -> list[Rule]:
    """Every rule of a config, in order; the first bad one stops the load with its name."""
    return [compile_rule(name, expr) for name, expr in rules.items()]


def failing_rule(rules: list[Rule], node: Mapping[str, Any], task: Mapping[str, Any]) -> Rule | None:
    """The first rule the (node, task) pair breaks, or None when it passes all of them."""
    return next((rule for rule in rules if not rule(node, task)), None)

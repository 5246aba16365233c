"""A command line generated from a config dataclass: one option per field, its help the field's docstring.

A run's settings are written once, as a frozen dataclass with a one-line docstring under every field (CleanRL's
habit); `command_from_config` makes the command line from it, so a new setting is one new field, never a flag
written again beside it. Field `max_problems` is option `--max-problems`; int, float and str fields take their
value; a bool is a `--x/--no-x` flag; a `Literal[...]` takes one of its values; `str | None` takes a value or
stays unset; a tuple of int, float or str (`tuple[float, float]`, `tuple[str, ...]`) takes its items separated
by commas (`--load-range 0.5,0.95`). The dataclass's own checks run on the config it builds.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Callable
from enum import Enum
from typing import Any

import typer


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (read from its source), by field name."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for stmt, after in zip(body, [*body[1:], None], strict=True):
        named = isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
        text = after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) else None
        if named and isinstance(text, str):
            docs[stmt.target.id] = " ".join(text.split())  # type: ignore[union-attr]
    return docs


def _option(name: str, kind: Any, default: Any, help_text: str) -> tuple[Any, Any, Callable[[Any], Any]]:
    """(annotation, typer option, converter to the field's value) of one field."""
    flag = "--" + name.replace("_", "-")
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is bool:
        return bool, typer.Option(default, f"{flag}/--no-{flag[2:]}", help=help_text), bool
    if kind in (int, float, str):
        return kind, typer.Option(default, flag, help=help_text), kind
    if origin is typing.Literal:
        choices = Enum(name, {str(a): str(a) for a in args})  # type: ignore[misc]
        return choices, typer.Option(choices(str(default)), flag, help=help_text), lambda c: str(c.value)
    if origin in (types.UnionType, typing.Union) and args == (str, type(None)):
        return str | None, typer.Option(default, flag, help=help_text), lambda v: v
    if origin is tuple and args and {a for a in args if a is not Ellipsis} <= {int, float, str}:
        return str, typer.Option(",".join(map(str, default)), flag, help=help_text), _tuple_of(name, args)
    raise TypeError(f"field {name}: type {kind!r} has no command-line form")


def _tuple_of(name: str, args: tuple[Any, ...]) -> Callable[[str], tuple[Any, ...]]:
    """The converter of a comma-separated option to a tuple field: `tuple[X, ...]` any length, else exactly
    as many items as the annotation lists."""
    repeated = len(args) == 2 and args[1] is Ellipsis

    def parse(text: str) -> tuple[Any, ...]:
        items = [v.strip() for v in text.split(",") if v.strip()]
        kinds = [args[0]] * len(items) if repeated else list(args)
        if len(kinds) != len(items) or (repeated and not items):
            want = "one or more" if repeated else str(len(args))
            raise typer.BadParameter(f"{name} takes {want} comma-separated values, got {text!r}")
        try:
            return tuple(kind(v) for kind, v in zip(kinds, items, strict=True))
        except ValueError as err:
            raise typer.BadParameter(f"{name}: {err}") from err

    return parse


def command_from_config(cls: type, run: Callable[[Any], None]) -> Callable[..., None]:
    """A Typer command whose options are `cls`'s fields (each needs a default); it calls `run(cls(**options))`."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    params, converters = [], {}
    for f in dataclasses.fields(cls):
        if f.default is dataclasses.MISSING:
            raise TypeError(f"field {f.name} needs a default to be an option")
        annotation, option, convert = _option(f.name, hints[f.name], f.default, docs.get(f.name, ""))
        converters[f.name] = convert
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))

    def command(**options: Any) -> None:
        run(cls(**{k: converters[k](v) for k, v in options.items()}))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = cls.__doc__
    command.__name__ = cls.__name__
    return command

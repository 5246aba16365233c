"""A Typer command generated from a config dataclass: one option per field, its help the field's docstring.

A run's settings are written once, as a frozen dataclass with a one-line docstring under every field (CleanRL's
habit); `command_from` makes the command line from it, so a new setting is one new field, never a flag written
again beside it. `--since-s` is field `since_s`; a bool is a flag; `Path | None` and `str | None` take a value or
stay unset; a field's `choices` metadata makes the option refuse other values.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

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


def _option_type(annotation: Any) -> Any:
    """The type Typer parses for a field annotated `annotation` (Optional unwrapped to `T | None`)."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] | None if len(args) == 1 else annotation
    return annotation


def command_from(cls: type, run: Callable[[Any], None], doc: str | None = None) -> Callable[..., None]:
    """A Typer command whose options are `cls`'s fields; it builds `cls(**options)` and calls `run` with it."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    params = []
    for f in dataclasses.fields(cls):
        kind = _option_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        help_text = docs.get(f.name, "")
        choices = f.metadata.get("choices")
        if choices:
            help_text += f" ({' or '.join(choices)})"
        option = typer.Option(flag, help=help_text, show_default=True)
        default = f.default if f.default is not dataclasses.MISSING else ...
        if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        params.append(
            inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, option]
            )
        )

    def command(**options: Any) -> None:
        for f in dataclasses.fields(cls):
            choices = f.metadata.get("choices")
            if choices and options[f.name] not in choices:
                from dagsched.console import fail
                from dagsched.model.errors import InputError

                flag = "--" + f.name.replace("_", "-")
                raise fail(InputError(flag, f"expected one of {', '.join(choices)}, got {options[f.name]!r}"))
        run(cls(**options))

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = doc or cls.__doc__
    command.__name__ = cls.__name__
    return command

"""A trainer's command line, generated from its one config dataclass: the defaults are written once, in it.

Each field becomes an option `--field-name` with the field's default, its type, and the attribute docstring
under the field as its help (read from the class's source, as tyro does). Supported field types: int, float,
str, bool (a `--x/--no-x` flag), `Literal[...]` (its choices), optional scalars (`int | None`, ...; "none"
on the command line), and tuples of scalars written comma-separated (`--sizes 10,50`). The config built from
the options goes through the dataclass's own validation (`__post_init__`).
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
from typing import Any, get_args, get_origin

import typer


def field_docs(cls: type) -> dict[str, str]:
    """The attribute docstring under each field of a dataclass (the string literal right after it)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError):  # pragma: no cover  (no source: a class built at run time)
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for a, b in zip(body, body[1:], strict=False):
        if (
            isinstance(a, ast.AnnAssign)
            and isinstance(a.target, ast.Name)
            and isinstance(b, ast.Expr)
            and isinstance(b.value, ast.Constant)
            and isinstance(b.value.value, str)
        ):
            docs[a.target.id] = " ".join(b.value.value.split())
    return docs


def _scalar(kind: Any, text: str) -> Any:
    if kind is bool:
        if text.lower() in ("1", "true", "yes"):
            return True
        if text.lower() in ("0", "false", "no"):
            return False
        raise typer.BadParameter(f"not a boolean: {text!r}")
    try:
        return kind(text)
    except ValueError:
        raise typer.BadParameter(f"not a {kind.__name__}: {text!r}") from None


def _option(name: str, kind: Any, default: Any, help_text: str) -> tuple[Any, Any, Callable[[Any], Any]]:
    """(annotation, typer option, converter from the parsed value to the field's value) of one field."""
    flag = "--" + name.replace("_", "-")
    origin, args = get_origin(kind), get_args(kind)
    if kind is bool:
        return bool, typer.Option(default, f"{flag}/--no-{flag[2:]}", help=help_text), bool
    if kind in (int, float, str):
        return kind, typer.Option(default, flag, help=help_text), kind
    if origin is typing.Literal:
        choices = Enum(name, {str(a): str(a) for a in args})  # type: ignore[misc]
        value_of = {str(a): a for a in args}
        return choices, typer.Option(choices(str(default)), flag, help=help_text), lambda c: value_of[c.value]
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        text = "none" if default is None else str(default)

        def optional(value: str, inner: Any = inner) -> Any:
            return None if value.lower() == "none" else _scalar(inner, value)

        return str, typer.Option(text, flag, help=f"{help_text} ('none' for none)"), optional
    if origin is tuple:
        items = [a for a in args if a is not Ellipsis]
        text = ",".join(str(v) for v in default)

        def split(value: str, items: list[Any] = items, fixed: bool = Ellipsis not in args) -> Any:
            parts = [p.strip() for p in value.split(",") if p.strip()]
            if fixed and len(parts) != len(items):
                raise typer.BadParameter(f"{flag}: {len(items)} comma-separated values, got {value!r}")
            return tuple(_scalar(items[i] if fixed else items[0], p) for i, p in enumerate(parts))

        return str, typer.Option(text, flag, help=f"{help_text} (comma-separated)"), split
    raise TypeError(f"field {name}: type {kind!r} has no command-line form")


def command_from_config(config_cls: type, run: Callable[[Any], None]) -> Callable[..., None]:
    """A function Typer can register whose options are `config_cls`'s fields; it calls `run(config)`."""
    hints = typing.get_type_hints(config_cls)
    docs = field_docs(config_cls)
    params, converters = [], {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"field {f.name} needs a default to be an option")
        annotation, option, convert = _option(f.name, hints[f.name], default, docs.get(f.name, ""))
        converters[f.name] = convert
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))

    def command(**options: Any) -> None:
        values = {k: converters[k](v) for k, v in options.items()}
        try:
            config = config_cls(**values)
        except (TypeError, ValueError) as err:
            raise typer.BadParameter(str(err)) from None
        run(config)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__doc__ = config_cls.__doc__
    command.__name__ = config_cls.__name__
    return command


def command_line(config: Any) -> str:
    """The options that rebuild `config` from the command line (only those off their defaults)."""
    out = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        if value == default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            out.append(flag if value else f"--no-{flag[2:]}")
        elif isinstance(value, tuple):
            out.append(f"{flag} {','.join(str(v) for v in value)}")
        else:
            out.append(f"{flag} {'none' if value is None else value}")
    return " ".join(out)

"""A trainer's command line, generated from its one config dataclass: the defaults are written once, in it.

Each field becomes an option `--field-name` (or `--FLAG` where the field's metadata names one: `field(...,
metadata={"flag": "ccr"})`) with the field's default, its type, and the attribute docstring under the field as
its help (read from the class's source, as tyro does). Supported field types: int, float, str, bool (a
`--x/--no-x` flag), `Literal[...]` (its choices), tuples of scalars written comma-separated (`--sizes 10,50`; a
pair of numbers also as a range, `--ccr 0.1-10`), tuples of pairs written as comma-separated ranges (`--stages
10-30,40-100`; an item `20` is 20-20), dictionaries of numbers (`--weights makespan=1,cost=0`), and any of these
optional (`... | None`; "none" on the command line). The config built from the options goes through the
dataclass's own validation (`__post_init__`); a value that does not parse, or that it refuses, exits with status
2 and a message naming the option.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
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


def _parts(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]


RANGE = re.compile(r"\s*([^,\s-][^,-]*?)\s*-\s*([^,\s-][^,]*?)\s*")
"""LO-HI of two numbers that are not negative (a pair written as a range)."""


def _fixed(items: tuple[Any, ...], text: str, one_is_both: bool = False) -> tuple[Any, ...]:
    """A fixed tuple written comma-separated, or a pair as LO-HI (and N as N-N if `one_is_both`)."""
    parts = _parts(text)
    if len(items) == 2 and len(parts) == 1:
        m = RANGE.fullmatch(parts[0])
        parts = [m.group(1), m.group(2)] if m else parts * 2 if one_is_both else parts
    if len(parts) != len(items):
        raise typer.BadParameter(f"{len(items)} comma-separated values, got {text!r}")
    return tuple(_scalar(kind, p) for kind, p in zip(items, parts, strict=True))


def _parser(kind: Any) -> Callable[[str], Any]:
    """The command-line text of a field of type `kind` -> the field's value (TypeError: no command-line form)."""
    origin, args = get_origin(kind), get_args(kind)
    if kind in (int, float, str, bool):
        return lambda text: _scalar(kind, text)
    if origin in (types.UnionType, typing.Union) and type(None) in args:
        (inner,) = [a for a in args if a is not type(None)]
        parse = _parser(inner)
        return lambda text: None if text.strip().lower() == "none" else parse(text)
    if origin is tuple and Ellipsis not in args:
        return lambda text: _fixed(args, text)
    if origin is tuple:
        (item,) = [a for a in args if a is not Ellipsis]
        if get_origin(item) is tuple:
            return lambda text: tuple(_fixed(get_args(item), p, one_is_both=True) for p in _parts(text))
        return lambda text: tuple(_scalar(item, p) for p in _parts(text))
    if origin is dict and args[0] is str and args[1] in (int, float):

        def mapping(text: str) -> dict[str, Any]:
            out = {}
            for part in _parts(text):
                name, sep, value = part.partition("=")
                if not sep or not name.strip():
                    raise typer.BadParameter(f"{part!r} is not NAME=NUMBER")
                out[name.strip()] = _scalar(args[1], value.strip())
            return out

        return mapping
    raise TypeError(f"type {kind!r} has no command-line form")


def _text(value: Any) -> str:
    """A value as the command line writes it (the inverse of `_parser`)."""
    if value is None:
        return "none"
    if isinstance(value, dict):
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, tuple):
        return ",".join("-".join(str(x) for x in v) if isinstance(v, tuple) else str(v) for v in value)
    return str(value)


def flag_of(f: dataclasses.Field[Any]) -> str:
    """The option of a config field: its metadata's `flag`, else the field's name, with dashes."""
    return "--" + str(f.metadata.get("flag", f.name)).replace("_", "-")


def _option(flag: str, kind: Any, default: Any, help_text: str) -> tuple[Any, Any, Callable[[Any], Any]]:
    """(annotation, typer option, converter from the parsed value to the field's value) of one field."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is bool:
        return bool, typer.Option(default, f"{flag}/--no-{flag[2:]}", help=help_text), bool
    if kind in (int, float, str):
        return kind, typer.Option(default, flag, help=help_text), kind
    if origin is typing.Literal:
        choices = Enum(flag.strip("-"), {str(a): str(a) for a in args})  # type: ignore[misc]
        value_of = {str(a): a for a in args}
        return choices, typer.Option(choices(str(default)), flag, help=help_text), lambda c: value_of[c.value]
    parse = _parser(kind)
    if origin in (types.UnionType, typing.Union):
        help_text += " ('none' for none)"
    elif origin is not dict:
        help_text += " (comma-separated)"
    return str, typer.Option(_text(default), flag, help=help_text), parse


def command_from_config(config_cls: type, run: Callable[[Any], None]) -> Callable[..., None]:
    """A function Typer can register whose options are `config_cls`'s fields; it calls `run(config)`."""
    hints = typing.get_type_hints(config_cls)
    docs = field_docs(config_cls)
    params, converters, flags = [], {}, {}
    for f in dataclasses.fields(config_cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"field {f.name} needs a default to be an option")
        flags[f.name] = flag_of(f)
        try:
            annotation, option, convert = _option(flags[f.name], hints[f.name], default, docs.get(f.name, ""))
        except TypeError as err:
            raise TypeError(f"field {f.name}: {err}") from None
        converters[f.name] = convert
        params.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation))

    def command(**options: Any) -> None:
        values = {}
        for k, v in options.items():
            try:
                values[k] = converters[k](v)
            except typer.BadParameter as err:
                raise typer.BadParameter(f"{flags[k]}: {err.message}") from None
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
        flag = flag_of(f)
        if isinstance(value, bool):
            out.append(flag if value else f"--no-{flag[2:]}")
        else:
            out.append(f"{flag} {_text(value)}")
    return " ".join(out)

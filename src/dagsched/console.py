"""Terminal output shared by every `dagsched` command, and the one way bad input ends one."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import typer
from rich.console import Console

from dagsched.model.errors import InputError

# piped or under `make`, Rich assumes 80 columns and wraps tables; give them room instead
console = Console() if Console().is_terminal else Console(width=160)
err_console = Console(stderr=True) if Console(stderr=True).is_terminal else Console(stderr=True, width=160)


def comma_list(text: str | None) -> list[str]:
    """A comma-separated option ('heft, drl,,fifo') as its non-empty, stripped items."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def number(value: float) -> str:
    """A number as every table of the CLI prints it: four significant digits (all the digits of the integer part),
    thousands separated, never an exponent: 21,841, 1,300, 0.4778, 1."""
    if not math.isfinite(value) or value == 0:
        return "0" if value == 0 else str(value)
    digits = min(max(0, 3 - math.floor(math.log10(abs(value)))), 12)
    text = f"{value:,.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def workflows_label(paths: Sequence[Path]) -> str:
    """A run's workflow files in a title: the file's name for one, their count for several."""
    return paths[0].name if len(paths) == 1 else f"{len(paths)} workflows"


def fail(err: Exception) -> typer.Exit:
    """Print the error (it names the field and the fault) and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {err}")
    return typer.Exit(2)


_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


MAX_DURATION_S = 3650 * 86400.0
"""The longest duration taken (ten years): a window reaching before 1970 reads nothing the store can hold."""


def parse_duration(text: str, flag: str = "--since") -> float:
    """'30m', '24h', '7d' (also s and w) -> seconds, at most ten years; anything else is an InputError naming the
    flag."""
    m = _DURATION.match(text or "")
    if m is None or float(m.group(1)) <= 0:
        raise InputError(flag, f"expected a positive duration like 30m, 24h or 7d (units s, m, h, d, w), got {text!r}")
    seconds = float(m.group(1)) * _UNITS_S[m.group(2)]
    if seconds > MAX_DURATION_S:
        raise InputError(flag, f"at most {MAX_DURATION_S / 86400:.0f}d (ten years), got {text!r}")
    return seconds

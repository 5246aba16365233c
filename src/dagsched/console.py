"""Terminal output shared by every `dagsched` command, and the one way bad input ends one."""

from __future__ import annotations

import typer
from rich.console import Console

# piped or under `make`, Rich assumes 80 columns and wraps tables; give them room instead
console = Console() if Console().is_terminal else Console(width=160)
err_console = Console(stderr=True) if Console(stderr=True).is_terminal else Console(stderr=True, width=160)


def comma_list(text: str | None) -> list[str]:
    """A comma-separated option ('heft, drl,,fifo') as its non-empty, stripped items."""
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def fail(err: Exception) -> typer.Exit:
    """Print the error (it names the field and the fault) and exit with status 2."""
    err_console.print(f"[bold red]error:[/] {err}")
    return typer.Exit(2)

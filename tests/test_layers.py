"""The import graph points one way: every module of dagsched imports only its own layer and those below.

Parsed from the source (imports inside functions count; those under `if TYPE_CHECKING:` do not, they are
annotations only). A new arrow upwards fails here with the module, the line and the two layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import dagsched

PACKAGE = Path(dagsched.__file__).parent

LAYERS: list[tuple[str, ...]] = [
    ("model", "console"),
    ("io",),
    ("generate",),
    ("sim",),
    ("policy",),
    ("schedulers",),
    ("explain",),
    ("bench",),
    ("rl",),
    ("service",),
    ("ui", "cli", "__main__", "__init__"),
]
"""Bottom to top: the vocabulary, readers, generators, the one simulator, the policy network, schedulers,
explanations, the benchmark, training, the HTTP service, the command line."""

RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _part(module: str) -> str:
    """The top-level part of a dagsched module name: dagsched.sim.engine -> sim."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, module: str) -> list[tuple[int, str]]:
    """(line, imported dagsched module) for every import outside `if TYPE_CHECKING:` blocks."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names if a.name.startswith("dagsched"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = module.split(".")[: -node.level]
                base = ".".join([*pkg, base] if base else pkg)
            if base.startswith("dagsched"):
                found.append((node.lineno, base))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out.append((".".join(parts), path))
    return out


def test_every_top_level_part_has_a_layer() -> None:
    parts = {_part(m) for m, _ in _modules()}
    assert parts <= set(RANK), f"give these a layer in LAYERS: {sorted(parts - set(RANK))}"


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module, path in _modules():
        here = _part(module)
        for line, target in _imports(ast.parse(path.read_text()), module):
            there = _part(target)
            if there == "__init__" or target == "dagsched":
                continue
            if RANK[there] > RANK[here]:
                upward.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({here}) imports {target} ({there})")
    assert not upward, "imports up the layers:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import() -> None:
    """The parser finds function-level imports and skips TYPE_CHECKING ones (so the check above can fail)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from dagsched.service.app import App\n"
        "def f():\n    from dagsched.rl.env import SchedulingEnv\n"
        "from . import engine\n"
    )
    found = _imports(ast.parse(source), "dagsched.sim.run")
    assert found == [(5, "dagsched.rl.env"), (6, "dagsched.sim")]

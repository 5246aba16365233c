"""The import graph points one way: every module of dagsched imports only its own layer and those below, and
within the simulator (`dagsched.sim`) every module imports only modules of the layers below its own.

Parsed from the source (imports inside functions count; those under `if TYPE_CHECKING:` do not count between
the package's parts, being annotations only, but do count within the simulator, where a cycle of annotations is
still two modules that cannot be read apart). A new arrow upwards fails here with the module, the line and the
two layers.
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
    ("live",),
    ("service",),
    ("ui", "traffic", "cli", "__main__", "__init__"),
]
"""Bottom to top: the vocabulary, readers, generators, the one simulator, the policy network, schedulers,
explanations, the benchmark, training, real runs on Ray, the HTTP service; the dashboard, the clients that drive the
service from outside (`traffic`) and the command line."""

RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _part(module: str) -> str:
    """The top-level part of a dagsched module name: dagsched.sim.engine -> sim."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.Module, module: str, annotations: bool = False) -> list[tuple[int, str]]:
    """(line, imported dagsched module) for every import outside `if TYPE_CHECKING:` blocks (and inside them too
    with `annotations`). `from dagsched.sim import kernels` imports dagsched.sim; `_modules_imported` resolves
    the names."""
    return [(line, base) for line, base, _ in _import_froms(tree, module, annotations)]


def _import_froms(tree: ast.Module, module: str, annotations: bool) -> list[tuple[int, str, list[str]]]:
    """(line, imported dagsched module, names imported from it) for every import, as `_imports`."""
    found: list[tuple[int, str, list[str]]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not annotations:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name, []) for a in node.names if a.name.startswith("dagsched"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                pkg = module.split(".")[: -node.level]
                base = ".".join([*pkg, base] if base else pkg)
            if base.startswith("dagsched"):
                found.append((node.lineno, base, [a.name for a in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _modules_imported(tree: ast.Module, module: str, known: set[str]) -> list[tuple[int, str]]:
    """(line, dagsched module) of every import, annotations' included, a name imported from a package resolved
    to its module where it is one (`from dagsched.sim import kernels` imports dagsched.sim.kernels)."""
    out: list[tuple[int, str]] = []
    for line, base, names in _import_froms(tree, module, annotations=True):
        subs = [f"{base}.{name}" for name in names if f"{base}.{name}" in known]
        out.extend((line, target) for target in subs or [base])
    return out


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


SIM_LAYERS: list[tuple[str, ...]] = [
    ("config", "kernels", "network", "slots", "trace", "simgrid_replay"),
    ("disruptions", "metrics", "validate", "slot_kernels"),
    ("state", "listsched"),
    ("decision",),
    ("engine",),
    ("run", "crosscheck", "objective", "export"),
]
"""The simulator's modules, bottom to top: settings, compiled kernels, the contended network, planning timelines
and the trace (and SimGrid's replay, which imports nothing of dagsched); the hidden randomness, metrics, the
validator and the compiled timelines; the state and its queries, and the compiled list scheduler; the decision
point and the scheduler interface; the engine (heap and handlers); what drives or reads whole runs."""

SIM_RANK = {f"dagsched.sim.{name}": i for i, names in enumerate(SIM_LAYERS) for name in names}


def _sim_upward(module: str, source: str) -> list[str]:
    """The imports of sim module `module` that do not point to a layer below its own."""
    here = SIM_RANK[module]
    found = []
    for line, target in _modules_imported(ast.parse(source), module, set(SIM_RANK)):
        there = SIM_RANK.get(target, len(SIM_LAYERS))  # the package itself: above everything
        if target.startswith("dagsched.sim") and there >= here:
            found.append(f"{module}:{line} (layer {here}) imports {target} (layer {there})")
    return found


def test_every_sim_module_has_a_layer() -> None:
    sim = {m for m, _ in _modules() if m.startswith("dagsched.sim.")}
    assert sim == set(SIM_RANK), f"give these a layer in SIM_LAYERS: {sorted(sim - set(SIM_RANK))}"


def test_sim_modules_import_only_the_layers_below() -> None:
    """No cycle inside the simulator: the state and its queries know nothing of decision points, the decision
    point nothing of the engine, annotations included."""
    upward = [
        line
        for module, path in _modules()
        if module.startswith("dagsched.sim.")
        for line in _sim_upward(module, path.read_text())
    ]
    assert not upward, "imports up the simulator's layers:\n" + "\n".join(upward)


def test_the_sim_check_sees_a_cycle_of_annotations() -> None:
    """An engine import under TYPE_CHECKING in the decision module, and a module imported by name from the
    package, count (so the check above can fail)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from dagsched.sim import state, engine\n"
        "if TYPE_CHECKING:\n    from dagsched.sim.engine import Simulator\n"
    )
    assert _sim_upward("dagsched.sim.decision", source) == [
        "dagsched.sim.decision:2 (layer 3) imports dagsched.sim.engine (layer 4)",
        "dagsched.sim.decision:4 (layer 3) imports dagsched.sim.engine (layer 4)",
    ]


SERVICE_TRANSPORTS = ("dagsched.service.routes", "dagsched.service.rpc")
"""The service's two transports: each parses, calls the domain core and shapes its answer; neither imports the other."""
SERVICE_CORE = (
    "planning",
    "replanning",
    "explaining",
    "chain",
    "refusals",
    "planner",
    "guards",
    "canary",
    "online",
    "reality",
    "gap",
    "calibration",
    "store",
)
"""The service's use cases and what they are made of: plain modules, no web framework, no transport."""


def _service_violations(sources: dict[str, str]) -> list[str]:
    """Imports across the service's transports, and of a transport or FastAPI from its domain core."""
    out = []
    for module, source in sources.items():
        tree = ast.parse(source)
        own = next((t for t in SERVICE_TRANSPORTS if module.startswith(t)), None)
        core = any(
            module == f"dagsched.service.{c}" or module.startswith(f"dagsched.service.{c}.") for c in SERVICE_CORE
        )
        for line, base, _ in _import_froms(tree, module, annotations=True):
            other = next((t for t in SERVICE_TRANSPORTS if base.startswith(t)), None)
            if own is not None and other is not None and other != own:
                out.append(f"{module}:{line} ({own}) imports {base} ({other})")
            if core and other is not None:
                out.append(f"{module}:{line} (the domain core) imports the transport {base}")
        if core:
            for node in ast.walk(tree):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                bad = [n for n in names if n.split(".")[0] in ("fastapi", "starlette", "grpc")]
                out.extend(f"{module}:{node.lineno} (the domain core) imports {n}" for n in bad)
    return out


def test_the_service_transports_import_neither_each_other_nor_are_imported_by_the_core() -> None:
    sources = {m: p.read_text() for m, p in _modules() if m.startswith("dagsched.service")}
    assert not _service_violations(sources), "\n".join(_service_violations(sources))


def test_the_service_check_sees_a_transport_importing_the_other() -> None:
    sources = {
        "dagsched.service.rpc.server": "from dagsched.service.routes.events import post_event\n",
        "dagsched.service.routes.schedule": "from dagsched.service.rpc import server\n",
        "dagsched.service.planning": "from fastapi import HTTPException\n",
        "dagsched.service.replanning": "import dagsched.service.routes.events\n",
    }
    found = _service_violations(sources)
    assert len(found) == 4, found

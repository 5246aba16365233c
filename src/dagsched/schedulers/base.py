"""The registry the CLI, benchmark and service read, over the one scheduler interface.

The interface itself (`Scheduler`, `Decision`, `DecisionPoint`) is defined where the simulator needs
it, in `dagsched.sim.decision`: a scheduler is reset with the compiled problem and the view at time 0,
then asked at each decision point, with a read-only `DecisionPoint`, which ready tasks to start on
which nodes now. It never holds the live simulator, so it never sees actual runtimes or future failures.
"""

from __future__ import annotations

import difflib
import inspect
import sys
from collections.abc import Callable
from typing import Any

from dagsched.model.compiled import CompiledProblem
from dagsched.model.errors import InputError
from dagsched.sim.config import SimConfig
from dagsched.sim.decision import Decision, DecisionPoint, Scheduler
from dagsched.sim.run import RunResult
from dagsched.sim.run import simulate as simulate_instance

__all__ = [
    "Decision",
    "DecisionPoint",
    "Scheduler",
    "describe",
    "is_tree_search",
    "make_scheduler",
    "register",
    "scheduler_class",
    "registered_names",
    "simulate",
    "unknown_scheduler",
]

_REGISTRY: dict[str, type[Scheduler]] = {}
"""Every built-in scheduler is in it once anything here is imported: importing this module imports its package,
whose __init__ imports every module of the package, and each scheduler registers itself."""


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator: make a scheduler findable by its `name` (a name taken by another class is refused)."""
    known = _REGISTRY.get(cls.name)
    if known is not None and known is not cls and _qualname(known) != _qualname(cls):
        raise ValueError(f"two schedulers named '{cls.name}': {_qualname(known)} and {_qualname(cls)}")
    _REGISTRY[cls.name] = cls
    return cls


def _qualname(cls: Callable[[], Scheduler]) -> str:
    return f"{cls.__module__}.{getattr(cls, '__qualname__', cls)}"


def registered_names() -> list[str]:
    return sorted(_REGISTRY)


def describe(name: str) -> tuple[str, str]:
    """(what it is, where it is best) of a registered scheduler, each one line: the first sentence of its class's
    docstring (its module's where the class has none) and its `best_for`."""
    cls = _REGISTRY[name]
    doc = cls.__doc__ if "__doc__" in vars(cls) else None
    text = " ".join((inspect.cleandoc(doc or sys.modules[cls.__module__].__doc__ or "").split("\n\n")[0]).split())
    end = text.find(". ")
    return (text if end < 0 else text[: end + 1]), str(getattr(cls, "best_for", ""))


def is_tree_search(name: str) -> bool:
    """Whether a registered scheduler searches a tree of forks per decision, read off its class (nothing loads)."""
    return bool(getattr(_REGISTRY.get(name), "tree_search", False))


def unknown_scheduler(name: str, field: str = "scheduler") -> InputError:
    """The error for a name no scheduler has: the nearest registered name when one is close, and all of them."""
    near = difflib.get_close_matches(name, sorted(_REGISTRY), n=1)
    hint = f" (did you mean '{near[0]}'?)" if near else ""
    return InputError(field, f"unknown scheduler '{name}'{hint}; known: {', '.join(sorted(_REGISTRY))}")


def scheduler_class(name: str) -> type[Scheduler]:
    """The registered class of `name` (what it declares: `needs`, `service_options`, ...); an unknown name lists
    the known ones."""
    if name not in _REGISTRY:
        raise unknown_scheduler(name)
    return _REGISTRY[name]


STREAM_SCHEDULER = "fair_cap_gpu_first"
"""The scheduler for several workflows sharing a cluster when none is named: the shortest stream rule measured
(docs/shared-cluster.md, "Which to use"). HEFT, the default for one workflow, was 3 x the best per stream there."""
PLAN_SCHEDULER = "heft"
"""The scheduler for one workflow when none is named (the service plans with `drl` by its own setting)."""


def default_scheduler(n_workflows: int, classic: bool = False) -> str:
    """What `dagsched simulate` and `dagsched run` use without `--scheduler`: the stream rule for a stream of several
    workflows on a shared cluster, HEFT for one workflow or the classic model."""
    return STREAM_SCHEDULER if n_workflows > 1 and not classic else PLAN_SCHEDULER


def make_scheduler(name: str, service: bool = False, **provided: Any) -> Scheduler:
    """A fresh scheduler by registry name. `provided`: what the caller has for schedulers that declare a need of it
    (`Scheduler.needs`, e.g. a service's serving `policy`); a scheduler is handed only what it declares.
    `service`: built with its `service_options` (the budget a request can wait for)."""
    cls = scheduler_class(name)
    options = {k: v for k, v in provided.items() if k in cls.needs}
    if service:
        options = {**cls.service_options, **options}
    return cls(**options)


def simulate(
    cp: CompiledProblem,
    scheduler: Scheduler | str,
    config: SimConfig | None = None,
    seed: int = 0,
    validate: bool = True,
) -> RunResult:
    """`dagsched.sim.run.simulate` with a scheduler given by registry name or as an instance."""
    sched = make_scheduler(scheduler) if isinstance(scheduler, str) else scheduler
    return simulate_instance(cp, sched, config, seed, validate)

"""The one scheduler interface, and the registry the CLI, benchmark and service read.

A scheduler is reset with what it may see (the compiled problem: predictions,
requests, DAG, cluster) and then asked at each decision point, with the live
simulator as a read-only view, which ready tasks to start on which nodes now. It
may also ask to be woken at a later time (when a planned slot opens). It never sees
actual runtimes or future failures: those stay hidden in the simulator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np

from dagsched.model.compiled import CompiledProblem
from dagsched.sim.engine import Decision, Simulator

__all__ = ["Decision", "Scheduler", "is_tree_search", "make_scheduler", "register", "registered_names"]


class Scheduler(ABC):
    """Base of every policy: `reset` once per run, `decide` at each decision point."""

    name: ClassVar[str] = "base"
    uses_seed: bool = True
    """False only where the run seed cannot change a decision (no rng, no sampling): then, in a mode
    without hidden randomness, one run stands for every seed and the benchmark runs it once."""
    tree_search: ClassVar[bool] = False
    """True for schedulers that grow a search tree of simulator forks at every decision (MCTS): their
    cost grows with tasks x nodes x simulations, so a suite may cap the problem size they run on."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def reset(self, cp: CompiledProblem, sim: Simulator, seed: int = 0) -> None:
        """Prepare for a run on `cp`; `sim` is the live state at time 0 (read only)."""
        self.cp = cp
        self.rng = np.random.default_rng(seed)

    @abstractmethod
    def decide(self, sim: Simulator) -> Decision:
        """Assignments to start now; each must pass `sim.can_start` at the moment it is applied."""


_REGISTRY: dict[str, Callable[[], Scheduler]] = {}


def register(cls: type[Scheduler]) -> type[Scheduler]:
    """Class decorator: make a scheduler findable by its `name`."""
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin() -> None:
    import dagsched.schedulers  # noqa: F401  (each module registers itself on import)


def registered_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def is_tree_search(name: str) -> bool:
    """Whether a registered scheduler searches a tree of forks per decision, read off its class (nothing loads)."""
    _load_builtin()
    return bool(getattr(_REGISTRY.get(name), "tree_search", False))


def make_scheduler(name: str) -> Scheduler:
    """A fresh scheduler by registry name; an unknown name lists the known ones."""
    _load_builtin()
    if name not in _REGISTRY:
        from dagsched.model.errors import InputError

        raise InputError("scheduler", f"unknown scheduler '{name}'; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name]()

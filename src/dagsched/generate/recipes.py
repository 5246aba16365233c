"""Workflows from WfCommons recipes (WfChef), generated offline and converted to ours.

The recipes' statistics ship inside the wfcommons wheel, so nothing is
downloaded (tests/generate/test_recipes.py runs this with sockets blocked and
an empty HOME). `num_tasks` is an upper bound for WfChef: the result has at
most `n_tasks` tasks, usually 2 fewer (its SRC/DST placeholders are dropped).

wfcommons draws from the global `random` and `numpy.random` states (both are
seeded here and restored afterwards) and names files with random UUIDs; task
ids ("mProject_00000001") come from a counter and are stable for a seed, so
they are kept. Not thread-safe, because the global random state is shared.

RnaseqRecipe is left out: in wfcommons 1.6 it produces workflows with no edges.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import networkx as nx
import numpy as np
from wfcommons import (
    BlastRecipe,
    BwaRecipe,
    CyclesRecipe,
    EpigenomicsRecipe,
    GenomeRecipe,
    MontageRecipe,
    SeismologyRecipe,
    SoykbRecipe,
    SrasearchRecipe,
    WorkflowGenerator,
)
from wfcommons.wfchef.wfchef_abstract_recipe import WfChefWorkflowRecipe

from dagsched.generate.topologies import assemble
from dagsched.model.entities import Workflow
from dagsched.model.errors import InputError

RECIPES: dict[str, type[WfChefWorkflowRecipe]] = {
    "montage": MontageRecipe,
    "epigenomics": EpigenomicsRecipe,
    "1000genome": GenomeRecipe,
    "blast": BlastRecipe,
    "bwa": BwaRecipe,
    "cycles": CyclesRecipe,
    "seismology": SeismologyRecipe,
    "soykb": SoykbRecipe,
    "srasearch": SrasearchRecipe,
}

_GIB = 2**30


def min_tasks(recipe: str) -> int:
    """Smallest `n_tasks` WfChef accepts for `recipe`: the order of its smallest base graph."""
    cls = _recipe_class(recipe)
    summary = json.loads((Path(cls().this_dir) / "microstructures" / "summary.json").read_text())
    return min(int(g["order"]) for g in summary["base_graphs"].values())


def _recipe_class(recipe: str) -> type[WfChefWorkflowRecipe]:
    cls = RECIPES.get(recipe)
    if cls is None:
        raise InputError("recipe", f"unknown recipe '{recipe}'; choose one of {', '.join(RECIPES)}")
    return cls


def _build_wfcommons(recipe: str, n_tasks: int, seed: int) -> nx.DiGraph:
    """Run WfChef with both global generators seeded, leaving them as they were."""
    cls = _recipe_class(recipe)
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        random.seed(seed)
        np.random.seed(seed)
        return WorkflowGenerator(cls.from_num_tasks(num_tasks=n_tasks)).build_workflow()
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


def recipe_workflow(recipe: str, n_tasks: int, seed: int, *, name: str | None = None) -> Workflow:
    """A WfCommons `recipe` workflow of at most `n_tasks` tasks, identical for the same seed.

    Runtimes and core counts are WfChef's; memory is 0 GiB where the recipe
    gives none; an edge carries the bytes of the files the parent writes and
    the child reads. Critical-path tasks get `critical` and priority 3, the
    others priority 0.
    """
    lowest = min_tasks(recipe)
    if isinstance(n_tasks, bool) or not isinstance(n_tasks, int | np.integer) or n_tasks < lowest:
        raise InputError("n_tasks", f"recipe '{recipe}' needs n_tasks >= {lowest}, got {n_tasks!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError("seed", f"must be a non-negative integer, got {seed!r}")
    try:
        graph = _build_wfcommons(recipe, int(n_tasks), int(seed))
    except ValueError as err:  # WfChef's "Cannot create synthetic graph with ..."
        raise InputError("n_tasks", f"recipe '{recipe}' cannot make {n_tasks} tasks: {err}") from None

    names = list(nx.topological_sort(graph))  # deterministic: insertion order is
    index = {node: i for i, node in enumerate(names)}
    tasks = [graph.nodes[node]["task"] for node in names]
    pairs = sorted((index[u], index[v]) for u, v in graph.edges)
    src = np.array([p[0] for p in pairs], dtype=np.int64)
    dst = np.array([p[1] for p in pairs], dtype=np.int64)
    data_bytes = np.zeros(len(pairs))
    for e, (u, v) in enumerate(pairs):
        written = {f.file_id: f.size for f in tasks[u].output_files}
        data_bytes[e] = sum(float(written[f.file_id]) for f in tasks[v].input_files if f.file_id in written)
    n = len(tasks)
    return assemble(
        name or f"{recipe}-{n_tasks}-s{seed}",
        [t.task_id for t in tasks],
        [t.name for t in tasks],
        src,
        dst,
        np.array([float(t.runtime or 0.0) for t in tasks]),
        np.array([float(t.cores or 1) for t in tasks]),
        np.array([float(t.memory or 0) / _GIB for t in tasks]),
        np.zeros(n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        data_bytes,
        {"recipe": recipe, "seed": str(seed), "generator": "wfcommons"},
    )
